"""Anitescu's convex relaxation with a polyhedral friction cone, primal QP in v' and dual QP
in the edge impulses beta.

Tedrake 2022, "Anitescu's convex formulation" (Anitescu 2006). With ``k`` friction
directions ``d_i`` per active contact (``-d_i`` in the set) and ``v_free = v + h M^{-1} tau``:

**primal** (``x = v'``)::

    minimize    1/2 (v' - v_free)^T M (v' - v_free)
    subject to  phi_c / h + (n_c + mu_c d_ci) v' >= 0        for every contact c, direction i

The row dual ``beta_ci >= 0`` is the impulse along the cone edge ``n_c + mu_c d_ci``, so the
contact impulse is ``lambda_n = sum_i beta_ci`` and ``lambda_t = mu_c sum_i beta_ci d_i``
(inside the polyhedral cone by construction; maximum dissipation is dropped).

**dual** (``x = beta``), with ``J_beta`` stacking the edge rows::

    minimize_{beta >= 0}  1/2 beta^T J_beta M^{-1} J_beta^T beta + beta^T (J_beta v_free + phi / h)

(the reference prints the linear term as ``phi/h sum_i beta_i`` with ``v^-`` dropped; the
derivation from its own Lagrangian gives ``J_beta v_free`` too). The dual Hessian is only
semidefinite: impulses may be non-unique (a table on four legs) while ``v'`` is unique.

A sliding contact "hydroplanes": the constraint of the edge opposing the slip keeps
``phi(q') >= h mu d_i v'``, i.e. a gap of about ``h mu |v_t|``. ``epsilon`` selects the
contacts with ``phi <= epsilon`` (Anitescu's epsilon-active set; default: all candidates).
Torsional and rolling rows ``e_i`` (MJCF condim 4 and 6) add the edges ``n +- mu_i e_i``
(:mod:`contactopt.formulations.angular_friction`).
``phi / h`` of a penetrating contact or a violated limit is capped at ``-max_recovery_speed``
(:mod:`contactopt.formulations.recovery`: off by default except on MJCF models).
``stabilization``: ``"feasible"`` (default) keeps ``phi / h`` on every contact whose own cone
edges can separate it and sets it to 0 on a penetrating contact whose edges cannot (some
impulse of its cone moves nothing, so no ``v'`` meets its rows and the program is infeasible;
:mod:`contactopt.formulations.anitescu_stabilization`, after Anitescu & Hart 2004's bounded
stabilization); every program that had a solution is built as before. ``"full"``: the
reference's ``phi / h`` on every contact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from contactopt.core.budgets import check_allocation
from contactopt.formulations.angular_friction import angular_edges, edge_impulses, scatter_angular, vstack_rows
from contactopt.formulations.anitescu_stabilization import feasible_target
from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    ActiveContacts,
    active_contacts,
    check_directions,
    dual_program,
    dual_velocity,
    polyhedral_frame_impulses,
    primal_bilateral_impulses,
    primal_program,
    require_finite_mu,
    row_impulses,
    scatter_impulses,
    select_contacts,
    tangent_directions,
)
from contactopt.formulations.recovery import normal_target, recovery_speed
from contactopt.model.step import StepProblem
from contactopt.programs import Block, ConicProgram, Nonneg, Solution
from contactopt.programs.csc import diagonal_csc


def edge_rows(active: ActiveContacts, k: int) -> tuple[Any, int]:
    """(na * kk, nv) rows ``n_c + mu_c d_ci`` and kk = edges per contact (1 if frictionless
    frame); sparse when the contact Jacobian is."""
    if k == 0:
        return active.N, 1
    if not active.is_sparse:  # dense rows: the arithmetic of the reference trajectories
        T = active.T
        D = np.einsum("ij,cjv->civ", tangent_directions(active.dim, k), T)
        N = active.N
        return (N[:, None, :] + active.mu[:, None, None] * D).reshape(active.count * k, active.nv), k
    coefficients = np.zeros((active.count, k, active.dim))
    coefficients[:, :, 0] = 1.0
    coefficients[:, :, 1:] = active.mu[:, None, None] * tangent_directions(active.dim, k)[None]
    return active.combine(coefficients), k


class Anitescu(Formulation):
    name: ClassVar[str] = "anitescu"
    description: ClassVar[str] = "Anitescu convex QP, polyhedral cone (primal in v' or dual in edge impulses)"
    defaults: ClassVar[Mapping[str, Any]] = {"form": "primal", "k": None, "epsilon": float("inf"),
                                             "max_recovery_speed": None, "stabilization": "feasible"}
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {"form": ("primal", "dual"),
                                                        "stabilization": ("feasible", "full")}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"], rigid=True)
        require_finite_mu(active, self.name)
        k = check_directions(options["k"], contacts.dim, self.name)
        edges = active.count * max(k, 1)  # the dual form's Delassus matrix is edges x edges
        check_allocation(float(edges) * (edges if options["form"] == "dual" else problem.nv),
                         f"{edges} edge rows ({active.count} contacts, form {options['form']})", "k", options["k"],
                         f"formulation {self.name!r}")
        J_beta, per = edge_rows(active, k)
        rows = J_beta.shape[0]
        h = problem.dt
        v_max = recovery_speed(problem, options)
        target = normal_target(active.phi, h, v_max)  # phi / h
        owner = np.repeat(np.arange(active.count), per)  # the contact of each edge
        metadata = {"formulation": self.name, "form": options["form"], "dt": h, "t": problem.state.t,
                    "k": k, "contacts": active.index.tolist(), "nv": problem.nv}
        blocks = [("cone_edges", "impulse_edges", 0, rows, per)]
        if active.angular is not None:  # torsional/rolling rows: edges n +- mu_i e_i (.angular_friction)
            extra, contact = angular_edges(active)
            J_beta = vstack_rows([J_beta, extra])
            owner = np.concatenate([owner, contact])
            blocks.append(("angular_edges", "impulse_angular_edges", rows, J_beta.shape[0], 2))
            rows = J_beta.shape[0]
        if options["stabilization"] == "feasible":
            target = feasible_target(active, J_beta, owner, target, contacts, metadata)
        rhs = target[owner]
        if options["form"] == "primal":
            return primal_program(problem, -J_beta, rhs, (Nonneg(rows),),
                                  tuple(Block(name, start, stop, size) for name, _, start, stop, size in blocks),
                                  metadata, epsilon=options["epsilon"], max_recovery_speed=v_max)
        return dual_program(problem, J_beta, J_beta @ problem.v_free + rhs, diagonal_csc(-np.ones(rows)),
                            (Nonneg(rows),),
                            tuple(Block(name, start, stop, size) for _, name, start, stop, size in blocks),
                            (Block("impulse_edges_nonneg", 0, rows, per if len(blocks) == 1 else 1),), metadata,
                            epsilon=options["epsilon"], max_recovery_speed=v_max)

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, ConicProgram)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        k = int(program.metadata["k"])
        primal = program.metadata["form"] == "primal"
        beta = program.row_block(solution.y, "cone_edges") if primal else program.variable(solution.x, "impulse_edges")
        per = max(k, 1)
        normal = beta.reshape(active.count, per).sum(axis=1)
        angular = np.zeros(0)
        if active.angular is not None:
            extra = (program.row_block(solution.y, "angular_edges") if primal
                     else program.variable(solution.x, "impulse_angular_edges"))
            extra_normal, angular = edge_impulses(active, extra)
            normal = normal + extra_normal
        frame = polyhedral_frame_impulses(active, normal, beta, k, scale=active.mu)
        if primal:
            v_next = np.array(program.variable(solution.x, "v_next"))
            bilateral = primal_bilateral_impulses(program, solution.y)
        else:
            rows, impulse = active.J, frame.reshape(-1)
            if active.angular is not None:
                rows, impulse = vstack_rows([active.J, active.angular.J]), np.concatenate([impulse, angular])
            v_next, bilateral = dual_velocity(problem, program, solution.x, rows, impulse)
        limits, friction = row_impulses(problem, program, solution.x,
                                        solution.y if program.metadata["form"] == "primal" else None)
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame),
                          bilateral=bilateral, limits=limits, friction_loss=friction,
                          angular_friction=scatter_angular(contacts, active, angular))
