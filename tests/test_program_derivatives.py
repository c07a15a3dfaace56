"""Derivatives of a program's solution with respect to its data (contactopt.derivatives).

References: central finite differences of the solver (clarabel with contactopt's active-set
refinement and Newton polish, whose answers satisfy the optimality conditions to ~1e-15, so
the difference quotient's rounding error is ~1e-15 / h), closed forms, the JVP/VJP adjoint
identity, and diffcp (Agrawal et al.'s own implementation) when installed.

Step ``h = 1e-6``: central differences err by ``O(h^2)`` (measured: 1.5e-8 relative at
1e-5, 1e-10 at 1e-6 on the SOCP below) plus rounding ``~1e-15 / h = 1e-9``; both well under
the 1e-6 asked. The random programs are built from a chosen primal-dual pair with strict
complementarity (each Nonneg row has ``s_i > 0`` or ``y_i > 0``, each SOC block ``y + s`` in the
cone's interior), so the solution is a differentiable point and known in advance.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.derivatives import NondifferentiableWarning, program_derivative, residual_map
from contactopt.derivatives.conic import ConicDerivative
from contactopt.derivatives.lcp import LCPDerivative
from contactopt.derivatives.projection import project, projection_derivative

STEP = 1e-6
FD_TOL = 1e-6  # relative error against central differences (issue 26)
ADJOINT_TOL = 1e-10


def _unit(rng: np.random.Generator, d: int) -> np.ndarray:
    e = rng.standard_normal(d)
    return e / np.linalg.norm(e)


def _random_program(rng: np.random.Generator, socp: bool, linear: bool = False) -> co.ConicProgram:
    """A strictly convex program with equality and inequality rows (and, for an SOCP, SOC
    blocks in each regime: s interior, y interior, both on the boundary) whose solution
    ``(x0, y0, s0)`` is fixed by construction: ``b = A x0 + s0``, ``c = -P x0 - A'y0``.

    The active rows of the SOCP impose 13 independent equations on x (2 equality, 3 active
    Nonneg rows, 4 for the block with ``s = 0``, 2 for each block with ``s`` on a boundary
    ray): with 16 variables the duals are unique; a ``linear`` program (``P = 0``) has exactly
    13, so that its primal solution is unique too."""
    n = 13 if linear else 16
    cones = [co.Zero(2), co.Nonneg(6)] + ([co.SOC(3), co.SOC(4), co.SOC(3), co.SOC(3)] if socp else [])
    m = sum(cone.dim for cone in cones)
    G = rng.standard_normal((n, n))
    P = np.zeros((n, n)) if linear else 0.2 * G @ G.T + 0.1 * np.eye(n)
    A = rng.standard_normal((m, n))
    x0 = rng.standard_normal(n)
    s0, y0 = np.zeros(m), np.zeros(m)
    y0[:2] = rng.standard_normal(2)
    s0[2:5] = rng.random(3) + 0.5
    y0[5:8] = rng.random(3) + 0.5
    if socp:
        s0[8:11] = np.r_[2.0, 0.5 * _unit(rng, 2)]
        y0[11:15] = np.r_[2.0, 0.5 * _unit(rng, 3)]
        for start, (alpha, beta) in ((15, (0.7, 1.3)), (18, (0.4, 2.0))):
            e = _unit(rng, 2)
            s0[start:start + 3] = alpha * np.r_[1.0, e]
            y0[start:start + 3] = beta * np.r_[1.0, -e]
    return co.ConicProgram(sp.csc_matrix(P), -P @ x0 - A.T @ y0, sp.csc_matrix(A), A @ x0 + s0, tuple(cones))


def _perturbed(program: co.ConicProgram, h: float, d: dict[str, np.ndarray]) -> co.ConicProgram:
    return co.ConicProgram(sp.csc_matrix(program.P.toarray() + h * d["P"]), program.c + h * d["c"],
                           sp.csc_matrix(program.A.toarray() + h * d["A"]), program.b + h * d["b"], program.cones)


def _direction(rng: np.random.Generator, program: co.ConicProgram) -> dict[str, np.ndarray]:
    dP = rng.standard_normal((program.n, program.n))
    return {"P": dP + dP.T, "c": rng.standard_normal(program.n),
            "A": rng.standard_normal((program.m, program.n)), "b": rng.standard_normal(program.m)}


def _central(solve: Callable[[float], np.ndarray]) -> np.ndarray:
    return (solve(STEP) - solve(-STEP)) / (2 * STEP)


def _solve_conic(program: co.ConicProgram) -> co.Solution:
    """clarabel's answer taken to the root of the optimality conditions ``F(x, y - s) = 0``
    (:func:`~contactopt.derivatives.residual_map`) by Newton's method where contactopt's
    refinement left it at the interior-point tolerance (the root does not depend on the
    Jacobian used, only the convergence does; checked by the residual)."""
    solution = co.solve(program, solver="clarabel")
    assert solution.status is co.Status.OPTIMAL
    x, v = solution.x.copy(), solution.y - solution.s
    for _ in range(8):
        residual = residual_map(program, x, v)
        if np.abs(residual).max() <= 1e-14 * max(1.0, np.abs(program.b).max(), np.abs(program.c).max()):
            break
        D = projection_derivative(program.cones, v).matrix.toarray()
        jacobian = np.block([[program.P.toarray(), program.A.toarray().T @ D],
                             [program.A.toarray(), D - np.eye(program.m)]])
        step = np.linalg.solve(jacobian, residual)
        x, v = x - step[:program.n], v - step[program.n:]
    else:
        raise AssertionError(f"Newton polish stopped at residual {np.abs(residual).max():.3g}")
    y = project(program.cones, v)
    return dataclasses.replace(solution, x=x, y=y, s=y - v)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("socp", [False, True], ids=["qp", "socp"])
def test_conic_jvp_vjp_match_central_differences(socp: bool) -> None:
    rng = np.random.default_rng(26 + socp)
    program = _random_program(rng, socp)
    derivative = program_derivative(program, _solve_conic(program))
    assert isinstance(derivative, ConicDerivative) and derivative.degenerate == ()
    d = _direction(rng, program)
    tangent = derivative.jvp(d["P"], d["c"], d["A"], d["b"])

    def stacked(h: float) -> np.ndarray:
        solution = _solve_conic(_perturbed(program, h, d))
        return np.concatenate([solution.x, solution.y, solution.s])

    assert _relative(np.concatenate([tangent.x, tangent.y, tangent.s]), _central(stacked)) <= FD_TOL
    # VJP: the gradient of a random linear function of (x, y, s), paired with two directions
    g = {"x": rng.standard_normal(program.n), "y": rng.standard_normal(program.m), "s": rng.standard_normal(program.m)}
    gradient = derivative.vjp(g["x"], g["y"], g["s"])
    for _ in range(2):
        e = _direction(rng, program)
        predicted = (np.sum(e["P"] * gradient.P) + e["c"] @ gradient.c + np.sum(e["A"] * gradient.A)
                     + e["b"] @ gradient.b)

        def loss(h: float, e: dict[str, np.ndarray] = e) -> np.ndarray:
            solution = _solve_conic(_perturbed(program, h, e))
            return np.array([g["x"] @ solution.x + g["y"] @ solution.y + g["s"] @ solution.s])

        assert abs(predicted - _central(loss)[0]) <= FD_TOL * abs(predicted)
    # adjoint identity <J d, g> = <d, J' g> (exact up to rounding)
    pairing = tangent.x @ g["x"] + tangent.y @ g["y"] + tangent.s @ g["s"]
    data_pairing = (np.sum(d["P"] * gradient.P) + d["c"] @ gradient.c + np.sum(d["A"] * gradient.A)
                    + d["b"] @ gradient.b)
    assert abs(pairing - data_pairing) <= ADJOINT_TOL * abs(pairing)
    # the sparse form holds the dense gradient's entries on the data's pattern
    sparse_form = derivative.vjp(g["x"], g["y"], g["s"], dense=False)
    assert np.array_equal(sparse_form.A.indptr, program.A.indptr)
    np.testing.assert_allclose(sparse_form.A.toarray(), gradient.A * (program.A.toarray() != 0), rtol=1e-14)
    np.testing.assert_allclose(sparse_form.P.toarray(), gradient.P * (program.P.toarray() != 0), rtol=1e-14)


def _one_dimensional(p: float, c: float, lower: float) -> co.ConicProgram:
    """``min 1/2 p x^2 + c x  s.t.  x >= lower``, i.e. ``-x + s = -lower, s >= 0``."""
    return co.ConicProgram(sp.csc_matrix([[p]]), np.array([c]), sp.csc_matrix([[-1.0]]), np.array([-lower]),
                            (co.Nonneg(1),))


@pytest.mark.parametrize(("c", "expected_dc", "expected_dlower"), [(-3.0, -0.5, 0.0), (3.0, 0.0, 1.0)],
                         ids=["inactive", "active"])
def test_one_dimensional_qp_closed_form(c: float, expected_dc: float, expected_dlower: float) -> None:
    """``x* = max(-c/p, lower)``: ``dx/dc = -1/p`` inactive, 0 active; ``dx/dlower = 1`` active."""
    program = _one_dimensional(2.0, c, 0.0)
    derivative = program_derivative(program, _solve_conic(program))
    assert derivative.jvp(dc=[1.0]).x[0] == pytest.approx(expected_dc, abs=1e-12)
    assert derivative.jvp(db=[-1.0]).x[0] == pytest.approx(expected_dlower, abs=1e-12)  # b = -lower
    gradient = derivative.vjp(gx=[1.0])
    assert (gradient.c[0], -gradient.b[0]) == pytest.approx((expected_dc, expected_dlower), abs=1e-12)


@pytest.mark.parametrize(("branch", "expected_dc"), [("active", 0.0), ("inactive", -0.5)])
def test_degenerate_point_reported_with_its_one_sided_derivative(branch: str, expected_dc: float) -> None:
    """At ``-c/p = lower`` (``s = y = 0``) the right derivative in ``c`` (the bound becomes
    active) is 0 and the left one (it leaves) is ``-1/p``: each branch gives its side's."""
    program = _one_dimensional(2.0, 0.0, 0.0)
    solution = _solve_conic(program)
    with pytest.warns(NondifferentiableWarning, match="strict complementarity"):
        derivative = program_derivative(program, solution, branch=branch)
    assert isinstance(derivative, ConicDerivative)
    assert [(point.cone, point.kind, point.branch) for point in derivative.degenerate] == [(0, "nonneg", branch)]
    side = 1.0 if branch == "active" else -1.0
    one_sided = (_solve_conic(_one_dimensional(2.0, side * STEP, 0.0)).x[0] - solution.x[0]) / (side * STEP)
    assert derivative.jvp(dc=[1.0]).x[0] == pytest.approx(expected_dc, abs=1e-12)
    assert one_sided == pytest.approx(expected_dc, abs=1e-9)


def test_soc_tip_reported() -> None:
    """``min 1/2 ||x||^2 s.t. x in SOC`` (``-x + s = 0``): the solution is the tip, ``s = y = 0``."""
    program = co.ConicProgram(sp.identity(3, format="csc"), np.zeros(3), -sp.identity(3, format="csc"),
                              np.zeros(3), (co.SOC(3),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        derivative = program_derivative(program, _solve_conic(program))
    assert any(issubclass(w.category, NondifferentiableWarning) for w in caught)
    assert isinstance(derivative, ConicDerivative) and derivative.degenerate[0].kind == "soc_tip"


def _random_lcp(rng: np.random.Generator, n: int = 10) -> co.LCP:
    G = rng.standard_normal((n, n))
    return co.LCP(G @ G.T + 0.5 * np.eye(n), rng.standard_normal(n))


def test_lcp_jvp_vjp_match_central_differences() -> None:
    rng = np.random.default_rng(2026)
    lcp = _random_lcp(rng)
    solution = co.solve(lcp, solver="lemke")
    derivative = program_derivative(lcp, solution)
    assert isinstance(derivative, LCPDerivative) and derivative.degenerate == ()
    assert 0 < derivative.basic.size < lcp.n  # both sides of the pattern are exercised
    dM, dq = rng.standard_normal((lcp.n, lcp.n)), rng.standard_normal(lcp.n)
    tangent = derivative.jvp(dM, dq)

    def stacked(h: float) -> np.ndarray:
        solution = co.solve(co.LCP(lcp.M + h * dM, lcp.q + h * dq), solver="lemke")
        return np.concatenate([solution.x, solution.s])

    assert _relative(np.concatenate([tangent.z, tangent.w]), _central(stacked)) <= FD_TOL
    gz, gw = rng.standard_normal(lcp.n), rng.standard_normal(lcp.n)
    gradient = derivative.vjp(gz, gw)
    eM, eq = rng.standard_normal((lcp.n, lcp.n)), rng.standard_normal(lcp.n)

    def loss(h: float) -> np.ndarray:
        solution = co.solve(co.LCP(lcp.M + h * eM, lcp.q + h * eq), solver="lemke")
        return np.array([gz @ solution.x + gw @ solution.s])

    predicted = np.sum(eM * gradient.M) + eq @ gradient.q
    assert abs(predicted - _central(loss)[0]) <= FD_TOL * abs(predicted)
    pairing = tangent.z @ gz + tangent.w @ gw
    assert abs(pairing - (np.sum(dM * gradient.M) + dq @ gradient.q)) <= ADJOINT_TOL * abs(pairing)


def test_lcp_degenerate_index_reported() -> None:
    """``M = I``, ``q = (-1, 0, 1)``: ``z = (1, 0, 0)``, ``w = (0, 0, 1)``; index 1 has ``z = w = 0``.
    Active branch: ``dz_1/dq_1 = -1`` (the side ``q_1 < 0``); inactive: ``dw_1/dq_1 = 1``."""
    lcp = co.LCP(np.eye(3), np.array([-1.0, 0.0, 1.0]))
    solution = co.solve(lcp, solver="lemke")
    for branch, expected_z, expected_w in (("active", -1.0, 0.0), ("inactive", 0.0, 1.0)):
        with pytest.warns(NondifferentiableWarning):
            derivative = program_derivative(lcp, solution, branch=branch)
        assert isinstance(derivative, LCPDerivative) and derivative.degenerate == (1,)
        tangent = derivative.jvp(dq=[0.0, 1.0, 0.0])
        assert (tangent.z[1], tangent.w[1]) == (expected_z, expected_w)


def test_diffcp_agrees_on_a_small_socp(monkeypatch: pytest.MonkeyPatch) -> None:
    """diffcp (Agrawal et al.'s implementation: the homogeneous embedding, dense mode, which
    takes a linear cost only) at the same point: its solver call is replaced by our polished
    solution, because its own interior-point answer is off by ~1e-3 relative on this program
    (the sliding blocks make the linear program sensitive), which would swamp the comparison."""
    cone_program = pytest.importorskip("diffcp.cone_program")

    rng = np.random.default_rng(7)
    program = _random_program(rng, socp=True, linear=True)
    solution = _solve_conic(program)
    derivative = program_derivative(program, solution)
    monkeypatch.setattr(cone_program, "solve_internal",
                        lambda *args, **kwargs: {"x": solution.x, "y": solution.y, "s": solution.s})
    cone_dict = {"z": 2, "l": 6, "q": [3, 4, 3, 3]}
    _, _, _, forward, adjoint = cone_program.solve_and_derivative(program.A, program.b, program.c, cone_dict,
                                                                  mode="dense")
    d = _direction(rng, program)
    on_pattern = d["A"] * (program.A.toarray() != 0)  # diffcp perturbs A's stored entries
    dx, dy, ds = forward(sp.csc_matrix(on_pattern), d["b"], d["c"])
    tangent = derivative.jvp(dA=on_pattern, db=d["b"], dc=d["c"])
    # the 1e-6 (measured: 1e-9 forward, 1.3e-8 reverse, whose gradients reach 4e3)
    assert _relative(np.concatenate([tangent.x, tangent.y, tangent.s]), np.concatenate([dx, dy, ds])) <= 1e-6
    gx, gy, gs = rng.standard_normal(program.n), rng.standard_normal(program.m), rng.standard_normal(program.m)
    gA, gb, gc = adjoint(gx, gy, gs)
    gradient = derivative.vjp(gx, gy, gs, dense=True)
    ours = np.concatenate([(gradient.A * (program.A.toarray() != 0)).ravel(), gradient.b, gradient.c])
    theirs = np.concatenate([np.asarray(sp.csc_matrix(gA).toarray()).ravel(), gb, gc])
    assert _relative(ours, theirs) <= 1e-6


def test_diffcp_agrees_on_a_random_qp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A QP against diffcp, which takes a linear cost only: ``min 1/2 x'Px + c'x`` is the SOCP
    ``min c'x + t`` with ``||(L'x, t - 1/2)|| <= t + 1/2`` (``P = L L'``, so ``t = 1/2 x'Px`` at the
    optimum: a rotated cone). Its ``x`` is the QP's, so ``dx`` agrees for every change of
    ``c``, ``b``, ``A`` and of ``P = L L'`` through ``L`` (``dP = dL L' + L dL'``, the cone rows
    ``-L'`` moving by ``-dL'``)."""
    cone_program = pytest.importorskip("diffcp.cone_program")

    rng = np.random.default_rng(11)
    qp = _random_program(rng, socp=False)
    n, m = qp.n, qp.m
    L = np.linalg.cholesky(qp.P.toarray())
    A_socp = np.block([[qp.A.toarray(), np.zeros((m, 1))],
                       [np.zeros((1, n)), -np.ones((1, 1))],
                       [-L.T, np.zeros((n, 1))],
                       [np.zeros((1, n)), -np.ones((1, 1))]])
    b_socp = np.r_[qp.b, 0.5, np.zeros(n), -0.5]
    socp = co.ConicProgram(sp.csc_matrix((n + 1, n + 1)), np.r_[qp.c, 1.0], sp.csc_matrix(A_socp), b_socp,
                           (co.Zero(2), co.Nonneg(6), co.SOC(n + 2)))
    qp_solution, socp_solution = _solve_conic(qp), _solve_conic(socp)
    np.testing.assert_allclose(socp_solution.x[:n], qp_solution.x, atol=1e-10)  # the same x
    derivative = program_derivative(qp, qp_solution)
    assert isinstance(derivative, ConicDerivative) and derivative.degenerate == ()
    monkeypatch.setattr(cone_program, "solve_internal", lambda *args, **kwargs: {
        "x": socp_solution.x, "y": socp_solution.y, "s": socp_solution.s})
    _, _, _, forward, _ = cone_program.solve_and_derivative(sp.csc_matrix(A_socp), b_socp, np.r_[qp.c, 1.0],
                                                            {"z": 2, "l": 6, "q": [n + 2]}, mode="dense")
    dA, db, dc = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(n)
    dL = np.tril(rng.standard_normal((n, n)))
    dA_socp = np.zeros_like(A_socp)
    dA_socp[:m, :n] = dA
    dA_socp[m + 1:m + 1 + n, :n] = -dL.T
    dx, _, _ = forward(sp.csc_matrix(dA_socp * (A_socp != 0)), np.r_[db, 0.0, np.zeros(n), 0.0], np.r_[dc, 0.0])
    ours = derivative.jvp(dP=dL @ L.T + L @ dL.T, dc=dc, dA=dA, db=db).x
    assert _relative(ours, dx[:n]) <= 1e-6  # the program-level 1e-6 (measured 3e-14)
