"""The bodies of :mod:`contactopt.systems.rigid3d`: :class:`RigidBody` and the parsing of a
scene's ``[[system.bodies]]`` tables (errors name the key, e.g. ``system.bodies[2].mass``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.model.step import as_vector
from contactopt.systems import validation as validate
from contactopt.systems.base import ParameterError
from contactopt.systems.geometry import box_inertia, quat_normalize

FloatArray = NDArray[np.float64]

__all__ = ["BODY_KEYS", "COMPLIANCES", "QUATERNION_NORM_TOLERANCE", "SHAPES", "SOFT_ONLY_SHAPES", "RigidBody",
           "parse_body", "tube_inertia"]

#: Shapes a body may have.
SHAPES: tuple[str, ...] = ("box", "sphere", "cylinder", "capsule")
#: Shapes that only soft bodies may have (hydroelastic contact surfaces; they have no point contacts).
SOFT_ONLY_SHAPES: tuple[str, ...] = ("cylinder", "capsule")
#: Keys a ``[[system.bodies]]`` table may hold.
BODY_KEYS: frozenset[str] = frozenset({
    "name", "shape", "size", "radius", "mass", "position", "orientation", "velocity",
    "angular_velocity", "compliance", "hydroelastic_modulus", "hunt_crossley_dissipation",
})
#: A body's hydroelastic compliance (Drake's names): ``"rigid"`` or ``"soft"`` (a pressure field).
COMPLIANCES: tuple[str, ...] = ("rigid", "soft")
#: How far from 1 the norm of a given orientation quaternion may be before it is rejected
#: (it is normalized otherwise); 1% admits quaternions written with two decimals.
QUATERNION_NORM_TOLERANCE = 1e-2


@dataclass(frozen=True)
class RigidBody:
    """One uniform solid body and its initial state.

    Attributes:
        name: label used in coordinate names (``"box.x"``).
        shape: ``"box"``, ``"sphere"``, or, for soft bodies only, ``"cylinder"`` and ``"capsule"``
            (along the body's z axis).
        size: box half extents ``(a, b, c)``, ``(r,)`` for a sphere, ``(r, l)`` (radius, half
            length of the axis) for a cylinder or a capsule.
        mass: kg, > 0.
        position, orientation, velocity, angular_velocity: initial state; orientation a unit
            quaternion ``[w, x, y, z]``; velocities in the world frame.
        compliance: ``"rigid"`` or ``"soft"`` under ``[contact] model = "hydroelastic"``
            (:mod:`contactopt.systems.hydroelastic`); a soft body has a pressure field of
            ``hydroelastic_modulus`` (Pa) and the Hunt-Crossley ``hunt_crossley_dissipation``
            (s/m) on its contact surfaces.
    """

    name: str
    shape: str
    size: FloatArray
    mass: float
    position: FloatArray
    orientation: FloatArray
    velocity: FloatArray
    angular_velocity: FloatArray
    compliance: str = "rigid"
    hydroelastic_modulus: float | None = None
    hunt_crossley_dissipation: float = 0.0

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"RigidBody {self.name!r}: unknown shape {self.shape!r}; known: {SHAPES}")
        length = {"box": 3, "sphere": 1}.get(self.shape, 2)
        size = as_vector(self.size, f"RigidBody {self.name!r}.size", length)
        if np.any(size <= 0):
            raise ValueError(f"RigidBody {self.name!r}: size must be positive, got {size}")
        if not (math.isfinite(self.mass) and self.mass > 0):
            raise ValueError(f"RigidBody {self.name!r}: mass must be > 0, got {self.mass}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "mass", float(self.mass))
        for attr, n in (("position", 3), ("velocity", 3), ("angular_velocity", 3), ("orientation", 4)):
            value = as_vector(getattr(self, attr), f"RigidBody {self.name!r}.{attr}", n)
            object.__setattr__(self, attr, value)
        if self.shape in SOFT_ONLY_SHAPES and self.compliance != "soft":
            raise ValueError(f"RigidBody {self.name!r}: a {self.shape} has hydroelastic contact only; "
                             "give it compliance 'soft'")
        if self.compliance not in COMPLIANCES:
            raise ValueError(f"RigidBody {self.name!r}: compliance must be one of {COMPLIANCES}, "
                             f"got {self.compliance!r}")
        modulus = self.hydroelastic_modulus
        if (self.compliance == "soft") != (modulus is not None):
            raise ValueError(f"RigidBody {self.name!r}: a soft body needs a hydroelastic_modulus and a rigid one "
                             f"has none (compliance {self.compliance!r}, modulus {modulus!r})")
        if modulus is not None and not (math.isfinite(modulus) and modulus > 0):
            raise ValueError(f"RigidBody {self.name!r}: hydroelastic_modulus must be > 0 (Pa), got {modulus}")
        if not (math.isfinite(self.hunt_crossley_dissipation) and self.hunt_crossley_dissipation >= 0):
            raise ValueError(f"RigidBody {self.name!r}: hunt_crossley_dissipation must be >= 0 (s/m), "
                             f"got {self.hunt_crossley_dissipation}")
        unit = quat_normalize(self.orientation, f"RigidBody {self.name!r}.orientation")
        unit.setflags(write=False)
        object.__setattr__(self, "orientation", unit)

    @property
    def radius(self) -> float:
        """Sphere radius (raises for a box)."""
        if self.shape != "sphere":
            raise AttributeError(f"body {self.name!r} is a {self.shape}, it has no radius")
        return float(self.size[0])

    @property
    def inertia(self) -> FloatArray:
        """Principal moments about the centre of mass, body frame (uniform solid)."""
        if self.shape == "box":
            return box_inertia(self.mass, self.size)
        if self.shape == "sphere":
            return np.full(3, 0.4 * self.mass * self.size[0] ** 2)
        return tube_inertia(self.shape, self.mass, float(self.size[0]), float(self.size[1]))

def tube_inertia(shape: str, mass: float, radius: float, half_length: float) -> FloatArray:
    """Principal moments ``(I_xx, I_yy, I_zz)`` of a uniform solid cylinder or capsule along z,
    radius ``r``, axis half length ``l``. Cylinder: ``m (3 r^2 + 4 l^2) / 12`` and ``m r^2 / 2``.
    Capsule: the cylinder of mass ``m_c`` plus two hemispheres of total mass ``m_s`` (masses in
    proportion to the volumes ``2 pi r^2 l`` and ``4/3 pi r^3``), each about its own centroid
    ``3 r / 8`` from its flat face ``83/320 m r^2`` across the axis (``2/5 m r^2`` about the
    base, by the parallel axis theorem) and shifted by ``l + 3 r / 8``; about the axis
    ``m_c r^2 / 2 + 2/5 m_s r^2`` (standard solid-body formulas, e.g. Featherstone 2008, 2.14)."""
    r, hl = radius, half_length
    if shape == "cylinder":
        across = mass * (3.0 * r * r + 4.0 * hl * hl) / 12.0
        return np.array([across, across, 0.5 * mass * r * r])
    v_c, v_s = 2.0 * math.pi * r * r * hl, 4.0 / 3.0 * math.pi * r**3
    m_c, m_s = mass * v_c / (v_c + v_s), mass * v_s / (v_c + v_s)
    across = m_c * (3.0 * r * r + 4.0 * hl * hl) / 12.0 + m_s * (83.0 / 320.0 * r * r + (hl + 3.0 * r / 8.0) ** 2)
    return np.array([across, across, 0.5 * m_c * r * r + 0.4 * m_s * r * r])


def parse_body(table: Any, prefix: str, index: int) -> RigidBody:
    """One ``[[system.bodies]]`` table -> :class:`RigidBody`; errors name ``prefix.key``."""
    if not isinstance(table, Mapping):
        raise ParameterError(prefix, f"{prefix}: expected a table, got {table!r}")
    validate.reject_unknown(table, BODY_KEYS, prefix)
    name = table.get("name", f"body{index}")
    if not isinstance(name, str) or not name:
        raise ParameterError(f"{prefix}.name", f"{prefix}.name: expected a non-empty string, got {name!r}")
    if "shape" not in table:
        raise ParameterError(f"{prefix}.shape", f"{prefix}.shape: missing; one of {', '.join(SHAPES)}")
    shape = table["shape"]
    if shape not in SHAPES:
        raise ParameterError(f"{prefix}.shape", f"{prefix}.shape: unknown shape {shape!r}; known: "
                             f"{', '.join(SHAPES)}")
    if shape in SOFT_ONLY_SHAPES:
        if "size" not in table or "radius" in table:
            raise ParameterError(f"{prefix}.size", f"{prefix}.size: a {shape} needs size = [radius, half length] "
                                 "(along the body's z axis), and no radius key")
        size = validate.vector(table["size"], f"{prefix}.size", 2)
        if np.any(size <= 0):
            raise ParameterError(f"{prefix}.size", f"{prefix}.size: radius and half length must be > 0, "
                                 f"got {list(size)}")
        if table.get("compliance") != "soft":
            raise ParameterError(f"{prefix}.compliance", f"{prefix}.compliance: a {shape} has hydroelastic contact "
                                 "only (no point contacts); set compliance = \"soft\"")
    elif shape == "box":
        if "radius" in table:
            raise ParameterError(f"{prefix}.radius", f"{prefix}.radius: only spheres have a radius; "
                                 "give a box its half extents as size = [a, b, c]")
        if "size" not in table:
            raise ParameterError(f"{prefix}.size", f"{prefix}.size: missing; a box needs its half "
                                 "extents [a, b, c]")
        if isinstance(table["size"], int | float) and not isinstance(table["size"], bool):
            raise ParameterError(f"{prefix}.size", f"{prefix}.size: a box needs its three half extents "
                                 f"[a, b, c], got the number {table['size']!r} (a single number is a "
                                 "sphere's radius)")
        size = validate.vector(table["size"], f"{prefix}.size", 3)
        if np.any(size <= 0):
            raise ParameterError(f"{prefix}.size",
                                 f"{prefix}.size: half extents must be > 0, got {list(size)}")
    else:
        if ("size" in table) == ("radius" in table):
            which = "both given" if "size" in table else "neither given"
            raise ParameterError(f"{prefix}.radius", f"{prefix}.radius: give a sphere exactly one of "
                                 f"radius = r or size = r ({which})")
        if "radius" in table:
            size = np.array([validate.number(table["radius"], f"{prefix}.radius", positive=True)])
        elif isinstance(table["size"], list | tuple):
            size = validate.vector(table["size"], f"{prefix}.size", 1)
            if not size[0] > 0:
                raise ParameterError(f"{prefix}.size", f"{prefix}.size: radius must be > 0, got {size[0]}")
        else:  # one number is unambiguous for a sphere: its radius, as size = [r]
            size = np.array([validate.number(table["size"], f"{prefix}.size", positive=True)])
            if not size[0] > 0:
                raise ParameterError(f"{prefix}.size", f"{prefix}.size: radius must be > 0, got {size[0]}")
    if "mass" not in table:
        raise ParameterError(f"{prefix}.mass", f"{prefix}.mass: missing (kg, > 0)")
    mass = validate.number(table["mass"], f"{prefix}.mass", positive=True)
    if "position" not in table:
        raise ParameterError(f"{prefix}.position", f"{prefix}.position: missing ([x, y, z] of the "
                             "centre of mass)")
    position = validate.vector(table["position"], f"{prefix}.position", 3)
    orientation = (validate.vector(table["orientation"], f"{prefix}.orientation", 4) if "orientation" in table
                   else np.array([1.0, 0.0, 0.0, 0.0]))
    norm = float(np.linalg.norm(orientation))
    if norm == 0.0:
        raise ParameterError(f"{prefix}.orientation", f"{prefix}.orientation: the zero quaternion is "
                             "not a rotation; give a unit quaternion [w, x, y, z]")
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise ParameterError(f"{prefix}.orientation", f"{prefix}.orientation: not a unit quaternion "
                             f"(norm {norm:.6g}); give [w, x, y, z] with norm 1 "
                             f"(within {QUATERNION_NORM_TOLERANCE:g}, then normalized)")
    velocity = (validate.vector(table["velocity"], f"{prefix}.velocity", 3) if "velocity" in table
                else np.zeros(3))
    angular = (validate.vector(table["angular_velocity"], f"{prefix}.angular_velocity", 3)
               if "angular_velocity" in table else np.zeros(3))
    compliance, modulus, dissipation = _compliance(table, prefix)
    return RigidBody(name=name, shape=shape, size=size, mass=mass, position=position,
                     orientation=orientation / norm, velocity=velocity, angular_velocity=angular,
                     compliance=compliance, hydroelastic_modulus=modulus, hunt_crossley_dissipation=dissipation)


def _compliance(table: Mapping[str, Any], prefix: str) -> tuple[str, float | None, float]:
    """``compliance`` (default ``"rigid"``), ``hydroelastic_modulus`` (Pa, > 0: soft bodies
    only, required there) and ``hunt_crossley_dissipation`` (s/m, >= 0, default 0: soft bodies
    only) of a body table; errors name the key."""
    compliance = table.get("compliance", "rigid")
    if compliance not in COMPLIANCES:
        raise ParameterError(f"{prefix}.compliance", f"{prefix}.compliance: expected one of "
                             f"{', '.join(map(repr, COMPLIANCES))}, got {compliance!r}")
    if compliance == "rigid":
        for key in ("hydroelastic_modulus", "hunt_crossley_dissipation"):
            if key in table:
                raise ParameterError(f"{prefix}.{key}", f"{prefix}.{key}: only a soft body has one; set "
                                     f"{prefix}.compliance = \"soft\" or remove it")
        return "rigid", None, 0.0
    if "hydroelastic_modulus" not in table:
        raise ParameterError(f"{prefix}.hydroelastic_modulus", f"{prefix}.hydroelastic_modulus: missing; a soft "
                             "body needs its pressure field's modulus (Pa, > 0; e.g. 1e6 for rubber-like contact)")
    modulus = validate.number(table["hydroelastic_modulus"], f"{prefix}.hydroelastic_modulus", positive=True)
    dissipation = (validate.number(table["hunt_crossley_dissipation"], f"{prefix}.hunt_crossley_dissipation",
                                   nonnegative=True) if "hunt_crossley_dissipation" in table else 0.0)
    return "soft", modulus, dissipation
