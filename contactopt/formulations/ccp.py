"""The cone complementarity relaxation with the exact (Lorentz) friction cone: an SOCP,
primal in v' and dual in the contact impulses.

Anitescu's relaxation (Tedrake 2022, "Anitescu's convex formulation") with the polyhedral
cone replaced by the exact cone ``FC = {lambda : ||lambda_t|| <= mu lambda_n}`` (the
"cone complementarity problem", Anitescu & Tasora 2010; the conic description of FC is in
Tedrake 2022, "Todorov's regularization").

**primal** (``x = v'``)::

    minimize    1/2 (v' - v_free)^T M (v' - v_free)
    subject to  phi_c / h + n_c v' >= mu_c || T_c v' ||          for every active contact c

as the second-order-cone rows ``[phi_c/h + n_c v', mu_c T_c v'] in SOC(dim)``
(``A_c = -[n_c; mu_c T_c]``, ``b_c = [phi_c / h, 0]``). With row duals ``y_c in SOC`` the
stationarity ``M (v' - v_free) = sum_c [n_c; mu_c T_c]^T y_c`` gives the frame impulse
``lambda_c = [y_c0, mu_c y_c1:]``, which lies in FC.

**dual** (``x = lambda``, per contact ``[lambda_n, lambda_t]``)::

    minimize    1/2 lambda^T J M^{-1} J^T lambda + lambda^T (J v_free + [phi / h, 0])
    subject to  [mu_c lambda_cn, lambda_ct] in SOC(dim)     (mu_c > 0)
                lambda_cn >= 0, lambda_ct = 0               (mu_c = 0: the cone degenerates)

Sliding contacts hydroplane to a gap of about ``h mu |v_t|`` as in the polyhedral case, but
without the cone's anisotropy. ``epsilon`` selects contacts with ``phi <= epsilon``.
Torsional and rolling rows (MJCF condim 4 and 6) join their contact's cone, MuJoCo's elliptic
cone of ``3 + m_c`` rows (:mod:`contactopt.formulations.angular_friction`).
``phi / h`` of a penetrating contact or a violated limit is capped at ``-max_recovery_speed``
(:mod:`contactopt.formulations.recovery`: off by default except on MJCF models).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from contactopt.formulations.angular_friction import cone_rows, dual_cone, scatter_angular
from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    ActiveContacts,
    active_contacts,
    dual_program,
    dual_velocity,
    primal_bilateral_impulses,
    primal_program,
    require_finite_mu,
    row_impulses,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.recovery import normal_target, recovery_speed
from contactopt.model.step import StepProblem, is_sparse
from contactopt.programs import SOC, Block, Cone, ConicProgram, Nonneg, Solution, Zero
from contactopt.programs.csc import csc, to_csr

FloatArray = np.ndarray


def friction_cone_rows(active: ActiveContacts) -> tuple[sp.csc_matrix, tuple[Cone, ...]]:
    """``A`` and cones with ``-A lambda in K`` iff every contact's lambda is in its friction cone.

    ``A = -diag(scale)`` with ``scale = (mu, 1, 1)`` per contact (``[mu lambda_n, lambda_t]``
    in SOC); a contact with ``mu = 0`` gets ``lambda_n >= 0`` and ``lambda_t = 0`` instead.
    """
    dim, count = active.dim, active.count
    scale = np.ones((count, dim))
    rows = count * dim
    if dim == 1:
        cones: tuple[Cone, ...] = (Nonneg(1),) * count
    else:
        sliding = active.mu > 0
        scale[:, 0] = np.where(sliding, active.mu, 1.0)
        if sliding.all():  # the usual case: one shared cone object per contact, no Python loop
            cones = (SOC(dim),) * count
        else:
            soc, frictionless = (SOC(dim),), (Nonneg(1), Zero(dim - 1))
            cones = tuple(cone for has_cone in sliding.tolist() for cone in (soc if has_cone else frictionless))
    diagonal = np.arange(rows, dtype=np.int32)
    return csc(-scale.reshape(-1), diagonal, np.arange(rows + 1, dtype=np.int32), (rows, rows)), cones


class ConeComplementarity(Formulation):
    name: ClassVar[str] = "ccp"
    description: ClassVar[str] = "Anitescu relaxation with the exact friction cone, SOCP (primal or dual)"
    defaults: ClassVar[Mapping[str, Any]] = {"form": "primal", "epsilon": float("inf"), "max_recovery_speed": None}
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {"form": ("primal", "dual")}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"], rigid=True)
        require_finite_mu(active, self.name)
        dim, na, h = contacts.dim, active.count, problem.dt
        rows = na * dim
        metadata = {"formulation": self.name, "form": options["form"], "dt": h, "t": problem.state.t,
                    "contacts": active.index.tolist(), "nv": problem.nv}
        normal_rhs = np.zeros(rows)
        v_max = recovery_speed(problem, options)
        normal_rhs[::dim] = normal_target(active.phi, h, v_max)  # phi / h
        if active.angular is not None:  # torsional/rolling rows: MuJoCo's elliptic cone of 3 + m_c rows
            return self._build_with_angular(problem, active, normal_rhs[::dim], options, metadata)
        if options["form"] == "primal":
            scale = np.ones((na, dim))
            scale[:, 1:] = active.mu[:, None]
            scaled = active.scaled_rows(scale.reshape(-1))
            cones = (SOC(dim) if dim > 1 else Nonneg(1),) * na
            return primal_program(problem, -scaled, normal_rhs, cones, (Block("friction_cones", 0, rows, dim),),
                                  metadata, epsilon=options["epsilon"], max_recovery_speed=v_max)
        A_cone, cones = friction_cone_rows(active)
        return dual_program(problem, active.J, active.J @ problem.v_free + normal_rhs,
                            A_cone if rows else sp.csc_matrix((0, 0)), cones,
                            (Block("impulse", 0, rows, dim),), (Block("impulse_in_cone", 0, rows, dim),),
                            metadata, epsilon=options["epsilon"], max_recovery_speed=v_max)

    def _build_with_angular(self, problem: StepProblem, active: ActiveContacts, normal: FloatArray,
                            options: Mapping[str, Any], metadata: dict[str, Any]) -> Program:
        """The two forms with a cone of ``3 + m_c`` rows per contact (:mod:`.angular_friction`):
        primal rows ``[n; mu t1; mu t2; mu_i e_i]`` in SOC; dual ``[lambda_n, lambda_t / mu,
        lambda_i / mu_i]`` in SOC (written ``[mu lambda_n, lambda_t, mu lambda_i / mu_i]``)."""
        cone = cone_rows(active, normal_units=options["form"] == "dual")
        m = cone.coefficient.shape[0]
        rhs = np.zeros(m)
        rhs[cone.frame[:, 0]] = normal
        metadata = {**metadata, "angular_rows": m}
        if options["form"] == "primal":
            scaled = (to_csr(sp.diags(cone.coefficient) @ cone.rows) if is_sparse(cone.rows)
                      else np.asarray(cone.rows) * cone.coefficient[:, None])
            cones = tuple(SOC(int(d)) for d in cone.dims)
            return primal_program(problem, -scaled, rhs, cones, (Block("friction_cones", 0, m),), metadata,
                                  epsilon=options["epsilon"], max_recovery_speed=recovery_speed(problem, options))
        A_cone, cones = dual_cone(active, cone)
        return dual_program(problem, cone.rows, cone.rows @ problem.v_free + rhs, A_cone, cones,
                            (Block("impulse", 0, m),), (Block("impulse_in_cone", 0, m),), metadata,
                            epsilon=options["epsilon"], max_recovery_speed=recovery_speed(problem, options))

    def _recover_with_angular(self, problem: StepProblem, program: ConicProgram, solution: Solution,
                              active: ActiveContacts) -> StepResult:
        cone = cone_rows(active, normal_units=program.metadata["form"] == "dual")
        assert active.angular is not None
        if program.metadata["form"] == "primal":
            impulse = program.row_block(solution.y, "friction_cones") * cone.coefficient
            v_next = np.array(program.variable(solution.x, "v_next"))
            bilateral = primal_bilateral_impulses(program, solution.y)
        else:
            impulse = np.array(program.variable(solution.x, "impulse"))
            v_next, bilateral = dual_velocity(problem, program, solution.x, cone.rows, impulse)
            impulse[cone.angular] *= cone.angular_scale  # x_i = lambda_i / mu_i
        limits, friction = row_impulses(problem, program, solution.x,
                                        solution.y if program.metadata["form"] == "primal" else None)
        contacts = problem.contacts
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, impulse[cone.frame]),
                          bilateral=bilateral, limits=limits, friction_loss=friction,
                          angular_friction=scatter_angular(contacts, active, impulse[cone.angular]))

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, ConicProgram)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        if "angular_rows" in program.metadata:
            return self._recover_with_angular(problem, program, solution, active)
        if program.metadata["form"] == "primal":
            y = program.row_block(solution.y, "friction_cones").reshape(active.count, contacts.dim)
            frame = y.copy()
            frame[:, 1:] *= active.mu[:, None]
            v_next = np.array(program.variable(solution.x, "v_next"))
            bilateral = primal_bilateral_impulses(program, solution.y)
        else:
            frame = program.variable(solution.x, "impulse").reshape(active.count, contacts.dim)
            v_next, bilateral = dual_velocity(problem, program, solution.x, active.J, frame.reshape(-1))
        limits, friction = row_impulses(problem, program, solution.x,
                                        solution.y if program.metadata["form"] == "primal" else None)
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame),
                          bilateral=bilateral, limits=limits, friction_loss=friction)
