"""What a method cannot handle, refused with one clear line instead of being ignored.

``simulate`` calls a stepper's ``check_state(state)`` (when it has one) on the initial state
before the first step; the methods call it again at every step, since contact candidates
depend on the configuration.
"""

from __future__ import annotations

from contactopt.errors import OptionError
from contactopt.model import State
from contactopt.systems.base import System

__all__ = ["refuse_contacts"]

CONTACT_METHODS = ("'compliant', 'hybrid' or a time-stepping formulation "
                   "(gauss, lcp, anitescu, ccp, regularized, sap, coulomb)")


def refuse_contacts(system: System, state: State, method: str) -> None:
    """Raise :class:`OptionError` if ``system`` has contact candidates at ``state``."""
    contacts = system.contacts(state.q)
    if contacts.count:
        raise OptionError(f"formulation {method!r} does not model contact, and system {system.type_name!r} "
                          f"has {contacts.count} contact candidate(s) at t={state.t:.6g} (closest phi = "
                          f"{float(contacts.phi.min()):.6g}); use {CONTACT_METHODS}")
