"""An MJCF model as :mod:`contactopt.systems.drawing` shapes, for the matplotlib renderer
(used when MuJoCo's own OpenGL renderer cannot make a context).

MuJoCo's kinematics at ``q`` (``mj_fwdPosition``, the same evaluation the ``mjcf`` system's
contacts come from) give every geom's pose (``geom_xpos``, ``geom_xmat``); each visible geom
(groups 0-2, MuJoCo's default) becomes a shape of its type (MuJoCo XML reference, "geom"):
sphere -> :class:`Ball` (``size[0]`` the radius), ellipsoid -> a scaled ball, box ->
:class:`Box` (``size`` the half extents), capsule and cylinder -> :class:`Tube` along the
geom's z axis (``size = [radius, half length]``), a horizontal plane -> the ground
:class:`Plane`, a mesh -> the box of its axis-aligned bounding box (``geom_aabb``). Height
fields and SDFs are not drawn. The contacts are those of :meth:`MjcfSystem.contacts` (MuJoCo's
contact list with ``exclude <= 1``), at ``contact.pos`` with the frame rows ``contact.frame``
(normal first, from geom1 to geom2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.drawing import Ball, Box, ContactMarks, Drawing, Plane, Tube

FloatArray = NDArray[np.float64]

__all__ = ["mjcf_drawing"]

#: Geom groups MuJoCo shows by default (``mjvOption.geomgroup``).
VISIBLE_GROUPS = (0, 1, 2)


def mjcf_drawing(system: Any, q: FloatArray) -> Drawing:
    """The drawing of an :class:`~contactopt.systems.mjcf.system.MjcfSystem` at ``q`` (module docstring)."""
    mujoco, model = system.mujoco, system.model
    data = system._evaluate_position(q)
    types = mujoco.mjtGeom
    shapes: list[Any] = []
    for g in range(model.ngeom):
        if int(model.geom_group[g]) not in VISIBLE_GROUPS or float(model.geom_rgba[g, 3]) == 0.0:
            continue
        kind = int(model.geom_type[g])
        size = np.array(model.geom_size[g], dtype=np.float64)
        centre = np.array(data.geom_xpos[g], dtype=np.float64)
        rotation = np.array(data.geom_xmat[g], dtype=np.float64).reshape(3, 3)
        if kind == int(types.mjGEOM_PLANE):
            if abs(rotation[2, 2]) > 1.0 - 1e-9:  # horizontal: the ground
                shapes.insert(0, Plane(float(centre[2])))
        elif kind == int(types.mjGEOM_SPHERE):
            shapes.append(Ball(centre, float(size[0]), rotation))
        elif kind == int(types.mjGEOM_ELLIPSOID):
            shapes.append(Ball(centre, 1.0, rotation, size.copy()))
        elif kind == int(types.mjGEOM_BOX):
            shapes.append(Box(centre, rotation, size))
        elif kind in (int(types.mjGEOM_CAPSULE), int(types.mjGEOM_CYLINDER)):
            axis = rotation[:, 2] * size[1]
            shapes.append(Tube(centre - axis, centre + axis, float(size[0])))
        elif kind == int(types.mjGEOM_MESH):
            aabb = np.array(model.geom_aabb[g], dtype=np.float64)  # centre offset, half sizes
            shapes.append(Box(centre + rotation @ aabb[:3], rotation, aabb[3:]))
    contacts = data.contact
    ncon = int(data.ncon)
    keep = np.flatnonzero(np.asarray(contacts.exclude)[:ncon] <= 1) if ncon else np.zeros(0, dtype=np.int64)
    points = np.asarray(contacts.pos)[:ncon][keep].reshape(-1, 3).copy()
    frames = np.asarray(contacts.frame)[:ncon][keep].reshape(-1, 3, 3).copy()
    return Drawing(3, tuple(shapes), ContactMarks(points, frames))
