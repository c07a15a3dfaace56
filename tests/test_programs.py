"""Tests of the explicit programs (ConicProgram, LCP), their residuals, the conversions between
them, the file format, and the solver registry run over a table of reference programs.

What is checked, and why:

* ``ConicProgram`` / ``LCP`` reject inconsistent shapes and non-finite data at construction.
* contactopt's own residuals are zero at hand-made exact KKT points and equal the violation
  computed by hand at perturbed points (so every other test can trust them).
* QP -> LCP (KKT conditions) and LCP -> QP (symmetric PSD M): the converted programs are the
  ones in ``contactopt.programs.convert``'s docstring, and solving through a conversion gives
  the same primal and dual answers as solving the original natively.
* Refusals: programs that no conversion applies to raise one clear error naming the solvers
  that can take them.
* ``save_program`` / ``load_program`` round trips (and the file is pickle-free).
* One table of small reference programs with closed-form primal and dual solutions, run over
  every installed solver that can take each program; the duals must follow contactopt's sign
  convention ``P x + c + A^T y = 0, y in K*``.

Tolerances: every solver-dependent tolerance is in ``SOLVER_TOL``; the problems are scaled so
that solutions and data are of order 1, so absolute tolerances are meaningful.
"""

import importlib.util
import json

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import ConversionError, ShapeError
from contactopt.programs import conic_residuals, lcp_residuals

# Absolute tolerance on x, on y and on residuals.worst, per solver.
SOLVER_TOL = {
    # Interior point (contactopt sets Clarabel's gap and feasibility tolerances to 1e-10):
    # the iterate is within about sqrt(1e-10) of the solution even on degenerate programs.
    "clarabel": 1e-6,
    # ADMM with solution polishing (contactopt's default): polishing solves the KKT system of
    # the identified active set, so the answer is accurate to rounding.
    "osqp": 1e-6,
    # cvxpy without a variant uses its default solver (an interior-point one, Clarabel, at its
    # own default tolerance 1e-8).
    "cvxpy": 1e-6,
    # SCS is a first-order (ADMM) method without polishing, stopping at eps_abs = eps_rel =
    # 1e-4 by default: its iterate is only accurate to that order.
    "cvxpy:SCS": 1e-4,
    # Lemke pivots exactly; the errors are rounding errors (solution through a conversion).
    "lemke": 1e-9,
    # qpsolvers' default inner solver (proxqp), run by our backend at 1e-9 with its gap check.
    "qpsolvers": 1e-6,
    # Projected Gauss-Seidel stops at a natural-map residual of 1e-10 (relative); these
    # programs are well conditioned, so x is within ~1e-9.
    "pgs": 1e-7,
}
# Exact arithmetic checks (hand-made points, conversions by formula).
EXACT_TOL = 1e-12


def cvxpy_has_scs():
    if importlib.util.find_spec("cvxpy") is None:
        return False
    import cvxpy

    return "SCS" in cvxpy.installed_solvers()


SOLVERS = co.solvers.available() + (["cvxpy:SCS"] if cvxpy_has_scs() else [])


# --------------------------------------------------------------------------- reference table
#
# Each entry: (program, x, y) with x and y the exact primal and dual solutions, derived below.


def box_qp():
    """min 1/2 (x - p)^T D (x - p)  s.t.  0 <= x <= u   (Nonneg rows only).

    Rows: x <= u (A = I, b = u), then -x <= 0 (A = -I, b = 0). D is diagonal, so the problem
    separates: x = clip(p, 0, u). Stationarity D (x - p) + y_upper - y_lower = 0 gives
    y_upper = D max(p - u, 0) and y_lower = D max(-p, 0).
    With p = (1.5, -0.3, 0.4), D = diag(1, 2, 0.5), u = 1:
    x = (1, 0, 0.4), y_upper = (0.5, 0, 0), y_lower = (0, 0.6, 0).
    """
    p = np.array([1.5, -0.3, 0.4])
    D = np.array([1.0, 2.0, 0.5])
    u = np.ones(3)
    program = co.ConicProgram(
        P=sp.diags(D), c=-D * p, A=sp.vstack([sp.eye(3), -sp.eye(3)]),
        b=np.concatenate([u, np.zeros(3)]), cones=(co.Nonneg(6),),
    )
    x = np.clip(p, 0.0, u)
    y = np.concatenate([D * np.maximum(p - u, 0.0), D * np.maximum(-p, 0.0)])
    return program, x, y


def simplex_qp():
    """Projection of p onto the simplex: min 1/2 ||x||^2 - p^T x  s.t.  1^T x = 1, x >= 0.

    Rows: 1^T x = 1 (Zero), then -x <= 0 (Nonneg). Closed form x = max(p - tau, 0) with tau
    such that sum(x) = 1. For p = (0.8, 0.6, -0.5): with the first two entries positive,
    0.8 + 0.6 - 2 tau = 1, tau = 0.2, x = (0.6, 0.4, 0) (and p_3 - tau < 0 as assumed).
    Stationarity x - p + y_eq 1 - y_nonneg = 0: y_eq = p_i - x_i = tau = 0.2 on the
    support, and y_nonneg,3 = x_3 - p_3 + tau = 0.7; y = (0.2, 0, 0, 0.7).
    """
    p = np.array([0.8, 0.6, -0.5])
    program = co.ConicProgram(
        P=sp.eye(3), c=-p, A=sp.vstack([np.ones((1, 3)), -sp.eye(3)]),
        b=np.array([1.0, 0.0, 0.0, 0.0]), cones=(co.Zero(1), co.Nonneg(3)),
    )
    return program, np.array([0.6, 0.4, 0.0]), np.array([0.2, 0.0, 0.0, 0.7])


def lorentz_projection_socp():
    """Projection of p = (t, v) onto the Lorentz cone: min 1/2 ||x - p||^2  s.t.  x in SOC(3).

    Rows: -x + s = 0, s in SOC(3). For ||v|| > |t| the projection is
    x = (t + ||v||)/2 (1, v/||v||). With p = (0.5, 3, 4): ||v|| = 5,
    x = 2.75 (1, 0.6, 0.8) = (2.75, 1.65, 2.2). Stationarity x - p - y = 0: y = x - p =
    (2.25, -1.35, -1.8), on the boundary of the (self-dual) cone since ||(1.35, 1.8)|| = 2.25,
    and x^T y = 6.1875 - 2.2275 - 3.96 = 0 (Moreau decomposition p = x - y).
    """
    p = np.array([0.5, 3.0, 4.0])
    program = co.ConicProgram(P=sp.eye(3), c=-p, A=-sp.eye(3), b=np.zeros(3), cones=(co.SOC(3),))
    x = np.array([2.75, 1.65, 2.2])
    return program, x, x - p


REFERENCE = {"box-qp": box_qp, "simplex-qp": simplex_qp, "lorentz-socp": lorentz_projection_socp}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_closed_forms_are_exact_kkt_points(name):
    # The closed forms derived above, checked with contactopt's residuals.
    program, x, y = REFERENCE[name]()
    assert conic_residuals(program, x, y).worst <= EXACT_TOL


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_program_solved_by_every_solver(name, solver):
    program, x_exact, _ = REFERENCE[name]()
    if not co.solvers.can_take(program, solver):
        pytest.skip(f"{solver} cannot take {name}")
    tol = SOLVER_TOL[solver]
    sol = co.solve(program, solver)
    assert sol.status in (co.Status.OPTIMAL, co.Status.INACCURATE), sol.message
    np.testing.assert_allclose(sol.x, x_exact, rtol=0, atol=tol)
    assert sol.residuals.worst <= tol, sol.residuals
    np.testing.assert_allclose(sol.s, program.b - program.A @ sol.x, rtol=0, atol=EXACT_TOL)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", list(REFERENCE))
def test_duals_follow_contactopt_sign_convention(name, solver):
    # P x + c + A^T y = 0 with y in K* is what residuals.dual measures; the unique dual of
    # each reference program is also known in closed form.
    program, _, y_exact = REFERENCE[name]()
    if not co.solvers.can_take(program, solver):
        pytest.skip(f"{solver} cannot take {name}")
    tol = SOLVER_TOL[solver]
    sol = co.solve(program, solver)
    assert sol.y.shape == (program.m,)
    stationarity = program.P @ sol.x + program.c + program.A.T @ sol.y
    assert np.abs(stationarity).max() <= tol
    assert sol.residuals.dual <= tol, sol.residuals
    np.testing.assert_allclose(sol.y, y_exact, rtol=0, atol=tol)


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible_qp_is_a_status_not_an_answer(solver):
    # x <= -1 and -x <= -1 (x >= 1): no feasible point. Through the QP -> LCP conversion,
    # M = A P^{-1} A^T is symmetric PSD (copositive-plus), so Lemke's ray termination is the
    # certificate of infeasibility.
    program = co.ConicProgram(P=np.eye(1), c=[0.0], A=[[1.0], [-1.0]], b=[-1.0, -1.0],
                              cones=(co.Nonneg(2),))
    if not co.solvers.can_take(program, solver):  # newton: only the SAP primal's conic form
        pytest.skip(f"{solver} cannot take this QP")
    sol = co.solve(program, solver)
    if solver == "pgs":  # no certificate: the iteration cap, with its (finite) last iterate
        assert sol.status == co.Status.MAX_ITERATIONS, sol.message
        return
    expected = co.Status.RAY_TERMINATION if solver == "lemke" else co.Status.INFEASIBLE
    assert sol.status == expected, sol.message
    assert np.all(np.isnan(sol.x))


# --------------------------------------------------------------------------- construction


def valid_qp_arguments():
    return {"P": np.eye(2), "c": np.array([1.0, -1.0]), "A": np.eye(2),
            "b": np.array([1.0, 1.0]), "cones": (co.Nonneg(2),)}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"P": np.eye(3)}, "ConicProgram.P"),
        ({"P": np.ones((2, 3))}, "ConicProgram.P"),
        ({"A": np.eye(3)}, "ConicProgram.A"),
        ({"cones": (co.Nonneg(1),)}, "cones"),
        ({"cones": (co.Zero(1), co.Nonneg(2))}, "cones"),
        ({"c": np.array([np.nan, 0.0])}, "NaN"),
        ({"b": np.array([np.inf, 0.0])}, "NaN or infinite"),
        ({"P": np.array([[1.0, 1.0], [0.0, 1.0]])}, "not symmetric"),
        ({"variables": (co.Block("x", 0, 1),)}, "layout"),
        ({"constraints": (co.Block("a", 0, 1), co.Block("b", 2, 3))}, "layout"),
    ],
    ids=["P-too-big", "P-not-square", "A-wrong-shape", "cones-too-few-rows",
         "cones-too-many-rows", "nan-in-c", "inf-in-b", "P-not-symmetric",
         "variables-not-covering", "constraints-gap"],
)
def test_conic_program_rejects_bad_input(change, message):
    co.ConicProgram(**valid_qp_arguments())  # the unchanged arguments are valid
    with pytest.raises(ShapeError, match=message):
        co.ConicProgram(**{**valid_qp_arguments(), **change})


@pytest.mark.parametrize(
    ("M", "q"),
    [(np.eye(3), np.zeros(2)), (np.ones((2, 3)), np.zeros(2)), ([[np.nan]], [1.0])],
    ids=["M-wrong-size", "M-not-square", "nan"],
)
def test_lcp_rejects_bad_input(M, q):
    with pytest.raises(ShapeError):
        co.LCP(M, q)


def test_cones_are_shared_values_with_a_process_independent_hash():
    """The factories hand out one instance per kind and dimension (a pile program holds
    hundreds); a cone built directly is equal to it, and the hash (computed once, from
    integers) is the same in a fresh interpreter, so pickled programs and the process pool
    of ``compare`` see the same cones."""
    import os
    import pickle
    import subprocess
    import sys

    from contactopt.programs.conic import SOC, Cone, Nonneg, Zero

    assert SOC(3) is SOC(3) and Nonneg(7) is Nonneg(np.int64(7)) and Zero(2) is Zero(2)
    assert SOC(3) == co.programs.Cone("soc", 3) and hash(SOC(3)) == hash(Cone("soc", 3))
    assert SOC(3) != Nonneg(3) and hash(SOC(3)) != hash(Nonneg(3))
    assert type(SOC(np.int64(3)).dim) is int
    copy = pickle.loads(pickle.dumps((SOC(3), Nonneg(2))))
    assert copy == (SOC(3), Nonneg(2)) and hash(copy) == hash((SOC(3), Nonneg(2)))
    code = "from contactopt.programs.conic import SOC; print(hash(SOC(3)))"
    for seed in ("1", "2"):
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={**os.environ, "PYTHONHASHSEED": seed})
        assert int(other.stdout) == hash(SOC(3))
    with pytest.raises(ShapeError):
        SOC(0)
    with pytest.raises(ShapeError):
        Cone("cube", 3)


def test_program_kind():
    assert box_qp()[0].kind == "qp"
    assert simplex_qp()[0].kind == "qp"
    assert lorentz_projection_socp()[0].kind == "socp"
    assert co.LCP(np.eye(2), np.zeros(2)).kind == "lcp"


# --------------------------------------------------------------------------- residuals


def small_qp():
    """min 1/2 ||x||^2 - (1, 1)^T x  s.t.  x1 + x2 <= 1.

    KKT: x - 1 + y (1, 1) = 0 gives x = (1 - y)(1, 1); the constraint is active:
    2 (1 - y) = 1, so y = 1/2 >= 0 and x = (1/2, 1/2).
    """
    return co.ConicProgram(P=np.eye(2), c=[-1.0, -1.0], A=[[1.0, 1.0]], b=[1.0],
                           cones=(co.Nonneg(1),))


def test_residuals_vanish_at_exact_kkt_point():
    res = conic_residuals(small_qp(), [0.5, 0.5], [0.5])
    assert res.as_dict() == {"primal": 0.0, "dual": 0.0, "gap": 0.0, "complementarity": 0.0, "relative": 0.0}


def test_residuals_measure_hand_computed_violation():
    # x = (0.6, 0.6), y = 0.5:
    #   s = 1 - 1.2 = -0.2                        -> primal = 0.2
    #   P x + c + A^T y = 0.6 - 1 + 0.5 = 0.1     -> dual = 0.1
    #   x^T P x + c^T x + b^T y = 0.72 - 1.2 + 0.5 -> gap = 0.02
    #   |s y| = 0.2 * 0.5                          -> complementarity = 0.1
    res = conic_residuals(small_qp(), [0.6, 0.6], [0.5])
    assert res.primal == pytest.approx(0.2, abs=EXACT_TOL)
    assert res.dual == pytest.approx(0.1, abs=EXACT_TOL)
    assert res.gap == pytest.approx(0.02, abs=EXACT_TOL)
    assert res.complementarity == pytest.approx(0.1, abs=EXACT_TOL)
    assert res.worst == pytest.approx(0.2, abs=EXACT_TOL)


def test_residuals_of_a_negative_dual():
    # y = -0.5 is outside K* = R_+ (distance 0.5); stationarity x - 1 + y = -1 at x = (0.5, 0.5).
    res = conic_residuals(small_qp(), [0.5, 0.5], [-0.5])
    assert res.primal == 0.0
    assert res.dual == pytest.approx(1.0, abs=EXACT_TOL)


def test_residuals_of_equality_and_soc_violations():
    # Simplex QP at x = (0.7, 0.4, 0): the equality row is violated by |1 - 1.1| = 0.1.
    program, _, y = simplex_qp()
    assert conic_residuals(program, [0.7, 0.4, 0.0], y).primal == pytest.approx(0.1, abs=EXACT_TOL)
    # Lorentz projection at x = (1, 1, 1): s = x, violation ||(1, 1)|| - 1 = sqrt(2) - 1.
    program, _, y = lorentz_projection_socp()
    res = conic_residuals(program, [1.0, 1.0, 1.0], y)
    assert res.primal == pytest.approx(np.sqrt(2.0) - 1.0, abs=EXACT_TOL)


def test_lcp_residuals_hand_computed():
    lcp = co.LCP(np.eye(2), [-1.0, 2.0])
    # Exact solution z = (1, 0), w = (0, 2).
    exact = lcp_residuals(lcp, [1.0, 0.0])
    assert (exact.primal, exact.dual, exact.complementarity) == (0.0, 0.0, 0.0)
    assert np.isnan(exact.gap)
    # z = (1.1, -0.1): w = (0.1, 1.9); min z = -0.1 -> primal 0.1; w >= 0 -> dual 0;
    # z^T w = 0.11 - 0.19 = -0.08 -> complementarity 0.08. z = (0.9, 0): w_1 = -0.1 -> dual 0.1.
    perturbed = lcp_residuals(lcp, [1.1, -0.1])
    assert perturbed.primal == pytest.approx(0.1, abs=EXACT_TOL)
    assert perturbed.dual == 0.0
    assert perturbed.complementarity == pytest.approx(0.08, abs=EXACT_TOL)
    assert lcp_residuals(lcp, [0.9, 0.0]).dual == pytest.approx(0.1, abs=EXACT_TOL)


# --------------------------------------------------------------------------- QP -> LCP


def random_inequality_qp(seed, n=5, m=8):
    """Strictly convex QP with m > n inequality rows, feasible (b = A x0 + positive slack)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, n))
    P = B @ B.T + np.eye(n)
    A = rng.standard_normal((m, n))
    b = A @ rng.standard_normal(n) + rng.uniform(0.1, 1.0, m)
    c = 3.0 * rng.standard_normal(n)  # large enough that several rows are active
    return co.ConicProgram(P=P, c=c, A=A, b=b, cones=(co.Nonneg(m),),
                           constraints=(co.Block("rows", 0, m),))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qp_to_lcp_builds_the_kkt_lcp(seed):
    qp = random_inequality_qp(seed)
    P, A = qp.P.toarray(), qp.A.toarray()
    lcp = co.qp_to_lcp(qp)
    np.testing.assert_allclose(lcp.M, A @ np.linalg.solve(P, A.T), rtol=0, atol=1e-10)
    np.testing.assert_allclose(lcp.q, qp.b + A @ np.linalg.solve(P, qp.c), rtol=0, atol=1e-10)
    assert [block.name for block in lcp.variables] == ["dual:rows"]
    # Its solution z is the QP's dual; x = -P^{-1} (c + A^T z).
    z = co.solve(lcp, "lemke").z
    x = -np.linalg.solve(P, qp.c + A.T @ z)
    assert conic_residuals(qp, x, z).worst <= SOLVER_TOL["lemke"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qp_through_lemke_agrees_with_native_solvers(seed):
    qp = random_inequality_qp(seed)
    via_lcp = co.solve(qp, "lemke")
    assert via_lcp.conversion == "qp->lcp"
    assert via_lcp.status == co.Status.OPTIMAL
    assert via_lcp.y.shape == (qp.m,)
    assert via_lcp.residuals.worst <= SOLVER_TOL["lemke"]
    assert np.sum(via_lcp.y > 1e-3) >= 2, "the test needs active rows to mean anything"
    for solver in ("clarabel", "osqp"):
        if solver not in co.solvers.available():
            continue
        native = co.solve(qp, solver)
        assert native.conversion is None
        tol = SOLVER_TOL[solver]
        np.testing.assert_allclose(via_lcp.x, native.x, rtol=0, atol=tol)
        np.testing.assert_allclose(via_lcp.y, native.y, rtol=0, atol=tol)
        np.testing.assert_allclose(via_lcp.s, native.s, rtol=0, atol=tol)


def test_qp_to_lcp_refuses_singular_p():
    qp = co.ConicProgram(P=np.diag([1.0, 0.0]), c=[1.0, 1.0], A=np.eye(2), b=[1.0, 1.0],
                         cones=(co.Nonneg(2),))
    with pytest.raises(ConversionError, match="positive definite"):
        co.qp_to_lcp(qp)
    # can_take and solve agree: no route to lemke, and the error says why and who can.
    assert not co.solvers.can_take(qp, "lemke")
    with pytest.raises(co.UnsupportedProgramError, match=r"positive definite.*clarabel"):
        co.solve(qp, "lemke")


def test_qp_to_lcp_refuses_rank_deficient_p():
    # P = u u^T + v v^T has rank 2 (singular 3x3) but its Cholesky factorisation succeeds in
    # floating point, with a last pivot of rounding size.
    u = np.array([1.0, 0.1, 0.1])
    v = np.array([0.2, 0.1, 0.02])
    P = np.outer(u, u) + np.outer(v, v)
    assert np.linalg.matrix_rank(P) == 2
    qp = co.ConicProgram(P=P, c=[1.0, 1.0, 1.0], A=np.eye(3), b=np.ones(3), cones=(co.Nonneg(3),))
    with pytest.raises(ConversionError):
        co.qp_to_lcp(qp)


# --------------------------------------------------------------------------- LCP -> QP


def random_psd_lcp(seed, n=6):
    """Symmetric PSD M of rank 3; q = w* - M z* with complementary z*, w* >= 0 (solvable)."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, 3))
    M = C @ C.T
    in_support = rng.random(n) < 0.5
    z_star = np.where(in_support, rng.uniform(0.5, 2.0, n), 0.0)
    w_star = np.where(in_support, 0.0, rng.uniform(0.5, 2.0, n))
    return co.LCP(M, w_star - M @ z_star)


def test_lcp_to_qp_builds_the_qp():
    lcp = random_psd_lcp(0)
    qp = co.lcp_to_qp(lcp)
    np.testing.assert_allclose(qp.P.toarray(), lcp.M, rtol=0, atol=EXACT_TOL)
    np.testing.assert_array_equal(qp.c, lcp.q)
    np.testing.assert_array_equal(qp.A.toarray(), -np.eye(lcp.n))
    np.testing.assert_array_equal(qp.b, np.zeros(lcp.n))
    assert qp.cones == (co.Nonneg(lcp.n),)


@pytest.mark.parametrize("solver", ["clarabel", "osqp"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symmetric_psd_lcp_through_qp_solvers(seed, solver):
    if solver not in co.solvers.available():
        pytest.skip(f"{solver} is not installed")
    lcp = random_psd_lcp(seed)
    tol = SOLVER_TOL[solver]
    sol = co.solve(lcp, solver)
    assert sol.conversion == "lcp->qp"
    assert sol.status == co.Status.OPTIMAL, sol.message
    # Residuals are those of the LCP (z >= 0, w >= 0, z^T w; gap undefined), not of the QP.
    expected = lcp_residuals(lcp, sol.z)
    assert np.isnan(sol.residuals.gap)
    assert (sol.residuals.primal, sol.residuals.dual, sol.residuals.complementarity) == (
        expected.primal, expected.dual, expected.complementarity)
    assert sol.residuals.worst <= tol, sol.residuals
    np.testing.assert_allclose(sol.w, lcp.M @ sol.z + lcp.q, rtol=0, atol=EXACT_TOL)
    # w is unique for a symmetric PSD LCP (z need not be): it must agree with Lemke's.
    lemke = co.solve(lcp, "lemke")
    np.testing.assert_allclose(sol.w, lemke.w, rtol=0, atol=tol)


# --------------------------------------------------------------------------- refusals


def listed_solvers(message):
    """The solver names after 'solvers that can:' in an UnsupportedProgramError message."""
    assert "solvers that can:" in message, message
    tail = message.split("solvers that can:")[1]
    return {name for name in co.solvers.names() if name in tail}


def test_lemke_refuses_equality_rows_and_names_who_can():
    program, _, _ = simplex_qp()
    assert not co.solvers.can_take(program, "lemke")
    with pytest.raises(co.UnsupportedProgramError, match="equality") as info:
        co.solve(program, "lemke")
    assert listed_solvers(str(info.value)) == {"clarabel", "osqp", "cvxpy", "qpsolvers"}


def test_lemke_refuses_soc_rows_and_names_who_can():
    program, _, _ = lorentz_projection_socp()
    assert not co.solvers.can_take(program, "lemke")
    with pytest.raises(co.UnsupportedProgramError) as info:
        co.solve(program, "lemke")
    assert listed_solvers(str(info.value)) == {"clarabel", "cvxpy", "pgs"}


@pytest.mark.parametrize("solver", ["clarabel", "osqp", "cvxpy"])
def test_qp_solvers_refuse_nonsymmetric_lcp_and_name_lemke(solver):
    lcp = co.LCP([[2.0, 1.0], [0.0, 2.0]], [-1.0, -1.0])
    assert not co.solvers.can_take(lcp, solver)
    with pytest.raises(co.UnsupportedProgramError, match="not symmetric") as info:
        co.solve(lcp, solver)
    assert listed_solvers(str(info.value)) == {"lemke", "pgs"}


def test_qp_solvers_refuse_indefinite_symmetric_lcp():
    lcp = co.LCP([[1.0, 2.0], [2.0, 1.0]], [-1.0, -1.0])  # eigenvalues 3 and -1
    with pytest.raises(co.UnsupportedProgramError, match="not positive semidefinite") as info:
        co.solve(lcp, "clarabel")
    assert listed_solvers(str(info.value)) == {"lemke", "pgs"}


def test_unknown_solver_name_lists_known_names():
    program, _, _ = box_qp()
    with pytest.raises(co.UnknownNameError) as info:
        co.solve(program, "gurobi")
    message = str(info.value)
    assert "gurobi" in message
    for name in co.solvers.names():
        assert name in message


def test_variant_of_solver_without_variants_is_unknown():
    with pytest.raises(co.UnknownNameError, match="variant"):
        co.solve(box_qp()[0], "lemke:fast")


# --------------------------------------------------------------------------- save / load


def assert_same_program(loaded, original):
    assert type(loaded) is type(original)
    assert loaded.kind == original.kind
    assert loaded.variables == original.variables
    assert loaded.metadata == original.metadata
    if isinstance(original, co.LCP):
        np.testing.assert_array_equal(loaded.M, original.M)
        np.testing.assert_array_equal(loaded.q, original.q)
        return
    np.testing.assert_array_equal(loaded.P.toarray(), original.P.toarray())
    np.testing.assert_array_equal(loaded.A.toarray(), original.A.toarray())
    np.testing.assert_array_equal(loaded.c, original.c)
    np.testing.assert_array_equal(loaded.b, original.b)
    assert loaded.cones == original.cones
    assert loaded.constraints == original.constraints


METADATA = {"formulation": "gauss", "dt": 0.01, "step": 3, "options": {"mu": 0.5},
            "bodies": ["cart", "wall"]}


def program_to_save(kind):
    if kind == "qp":
        program, _, _ = simplex_qp()
        return co.ConicProgram(
            P=program.P, c=program.c, A=program.A, b=program.b, cones=program.cones,
            variables=(co.Block("v_next", 0, 3),),
            constraints=(co.Block("sum", 0, 1), co.Block("impulse", 1, 4, per=3)),
            metadata=METADATA)
    if kind == "socp":
        program, _, _ = lorentz_projection_socp()
        return co.ConicProgram(
            P=program.P, c=program.c, A=program.A, b=program.b, cones=program.cones,
            variables=(co.Block("impulse", 0, 3, per=3),),
            constraints=(co.Block("friction_cone", 0, 3, per=3),), metadata=METADATA)
    lcp = random_psd_lcp(5)
    return co.LCP(lcp.M, lcp.q, variables=(co.Block("normal", 0, 2), co.Block("tangent", 2, 6, 2)),
                  metadata=METADATA)


@pytest.mark.parametrize("kind", ["qp", "socp", "lcp"])
def test_save_load_round_trip(kind, tmp_path):
    original = program_to_save(kind)
    assert original.kind == kind
    path = co.save_program(original, tmp_path / f"program_{kind}")
    assert path == tmp_path / f"program_{kind}.npz"
    assert_same_program(co.load_program(path), original)

    # Plain arrays only: every entry loads without pickle, the header is JSON.
    with np.load(path, allow_pickle=False) as arrays:
        for key in arrays.files:
            assert arrays[key].dtype != object
        header = json.loads(str(arrays["header"]))
    assert header["kind"] == kind
    assert header["metadata"] == METADATA


def test_cvxpy_variant_capabilities_are_checked():
    if "cvxpy" not in co.solvers.available():
        pytest.skip("cvxpy not installed")
    import cvxpy

    socp = co.ConicProgram(P=np.eye(3), c=[0.0, -2.0, 1.0], A=-np.eye(3), b=np.zeros(3), cones=(co.SOC(3),))
    assert co.solvers.can_take(socp, "cvxpy:CLARABEL")
    if "OSQP" in cvxpy.installed_solvers():  # a QP-only inner solver cannot take a cone
        assert not co.solvers.can_take(socp, "cvxpy:OSQP")
        with pytest.raises(co.UnsupportedProgramError):
            co.solve(socp, "cvxpy:OSQP")
