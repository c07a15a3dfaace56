"""The modes, guards and mode-constrained dynamics of the event-driven ``hybrid`` method.

The method, its guards and their thresholds are described in :mod:`contactopt.integrators.hybrid`
(Tedrake 2022, "Putting it all together"; Tedrake 2020, "Rigid Contact with Event Detection").
:class:`ModeDynamics` gives, for fixed contact modes, the accelerations and contact forces
(``[M, -F^T; G, 0] [vdot; lambda] = [tau; r]``) and the guards of those modes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from contactopt.integrators.drift import Drift
from contactopt.model.step import Contacts
from contactopt.programs import Residuals
from contactopt.records.trajectory import Impact
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["APPROACH_TOLERANCE", "INACTIVE", "MODE_NAMES", "SAME_INSTANT", "SLIDE", "STICK", "STICK_TOLERANCE",
           "Event", "ModeDynamics", "Modes", "Solved", "StepLog", "worst_residuals"]

INACTIVE, STICK, SLIDE = 0, 1, 2
MODE_NAMES = {INACTIVE: "inactive", STICK: "stick", SLIDE: "slide"}
#: Slip speed [m/s] treated as zero when a contact becomes active (the sticking law and a
#: converged impact program leave ~1e-12; anything larger slides, and the slide -> stick
#: guard catches its stop exactly).
STICK_TOLERANCE = 1e-7
#: Normal approach speed [m/s] below which a touching contact is at rest, not colliding
#: (round-off after an event).
APPROACH_TOLERANCE = 1e-12
#: Events within this time [s] of each other count as the same instant (chattering guard).
SAME_INSTANT = 1e-13
_NO_RESIDUALS = Residuals(math.nan, math.nan, math.nan, math.nan)


@dataclass
class Modes:
    """Per contact: mode (INACTIVE, STICK, SLIDE) and sliding direction ``s`` (+1, -1, or 0)."""

    mode: IntArray
    direction: FloatArray

    def copy(self) -> Modes:
        """An independent copy."""
        return Modes(self.mode.copy(), self.direction.copy())

    def label(self) -> str:
        """``"stick,inactive,..."`` for messages."""
        return ",".join(MODE_NAMES[int(m)] for m in self.mode)


@dataclass
class Solved:
    """The constrained dynamics at one state: ``vdot`` and per-contact forces (nc, dim)."""

    vdot: FloatArray
    forces: FloatArray
    contacts: Contacts


@dataclass
class Event:
    """A guard for :func:`solve_ivp` (it reads ``terminal`` and ``direction``).

    At the segment's start time ``start`` it reports ``+1``: a guard that is exactly zero there
    (the contact that just bounced off, a slip speed that just became zero) would otherwise be
    "found" again at the start by the root finder, and the real crossing later in the same
    solver step would be missed.
    """

    kind: str
    contact: int
    function: Callable[[float, FloatArray], float]
    start: float
    terminal: bool = True
    direction: float = -1.0

    def __call__(self, t: float, y: FloatArray) -> float:
        """The guard's value (``+1`` at the segment start)."""
        return 1.0 if t == self.start else self.function(t, y)


@dataclass
class StepLog:
    """What happened inside one output interval."""

    impacts: list[Impact] = field(default_factory=list)
    transitions: list[str] = field(default_factory=list)
    residuals: list[Residuals] = field(default_factory=list)
    iterations: int = 0


class ModeDynamics:
    """The constrained dynamics of a system in given contact modes, and their guards."""

    def __init__(self, system: System, alpha: float) -> None:
        self.system = system
        self.alpha = alpha  # Baumgarte gain of the active normal rows
        self._cache: tuple[bytes, bytes, Solved] | None = None

    def jdot_v(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``Jdot v`` by a central difference of ``J`` along ``qdot = v``."""
        speed = float(np.abs(v).max(initial=0.0))
        if speed == 0.0:
            return np.zeros(self.system.contacts(q).J.shape[0])
        eps = 1e-6 / max(1.0, speed)
        plus = self.system.contacts(q + eps * v).J
        minus = self.system.contacts(q - eps * v).J
        return np.asarray((plus - minus) @ v / (2.0 * eps), dtype=np.float64)

    def solve(self, t: float, q: FloatArray, v: FloatArray, modes: Modes) -> Solved:
        """Accelerations and contact forces with ``modes`` (module docstring)."""
        key_q, key_v = q.tobytes(), v.tobytes()
        if self._cache is not None and self._cache[0] == key_q + key_v and self._cache[1] == modes.mode.tobytes() \
                + modes.direction.tobytes() + np.float64(t).tobytes():
            return self._cache[2]
        system = self.system
        contacts = system.contacts(q)
        dynamics = system.dynamics(q, v)
        bilateral = system.constraints(q, v, t)
        nc, dim, nv = contacts.count, contacts.dim, system.nv
        active = np.flatnonzero(modes.mode != INACTIVE)
        rows: list[FloatArray] = []
        directions: list[FloatArray] = []
        targets: list[float] = []
        slots: list[tuple[int, int]] = []  # (contact, 0 normal | 1 tangent) of each row
        if active.size:
            jdv = self.jdot_v(q, v)
            for i in active:
                n = contacts.J[i * dim]
                rows.append(n)
                targets.append(-jdv[i * dim] - 2.0 * self.alpha * float(n @ v) - self.alpha**2 * contacts.phi[i])
                mu = float(contacts.mu[i])
                if modes.mode[i] == SLIDE and dim == 2 and 0.0 < mu < math.inf:
                    directions.append(n - mu * modes.direction[i] * contacts.J[i * dim + 1])
                else:
                    directions.append(n)
                slots.append((int(i), 0))
                if modes.mode[i] == STICK and dim == 2:
                    tangent = contacts.J[i * dim + 1]
                    rows.append(tangent)
                    directions.append(tangent)
                    targets.append(-jdv[i * dim + 1])
                    slots.append((int(i), 1))
        n_contact_rows = len(rows)
        if bilateral.count:
            rows.extend(bilateral.H)
            directions.extend(bilateral.H)
            targets.extend(Drift().acceleration_target(bilateral, v))
        forces = np.zeros((nc, dim))
        if rows:
            G, F = np.array(rows), np.array(directions)
            m = G.shape[0]
            kkt = np.block([[dynamics.M, -F.T], [G, np.zeros((m, m))]])
            solution = np.linalg.lstsq(kkt, np.concatenate([dynamics.tau, targets]), rcond=None)[0]
            vdot, lam = solution[:nv], solution[nv:]
            for (index, slot), value in zip(slots, lam[:n_contact_rows], strict=True):
                forces[index, slot] = value
            for i in active:
                mu = float(contacts.mu[i])
                if modes.mode[i] == SLIDE and dim == 2 and 0.0 < mu < math.inf:
                    forces[i, 1] = -mu * modes.direction[i] * forces[i, 0]
        else:
            vdot = dynamics.solve_M(dynamics.tau)
        solved = Solved(vdot=vdot, forces=forces, contacts=contacts)
        self._cache = (key_q + key_v, modes.mode.tobytes() + modes.direction.tobytes() + np.float64(t).tobytes(),
                       solved)
        return solved

    # --- guards -----------------------------------------------------------------------------------
    def guards(self, t0: float, modes: Modes, contacts: Contacts, force_tol: float,
               contact_tolerance: float) -> list[Event]:
        """The guards of the current modes; each has a small threshold so that a guard sitting
        at zero (a contact resting at the tolerance, an unloaded contact, a balanced slider) does
        not fire: collision at ``phi < -contact_tolerance``, release at ``lambda_n < -force_tol``,
        slip at ``|lambda_t| > mu lambda_n + force_tol``, stop at ``s (t v) < -1e-12 m/s``."""
        nq = self.system.nq
        nv = self.system.nv
        dim = contacts.dim
        events: list[Event] = []

        def split(y: FloatArray) -> tuple[FloatArray, FloatArray]:
            return y[:nq], y[nq:nq + nv]

        for i in range(contacts.count):
            mu = float(contacts.mu[i])
            if modes.mode[i] == INACTIVE:
                def touch(t: float, y: FloatArray, i: int = i) -> float:
                    return float(self.system.contacts(split(y)[0]).phi[i] + contact_tolerance)
                events.append(Event("touch", i, touch, t0))
                continue

            def release(t: float, y: FloatArray, i: int = i) -> float:
                return float(self.solve(t, *split(y), modes).forces[i, 0] + force_tol)
            events.append(Event("release", i, release, t0))
            if dim == 2 and modes.mode[i] == STICK and mu < math.inf:
                def slip(t: float, y: FloatArray, i: int = i, mu: float = mu) -> float:
                    force = self.solve(t, *split(y), modes).forces[i]
                    return float(mu * force[0] - abs(force[1]) + force_tol)
                events.append(Event("slip", i, slip, t0))
            elif dim == 2 and modes.mode[i] == SLIDE and modes.direction[i] != 0.0:
                def stop(t: float, y: FloatArray, i: int = i) -> float:
                    q, v = split(y)
                    return float(modes.direction[i] * (self.system.contacts(q).J[i * dim + 1] @ v)
                                 + APPROACH_TOLERANCE)
                events.append(Event("stop", i, stop, t0))
        return events


def worst_residuals(residuals: list[Residuals]) -> Residuals:
    """The largest of each residual over the step's impact programs (NaN if none)."""
    if not residuals:
        return _NO_RESIDUALS
    table = np.array([[r.primal, r.dual, r.gap, r.complementarity] for r in residuals])
    with np.errstate(all="ignore"):
        worst = [float(np.nanmax(col)) if np.any(np.isfinite(col)) else math.nan for col in table.T]
    return Residuals(*worst)
