"""The ``sap`` step's derivative without differences, where the system gives the analytic
tangents of its step problem (:meth:`StepLinearization`-like, e.g. the pinocchio URDF backend's
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
``r``: ``<g_c, r_first> - <g_b, r_second>``. ``q' = q + h v'`` (a fixed base's scalar joints).

The base program's ``R``, ``v_hat``, ``S`` and rows are recomputed from the problem and must
equal the built ones (to 1e-12 relative; ``v*`` must be the problem's ``v_free``; ``A`` is its
``M`` by ``SAP.build``'s construction), else None is returned and the step derivative keeps
its differences: a change of ``SAP.build`` cannot go unnoticed here. Covered: contacts of
``dim = 3`` (or 1), limit rows; not: bilateral rows, friction-loss (box) rows, angular friction,
drift projection, parameters other than ``mu``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.derivatives.primal import PrimalDerivative
from contactopt.formulations.common import select_contacts
from contactopt.formulations.recovery import recovery_speed
from contactopt.formulations.sap import contact_rows
from contactopt.programs.primal import PrimalConicProgram

FloatArray = NDArray[np.float64]

__all__ = ["SapStepLinearization", "sap_linearization"]

#: The relative agreement the recomputed base data must reach with the built program's.
CONSISTENCY = 1e-12


def sap_linearization(stepper: Any, problem: Any, program: Any, derivative: Any, linear: Any,
                      parameters: Sequence[str]) -> SapStepLinearization | None:
    """The analytic linearization of a ``sap`` step (module docstring), or None where it does
    not apply (the caller keeps its differences)."""
    if stepper.formulation.name != "sap" or not isinstance(derivative, PrimalDerivative):
        return None
    if not isinstance(program, PrimalConicProgram) or program.primal is None or linear is None:
        return None
    primal = program.primal
    if (primal.box.shape[0] or program.metadata.get("bilateral", 0) or program.metadata.get("angular_rows")
            or program.metadata.get("friction_loss", 0) or set(parameters) - {"mu"}
            or stepper.drift.mode == "projection"):
        return None
    system = stepper.system
    if system.nq != system.nv:
        return None
    out = SapStepLinearization(stepper, problem, program, derivative, linear, tuple(parameters))
    return out if out.consistent else None


class SapStepLinearization:
    """``r`` of the module docstring for every input column (``first`` (n, nx), ``second``
    (m, nx); columns ``q``, ``v``, then the parameters), and the step's products from it."""

    def __init__(self, stepper: Any, problem: Any, program: PrimalConicProgram, derivative: PrimalDerivative,
                 linear: Any, parameters: tuple[str, ...]) -> None:
        options = stepper.formulation_options
        primal = program.primal
        assert primal is not None
        self.derivative, self.parameters = derivative, parameters
        self.h = h = float(problem.dt)
        nv = problem.nv
        self.nv, self.nx = nv, 2 * nv + len(parameters)
        nx = self.nx
        k, tau_d = float(options["stiffness"]), float(options["dissipation_time_scale"])
        beta = float(options["near_rigid_threshold"]) ** 2 / (4.0 * math.pi ** 2)
        sigma_ratio = float(options["sigma"])
        compliant = 0.0 if math.isinf(k) else 1.0 / (h * k * (h + tau_d))
        v_max = recovery_speed(problem, options)
        span = h + tau_d
        A = np.asarray(problem.dynamics.M)  # primal.A: SAP's A is the step's M (M + h D)
        dynamics = problem.dynamics
        # input tangents of the problem, by column
        dA = np.zeros((nv, nv, nx))
        dA[:, :, :nv] = linear.dM
        dtau = np.zeros((nv, nx))
        dtau[:, :nv], dtau[:, nv:2 * nv] = linear.dtau_dq, linear.dtau_dv
        dv = np.zeros((nv, nx))
        dv[:, nv:2 * nv] = np.eye(nv)
        v, v_star = problem.state.v, primal.v_star
        dv_star = dv + dynamics.solve_M(h * dtau - np.einsum("ijk,j->ik", dA, v_star - v))
        # rows: limits, then the active contacts' kept rows (SAP.build's order)
        limits = np.asarray(program.metadata.get("limits", []), dtype=np.int_)
        active = select_contacts(problem.contacts, program.metadata["contacts"])
        dim = problem.contacts.dim
        kept, scale_c, _ = contact_rows(active.mu, dim)
        nl, na = limits.shape[0], active.count
        m = primal.m
        G = np.asarray(problem.unilateral.G)[limits]
        Ja = np.asarray(active.J.toarray() if hasattr(active.J, "toarray") else active.J)
        J = np.vstack([G, Ja[kept]]) if nl else Ja[kept]
        dJa = linear.dJ[np.concatenate([np.arange(3 * c, 3 * c + dim) for c in active.index])] if na else (
            np.zeros((0, nv, nv)))
        dJ = np.zeros((m, nv, nx))
        dJ[nl:, :, :nv] = dJa[kept]
        # R and v_hat of the limit rows
        R, v_hat, scale = np.zeros(m), np.zeros(m), np.ones(m)
        dR, dv_hat, dS = np.zeros((m, nx)), np.zeros((m, nx)), np.zeros((m, nx))
        if nl:
            Bu = dynamics.solve_M(G.T).T  # G A^-1
            w_u = np.einsum("iv,iv->i", Bu, G)
            dw_u = -np.einsum("iv,vwk,iw->ik", Bu, dA, Bu)
            R[:nl] = np.maximum(beta * w_u, compliant)
            dR[:nl] = np.where((beta * w_u > compliant)[:, None], beta * dw_u, 0.0)
            target = problem.unilateral.phi[limits] / span
            v_hat[:nl] = -(target if math.isinf(v_max) else np.maximum(target, -v_max))
            dphi_u = np.zeros((nl, nx))
            dphi_u[:, :nv] = linear.dphi_limits[limits]
            moving_u = np.ones(nl, dtype=bool) if math.isinf(v_max) else target > -v_max
            dv_hat[:nl] = np.where(moving_u[:, None], -dphi_u / span, 0.0)
        if na:
            B = dynamics.solve_M(Ja.T).T.reshape(na, dim, nv)  # J_c A^-1
            Jc, dJc = Ja.reshape(na, dim, nv), dJa.reshape(na, dim, nv, nv)
            W = np.einsum("civ,cjv->cij", Jc, B)
            half = np.einsum("civk,cjv->cijk", dJc, B)  # dJ_c A^-1 J_c'
            dW = np.zeros((na, dim, dim, nx))
            dW[..., :nv] = half + half.transpose(0, 2, 1, 3)
            dW -= np.einsum("civ,vwk,cjw->cijk", B, dA, B)
            norm = np.sqrt(np.einsum("cij,cij->c", W, W))
            w = norm / dim
            dw = np.einsum("cij,cijk->ck", W, dW) / (dim * norm)[:, None]
            R_frame, dR_frame = np.empty((na, dim)), np.zeros((na, dim, nx))
            R_frame[:, 0] = np.maximum(beta * w, compliant)
            dR_frame[:, 0] = np.where((beta * w > compliant)[:, None], beta * dw, 0.0)
            R_frame[:, 1:] = sigma_ratio * w[:, None]
            dR_frame[:, 1:] = sigma_ratio * dw[:, None, :]
            vhat_frame, dvhat_frame = np.zeros((na, dim)), np.zeros((na, dim, nx))
            target = active.phi / span
            vhat_frame[:, 0] = -(target if math.isinf(v_max) else np.maximum(target, -v_max))
            dphi = np.zeros((na, nx))
            dphi[:, :nv] = linear.dphi[active.index]
            moving = np.ones(na, dtype=bool) if math.isinf(v_max) else target > -v_max
            dvhat_frame[:, 0] = np.where(moving[:, None], -dphi / span, 0.0)
            dS_frame = np.zeros((na, dim, nx))
            if "mu" in parameters:
                dS_frame[:, 1:, 2 * nv + parameters.index("mu")] = 1.0
            R[nl:], dR[nl:] = R_frame.reshape(-1)[kept], dR_frame.reshape(na * dim, nx)[kept]
            v_hat[nl:], dv_hat[nl:] = vhat_frame.reshape(-1)[kept], dvhat_frame.reshape(na * dim, nx)[kept]
            scale[nl:], dS[nl:] = scale_c, dS_frame.reshape(na * dim, nx)[kept]
        self.consistent = _close([R, v_hat, scale, J.ravel(), problem.v_free],
                                 [primal.R, primal.v_hat, primal.scale, primal.J.toarray().ravel(), v_star])
        # the right-hand side r of the program derivative, per column
        x, y = derivative.x, derivative.y
        v_next, multiplier = x[:nv], x[nv:]
        Sy = scale * y
        r_v = (np.einsum("ijk,j->ik", dA, v_next - v_star) - A @ dv_star - J.T @ (dS * y[:, None])
               - np.einsum("rvk,r->vk", dJ, Sy))
        r_sigma = dR * multiplier[:, None] - R[:, None] * dS * y[:, None] - dR * Sy[:, None]
        r_w = (-dS * (J @ v_next + R * multiplier - v_hat)[:, None]
               - scale[:, None] * (np.einsum("rvk,v->rk", dJ, v_next) + dR * multiplier[:, None] - dv_hat))
        self.first = np.vstack([r_v, r_sigma])
        self.second = r_w

    def jvp(self, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(dq', dv')`` along the input ``direction`` ((nx,): ``[dq, dv, dparams]``)."""
        tangent = self.derivative.jvp(dc=self.first @ direction, db=-(self.second @ direction))
        dv_next = tangent.x[:self.nv]
        return direction[:self.nv] + self.h * dv_next, dv_next

    def vjp(self, gq: FloatArray, gv: FloatArray) -> FloatArray:
        """The gradient of ``<gq, q'> + <gv, v'>`` over the inputs ((nx,), ``[q, v, params]``)."""
        seed = np.zeros(self.derivative.x.shape[0])
        seed[:self.nv] = gv + self.h * gq
        gradient = self.derivative.vjp(gx=seed, dense=False)
        out = gradient.c @ self.first - gradient.b @ self.second
        out[:self.nv] += gq
        return np.asarray(out)

    def jacobian(self) -> FloatArray:
        """((nq + nv, nx)): the step's Jacobian, column by column through :meth:`jvp`."""
        columns = [np.concatenate(self.jvp(unit)) for unit in np.eye(self.nx)]
        return np.stack(columns, axis=1)


def _close(mine: list[FloatArray], theirs: list[FloatArray]) -> bool:
    """Whether each of ``mine`` equals its counterpart in ``theirs`` to :data:`CONSISTENCY`
    relative to the counterpart's largest entry."""
    if [a.shape for a in mine] != [np.shape(b) for b in theirs]:
        return False
    sizes = [a.size for a in mine]
    if not sum(sizes):
        return True
    a, b = np.concatenate(mine), np.concatenate(theirs)
    largest = np.repeat([float(np.abs(x).max(initial=0.0)) for x in theirs], sizes)
    return bool(np.all(np.abs(a - b) <= CONSISTENCY * largest))
