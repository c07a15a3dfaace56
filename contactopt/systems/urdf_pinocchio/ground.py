"""Contacts of collision primitives with the ground plane ``z = 0``, built as MuJoCo builds
them so that both URDF backends hand the formulations the same rows.

MuJoCo's plane collisions (``src/engine/engine_collision_primitive.c``: ``mjc_PlaneSphere``,
``mjc_PlaneCylinder``, ``mjc_PlaneBox``), restated for a plane through the origin with normal
``n = e_z``; every contact carries its separation ``dist`` and its point ``pos`` half-way between
the geometry's deepest point and the plane (``pos = x - n dist / 2``), and is kept once
``dist <= margin``:

* sphere (centre ``c``, radius ``r``): one contact, ``dist = n.c - r``;
* cylinder (centre ``c``, unit axis ``a`` turned towards the plane, radius ``r``, half-length
  ``h``): the rim point nearest the plane at the near disk (``c + h a + w``, ``w`` the radius
  vector most against ``n``), stop if it is beyond the margin; the same rim point at the far
  disk; and, when the near disk's points at a third of the way round (``dist0 + h a.n - (w.n)/2``)
  are within the margin, the two points ``c + h a - w / 2 +- (sqrt 3 / 2) r (w x a)/|w x a|``;
* box (centre ``c``, rotation ``R``, half-sizes ``s``): the corners ``c + R (+-s_x, +-s_y,
  +-s_z)`` in MuJoCo's order (bit 0: x, bit 1: y, bit 2: z), skipping those above the margin and
  those on the upper half (``n.(R corner) > 0``), at most 4.

The frame rows are ``[n, t1, t2]`` of MuJoCo's ``mju_makeFrame`` with no tangent hint
(``src/engine/engine_util_spatial.c``): ``t1 = e_y`` made orthogonal to ``n`` (``e_z`` when
``|n_y| >= 0.5``), ``t2 = n x t1``; for the ground ``[e_z, e_y, -e_x]``, which is what
``data.contact.frame`` holds for a box on MuJoCo's plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
NORMAL = np.array([0.0, 0.0, 1.0])
_MINVAL = 1e-15  # MuJoCo's mjMINVAL


def contact_frame(normal: FloatArray) -> FloatArray:
    """``[n, t1, t2]`` (rows) of ``mju_makeFrame`` without a tangent hint (module docstring)."""
    n = normal / np.linalg.norm(normal)
    t1 = np.array([0.0, 1.0, 0.0]) if -0.5 < n[1] < 0.5 else np.array([0.0, 0.0, 1.0])
    t1 = t1 - n * (n @ t1)
    t1 /= np.linalg.norm(t1)
    return np.vstack([n, t1, np.cross(n, t1)])


@dataclass(frozen=True)
class Touch:
    """One contact of a geometry with the ground: separation and point (world)."""

    dist: float
    pos: FloatArray


def sphere(centre: FloatArray, radius: float, margin: float) -> list[Touch]:
    dist = float(NORMAL @ centre) - radius
    if dist > margin:
        return []
    return [Touch(dist, centre - NORMAL * (dist / 2 + radius))]


def cylinder(centre: FloatArray, rotation: FloatArray, radius: float, half_length: float,
             margin: float) -> list[Touch]:
    axis = rotation[:, 2].copy()
    along = float(NORMAL @ axis)
    if along > 0:  # the axis towards the plane
        axis, along = -axis, -along
    dist0 = float(NORMAL @ centre)
    rim = axis * along - NORMAL  # -n without its component along the axis
    length = float(np.linalg.norm(rim))
    rim = rim * (radius / length) if length >= _MINVAL else rotation[:, 0] * radius  # disk parallel: x axis
    drop = float(rim @ NORMAL)
    axis, along = axis * half_length, along * half_length
    out: list[Touch] = []
    first = dist0 + along + drop
    if first > margin:
        return out
    out.append(Touch(first, centre + rim + axis - NORMAL * first / 2))
    second = dist0 - along + drop
    if second <= margin:
        out.append(Touch(second, centre + rim - axis - NORMAL * second / 2))
    third = dist0 + along - drop / 2
    if third <= margin:
        side = np.cross(rim, axis)
        side = side / np.linalg.norm(side) * radius * np.sqrt(3.0) / 2
        for sign in (1.0, -1.0):
            out.append(Touch(third, centre + sign * side + axis - rim / 2 - NORMAL * third / 2))
    return out


def box(centre: FloatArray, rotation: FloatArray, half: FloatArray, margin: float) -> list[Touch]:
    dist0 = float(NORMAL @ centre)
    out: list[Touch] = []
    for i in range(8):
        local = np.array([half[0] if i & 1 else -half[0], half[1] if i & 2 else -half[1],
                          half[2] if i & 4 else -half[2]])
        corner = rotation @ local
        depth = float(NORMAL @ corner)
        if dist0 + depth > margin or depth > 0:
            continue
        dist = dist0 + depth
        out.append(Touch(dist, centre + corner - NORMAL * dist / 2))
        if len(out) >= 4:
            break
    return out


def lowest_point(centre: FloatArray, rotation: FloatArray, half_extent: FloatArray) -> float:
    """The lowest ``z`` of a geometry's bounding box (half extents in its own frame), as
    MuJoCo's ``geom_aabb`` gives it (the ``mujoco`` backend's ``lift``)."""
    return float(centre[2] - np.abs(rotation[2]) @ half_extent)
