r"""The discrete energy balance of a time-stepping run: energy change minus the work the
contacts may legitimately do (friction and impact dissipation).

Derivation (semi-implicit Euler, docs/architecture.md's conventions; Tedrake 2022, "Time-stepping LCP").
One step from ``(q, v)`` to ``(q', v')`` solves

    M (v' - v) = h tau + J^T r + H^T lambda,        q' = q + h N(q) v',

with ``M, tau, J, H`` evaluated at ``(q, v)``, ``r`` the contact impulses (normal first) and
``lambda`` the bilateral impulses. For a symmetric ``M``, the kinetic energy change is the
algebraic identity

    1/2 v'^T M v' - 1/2 v^T M v = (v' - v)^T M v̄ = h tau·v̄ + r·(J v̄) + lambda·(H v̄),
    v̄ = (v + v') / 2.

So the **midpoint velocity** ``v̄`` is the one that makes the impulse work exact: with the
end-of-step velocity ``v'`` (the one in the programs' constraints) the sum ``r·J v'`` misses
``1/2 (v' - v)^T M (v' - v)`` per step (for the box slide ``1/2 m (mu g h)^2``, 1.2e-5 J per step
at h = 1e-3: 2.5e-3 J over the slide), with ``v`` it overshoots by as much. For a potential that
is linear in the position (uniform gravity, ``tau_g = -grad V``) the potential change is
``V(q') - V(q) = -h tau_g·v'``, and the mechanical energy ``E = T + V`` changes by

    E' - E = r·(J v̄) + lambda·(H v̄) + h (tau - tau_g)·v̄ - (h/2) tau_g·(v' - v).

The last term is semi-implicit Euler's own error (zero when the velocity along gravity does
not change, as for a box sliding on level ground; ``-1/2 m g^2 h^2`` per step of free fall).
The identity is exact when ``M`` does not depend on ``q`` over the step (translation); a
rotating body whose world-frame inertia changes adds ``1/2 v'^T (M(q') - M(q)) v'``.

Admissible contact work. A Coulomb contact obeying Signorini's condition never does
positive work: the friction work ``r_t·(J_t v̄) <= 0`` (maximum dissipation) and the normal work
``r_n (J_n v̄) <= 0`` (0 at a persistent contact, the impact loss ``r_n v_n / 2`` when it closes).
Per step the **dissipation** is

    D = sum_c [ min(0, r_t,c·ū_t,c) + min(0, r_n,c ū_n,c) ],      ū_c = J_c v̄,

and the **energy balance** after ``k`` steps is

    B_k = E_k - E_0 - sum_{i<k} D_i      [J].

A formulation that conserves energy correctly reads ``B = 0`` (to round-off for the Stewart-
Trinkle LCP solved by Lemke on the box slide). Positive contact work is not subtracted, so
it shows: Anitescu's relaxation lifts a sliding contact (``u_n' = mu |u_t'|``, its normal
impulse does work ``r_n ū_n > 0``: the hydroplaning launch), friction pushing along the slip,
the work of bilateral impulses (Baumgarte stabilization, a driven joint) and semi-implicit
Euler's ``-(h/2) tau_g·(v' - v)``. Non-conservative non-contact forces that the system does
not name (below) show too.

Non-contact work. ``tau - tau_g`` holds the forces that the energy does not: actuators (``B u``,
MuJoCo's ``qfrc_actuator``), applied forces, dampers (``qfrc_passive`` less the springs, whose
potential is in ``E`` as gravity's is) and the velocity-product terms. A system that names the
first three (a ``nonpotential_force(q, v)`` method ``f``, evaluated with the step's control;
MJCF: :func:`contactopt.systems.mjcf.derivatives.nonpotential_force`) has their work counted at the
same ``v̄``, with the implicit part of its step (``S = M - h D``,
:meth:`~contactopt.systems.base.System.step_dynamics`: ``M (v' - v) = h tau + (M - S)(v' - v) +
J^T r``, damping and ``kv`` at ``v'``) and the impulses ``sigma`` of the joint limit and
dry-friction rows ``G`` (their work as it is):

    W = h f·v̄ + ((M - S)(v' - v))·v̄ + sum sigma·(G v̄),

and the balance subtracts it: ``B_k = E_k - E_0 - sum_{i<k} (D_i + W_i)``. With ``f``, ``S`` and
``G`` exact the balance of such a step stays what it is without them (semi-implicit Euler's own
error, ``M(q)``'s change, inadmissible contact work).

Impacts recorded by the event-driven ``hybrid`` method (``StepRecord.impacts``, each with
``v-`` and ``v+``) are counted exactly instead: an impact's work is the kinetic energy change
``1/2 (v+ - v-)^T M (v+ + v-)`` (M at the step's start; the same identity, over the impact),
admissible when <= 0 (restitution e <= 1), and the rest of the record's impulse works at
``v̄``. For the other continuous-time methods (``ode``, ``compliant``) the record's impulse is
the integral over the step and ``v̄`` an approximation of the velocity it acted at: their
balance is accurate to O(h) per step in contact, not to round-off.

**Variational rows** (``formulation="variational"``; :mod:`contactopt.integrators.variational_contact`)
have their own identity. Their impulse acts at the knot ``q_k``: ``p_k^+ = p_k + J(q_k)^T r``,
and the rest of the step is the contact-free discrete Euler-Lagrange step from ``(q_k,
p_k^+)``. For a constant ``M`` and a potential linear in ``q`` (uniform gravity, ``F = -grad
U``) the step is ``M vd = p_k + J^T r + h/2 F``, ``p_k+1 = M vd + h/2 F``, and exactly

    E_k+1 - E_k = (hF + J^T r)·v̄ - h F·vd = r·J (v_k + v_k^+) / 2,    v_k^+ = v_k + M(q_k)^{-1} J^T r,

the kinetic energy change across the knot's impulse (``v̄ - vd = -M^{-1} J^T r / 2``); with
``M(q)`` or a curved potential it holds up to the DEL's bounded O(h^2) energy oscillation (the
free Lie-group rigid body: to rounding). So a variational row's impulses work at
:func:`knot_mean_velocity` ``(v_k + v_k^+) / 2`` instead of ``v̄``, and its balance reads 0 for
a step that keeps the DEL's law, as the time-stepping rows' does (the bouncing ball: 1e-11 J;
charged at ``v̄`` instead it read 0.070 J, and 0.19 J on the box slide at h = 1e-2, whose
resting weight impulse ``m g h`` worked against the DEL's rest momentum ``-h/2 g``). Positive
contact work still shows: the relaxations' hover, the DEL's start from ``v = 0`` on the ground
(its first impulse does ``1/2 m (g h / 2)^2`` to reach the rest momentum), and, at a
multi-contact impact with restitution, a corner pushed apart faster than Newton's law asks
while the others dissipate more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["applied_work", "balance", "dissipation", "impacts", "knot_mean_velocity", "step_applied_work"]


def impacts(record: StepRecord, M: Any) -> tuple[FloatArray, FloatArray]:
    """``(rest, [work, admissible])``: the record's impulses less those of its recorded
    impacts (which then work at ``v̄``), and the impacts' total kinetic-energy change and its
    admissible part ``sum_k min(0, work_k)`` [J]. No impacts: the impulses as they are, zeros."""
    rest = np.array(record.impulses, dtype=np.float64, copy=True)
    totals = np.zeros(2)
    for impact in record.impacts:
        dv, sv = impact.v_post - impact.v_pre, impact.v_post + impact.v_pre
        work = 0.5 * float(dv @ (M @ sv))
        totals += (work, min(0.0, work))
        if impact.impulses.shape[1] <= rest.shape[1] and impact.contacts.size:
            rest[impact.contacts, : impact.impulses.shape[1]] -= impact.impulses
    return rest, totals


def applied_work(force: FloatArray | None, M: Any, step_matrix: Any, rows: list[tuple[Any, FloatArray]],
                 v: FloatArray, v_next: FloatArray, h: float) -> float:
    """``W = h f·v̄ + ((M - S)(v' - v))·v̄ + sum sigma·(G v̄)`` [J] (module docstring): the work of
    the non-potential forces ``force`` (None: none named), of the implicit part of the step matrix
    ``S`` and of the row impulses ``(G, sigma)`` over one step."""
    v_mid = 0.5 * (v + v_next)
    work = 0.0 if force is None else h * float(np.asarray(force) @ v_mid)
    if step_matrix is not M:
        work += float(np.asarray((M - step_matrix) @ (v_next - v)).reshape(-1) @ v_mid)
    for G, sigma in rows:
        work += float(np.asarray(sigma) @ np.asarray(G @ v_mid).reshape(-1))
    return work


def step_applied_work(system: System, record: StepRecord, q: FloatArray, v: FloatArray, v_next: FloatArray,
                      h: float) -> float:
    """:func:`applied_work` of one recorded step from ``(q, v)`` to ``v_next``, with the step's
    control held; ``f`` from the system's ``nonpotential_force(q, v)`` where it has one (MJCF:
    :func:`contactopt.systems.mjcf.derivatives.nonpotential_force`), the limit and dry-friction rows
    where the record's impulses match the system's rows at ``q``."""
    if record.control.size:
        system.set_control(record.control)
    named = getattr(system, "nonpotential_force", None)
    force = None if named is None else np.asarray(named(q, v), dtype=np.float64)
    rows: list[tuple[Any, FloatArray]] = []
    if record.limits.size:
        limits = system.limits(q)
        if limits.count == record.limits.shape[0]:
            rows.append((limits.G, record.limits))
    if record.friction_loss.size:
        friction = system.friction_loss(q)
        if friction.F.shape[0] == record.friction_loss.shape[0]:
            rows.append((friction.F, record.friction_loss))
    if force is None and not rows:
        return 0.0
    dynamics = system.dynamics(q, v)
    return applied_work(force, dynamics.M, system.step_dynamics(dynamics, h).M, rows, v, v_next, h)


def knot_mean_velocity(solve_M: Callable[[FloatArray], FloatArray], J: Any, r: FloatArray,
                       v: FloatArray) -> FloatArray:
    """``(v_k + v_k^+) / 2 = v_k + M(q_k)^{-1} J^T r / 2``: the velocity a variational step's
    impulse ``r`` works at (module doc, "Variational rows"); ``solve_M``: ``M(q_k)^{-1} rhs``."""
    impulse = np.asarray(J.T @ np.asarray(r, dtype=np.float64).reshape(-1), dtype=np.float64).reshape(-1)
    return np.asarray(v + 0.5 * np.asarray(solve_M(impulse), dtype=np.float64), dtype=np.float64)


def dissipation(r: FloatArray, u_mid: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per contact row: the total impulse work ``r·ū`` and the admissible part
    ``min(0, r_t·ū_t) + min(0, r_n ū_n)`` [J] (``r``, ``u_mid`` (m, dim), normal first)."""
    normal = r[:, 0] * u_mid[:, 0]
    tangential = np.einsum("ij,ij->i", r[:, 1:], u_mid[:, 1:])
    return normal + tangential, np.minimum(normal, 0.0) + np.minimum(tangential, 0.0)


def balance(energy: FloatArray, n_steps: int, step: IntArray, r: FloatArray, u_mid: FloatArray,
            evaluated: NDArray[np.bool_], impact_work: FloatArray | None = None,
            applied: FloatArray | None = None) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(work, dissipated, B)``: per step the total contact work and the admissible
    dissipation ``D`` (NaN where the step's velocities are unknown), and per *state* the
    balance ``B_k`` (``energy.shape``; NaN after a step whose work is unknown).

    ``energy`` (n_states,) is ``E`` of every state; ``step``, ``r``, ``u_mid`` stack every
    contact of every evaluated step (see :mod:`contactopt.analysis.metrics`); ``impact_work``
    (n_steps, 2) the recorded impacts' work and admissible part per step (:func:`impacts`);
    ``applied`` (n_steps,) the non-contact work ``W`` per step (:func:`applied_work`)."""
    work_rows, dissipated_rows = dissipation(r, u_mid)
    work = np.zeros(n_steps) if impact_work is None else impact_work[:, 0].copy()
    dissipated = np.zeros(n_steps) if impact_work is None else impact_work[:, 1].copy()
    np.add.at(work, step, work_rows)
    np.add.at(dissipated, step, dissipated_rows)
    work[~evaluated] = np.nan
    dissipated[~evaluated] = np.nan
    states = energy.shape[0]
    b = np.full(states, np.nan)
    if states:
        transitions = min(n_steps, states - 1)
        accounted = dissipated[:transitions] if applied is None else dissipated[:transitions] + applied[:transitions]
        cumulative = np.concatenate([[0.0], np.cumsum(accounted)])
        b[: transitions + 1] = energy[: transitions + 1] - energy[0] - cumulative
    return work, dissipated, b
