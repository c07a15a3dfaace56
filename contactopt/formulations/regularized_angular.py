"""The ``regularized`` (MuJoCo-style) step with torsional and rolling friction (MJCF condim 4
and 6), both forms and both cones: MuJoCo's own treatment of those rows (MuJoCo
documentation, "Computation: contact"; Todorov 2014).

The dual of :mod:`contactopt.formulations.regularized` over the rows ``K`` below::

    minimize_{lambda in FC}  1/2 lambda^T (K M~^{-1} K^T + R) lambda + lambda^T (K v^- - v*_ref)

* ``cone = "elliptic"``: per contact the rows ``[n, t1, t2, e_1, ..]`` (its angular rows
  ``e_i`` after its frame rows) and ``FC`` MuJoCo's elliptic cone ``lambda_n >= ||(lambda_t /
  mu, lambda_i / mu_i)||`` (:func:`.angular_friction.cone_rows`, :func:`.angular_friction.dual_cone`);
* ``cone = "pyramidal"``: the pyramid's edges ``n +- mu t_j`` then ``n +- mu_i e_i`` for every
  angular row (:func:`.angular_friction.angular_edges`), ``FC`` the nonnegative orthant.

Each row takes its contact's impedance ``d(phi)`` and reference gains; the position term of
``a_ref`` is ``phi`` on normal rows and pyramid edges, 0 on friction rows (``R`` divided by
``impratio`` there), exactly as the 3-row frames (:func:`.regularized_rows.soft_rows`, per row).
The primal form (``form = "primal"``) is the same program's unconstrained primal
(:mod:`contactopt.formulations.regularized_primal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.formulations.angular_friction import (
    angular_edges,
    cone_rows,
    dual_cone,
    edge_impulses,
    scatter_angular,
    vstack_rows,
)
from contactopt.formulations.base import StepResult
from contactopt.formulations.common import (
    ActiveContacts,
    dual_program,
    dual_velocity,
    row_impulses,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.regularized_rows import (
    damped_dynamics,
    impedance,
    pyramid_edges,
    reference_gains,
    row_terms,
    soft_rows,
)
from contactopt.model.step import Matrix, StepProblem
from contactopt.programs import Block, ConicProgram, Nonneg, Solution
from contactopt.programs.csc import diagonal_csc

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


def contact_rows(active: ActiveContacts, cone: str, normal_units: bool = False
                 ) -> tuple[Matrix, IntArray, NDArray[np.bool_], NDArray[np.bool_]]:
    """``(rows, contact of each row, normal-position rows, friction rows)`` in program order
    (elliptic: angular rows in the normal row's units with ``normal_units``, as the dual takes them)."""
    if cone == "elliptic":
        rows = cone_rows(active, normal_units)
        contact = np.repeat(np.arange(active.count), rows.dims)
        normal = np.zeros(contact.shape[0], dtype=bool)
        normal[rows.frame[:, 0]] = True
        return rows.rows, contact, normal, ~normal
    edges, per = pyramid_edges(active)
    extra, extra_contact = angular_edges(active)
    contact = np.concatenate([np.repeat(np.arange(active.count), per), extra_contact])
    every = np.ones(contact.shape[0], dtype=bool)
    return vstack_rows([edges, extra]), contact, every, ~every


def soft_terms(problem: StepProblem, options: Mapping[str, Any], active: ActiveContacts, rows: Matrix,
               contact: IntArray, normal: NDArray[np.bool_], friction: NDArray[np.bool_]
               ) -> tuple[Any, FloatArray, FloatArray, FloatArray, FloatArray, tuple[float, float]]:
    """``(damped dynamics, v^-, R, v*_ref, R_eq, solref)`` of ``rows``, per row from its contact."""
    h = problem.dt
    damped, v_minus = damped_dynamics(problem, options["b"])
    d = impedance(active.phi, options["solimp"])
    solref = options["solref"] if options["solref"] is not None else (2.0 * h, 1.0)
    b_ref, k_ref = reference_gains(solref, options["solimp"][1], d, h, options["refsafe"])
    position = np.where(normal, active.phi[contact], 0.0)
    R, v_ref, R_eq = soft_rows(problem, options, damped, rows, 1, d[contact], b_ref, k_ref[contact], position,
                               friction, owner=contact)
    return damped, v_minus, R, v_ref, R_eq, solref


def build_dual(problem: StepProblem, options: Mapping[str, Any], active: ActiveContacts,
               name: str) -> ConicProgram:
    """The dual (module docstring) of a step whose contacts have angular rows."""
    rows, contact, normal, friction = contact_rows(active, options["cone"], normal_units=True)
    damped, v_minus, R, v_ref, R_eq, solref = soft_terms(problem, options, active, rows, contact, normal, friction)
    m = rows.shape[0]
    if options["cone"] == "elliptic":
        A_rows, cones = dual_cone(active, cone_rows(active, normal_units=True))
        variables: tuple[Block, ...] = (Block("impulse", 0, m),)
    else:
        A_rows, cones = diagonal_csc(-np.ones(m)), (Nonneg(m),)
        main = m - 2 * (active.angular.count if active.angular is not None else 0)
        variables = (Block("impulse_edges", 0, main), Block("impulse_angular_edges", main, m, 2))
    metadata = {"formulation": name, "cone": options["cone"], "dt": problem.dt, "t": problem.state.t,
                "solref": list(solref), "contacts": active.index.tolist(), "nv": problem.nv,
                "b": options["b"], "angular_rows": m}
    limit_terms, friction_terms = row_terms(problem, options, damped, v_minus, solref)
    return dual_program(problem, rows, rows @ v_minus - v_ref, A_rows, cones, variables,
                        (Block("impulse_in_cone", 0, m),), metadata, dynamics=damped, v_free=v_minus,
                        regularization=R, bilateral_regularization=R_eq, epsilon=options["epsilon"],
                        limit_terms=limit_terms, friction_terms=friction_terms)


def impulses_of(active: ActiveContacts, cone: str, values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(frame impulses (na, 3), angular impulses)`` of the contact rows' values in program order."""
    if cone == "elliptic":
        rows = cone_rows(active, normal_units=True)
        return values[rows.frame], values[rows.angular] * rows.angular_scale
    m = active.angular.count if active.angular is not None else 0
    main = values.shape[0] - 2 * m
    per = main // max(active.count, 1)
    beta = values[:main].reshape(active.count, per)
    frame = np.zeros((active.count, 3))
    extra_normal, angular = edge_impulses(active, values[main:])
    frame[:, 0] = beta.sum(axis=1) + extra_normal
    frame[:, 1:] = active.mu[:, None] * (beta[:, 0::2] - beta[:, 1::2])  # edges (n + mu t_j, n - mu t_j)
    return frame, angular


def recover_dual(problem: StepProblem, program: ConicProgram, solution: Solution) -> StepResult:
    contacts = problem.contacts
    active = select_contacts(contacts, program.metadata["contacts"])
    damped, v_minus = damped_dynamics(problem, program.metadata["b"])
    m = int(program.metadata["angular_rows"])
    values = np.asarray(solution.x[:m], dtype=np.float64)
    rows = contact_rows(active, program.metadata["cone"], normal_units=True)[0]
    v_next, bilateral = dual_velocity(problem, program, solution.x, rows, values, dynamics=damped, v_free=v_minus)
    frame, angular = impulses_of(active, program.metadata["cone"], values)
    limits, friction = row_impulses(problem, program, solution.x, None)
    return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame), bilateral=bilateral,
                      limits=limits, friction_loss=friction,
                      angular_friction=scatter_angular(contacts, active, angular))
