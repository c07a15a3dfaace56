"""``r`` of a ``sap`` and of a primal ``ccp`` step, on the coupled rows, and the check that the
recomputed base data equal the built program's (:mod:`contactopt.derivatives.analytic_step`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.derivatives.analytic_step.products import AnalyticStep
from contactopt.derivatives.analytic_step.tangents import CoupledRows, ProblemTangents
from contactopt.derivatives.conic import ConicDerivative
from contactopt.derivatives.primal import PrimalDerivative
from contactopt.formulations.recovery import recovery_speed
from contactopt.formulations.sap import contact_rows
from contactopt.programs.conic import ConicProgram
from contactopt.programs.primal import PrimalConicProgram

FloatArray = NDArray[np.float64]

#: The relative agreement the recomputed base data must reach with the built program's.
CONSISTENCY = 1e-12


def _capped(phi: FloatArray, dphi: FloatArray, span: float, v_max: float) -> tuple[FloatArray, FloatArray]:
    """``max(phi / span, -v_max)`` (:func:`contactopt.formulations.recovery.normal_target`) and
    its tangents ``dphi / span`` where the cap does not hold (0 where it does)."""
    target = phi / span
    if math.isinf(v_max):
        return target, dphi / span
    return np.maximum(target, -v_max), np.where((target > -v_max)[:, None], dphi / span, 0.0)


def ccp_residual(stepper: Any, problem: Any, program: ConicProgram, derivative: ConicDerivative,
                 rows: CoupledRows, inputs: ProblemTangents) -> AnalyticStep:
    """``r`` of a primal ``ccp`` step (module docstring), on the coupled rows."""
    if not rows.program_rows.size:
        return _uncoupled(derivative, program, problem, inputs, -(inputs.A @ inputs.v_star), program.c, 0)
    options = stepper.formulation_options
    h, v_max = float(problem.dt), recovery_speed(problem, options)
    nv, nx = inputs.nv, inputs.nx
    dim, na, nl = problem.contacts.dim, inputs.phi.shape[0], inputs.limits.shape[0]
    scale = np.ones((na, dim))
    scale[:, 1:] = inputs.mu[:, None]
    S = scale.reshape(-1)
    dS = np.zeros((na, dim, nx))
    dS[:, 1:] = inputs.dmu
    dS = dS.reshape(na * dim, nx)
    b_c, db_c = np.zeros(na * dim), np.zeros((na * dim, nx))
    b_c[::dim], db_c[::dim] = _capped(inputs.phi, inputs.dphi, h, v_max)
    b_u, db_u = _capped(problem.unilateral.phi[inputs.limits], inputs.dphi_u, h, v_max)
    chosen = rows.program_rows
    data = np.vstack([-S[:, None] * inputs.Ja, -inputs.G])
    consistent = _close([data.ravel(), np.concatenate([b_c, b_u]), -(inputs.A @ inputs.v_star)],
                        [program.A.toarray()[chosen].ravel(), program.b[chosen], program.c])
    x, y = derivative.x, derivative.y
    v_next, y_c = x[:nv], y[chosen[:na * dim]]
    Sy = S * y_c
    r_v = (np.einsum("ijk,j->ik", inputs.dA, v_next - inputs.v_star) - inputs.A @ inputs.dv_star
           - inputs.Ja.T @ (dS * y_c[:, None]) - np.einsum("rvk,r->vk", inputs.dJa, Sy))
    second = np.zeros((program.m, nx))
    second[chosen[:na * dim]] = (-dS * (inputs.Ja @ v_next)[:, None]
                                 - S[:, None] * np.einsum("rvk,v->rk", inputs.dJa, v_next) - db_c)
    if nl:
        second[chosen[na * dim:]] = -db_u
    return AnalyticStep(derivative, r_v, second, nv, h, consistent)


def sap_residual(stepper: Any, problem: Any, program: PrimalConicProgram, derivative: PrimalDerivative,
                 rows: CoupledRows, inputs: ProblemTangents) -> AnalyticStep:
    """``r`` of a ``sap`` step (module docstring), on the coupled rows."""
    primal = program.primal
    assert primal is not None
    if not rows.program_rows.size:
        return _uncoupled(derivative, program, problem, inputs, inputs.v_star, primal.v_star, primal.m)
    options = stepper.formulation_options
    h = float(problem.dt)
    nv, nx, limits = inputs.nv, inputs.nx, inputs.limits
    k, tau_d = float(options["stiffness"]), float(options["dissipation_time_scale"])
    beta = float(options["near_rigid_threshold"]) ** 2 / (4.0 * math.pi ** 2)
    sigma_ratio = float(options["sigma"])
    compliant = 0.0 if math.isinf(k) else 1.0 / (h * k * (h + tau_d))
    v_max = recovery_speed(problem, options)
    span = h + tau_d
    A, dA = inputs.A, inputs.dA
    # rows: limits, then the coupled contacts' kept rows (SAP.build's order)
    dim = problem.contacts.dim
    kept, scale_c, _ = contact_rows(inputs.mu, dim)
    nl, na = limits.shape[0], inputs.phi.shape[0]
    chosen = rows.program_rows
    m = chosen.shape[0]
    G, Ja, dJa = inputs.G, inputs.Ja, inputs.dJa
    J = np.vstack([G, Ja[kept]]) if nl else Ja[kept]
    dJ = np.zeros((m, nv, nx))
    dJ[nl:] = dJa[kept]
    R, v_hat, scale = np.zeros(m), np.zeros(m), np.ones(m)
    dR, dv_hat, dS = np.zeros((m, nx)), np.zeros((m, nx)), np.zeros((m, nx))
    both = inputs.solved  # [G; J_c] A^-1
    if nl:
        Bu = both[:nl]  # G A^-1
        w_u = np.einsum("iv,iv->i", Bu, G)
        dw_u = -np.einsum("iwk,iw->ik", np.tensordot(Bu, dA, axes=(1, 0)), Bu)  # -G A^-1 dA A^-1 G'
        R[:nl] = np.maximum(beta * w_u, compliant)
        dR[:nl] = np.where((beta * w_u > compliant)[:, None], beta * dw_u, 0.0)
        target, dtarget = _capped(problem.unilateral.phi[limits], inputs.dphi_u, span, v_max)
        v_hat[:nl], dv_hat[:nl] = -target, -dtarget
    if na:
        B = both[nl:].reshape(na, dim, nv)  # J_c A^-1
        Jc, dJc = Ja.reshape(na, dim, nv), dJa.reshape(na, dim, nv, nx)
        W = np.einsum("civ,cjv->cij", Jc, B)
        half = np.einsum("civk,cjv->cijk", dJc, B)  # dJ_c A^-1 J_c'
        dW = half + half.transpose(0, 2, 1, 3) - np.einsum("ciwk,cjw->cijk", np.tensordot(B, dA, axes=(2, 0)), B)
        norm = np.sqrt(np.einsum("cij,cij->c", W, W))
        w = norm / dim
        dw = np.einsum("cij,cijk->ck", W, dW) / (dim * norm)[:, None]
        R_frame, dR_frame = np.empty((na, dim)), np.zeros((na, dim, nx))
        R_frame[:, 0] = np.maximum(beta * w, compliant)
        dR_frame[:, 0] = np.where((beta * w > compliant)[:, None], beta * dw, 0.0)
        R_frame[:, 1:] = sigma_ratio * w[:, None]
        dR_frame[:, 1:] = sigma_ratio * dw[:, None, :]
        vhat_frame, dvhat_frame = np.zeros((na, dim)), np.zeros((na, dim, nx))
        target, dtarget = _capped(inputs.phi, inputs.dphi, span, v_max)
        vhat_frame[:, 0], dvhat_frame[:, 0] = -target, -dtarget
        dS_frame = np.zeros((na, dim, nx))
        dS_frame[:, 1:] = inputs.dmu
        R[nl:], dR[nl:] = R_frame.reshape(-1)[kept], dR_frame.reshape(na * dim, nx)[kept]
        v_hat[nl:], dv_hat[nl:] = vhat_frame.reshape(-1)[kept], dvhat_frame.reshape(na * dim, nx)[kept]
        scale[nl:], dS[nl:] = scale_c, dS_frame.reshape(na * dim, nx)[kept]
    built_J = primal.J.toarray()[chosen]
    consistent = _close([R, v_hat, scale, J.ravel(), inputs.v_star],
                        [primal.R[chosen], primal.v_hat[chosen], primal.scale[chosen], built_J.ravel(), primal.v_star])
    # the right-hand side r of the program derivative, per column, on the coupled rows
    x, y = derivative.x, derivative.y[chosen]
    v_next, multiplier = x[:nv], x[nv:][chosen]
    Sy = scale * y
    r_v = (np.einsum("ijk,j->ik", dA, v_next - inputs.v_star) - A @ inputs.dv_star - J.T @ (dS * y[:, None])
           - np.einsum("rvk,r->vk", dJ, Sy))
    first, second = np.zeros((nv + primal.m, nx)), np.zeros((primal.m, nx))
    first[:nv] = r_v
    first[nv + chosen] = dR * multiplier[:, None] - R[:, None] * dS * y[:, None] - dR * Sy[:, None]
    second[chosen] = (-dS * (J @ v_next + R * multiplier - v_hat)[:, None]
                      - scale[:, None] * (np.einsum("rvk,v->rk", dJ, v_next) + dR * multiplier[:, None] - dv_hat))
    return AnalyticStep(derivative, first, second, nv, h, consistent)


def _uncoupled(derivative: Any, program: ConicProgram, problem: Any, inputs: ProblemTangents, mine: FloatArray,
               theirs: FloatArray, sigmas: int) -> AnalyticStep:
    """``r`` without coupled rows: ``r_v = dA (v' - v*) - A dv*``; ``mine`` (``v*``, ccp's ``c``) checked."""
    r_v = np.einsum("ijk,j->ik", inputs.dA, derivative.x[:inputs.nv] - inputs.v_star) - inputs.A @ inputs.dv_star
    first = np.zeros((inputs.nv + sigmas, inputs.nx))
    first[:inputs.nv] = r_v
    return AnalyticStep(derivative, first, np.zeros((program.m, inputs.nx)), inputs.nv, float(problem.dt),
                        _close([mine], [theirs]))


def _close(mine: list[FloatArray], theirs: list[FloatArray]) -> bool:
    """Whether each of ``mine`` equals ``theirs``' to :data:`CONSISTENCY` of the latter's largest entry."""
    for a, given in zip(mine, theirs, strict=True):
        b = np.asarray(given, dtype=np.float64)
        if a.shape != b.shape or (a.size and not np.all(np.abs(a - b) <= CONSISTENCY * float(np.abs(b).max()))):
            return False
    return True
