"""Contacts of :mod:`contactopt.systems.rigid3d` beyond the analytic ones: the ground plane of
any orientation and the body pairs that involve a box (box-box, box-sphere), found by MuJoCo's
own narrow phase (``mj_collision``; MuJoCo documentation, "Computation: Collision detection").

Ground plane (``[system] ground_normal``, ``ground_point``): the half space
``n . (p - p0) >= 0``; ``n`` is normalized, its frame is ``[n; t1; t2]`` with ``(t1, t2)``
from :func:`~contactopt.systems.geometry.tangent_basis` (``n = +z`` gives ``[z; x; y]``, the
historical ground frame, so the default plane ``z = 0`` is unchanged). Box corners and a
sphere's point nearest to the plane are exact point contacts with ``phi = n . (p - p0)``.

Body pairs with a box: one small generated MJCF model holds every body that is in such a pair
as a **mocap** body carrying one geom of its shape, and one explicit ``<pair>`` per body pair
``(A, B)``, ``A < B`` in scene order, with ``margin`` = the pair's collision margin (contacts
with a gap below it are candidates: the time-stepping programs need them before the bodies
touch). Per call the poses are written to ``mocap_pos`` / ``mocap_quat`` (the same
scalar-first quaternions), then ``mj_kinematics`` and ``mj_collision``; each contact gives
``phi = dist`` (signed, negative inside), the point ``pos`` (MuJoCo's midpoint between the
surfaces) and the normal ``frame[0:3]`` pointing from ``geom1`` to ``geom2``, flipped where
MuJoCo ordered the geoms ``(B, A)`` (it orders them by geom type) so that it points from ``A``
to ``B``. MuJoCo's box-box routine returns up to 8 points per pair, enough for a face resting
on a face. The contacts come out per pair in pair order (then in MuJoCo's order), stably
sorted by ``(A, B)`` again to be sure.

MuJoCo is an optional dependency: a scene with a box pair and no ``mujoco`` package is refused
when the system is built, naming the two bodies and the install hint.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import as_vector
from contactopt.systems import validation as validate
from contactopt.systems.base import ParameterError
from contactopt.systems.geometry import tangent_basis
from contactopt.systems.rigid3d_bodies import RigidBody

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["COLLISION_MARGIN_FRACTION", "HORIZONTAL_GROUND", "GroundPlane", "PairCollider", "PairContacts",
           "body_pairs", "collider_pairs", "parse_collision_keys", "parse_ground"]

#: Default collision margin of a body pair, as a fraction of the smaller of the two bodies'
#: smallest half extent (or radius): 0.1 m cubes are candidates from 5 cm apart, which a body
#: closes in one step only above 50 m/s at dt = 1e-3 (5 m/s at dt = 1e-2).
COLLISION_MARGIN_FRACTION = 0.5
INSTALL_HINT = "pip install 'contactopt[mujoco]'"


@dataclass(frozen=True)
class GroundPlane:
    """The half space ``n . (p - p0) >= 0``; ``normal`` is a unit vector."""

    normal: FloatArray
    point: FloatArray

    @property
    def offset(self) -> float:
        """``n . p0``: ``phi = n . p - offset``."""
        return float(self.normal @ self.point)

    @property
    def is_horizontal_origin(self) -> bool:
        """Whether this is the plane ``z = 0`` with ``n = +z`` (the analytic fast path)."""
        return bool(np.array_equal(self.normal, [0.0, 0.0, 1.0]) and self.offset == 0.0)

    @property
    def frame(self) -> FloatArray:
        """Rows ``[n; t1; t2]`` (:func:`~contactopt.systems.geometry.tangent_basis`)."""
        t1, t2 = tangent_basis(self.normal)
        return np.array([self.normal, t1, t2])


HORIZONTAL_GROUND = GroundPlane(np.array([0.0, 0.0, 1.0]), np.zeros(3))


def parse_ground(table: Any, ground_on: bool) -> GroundPlane:
    """``ground_normal`` (3 finite numbers, not all zero; normalized) and ``ground_point``
    (3 finite numbers) of a ``[system]`` table; errors name the key."""
    given = [key for key in ("ground_normal", "ground_point") if key in table]
    if given and not ground_on:
        raise ParameterError(f"system.{given[0]}", f"system.{given[0]}: given with ground = false; "
                             "remove it or turn the ground on")
    normal = (validate.vector(table["ground_normal"], "system.ground_normal", 3) if "ground_normal" in table
              else HORIZONTAL_GROUND.normal)
    length = float(np.linalg.norm(normal))
    if not (math.isfinite(length) and length > 1e-12):
        raise ParameterError("system.ground_normal", f"system.ground_normal: {normal.tolist()} has no direction; "
                             "give the plane's normal [nx, ny, nz] pointing to the free side")
    point = (validate.vector(table["ground_point"], "system.ground_point", 3) if "ground_point" in table
             else HORIZONTAL_GROUND.point)
    return GroundPlane(normal / length, point)


def parse_collision_keys(table: Any, ground_on: bool) -> tuple[GroundPlane, bool, float | None]:
    """``(plane, box_pairs, collision_margin)`` of a ``[system]`` table (:func:`parse_ground`;
    ``box_pairs`` a bool, default true; ``collision_margin`` a finite number >= 0 in m, default
    None: per pair); errors name the key."""
    box_pairs = table.get("box_pairs", True)
    if not isinstance(box_pairs, bool):
        raise ParameterError("system.box_pairs", f"system.box_pairs: expected true or false, got {box_pairs!r}")
    margin = (validate.number(table["collision_margin"], "system.collision_margin", nonnegative=True)
              if "collision_margin" in table else None)
    return parse_ground(table, ground_on), box_pairs, margin


def collider_pairs(bodies: Sequence[RigidBody]) -> list[tuple[int, int]]:
    """Every pair ``(A, B)``, ``A < B``, with at least one box, in lexicographic order."""
    return [(a, b) for a in range(len(bodies)) for b in range(a + 1, len(bodies))
            if "box" in (bodies[a].shape, bodies[b].shape)]


@dataclass(frozen=True)
class PairContacts:
    """Contacts of the collider's pairs: bodies ``a < b``, ``phi``, points, unit normals from
    ``a`` to ``b``, and each contact's rank within its pair (for its name)."""

    a: IntArray
    b: IntArray
    phi: FloatArray
    points: FloatArray
    normals: FloatArray
    rank: IntArray

    @property
    def count(self) -> int:
        return int(self.a.shape[0])


def _geom_xml(index: int, body: RigidBody) -> str:
    size = " ".join(repr(float(s)) for s in body.size)
    return (f'<body name="b{index}" mocap="true"><geom name="g{index}" type="{body.shape}" size="{size}" '
            'contype="0" conaffinity="0"/></body>')


class PairCollider:
    """MuJoCo's narrow phase over the body pairs with a box (see the module docstring)."""

    def __init__(self, bodies: Sequence[RigidBody], pairs: Sequence[tuple[int, int]], margin: float | None) -> None:
        """``margin``: the gap below which a pair's contacts are candidates (m); None: per pair
        :data:`COLLISION_MARGIN_FRACTION` times the smaller body's smallest half extent."""
        self._given = (tuple(bodies), tuple(pairs), margin)  # what pickling rebuilds from
        self.pairs = tuple(pairs)
        self.members = np.array(sorted({i for pair in self.pairs for i in pair}), dtype=np.int_)
        mujoco = _load_mujoco(bodies, self.pairs)
        self._mujoco = mujoco
        margins = [margin if margin is not None else
                   COLLISION_MARGIN_FRACTION * min(float(bodies[a].size.min()), float(bodies[b].size.min()))
                   for a, b in self.pairs]
        xml = ("<mujoco><worldbody>" + "".join(_geom_xml(int(i), bodies[i]) for i in self.members)
               + "</worldbody><contact>"
               + "".join(f'<pair geom1="g{a}" geom2="g{b}" margin="{m!r}"/>' for (a, b), m in zip(self.pairs, margins,
                                                                                               strict=True))
               + "</contact></mujoco>")
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        # geom id -> scene body index (the model's geoms follow self.members)
        self._body_of_geom = self.members.copy()
        self._lock = threading.Lock()  # one MjData: one collision at a time

    def __getstate__(self) -> tuple[tuple[RigidBody, ...], tuple[tuple[int, int], ...], float | None]:
        return self._given  # MjModel/MjData and the module are rebuilt (process pools, Dask)

    def __setstate__(self, state: tuple[tuple[RigidBody, ...], tuple[tuple[int, int], ...], float | None]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def collide(self, positions: FloatArray, quaternions: ArrayLike) -> PairContacts:
        """Contacts at the bodies' poses ``positions`` (N, 3) and quaternions (N, 4)."""
        quats = np.asarray(quaternions, dtype=np.float64)
        with self._lock:
            self.data.mocap_pos[:] = positions[self.members]
            self.data.mocap_quat[:] = quats[self.members]
            self._mujoco.mj_kinematics(self.model, self.data)
            self._mujoco.mj_collision(self.model, self.data)
            ncon = int(self.data.ncon)
            found = self.data.contact
            geoms = np.array(found.geom[:ncon], dtype=np.int_).reshape(ncon, 2)
            dist, pos = np.array(found.dist[:ncon], dtype=np.float64), np.array(found.pos[:ncon], dtype=np.float64)
            normals = np.array(found.frame[:ncon, :3], dtype=np.float64)
        first, second = self._body_of_geom[geoms[:, 0]], self._body_of_geom[geoms[:, 1]]
        swapped = first > second
        normals[swapped] *= -1.0
        normals /= np.linalg.norm(normals, axis=1)[:, None]
        a, b = np.minimum(first, second), np.maximum(first, second)
        order = np.lexsort((b, a))  # stable: MuJoCo's order within a pair is kept
        a, b = a[order], b[order]
        new_pair = np.ones(ncon, dtype=bool)
        new_pair[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        starts = np.flatnonzero(new_pair)
        rank = np.arange(ncon) - np.repeat(starts, np.diff(np.append(starts, ncon)))
        return PairContacts(a=a.astype(np.int_), b=b.astype(np.int_), phi=dist[order], points=pos[order],
                            normals=normals[order], rank=rank.astype(np.int_))


def _load_mujoco(bodies: Sequence[RigidBody], pairs: Sequence[tuple[int, int]]) -> Any:
    """The ``mujoco`` module, or one line naming the first pair that needs it."""
    try:
        import mujoco
    except ImportError:
        a, b = pairs[0]
        raise ParameterError("system.bodies", f"system.bodies: contact between {bodies[a].name!r} ({bodies[a].shape}) "
                             f"and {bodies[b].name!r} ({bodies[b].shape}) needs MuJoCo's collision detection: "
                             f"{INSTALL_HINT} (or set [system] box_pairs = false to let them pass through "
                             "each other)") from None
    return mujoco


def body_pairs(system: Any, q: ArrayLike) -> tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray, IntArray]:
    """The pair contacts of a :class:`~contactopt.systems.rigid3d.Rigid3D` ``system`` at ``q``
    in the documented order: bodies ``a < b``, ``phi``, points, unit normals from ``a`` to
    ``b`` and rank within a box pair (-1 for a sphere pair)."""
    positions, _ = system._split(q)
    if system._collider is not None and len(system._spheres) < 2:  # box pairs only
        found = system._collider.collide(positions, as_vector(q, "q", system.nq).reshape(-1, 7)[:, 3:])
        return found.a, found.b, found.phi, found.points, found.normals, found.rank
    a, b = system._pairs(positions) if len(system._spheres) > 1 else (np.zeros(0, np.int_), np.zeros(0, np.int_))
    gap = positions[b] - positions[a]
    dist = np.linalg.norm(gap, axis=1)
    safe = dist > 1e-12
    normals = np.where(safe[:, None], gap / np.where(safe, dist, 1.0)[:, None], np.array([0.0, 0.0, 1.0]))
    ra, rb = system._radii[a], system._radii[b]
    points = 0.5 * ((positions[a] + ra[:, None] * normals) + (positions[b] - rb[:, None] * normals))
    phi, rank = dist - ra - rb, np.full(a.shape[0], -1)
    if system._collider is None:
        return a, b, phi, points, normals, rank
    found = system._collider.collide(positions, as_vector(q, "q", system.nq).reshape(-1, 7)[:, 3:])
    a, b = np.concatenate([a, found.a]), np.concatenate([b, found.b])
    order = np.lexsort((b, a))  # stable: a box pair's contacts keep MuJoCo's order
    return (a[order], b[order], np.concatenate([phi, found.phi])[order],
            np.concatenate([points, found.points])[order], np.concatenate([normals, found.normals])[order],
            np.concatenate([rank, found.rank])[order])
