"""Derivatives of a program's solution with respect to its data (issue 26, item 1).

``co.derivatives.program_derivative(program, solution)`` is built once from a program and a
solution contactopt judged optimal, and gives forward (``jvp``) and reverse (``vjp``) products
that share one factorization:

* :class:`~contactopt.programs.ConicProgram` (QP, SOCP): :mod:`.conic` (the implicit function
  theorem on the optimality conditions written with the cone projection, Agrawal et al. 2019);
* :class:`~contactopt.programs.LCP`: :mod:`.lcp` (through the complementarity pattern).

Points where strict complementarity is lost are listed in ``degenerate`` (and warned of with
:class:`NondifferentiableWarning`), with the one-sided derivative chosen by ``branch``
(:mod:`.projection`). Arrays in and out are plain NumPy; the conic matrix gradients are dense
for small matrices, else on the data's sparsity pattern (:meth:`ConicDerivative.vjp`).
Redundant active rows (multipliers not unique) give the minimum-norm derivative (:mod:`.linear`).

Steps and trajectories (issue 26, items 2 and 3):

* :class:`StepDerivative` (:mod:`.step`): ``d(q', v') / d(q, v, u, theta)`` of one time step,
  forward (``jvp``) and reverse (``vjp``), for every formulation that builds a ConicProgram or
  an LCP, on every system;
* ``co.simulate(scene, ..., sensitivities=["mu", "v0"])`` records forward sensitivities in
  ``traj.sensitivities`` (:mod:`.trajectory`);
* :func:`gradient` (``co.gradient``): the reverse-mode gradient of a scalar loss of the
  trajectory (:mod:`.gradient`), with the losses :func:`final_state_loss` and :func:`tracking_loss`.
"""

from __future__ import annotations

from typing import overload

from contactopt.derivatives.conic import (
    ConicDerivative,
    ConicGradient,
    ConicTangent,
    NondifferentiableWarning,
    residual_map,
)
from contactopt.derivatives.gradient import Gradient, final_state_loss, gradient, tracking_loss
from contactopt.derivatives.lcp import LCPDerivative, LCPGradient, LCPTangent
from contactopt.derivatives.linear import NotDifferentiableError, RankDeficientWarning
from contactopt.derivatives.projection import BRANCHES, DegeneratePoint
from contactopt.derivatives.step import StepCotangent, StepDerivative, StepTangent
from contactopt.errors import UnsupportedProgramError
from contactopt.programs.conic import ConicProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Solution

__all__ = ["BRANCHES", "ConicDerivative", "ConicGradient", "ConicTangent", "DegeneratePoint", "Gradient",
           "LCPDerivative", "LCPGradient", "LCPTangent", "NondifferentiableWarning", "NotDifferentiableError",
           "RankDeficientWarning", "StepCotangent", "StepDerivative", "StepTangent", "final_state_loss", "gradient",
           "program_derivative", "residual_map", "tracking_loss"]


@overload
def program_derivative(program: ConicProgram, solution: Solution, branch: str = ...,
                       tol: float = ...) -> ConicDerivative: ...
@overload
def program_derivative(program: LCP, solution: Solution, branch: str = ..., tol: float = ...) -> LCPDerivative: ...
def program_derivative(program: ConicProgram | LCP, solution: Solution, branch: str = "active",
                       tol: float = 1e-8) -> ConicDerivative | LCPDerivative:
    """The derivative of ``solution`` with respect to ``program``'s data.

    Args:
        program: a ConicProgram (data ``P, c, A, b``) or an LCP (data ``M, q``).
        solution: its solution, of status ``optimal``.
        branch: the one-sided derivative at points where strict complementarity is lost,
            ``"active"`` (constraint kept tight) or ``"inactive"`` (:mod:`.projection`).
        tol: relative size below which both sides of a complementary pair count as zero.
    """
    if isinstance(program, ConicProgram):
        return ConicDerivative(program, solution, branch, tol)
    if isinstance(program, LCP):
        return LCPDerivative(program, solution, branch, tol)
    raise UnsupportedProgramError(f"derivatives: no derivative for a {type(program).__name__} "
                                  "(a ConicProgram or an LCP is differentiated)")
