"""The ``nsn`` (semismooth Newton on Alart-Curnier) and ``admm`` (De Saxcé ADMM) kernels on
FCLIB's local Coulomb problem: closed forms of one contact (stick, slide, take-off), a
4-contact box against the De Saxcé fixed point of ``solve_coulomb``, Newton's quadratic rate,
and the CCP answer of ADMM without the correction against Clarabel."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

from contactopt.programs.coulomb_error import natural_map, project_cones
from contactopt.programs.fclib_io import FclibLocal
from contactopt.solvers.coulomb.admm.kernel import admm
from contactopt.solvers.coulomb.alart_curnier import LINESEARCHES, semismooth_newton
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb

GRAVITY, DT = 9.81, 1e-3
#: The solves stop at FCLIB error 1e-12, a natural-map residual of about 2e-12 for these data;
#: with W's condition number near 1 the impulses are within a few times that.
TOL_R = 1e-10


def fclib_error(W: sp.csc_matrix, q: np.ndarray, mu: np.ndarray, dim: int, r: np.ndarray) -> float:
    u = W @ r + q
    return float(np.linalg.norm(natural_map(r, u, mu, dim)) / (1.0 + np.sqrt(np.linalg.norm(q))))


def newton(W: np.ndarray, q: np.ndarray, mu: np.ndarray, dim: int, linesearch: str = "armijo",
           tol: float = 1e-12) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The kernel with rho_c = 1 / max diag W_cc, stopping at FCLIB error ``tol``; (r, [(error, merit)])."""
    Ws = sp.csc_matrix(W)
    rho = 1.0 / Ws.diagonal().reshape(-1, dim).max(axis=1)
    history: list[tuple[float, float]] = []

    def stop(k: int, r: np.ndarray, u: np.ndarray, merit: float) -> bool:
        history.append((fclib_error(Ws, q, mu, dim, r), merit))
        return history[-1][0] <= tol

    result = semismooth_newton(Ws, q, mu, dim, rho, np.zeros_like(q), 100, linesearch, stop)
    assert result.stopped
    return result.r, history


def run_admm(W: np.ndarray, q: np.ndarray, mu: np.ndarray, dim: int, desaxce: bool = True,
             stop: Callable[[np.ndarray, np.ndarray], bool] | None = None) -> np.ndarray:
    Ws = sp.csc_matrix(W)

    def fclib_stop(k: int, r: np.ndarray, u: np.ndarray, penalty: float) -> bool:
        return fclib_error(Ws, q, mu, dim, r) <= 1e-12 if stop is None else stop(r, u)

    result = admm(Ws, q, mu, dim, np.zeros_like(q), desaxce=desaxce, max_iterations=5000,
                  penalty="spectral", rho=None, prox=1e-6, stop=fclib_stop)
    assert result.stopped
    return result.r


SOLVERS = {"nsn": lambda W, q, mu, dim: newton(W, q, mu, dim)[0], "admm": run_admm}

# One contact with a coupled, anisotropic Delassus (a point off the centre of a rotating body).
W_ONE = np.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 1.2]])


@pytest.mark.parametrize("solver", SOLVERS)
def test_sticking_contact_gets_the_impulse_that_stops_it(solver: str) -> None:
    q = np.array([-1.0, 0.1, -0.05])
    mu = np.array([0.8])
    r_stop = -np.linalg.solve(W_ONE, q)
    assert np.linalg.norm(r_stop[1:]) < mu[0] * r_stop[0]  # inside the cone: stick is the answer
    r = SOLVERS[solver](W_ONE, q, mu, 3)
    np.testing.assert_allclose(r, r_stop, rtol=0, atol=TOL_R)


@pytest.mark.parametrize("solver", SOLVERS)
def test_sliding_point_gets_exact_coulomb_without_lift(solver: str) -> None:
    """A point mass (W = I/m) sliding at v with gravity's impulse closing it: Coulomb gives
    r_N = m g h (u_N = 0: no lift, unlike the CCP), r_T = -mu r_N along the slip."""
    mass, v, mu = 2.0, np.array([1.0, -0.5]), 0.4
    W = np.eye(3) / mass
    q = np.array([-GRAVITY * DT, *v])
    r = SOLVERS[solver](W, q, np.array([mu]), 3)
    normal = mass * GRAVITY * DT
    slip = v / np.linalg.norm(v)
    np.testing.assert_allclose(r, [normal, *(-mu * normal * slip)], rtol=0, atol=TOL_R)
    u = W @ r + q
    assert abs(u[0]) <= TOL_R / mass
    np.testing.assert_allclose(u[1:], (np.linalg.norm(v) - mu * GRAVITY * DT) * slip, atol=TOL_R / mass)


@pytest.mark.parametrize("solver", SOLVERS)
def test_separating_contact_takes_no_impulse(solver: str) -> None:
    q = np.array([0.3, 2.0, -1.0])
    r = SOLVERS[solver](W_ONE, q, np.array([0.5]), 3)
    np.testing.assert_array_equal(r, np.zeros(3))


@pytest.mark.parametrize("solver", SOLVERS)
def test_planar_contacts_and_frictionless_rows(solver: str) -> None:
    """dim 2 with a mu = 0 contact: the frictionless one gets no tangential impulse and its
    normal row is Signorini's; the closed form for decoupled contacts (W diagonal)."""
    W = np.diag([1.0, 1.0, 0.5, 0.5])
    q = np.array([-0.2, 3.0, -0.4, 1.0])
    mu = np.array([0.0, 0.25])
    r = SOLVERS[solver](W, q, mu, 2)
    np.testing.assert_allclose(r, [0.2, 0.0, 0.8, -0.2], rtol=0, atol=TOL_R)


def box_problem(v: tuple[float, float, float], spin: float = 0.0, mu: float = 0.5) -> FclibLocal:
    """A 1 kg cube of half side 0.1 on four corner contacts, velocity ``v`` (and spin about
    the vertical) plus one step of gravity: W = J M^-1 J', q = J v_free."""
    mass, half = 1.0, 0.1
    inertia = mass * (2 * half) ** 2 / 6.0
    corners = [np.array([sx * half, sy * half, -half]) for sx in (-1, 1) for sy in (-1, 1)]
    frame = np.eye(3)  # normal z first, then x, y
    frame = frame[[2, 0, 1]]
    rows = []
    for p in corners:
        for axis in frame:
            rows.append(np.concatenate([axis, np.cross(p, axis)]))
    J = np.array(rows)
    Minv = np.diag([1 / mass] * 3 + [1 / inertia] * 3)
    v_free = np.array([v[0], v[1], v[2] - GRAVITY * DT, 0.0, 0.0, spin])
    W = J @ Minv @ J.T
    return FclibLocal(W=sp.csc_matrix(W), q=J @ v_free, mu=np.full(4, mu), spacedim=3)


def sphere_stack(velocities: list[tuple[float, ...]], mu: float = 0.3) -> FclibLocal:
    """Unit spheres (radius 0.1, 1 kg) stacked on the ground, each with its own velocity and
    spin (v, omega), plus one step of gravity: one contact under each sphere. W is positive
    definite (3 rows per 6 degrees of freedom, independent), the case where Coulomb's problem
    has one solution for moderate mu."""
    radius, mass = 0.1, 1.0
    inertia = 0.4 * mass * radius**2
    n = len(velocities)
    frame = np.eye(3)[[2, 0, 1]]  # normal z first, then x, y
    below, above = np.array([0.0, 0.0, -radius]), np.array([0.0, 0.0, radius])
    J = np.zeros((3 * n, 6 * n))
    for i in range(n):
        for a, axis in enumerate(frame):
            row = 3 * i + a
            J[row, 6 * i: 6 * i + 3] = axis
            J[row, 6 * i + 3: 6 * i + 6] = np.cross(below, axis)
            if i > 0:  # the sphere below: the contact point is on its top
                J[row, 6 * (i - 1): 6 * (i - 1) + 3] = -axis
                J[row, 6 * (i - 1) + 3: 6 * i] = -np.cross(above, axis)
    Minv = np.diag(np.tile([1 / mass] * 3 + [1 / inertia] * 3, n))
    v_free = np.concatenate([np.asarray(v, dtype=float) - np.array([0, 0, GRAVITY * DT, 0, 0, 0])
                             for v in velocities])
    return FclibLocal(W=sp.csc_matrix(J @ Minv @ J.T), q=J @ v_free, mu=np.full(n, mu), spacedim=3)


CASES = {
    "box sliding": box_problem((1.0, 0.0, 0.0)),
    "box sticking": box_problem((0.001, 0.0, 0.0)),
    "stack sliding and spinning": sphere_stack([(0.5, 0.0, 0.0, 0.0, 3.0, 1.0), (-0.2, 0.3, 0.0, 1.0, 0.0, -2.0),
                                                (0.0, 0.0, -0.3, 0.0, 0.0, 0.0)]),
    "stack partly sticking": sphere_stack([(0.001, 0.0, 0.0, 0.0, 0.0, 0.0), (0.4, 0.0, 0.0, 0.0, 0.0, 0.5),
                                           (0.0, 0.01, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.5, 0.0, 0.0, 0.0)]),
}


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", CASES)
def test_multi_contact_agrees_with_the_de_saxce_fixed_point(solver: str, case: str) -> None:
    """The contact velocities u agree with solve_coulomb's (the box's impulses need not: 12
    rows on 6 degrees of freedom). A box spinning while it slides is left out: its normal
    impulses are indeterminate, the friction they bound is not, and Coulomb's problem has
    several solutions (admm finds one with FCLIB error 1e-12 whose u differs from the fixed
    point's by 3e-3)."""
    problem = CASES[case]
    reference = solve_coulomb(problem, "clarabel", tol=1e-12)
    assert reference.converged
    W = problem.W.toarray()
    r = SOLVERS[solver](W, problem.q, problem.mu, 3)
    u = W @ r + problem.q
    np.testing.assert_allclose(u, reference.answer.u, rtol=0, atol=1e-8)


def test_newton_converges_quadratically_and_monotonically() -> None:
    """Near the solution each error is at most a constant times the square of the one before
    (the ratio e_{k+1} / e_k shrinks to 0); the Armijo search makes the merit decrease."""
    problem = box_problem((0.3, -0.2, -0.5), 2.0)
    for linesearch in LINESEARCHES[:2]:
        _, history = newton(problem.W.toarray(), problem.q, problem.mu, 3, linesearch, tol=1e-12)
        errors = np.array([h[0] for h in history])
        merits = np.array([h[1] for h in history])
        assert np.all(np.diff(merits) < 0)
        tail = errors[-4:]  # 2e-3, 6e-5, 8e-8, 1e-13
        ratios = tail[1:] / tail[:-1]
        assert np.all(np.diff(ratios) < 0) and ratios[-1] < 1e-5, errors
        assert np.all(tail[1:] <= 100.0 * tail[:-1] ** 2), errors  # e_{k+1} / e_k^2: 11, 22, 17


def test_admm_without_correction_solves_the_ccp_as_clarabel() -> None:
    """desaxce off: the Anitescu-Tasora CCP (min 1/2 r'Wr + q'r over the cones), whose
    velocities u are unique; the sliding box lifts off under it (u_N > 0), not under Coulomb."""
    from contactopt.programs.fclib import fclib_program
    from contactopt.solvers import solve

    problem = box_problem((1.0, 0.0, 0.0))
    W = problem.W.toarray()
    mu = problem.mu

    def ccp_optimal(r: np.ndarray, u: np.ndarray) -> bool:  # CCP natural map K ∋ r ⟂ u ∈ K*
        return float(np.linalg.norm(r - project_cones((r - u).reshape(-1, 3), mu).reshape(-1))) <= 1e-12

    r = run_admm(W, problem.q, mu, 3, desaxce=False, stop=ccp_optimal)
    program = fclib_program(problem)
    solution = solve(program, "clarabel")
    r_clarabel = program.variable(solution.x, "impulse")
    u, u_clarabel = W @ r + problem.q, W @ r_clarabel + problem.q
    np.testing.assert_allclose(u, u_clarabel, rtol=0, atol=1e-7)
    assert u[0] > 1e-4  # the CCP's hover: the normal velocity of the sliding box is positive
    coulomb = run_admm(W, problem.q, mu, 3)
    assert abs((W @ coulomb + problem.q)[0]) <= 1e-10
