"""The exact Coulomb problem of a step: Signorini's condition, Coulomb's cone and maximum
dissipation, with no relaxation, as a :class:`~contactopt.programs.coulomb.CoulombProgram`.

Tedrake 2022, "Time-stepping LCP: Coulomb Friction" states the law with a polyhedral cone;
with the exact cone ``C_mu = {||r_T|| <= mu r_N}`` and De Saxcé's modified velocity (De Saxcé
& Feng, "New inequality and functional for contact with friction", 1991; Acary, Cadoux,
Lemaréchal & Malick, ZAMM 91 (2011)) it is one cone complementarity problem in FCLIB's local
form: find impulses ``r`` (normal first per contact) with ::

    u = W r + q,    û_c = u_c + [mu_c ||u_cT||, 0(, 0)],    C*_mu ∋ û ⟂ r ∈ C_mu
    W = J M^-1 J^T,    q = J v_free + [phi_c / h, 0(, 0)],    v' = v_free + M^-1 J^T r

(``W`` and ``q`` are exactly the ``ccp`` formulation's dual program's ``P`` and ``c``, built
by the same :func:`~contactopt.formulations.common.dual_program`; ``phi / h`` capped at
``-max_recovery_speed`` as there, :mod:`contactopt.formulations.recovery`). ``u_cN = 0``
while a contact slides with a normal impulse: no hover, where the ``ccp`` relaxation (the same
problem without ``mu_c ||u_cT||``) lifts sliding contacts by ``h mu ||u_T||``. The problem is
**not convex**: ``r -> û`` is not monotone (the term ``mu ||u_T||`` couples the normal row to
the tangential velocity), so it is the optimality condition of no convex program, may have
several solutions, and exists only under conditions on ``mu`` (Acary et al. 2011, section 3).
The solvers that take it: ``fixed_point`` (a sequence of CCPs), ``lemke`` through its
pyramidal LCP (:mod:`contactopt.programs.coulomb_lcp`), and the nonsmooth solvers registered
for the kind ``coulomb``.

**Other rows.** Bilateral rows ``H v' = t`` (free multipliers ``lambda``) are eliminated
exactly: :func:`dual_program` gives ``P = K M^-1 K^T`` over ``[contacts; H; limits]``, whose
``lambda`` rows read ``V^T x + S lambda + c_b = 0`` (``S = H M^-1 H^T``, ``c_b = H v_free - t``),
so ``lambda = -S^+ (V^T x + c_b)`` and ::

    W = P_xx - V S^+ V^T,    q = c_x - V S^+ c_b

(the Schur complement, as the ``lcp`` formulation's projected inverse inertia; ``S^+`` the
pseudo-inverse where rows are redundant). ``recover`` computes ``lambda`` again from the
impulses (:class:`contactopt.formulations.lcp.Constrained`). Unilateral limit rows
(``phi_j / h + G_j v' >= 0``) are contacts with ``mu = 0``, padded with zero tangent rows to
``dim`` (a frictionless contact: ``r_T = 0``). ``dim`` is the system's contact dimension (3,
or 2 for planar systems; normal-only contacts are padded to 2 with ``mu = 0``).
Dry-friction (``frictionloss``) rows and the torsional/rolling rows of MJCF condim 4 and 6
have no place in a Coulomb problem of ``dim`` rows per contact: a model that declares them
(geom condim, dof or tendon frictionloss) is refused before step 0, naming the geoms, dofs
or tendons (``refuses``, :mod:`contactopt.integrators.capabilities`), and any such row is
refused again when a program is built (:func:`contactopt.formulate`). The
formulation has no restitution (as the other rigid ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    ActiveContacts,
    active_contacts,
    dual_program,
    limit_index,
    require_finite_mu,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.constraint_rows import raise_refusal
from contactopt.formulations.lcp import Constrained
from contactopt.formulations.recovery import normal_target, recovery_speed
from contactopt.model.step import StepProblem
from contactopt.programs import Block, Solution
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.csc import symmetric_part
from contactopt.systems.mjcf.candidates import ANGULAR_FRICTION, FRICTION_LOSS

FloatArray = np.ndarray


class CoulombFormulation(Formulation):
    name: ClassVar[str] = "coulomb"
    description: ClassVar[str] = "exact Coulomb friction (De Saxce's cone complementarity, FCLIB's problem), nonconvex"
    defaults: ClassVar[Mapping[str, Any]] = {"epsilon": float("inf"), "max_recovery_speed": None}
    refuses: ClassVar[Mapping[str, str]] = {
        FRICTION_LOSS: "their impulse is bounded by a constant h * bound, not by a normal impulse, so they are no "
                       "Coulomb contact (use ccp, lcp or sap)",
        ANGULAR_FRICTION: "their cone has 3 + m rows per contact, FCLIB's Coulomb problem 3 (use ccp, or the "
                          "system option extra_friction = 'sliding')"}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"], rigid=True)
        require_finite_mu(active, self.name)
        _refuse_rows(problem, active)
        given, h = contacts.dim, problem.dt
        dim = max(given, 2)
        rows = active.count * given
        normal_rhs = np.zeros(rows)
        v_max = recovery_speed(problem, options)
        normal_rhs[::given] = normal_target(active.phi, h, v_max)  # phi / h
        relaxed = dual_program(problem, active.J, active.J @ problem.v_free + normal_rhs, sp.csc_matrix((0, 0)), (),
                               (Block("impulse", 0, rows, given),), (), {}, epsilon=options["epsilon"],
                               max_recovery_speed=v_max)
        nh, limits = problem.bilateral.count, limit_index(problem, options["epsilon"])
        W, q = _eliminate_bilateral(relaxed.P, relaxed.c, rows, nh)
        # contact rows in place, each limit row a contact of its own; zero tangent rows to dim
        kept = np.concatenate([(np.arange(active.count)[:, None] * dim + np.arange(given)).reshape(-1),
                               (active.count + np.arange(limits.shape[0])) * dim])
        m = (active.count + limits.shape[0]) * dim
        if kept.shape[0] != m or not np.array_equal(kept, np.arange(m)):
            place = sp.csc_matrix((np.ones(kept.shape[0]), (kept, np.arange(kept.shape[0]))), shape=(m, kept.shape[0]))
            W, q = place @ W @ place.T, place @ q
        mu = np.concatenate([active.mu if given > 1 else np.zeros(active.count), np.zeros(limits.shape[0])])
        variables = (Block("impulse", 0, active.count * dim, dim),
                     *((Block("limits", active.count * dim, m, dim),) if limits.shape[0] else ()))
        metadata = {"formulation": self.name, "dt": h, "t": problem.state.t, "contacts": active.index.tolist(),
                    "nv": problem.nv, "limits": limits.tolist(), "bilateral": nh, "contact_dim": given}
        return CoulombProgram(W=sp.csc_matrix(W), q=np.asarray(q, dtype=np.float64).reshape(-1), mu=mu, dim=dim,
                              variables=variables, metadata=metadata)

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, CoulombProgram)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        given, dim = contacts.dim, program.dim
        r = np.asarray(solution.x, dtype=np.float64)
        frame = r[: active.count * dim].reshape(active.count, dim)[:, :given]
        limits = np.zeros(problem.unilateral.count)
        index = np.asarray(program.metadata["limits"], dtype=np.int_)
        if index.size:
            limits[index] = program.variable(r, "limits")[::dim]
        generalized = active.J.T @ frame.reshape(-1) + problem.unilateral.G.T @ limits
        constrained = Constrained(problem)
        v_next = constrained.v_free + constrained.solve_M(generalized)
        return StepResult(v_next=np.asarray(v_next, dtype=np.float64),
                          impulses=scatter_impulses(contacts, active, frame),
                          bilateral=constrained.multipliers(generalized), limits=limits,
                          friction_loss=np.zeros(problem.friction_loss.count))


def _eliminate_bilateral(P: sp.csc_matrix, c: FloatArray, rows: int, nh: int) -> tuple[Any, FloatArray]:
    """``(W, q)`` over ``[contacts; limits]`` of the dual program ``(P, c)`` over
    ``[contacts (rows); bilateral (nh); limits]``: the Schur complement of the module docstring."""
    if not nh:
        return P, c
    bilateral = np.arange(rows, rows + nh)
    kept = np.r_[np.arange(rows), np.arange(rows + nh, P.shape[0])]
    S = P[bilateral][:, bilateral].toarray()
    V = P[kept][:, bilateral].toarray()
    S_pinv = np.linalg.pinv(S)
    W = P[kept][:, kept] - sp.csc_matrix(V @ S_pinv @ V.T)
    return symmetric_part(sp.csc_matrix(W)), c[kept] - V @ (S_pinv @ c[bilateral])


def _refuse_rows(problem: StepProblem, active: ActiveContacts) -> None:
    """The rows a Coulomb problem of ``dim`` rows per contact cannot hold, refused by name."""
    name = CoulombFormulation.name
    why = CoulombFormulation.refuses
    if problem.friction_loss.count:
        raise_refusal(name, f"{problem.friction_loss.count} dry-friction (frictionloss) row(s): {why[FRICTION_LOSS]}")
    if active.angular is not None:
        raise_refusal(name, f"{active.angular.count} torsional/rolling friction row(s) (MJCF condim 4/6): "
                            f"{why[ANGULAR_FRICTION]}")
