"""Derivatives of a program's solution with respect to its data (issue 26, item 1).

``co.derivatives.program_derivative(program, solution)`` is built once from a program and a
solution contactopt judged optimal, and gives forward (``jvp``) and reverse (``vjp``) products
that share one factorization:

* :class:`~contactopt.programs.ConicProgram` (QP, SOCP): :mod:`.conic` (the implicit function
  theorem on the optimality conditions written with the cone projection, Agrawal et al. 2019);
* :class:`~contactopt.programs.primal.PrimalConicProgram` (``sap``, ``regularized`` with
  ``form = "primal"``): :mod:`.primal` (through SAP's Newton Hessian ``A + J^T G J``, the same
  derivative from an ``nv``-sized factorization; programs with box rows go to :mod:`.conic`);
* :class:`~contactopt.programs.LCP`: :mod:`.lcp` (through the complementarity pattern);
* :class:`~contactopt.programs.coulomb.CoulombProgram` (the ``coulomb`` formulation, FCLIB's
  problems): :mod:`.coulomb` (the implicit function theorem on the Alart-Curnier function).

Points where strict complementarity is lost are listed in ``degenerate`` (and warned of with
:class:`NondifferentiableWarning`), with the one-sided derivative chosen by ``branch``
(:mod:`.projection`). Arrays in and out are plain NumPy; the conic matrix gradients are dense
for small matrices, else on the data's sparsity pattern (:meth:`ConicDerivative.vjp`).
Redundant active rows (multipliers not unique) give the minimum-norm derivative (:mod:`.linear`).

Steps and trajectories (issue 26, items 2 and 3):

* :class:`StepDerivative` (:mod:`.step`): ``d(q', v') / d(q, v, u, theta)`` of one time step,
  forward (``jvp``) and reverse (``vjp``), for every formulation that builds a ConicProgram, an
  LCP or a Coulomb problem, on every system;
* ``co.simulate(scene, ..., sensitivities=["mu", "v0"])`` records forward sensitivities in
  ``traj.sensitivities`` (:mod:`.trajectory`);
* :func:`gradient` (``co.gradient``): the reverse-mode gradient of a scalar loss of the
  trajectory (:mod:`.gradient`), with the losses :func:`final_state_loss` and :func:`tracking_loss`.
"""

from __future__ import annotations

from typing import overload

from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.derivatives.conic import (
    ConicDerivative,
    ConicGradient,
    ConicTangent,
    NondifferentiableWarning,
    residual_map,
)
from contactopt.derivatives.coulomb import CoulombDerivative, CoulombGradient, CoulombTangent
from contactopt.derivatives.lcp import LCPDerivative, LCPGradient, LCPTangent
from contactopt.derivatives.linear import NotDifferentiableError, RankDeficientWarning
from contactopt.derivatives.primal import PrimalDerivative, why_not_primal_derivative
from contactopt.derivatives.projection import BRANCHES, DegeneratePoint
from contactopt.derivatives.step import StepCotangent, StepDerivative, StepTangent
from contactopt.gradients import Gradient, final_state_loss, gradient, tracking_loss
from contactopt.programs.conic import ConicProgram
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Solution

__all__ = ["BRANCHES", "ConicDerivative", "ConicGradient", "ConicTangent", "CoulombDerivative", "CoulombGradient",
           "CoulombTangent", "DegeneratePoint", "Gradient",
           "LCPDerivative", "LCPGradient", "LCPTangent", "NondifferentiableWarning", "NotDifferentiableError",
           "PrimalDerivative", "RankDeficientWarning", "StepCotangent", "StepDerivative", "StepTangent",
           "final_state_loss", "gradient", "program_derivative", "residual_map", "tracking_loss"]

METHODS = ("auto", "primal", "conic")


@overload
def program_derivative(program: ConicProgram, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> ConicDerivative | PrimalDerivative: ...
@overload
def program_derivative(program: LCP, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> LCPDerivative: ...
@overload
def program_derivative(program: CoulombProgram, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> CoulombDerivative: ...
def program_derivative(program: ConicProgram | LCP | CoulombProgram, solution: Solution, branch: str = "active",
                       tol: float = 1e-8,
                       method: str = "auto") -> ConicDerivative | PrimalDerivative | LCPDerivative | CoulombDerivative:
    """The derivative of ``solution`` with respect to ``program``'s data.

    Args:
        program: a ConicProgram (data ``P, c, A, b``), an LCP (data ``M, q``) or a
            CoulombProgram (data ``W, q, mu``).
        solution: its solution, of status ``optimal``.
        branch: the one-sided derivative at points where strict complementarity is lost,
            ``"active"`` (constraint kept tight) or ``"inactive"`` (:mod:`.projection`).
        tol: relative size below which both sides of a complementary pair count as zero.
        method: for a ConicProgram, ``"auto"`` (:class:`PrimalDerivative` for the programs it
            takes, :func:`why_not_primal_derivative`, else :class:`ConicDerivative`),
            ``"primal"`` (PrimalDerivative or an error saying why not) or ``"conic"``
            (ConicDerivative, the general residual map, for any ConicProgram).
    """
    if method not in METHODS:
        raise OptionError(f"derivatives: method must be one of {METHODS}, got {method!r}")
    if isinstance(program, ConicProgram):
        if method == "primal" or (method == "auto" and why_not_primal_derivative(program) is None):
            return PrimalDerivative(program, solution, branch, tol)
        return ConicDerivative(program, solution, branch, tol)
    if isinstance(program, LCP):
        return LCPDerivative(program, solution, branch, tol)
    if isinstance(program, CoulombProgram):
        return CoulombDerivative(program, solution, branch, tol)
    raise UnsupportedProgramError(f"derivatives: no derivative for a {type(program).__name__} "
                                  "(a ConicProgram, an LCP or a CoulombProgram is differentiated)")
