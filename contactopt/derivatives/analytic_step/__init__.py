"""The ``sap`` and ``ccp`` steps' derivatives without differences, where the system gives the
analytic tangents of its step problem (:meth:`StepLinearization`-like, e.g. the pinocchio URDF backend's
:class:`contactopt.systems.urdf_pinocchio.derivatives.StepLinearization`).

:class:`~contactopt.derivatives.step.StepDerivative` otherwise moves the problem along each
input direction and builds the program again on both sides (two ``build`` calls per column of
the step's Jacobian, the cost that keeps a reverse pass far above 3x the forward run). Here the
map from the problem to the program's optimality conditions is differentiated by hand, for all
input columns at once: the program derivative's right-hand side is
``r = (dP x + dc + dA' y, dA x - db)`` (:func:`~contactopt.derivatives.conic.data_residual`), and
for SAP's conic form (S6) (Castro, Permenter & Han, "An Unconstrained Convex Formulation of
Compliant Contact", IEEE T-RO 2022; :mod:`contactopt.programs.primal`: ``P = diag(A, R)``,
``c = [-A v*, 0]``, ``A_c = -S [J, R]``, ``b = -S v_hat``) with ``x = [v', sigma]``::

    r_v     = dA v' - dA v* - A dv* - J' (dS y) - dJ' (S y)
    r_sigma = dR sigma - R dS y - dR S y
    r_w     = -dS (J v' + R sigma - v_hat) - S (dJ v' + dR sigma - dv_hat)

with the SAP data of :class:`contactopt.formulations.sap.SAP`'s ``build`` (its (S7)-(S9)):
``A = M + h D`` (``dA = dM``), ``v* = v + h A^-1 tau`` (``dv* = dv + A^-1 (h dtau - dA (v* -
v))``), per contact ``w = ||W||_F / dim`` of its Delassus block ``W = J_c A^-1 J_c'``
(``dW = dJ_c A^-1 J_c' + J_c A^-1 dJ_c' - J_c A^-1 dA A^-1 J_c'``), ``R_n = max(beta w,
1 / (h k (h + tau_d)))``, ``R_t = sigma w``, ``v_hat_n = -max(phi / (h + tau_d), -v_max)``,
``S = (1, mu, mu)``; a limit row as a frictionless normal row with ``w = G A^-1 G'``. The
forward product is one :meth:`~contactopt.derivatives.primal.PrimalDerivative.jvp` with
``dc = r_v, r_sigma`` and ``db = -r_w`` (the same right-hand side), the reverse product one
:meth:`~contactopt.derivatives.primal.PrimalDerivative.vjp`, whose data gradient pairs with
``r``: ``<g_c, r_first> - <g_b, r_second>``. ``q' = q + h v'`` (a fixed base's scalar joints); a
floating base's ``q' = integrate(q, v', h)`` moves by the system's ``integration`` maps, and its
public ``dq`` (quaternion coordinates) moves the tangents by ``G dq`` (``coordinates``,
:mod:`contactopt.systems.urdf_pinocchio.free_flyer`).

**ccp** (primal form, :class:`contactopt.formulations.ccp.ConeComplementarity` and
:func:`contactopt.formulations.constraint_rows.primal_program`): ``x = v'``, ``P = A``,
``c = -A v*``, rows ``-S J_c`` in ``SOC(3)`` per contact (``S = (1, mu, mu)``) and ``-G`` in
``Nonneg`` per limit, ``b = max(phi / h, -v_max)`` on the normal and limit rows (0 on the
tangents) (Anitescu, "Optimization-based simulation of nonsmooth rigid multibody dynamics",
Math. Program. 2006)::

    r_v = dA v' - dA v* - A dv* - J_c' (dS y_c) - dJ_c' (S y_c),    r_w = -(dS J_c + S dJ_c) v' - db

through the general :class:`~contactopt.derivatives.conic.ConicDerivative`'s products.

``r`` is built on the rows the program derivative couples to ``v'`` alone (:class:`.tangents.CoupledRows`: a
separated contact's and an unreached limit's ``G`` or ``DPi`` is zero, so their ``r`` moves
nothing and is left zero), and a forward product contracts every tangent with its direction
first (the contact rows' through ``contact_tangents_along``: one Jacobian time variation).
The base program's ``R``, ``v_hat``, ``S`` and those rows are recomputed from the problem and
must equal the built ones (to 1e-12 relative; ``v*`` the problem's ``v_free``; ``A`` is its ``M``
by ``SAP.build``'s construction; for ``ccp``: its rows, ``b`` and ``c``), else None is returned
and the step keeps its differences: a change of ``SAP.build`` cannot go unnoticed here. Covered:
contacts, limit rows; not: bilateral or friction-loss (box) rows, angular friction, ccp's dual
form, drift projection, parameters other than ``mu``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.derivatives.analytic_step.products import AnalyticStep
from contactopt.derivatives.analytic_step.residuals import CONSISTENCY, ccp_residual, sap_residual
from contactopt.derivatives.analytic_step.tangents import CoupledRows, ProblemTangents
from contactopt.derivatives.conic import ConicDerivative
from contactopt.derivatives.primal import PrimalDerivative
from contactopt.programs.conic import ConicProgram
from contactopt.programs.primal import PrimalConicProgram

FloatArray = NDArray[np.float64]

__all__ = ["CONSISTENCY", "AnalyticStep", "analytic_linearization"]


def analytic_linearization(stepper: Any, problem: Any, program: Any, derivative: Any, linear: Any,
                           parameters: Sequence[str], directions: FloatArray | None = None) -> AnalyticStep | None:
    """The linearization of a ``sap`` or primal ``ccp`` step without differences (module
    docstring), or None where it does not apply (the caller keeps its differences). With
    ``directions`` ((nx, p)), ``r`` is built along those input directions only (a forward
    product along one direction: every tangent contracted first, the rest on ``p`` columns)."""
    if linear is None or not isinstance(program, ConicProgram) or set(parameters) - {"mu"}:
        return None
    metadata = program.metadata
    if (metadata.get("bilateral", 0) or metadata.get("angular_rows") or metadata.get("friction_loss", 0)
            or stepper.drift.mode == "projection" or problem.bilateral.count):
        return None
    name = stepper.formulation.name
    if name == "sap" and isinstance(derivative, PrimalDerivative) and isinstance(program, PrimalConicProgram):
        if program.primal is None or program.primal.box.shape[0]:
            return None
        build: Any = sap_residual
    elif name == "ccp" and metadata.get("form") == "primal" and isinstance(derivative, ConicDerivative):
        build = ccp_residual
    else:
        return None
    rows = CoupledRows.of(name, problem, program, derivative.coupled_rows())
    out = build(stepper, problem, program, derivative, rows,
                ProblemTangents.of(problem, program, linear, tuple(parameters), rows, directions))
    if not out.consistent:
        return None
    out.directions = directions
    integration = getattr(linear, "integration", None)  # a floating base's q' = integrate(q, v', h)
    out.integration = integration(derivative.x[:out.nv], out.h) if integration is not None else None
    return out
