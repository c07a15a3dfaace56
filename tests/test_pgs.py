"""Tests of contactopt's projected Gauss-Seidel solver (``co.solve(program, "pgs")``).

What is checked, and why:

* LCPs with symmetric positive definite ``M`` (projected SOR converges for ``0 < omega < 2``;
  Cottle, Pang & Stone 1992, section 5.2): ``z`` matches Lemke's (the solution is unique) and
  satisfies complementarity, for omega 0.8, 1 and 1.3; a warm start at the solution costs at
  most two sweeps, and one at the previous solution of a slowly changing sequence of LCPs (as
  in a simulation) costs fewer sweeps than a cold start.
* Honest failure: an LCP with a zero diagonal entry is refused; a P-matrix LCP on which
  Gauss-Seidel cycles ends at the iteration cap, never OPTIMAL; a divergent one ends in
  NUMERICAL_ERROR.
* Dual cone programs ``min 1/2 x'Px + c'x s.t. D x in K`` (``A = -D``, ``b = 0``): friction
  cones (SOC(3) with ``D_b = diag(mu, 1, 1)``), Nonneg rows, a mix with frictionless contacts,
  contacts with ``mu = 0`` written as ``formulations.ccp`` writes them (a Nonneg row for
  ``lambda_n``, Zero rows for ``lambda_t``) and a non-unit tangential scaling all match
  Clarabel, lie in their cones and come with duals that satisfy stationarity; the dual
  programs of the ``ccp`` and ``regularized`` formulations, stepped by ``simulate``, give
  Clarabel's trajectory.
* Programs of any other shape are refused (``accepts`` and ``solve`` agree), and options are
  validated.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs import Cone
from contactopt.solvers.pgs import solver as pgs

# Tolerances of this file.
# pgs stops when the natural-map residual ||z - max(0, z - (Mz + q))||_inf is below
# tol = 1e-10 times a scale of order 1-10 here. For M positive definite the error in z is at
# most (1 + ||M||) / lambda_min(M) times that residual; the matrices below have ||M|| <= 10
# and lambda_min >= 0.5, so z is within ~1e-8 of the solution, and Lemke's z is exact to
# rounding: 1e-6 leaves two orders of margin and still catches any wrong answer.
LCP_TOL = 1e-6
# Residuals computed by contactopt (|z'w|, max(0, -w)): of order n * |z| * 1e-10.
RESIDUAL_TOL = 1e-8
# Against Clarabel (interior point, gap/feasibility tolerance 1e-10): pgs is a first-order
# method stopped at a residual of 1e-10 * scale, so its x is within cond(P) * 1e-10 ~ 1e-8 of
# the optimum for the programs below (cond(P) ~ 1e2); Clarabel's x is only ~1e-7 accurate on
# these degenerate cone programs (contacts on the boundary of the cone with zero multiplier,
# where an interior-point iterate is O(sqrt(tol)) away). 1e-5 covers both with margin.
CONE_TOL = 1e-5

SIZES = [1, 2, 3, 5, 8, 13, 21, 30]
SEEDS = [0, 1, 2]

needs_clarabel = pytest.mark.skipif("clarabel" not in co.solvers.available(),
                                    reason="clarabel is not installed")


# --------------------------------------------------------------------------- generators


def random_spd_lcp(seed: int, n: int) -> co.LCP:
    """M = B B^T / n + I/2 (symmetric, eigenvalues in [0.5, ~5]), q standard normal (about
    half the rows active)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, n))
    return co.LCP(B @ B.T / n + 0.5 * np.eye(n), rng.standard_normal(n))


def lcp_of(M: object, q: object) -> co.LCP:
    """``co.LCP`` from nested lists."""
    return co.LCP(np.array(M, dtype=np.float64), np.array(q, dtype=np.float64))


def delassus(rng: np.random.Generator, rows: int, extra_dofs: int = 6) -> np.ndarray:
    """P = J M^-1 J^T for random J (rows x nv) and SPD M, nv = rows + extra_dofs (so P is
    positive definite and the optimum unique)."""
    nv = rows + extra_dofs
    J = rng.standard_normal((rows, nv))
    B = rng.standard_normal((nv, nv))
    mass = B @ B.T / nv + np.eye(nv)
    P = J @ np.linalg.solve(mass, J.T)
    return 0.5 * (P + P.T)


def friction_dual(seed: int, mus: list[float], tangential: tuple[float, float] = (1.0, 1.0),
                  ) -> co.ConicProgram:
    """The dual of a frictional step: min 1/2 l'Pl + c'l, (mu l_n, l_t) in SOC(3) per contact,
    i.e. A = -blockdiag(diag(mu, t1, t2)), b = 0. A contact with mu = 0 is written as
    formulations.ccp writes it: l_n >= 0 (Nonneg(1)) and l_t = 0 (Zero(2)), A = -I."""
    rng = np.random.default_rng(seed)
    nc = len(mus)
    P = delassus(rng, 3 * nc)
    c = rng.standard_normal(3 * nc)
    d = np.concatenate([[mu, *tangential] if mu > 0 else [1.0, 1.0, 1.0] for mu in mus])
    cones: list[Cone] = []
    for mu in mus:
        cones += [co.SOC(3)] if mu > 0 else [co.Nonneg(1), co.Zero(2)]
    return co.ConicProgram(P=sp.csc_matrix(P), c=c, A=-sp.diags(d, format="csc"),
                           b=np.zeros(3 * nc), cones=tuple(cones))


def nonneg_dual(seed: int, n: int, d: np.ndarray | None = None) -> co.ConicProgram:
    """min 1/2 x'Px + c'x  s.t.  D x >= 0 (A = -D, Nonneg rows)."""
    rng = np.random.default_rng(seed)
    P = delassus(rng, n)
    d = np.ones(n) if d is None else d
    return co.ConicProgram(P=sp.csc_matrix(P), c=rng.standard_normal(n),
                           A=-sp.diags(d, format="csc"), b=np.zeros(n), cones=(co.Nonneg(n),))


def assert_in_friction_cones(x: np.ndarray, mus: list[float]) -> None:
    for i, mu in enumerate(mus):
        normal, tangent = x[3 * i], x[3 * i + 1 : 3 * i + 3]
        assert np.linalg.norm(tangent) <= mu * normal + 1e-12, (i, x[3 * i : 3 * i + 3])


# --------------------------------------------------------------------------- LCPs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_spd_lcp_matches_lemke(n: int, seed: int) -> None:
    lcp = random_spd_lcp(seed, n)
    sol = co.solve(lcp, "pgs")
    assert sol.status == co.Status.OPTIMAL, sol.message
    assert sol.solver == "pgs" and sol.conversion is None
    exact = co.solve(lcp, "lemke")
    np.testing.assert_allclose(sol.z, exact.z, rtol=0, atol=LCP_TOL)
    assert sol.z.min() >= 0.0
    assert sol.residuals.worst <= RESIDUAL_TOL, sol.residuals
    np.testing.assert_allclose(sol.w, lcp.M @ sol.z + lcp.q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("omega", [0.8, 1.0, 1.3])
@pytest.mark.parametrize("n", [5, 13, 30])
def test_over_relaxation_converges(n: int, omega: float) -> None:
    lcp = random_spd_lcp(7, n)
    sol = co.solve(lcp, "pgs", omega=omega)
    assert sol.status == co.Status.OPTIMAL, sol.message
    np.testing.assert_allclose(sol.z, co.solve(lcp, "lemke").z, rtol=0, atol=LCP_TOL)


@pytest.mark.parametrize("n", [5, 13, 30])
def test_warm_start_at_the_solution_costs_at_most_two_sweeps(n: int) -> None:
    lcp = random_spd_lcp(3, n)
    cold = co.solve(lcp, "pgs")
    warm = co.solve(lcp, "pgs", warm_start=co.solve(lcp, "lemke").z)
    assert warm.status == co.Status.OPTIMAL
    assert warm.iterations <= 2 < cold.iterations
    np.testing.assert_allclose(warm.z, cold.z, rtol=0, atol=LCP_TOL)


def test_warm_start_from_the_previous_problem_saves_sweeps() -> None:
    # A sequence of LCPs whose q drifts slowly, as from one time step to the next.
    base = random_spd_lcp(11, 21)
    rng = np.random.default_rng(12)
    previous = None
    cold_total = warm_total = 0
    for _ in range(5):
        lcp = co.LCP(base.M, base.q + 0.01 * rng.standard_normal(base.n))
        cold = co.solve(lcp, "pgs")
        warm = co.solve(lcp, "pgs", warm_start=None if previous is None else previous.z)
        assert cold.status == warm.status == co.Status.OPTIMAL
        np.testing.assert_allclose(warm.z, cold.z, rtol=0, atol=LCP_TOL)
        cold_total += cold.iterations
        warm_total += warm.iterations
        previous = warm
    assert warm_total < cold_total


def test_zero_diagonal_lcp_is_refused() -> None:
    # Stewart-Trinkle-like: the last row (a friction-cone row) has a zero diagonal entry.
    M = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.5, -1.0, 0.0]])
    lcp = lcp_of(M, [-1.0, 0.5, 1.0])
    reason = pgs.accepts(lcp)
    assert reason is not None and "M[2,2]" in reason
    with pytest.raises(UnsupportedProgramError, match=r"M\[2,2\].*solvers that can: lemke"):
        pgs.solve(lcp, None, {})
    with pytest.raises(UnsupportedProgramError, match=r"M\[2,2\]"):
        co.solve(lcp, "pgs")  # no conversion applies (M is not symmetric)


def test_cycling_lcp_ends_at_the_cap_not_optimal() -> None:
    # M = [[1, 2], [-2, 1]] is positive definite (symmetric part I), so a P-matrix: the LCP has
    # the unique solution z = (1, 1) for q = (-3, 1), which Lemke finds. Gauss-Seidel from 0:
    # z1 = max(0, 3 - 2 z2) = 3, z2 = max(0, -1 + 2 z1) = 5; then z1 = 0, z2 = 0; then (3, 5)
    # again: an exact cycle of period 2 (in floating point too, every value is an integer).
    lcp = lcp_of([[1.0, 2.0], [-2.0, 1.0]], [-3.0, 1.0])
    np.testing.assert_allclose(co.solve(lcp, "lemke").z, [1.0, 1.0], atol=1e-12)
    for max_iter in (2, 3, 1000):
        sol = co.solve(lcp, "pgs", max_iter=max_iter)
        assert sol.status == co.Status.MAX_ITERATIONS, sol.message
        assert sol.iterations == max_iter
        assert np.all(np.isfinite(sol.z))
        assert sol.z.tolist() in ([0.0, 0.0], [3.0, 5.0])
        assert sol.residuals.worst > 1.0  # the record shows the failure


def test_divergent_lcp_is_a_numerical_error() -> None:
    # M = [[1, -2], [-2, 1]], q = (-1, -1): no solution (every complementary basis fails), and
    # Gauss-Seidel gives z1 = 1 + 2 z2, z2 = 1 + 2 z1: growth by 4 per sweep until overflow.
    lcp = lcp_of([[1.0, -2.0], [-2.0, 1.0]], [-1.0, -1.0])
    sol = co.solve(lcp, "pgs")
    assert sol.status == co.Status.NUMERICAL_ERROR, sol.message
    assert "diverged" in sol.message
    assert 400 < sol.iterations < 1000
    assert sol.status != co.Status.OPTIMAL and not sol.status.usable


def test_trivial_lcps() -> None:
    sol = co.solve(lcp_of(np.eye(3), [1.0, 0.0, 2.0]), "pgs")  # q >= 0: z = 0 at once
    assert sol.status == co.Status.OPTIMAL and sol.iterations == 0
    np.testing.assert_array_equal(sol.z, np.zeros(3))
    empty = co.solve(co.LCP(np.zeros((0, 0)), np.zeros(0)), "pgs")
    assert empty.status == co.Status.OPTIMAL and empty.z.shape == (0,)


# --------------------------------------------------------------------------- cone programs


def assert_matches_clarabel(program: co.ConicProgram, sol: co.Solution) -> None:
    assert sol.status == co.Status.OPTIMAL, sol.message
    reference = co.solve(program, "clarabel")
    assert reference.status == co.Status.OPTIMAL
    np.testing.assert_allclose(sol.x, reference.x, rtol=0, atol=CONE_TOL)
    # Duals y = D^-1 (P x + c): stationarity holds to rounding on every row with D_ii != 0
    # (a row with D_ii = 0 leaves x_i free: there it is the convergence residual).
    stationarity = program.P @ sol.x + program.c + program.A.T @ sol.y
    scaled_rows = program.A.diagonal() != 0
    assert np.abs(stationarity[scaled_rows]).max() <= 1e-12
    assert np.abs(stationarity).max() <= 1e-8
    assert sol.residuals.worst <= 1e-8, sol.residuals


@needs_clarabel
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("nc", [1, 3, 6])
def test_friction_cone_dual_matches_clarabel(nc: int, seed: int) -> None:
    mus = list(np.random.default_rng(100 + seed).uniform(0.1, 1.0, nc))
    program = friction_dual(seed, mus)
    assert pgs.accepts(program) is None
    sol = co.solve(program, "pgs")
    assert_matches_clarabel(program, sol)
    assert_in_friction_cones(sol.x, mus)


@needs_clarabel
@pytest.mark.parametrize("omega", [0.8, 1.3])
def test_friction_cone_dual_with_over_relaxation(omega: float) -> None:
    mus = [0.3, 0.8, 0.05, 0.5]
    program = friction_dual(4, mus)
    sol = co.solve(program, "pgs", omega=omega)
    assert_matches_clarabel(program, sol)
    assert_in_friction_cones(sol.x, mus)


@needs_clarabel
@pytest.mark.parametrize("seed", SEEDS)
def test_nonneg_dual_matches_clarabel(seed: int) -> None:
    program = nonneg_dual(seed, 8)
    sol = co.solve(program, "pgs")
    assert_matches_clarabel(program, sol)
    assert sol.x.min() >= 0.0
    # Scaling the rows (A = -diag(d), d > 0) describes the same set and the same optimum.
    d = np.random.default_rng(seed).uniform(0.2, 5.0, 8)
    scaled = nonneg_dual(seed, 8, d)
    np.testing.assert_allclose(co.solve(scaled, "pgs").x, sol.x, rtol=0, atol=1e-8)


@needs_clarabel
def test_mixed_frictional_and_frictionless_contacts() -> None:
    # Contacts 0 and 2 have friction (SOC(3) blocks); contacts 1 and 3 are frictionless and
    # carry only a normal impulse (a Nonneg row; their tangential impulse is absent, i.e. 0).
    rng = np.random.default_rng(5)
    sizes = [3, 1, 3, 1]
    P = delassus(rng, sum(sizes))
    d = np.array([0.4, 1.0, 1.0, 1.0, 0.7, 1.0, 1.0, 1.0])
    cones = (co.SOC(3), co.Nonneg(1), co.SOC(3), co.Nonneg(1))
    program = co.ConicProgram(P=sp.csc_matrix(P), c=rng.standard_normal(8),
                              A=-sp.diags(d, format="csc"), b=np.zeros(8), cones=cones)
    sol = co.solve(program, "pgs")
    assert_matches_clarabel(program, sol)
    assert np.linalg.norm(sol.x[1:3]) <= 0.4 * sol.x[0] + 1e-12
    assert np.linalg.norm(sol.x[5:7]) <= 0.7 * sol.x[4] + 1e-12
    assert sol.x[3] >= 0 and sol.x[7] >= 0


@needs_clarabel
@pytest.mark.parametrize("seed", SEEDS)
def test_mu_zero_contacts_have_zero_tangential_impulse(seed: int) -> None:
    # mu = 0 as formulations.ccp writes it: Nonneg(1) on l_n and Zero(2) on l_t.
    mus = [0.5, 0.0, 0.3, 0.0]
    program = friction_dual(seed, mus)
    assert pgs.accepts(program) is None
    sol = co.solve(program, "pgs")
    assert_matches_clarabel(program, sol)
    assert_in_friction_cones(sol.x, mus)  # mu = 0: l_t = 0 and l_n >= 0
    for i in (1, 3):
        np.testing.assert_array_equal(sol.x[3 * i + 1 : 3 * i + 3], [0.0, 0.0])


def test_soc_with_zero_first_entry_is_refused() -> None:
    # (0 * l_n, l_t) in SOC is not the friction cone of mu = 0: it leaves l_n free.
    program = friction_dual(0, [0.5, 0.5])
    A = program.A.toarray()
    A[3, 3] = 0.0
    refused = co.ConicProgram(P=program.P, c=program.c, A=sp.csc_matrix(A), b=program.b,
                              cones=program.cones)
    reason = pgs.accepts(refused)
    assert reason is not None and "D[3]" in reason


@needs_clarabel
def test_non_unit_tangential_scaling() -> None:
    # D_b = diag(mu, 2, 0.5): the cone ||(2 x_1, 0.5 x_2)|| <= mu x_0 (elliptic in x).
    program = friction_dual(6, [0.6, 0.9, 0.2], tangential=(2.0, 0.5))
    sol = co.solve(program, "pgs")
    assert_matches_clarabel(program, sol)
    s = -(program.A @ sol.x)
    for i in range(3):
        assert np.linalg.norm(s[3 * i + 1 : 3 * i + 3]) <= s[3 * i] + 1e-12


def test_cone_warm_start_at_the_solution() -> None:
    program = friction_dual(1, [0.4, 0.6, 0.2])
    cold = co.solve(program, "pgs")
    warm = co.solve(program, "pgs", warm_start=cold.x)
    assert cold.iterations > 2 and warm.iterations <= 2
    assert warm.status == co.Status.OPTIMAL
    np.testing.assert_allclose(warm.x, cold.x, rtol=0, atol=1e-8)


def test_gauss_dual_step_through_simulate() -> None:
    # The bundled cart-against-a-wall scene with the frictionless Gauss dual (Nonneg rows,
    # A = -I): same trajectory as exact pivoting on its KKT LCP.
    scene = co.load_scene("cart_wall")
    traj = co.simulate(scene, formulation="gauss", solver="pgs", options={"form": "dual"})
    reference = co.simulate(scene, formulation="gauss", solver="lemke")
    assert traj.completed
    assert all(step.status == co.Status.OPTIMAL for step in traj.steps)
    np.testing.assert_allclose(traj.q, reference.q, rtol=0, atol=1e-9)


@needs_clarabel
@pytest.mark.parametrize(("scene_name", "formulation", "options"), [
    ("box_slide", "ccp", {"form": "dual"}),          # SOC(3) friction cones, mu = 0.5
    ("point_mass_drop", "ccp", {"form": "dual"}),    # mu = 0: Nonneg + Zero rows
    ("box_slide", "regularized", {}),                # MuJoCo-style dual, elliptic cones
])
def test_formulation_duals_through_simulate(scene_name: str, formulation: str,
                                            options: dict[str, object]) -> None:
    if formulation not in co.formulations.names():
        pytest.skip(f"formulation {formulation!r} is not registered")
    scene = co.load_scene(scene_name)
    duration = 30 * scene.dt if scene_name == "box_slide" else 0.6  # lands at t ~ 0.45 s
    traj = co.simulate(scene, formulation=formulation, solver="pgs", options=options,
                       duration=duration)
    reference = co.simulate(scene, formulation=formulation, solver="clarabel", options=options,
                            duration=duration)
    assert traj.completed, traj.message
    assert all(step.status == co.Status.OPTIMAL for step in traj.steps)
    np.testing.assert_allclose(traj.q, reference.q, rtol=0, atol=1e-7)


# --------------------------------------------------------------------------- refusals


def _program(**change: object) -> co.ConicProgram:
    arguments: dict[str, object] = {"P": np.eye(2), "c": np.array([1.0, -1.0]), "A": -np.eye(2),
                                    "b": np.zeros(2), "cones": (co.Nonneg(2),)}
    arguments.update(change)
    return co.ConicProgram(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"A": np.vstack([np.ones((1, 2)), -np.eye(2)]), "b": np.array([1.0, 0.0, 0.0]),
          "cones": (co.Zero(1), co.Nonneg(2))}, "3 rows for 2 variables"),
        ({"A": np.array([[-1.0, 0.5], [0.0, -1.0]])}, "off-diagonal"),
        ({"b": np.array([0.0, 1.0])}, "b != 0"),
        ({"A": np.diag([-1.0, 1.0])}, "not > 0"),
        ({"A": np.diag([-1.0, 0.0])}, "not > 0"),
        ({"P": np.diag([1.0, 0.0])}, "no curvature"),
        ({"P": np.zeros((2, 2)), "cones": (co.SOC(2),)}, "no curvature"),
    ],
    ids=["primal-with-equality", "not-diagonal", "b-nonzero", "negative-D",
         "zero-D", "zero-curvature", "zero-curvature-soc"],
)
def test_programs_of_another_shape_are_refused(change: dict[str, object], message: str) -> None:
    # The backend itself refuses (the registry may still route some of these programs to pgs
    # through the qp->lcp conversion once it consults ``accepts``).
    program = _program(**change)
    reason = pgs.accepts(program)
    assert reason is not None and message in reason, reason
    with pytest.raises(UnsupportedProgramError, match=r"solvers that can: clarabel") as info:
        pgs.solve(program, None, {})
    assert message in str(info.value)
    assert "LCPs and dual cone programs" in str(info.value) or "curvature" in str(info.value)


def test_accepts_the_dual_shapes() -> None:
    assert pgs.accepts(_program()) is None
    assert pgs.accepts(_program(cones=(co.Zero(1), co.Nonneg(1)))) is None
    assert pgs.accepts(friction_dual(0, [0.5, 0.0])) is None
    assert pgs.accepts(random_spd_lcp(0, 4)) is None
    assert pgs.accepts(lcp_of([[1.0, 2.0], [-2.0, 1.0]], [0.0, 0.0])) is None  # nonsymmetric


# --------------------------------------------------------------------------- options


def test_max_iter_one_is_a_status_with_a_finite_iterate() -> None:
    lcp = random_spd_lcp(0, 13)
    sol = co.solve(lcp, "pgs", max_iter=1)
    assert sol.status == co.Status.MAX_ITERATIONS
    assert sol.iterations == 1
    assert np.all(np.isfinite(sol.z)) and np.all(np.isfinite(sol.w))
    cone = co.solve(friction_dual(0, [0.5, 0.5, 0.5]), "pgs", max_iter=1)
    assert cone.status == co.Status.MAX_ITERATIONS
    assert np.all(np.isfinite(cone.x)) and np.all(np.isfinite(cone.y))


@pytest.mark.parametrize("omega", [2.5, 2.0, 0.0, -1.0, float("nan")])
def test_omega_outside_zero_two_is_refused(omega: float) -> None:
    with pytest.raises(OptionError, match="omega"):
        co.solve(random_spd_lcp(0, 3), "pgs", omega=omega)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_iters": 10}, "unknown option"),
        ({"warm_start": np.zeros(4)}, "warm_start"),
        ({"warm_start": [0.0, np.nan, 0.0]}, "warm_start"),
        ({"tol": 0.0}, "tol"),
        ({"tol": "small"}, "tol"),
        ({"max_iter": -1}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        co.solve(random_spd_lcp(0, 3), "pgs", options)
    with pytest.raises(OptionError, match=message):
        co.solve(friction_dual(0, [0.5]), "pgs", options)


def test_simulation_warm_starts_pgs_from_the_previous_step():
    """The driver passes the previous solution as warm start (same layout, no conversion):
    fewer sweeps, the same trajectory as a cold start."""
    scene = co.load_scene("box_slide")
    warm = co.simulate(scene, formulation="ccp", solver="pgs", options={"form": "dual"}, duration=0.1)
    cold = co.simulate(scene, formulation="ccp", solver="pgs", options={"form": "dual"}, duration=0.1,
                       solver_options={"warm_start": None})
    assert warm.completed and cold.completed
    np.testing.assert_allclose(warm.q, cold.q, atol=1e-8)
    sweeps = lambda traj: sum(record.iterations for record in traj.steps)  # noqa: E731
    # about half: warm 261 against cold 507 sweeps over 100 steps (both converge until every
    # row's relative residual passes, which takes the same final sweeps with or without it)
    assert sweeps(warm) < 0.6 * sweeps(cold)
