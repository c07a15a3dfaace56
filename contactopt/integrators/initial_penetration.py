"""The initial-penetration check of every run: bodies that start inside each other (or the
ground) are pushed apart by the first steps at whatever speed closes the gap in one step
(``-phi / h``: a box 1 m under the ground at h = 1e-3 leaves at 1000 m/s), which no program
reports as a failure. ``simulate`` therefore looks once at ``system.contacts(q0)`` before
step 0 and issues one :class:`~contactopt.core.errors.InitialPenetrationWarning` when some contact
has ``phi < -tolerance`` (docs/architecture.md: ``phi >= 0`` is separation), naming the deepest contact
(``system.contact_names(q0)`` where the system has names, e.g. ``"box.corner(-,-,-)"`` or
``"bottom|top[0]"``), its depth and how many others penetrate.

The default tolerance, :data:`INITIAL_PENETRATION_TOLERANCE` = 1 mm, is above the
penetration a scene written at rest carries (round-off, ~1e-17 m; a compliant contact's
static ``m g / k``, 25 um in ``problems/box_drop.toml``) and below any placement mistake
worth a word; ``simulate(..., penetration_tolerance=...)`` changes it
(``inf`` turns the check off).

**Limits** the same way: a joint or tendon that starts outside its range (a limit row of
``system.limits(q0)`` with ``phi < -tolerance``, in the joint's own units, rad or m) is pushed
back at about ``violation / dt``, at most ``max_recovery_speed`` (rad/s or m/s; a thumb 0.26 rad
outside its range would spin at 0.26/h rad/s without it: :mod:`contactopt.formulations.recovery`);
one :class:`~contactopt.core.errors.InitialLimitViolationWarning` names the worst limit
(``system.limit_names(q0)`` where the system has them, e.g. ``"joint 'thumb' upper"``), its
violation and how many others are violated.

**Equalities** too (an MJCF ``connect`` or ``weld`` whose two frames start apart: the system's
``equality_violations(q0)``, in m or rad): the first steps pull them together at about
``violation / dt``; one :class:`~contactopt.core.errors.InitialEqualityViolationWarning` names the
worst and its violation.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from contactopt.core.errors import (
    InitialEqualityViolationWarning,
    InitialLimitViolationWarning,
    InitialPenetrationWarning,
    OptionError,
)
from contactopt.systems.base import System

__all__ = ["INITIAL_PENETRATION_TOLERANCE", "check_initial_penetration", "initial_equality_message",
           "initial_limit_message", "initial_penetration_message"]

#: Depth (m) beyond which an initial contact counts as a penetration.
INITIAL_PENETRATION_TOLERANCE = 1e-3


def initial_penetration_message(system: System, q0: ArrayLike, tolerance: float = INITIAL_PENETRATION_TOLERANCE,
                                label: str = "") -> str | None:
    """One line describing the contacts of ``q0`` deeper than ``tolerance``, or None."""
    if not (isinstance(tolerance, int | float) and not isinstance(tolerance, bool) and tolerance >= 0):
        raise OptionError(f"penetration_tolerance must be a number >= 0 (m; inf: no check), got {tolerance!r}")
    if math.isinf(tolerance):
        return None
    contacts = system.contacts(q0)
    phi = np.asarray(contacts.phi, dtype=np.float64)
    compliant = (np.isfinite(contacts.stiffness) if contacts.stiffness is not None
                 else np.zeros(phi.shape[0], dtype=bool))  # own springs (hydroelastic rows): penetrating by design
    deep = np.flatnonzero((phi < -tolerance) & ~compliant)
    if deep.shape[0] == 0:
        return None
    worst = int(deep[np.argmin(phi[deep])])
    names = getattr(system, "contact_names", None)
    name = f"contact {worst}"
    if callable(names):
        listed = list(names(q0))
        if len(listed) == phi.shape[0]:
            name = listed[worst]
    others = deep.shape[0] - 1
    rest = f" (and {others} other contact{'s' if others != 1 else ''})" if others else ""
    prefix = f"{label}: " if label else ""
    return (f"{prefix}initial penetration beyond {tolerance:g} m: contact {name!r} is {-phi[worst]:.3g} m deep{rest}; "
            "rigid formulations push the bodies apart at about depth / dt, at most max_recovery_speed (move them "
            "apart, set -o max_recovery_speed=..., or set penetration_tolerance)")


def initial_limit_message(system: System, q0: ArrayLike, tolerance: float = INITIAL_PENETRATION_TOLERANCE,
                          label: str = "") -> str | None:
    """One line naming the worst limit of ``q0`` violated beyond ``tolerance``, or None."""
    if math.isinf(tolerance):
        return None
    limits = system.limits(q0)
    phi = np.asarray(limits.phi, dtype=np.float64)
    violated = np.flatnonzero(phi < -tolerance)
    if violated.shape[0] == 0:
        return None
    worst = int(violated[np.argmin(phi[violated])])
    names = getattr(system, "limit_names", None)
    listed = list(names(q0)) if callable(names) else list(limits.labels)
    name = listed[worst] if len(listed) == phi.shape[0] else f"limit {worst}"
    others = violated.shape[0] - 1
    rest = f" (and {others} other limit{'s' if others != 1 else ''})" if others else ""
    prefix = f"{label}: " if label else ""
    return (f"{prefix}initial limit violation beyond {tolerance:g}: {name} limit is violated by {-phi[worst]:.3g} "
            f"(rad or m){rest}; the first steps drive it back at about violation / dt, at most max_recovery_speed "
            "(start inside the range, e.g. from a keyframe, set -o max_recovery_speed=..., or set "
            "penetration_tolerance)")


def initial_equality_message(system: System, q0: ArrayLike, tolerance: float = INITIAL_PENETRATION_TOLERANCE,
                             label: str = "") -> str | None:
    """One line naming the worst equality of ``q0`` violated beyond ``tolerance``, or None
    (also for a system without equalities, or without ``equality_violations``)."""
    found = getattr(system, "equality_violations", None)
    if math.isinf(tolerance) or not callable(found):
        return None
    violated = [(name, size) for name, size in found(q0) if size > tolerance]
    if not violated:
        return None
    name, size = max(violated, key=lambda item: item[1])
    others = len(violated) - 1
    rest = f" (and {others} other equalit{'ies' if others != 1 else 'y'})" if others else ""
    prefix = f"{label}: " if label else ""
    return (f"{prefix}initial equality violation beyond {tolerance:g}: equality {name} is violated by {size:.3g} "
            f"(m or rad){rest}; the first steps pull it together at about violation / dt (start with it satisfied, "
            "e.g. from a keyframe, or set penetration_tolerance)")


def check_initial_penetration(system: System, q0: ArrayLike, tolerance: float = INITIAL_PENETRATION_TOLERANCE,
                              label: str = "") -> None:
    """Warn once (:class:`~contactopt.core.errors.InitialPenetrationWarning`) if ``q0`` penetrates,
    and once (:class:`~contactopt.core.errors.InitialLimitViolationWarning`) if it violates a limit."""
    message = initial_penetration_message(system, q0, tolerance, label)
    if message is not None:
        warnings.warn(message, InitialPenetrationWarning, stacklevel=3)
    message = initial_limit_message(system, q0, tolerance, label)
    if message is not None:
        warnings.warn(message, InitialLimitViolationWarning, stacklevel=3)
    message = initial_equality_message(system, q0, tolerance, label)
    if message is not None:
        warnings.warn(message, InitialEqualityViolationWarning, stacklevel=3)
