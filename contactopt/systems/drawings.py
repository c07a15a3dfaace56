"""How the built-in system types look (:mod:`contactopt.systems.drawing` primitives), and
:func:`drawing_of`, which asks a system for its drawing.

Order of resolution: a system class that overrides
:meth:`~contactopt.systems.base.System.drawing` (a plugin, or a subclass) is asked first; a
built-in type is drawn by the function registered here for it (or for its nearest base
class); anything else gets None, and the renderer falls back to plotting the coordinates.

Conventions of each picture are those of the system's module: pendulum angles from the
downward vertical (Tedrake 2022, "Simple Double Pendulum"), the four-bar's absolute link
angles (Tedrake 2022, "Bilateral Position Constraints"), planar bodies in the (x, z) plane,
rigid3d bodies with body-to-world rotations from their quaternions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import as_vector
from contactopt.systems import rigid3d_contacts as kernels
from contactopt.systems.base import System
from contactopt.systems.cart import Cart
from contactopt.systems.drawing import (
    Ball,
    Box,
    ContactMarks,
    Disk,
    Dot,
    Drawing,
    Line,
    Patch,
    Plane,
    Polygon,
    Segment,
    Tube,
)
from contactopt.systems.four_bar import FourBar
from contactopt.systems.pendulums import CartesianPendulum, CartPole, DoublePendulum, Pendulum
from contactopt.systems.planar_body import PlanarBody
from contactopt.systems.point_mass import PointMass2D
from contactopt.systems.rigid3d import Rigid3D

FloatArray = NDArray[np.float64]

__all__ = ["drawing_of"]

#: Rows ``[n, t]`` of a contact with the ground line in the (x, z) plane: ``n = +z``, ``t = +x``.
_GROUND_FRAME_2D = np.array([[0.0, 1.0], [1.0, 0.0]])
_FLOOR = Line(np.zeros(2), np.array([0.0, 1.0]))


def _rectangle(x0: float, x1: float, y0: float, y1: float) -> Polygon:
    return Polygon(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))


def _cart(system: Cart, q: FloatArray) -> Drawing:
    """The cart as a square of side 0.2 m whose left face is at ``x`` (``phi = x``), the wall
    at ``x = 0``; the contact acts at the wall along ``+x``."""
    x = float(q[0])
    side = 0.2
    marks = ContactMarks(np.array([[0.0, 0.5 * side]]), np.array([[[1.0, 0.0]]]))
    return Drawing(2, (Line(np.zeros(2), np.array([1.0, 0.0])), _FLOOR, _rectangle(x, x + side, 0.0, side)),
                   marks, ("x", "height"))


def _point_mass(system: PointMass2D, q: FloatArray) -> Drawing:
    """A disk of the contact radius at ``(x, z)`` (a dot when the radius is 0); the ground
    contact at ``(x, z - radius)``."""
    x, z = float(q[0]), float(q[1])
    radius = float(system.params.get("radius", 0.0))
    body = Disk(np.array([x, z]), radius) if radius > 0 else Dot(np.array([x, z]), 10.0)
    marks = ContactMarks(np.array([[x, z - radius]]), _GROUND_FRAME_2D[None])
    return Drawing(2, (_FLOOR, body), marks)


def _planar_body(system: PlanarBody, q: FloatArray) -> Drawing:
    """The disk (with a radius showing ``theta``) or the box's four corners, the ground line,
    and the contact points of :meth:`PlanarBody.contact_points` with frames ``[n, t] = [z, x]``."""
    points = system.contact_points(q)
    if system.shape == "disk":
        body: Disk | Polygon = Disk(q[:2].copy(), system.params["radius"], float(q[2]))
    else:
        body = Polygon(points[[0, 2, 3, 1]])  # corners (-,-), (+,-), (+,+), (-,+) around the box
    marks = ContactMarks(points, np.broadcast_to(_GROUND_FRAME_2D, (points.shape[0], 2, 2)))
    return Drawing(2, (_FLOOR, body), marks)


def _pendulum(system: Pendulum, q: FloatArray) -> Drawing:
    """Rod from the pivot to the bob at ``l (sin theta, -cos theta)``."""
    theta, length = float(q[0]), system.params["l"]
    bob = length * np.array([math.sin(theta), -math.cos(theta)])
    return Drawing(2, (Segment(np.zeros(2), bob), Dot(np.zeros(2), 5.0), Dot(bob, 12.0)), None, ("x", "y"))


def _double_pendulum(system: DoublePendulum, q: FloatArray) -> Drawing:
    """Links to ``p1 = l1 (s1, -c1)`` and ``p2 = p1 + l2 (s12, -c12)`` (theta2 relative)."""
    t1, t2 = float(q[0]), float(q[1])
    p = system.params
    p1 = p["l1"] * np.array([math.sin(t1), -math.cos(t1)])
    p2 = p1 + p["l2"] * np.array([math.sin(t1 + t2), -math.cos(t1 + t2)])
    return Drawing(2, (Segment(np.zeros(2), p1), Segment(p1, p2), Dot(np.zeros(2), 5.0), Dot(p1, 10.0),
                       Dot(p2, 10.0)), None, ("x", "y"))


def _cartpole(system: CartPole, q: FloatArray) -> Drawing:
    """The cart (0.4 l wide, 0.2 l high, centred on the rail ``y = 0``) and the pole to
    ``(x + l sin theta, -l cos theta)``."""
    x, theta, length = float(q[0]), float(q[1]), system.params["l"]
    tip = np.array([x + length * math.sin(theta), -length * math.cos(theta)])
    w, h = 0.2 * length, 0.1 * length
    return Drawing(2, (Line(np.zeros(2), np.array([0.0, 1.0])), _rectangle(x - w, x + w, -h, h),
                       Segment(np.array([x, 0.0]), tip), Dot(tip, 12.0)), None, ("x", "y"))


def _cartesian_pendulum(system: CartesianPendulum, q: FloatArray) -> Drawing:
    """Rod from the origin to the mass at ``(x, y)``; the floor line and its contact below
    the mass when the system has a floor."""
    bob = q[:2].copy()
    shapes: list[Any] = [Segment(np.zeros(2), bob), Dot(np.zeros(2), 5.0), Dot(bob, 12.0)]
    marks = None
    if system.floor is not None:
        shapes.insert(0, Line(np.array([0.0, system.floor]), np.array([0.0, 1.0])))
        marks = ContactMarks(np.array([[bob[0], system.floor]]), _GROUND_FRAME_2D[None])
    return Drawing(2, tuple(shapes), marks, ("x", "y"))


def _four_bar(system: FourBar, q: FloatArray) -> Drawing:
    """Crank, coupler and rocker from :meth:`FourBar.joint_points`; the two ground pivots."""
    o, a, coupler_end, rocker_tip, pivot = system.joint_points(q)
    return Drawing(2, (Segment(o, a), Segment(a, coupler_end), Segment(pivot, rocker_tip), Dot(o, 7.0),
                       Dot(pivot, 7.0), Dot(a, 5.0), Dot(coupler_end, 5.0)), None, ("x", "y"))


def _rigid3d(system: Rigid3D, q: FloatArray) -> Drawing:
    """Boxes and spheres at their poses, the ground plane ``z = 0`` when on; contact points
    and frames ``[n, t1, t2]`` of every contact (rigid3d module docstring); the hydroelastic
    contact surfaces' polygons with their pressures as patches."""
    rows = q.reshape(-1, 7)
    rotations = kernels.rotations(rows[:, 3:])
    shapes: list[Any] = [Plane(0.0)] if system.ground else []
    for body, row, rotation in zip(system.bodies, rows, rotations, strict=True):
        if body.shape == "box":
            shapes.append(Box(row[:3].copy(), rotation, body.size))
        elif body.shape == "sphere":
            shapes.append(Ball(row[:3].copy(), body.radius, rotation))
        else:  # a soft cylinder or capsule along its z axis
            shapes.append(Tube(row[:3] - body.size[1] * rotation[:, 2], row[:3] + body.size[1] * rotation[:, 2],
                               float(body.size[0])))
    _phi, points, frames, _terms, _offsets = system._geometry(q)
    patch = system.hydro.rows(*system._split(q), system.plane)  # hydroelastic rows: their quadrature points
    points = np.concatenate([points, *[rows.points for _, rows in patch]])
    frames = np.concatenate([frames, *[rows.frames for _, rows in patch]])
    patches = tuple(Patch(s.vertices, s.faces, s.pressures, rows.count) for s, rows in patch)  # their polygons
    return Drawing(3, tuple(shapes), ContactMarks(points, np.array(frames)), patches=patches)


def _mjcf(system: System, q: FloatArray) -> Drawing:
    from contactopt.systems.mjcf.drawing import mjcf_drawing

    return mjcf_drawing(system, q)


_BUILTIN: dict[type[System], Callable[[Any, FloatArray], Drawing]] = {
    Cart: _cart, PointMass2D: _point_mass, PlanarBody: _planar_body, Pendulum: _pendulum,
    DoublePendulum: _double_pendulum, CartPole: _cartpole, CartesianPendulum: _cartesian_pendulum,
    FourBar: _four_bar, Rigid3D: _rigid3d,
}


def _builtin_for(cls: type) -> Callable[[Any, FloatArray], Drawing] | None:
    from contactopt.systems.mjcf.system import MjcfSystem

    for base in cls.__mro__:
        if base is MjcfSystem:
            return _mjcf
        if base in _BUILTIN:
            return _BUILTIN[base]
    return None


def drawing_of(system: System, q: ArrayLike) -> Drawing | None:
    """The drawing of ``system`` at ``q``: its own :meth:`System.drawing` if its class
    overrides it, else the built-in picture of its type, else None (no geometry known)."""
    qq = as_vector(q, "q", system.nq)
    if type(system).drawing is not System.drawing:
        drawing = system.drawing(qq)
        if drawing is not None and not isinstance(drawing, Drawing):
            raise TypeError(f"{type(system).__name__}.drawing must return a Drawing or None, "
                            f"got {type(drawing).__name__}")
        return drawing
    builder = _builtin_for(type(system))
    return None if builder is None else builder(system, qq)
