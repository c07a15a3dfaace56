"""FCLIB's own answer to a problem: its error measure, and Coulomb's law solved exactly as a
sequence of the convex programs of :mod:`contactopt.programs.fclib`.

**Error** (FCLIB's ``fclib_merit_local``, MERIT_1, ``src/fcmer.c``; computed here, not read from
any solver): with ``u`` the local velocity of the answer and De Saxcé's modified velocity
``û_c = u_c + [mu_c ||u_cT||, 0(, 0)]`` (De Saxcé & Feng 1991), the natural map of the cone
complementarity ``C*_mu ∋ û ⟂ r ∈ C_mu`` is ``e_c = r_c - P_{C_mu_c}(r_c - û_c)`` (zero exactly
at a solution; Acary, Brémond & Huber 2018) and ::

    error = sqrt(sum_c ||e_c||^2) / (1 + sqrt(||q||_2))  [+ ||V'r + R lambda + s|| / (1 + ||s||)]

(FCLIB's normalisation, ``sqrt`` of the norm of ``q`` included). For a global problem (FCLIB
leaves ``fclib_merit_global`` unimplemented) the same natural map with ``w`` in place of ``q``,
plus ``||M v - H r - G lambda - f|| / (1 + ||f||)`` and ``||G'v + b|| / (1 + ||b||)``.

**Coulomb's law** (:func:`solve_coulomb`): the fixed point on De Saxcé's term of Acary, Cadoux,
Lemaréchal & Malick, "A formulation of the linear discrete Coulomb friction problem via convex
optimization", ZAMM 91 (2011). With ``s_c`` fixed, the CCP of the problem with ``q_cN`` (local)
or ``w_cN`` (global) raised by ``s_c`` is convex; its solution solves FCLIB's problem when
``s_c = mu_c ||u_cT||`` for the ``u`` it produces. Iterate ``s <- mu ||u_T||`` from ``s = 0`` (the
plain CCP) until FCLIB's error is below ``tol``; each iteration is one solve by any cone solver.
The iteration converges linearly for small ``mu`` (a contraction; for one contact with
``W = I/m`` the factor is ``mu^2 / (1 + mu^2)``), not in general.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs.conic import ConicProgram
from contactopt.programs.fclib import FclibGlobal, FclibLocal, FclibProblem, fclib_program
from contactopt.programs.solution import Solution, Status

__all__ = ["CoulombResult", "FclibAnswer", "FixedPointRun", "answer_of", "de_saxce_fixed_point", "de_saxce_shift",
           "fclib_merit", "load_normalization", "natural_map", "project_cones", "scaled_problem", "shifted_problem",
           "solve_coulomb"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FclibAnswer:
    """An answer in FCLIB's variables: impulses ``r``, local velocity ``u`` (both ``m``),
    multipliers ``lam`` (``p``) and, for a global problem, velocities ``v`` (``n``)."""

    r: FloatArray
    u: FloatArray
    lam: FloatArray
    v: FloatArray | None = None


def project_cones(X: FloatArray, mu: FloatArray) -> FloatArray:
    """Row-wise Euclidean projection of ``X = [x_N, x_T]`` (nc, dim) onto ``{||x_T|| <= mu x_N}``:
    unchanged inside, 0 in the polar cone, else ``(x_N + mu ||x_T||) / (1 + mu^2) (1, mu x_T / ||x_T||)``."""
    normal, tangent = X[:, 0], X[:, 1:]
    norm = np.linalg.norm(tangent, axis=1)
    inside = (norm <= mu * normal) & (normal >= 0)  # mu = 0: the ray, which no negative normal is on
    polar = ~inside & (mu * norm <= -normal)
    edge = ~inside & ~polar  # here norm > 0
    out = np.where(inside[:, None], X, 0.0)
    scale = (normal[edge] + mu[edge] * norm[edge]) / (1.0 + mu[edge] ** 2)
    out[edge, 0] = scale
    out[edge, 1:] = (mu[edge] * scale / norm[edge])[:, None] * tangent[edge]
    return out


def natural_map(r: ArrayLike, u: ArrayLike, mu: ArrayLike, dim: int) -> FloatArray:
    """(nc, dim) ``e_c = r_c - P_C(r_c - û_c)`` with De Saxcé's ``û`` (module docstring)."""
    R = np.asarray(r, dtype=np.float64).reshape(-1, dim)
    hat = np.array(u, dtype=np.float64).reshape(-1, dim)
    mus = np.asarray(mu, dtype=np.float64).reshape(-1)
    hat[:, 0] += mus * np.linalg.norm(hat[:, 1:], axis=1)
    return R - project_cones(R - hat, mus)


def _norm(x: ArrayLike) -> float:
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64)))


def fclib_merit(problem: FclibProblem, answer: FclibAnswer) -> float:
    """FCLIB's error of ``answer`` (module docstring): 0 exactly at a solution of the problem."""
    e = natural_map(answer.r, answer.u, problem.mu, problem.spacedim)
    if isinstance(problem, FclibLocal):
        error = _norm(e) / (1.0 + np.sqrt(_norm(problem.q)))
        if problem.equalities:
            assert problem.V is not None and problem.R is not None and problem.s is not None
            residual = problem.V.T @ answer.r + problem.R @ answer.lam + problem.s
            error += _norm(residual) / (1.0 + _norm(problem.s))
        return float(error)
    error = _norm(e) / (1.0 + np.sqrt(_norm(problem.w)))
    if answer.v is not None:
        force = problem.H @ answer.r + problem.f
        if problem.G is not None:
            force = force + problem.G @ answer.lam
        error += _norm(problem.M @ answer.v - force) / (1.0 + _norm(problem.f))
        if problem.G is not None and problem.b is not None:
            error += _norm(problem.G.T @ answer.v + problem.b) / (1.0 + _norm(problem.b))
    return float(error)


def answer_of(problem: FclibProblem, program: ConicProgram, solution: Solution) -> FclibAnswer:
    """FCLIB's ``r, u, lambda (, v)`` from a solution of ``fclib_program(problem, ...)``."""
    if solution.x is None or not np.all(np.isfinite(solution.x)):
        raise ContactoptError("the solution has no finite iterate")
    x = np.asarray(solution.x, dtype=np.float64)
    dim = problem.spacedim
    if program.metadata.get("form") == "dual":
        r = program.variable(x, "impulse")
        lam = program.variable(x, "bilateral") if program.metadata.get("bilateral") else np.zeros(0)
        if isinstance(problem, FclibGlobal):
            from scipy.sparse.linalg import spsolve

            force = problem.H @ r + problem.f + (problem.G @ lam if problem.G is not None else 0.0)
            v = np.atleast_1d(spsolve(problem.M.tocsc(), force))
            return FclibAnswer(r=r, u=problem.H.T @ v + problem.w, lam=lam, v=v)
        u = problem.W @ r + problem.q  # as stored: P may hold the symmetric part of W only
        if problem.V is not None:
            u = u + problem.V @ lam
        return FclibAnswer(r=r, u=u, lam=lam)
    assert isinstance(problem, FclibGlobal)
    if solution.y is None:
        raise ContactoptError("the solution has no duals (the impulses of the primal form)")
    y = np.asarray(solution.y, dtype=np.float64)
    scale = np.ones((problem.contacts, dim))
    scale[:, 1:] = problem.mu[:, None]
    r = program.row_block(y, "friction_cones") * scale.reshape(-1)
    lam = -program.row_block(y, "bilateral") if problem.equalities else np.zeros(0)
    return FclibAnswer(r=r, u=problem.H.T @ x + problem.w, lam=lam, v=x)


def scaled_problem(problem: FclibProblem, k: float) -> FclibProblem:
    """The problem with its right-hand sides (q, s / f, w, b) times ``k``: its CCP answer is
    ``k`` times the original's (the program is positively homogeneous in them)."""
    if isinstance(problem, FclibLocal):
        return dataclasses.replace(problem, q=k * problem.q, s=None if problem.s is None else k * problem.s)
    return dataclasses.replace(problem, f=k * problem.f, w=k * problem.w,
                               b=None if problem.b is None else k * problem.b)


def load_normalization(problem: FclibProblem) -> float:
    """``1 / (the largest entry that drives the impulses)``: tangential entries of ``q``
    (``w``) and the negative (closing) normal ones, and ``f`` of a global problem; a positive
    normal entry (an open gap) drives nothing and would hide the others. 1 when nothing drives."""
    data = problem.q if isinstance(problem, FclibLocal) else problem.w
    rows = data.reshape(-1, problem.spacedim)
    drivers = [np.abs(rows[:, 1:]).reshape(-1), np.maximum(-rows[:, 0], 0.0)]
    if isinstance(problem, FclibGlobal):
        drivers.append(np.abs(problem.f))
    peak = float(max(np.max(d, initial=0.0) for d in drivers))
    return 1.0 / peak if peak > 0 else 1.0


def shifted_problem(problem: FclibProblem, shift: FloatArray) -> FclibProblem:
    """The problem with its normal entries of ``q`` (``w``) raised by ``shift`` (contacts,)."""
    offset = np.zeros(problem.contacts * problem.spacedim)
    offset[:: problem.spacedim] = shift
    if isinstance(problem, FclibLocal):
        return dataclasses.replace(problem, q=problem.q + offset)
    return dataclasses.replace(problem, w=problem.w + offset)


@dataclass(frozen=True)
class CoulombResult:
    """The answer of :func:`solve_coulomb`, FCLIB's error of it, the fixed-point iterations
    taken (convex solves) and the status of the last solve."""

    answer: FclibAnswer
    error: float
    iterations: int
    status: Status
    converged: bool


Answer = TypeVar("Answer")


@dataclass(frozen=True)
class FixedPointRun(Generic[Answer]):
    """What :func:`de_saxce_fixed_point` ends with: the answer that stopped it (or the one of
    smallest error when none did), its error, the iterations taken, the status of that
    answer's convex solve, and whether the stopping test passed."""

    answer: Answer
    error: float
    iterations: int
    status: Status
    converged: bool


def de_saxce_shift(u: FloatArray, mu: FloatArray, dim: int) -> FloatArray:
    """(contacts,) De Saxcé's term ``s_c = mu_c ||u_cT||`` of the local velocities ``u``."""
    return np.asarray(mu * np.linalg.norm(np.asarray(u).reshape(-1, dim)[:, 1:], axis=1), dtype=np.float64)


def de_saxce_fixed_point(convex_solve: Callable[[FloatArray], tuple[Answer, FloatArray, Status]],
                         judge: Callable[[Answer, int], tuple[float, bool]], mu: FloatArray, dim: int,
                         max_iterations: int, shift: FloatArray | None = None) -> FixedPointRun[Answer]:
    """The fixed point of the module docstring, shared by :func:`solve_coulomb` (FCLIB files)
    and the ``fixed_point`` solver (:mod:`contactopt.solvers.coulomb.fixed_point`).

    ``convex_solve(s)`` solves the CCP whose normal velocities are raised by ``s`` and returns
    ``(answer, u, status)`` with ``u`` the local velocity of the problem *without* ``s``;
    ``judge(answer, iteration)`` returns ``(error, stop)``. Starting from ``shift`` (default 0:
    the plain CCP), ``s <- mu ||u_T||`` until ``stop`` or ``max_iterations`` solves."""
    s = np.zeros(mu.shape[0]) if shift is None else np.asarray(shift, dtype=np.float64)
    best: FixedPointRun[Answer] | None = None
    for iteration in range(1, max_iterations + 1):
        answer, u, status = convex_solve(s)
        error, stop = judge(answer, iteration)
        if stop:
            return FixedPointRun(answer, error, iteration, status, True)
        if best is None or error < best.error:
            best = FixedPointRun(answer, error, iteration, status, False)
        s = de_saxce_shift(u, mu, dim)
    assert best is not None
    return dataclasses.replace(best, iterations=max_iterations)


def solve_coulomb(problem: FclibProblem, solver: str = "clarabel", options: Mapping[str, Any] | None = None,
                  *, form: str | None = None, tol: float = 1e-9, max_iter: int = 200,
                  normalize: bool = True) -> CoulombResult:
    """FCLIB's problem with Coulomb's law (De Saxcé's term) by the fixed point of the module
    docstring (:func:`de_saxce_fixed_point`); ``solver`` and ``options`` solve each convex
    program, ``form`` as in :func:`~contactopt.programs.fclib.fclib_program`. ``converged`` is
    False (with the answer of smallest error) if ``max_iter`` iterations do not bring FCLIB's
    error below ``tol``; a convex solve without a usable answer is an error.

    ``normalize`` solves the problem with its right-hand sides divided by the largest entry that
    drives the impulses (tangential and closing normal entries of ``q`` / ``w``, and ``f``) and
    scales the answer back (exact: every program of the iteration is positively homogeneous
    in them). Interior-point solvers stop on absolute tolerance floors, so on problems with
    small data (impulses of 1e-5 N·s) the unnormalized answer can be limited to an FCLIB error
    of about 1e-6 (FCLIB's BoxesStack test problem: 1.2e-6 unnormalized, 5e-17 normalized).
    """
    from contactopt.solvers import solve

    if max_iter < 1:
        raise ContactoptError(f"max_iter must be at least 1, got {max_iter}")
    k = load_normalization(problem) if normalize else 1.0
    scaled = scaled_problem(problem, k)
    count = [0]

    def convex_solve(shift: FloatArray) -> tuple[FclibAnswer, FloatArray, Status]:
        count[0] += 1
        shifted = shifted_problem(scaled, shift)
        program = fclib_program(shifted, form)  # type: ignore[arg-type]
        solution = solve(program, solver, options)
        if not solution.status.usable:
            raise ContactoptError(f"solve_coulomb: {solver} returned {solution.status} at fixed-point iteration "
                                  f"{count[0]}: {solution.message}")
        shifted_answer = answer_of(shifted, program, solution)
        offset = np.zeros_like(shifted_answer.u)
        offset[:: problem.spacedim] = shift
        u = shifted_answer.u - offset  # u of the unshifted q / w
        answer = FclibAnswer(r=shifted_answer.r / k, u=u / k, lam=shifted_answer.lam / k,
                             v=None if shifted_answer.v is None else shifted_answer.v / k)
        return answer, u, solution.status

    def judge(answer: FclibAnswer, iteration: int) -> tuple[float, bool]:
        error = fclib_merit(problem, answer)
        return error, error <= tol

    run = de_saxce_fixed_point(convex_solve, judge, problem.mu, problem.spacedim, max_iter)
    return CoulombResult(run.answer, float(run.error), run.iterations, run.status, run.converged)
