"""The differentiable parameters of :class:`~contactopt.systems.rigid3d.Rigid3D`
(:meth:`~contactopt.systems.base.System.with_parameters`), in this order:

* ``"mu"``: the friction coefficient of every contact (the scene's ``contact.mu``);
* ``"gravity"``: the magnitude ``|g|`` of the gravity vector, its direction kept (offered
  while ``g != 0``, which alone has a direction);
* ``"<body>.mass"`` per body: its mass, with the moments of inertia scaled with it (the
  bodies are uniform solids of fixed shape, so ``I`` is proportional to ``m``: a box's
  ``m/3 (b^2 + c^2), ...``, a sphere's ``2/5 m r^2``; Featherstone, *Rigid Body Dynamics
  Algorithms*, 2008, section 2.14, as in :mod:`~contactopt.systems.rigid3d`).

``"restitution"`` is left out: the time-stepping formulations do not read it.

The new system is a shallow copy with the masses, inertias and gravity it derived at
construction replaced; what depends on the shapes alone (the contact points, the MuJoCo
collider of box pairs) is shared.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.systems.base import Parameter

__all__ = ["GRAVITY_MAGNITUDE", "MASS_SUFFIX", "parameter_table", "replaced"]

#: ``"gravity"``: the length of ``[system] gravity``, its direction kept.
GRAVITY_MAGNITUDE = Parameter("gravity", "magnitude |g| of the gravity vector, direction kept [m/s^2]",
                              minimum=0.0, exclusive=True)
#: A body's mass parameter is ``"<body name>" + MASS_SUFFIX``.
MASS_SUFFIX = ".mass"


def _mass(name: str) -> Parameter:
    return Parameter(f"{name}{MASS_SUFFIX}", "body mass, inertia scaled with it (uniform density) [kg]",
                     minimum=0.0, exclusive=True)


def parameter_table(system: Any, base: Mapping[str, tuple[Parameter, float]]) -> dict[str, tuple[Parameter, float]]:
    """``base`` (``"mu"``) then ``"gravity"`` and ``"<body>.mass"`` with their current values."""
    table = dict(base)
    magnitude = float(np.linalg.norm(system.gravity))
    if magnitude > 0.0:
        table["gravity"] = (GRAVITY_MAGNITUDE, magnitude)
    for body in system.bodies:
        table[f"{body.name}{MASS_SUFFIX}"] = (_mass(body.name), body.mass)
    return table


def replaced(system: Any, values: Mapping[str, float]) -> Any:
    """A shallow copy of ``system`` with ``values`` (checked names and values) in place."""
    new = copy.copy(system)
    new.mu = values.get("mu", system.mu)
    if "gravity" in values:
        new.gravity = system.gravity * (values["gravity"] / float(np.linalg.norm(system.gravity)))
    masses = {name[: -len(MASS_SUFFIX)]: value for name, value in values.items() if name.endswith(MASS_SUFFIX)}
    if masses:
        new.bodies = tuple(dataclasses.replace(body, mass=masses[body.name]) if body.name in masses else body
                           for body in system.bodies)
        new._masses = np.array([body.mass for body in new.bodies])
        new._inertia = np.array([body.inertia for body in new.bodies])  # proportional to the mass
    return new
