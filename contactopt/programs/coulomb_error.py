"""FCLIB's error measure of an answer to a Coulomb problem, and the transforms of a problem
that the De Saxcé fixed point (:mod:`contactopt.solvers.coulomb.de_saxce`) iterates on.

**Error** (FCLIB's ``fclib_merit_local``, MERIT_1, ``src/fcmer.c``; computed here, not read from
any solver): with ``u`` the local velocity of the answer and De Saxcé's modified velocity
``û_c = u_c + [mu_c ||u_cT||, 0(, 0)]`` (De Saxcé & Feng 1991), the natural map of the cone
complementarity ``C*_mu ∋ û ⟂ r ∈ C_mu`` is ``e_c = r_c - P_{C_mu_c}(r_c - û_c)`` (zero exactly
at a solution; Acary, Brémond & Huber 2018) and ::

    error = sqrt(sum_c ||e_c||^2) / (1 + sqrt(||q||_2))  [+ ||V'r + R lambda + s|| / (1 + ||s||)]

(FCLIB's normalisation, ``sqrt`` of the norm of ``q`` included). For a global problem (FCLIB
leaves ``fclib_merit_global`` unimplemented) the same natural map with ``w`` in place of ``q``,
plus ``||M v - H r - G lambda - f|| / (1 + ||f||)`` and ``||G'v + b|| / (1 + ||b||)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs.conic import ConicProgram
from contactopt.programs.coulomb_cone import natural_map, project_cones
from contactopt.programs.fclib import FclibGlobal, FclibLocal, FclibProblem
from contactopt.programs.solution import Solution

__all__ = ["FclibAnswer", "answer_of", "fclib_merit", "load_normalization", "natural_map", "project_cones",
           "scaled_problem", "shifted_problem"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FclibAnswer:
    """An answer in FCLIB's variables: impulses ``r``, local velocity ``u`` (both ``m``),
    multipliers ``lam`` (``p``) and, for a global problem, velocities ``v`` (``n``)."""

    r: FloatArray
    u: FloatArray
    lam: FloatArray
    v: FloatArray | None = None


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
