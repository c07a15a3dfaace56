"""SAP (issue 11): the unconstrained primal, its analytic projection, the ``sap`` formulation,
``regularized`` with ``form = "primal"``, and the ``newton`` solver against Clarabel."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import PROBLEMS

import contactopt as co
from contactopt.core.errors import ShapeError
from contactopt.programs import SOC, ConicProgram
from contactopt.programs.cone_projection import cone_layout, project
from contactopt.programs.primal import PrimalConicProgram, PrimalProgram, why_not_primal

G_EARTH = 9.81
# Clarabel's answer is within about sqrt(tolerance) of the optimum where a constraint is
# nearly active with a nearly zero multiplier (both of order 1e-5 at its default 1e-10 gap
# tolerance: seen on the cart), so the references run at 1e-13 (TIGHT); newton's answer is
# exact to rounding, so 1e-7 relative leaves a margin of 100.
AGREE = 1e-7
TIGHT = {"tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13, "tol_feas": 1e-12}


def reference_solve(program: co.ConicProgram) -> co.Solution:
    """Clarabel at TIGHT tolerances, or at its defaults where those stall; must be OPTIMAL."""
    solution = co.solve(program, "clarabel", TIGHT)
    if solution.status is not co.solvers.Status.OPTIMAL:
        solution = co.solve(program, "clarabel")
    assert solution.status is co.solvers.Status.OPTIMAL, solution.message
    return solution


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0)))


def states(scene: co.Scene, steps: list[int], formulation: str = "sap",
           options: dict[str, object] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """States along a short clarabel run (the programs both solvers are given)."""
    traj = co.simulate(scene, formulation=formulation, solver="clarabel", options=options,
                       duration=(max(steps) + 1) * scene.dt)
    assert traj.completed, traj.message
    return [(traj.q[k], traj.v[k]) for k in steps]


# --- the analytic projection ----------------------------------------------------------

def test_projection_matches_an_socp_solve_in_every_regime() -> None:
    rng = np.random.default_rng(11)
    n = 1000
    mu = rng.uniform(0.1, 1.5, n)
    R = np.column_stack([rng.uniform(0.01, 10.0, n), np.repeat(rng.uniform(1e-3, 10.0, n)[:, None], 2, axis=1)])
    # Points aimed at the three regimes: inside F, in its R-polar cone, and in between.
    direction = rng.normal(size=(n, 2))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    regime = np.arange(n) % 3
    yn = rng.uniform(-2.0, 2.0, n)
    radius = np.abs(yn) * mu * np.where(regime == 0, rng.uniform(0, 1, n), rng.uniform(1.05, 20.0, n))
    yn = np.where(regime == 0, np.abs(yn), np.where(regime == 1, -np.abs(yn) * (1 + mu**2 * R[:, 1] / R[:, 0] * 25),
                                                     yn))
    Y = np.column_stack([yn, radius[:, None] * direction])
    cones = tuple(SOC(3) for _ in range(n))
    scale = np.column_stack([np.ones(n), mu, mu]).reshape(-1)
    layout = cone_layout(cones, scale, R.reshape(-1))
    assert not isinstance(layout, str)
    gamma, _ = project(layout, Y.reshape(-1), R.reshape(-1))
    # Numerical projection, one Clarabel solve per point (a joint solve of all 1000 mixes
    # scales 1e-3..1e3 and loses digits): min 1/2 ||g - y||_R^2  s.t.  [mu g_n, g_t] in SOC.
    g = gamma.reshape(n, 3)
    for i in range(n):
        # The projection is positively homogeneous: solve for y / |y| (Clarabel's tolerances
        # are absolute) and scale back.
        size = np.abs(Y[i]).max()
        program = ConicProgram(P=sp.diags(R[i] / R[i].max(), format="csc"), c=-R[i] / R[i].max() * Y[i] / size,
                               A=-sp.diags([mu[i], 1.0, 1.0], format="csc"), b=np.zeros(3), cones=(SOC(3),))
        solution = co.solve(program, "clarabel")
        assert solution.status is co.solvers.Status.OPTIMAL
        reference = dataclasses.replace(solution, x=solution.x * size)
        # The closed form is feasible and at least as good as the numerical optimum (strong
        # convexity: then it is the optimum); the points are close to within the accuracy of
        # an interior-point iterate, O(sqrt(tolerance)) where y sits on the cone's boundary.
        assert np.linalg.norm(g[i, 1:]) <= mu[i] * g[i, 0] + 1e-12 * size
        value = 0.5 * np.sum(R[i] * (g[i] - Y[i]) ** 2)
        assert value <= 0.5 * np.sum(R[i] * (reference.x - Y[i]) ** 2) + 1e-9 * R[i].max() * size**2, i
        assert np.abs(g[i] - reference.x).max() <= 1e-6 * size, i
    # Every regime is covered, and each behaves as the closed form says.
    yr = np.linalg.norm(Y[:, 1:], axis=1)
    inside = yr <= mu * Y[:, 0]
    polar = ~inside & (mu * R[:, 1] * yr <= -R[:, 0] * Y[:, 0])
    sliding = ~(inside | polar)
    assert min(inside.sum(), polar.sum(), sliding.sum()) >= 150
    assert np.array_equal(g[inside], Y[inside]) and np.all(g[polar] == 0)
    assert np.allclose(np.linalg.norm(g[sliding, 1:], axis=1), mu[sliding] * g[sliding, 0], rtol=1e-12)


def test_projection_derivative_matches_finite_differences() -> None:
    rng = np.random.default_rng(3)
    cones = (SOC(3),)
    for _ in range(50):
        mu = rng.uniform(0.2, 1.0)
        R = np.array([rng.uniform(0.1, 2.0), *[rng.uniform(0.01, 1.0)] * 2])
        layout = cone_layout(cones, np.array([1.0, mu, mu]), R)
        assert not isinstance(layout, str)
        y = rng.normal(size=3)
        _, (G,) = project(layout, y, R)
        # G = (d gamma / d y) R^{-1}; central differences (error O(eps^2), away from a kink
        # with probability ~1 at these random points).
        eps = 1e-6
        numeric = np.column_stack([(project(layout, y + eps * e, R, False)[0]
                                    - project(layout, y - eps * e, R, False)[0]) / (2 * eps) for e in np.eye(3)])
        assert np.allclose(G[0], numeric / R[None, :], atol=1e-6)
        assert np.allclose(G[0], G[0].T, atol=1e-12)


# --- the program kind ------------------------------------------------------------------

def test_conic_form_round_trip_and_refusals() -> None:
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "sap")
    assert isinstance(program, PrimalConicProgram) and why_not_primal(program) is None
    plain = ConicProgram(program.P, program.c, program.A, program.b, program.cones, program.variables,
                         program.constraints, program.metadata)
    back = PrimalProgram.from_conic(plain)
    original = program.primal
    assert original is not None
    for name in ("R", "v_hat", "scale", "v_star"):
        assert np.allclose(getattr(back, name), getattr(original, name), rtol=1e-12, atol=1e-14)
    assert abs(back.J - original.J).max() < 1e-14
    # Newton on the plain conic form (the conversion) equals Newton on the kept primal.
    assert np.allclose(co.solve(plain, "newton").x, co.solve(program, "newton").x, atol=1e-12)
    dual = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "regularized")
    assert "v_next" in str(why_not_primal(dual))
    with pytest.raises(co.errors.UnsupportedProgramError, match=r"newton.*sap"):
        co.solve(dual, "newton")
    with pytest.raises(ShapeError, match="positive"):
        dataclasses.replace(original, R=-original.R)
    # No conversion produces the form (S6): an LCP is not routed to newton.
    assert not co.solvers.can_take(co.LCP(np.eye(2), -np.ones(2)), "newton")
    with pytest.raises(co.errors.OptionError, match="stiffness"):
        co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "sap", options={"stiffness": -1.0})


# --- sap/newton == sap/clarabel -----------------------------------------------------------

@pytest.mark.parametrize(("problem", "steps", "options"), [
    ("box_slide.toml", [0, 40, 150], {}),
    ("box_slide.toml", [0, 40], {"stiffness": 1e5, "dissipation_time_scale": 0.01}),
    ("table_four_legs.toml", [0, 20], {}),
    ("cart_push", [3, 5, 8], {}),
    ("sphere_pile_mjcf.toml", [0, 2], {}),
])
def test_sap_newton_equals_clarabel(problem: str, steps: list[int], options: dict[str, object],
                                    tmp_path: Path) -> None:
    if problem == "cart_push":
        # The textbook cart and wall, pushed into the wall (u = -1 N) so that the contact
        # impulse at rest is strictly positive: with u = 0 the resting contact has zero
        # impulse and zero slack, where an interior-point answer is only sqrt(tol) accurate.
        text = (PROBLEMS / "cart_wall.toml").read_text().replace("u = 0.0", "u = -1.0")
        (tmp_path / "cart_push.toml").write_text(text)
        scene = co.load_scene(tmp_path / "cart_push.toml")
    else:
        scene = co.load_scene(PROBLEMS / problem)
    for q, v in states(scene, steps, options=options):
        program = co.formulate(scene.system, q, v, scene.dt, "sap", options=options)
        reference = reference_solve(program)
        newton = co.solve(program, "newton")
        assert newton.status is co.solvers.Status.OPTIMAL, newton.message
        assert relative(newton.x, reference.x) <= AGREE
        objective = program.objective(reference.x)
        assert program.objective(newton.x) <= objective + AGREE * max(1.0, abs(objective))
        assert newton.residuals.worst <= 1e-9 * max(1.0, np.abs(program.c).max())


# --- SAP's documented limits ---------------------------------------------------------------

def test_rigid_limit_sliding_box_stops_at_coulomb_distance() -> None:
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    traj = co.simulate(scene, formulation="sap", solver="newton", duration=0.3,
                       options={"stiffness": float("inf"), "dissipation_time_scale": 0.0})
    assert traj.completed, traj.message
    v0, mu = scene.v0[0], 0.5
    expected = v0**2 / (2 * mu * G_EARTH)
    # Semi-implicit Euler shortens the slide by about h v0 / 2 (0.5 %); the issue allows 1 %.
    assert abs(traj.q[-1, 0] - expected) <= 0.01 * expected
    assert abs(traj.v[-1, 0]) < 1e-4  # stopped (stiction slip of order sigma h g)


def test_resting_box_penetration_follows_the_compliance_law() -> None:
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    scene = dataclasses.replace(scene, v0=np.zeros_like(scene.v0))
    k, tau_d = 1e4, 0.05
    traj = co.simulate(scene, formulation="sap", solver="newton", duration=0.5,
                       options={"stiffness": k, "dissipation_time_scale": tau_d, "epsilon": 0.0})
    assert traj.completed, traj.message
    # Four corners share m g: at rest gamma_n / h = k (-phi) (v_n = 0), so phi = -m g / (4 k).
    # The slowest mode decays like exp(-t / tau_d) = exp(-10) by t = 0.5 s.
    phi = traj.steps[-1].phi
    bottom = phi[phi < 0.05]
    assert bottom.shape == (4,)
    assert np.allclose(bottom, -1.0 * G_EARTH / (4 * k), rtol=1e-3)


# --- regularized/newton == regularized/clarabel --------------------------------------------

@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize(("problem", "steps"), [("box_slide.toml", [0, 60]), ("sphere_pile_mjcf.toml", [0, 2])])
def test_regularized_primal_newton_equals_dual_clarabel(problem: str, steps: list[int], cone: str) -> None:
    scene = co.load_scene(PROBLEMS / problem)
    for q, v in states(scene, steps, "regularized", {"cone": cone}):
        dual = co.formulate(scene.system, q, v, scene.dt, "regularized", options={"cone": cone})
        primal = co.formulate(scene.system, q, v, scene.dt, "regularized", options={"cone": cone, "form": "primal"})
        form = co.formulations.get("regularized")
        problem_ = co.integrators.time_stepping.build_step_problem(scene.system, q, v, scene.dt)
        newton_solution = co.solve(primal, "newton")
        assert newton_solution.status is co.solvers.Status.OPTIMAL, newton_solution.message
        answer = form.recover(problem_, primal, newton_solution)
        # regularized/clarabel on the same (primal) program: 1e-7, except the elliptic pile,
        # whose friction cones at the stick/slip boundary are degenerate for an interior point
        # (3e-7 measured): there newton's objective must not exceed Clarabel's (a strictly
        # convex program: the better point is the nearer one) and 1e-6 bounds the distance.
        clarabel = reference_solve(primal)
        reference = form.recover(problem_, primal, clarabel)
        bound = 1e-6 if (problem, cone) == ("sphere_pile_mjcf.toml", "elliptic") else AGREE
        objective = primal.objective(clarabel.x)
        assert primal.objective(newton_solution.x) <= objective + 1e-12 * max(1.0, abs(objective))
        assert relative(answer.v_next, reference.v_next) <= bound
        assert relative(answer.impulses, reference.impulses) <= bound
        # ... and the same step as the dual form (the default) solved by Clarabel. On the pile
        # the dual has contacts with near-zero impulse and slack, where Clarabel's dual answer
        # is only ~sqrt(1e-10) accurate (3e-6 measured; its primal-form answer agrees with
        # newton to 7e-10), hence 1e-5 here.
        dual_answer = form.recover(problem_, dual, co.solve(dual, "clarabel"))
        assert relative(answer.v_next, dual_answer.v_next) <= 1e-5
        assert relative(answer.impulses, dual_answer.impulses) <= 1e-5


def test_general_projection_with_unequal_tangential_regularization() -> None:
    """MuJoCo's elliptic R has one value per tangential row: the projection then solves for
    the cone multiplier (bisection); checked against Clarabel and finite differences."""
    rng = np.random.default_rng(5)
    regimes = np.zeros(3, dtype=int)
    for _ in range(300):
        mu = rng.uniform(0.1, 1.5)
        R = np.array([rng.uniform(0.01, 10.0), rng.uniform(1e-3, 10.0), rng.uniform(1e-3, 10.0)])
        y = rng.normal(size=3) * rng.uniform(0.1, 10.0)
        layout = cone_layout((SOC(3),), np.array([1.0, mu, mu]), R)
        assert not isinstance(layout, str) and layout.groups[0].kind == "soc_general"
        g, (G,) = project(layout, y, R)
        size = np.abs(y).max()
        program = ConicProgram(P=sp.diags(R / R.max(), format="csc"), c=-R / R.max() * y / size,
                               A=-sp.diags([mu, 1.0, 1.0], format="csc"), b=np.zeros(3), cones=(SOC(3),))
        reference = co.solve(program, "clarabel").x * size
        value = 0.5 * np.sum(R * (g - y) ** 2)
        assert np.linalg.norm(g[1:]) <= mu * g[0] + 1e-12 * size
        assert value <= 0.5 * np.sum(R * (reference - y) ** 2) + 1e-9 * R.max() * size**2
        # Clarabel's iterate is ~1e-6 off here (SLSQP and the KKT conditions agree with g).
        assert np.abs(g - reference).max() <= 1e-5 * size
        regimes[0 if np.array_equal(g, y) else 1 if not g.any() else 2] += 1
        eps = 1e-7 * size
        numeric = np.column_stack([(project(layout, y + eps * e, R, False)[0]
                                    - project(layout, y - eps * e, R, False)[0]) / (2 * eps) for e in np.eye(3)])
        assert np.allclose(G[0], numeric / R[None, :], rtol=1e-4, atol=1e-4 * np.abs(G[0]).max())
    assert regimes.min() >= 20


def test_tilted_box_regularized_elliptic_and_refusals() -> None:
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    q = scene.q0.copy()
    q[3:7] = [np.cos(0.05), 0.0, np.sin(0.05), 0.0]  # pitched by 0.1 rad: unequal diag(W) on t1, t2
    options = {"cone": "elliptic", "form": "primal", "epsilon": float("inf")}
    program = co.formulate(scene.system, q, scene.v0, scene.dt, "regularized", options=options)
    assert isinstance(program, PrimalConicProgram) and program.primal is not None
    assert any(group.kind == "soc_general" for group in program.primal.cone_layout.groups)
    newton = co.solve(program, "newton")
    assert newton.status is co.solvers.Status.OPTIMAL
    assert relative(newton.x, reference_solve(program).x) <= AGREE
    # A cone block whose tangential rows are scaled differently is MuJoCo's elliptic cone with a
    # coefficient per row (condim 4 and 6): newton projects it by scaling (``soc_scaled``).
    P = program.primal
    odd = dataclasses.replace(P, scale=P.scale * np.tile([1.0, 1.0, 1.5], P.m // 3)).to_conic()
    assert why_not_primal(odd) is None
    assert odd.primal is not None and any(group.kind == "soc_scaled" for group in odd.primal.cone_layout.groups)
    scaled = co.solve(odd, "newton")
    assert scaled.status is co.solvers.Status.OPTIMAL
    assert relative(scaled.x, reference_solve(odd).x) <= AGREE


# --- options and the compiled path -----------------------------------------------------------

def test_near_rigid_threshold_sets_the_normal_regularization() -> None:
    # (S7) with k = inf: R_n = beta^2 / (4 pi^2) w_i and R_t = sigma w_i, so doubling beta
    # multiplies R_n by exactly 4 and leaves R_t; the option once shared the name 'beta' with
    # the driver's drift correction and never reached the formulation.
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    R = {}
    for beta in (1.0, 2.0):
        program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "sap",
                               options={"near_rigid_threshold": beta})
        R[beta] = PrimalProgram.from_conic(program).R.reshape(-1, 3)
    assert np.allclose(R[2.0][:, 0], 4.0 * R[1.0][:, 0], rtol=1e-12)
    assert np.allclose(R[2.0][:, 1:], R[1.0][:, 1:], rtol=1e-12)
    with pytest.raises(co.errors.OptionError, match="near_rigid_threshold"):
        co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "sap", options={"near_rigid_threshold": -1.0})


@pytest.mark.parametrize("problem", ["box_slide.toml", "sphere_pile_mjcf.toml"])
def test_compiled_and_numpy_paths_agree(problem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Same algorithm, same iterates: only rounding differs (1e-12 relative, far below AGREE).
    # The box runs the whole compiled loop (dense), the pile the compiled projection and line
    # search around the sparse factorization; AVAILABLE = False is what a missing numba gives.
    from contactopt.solvers.newton import kernels as newton_kernels

    if not newton_kernels.AVAILABLE:
        pytest.skip("numba is not installed: only the NumPy path exists")
    scene = co.load_scene(PROBLEMS / problem)
    program = co.formulate(scene.system, scene.q0, scene.v0 + 0.3, scene.dt, "sap")
    compiled = co.solve(program, "newton")
    monkeypatch.setattr(newton_kernels, "AVAILABLE", False)
    plain = co.solve(program, "newton")
    assert compiled.status is plain.status is co.solvers.Status.OPTIMAL
    assert compiled.iterations == plain.iterations
    assert relative(compiled.x, plain.x) <= 1e-12


def test_active_hessian_solves_with_the_full_hessian() -> None:
    # Blocks with G = 0 leave the pattern; the answer must be that of the whole A + J'GJ
    # (dense solve) as blocks switch on and off, the pattern growing (1e-10: two direct solves
    # of a matrix with condition number ~1e3).
    from contactopt.solvers.newton.linalg import ActiveHessian

    rng = np.random.default_rng(3)
    nv, nb = 12, 10
    n = nb * 3
    A = sp.csc_matrix(np.diag(rng.uniform(1.0, 2.0, nv)))
    J = sp.random(n, nv, density=0.3, random_state=4, format="csr") + sp.eye(n, nv, format="csr")
    layout = cone_layout(tuple(SOC(3) for _ in range(nb)), np.ones(n), np.ones(n))
    assert not isinstance(layout, str)
    hessian = ActiveHessian(A, sp.csr_matrix(J), layout)
    for on in ([0, 1], [1, 2, 3], [0], list(range(nb)), [5]):
        blocks = np.zeros((nb, 3, 3))
        for b in on:
            root = rng.normal(size=(3, 3))
            blocks[b] = root @ root.T
        hessian.factor([blocks])
        rhs = rng.normal(size=nv)
        dense = A.toarray() + J.toarray().T @ sp.block_diag(list(blocks)).toarray() @ J.toarray()
        assert np.allclose(hessian.solve(rhs), np.linalg.solve(dense, rhs), rtol=1e-10, atol=1e-12)


def test_pile_sparse_path_across_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pile's programs run the sparse compiled path (newton_sparse), whose Hessian pattern is
    # kept across steps while MuJoCo's contact list changes: each step must equal the NumPy
    # path (same iterates to rounding), reach Clarabel's optimum to 1e-8 relative, and take a
    # bounded number of Newton iterations (about 28 on these rigid-limit steps, see newton).
    from contactopt.solvers.newton import kernels as newton_kernels
    from contactopt.solvers.newton import sparse as newton_sparse

    if not newton_kernels.AVAILABLE:
        pytest.skip("numba is not installed: only the NumPy path exists")
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    programs = [co.formulate(scene.system, q, v, scene.dt, "sap") for q, v in states(scene, [1, 3, 4])]
    compiled = [co.solve(program, "newton") for program in programs]
    assert scene.system.nv in newton_sparse._PATTERNS  # the sparse path ran and kept its pattern
    monkeypatch.setattr(newton_kernels, "AVAILABLE", False)
    for program, fast in zip(programs, compiled, strict=True):
        plain = co.solve(program, "newton")
        assert fast.status is plain.status is co.solvers.Status.OPTIMAL
        assert fast.iterations == plain.iterations <= 45
        assert relative(fast.x, plain.x) <= 1e-12
        reference = program.objective(reference_solve(program).x)
        assert (program.objective(fast.x) - reference) / abs(reference) <= 1e-8


def test_cholmod_and_qdldl_factorizations_give_the_same_newton_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # The regularized pile's Hessian pattern (all pyramid edges: ~15 entries per unknown) is
    # factorized by CHOLMOD's supernodal code where cvxopt is installed, SAP's active patterns
    # (~7 per unknown) by QDLDL: both are exact factorizations of the same matrix, so the
    # Newton iterates agree to rounding and the iteration counts are equal.
    from contactopt.solvers.newton import kernels as newton_kernels
    from contactopt.solvers.newton import pattern as newton_pattern
    from contactopt.solvers.newton import sparse as newton_sparse

    if not newton_kernels.AVAILABLE or newton_pattern._cholmod() is None:
        pytest.skip("needs numba (the sparse compiled path) and cvxopt (CHOLMOD)")
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    options = {"form": "primal"}
    programs = [co.formulate(scene.system, q, v, scene.dt, "regularized", options=options)
                for q, v in states(scene, [1, 3], "regularized", options)]
    newton_sparse._PATTERNS.clear()
    supernodal = [co.solve(program, "newton") for program in programs]
    assert newton_sparse._PATTERNS[scene.system.nv].cholmod  # the dense-ish pattern went to CHOLMOD
    newton_sparse._PATTERNS.clear()
    monkeypatch.setattr(newton_pattern, "CHOLMOD_DENSITY", 10**9)
    simplicial = [co.solve(program, "newton") for program in programs]
    assert not newton_sparse._PATTERNS[scene.system.nv].cholmod
    for program, a, b in zip(programs, supernodal, simplicial, strict=True):
        assert a.status is b.status is co.solvers.Status.OPTIMAL
        assert a.iterations == b.iterations
        assert relative(a.x, b.x) <= 1e-10
        reference = program.objective(reference_solve(program).x)
        assert (program.objective(a.x) - reference) / abs(reference) <= 1e-8


def test_cholmod_refuses_an_indefinite_hessian_like_qdldl() -> None:
    from contactopt.solvers.newton import pattern as newton_pattern

    if newton_pattern._cholmod() is None:
        pytest.skip("cvxopt (CHOLMOD) is not installed")
    nv = 4
    keys = np.array([col * nv + row for col in range(nv) for row in range(col + 1)], dtype=np.int64)
    pattern = newton_pattern.SparsePattern(nv, keys)
    pattern.cholmod = True
    upper = np.triu(np.array([[2.0, 1, 0, 0], [1, 2, 1, 0], [0, 1, 2, 1], [0, 0, 1, 2]]))
    pattern.matrix.data[:] = [upper[row, col] for col in range(nv) for row in range(col + 1)]  # CSC order
    rhs = np.arange(1.0, nv + 1)
    np.testing.assert_allclose(pattern.factor_solve(rhs), np.linalg.solve(upper + np.triu(upper, 1).T, rhs),
                               rtol=0, atol=1e-12)
    pattern.matrix.data[0] = -5.0  # H[0, 0] < 0: not positive definite
    with pytest.raises(ValueError, match="CHOLMOD"):
        pattern.factor_solve(rhs)


@pytest.mark.parametrize("shared", [True, False])
def test_local_blocks_equal_the_dense_restriction_of_each_block(shared: bool) -> None:
    # newton_sparse.local_blocks: per block the sorted distinct columns of its rows and those
    # rows restricted to them; blocks whose rows share increasing columns take a shortcut.
    import scipy.sparse as sp

    from contactopt.solvers.newton import kernels as newton_kernels
    from contactopt.solvers.newton import sparse as newton_sparse

    if not newton_kernels.AVAILABLE:
        pytest.skip("numba is not installed: the sparse compiled path does not run")
    newton_sparse.ensure_compiled()
    rng = np.random.default_rng(4)
    dense = np.zeros((60, 40))
    for block in range(20):
        columns = rng.choice(40, size=8, replace=False)
        for row in range(3 * block, 3 * block + 3):
            use = columns if shared else rng.choice(columns, size=5, replace=False)
            dense[row, use] = rng.normal(size=use.shape[0])
    J = sp.csr_matrix(dense)
    start, dim = np.arange(0, 60, 3, dtype=np.int64), np.full(20, 3, np.int64)
    cols, count, Jl = newton_sparse.local_blocks(J.indptr.astype(np.int64), J.indices.astype(np.int64), J.data,
                                                 start, dim, 3)
    for block in range(20):
        rows = dense[3 * block:3 * block + 3]
        expected = np.flatnonzero(np.any(rows != 0, axis=0))
        np.testing.assert_array_equal(cols[block, :count[block]], expected)
        np.testing.assert_array_equal(Jl[block, :, :count[block]], rows[:, expected])
