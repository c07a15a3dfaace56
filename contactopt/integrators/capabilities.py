"""What a method cannot handle, refused with one clear line instead of being ignored.

``simulate`` calls a stepper's ``check_state(state)`` (when it has one) on the initial state
before the first step; the methods call it again at every step, since contact candidates
depend on the configuration.

**Model features.** A formulation declares the rows it cannot hold (``Formulation.refuses``:
feature name -> why), a system the elements that can produce them whatever the state
(:meth:`System.declared_features`: an MJCF model's condim 4/6 geom pairs, its frictionloss
dofs and tendons, :mod:`contactopt.systems.mjcf.candidates`). :func:`refuse_model_features` matches
the two before step 0, so that a model is refused by name at once, not at the step where a
condim 6 contact first appears.
"""

from __future__ import annotations

from collections.abc import Mapping

from contactopt.core.errors import OptionError
from contactopt.model.step import State
from contactopt.systems.base import System

__all__ = ["FEATURES", "refuse_activation_states", "refuse_contacts", "refuse_model_features"]

#: What each feature of :meth:`System.declared_features` puts in a step's program.
FEATURES = {"angular_friction": "torsional/rolling friction rows (MJCF condim 4/6)",
            "friction_loss": "dry-friction (frictionloss) rows"}
#: How many of a model's elements a refusal names before "and N more".
SHOWN = 3

CONTACT_METHODS = ("'compliant', 'hybrid' or a time-stepping formulation "
                   "(gauss, lcp, anitescu, ccp, regularized, sap, coulomb)")


def refuse_contacts(system: System, state: State, method: str) -> None:
    """Raise :class:`OptionError` if ``system`` has contact candidates at ``state``."""
    contacts = system.contacts(state.q)
    if contacts.count:
        raise OptionError(f"formulation {method!r} does not model contact, and system {system.type_name!r} "
                          f"has {contacts.count} contact candidate(s) at t={state.t:.6g} (closest phi = "
                          f"{float(contacts.phi.min()):.6g}); use {CONTACT_METHODS}")


def refuse_activation_states(system: System, method: str) -> None:
    """Raise :class:`OptionError` if ``system`` has actuator activations (MuJoCo's ``act``):
    ``method`` integrates ``(q, v)`` alone, and would hold them constant over its substeps."""
    if system.na:
        raise OptionError(f"formulation {method!r} does not carry actuator activations, and "
                          f"{system.describe()} has na = {system.na} (MuJoCo's act: filter, integrator or muscle "
                          "actuators); use 'mujoco' or a time-stepping formulation")


def refuse_model_features(system: System, formulation: str, refuses: Mapping[str, str]) -> None:
    """Raise :class:`OptionError` naming the system's elements of the first feature in
    ``refuses`` (feature -> why the formulation cannot hold its rows) that the system declares."""
    if not refuses:
        return
    declared = system.declared_features()
    for feature, why in refuses.items():
        elements = declared.get(feature)
        if elements:
            shown = ", ".join(elements[:SHOWN]) + (f" and {len(elements) - SHOWN} more" if len(elements) > SHOWN
                                                   else "")
            raise OptionError(f"formulation {formulation!r} cannot take the {FEATURES.get(feature, feature)} "
                              f"that {system.describe()} declares: {shown}; {why}")
