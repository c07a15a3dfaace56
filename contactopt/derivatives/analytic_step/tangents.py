"""The step problem's tangents by input column on the rows the program derivative couples to
``v'`` (:mod:`contactopt.derivatives.analytic_step`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.formulations.common import select_contacts
from contactopt.formulations.sap import contact_rows
from contactopt.programs.conic import ConicProgram

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CoupledRows:
    """The program's rows the derivative couples to ``v'`` (``G`` or ``DPi`` not zero), by the
    limits and contacts owning them: a zero block moves no ``v'`` (``H dv = -r_v + J' G q``,
    :mod:`.primal`; the conic Jacobian's ``A' DPi``, :mod:`.conic`), its adjoint is zero."""

    limits: Any  # positions of the coupled limit rows among the program's limits
    contacts: Any  # positions of the coupled contacts among the program's active contacts
    program_rows: Any  # the program's rows of those limits and contacts, in ``r``'s order
    active: Any  # the program's active contacts (all of them)
    limit_count: int

    @staticmethod
    def of(name: str, problem: Any, program: ConicProgram, coupled: Any) -> CoupledRows:
        active = select_contacts(problem.contacts, program.metadata["contacts"])
        limit_count = len(program.metadata.get("limits", []))
        dim, na = problem.contacts.dim, active.count
        if not coupled.any():  # every contact apart, no limit reached: r is r_v alone
            none = np.zeros(0, dtype=np.int_)
            return CoupledRows(none, none, none, active, limit_count)
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
        return CoupledRows(limits, contacts, rows.astype(np.int_), active, limit_count)


@dataclass(frozen=True)
class ProblemTangents:
    """The step problem's tangents by input column (``q``, ``v``, then the parameters), on the
    coupled rows (:class:`CoupledRows`): the limits' and the contacts'."""

    nv: int
    nx: int  # input columns: q (nq, public coordinates), v, the parameters
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
    def of(problem: Any, program: ConicProgram, linear: Any, parameters: tuple[str, ...], rows: CoupledRows,
           directions: FloatArray | None = None, tangents: bool = False) -> ProblemTangents:
        """The tangents by input column, or along ``directions`` ((nq + nv + parameters, p)); a
        public ``dq`` moves the tangent by ``G dq`` (``linear.coordinates``, None: ``G = I``): by
        input column, the tangents' columns times ``G``."""
        nv, coordinates = problem.nv, getattr(linear, "coordinates", None)
        if directions is None and coordinates is not None and not tangents:
            by_tangent = ProblemTangents.of(problem, program, linear, parameters, rows, None, tangents=True)
            return by_tangent.in_coordinates(coordinates)
        nq = nv if coordinates is None or tangents else coordinates.shape[1]
        full = directions is None
        D = np.eye(nq + nv + len(parameters)) if directions is None else directions
        nx = D.shape[1]
        dynamics, h = problem.dynamics, float(problem.dt)
        Dq, Dv = D[:nq], D[nq:nq + nv]
        if coordinates is not None and not tangents:
            Dq = coordinates @ Dq
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
            dmu = D[nq + nv + parameters.index("mu")].copy()
        G = np.asarray(problem.unilateral.G, dtype=np.float64)[limits]
        # one solve with A: dv* = dv + A^-1 (h dtau - dA (v* - v)), and [G; J_c] A^-1
        solved = dynamics.solve_M(np.hstack([h * dtau - (dA.transpose(0, 2, 1) @ (v_star - v)), G.T, Ja.T]))
        return ProblemTangents(nv, nx, np.asarray(dynamics.M, dtype=np.float64), dA, v_star, Dv + solved[:, :nx],
                               limits, G, dphi_u, active.phi[chosen], active.mu[chosen], Ja, dJa, dphi, dmu,
                               solved[:, nx:].T)

    def in_coordinates(self, coordinates: FloatArray) -> ProblemTangents:
        """These tangents by tangent column (``q`` columns along the tangent's dofs) by public input
        column: every column-indexed field times ``blockdiag(G, I, I)``."""
        nv = self.nv
        blocks = np.zeros((self.nx, coordinates.shape[1] + self.nx - nv))
        blocks[:nv, :coordinates.shape[1]] = coordinates
        blocks[nv:, coordinates.shape[1]:] = np.eye(self.nx - nv)
        return dataclasses.replace(self, nx=blocks.shape[1], dA=self.dA @ blocks, dv_star=self.dv_star @ blocks,
                                   dphi_u=self.dphi_u @ blocks, dJa=self.dJa @ blocks, dphi=self.dphi @ blocks,
                                   dmu=self.dmu @ blocks)
