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
* ``co.gradient`` (:func:`contactopt.gradients.gradient`, the layer above, since it runs
  simulations): the reverse-mode gradient of a scalar loss of the trajectory, with the losses
  :func:`final_state_loss` and :func:`tracking_loss` (:mod:`.losses`).
"""

from __future__ import annotations

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
from contactopt.derivatives.losses import final_state_loss, tracking_loss
from contactopt.derivatives.primal import PrimalDerivative
from contactopt.derivatives.program import program_derivative
from contactopt.derivatives.projection import BRANCHES, DegeneratePoint
from contactopt.derivatives.step import StepCotangent, StepDerivative, StepTangent

__all__ = ["BRANCHES", "ConicDerivative", "ConicGradient", "ConicTangent", "CoulombDerivative", "CoulombGradient",
           "CoulombTangent", "DegeneratePoint",
           "LCPDerivative", "LCPGradient", "LCPTangent", "NondifferentiableWarning", "NotDifferentiableError",
           "PrimalDerivative", "RankDeficientWarning", "StepCotangent", "StepDerivative", "StepTangent",
           "final_state_loss", "program_derivative", "residual_map", "tracking_loss"]
