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
``r``: ``<g_c, r_first> - <g_b, r_second>``. ``q' = q + h v'`` (a fixed base's scalar joints).

**ccp** (primal form, :class:`contactopt.formulations.ccp.ConeComplementarity` and
:func:`contactopt.formulations.constraint_rows.primal_program`): ``x = v'``, ``P = A``,
``c = -A v*``, rows ``-S J_c`` in ``SOC(3)`` per contact (``S = (1, mu, mu)``) and ``-G`` in
``Nonneg`` per limit, ``b = max(phi / h, -v_max)`` on the normal and limit rows (0 on the
tangents) (Anitescu, "Optimization-based simulation of nonsmooth rigid multibody dynamics",
Math. Program. 2006)::

    r_v = dA v' - dA v* - A dv* - J_c' (dS y_c) - dJ_c' (S y_c),    r_w = -(dS J_c + S dJ_c) v' - db

through the general :class:`~contactopt.derivatives.conic.ConicDerivative`'s products.

``r`` is built on the rows the program derivative couples to ``v'`` alone (:class:`_Rows`: a
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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.derivatives.conic import ConicDerivative
from contactopt.derivatives.primal import PrimalDerivative
from contactopt.formulations.common import select_contacts
from contactopt.formulations.recovery import recovery_speed
from contactopt.formulations.sap import contact_rows
from contactopt.programs.conic import ConicProgram
from contactopt.programs.primal import PrimalConicProgram

FloatArray = NDArray[np.float64]

__all__ = ["AnalyticStep", "analytic_linearization"]

#: The relative agreement the recomputed base data must reach with the built program's.
CONSISTENCY = 1e-12


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
            or stepper.drift.mode == "projection" or stepper.system.nq != stepper.system.nv
            or problem.bilateral.count):
        return None
    name = stepper.formulation.name
    if name == "sap" and isinstance(derivative, PrimalDerivative) and isinstance(program, PrimalConicProgram):
        if program.primal is None or program.primal.box.shape[0]:
            return None
        build: Any = _sap
    elif name == "ccp" and metadata.get("form") == "primal" and isinstance(derivative, ConicDerivative):
        build = _ccp
    else:
        return None
    rows = _Rows.of(name, problem, program, derivative.coupled_rows())
    out = build(stepper, problem, program, derivative, rows,
                _Inputs.of(problem, program, linear, tuple(parameters), rows, directions))
    if not out.consistent:
        return None
    out.directions = directions
    return out


@dataclass(frozen=True)
class _Rows:
    """The program's rows the derivative couples to ``v'`` (``G`` or ``DPi`` not zero), by the
    limits and contacts owning them: a zero block moves no ``v'`` (``H dv = -r_v + J' G q``,
    :mod:`.primal`; the conic Jacobian's ``A' DPi``, :mod:`.conic`), its adjoint is zero."""

    limits: Any  # positions of the coupled limit rows among the program's limits
    contacts: Any  # positions of the coupled contacts among the program's active contacts
    program_rows: Any  # the program's rows of those limits and contacts, in ``r``'s order
    active: Any  # the program's active contacts (all of them)
    limit_count: int

    @staticmethod
    def of(name: str, problem: Any, program: ConicProgram, coupled: Any) -> _Rows:
        active = select_contacts(problem.contacts, program.metadata["contacts"])
        limit_count = len(program.metadata.get("limits", []))
        dim, na = problem.contacts.dim, active.count
        if not coupled.any():  # every contact apart, no limit reached: r is r_v alone
            none = np.zeros(0, dtype=np.int_)
            return _Rows(none, none, none, active, limit_count)
        if name == "sap":  # limits first, then each contact's kept rows (SAP.build's order)
            owner = contact_rows(active.mu, dim)[0] // dim
            limits = np.flatnonzero(coupled[:limit_count])
            contacts = np.unique(owner[coupled[limit_count:]])
            chosen = np.zeros(na, dtype=bool)
            chosen[contacts] = True
            rows = np.concatenate([limits, limit_count + np.flatnonzero(chosen[owner])])
        else:  # ccp: each contact's frame rows, then the limits
            limits = np.flatnonzero(coupled[na * dim:])
            contacts = np.unique(np.flatnonzero(coupled[:na * dim]) // dim)
            rows = np.concatenate([(contacts[:, None] * dim + np.arange(dim)).reshape(-1), na * dim + limits])
        return _Rows(limits, contacts, rows.astype(np.int_), active, limit_count)


@dataclass(frozen=True)
class _Inputs:
    """The step problem's tangents by input column (``q``, ``v``, then the parameters), on the
    coupled rows (:class:`_Rows`): the limits' and the contacts'."""

    nv: int
    nx: int
    A: FloatArray  # the step's M (M + h D), dense
    dA: FloatArray  # (nv, nv, nx)
    v_star: FloatArray  # v_free = v + h A^-1 tau
    dv_star: FloatArray  # (nv, nx)
    limits: Any  # indices (into the problem's limits) of the coupled limit rows
    G: FloatArray  # (nl, nv)
    dphi_u: FloatArray  # (nl, nx)
    phi: FloatArray  # (na,) the coupled contacts'
    mu: FloatArray  # (na,)
    Ja: FloatArray  # (na * dim, nv)
    dJa: FloatArray  # (na * dim, nv, nx)
    dphi: FloatArray  # (na, nx)
    dmu: FloatArray  # (nx,): 1 in the column of "mu"
    solved: FloatArray  # [G; J_c] A^-1, (nl + na * dim, nv)

    @staticmethod
    def of(problem: Any, program: ConicProgram, linear: Any, parameters: tuple[str, ...], rows: _Rows,
           directions: FloatArray | None = None) -> _Inputs:
        """The tangents by input column, or along ``directions`` ((2 nv + parameters, p))."""
        nv = problem.nv
        full = directions is None
        D = np.eye(2 * nv + len(parameters)) if directions is None else directions
        nx = D.shape[1]
        dynamics, h = problem.dynamics, float(problem.dt)
        Dq, Dv = D[:nv], D[nv:2 * nv]
        if full:  # the identity's products, without the products
            dA = np.zeros((nv, nv, nx))
            dA[:, :, :nv] = linear.dM
            dtau = np.zeros((nv, nx))
            dtau[:, :nv], dtau[:, nv:2 * nv] = linear.dtau_dq, linear.dtau_dv
        else:
            dA = linear.dM_along(Dq) if hasattr(linear, "dM_along") else linear.dM @ Dq
            dtau = linear.dtau_dq @ Dq + linear.dtau_dv @ Dv
        v, v_star = problem.state.v, problem.v_free
        limits = np.asarray(program.metadata.get("limits", []), dtype=np.int_)[rows.limits]
        if full:
            dphi_u = np.zeros((limits.shape[0], nx))
            dphi_u[:, :nv] = linear.dphi_limits[limits]
        else:
            dphi_u = linear.dphi_limits[limits] @ Dq
        active, chosen = rows.active, rows.contacts
        dim, na = problem.contacts.dim, chosen.shape[0]
        Ja, dJa, dphi = np.zeros((0, nv)), np.zeros((0, nv, nx)), np.zeros((0, nx))
        if na:
            J = active.J.toarray() if hasattr(active.J, "toarray") else active.J
            frame = np.arange(dim)
            Ja = np.asarray(J, dtype=np.float64)[(chosen[:, None] * dim + frame).reshape(-1)]
            index = active.index[chosen]  # into the problem's contacts
            problem_rows = (index[:, None] * dim + frame).reshape(-1)
            if full:
                dJa, dphi = np.zeros((na * dim, nv, nx)), np.zeros((na, nx))
                dJa[:, :, :nv] = linear.dJ[problem_rows]
                dphi[:, :nv] = linear.dphi[index]
            elif hasattr(linear, "contact_tangents_along"):  # along the directions alone
                dphi_all, dJ_all = linear.contact_tangents_along(Dq)
                dJa, dphi = dJ_all[problem_rows], dphi_all[index]
            else:
                dJa, dphi = linear.dJ[problem_rows] @ Dq, linear.dphi[index] @ Dq
        dmu = np.zeros(nx)
        if "mu" in parameters:
            dmu = D[2 * nv + parameters.index("mu")].copy()
        G = np.asarray(problem.unilateral.G, dtype=np.float64)[limits]
        # one solve with A: dv* = dv + A^-1 (h dtau - dA (v* - v)), and [G; J_c] A^-1
        solved = dynamics.solve_M(np.hstack([h * dtau - (dA.transpose(0, 2, 1) @ (v_star - v)), G.T, Ja.T]))
        return _Inputs(nv, nx, np.asarray(dynamics.M, dtype=np.float64), dA, v_star, Dv + solved[:, :nx], limits,
                       G, dphi_u, active.phi[chosen], active.mu[chosen], Ja, dJa, dphi, dmu, solved[:, nx:].T)


def _capped(phi: FloatArray, dphi: FloatArray, span: float, v_max: float) -> tuple[FloatArray, FloatArray]:
    """``max(phi / span, -v_max)`` (:func:`contactopt.formulations.recovery.normal_target`) and
    its tangents ``dphi / span`` where the cap does not hold (0 where it does)."""
    target = phi / span
    if math.isinf(v_max):
        return target, dphi / span
    return np.maximum(target, -v_max), np.where((target > -v_max)[:, None], dphi / span, 0.0)


class AnalyticStep:
    """The step's products from ``r`` of the module docstring for every input column
    (``first`` (n, nx), ``second`` (m, nx)) and the program derivative at the solution."""

    def __init__(self, derivative: Any, first: FloatArray, second: FloatArray, nv: int, h: float,
                 consistent: bool) -> None:
        self.derivative, self.first, self.second = derivative, first, second
        self.nv, self.nx, self.h, self.consistent = nv, first.shape[1], h, consistent
        #: the input directions ``r``'s columns are along ((nx, p)), None: every input column
        self.directions: FloatArray | None = None

    def jvp(self, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(dq', dv')`` along the input ``direction`` ((nx,): ``[dq, dv, dparams]``; built
        along :attr:`directions`, one of them)."""
        if self.directions is None:
            first, second = self.first @ direction, self.second @ direction
        else:
            match = [k for k in range(self.directions.shape[1]) if np.array_equal(self.directions[:, k], direction)]
            if not match:
                raise ValueError("AnalyticStep.jvp: the direction is not one this linearization was built along")
            first, second = self.first[:, match[0]], self.second[:, match[0]]
        tangent = self.derivative.jvp(dc=first, db=-second)
        dv_next = tangent.x[:self.nv]
        return direction[:self.nv] + self.h * dv_next, dv_next

    def vjp(self, gq: FloatArray, gv: FloatArray) -> FloatArray:
        """The gradient of ``<gq, q'> + <gv, v'>`` over the inputs ((nx,), ``[q, v, params]``)."""
        if self.directions is not None:
            raise ValueError("AnalyticStep.vjp: built along given directions, not every input column")
        seed = np.zeros(self.first.shape[0])
        seed[:self.nv] = gv + self.h * gq
        gradient = self.derivative.vjp(gx=seed, dense=False)
        out = gradient.c @ self.first - gradient.b @ self.second
        out[:self.nv] += gq
        return np.asarray(out)

    def jacobian(self) -> FloatArray:
        """((nq + nv, nx)): the step's Jacobian, column by column through :meth:`jvp`."""
        if self.directions is not None:
            raise ValueError("AnalyticStep.jacobian: built along given directions, not every input column")
        columns = [np.concatenate(self.jvp(unit)) for unit in np.eye(self.nx)]
        return np.stack(columns, axis=1)


def _ccp(stepper: Any, problem: Any, program: ConicProgram, derivative: ConicDerivative, rows: _Rows,
         inputs: _Inputs) -> AnalyticStep:
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


def _sap(stepper: Any, problem: Any, program: PrimalConicProgram, derivative: PrimalDerivative, rows: _Rows,
         inputs: _Inputs) -> AnalyticStep:
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


def _uncoupled(derivative: Any, program: ConicProgram, problem: Any, inputs: _Inputs, mine: FloatArray,
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
