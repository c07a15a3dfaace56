"""Event-driven hybrid simulation of rigid contact (``formulation="hybrid"``; Tedrake 2022,
"Impulsive Collisions" and "Putting it all together"; Tedrake 2020, "Rigid Contact with
Event Detection").

Every contact is in one of three modes:

* ``inactive``: no force; its guard is ``phi`` crossing zero from above (a collision);
* ``stick``: active, its normal **and** tangent rows are bilateral constraints;
* ``slide``: active, its normal row is a bilateral constraint and friction is the force
  ``-mu lambda_n s`` along the tangent, ``s = sign(t v)`` the sliding direction (no friction
  for ``mu = 0`` or a normal-only contact).

Between events the continuous dynamics with the active rows as bilateral constraints are
integrated by :func:`scipy.integrate.solve_ivp`. The constraint holds at acceleration level,
``n vdot + ndot v = -2 alpha (n v) - alpha^2 phi`` (``alpha`` a Baumgarte gain, 0 by default)
and ``t vdot + tdot v = 0`` for sticking rows, ``ndot v`` by central differences of
``J(q + eps v)``; with the force directions ``F`` (``n^T``, ``t^T``, or ``(n - mu s t)^T`` for a
sliding contact), ``[M, -F^T; G, 0] [vdot; lambda] = [tau; r]`` is solved by least squares
(the system's own bilateral rows, if any, are stacked in as in the ``ode`` baseline).

Guards (``solve_ivp`` events, all terminal, direction ``-1``), Tedrake 2022 "Putting it all
together": an inactive contact's ``phi`` (collision); an active contact's ``lambda_n``
(release: the normal force reaches 0, and it would pull next, so ``phidot`` becomes positive);
a sticking contact's ``mu lambda_n - |lambda_t|`` (sticking -> sliding); a sliding contact's
``s (t v)`` (its slip speed crosses 0: sliding -> sticking if the sticking force lies in the
cone, otherwise it slides the other way). Each guard fires a small threshold past zero, so that
one sitting exactly at zero (a contact resting at the tolerance, an unloaded contact, a balanced
slider) does not fire over and over: collision at ``phi = -contact_tolerance`` (1e-9 m), release
at ``lambda_n = -f_tol``, slip at ``|lambda_t| = mu lambda_n + f_tol`` with
``f_tol = 1e-9 max(1, |tau|_inf)`` [N], stop at ``s (t v) = -1e-12 m/s``; and no guard fires at
the very start of a segment (the one that just triggered would be found again there).

At an event, and at the start of a run, the modes are settled:

1. contacts that touch (``phi <= contact_tolerance``), are inactive and approach (``n v < 0``)
   collide. Their impact law (:mod:`contactopt.integrators.impacts`, with the active
   contacts included as plastic rows) is Newton restitution for ``mu = 0``, the reference's
   sticking law for ``mu = inf``, and the friction-cone program solved through
   :func:`contactopt.solvers.solve` for a finite ``mu`` (option ``impact_law = "program"``
   uses the program for every case). A collision slower than ``rest_velocity`` is plastic
   (``e = 0``): bounces whose apex heights fall by ``e^2`` would otherwise never end (Zeno),
   so once the approach speed is below this threshold the contact becomes active instead.
   Each collision is recorded (:class:`~contactopt.records.trajectory.Impact`: time, contacts, ``v-``,
   ``v+``, impulses) in the record of the step in which it happens.
2. touching contacts that neither approach nor separate become active: ``stick`` if
   ``mu = inf`` or their slip speed is numerically zero (``1e-7 m/s``), otherwise ``slide``.
3. the active set is made consistent: a contact whose normal force would not be positive is
   released, a sticking contact whose tangential force leaves the cone slides (in the
   direction opposite to that force), until nothing changes.

Limitations: planar and normal-only contacts (``dim`` 1 or 2) and ``qdot = v`` systems
(point_mass, brick, cart, planar_body / planar_ball, the textbook systems); 3-D friction
cones (the slip direction is a vector) and quaternion coordinates raise an OptionError.
One friction coefficient (the scene's ``mu``) serves for sticking and sliding. Persistent
contacts stay in contact through an impact elsewhere (plastic rows). Chattering or Zeno
behaviour beyond ``max_events`` events in one output interval is a failed step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import solve_ivp

from contactopt import solvers
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators.capabilities import refuse_activation_states
from contactopt.integrators.hybrid_modes import (
    APPROACH_TOLERANCE,
    INACTIVE,
    MODE_NAMES,
    SAME_INSTANT,
    SLIDE,
    STICK,
    STICK_TOLERANCE,
    Event,
    ModeDynamics,
    Modes,
    StepLog,
    worst_residuals,
)
from contactopt.integrators.impacts import select_impact_set, solve_impact
from contactopt.integrators.options import choice, integer, merge_options, number
from contactopt.model.step import Contacts, State
from contactopt.programs import Status
from contactopt.records.trajectory import Impact, StepRecord
from contactopt.systems.base import System
from contactopt.systems.dense import dense_view

FloatArray = NDArray[np.float64]

__all__ = ["INACTIVE", "METHODS", "SLIDE", "STICK", "HybridSimulation"]


METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
IMPACT_LAWS = ("auto", "program")


class HybridSimulation:
    """``step(state) -> (next_state, record)`` by event-driven hybrid simulation (module docstring)."""

    name: ClassVar[str] = "hybrid"
    description: ClassVar[str] = ("event-driven rigid contact: impacts (Newton, sticking, or the friction-cone "
                                  "program), active contacts as bilateral rows, stick/slide guards")
    defaults: ClassVar[Mapping[str, Any]] = {
        "method": "RK45", "rtol": 1e-10, "atol": 1e-12, "rest_velocity": 1e-3, "contact_tolerance": 1e-9,
        "impact_law": "auto", "impact_solver": "clarabel", "alpha": 0.0, "max_events": 1000}

    def __init__(self, system: System, solver: str, dt: float, options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        """Validate ``options`` and the system (planar or normal-only contacts, ``qdot = v``);
        ``solver_options`` go to the impact program's solver."""
        refuse_activation_states(system, 'hybrid')  # before step 0
        owner = self.name
        self.options = merge_options(owner, self.defaults, options)
        opts = self.options
        self.method = choice(owner, opts, "method", METHODS)
        self.impact_law = choice(owner, opts, "impact_law", IMPACT_LAWS)
        self.rtol = number(owner, opts, "rtol")
        self.atol = number(owner, opts, "atol")
        self.rest_velocity = number(owner, opts, "rest_velocity", strict=False)
        self.contact_tolerance = number(owner, opts, "contact_tolerance", strict=False)
        self.alpha = number(owner, opts, "alpha", strict=False)
        self.max_events = integer(owner, opts, "max_events")
        if not isinstance(opts["impact_solver"], str):
            raise OptionError(f"formulation {owner!r}: impact_solver must be a solver name, "
                              f"got {opts['impact_solver']!r}")
        try:
            solvers.parse_name(opts["impact_solver"])
        except ContactoptError as exc:
            raise OptionError(f"formulation {owner!r}: impact_solver: {exc}") from exc
        self.impact_solver = str(opts["impact_solver"])
        if system.nq != system.nv:
            raise OptionError(f"formulation {owner!r}: needs qdot = v; system {system.type_name!r} has "
                              f"nq = {system.nq}, nv = {system.nv} (use 'compliant' or a time-stepping "
                              "formulation)")
        if system.contact_dim not in (1, 2):
            raise OptionError(f"formulation {owner!r}: supports planar (dim 2) and normal-only (dim 1) "
                              f"contacts; system {system.type_name!r} has dim {system.contact_dim}")
        self.system = dense_view(system)  # small dense linear algebra (systems/dense.py)
        self.dt = float(dt)
        self.solver = solver
        self.solver_options = dict(solver_options or {})
        self._modes: Modes | None = None
        self._last: tuple[float, FloatArray, FloatArray] | None = None
        self.dynamics = ModeDynamics(system, self.alpha)

    # --- mode resolution ----------------------------------------------------------------------
    def _force_tolerance(self, q: FloatArray, v: FloatArray) -> float:
        """``f_tol = 1e-9 max(1, |tau|_inf)`` [N]: the zero of a contact force."""
        tau = self.system.dynamics(q, v).tau
        return 1e-9 * max(1.0, float(np.abs(tau).max(initial=0.0)))

    def _settle(self, t: float, q: FloatArray, v: FloatArray, modes: Modes, exempt: set[int],
                log: StepLog) -> FloatArray:
        """Collisions, activation and a consistent active set at ``(t, q, v)`` (module docstring,
        steps 1-3); ``modes`` is updated in place, the post-impact velocity returned."""
        system = self.system
        for _ in range(4 * max(1, system.contacts(q).count) + 4):
            contacts = system.contacts(q)
            dim = contacts.dim
            local = (contacts.J @ v).reshape(contacts.count, dim)
            touching = (contacts.phi <= self.contact_tolerance) & (modes.mode == INACTIVE)
            touching &= np.array([i not in exempt for i in range(contacts.count)], dtype=bool)
            candidates = touching & (local[:, 0] <= APPROACH_TOLERANCE)
            approaching = candidates & (local[:, 0] < -APPROACH_TOLERANCE)
            sticky = np.isinf(contacts.mu) if dim == 2 else np.zeros(contacts.count, dtype=bool)
            skidding = candidates & sticky & (np.abs(local[:, -1]) > STICK_TOLERANCE) if dim == 2 else \
                np.zeros(contacts.count, dtype=bool)
            if not (approaching.any() or skidding.any()):
                break
            self._collide(t, q, v, contacts, candidates, modes, log)
            v = log.impacts[-1].v_post
        # touching contacts at rest become active
        contacts = system.contacts(q)
        dim = contacts.dim
        local = (contacts.J @ v).reshape(contacts.count, dim)
        for i in range(contacts.count):
            if modes.mode[i] != INACTIVE or i in exempt or contacts.phi[i] > self.contact_tolerance:
                continue
            if abs(local[i, 0]) <= APPROACH_TOLERANCE:
                self._activate(i, contacts, local[i], modes)
                log.transitions.append(f"t={t:.9g} c{i}: touch -> {MODE_NAMES[int(modes.mode[i])]}")
        # a consistent active set
        tol = self._force_tolerance(q, v)
        for _ in range(4 * max(1, contacts.count) + 4):
            forces = self.dynamics.solve(t, q, v, modes).forces
            active = np.flatnonzero(modes.mode != INACTIVE)
            if active.size == 0:
                break
            normal = forces[active, 0]
            worst = int(np.argmin(normal))
            if normal[worst] < -tol:
                i = int(active[worst])
                modes.mode[i], modes.direction[i] = INACTIVE, 0.0
                exempt.add(i)
                log.transitions.append(f"t={t:.9g} c{i}: release (lambda_n = {normal[worst]:.3g})")
                continue
            changed = False
            for j in active:
                mu = float(contacts.mu[j])
                if dim == 2 and modes.mode[j] == STICK and mu < math.inf \
                        and abs(forces[j, 1]) > mu * forces[j, 0] + tol:
                    modes.mode[j], modes.direction[j] = SLIDE, -math.copysign(1.0, forces[j, 1])
                    if mu == 0.0:
                        modes.direction[j] = 0.0
                    log.transitions.append(f"t={t:.9g} c{j}: stick -> slide")
                    changed = True
                    break
            if not changed:
                break
        return v

    def _activate(self, i: int, contacts: Contacts, local: FloatArray, modes: Modes) -> None:
        """Mode of a contact that becomes active with local velocity ``local``."""
        mu = float(contacts.mu[i])
        if contacts.dim == 1 or mu == 0.0:
            modes.mode[i], modes.direction[i] = SLIDE, 0.0
        elif math.isinf(mu) or abs(local[1]) <= STICK_TOLERANCE:
            modes.mode[i], modes.direction[i] = STICK, 0.0
        else:
            modes.mode[i], modes.direction[i] = SLIDE, math.copysign(1.0, local[1])

    def _collide(self, t: float, q: FloatArray, v: FloatArray, contacts: Contacts, candidates: NDArray[np.bool_],
                 modes: Modes, log: StepLog) -> None:
        """Apply the impact law to the colliding candidates plus the active contacts (plastic)."""
        dim = contacts.dim
        dynamics = self.system.dynamics(q, v)
        local = (contacts.J @ v).reshape(contacts.count, dim)
        involved = np.flatnonzero(candidates | (modes.mode != INACTIVE))
        speed = -local[involved, 0]
        e = np.where((modes.mode[involved] == INACTIVE) & (speed > self.rest_velocity),
                     contacts.restitution[involved], 0.0)
        normals = contacts.J_normal[involved]
        bilateral = self.system.constraints(q, v, t)
        H, b = (bilateral.H, bilateral.target) if bilateral.count else (None, None)
        keep = select_impact_set(dynamics.M, normals, v, e, H=H, b=b)
        for i in involved[~keep]:
            if modes.mode[i] != INACTIVE:
                modes.mode[i], modes.direction[i] = INACTIVE, 0.0
                log.transitions.append(f"t={t:.9g} c{i}: lifted off by an impact")
        involved, e = involved[keep], e[keep]
        J = np.vstack([contacts.J[i * dim:(i + 1) * dim] for i in involved])
        result = solve_impact(dynamics.M, J, v, e, contacts.mu[involved], dim, self.impact_law, self.impact_solver,
                              self.solver_options, H=H, b=b)
        log.impacts.append(Impact(t=t, contacts=involved, v_pre=v.copy(), v_post=result.v_post,
                                  impulses=result.impulses))
        log.residuals.append(result.residuals)
        log.iterations += result.iterations
        post = (contacts.J @ result.v_post).reshape(contacts.count, dim)
        for i, restitution in zip(involved, e, strict=True):
            if restitution > 0.0:
                modes.mode[i], modes.direction[i] = INACTIVE, 0.0
                log.transitions.append(f"t={t:.9g} c{i}: impact, bounce (e = {restitution:g})")
            else:
                was = modes.mode[i]
                self._activate(int(i), contacts, post[i], modes)
                if was == INACTIVE:
                    log.transitions.append(f"t={t:.9g} c{i}: impact, plastic -> {MODE_NAMES[int(modes.mode[i])]}")

    # --- the step -------------------------------------------------------------------------------
    def _matches(self, state: State) -> bool:
        """Whether ``state`` is the one the last step returned (its modes are then reused)."""
        if self._last is None or self._modes is None:
            return False
        t, q, v = self._last
        return t == state.t and np.array_equal(q, state.q) and np.array_equal(v, state.v)

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        """Integrate over ``[t, t + dt]`` from event to event; impulses include the impacts'."""
        system = self.system
        nq, nv = system.nq, system.nv
        contacts = system.contacts(state.q)
        nc, dim = contacts.count, contacts.dim
        record: dict[str, Any] = dict(t=state.t, phi=contacts.phi.copy(), build_time=0.0, setup_time=0.0,
                                      solver=self.method,
                                      constraint_error=system.constraints(state.q, state.v, state.t).violation(
                                          state.v))
        start = time.perf_counter()
        log = StepLog()
        t, q, v = state.t, state.q.copy(), state.v.copy()
        t_end = state.t + self.dt
        impulses = np.zeros((nc, dim))
        substeps = 0
        try:
            if self._matches(state):
                assert self._modes is not None
                modes = self._modes.copy()
            else:
                modes = Modes(np.full(nc, INACTIVE, dtype=np.int64), np.zeros(nc))
                v = self._settle(t, q, v, modes, set(), log)
            events_here, last_event_t = 0, -math.inf
            while t < t_end:
                contacts = system.contacts(q)
                events = self.dynamics.guards(t, modes, contacts, self._force_tolerance(q, v), self.contact_tolerance)
                y0 = np.concatenate([q, v, np.zeros(nc * dim)])
                method: Any = self.method
                guards: Any = events or None
                solution = solve_ivp(self._rhs(modes), (t, t_end), y0, method=method, rtol=self.rtol,
                                     atol=self.atol, events=guards)
                log.iterations += int(solution.nfev)
                substeps += max(0, len(solution.t) - 1)
                if solution.status == -1:
                    raise ContactoptError(f"{self.method} failed at t={solution.t[-1]:.6g}: {solution.message}")
                y = solution.y[:, -1]
                q, v = y[:nq].copy(), y[nq:nq + nv].copy()
                impulses += y[nq + nv:].reshape(nc, dim)
                if not np.all(np.isfinite(y)):
                    raise ContactoptError(f"the state is not finite at t={solution.t[-1]:.6g}")
                if solution.status != 1:
                    t = t_end
                    break
                t = float(solution.t[-1])
                events_here = events_here + 1 if t - last_event_t <= SAME_INSTANT else 1
                last_event_t = t
                if len(log.transitions) + len(log.impacts) > self.max_events or events_here > 50:
                    raise ContactoptError(f"more than {self.max_events} events in the step, or 50 at t={t:.9g} "
                                          f"(chattering or Zeno behaviour); modes {modes.label()}")
                fired = [events[j] for j, times in enumerate(solution.t_events or []) if times.size]
                exempt: set[int] = set()
                for event in fired:
                    self._transition(event, t, q, v, modes, exempt, log)
                count_before = len(log.impacts)
                v = self._settle(t, q, v, modes, exempt, log)
                for impact in log.impacts[count_before:]:
                    for index, contact in enumerate(impact.contacts):
                        impulses[contact] += impact.impulses[index]
        except (ContactoptError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            self._modes, self._last = None, None
            return None, StepRecord(impulses=np.full((nc, dim), np.nan), status=Status.NUMERICAL_ERROR,
                                    solve_time=time.perf_counter() - start, iterations=log.iterations,
                                    residuals=worst_residuals(log.residuals), substeps=substeps,
                                    message=f"{type(exc).__name__}: {exc}", impacts=tuple(log.impacts), **record)
        next_state = State(q, v, t_end)
        self._modes, self._last = modes, (t_end, next_state.q, next_state.v)
        message = "; ".join(log.transitions) if log.transitions else f"modes {modes.label()}"
        return next_state, StepRecord(impulses=impulses, status=Status.OPTIMAL,
                                      solve_time=time.perf_counter() - start, iterations=log.iterations,
                                      residuals=worst_residuals(log.residuals), substeps=substeps, message=message,
                                      impacts=tuple(log.impacts), **record)

    def _transition(self, event: Event, t: float, q: FloatArray, v: FloatArray, modes: Modes, exempt: set[int],
                    log: StepLog) -> None:
        """The mode change a guard asks for (collisions are left to :meth:`_settle`)."""
        i = event.contact
        if event.kind == "release":
            modes.mode[i], modes.direction[i] = INACTIVE, 0.0
            exempt.add(i)
            log.transitions.append(f"t={t:.9g} c{i}: release")
        elif event.kind == "slip":
            force = self.dynamics.solve(t, q, v, modes).forces[i]
            modes.mode[i], modes.direction[i] = SLIDE, -math.copysign(1.0, force[1])
            log.transitions.append(f"t={t:.9g} c{i}: stick -> slide")
        elif event.kind == "stop":
            previous = modes.direction[i]
            modes.mode[i], modes.direction[i] = STICK, 0.0
            log.transitions.append(f"t={t:.9g} c{i}: slide -> stick")
            forces = self.dynamics.solve(t, q, v, modes).forces[i]
            mu = float(self.system.contacts(q).mu[i])
            if abs(forces[1]) > mu * forces[0] + self._force_tolerance(q, v):
                modes.mode[i], modes.direction[i] = SLIDE, -previous
                log.transitions[-1] = f"t={t:.9g} c{i}: slide reverses"

    def _rhs(self, modes: Modes) -> Callable[[float, FloatArray], FloatArray]:
        """``y' = [v, vdot, f]`` in ``modes`` (``y = [q, v, int f dt]``)."""
        nq, nv = self.system.nq, self.system.nv

        def rhs(t: float, y: FloatArray) -> FloatArray:
            q, v = y[:nq], y[nq:nq + nv]
            solved = self.dynamics.solve(t, q, v, modes)
            return np.concatenate([v, solved.vdot, solved.forces.reshape(-1)])
        return rhs

