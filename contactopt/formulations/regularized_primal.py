"""The primal of the ``regularized`` (MuJoCo-style) formulation: its ``form = "primal"``.

The regularized dual of :mod:`contactopt.formulations.regularized`::

    minimize_{lambda in FC}  1/2 lambda^T (J M~^{-1} J^T + R) lambda + lambda^T (J v^- - v*_ref)

is the Lagrangian dual of SAP's unconstrained primal (S1) of
:mod:`contactopt.programs.primal` with ``A = M~`` (the damped inertia), ``v* = v^-``,
``v_hat = v*_ref`` (MuJoCo's reference velocity) and the same ``J``, ``R`` and cone
(elliptic: the friction cone; pyramidal: edge impulses ``>= 0``); bilateral rows are free
with their own regularization and ``v_hat = r``. MuJoCo's own constraint solver is a Newton
method on this primal (Todorov 2014). Both programs have the same ``v'`` and impulses:
``lambda = gamma``. This module builds the conic form (S6) of that primal from the same
quantities the dual uses (impedance, reference gains, ``R``), so that the ``newton`` solver
takes the regularized step too; the equality of the two forms' answers is tested. Dry-friction
rows (``frictionloss``) are box rows with the dual's ``R`` and reference velocity (Huber terms,
:mod:`contactopt.programs.primal`, "Box rows"); torsional and rolling rows take
:mod:`contactopt.formulations.regularized_angular`'s rows. A pyramid edge whose row moves no
degree of freedom (``R = 0``: the primal's ``R^{-1}`` is undefined) is left out: its impulse
is 0, which is what the dual gives it too since ``J^T lambda`` is all it acts through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.formulations import regularized_angular
from contactopt.formulations.angular_friction import primal_cone
from contactopt.formulations.base import StepResult
from contactopt.formulations.common import (
    ZERO_BLOCK_RTOL,
    ActiveContacts,
    active_contacts,
    limit_index,
    require_finite_mu,
    row_max,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.regularized_rows import (
    damped_dynamics,
    impedance,
    own_compliance_rows,
    pyramid_edges,
    reference_gains,
    row_terms,
    soft_rows,
)
from contactopt.formulations.sap import contact_rows, primal_step, recover_primal
from contactopt.model.step import StepProblem
from contactopt.programs import ConicProgram, Nonneg, Solution
from contactopt.programs.csc import rows_of
from contactopt.programs.primal import PrimalConicProgram

FloatArray = np.ndarray


def build(problem: StepProblem, options: Mapping[str, Any], name: str = "regularized") -> PrimalConicProgram:
    """The conic form of the regularized step's primal (same data as the dual)."""
    contacts = problem.contacts
    active = active_contacts(contacts, options["epsilon"])
    require_finite_mu(active, name)
    h = problem.dt
    damped, v_minus = damped_dynamics(problem, options["b"])
    d = impedance(active.phi, options["solimp"])
    solref = options["solref"] if options["solref"] is not None else (2.0 * h, 1.0)
    b_ref, k_ref = reference_gains(solref, options["solimp"][1], d, h, options["refsafe"])
    if options["cone"] == "elliptic":
        J, per = active.J, contacts.dim
        position = np.zeros((active.count, per))
        position[:, 0] = active.phi
        friction_row = np.tile(np.arange(per) > 0, active.count)
        rows, scale, cones = contact_rows(active.mu, per)
    else:
        J, per = pyramid_edges(active)
        position = np.repeat(active.phi, per).reshape(active.count, per)
        friction_row = np.zeros(J.shape[0], dtype=bool)
        rows = np.arange(J.shape[0])
        scale, cones = np.ones(J.shape[0]), ((Nonneg(J.shape[0]),) if J.shape[0] else ())  # one block: the same set
    R, v_ref, R_eq = soft_rows(problem, options, damped, J, per, d, b_ref, k_ref, position, friction_row)
    own_compliance_rows(problem, active, damped, J, per, options["cone"] == "elliptic", options["impratio"], R, v_ref)
    metadata = {"formulation": name, "form": "primal", "cone": options["cone"], "dt": h, "t": problem.state.t,
                "solref": list(solref), "contacts": active.index.tolist(), "nv": problem.nv, "per": per,
                "impedance": d.tolist(), "b": options["b"]}
    if active.angular is not None:  # torsional/rolling rows (condim 4, 6): .regularized_angular's rows
        J, contact, normal, friction = regularized_angular.contact_rows(active, options["cone"])
        _, _, R, v_ref, R_eq, _ = regularized_angular.soft_terms(problem, options, active, J, contact, normal, friction)
        rows, scale, cones = np.arange(J.shape[0]), np.ones(J.shape[0]), (Nonneg(J.shape[0]),)
        if options["cone"] == "elliptic":
            cone = primal_cone(active)
            rows, scale, cones = cone.keep, cone.scale, cone.cones
        metadata["angular_rows"] = int(J.shape[0])
    if options["cone"] == "pyramidal":  # an edge that moves nothing has R = 0 and no impulse: no row
        moving = np.flatnonzero(row_max(rows_of(J, rows)) > ZERO_BLOCK_RTOL * float(row_max(active.J).max(initial=0.0)))
        if moving.shape[0] < rows.shape[0]:
            metadata["edge_count"], metadata["edge_rows"] = int(rows.shape[0]), moving.tolist()
            rows, scale, cones = rows[moving], scale[moving], ((Nonneg(moving.shape[0]),) if moving.shape[0] else ())
    (limit_c, limit_R), (friction_c, friction_R) = row_terms(problem, options, damped, v_minus, solref)
    index = limit_index(problem, options["epsilon"])
    limit_ref = problem.unilateral.G[index] @ v_minus - limit_c  # the dual's linear term is J v^- - v_ref
    friction_ref = problem.friction_loss.F @ v_minus - friction_c
    return primal_step(problem, damped, v_minus, rows_of(J, rows), R[rows], v_ref[rows], scale, cones, R_eq, metadata,
                       (index, limit_R, limit_ref), (friction_R, friction_ref))


def all_edges(program: ConicProgram, values: FloatArray) -> FloatArray:
    """The pyramid's edge impulses with the edges left out of the program (they move nothing) at 0."""
    if "edge_rows" not in program.metadata:
        return values
    full = np.zeros(program.metadata["edge_count"])
    full[np.asarray(program.metadata["edge_rows"], dtype=np.int_)] = values
    return full


def recover(problem: StepProblem, program: ConicProgram, solution: Solution) -> StepResult:
    """``v'`` and the frame impulses (pyramid edges ``(n + mu t_j, n - mu t_j)`` summed)."""
    contacts = problem.contacts
    active = select_contacts(contacts, program.metadata["contacts"])
    if program.metadata["cone"] == "elliptic":
        return recover_primal(problem, program, solution, active.index, contact_rows(active.mu, contacts.dim)[0])
    nh = program.metadata.get("bilateral", 0)
    sigma = program.variable(solution.x, "sigma")
    if program.metadata.get("angular_rows"):
        return recover_pyramid_with_angular(problem, program, solution, active)
    per = program.metadata["per"]
    limit_rows = np.asarray(program.metadata.get("limits", []), dtype=np.int_)
    nu = limit_rows.shape[0]
    limits = np.zeros(problem.unilateral.count)
    limits[limit_rows] = sigma[nh:nh + nu]
    beta = all_edges(program, sigma[nh + nu:sigma.shape[0] - int(program.metadata.get("friction_loss", 0))])
    beta = beta.reshape(active.count, per)
    frame = np.zeros((active.count, contacts.dim))
    frame[:, 0] = beta.sum(axis=1)
    if contacts.dim > 1:
        frame[:, 1:] = active.mu[:, None] * (beta[:, 0::2] - beta[:, 1::2])
    nf = int(program.metadata.get("friction_loss", 0))
    return StepResult(v_next=np.array(program.variable(solution.x, "v_next")),
                      impulses=scatter_impulses(contacts, active, frame), bilateral=np.array(sigma[:nh]),
                      limits=limits, friction_loss=np.array(sigma[sigma.shape[0] - nf:]))


def recover_pyramid_with_angular(problem: StepProblem, program: ConicProgram, solution: Solution,
                                 active: ActiveContacts) -> StepResult:
    """The pyramidal primal's impulses when angular edges follow the pyramid's (.regularized_angular)."""
    return recover_primal(problem, program, solution, active.index, np.zeros(0, dtype=np.int_),
                          lambda values: regularized_angular.impulses_of(active, "pyramidal",
                                                                         all_edges(program, values)))
