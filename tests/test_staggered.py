"""``staggered`` (staggered projections, Kaufman et al. 2008) on the exact Coulomb problem:
closed forms of one contact, agreement with the De Saxcé fixed point on a multi-contact problem
with a unique solution, its history, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs.coulomb import CoulombProgram, coulomb_believed, coulomb_to_fclib
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb
from contactopt.solvers.coulomb.staggered import kernel as staggered_kernel

INNERS = ["gauss_seidel", "clarabel"]
MASS = 2.0


def _point(q: list[float], mu: float = 0.5) -> CoulombProgram:
    """One contact of a point of mass ``MASS``: ``W = I / MASS``."""
    dim = len(q)
    return CoulombProgram(W=sp.eye(dim, format="csc") / MASS, q=np.array(q), mu=np.array([mu]), dim=dim)


@pytest.mark.parametrize("inner", INNERS)
def test_sticking_point_gets_the_impulse_that_stops_it(inner: str) -> None:
    # |q_T| MASS = 0.22 < mu r_N = 1: the impulse that stops it, r = -W^-1 q, lies in the cone
    program = _point([-1.0, 0.1, 0.05])
    solution = co.solve(program, "staggered", {"inner": inner})
    assert solution.status is co.Status.OPTIMAL, solution.message
    np.testing.assert_allclose(solution.x, -MASS * program.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(solution.s, 0.0, atol=1e-10)


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("dim", [3, 2])
def test_sliding_point_is_exact_coulomb(inner: str, dim: int) -> None:
    # |q_T| MASS > mu r_N: r_N stops the approach (u_N = 0, no lift), |r_T| = mu r_N against the slip
    slip = np.array([1.0, 0.5])[: dim - 1]
    program = _point([-1.0, *slip])
    solution = co.solve(program, "staggered", {"inner": inner})
    assert solution.status is co.Status.OPTIMAL, solution.message
    r, u = solution.x, solution.s
    assert r[0] == pytest.approx(MASS * 1.0, abs=1e-10)
    assert abs(u[0]) <= 1e-10
    np.testing.assert_allclose(r[1:], -0.5 * r[0] * slip / np.linalg.norm(slip), rtol=0, atol=1e-10)
    assert float(u[1:] @ slip) > 0  # still sliding the same way, slower
    assert solution.residuals.fclib <= 1e-8


@pytest.mark.parametrize("inner", INNERS)
def test_separating_point_takes_off(inner: str) -> None:
    program = _point([0.3, 1.0, -2.0])
    solution = co.solve(program, "staggered", {"inner": inner})
    assert solution.status is co.Status.OPTIMAL
    np.testing.assert_array_equal(solution.x, 0.0)
    assert solution.iterations == 0  # r0 = 0 is the answer: no QP solved


def _coupled_problem() -> CoulombProgram:
    """Three contacts, ``W`` symmetric with eigenvalues in [1, 2] (seeded), ``mu <= 0.4``.

    Unique solution: the De Saxcé fixed point's map ``s -> mu ||u_T(s)||`` has Lipschitz
    constant at most ``mu_max sqrt(cond W) = 0.4 sqrt(2) < 1`` (each CCP answer is the
    ``W``-metric projection of ``-W^-1 (q + s e_N)``, 1-Lipschitz in that metric), so it has
    exactly one fixed point, and every Coulomb solution is one (Acary, Cadoux, Lemaréchal &
    Malick 2011)."""
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.standard_normal((9, 9)))
    W = Q @ np.diag(np.linspace(1.0, 2.0, 9)) @ Q.T
    q = np.array([-1.0, 0.9, -0.4,    # pressed in, sliding
                  -2.0, 0.05, 0.02,   # pressed in hard, slow: sticks
                  0.8, 0.3, 0.1])     # separating
    return CoulombProgram(W=sp.csc_matrix(0.5 * (W + W.T)), q=q, mu=np.array([0.3, 0.4, 0.2]))


def test_agrees_with_the_fixed_point_on_a_unique_solution() -> None:
    program = _coupled_problem()
    reference = solve_coulomb(coulomb_to_fclib(program), "clarabel", tol=1e-12)
    assert reference.converged
    u_reference = reference.answer.u
    R = reference.answer.r.reshape(-1, 3)
    U = u_reference.reshape(-1, 3)
    mu = program.mu
    # the regimes the data was chosen for, so that the agreement covers each one
    assert np.linalg.norm(R[0, 1:]) == pytest.approx(mu[0] * R[0, 0], rel=1e-8) and np.linalg.norm(U[0, 1:]) > 1e-3
    assert np.linalg.norm(R[1, 1:]) < mu[1] * R[1, 0] and np.linalg.norm(U[1, 1:]) < 1e-9
    assert np.all(R[2] == 0.0) or np.abs(R[2]).max() < 1e-12
    for inner in INNERS:
        solution = co.solve(program, "staggered", {"inner": inner, "tol": 1e-12})
        assert solution.status is co.Status.OPTIMAL, (inner, solution.message)
        np.testing.assert_allclose(solution.s, u_reference, rtol=0, atol=1e-8)


def test_history_is_recorded_on_request_and_ends_at_the_answer() -> None:
    program = _coupled_problem()
    plain = co.solve(program, "staggered", {"inner": "gauss_seidel"})
    assert plain.history is None
    recorded = co.solve(program, "staggered", {"inner": "gauss_seidel", "history": True})
    history = recorded.history
    assert history is not None
    columns = {"iteration", "time", "fclib", "signorini", "complementarity", "dual_feasibility",
               "dissipation_gap", "cost", "relative", "inner"}
    assert columns <= set(history)
    assert all(values.shape == (recorded.iterations + 1,) for values in history.values())
    np.testing.assert_array_equal(history["iteration"], np.arange(recorded.iterations + 1))
    assert np.all(np.diff(history["time"]) >= 0)
    assert history["relative"][-1] == pytest.approx(recorded.residuals.relative, rel=1e-12, abs=1e-300)
    assert history["fclib"][-1] == pytest.approx(recorded.residuals.fclib, rel=1e-12, abs=1e-300)
    np.testing.assert_array_equal(recorded.x, plain.x)  # recording changes nothing


def test_a_budget_spent_says_the_error_reached() -> None:
    program = _coupled_problem()
    solution = co.solve(program, "staggered", {"inner": "gauss_seidel", "max_iterations": 1})
    assert solution.status is co.Status.MAX_ITERATIONS
    assert f"{solution.residuals.fclib:.1e}" in solution.message
    assert not coulomb_believed(program, solution.x) or solution.residuals.fclib > 1e-8


def test_interpreted_stages_take_the_same_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    program = _coupled_problem()
    compiled = co.solve(program, "staggered", {"inner": "gauss_seidel"})
    monkeypatch.setattr(staggered_kernel, "COMPILED", False)
    interpreted = co.solve(program, "staggered", {"inner": "gauss_seidel"})
    assert interpreted.iterations == compiled.iterations
    np.testing.assert_allclose(interpreted.x, compiled.x, rtol=0, atol=1e-14)


def test_disk_minimizer_meets_its_optimality_conditions() -> None:
    # argmin 1/2 x'Ax + b'x over ||x|| <= rho: inside with Ax + b = 0, or on the rim with
    # Ax + b = -lam x, lam >= 0 (the trust-region conditions, Moré & Sorensen 1983)
    rng = np.random.default_rng(3)
    for trial in range(200):
        B = rng.standard_normal((2, 2))
        A = B @ B.T if trial % 5 else np.diag([1.5, 0.0])  # also a singular A
        b, rho = 3.0 * rng.standard_normal(2), float(rng.uniform(0.1, 1.0))
        x = np.array(staggered_kernel.disk_minimizer(A[0, 0], A[0, 1], A[1, 1], b[0], b[1], rho))
        gradient = A @ x + b
        scale = np.linalg.norm(b) + np.linalg.norm(A) * rho
        if np.linalg.norm(x) < rho * (1 - 1e-12):
            assert np.linalg.norm(gradient) <= 1e-12 * scale
        else:
            assert np.linalg.norm(x) == pytest.approx(rho, rel=1e-12)
            lam = -float(gradient @ x) / rho**2
            assert lam >= -1e-12 * scale
            np.testing.assert_allclose(gradient, -lam * x, rtol=0, atol=1e-10 * scale)


def test_nonsymmetric_w_is_refused_unless_symmetrized() -> None:
    W = np.eye(3) / MASS
    W[0, 1] = 1e-3
    program = CoulombProgram(W=sp.csc_matrix(W), q=np.array([-1.0, 0.1, 0.0]), mu=np.array([0.5]))
    with pytest.raises(UnsupportedProgramError, match="symmetrize"):
        co.solve(program, "staggered", {"inner": "gauss_seidel"})
    solution = co.solve(program, "staggered", {"inner": "gauss_seidel", "symmetrize": True})
    assert "(W + W^T)/2" in solution.message


@pytest.mark.parametrize(("options", "name"), [({"inner": "lemke"}, "inner"), ({"tol": -1.0}, "tol"),
                                               ({"max_iterations": 1.5}, "max_iterations"),
                                               ({"history": "yes"}, "history"), ({"r0": [1.0]}, "r0"),
                                               ({"speed": 2}, "speed")])
def test_bad_options_are_named(options: dict[str, object], name: str) -> None:
    with pytest.raises(OptionError, match=name):
        co.solve(_point([-1.0, 0.1, 0.0]), "staggered", options)


def test_warm_start_at_the_answer_costs_no_iteration() -> None:
    program = _coupled_problem()
    answer = co.solve(program, "staggered", {"inner": "gauss_seidel", "tol": 1e-12})
    again = co.solve(program, "staggered", {"inner": "gauss_seidel", "r0": answer.x})
    assert again.status is co.Status.OPTIMAL and again.iterations == 0
