"""Free rigid bodies in 3-D (boxes and spheres) with point contacts.

Coordinates, per body ``i`` in the order the scene lists them:

* ``q_i = [x, y, z, qw, qx, qy, qz]``: centre of mass in the world frame and the unit
  quaternion (scalar first) of the rotation ``R`` from body to world (``nq = 7 N``);
* ``v_i = [vx, vy, vz, wx, wy, wz]``: centre-of-mass velocity and angular velocity, both in
  the **world** frame (``nv = 6 N``). Hence ``qdot != v`` (``N(q)`` is not the identity).

Dynamics (Newton-Euler about the centre of mass, world frame; Featherstone, *Rigid Body
Dynamics Algorithms*, 2008, section 2.14 and eq. 2.67)::

    M(q) = blockdiag(m_i I3, R_i I_i R_i^T)
    tau  = [m_i g ; -w_i x (R_i I_i R_i^T w_i)]  (+ u, a generalized wrench, if given)

``-w x (I w)`` is the gyroscopic term: with ``I_world = R I R^T`` it is the
``-Idot_world w`` that keeps the angular momentum ``I_world w`` constant without torque.
Inertia: solid box with half extents ``(a, b, c)``: ``m/3 (b^2 + c^2), m/3 (a^2 + c^2),
m/3 (a^2 + b^2)``; solid sphere ``2/5 m r^2``.

Integration (semi-implicit Euler): ``x' = x + h v'`` and ``quat' = exp(h w'/2) * quat``
(world-frame angular velocity multiplies on the **left**), renormalized to ``|quat| = 1``.

Contacts are point contacts (reference 000, "Contact Jacobian" and "Beyond Point Contact":
point contacts at the corners of a box), all candidates returned whatever their distance:

1. for each body in order, if ``ground`` is on (the plane ``z = 0``):
   a box gives its 8 corners, in the order of ``itertools.product((-1, 1), repeat=3)``
   over the signs of the body-frame half extents ``(sx a, sy b, sz c)``, i.e. corner
   ``k = 4 i_x + 2 i_y + i_z`` with sign ``-1`` for ``i = 0`` and ``+1`` for ``i = 1``;
   ``phi`` = corner height, ``n = +z``, ``t1 = +x``, ``t2 = +y``.
   A sphere gives one contact, ``phi = z - r``, at its lowest point, same frame.
2. then every pair of spheres ``(A, B)`` with ``A`` before ``B``: ``phi = |c_B - c_A| -
   r_A - r_B``, ``n`` the unit vector from ``A`` to ``B``, contact point in the middle of the
   gap, tangents from :func:`~contactopt.systems.geometry.tangent_basis` (``t1 x t2 = n``);
   the rows are ``J_B - J_A`` so that ``J v`` is the velocity of ``B``'s material point
   relative to ``A``'s.

The row of a point ``p`` on body ``i`` for a world direction ``d`` is ``[d^T, (r x d)^T]`` in
body ``i``'s six columns, ``r = p - x_i``.

Limitations: box-box and box-sphere collisions are not detected (only box corners and
spheres against the ground, and sphere-sphere pairs); there is no torsional or rolling
friction; bodies are uniform solids.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model import Contacts, Dynamics, as_vector
from contactopt.systems import validation as validate
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System, resolve_parameters
from contactopt.systems.geometry import (
    box_inertia,
    point_row,
    quat_exp,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    tangent_basis,
)

FloatArray = NDArray[np.float64]

__all__ = ["BODY_KEYS", "SHAPES", "Rigid3D", "RigidBody"]

#: Shapes a body may have.
SHAPES: tuple[str, ...] = ("box", "sphere")
#: Keys a ``[[system.bodies]]`` table may hold.
BODY_KEYS: frozenset[str] = frozenset({
    "name", "shape", "size", "radius", "mass", "position", "orientation", "velocity",
    "angular_velocity",
})
#: How far from 1 the norm of a given orientation quaternion may be before it is rejected
#: (it is normalized otherwise); 1% admits quaternions written with two decimals.
QUATERNION_NORM_TOLERANCE = 1e-2
#: Body-frame corner signs, in the documented order.
_CORNER_SIGNS: FloatArray = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
_EX, _EY, _EZ = np.eye(3)
#: A contact candidate: phi, world point, frame rows [n; t1; t2], and (body, r, sign) terms.
_Candidate = tuple[float, FloatArray, FloatArray, list[tuple[int, FloatArray, float]]]


@dataclass(frozen=True)
class RigidBody:
    """One uniform solid body and its initial state.

    Attributes:
        name: label used in coordinate names (``"box.x"``).
        shape: ``"box"`` or ``"sphere"``.
        size: box half extents ``(a, b, c)``, or ``(r,)`` for a sphere.
        mass: kg, > 0.
        position, orientation, velocity, angular_velocity: initial state; orientation a unit
            quaternion ``[w, x, y, z]``; velocities in the world frame.
    """

    name: str
    shape: str
    size: FloatArray
    mass: float
    position: FloatArray
    orientation: FloatArray
    velocity: FloatArray
    angular_velocity: FloatArray

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"RigidBody {self.name!r}: unknown shape {self.shape!r}; known: {SHAPES}")
        length = 3 if self.shape == "box" else 1
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
        return np.full(3, 0.4 * self.mass * self.size[0] ** 2)


class Rigid3D(System):
    """Free rigid bodies (boxes, spheres) with point contacts; see the module docstring."""

    type_name: ClassVar[str] = "rigid3d"
    description: ClassVar[str] = ("free boxes and spheres ([[system.bodies]]); point contacts: box "
                                  "corners and spheres on z = 0, sphere pairs")
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters", "bodies", "gravity", "ground"})
    contact_dim = 3

    def __init__(self, bodies: Sequence[RigidBody], contact: Mapping[str, float] | None = None,
                 gravity: ArrayLike = (0.0, 0.0, -9.81), ground: bool = True) -> None:
        """Bodies in order, contact parameters (``mu``, ``restitution``), gravity, ground plane."""
        super().__init__({}, contact or {})
        if not bodies:
            raise ValueError("Rigid3D: needs at least one body")
        names = [body.name for body in bodies]
        if len(set(names)) != len(names):
            raise ValueError(f"Rigid3D: body names must be unique, got {names}")
        self.bodies: tuple[RigidBody, ...] = tuple(bodies)
        self.gravity: FloatArray = as_vector(gravity, "Rigid3D.gravity", 3)
        self.ground = bool(ground)
        n = len(self.bodies)
        self.nq = 7 * n
        self.nv = 6 * n
        self.q_names = tuple(f"{b.name}.{c}" for b in self.bodies
                             for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
        self.v_names = tuple(f"{b.name}.{c}" for b in self.bodies
                             for c in ("vx", "vy", "vz", "wx", "wy", "wz"))
        self._inertia = [b.inertia for b in self.bodies]
        self._masses = np.array([b.mass for b in self.bodies])
        self._spheres = [i for i, b in enumerate(self.bodies) if b.shape == "sphere"]

    # ------------------------------------------------------------------ configuration

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> Rigid3D:
        """Build from a ``[system]`` table with ``bodies`` (list of tables), optional
        ``gravity`` (3 numbers, default ``[0, 0, -9.81]``), ``ground`` (bool, default true)
        and an empty ``parameters``; raises :class:`ParameterError` naming the key."""
        resolve_parameters(cls.parameters, validate.table(table, "parameters", "system"), "system.parameters")
        contact_values = resolve_parameters(CONTACT_PARAMETERS, contact, "contact")
        gravity = (validate.vector(table["gravity"], "system.gravity", 3) if "gravity" in table
                   else np.array([0.0, 0.0, -9.81]))
        ground = table.get("ground", True)
        if not isinstance(ground, bool):
            raise ParameterError("system.ground", f"system.ground: expected true or false, got {ground!r}")
        if "bodies" not in table:
            raise ParameterError("system.bodies", "system.bodies: missing; give at least one "
                                 "[[system.bodies]] table")
        tables = table["bodies"]
        if not isinstance(tables, list) or not tables:
            raise ParameterError("system.bodies", "system.bodies: expected a non-empty list of "
                                 f"tables ([[system.bodies]]), got {tables!r}")
        bodies = [_parse_body(body, f"system.bodies[{i}]", i) for i, body in enumerate(tables)]
        seen: dict[str, int] = {}
        for i, body in enumerate(bodies):
            if body.name in seen:
                raise ParameterError(f"system.bodies[{i}].name",
                                     f"system.bodies[{i}].name: duplicate body name {body.name!r} "
                                     f"(also system.bodies[{seen[body.name]}])")
            seen[body.name] = i
        return cls(bodies, contact_values, gravity=gravity, ground=ground)

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """(q0, v0) from the bodies' positions, orientations and velocities."""
        q0 = np.concatenate([np.concatenate((b.position, b.orientation)) for b in self.bodies])
        v0 = np.concatenate([np.concatenate((b.velocity, b.angular_velocity)) for b in self.bodies])
        return q0, v0

    # ------------------------------------------------------------------ kinematics

    def _split(self, q: ArrayLike) -> tuple[FloatArray, list[FloatArray]]:
        """Positions (N, 3) and rotation matrices of every body at ``q``."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        return qq[:, :3], [quat_to_matrix(quat) for quat in qq[:, 3:]]

    def inertia_world(self, q: ArrayLike) -> list[FloatArray]:
        """``R_i I_i R_i^T`` of every body (symmetrized against rounding)."""
        _, rotations = self._split(q)
        out = []
        for R, inertia in zip(rotations, self._inertia, strict=True):
            Iw = (R * inertia) @ R.T
            out.append(0.5 * (Iw + Iw.T))
        return out

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        """``M = blockdiag(m I3, R I R^T)``, ``tau = [m g; -w x (R I R^T w)] (+ u)``
        (Featherstone 2008, eq. 2.67, expressed about the centre of mass in world axes)."""
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        M = np.zeros((self.nv, self.nv))
        tau = np.zeros((len(self.bodies), 6))
        for i, Iw in enumerate(self.inertia_world(q)):
            m = self._masses[i]
            s = 6 * i
            M[s:s + 3, s:s + 3] = m * np.eye(3)
            M[s + 3:s + 6, s + 3:s + 6] = Iw
            w = vv[i, 3:]
            tau[i, :3] = m * self.gravity
            tau[i, 3:] = -np.cross(w, Iw @ w)
        tau_flat = tau.reshape(-1)
        if u is not None:
            tau_flat = tau_flat + as_vector(u, "u", self.nv)
        return Dynamics(M=M, tau=tau_flat)

    def integrate(self, q: ArrayLike, v_next: ArrayLike, dt: float) -> FloatArray:
        """``x' = x + h v'``, ``quat' = exp(h w'/2) * quat`` (world-frame ``w'`` on the left),
        normalized to unit length."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        vv = as_vector(v_next, "v_next", self.nv).reshape(-1, 6)
        out = np.empty_like(qq)
        out[:, :3] = qq[:, :3] + dt * vv[:, :3]
        for i in range(len(self.bodies)):
            rotated = quat_multiply(quat_exp(dt * vv[i, 3:]), qq[i, 3:])
            out[i, 3:] = quat_normalize(rotated, "q")
        return out.reshape(-1)

    def qdot(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``qdot = N(q) v`` per body: ``xdot = v`` and ``quat_dot = 1/2 [0, w] * quat``
        (world-frame ``w`` on the left, the derivative of :meth:`integrate`'s
        ``exp(h w / 2) * quat`` at ``h = 0``). Used by the continuous-time integrators."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        out = np.empty_like(qq)
        out[:, :3] = vv[:, :3]
        for i in range(len(self.bodies)):
            out[i, 3:] = 0.5 * quat_multiply(np.concatenate(([0.0], vv[i, 3:])), qq[i, 3:])
        return out.reshape(-1)

    # ------------------------------------------------------------------ contacts

    def contact_names(self) -> list[str]:
        """A label per contact, in the order of :meth:`contacts`."""
        names: list[str] = []
        if self.ground:
            for body in self.bodies:
                if body.shape == "box":
                    names.extend(f"{body.name}.corner({','.join('-' if s < 0 else '+' for s in signs)})"
                                 for signs in _CORNER_SIGNS)
                else:
                    names.append(f"{body.name}.ground")
        names.extend(f"{self.bodies[a].name}|{self.bodies[b].name}"
                     for a, b in itertools.combinations(self._spheres, 2))
        return names

    def _candidates(self, q: ArrayLike) -> list[_Candidate]:
        """Per contact: ``(phi, point, frame rows (3, 3) = [n; t1; t2], [(body, r, sign)])``."""
        positions, rotations = self._split(q)
        frame_ground = np.array([_EZ, _EX, _EY])
        out: list[_Candidate] = []
        if self.ground:
            for i, body in enumerate(self.bodies):
                if body.shape == "box":
                    offsets = (_CORNER_SIGNS * body.size) @ rotations[i].T
                    for r in offsets:
                        point = positions[i] + r
                        out.append((float(point[2]), point, frame_ground, [(i, r, 1.0)]))
                else:
                    r = -body.radius * _EZ
                    point = positions[i] + r
                    out.append((float(point[2]), point, frame_ground, [(i, r, 1.0)]))
        for a, b in itertools.combinations(self._spheres, 2):
            ra, rb = self.bodies[a].radius, self.bodies[b].radius
            gap = positions[b] - positions[a]
            dist = float(np.linalg.norm(gap))
            n = gap / dist if dist > 1e-12 else _EZ.copy()
            t1, t2 = tangent_basis(n)
            point = 0.5 * ((positions[a] + ra * n) + (positions[b] - rb * n))
            out.append((dist - ra - rb, point, np.array([n, t1, t2]),
                        [(b, point - positions[b], 1.0), (a, point - positions[a], -1.0)]))
        return out

    def contact_points(self, q: ArrayLike) -> FloatArray:
        """(nc, 3) world positions of the contact points, in the order of :meth:`contacts`."""
        candidates = self._candidates(q)
        return np.array([c[1] for c in candidates]).reshape(len(candidates), 3)

    def contacts(self, q: ArrayLike) -> Contacts:
        """All point-contact candidates (see the module docstring for their order); rows per
        contact ``[n, t1, t2]``, each ``sum_body sign [d^T, (r x d)^T]`` (reference 000,
        "Contact Jacobian")."""
        candidates = self._candidates(q)
        nc = len(candidates)
        if nc == 0:
            return Contacts.empty(self.nv, 3)
        J = np.zeros((3 * nc, self.nv))
        phi = np.empty(nc)
        for k, (gap, _point, frame, terms) in enumerate(candidates):
            phi[k] = gap
            for body, r, sign in terms:
                cols = slice(6 * body, 6 * body + 6)
                for row, d in enumerate(frame):
                    J[3 * k + row, cols] += sign * point_row(r, d)
        return Contacts(phi=phi, J=J, mu=np.full(nc, self.mu),
                        restitution=np.full(nc, self.restitution), dim=3)

    # ------------------------------------------------------------------ energy

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        """(kinetic, potential): ``sum 1/2 m |v|^2 + 1/2 w . (R I R^T w)`` and ``-sum m g . x``."""
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        kinetic = 0.0
        for i, Iw in enumerate(self.inertia_world(q)):
            kinetic += 0.5 * self._masses[i] * float(vv[i, :3] @ vv[i, :3])
            kinetic += 0.5 * float(vv[i, 3:] @ Iw @ vv[i, 3:])
        return kinetic, self.potential_energy(q)

    def potential_energy(self, q: ArrayLike) -> float:
        """``-sum_i m_i g . x_i`` (zero at the origin)."""
        positions = as_vector(q, "q", self.nq).reshape(-1, 7)[:, :3]
        return -float(self._masses @ (positions @ self.gravity))

    def describe(self) -> str:
        """One line: the bodies, gravity, ground and contact parameters."""
        bodies = ", ".join(f"{b.name}:{b.shape}(m={b.mass:g})" for b in self.bodies)
        gravity = ", ".join(f"{g:g}" for g in self.gravity)
        return (f"{self.type_name}({bodies}; g=[{gravity}], ground={self.ground}; "
                f"mu={self.mu:g}, e={self.restitution:g})")


# ---------------------------------------------------------------------- parsing


def _parse_body(table: Any, prefix: str, index: int) -> RigidBody:
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
    if shape == "box":
        if "radius" in table:
            raise ParameterError(f"{prefix}.radius", f"{prefix}.radius: only spheres have a radius; "
                                 "give a box its half extents as size = [a, b, c]")
        if "size" not in table:
            raise ParameterError(f"{prefix}.size", f"{prefix}.size: missing; a box needs its half "
                                 "extents [a, b, c]")
        size = validate.vector(table["size"], f"{prefix}.size", 3)
        if np.any(size <= 0):
            raise ParameterError(f"{prefix}.size",
                                 f"{prefix}.size: half extents must be > 0, got {list(size)}")
    else:
        if ("size" in table) == ("radius" in table):
            which = "both given" if "size" in table else "neither given"
            raise ParameterError(f"{prefix}.radius", f"{prefix}.radius: give a sphere exactly one of "
                                 f"radius = r or size = [r] ({which})")
        if "radius" in table:
            size = np.array([validate.number(table["radius"], f"{prefix}.radius", positive=True)])
        else:
            size = validate.vector(table["size"], f"{prefix}.size", 1)
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
    return RigidBody(name=name, shape=shape, size=size, mass=mass, position=position,
                     orientation=orientation / norm, velocity=velocity, angular_velocity=angular)
