"""The discrete Gauss least-constraint QP (frictionless), primal in v' and dual in impulses.

Tedrake 2022, "Time-stepping LCP: Normal force" and the QP that follows it: replacing
``qddot = (v' - v)/h`` in Gauss's principle and scaling by ``h^2``, with
``v_free = v + h M^{-1} tau`` (written ``v^-`` there), one step is

**primal** (variables ``x = v'``)::

    minimize_{v'}   1/2 (v' - v_free)^T M (v' - v_free)
    subject to      phi/h + n v' >= 0                   (one row per contact)

i.e. ``P = M``, ``c = -M v_free``, ``A = -n``, ``b = phi/h``, ``K = R_+^nc``. The row duals are
the normal impulses ``lambda`` (N·s): stationarity reads ``M (v' - v_free) = n^T lambda``.

**dual** (variables ``x = lambda``), from eliminating ``v' = v_free + M^{-1} n^T lambda``::

    minimize_{lambda >= 0}   1/2 lambda^T (n M^{-1} n^T) lambda + lambda^T (n v_free + phi/h)

whose KKT conditions are the LCP ``0 <= lambda ⟂ W lambda + n v_free + phi/h >= 0`` with the
Delassus matrix ``W = n M^{-1} n^T`` (Tedrake 2022: "the LCP for the frictionless contact
dynamics is precisely the optimality conditions of this convex QP").

Bilateral rows ``H v' = r`` enter the primal as equality rows and the dual as free
multipliers (see :mod:`contactopt.formulations.common`).

For the 1-D cart against a wall (``phi = q``, ``n = 1``) this gives the reference's
``q[n+1] = max(0, q + h v_free)`` and ``f[n] = lambda / h``.
Friction is ignored (a warning says so when mu > 0).
``phi / h`` of a penetrating contact or a violated limit is capped at ``-max_recovery_speed``
(:mod:`contactopt.formulations.recovery`: off by default except on MJCF models).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import SkippedContactWarning
from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    dual_program,
    dual_velocity,
    moving_blocks,
    primal_bilateral_impulses,
    primal_program,
    row_impulses,
)
from contactopt.formulations.recovery import normal_target, recovery_speed
from contactopt.model.step import Contacts, StepProblem
from contactopt.programs import Block, ConicProgram, Nonneg, Solution
from contactopt.programs.csc import diagonal_csc

IntArray = NDArray[np.int_]


class FrictionIgnoredWarning(UserWarning):
    """A frictionless formulation was given contacts with mu > 0."""


class Gauss(Formulation):
    name: ClassVar[str] = "gauss"
    description: ClassVar[str] = "discrete Gauss least-constraint QP, frictionless (primal or dual)"
    defaults: ClassVar[Mapping[str, Any]] = {"form": "primal", "max_recovery_speed": None}
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {"form": ("primal", "dual")}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        if contacts.dim > 1 and np.any(contacts.mu > 0):
            warnings.warn("formulation 'gauss' is frictionless: mu > 0 is ignored",
                          FrictionIgnoredWarning, stacklevel=3)
        h = problem.dt
        v_max = recovery_speed(problem, options)
        target = normal_target(contacts.phi, h, v_max)  # phi / h
        n = contacts.J_normal
        metadata = {"formulation": self.name, "form": options["form"], "dt": h,
                    "t": problem.state.t, "contacts": n.shape[0], "nv": n.shape[1]}
        kept = _moving_normals(contacts)
        if kept is not None:  # a zero normal row reads phi/h >= 0: infeasible when penetrating
            n, target = n[kept], target[kept]
            metadata["rows"] = kept.tolist()
        nc = n.shape[0]
        if options["form"] == "primal":
            return primal_program(problem, -n, target, (Nonneg(nc),),
                                  (Block("nonpenetration", 0, nc),), metadata, max_recovery_speed=v_max)
        return dual_program(problem, n, n @ problem.v_free + target, diagonal_csc(-np.ones(nc)),
                            (Nonneg(nc),), (Block("impulse_normal", 0, nc),),
                            (Block("impulse_nonneg", 0, nc),), metadata, max_recovery_speed=v_max)

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, ConicProgram)
        contacts = problem.contacts
        rows = np.asarray(program.metadata.get("rows", np.arange(contacts.count)), dtype=np.int_)
        if program.metadata["form"] == "primal":
            v_next = np.array(program.variable(solution.x, "v_next"))
            normal = program.row_block(solution.y, "nonpenetration")
            bilateral = primal_bilateral_impulses(program, solution.y)
        else:
            normal = program.variable(solution.x, "impulse_normal")
            v_next, bilateral = dual_velocity(problem, program, solution.x, contacts.J_normal[rows], normal)
        impulses = np.zeros((contacts.count, contacts.dim))
        impulses[rows, 0] = normal
        limits, friction = row_impulses(problem, program, solution.x,
                                        solution.y if program.metadata["form"] == "primal" else None)
        return StepResult(v_next=v_next, impulses=impulses, bilateral=bilateral, limits=limits,
                          friction_loss=friction)


def _moving_normals(contacts: Contacts) -> IntArray | None:
    """The contacts whose normal row moves something (:func:`.common.moving_blocks`, rigid), or
    None when every one does. A zero normal row (a contact whose point lies on a hinge's axis
    with its normal along the lever arm, or two geoms of one welded body) reads
    ``phi/h + 0 v' >= 0``: nothing in the step can satisfy it when ``phi < 0``, and its impulse
    acts only through ``n^T lambda = 0``, so it is left out (zero impulse in the record, with the
    :class:`~contactopt.core.errors.SkippedContactWarning` the other formulations give)."""
    moving = moving_blocks(contacts, np.arange(contacts.count), rigid=True)
    if moving.all():
        return None
    warnings.warn(f"{int((~moving).sum())} contact(s) left out: their normal row is zero (it moves no degree "
                  "of freedom), so they get zero impulse", SkippedContactWarning, stacklevel=4)
    return np.flatnonzero(moving)
