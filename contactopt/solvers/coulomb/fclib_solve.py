"""FCLIB's problems solved with Coulomb's law by the De Saxcé fixed point over convex programs
(:mod:`contactopt.solvers.coulomb.de_saxce`), each one solved by any cone solver of the registry.
The registry does not import this module, so it may call the registry's ``solve``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs.coulomb_error import (
    FclibAnswer,
    answer_of,
    fclib_merit,
    load_normalization,
    scaled_problem,
    shifted_problem,
)
from contactopt.programs.fclib import FclibProblem, fclib_program
from contactopt.programs.solution import Status
from contactopt.solvers import solve
from contactopt.solvers.coulomb.de_saxce import de_saxce_fixed_point

__all__ = ["CoulombResult", "solve_coulomb"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CoulombResult:
    """The answer of :func:`solve_coulomb`, FCLIB's error of it, the fixed-point iterations
    taken (convex solves) and the status of the last solve."""

    answer: FclibAnswer
    error: float
    iterations: int
    status: Status
    converged: bool



def solve_coulomb(problem: FclibProblem, solver: str = "clarabel", options: Mapping[str, Any] | None = None,
                  *, form: str | None = None, tol: float = 1e-9, max_iter: int = 200,
                  normalize: bool = True) -> CoulombResult:
    """FCLIB's problem with Coulomb's law (De Saxcé's term) by the fixed point of
    :func:`~contactopt.solvers.coulomb.de_saxce.de_saxce_fixed_point`; ``solver`` and ``options`` solve each convex
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
