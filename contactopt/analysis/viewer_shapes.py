"""The shapes of a :class:`~contactopt.systems.drawing.Drawing` as meshcat objects with one pose
per frame, for the interactive viewer (:mod:`contactopt.analysis.viewer`).

A drawing lists its shapes in world coordinates at one configuration; the viewer needs, instead,
one geometry per shape made once and a rigid pose (position, rotation, scale) per frame that the
page animates. Each shape kind gives both (meshcat's geometries follow three.js: a cylinder's
axis is its local ``y``):

- 3-D ``Box``: a box of twice the half extents at ``centre`` with ``rotation``;
- 3-D ``Ball``: a unit sphere scaled by ``radius * scale`` (an ellipsoid for MJCF), rotated;
- 3-D ``Tube`` and 2-D ``Segment``: a unit-length cylinder along ``end - start``, scaled to the
  segment's length, centred at its midpoint (capsule caps are not drawn);
- 2-D shapes live in the vertical plane ``y = 0``: drawing coordinates ``(h, v)`` become
  ``(x, 0, z)``; a ``Disk`` is a cylinder along ``y`` with a spoke showing its ``angle``, a
  ``Polygon`` a prism whose pose each frame is the rigid motion that best maps its first-frame
  vertices onto the current ones (the least-squares rotation of Kabsch, *Acta Cryst.* A32, 1976;
  exact for the rigid bodies drawn here), a ``Dot`` a small sphere;
- the 3-D ground ``Plane`` and 2-D ``Line`` (ground, wall) are scenery: one slab, never moved.

A drawing's contact patches (hydroelastic contact surfaces) change their mesh from frame to
frame, so they are no posed shapes: :func:`patch_keyframes` picks the frames at which they are
drawn anew (each mesh holds until the next), and :func:`patch_object` makes one frame's patches
a single mesh, each vertex coloured by the mean pressure of its polygons (``viridis``, as the
videos), drawn over the bodies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.systems.drawing import Ball, Box, Disk, Dot, Drawing, Line, Plane, Polygon, Segment, Shape, Tube

FloatArray = NDArray[np.float64]

__all__ = ["MAX_PATCH_FRAMES", "Pose", "ShapeModel", "lift", "model_shapes", "patch_keyframes", "patch_object",
           "rotation_onto"]

SCENERY_COLOUR = 0xB8B8B8
#: The most meshes of contact patches one run's page carries.
MAX_PATCH_FRAMES = 100


@dataclass(frozen=True)
class Pose:
    """A rigid pose with a scale: ``x_world = position + rotation @ (scale * x_local)``."""

    position: FloatArray
    rotation: FloatArray
    scale: FloatArray


@dataclass(frozen=True)
class ShapeModel:
    """One shape: its meshcat objects (``(name, object)``, drawn in its local frame), whether it
    is scenery (ground, wall) or a body, and its pose at each frame."""

    objects: tuple[tuple[str, Any], ...]
    scenery: bool
    poses: tuple[Pose, ...]


def lift(point: Any, dim: int) -> FloatArray:
    """A drawing point in 3-D: ``(h, v)`` of a 2-D drawing is ``(h, 0, v)``."""
    p = np.asarray(point, dtype=np.float64).reshape(-1)
    return p.copy() if dim == 3 else np.array([p[0], 0.0, p[1]])


def rotation_onto(direction: FloatArray) -> FloatArray:
    """The smallest rotation taking the local ``+y`` axis onto the unit vector ``direction``
    (Rodrigues' formula about ``y x d``); the identity for a zero vector."""
    d = np.asarray(direction, dtype=np.float64)
    norm = float(np.linalg.norm(d))
    if norm == 0.0:
        return np.eye(3)
    d = d / norm
    y = np.array([0.0, 1.0, 0.0])
    cos = float(y @ d)
    if cos < -1.0 + 1e-12:  # opposite: half a turn about x
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross(y, d)
    skew = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + skew + skew @ skew / (1.0 + cos)


def _plane_rotation(angle: float) -> FloatArray:
    """The 3-D rotation of a 2-D drawing turned by ``angle`` (counterclockwise in ``(h, v)``):
    about ``-y``, since ``(x, z)`` is ``(h, v)``."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])


def _segment_pose(start: FloatArray, end: FloatArray) -> Pose:
    axis = end - start
    return Pose(0.5 * (start + end), rotation_onto(axis), np.array([1.0, float(np.linalg.norm(axis)), 1.0]))


def _kabsch_2d(reference: FloatArray, points: FloatArray) -> tuple[float, FloatArray]:
    """(angle, centroid) of the rigid motion mapping ``reference`` (k, 2), centred, onto
    ``points`` (k, 2) in the least-squares sense (module docstring)."""
    centre = points.mean(axis=0)
    moved = points - centre
    # angle maximising sum_i <R r_i, p_i>: atan2 of the summed cross and dot products
    cross = float(np.sum(reference[:, 0] * moved[:, 1] - reference[:, 1] * moved[:, 0]))
    dot = float(np.sum(reference * moved))
    return math.atan2(cross, dot), centre


class _Builder:
    """Geometry of one drawing's shapes in a view whose diagonal is ``size`` metres."""

    def __init__(self, meshcat_geometry: Any, dim: int, size: float, colour: int) -> None:
        self.g, self.dim, self.size, self.colour = meshcat_geometry, dim, size, colour
        self.depth = 0.08 * size  # thickness of 2-D bodies seen in 3-D

    def material(self, colour: int | None = None) -> Any:
        return self.g.MeshPhongMaterial(color=self.colour if colour is None else colour)

    def mesh(self, geometry: Any, colour: int | None = None) -> Any:
        return self.g.Mesh(geometry, self.material(colour))

    def objects(self, shape: Shape) -> tuple[tuple[str, Any], ...]:
        g = self.g
        if isinstance(shape, Box):
            return (("box", self.mesh(g.Box([float(x) for x in 2.0 * np.asarray(shape.half_extents)]))),)
        if isinstance(shape, Ball):
            return (("ball", self.mesh(g.Sphere(1.0))),)
        if isinstance(shape, Tube):
            return (("tube", self.mesh(g.Cylinder(1.0, float(shape.radius)))),)
        if isinstance(shape, Segment):
            return (("link", self.mesh(g.Cylinder(1.0, 0.004 * self.size * shape.width / 3.0))),)
        if isinstance(shape, Dot):
            return (("dot", self.mesh(g.Sphere(0.025 * self.size * shape.size / 8.0))),)
        if isinstance(shape, Disk):
            radius = float(shape.radius)
            parts: list[tuple[str, Any]] = [("disk", self.mesh(g.Cylinder(self.depth, radius)))]
            if shape.angle is not None:  # a spoke from the centre along local +x shows the rotation
                spoke = g.Mesh(g.Box([radius, 1.05 * self.depth, 0.12 * radius]), self.material(0x222222))
                parts.append(("spoke", _Offset(spoke, np.array([0.5 * radius, 0.0, 0.0]))))
            return tuple(parts)
        if isinstance(shape, Polygon):
            return (("prism", self.mesh(self._prism(np.asarray(shape.points, dtype=np.float64)))),)
        if isinstance(shape, Plane):
            return (("ground", self.mesh(g.Box([40.0 * self.size, 40.0 * self.size, 0.002 * self.size]),
                                         SCENERY_COLOUR)),)
        if isinstance(shape, Line):
            return (("line", self.mesh(g.Box([40.0 * self.size, self.depth * 3.0, 0.01 * self.size]),
                                       SCENERY_COLOUR)),)
        raise ContactoptError(f"the viewer cannot draw a {type(shape).__name__}")

    def _prism(self, points: FloatArray) -> Any:
        """A prism of the polygon ``points`` (k, 2) centred on its centroid, ``depth`` thick."""
        local = points - points.mean(axis=0)
        k = local.shape[0]
        half = 0.5 * self.depth
        vertices = np.array([[x, side, z] for side in (-half, half) for x, z in local], dtype=np.float32)
        faces = [[0, i, i + 1] for i in range(1, k - 1)] + [[k, k + i + 1, k + i] for i in range(1, k - 1)]
        faces += [[i, (i + 1) % k, k + (i + 1) % k] for i in range(k)] + [[i, k + (i + 1) % k, k + i] for i in range(k)]
        return self.g.TriangularMeshGeometry(vertices, np.array(faces, dtype=np.uint32))

    def pose(self, shape: Shape, first: Shape) -> Pose:
        one = np.ones(3)
        if isinstance(shape, Box):
            return Pose(lift(shape.centre, 3), np.asarray(shape.rotation, dtype=np.float64).reshape(3, 3), one)
        if isinstance(shape, Ball):
            scale = float(shape.radius) * np.asarray(shape.scale, dtype=np.float64)
            return Pose(lift(shape.centre, 3), np.asarray(shape.rotation, dtype=np.float64).reshape(3, 3), scale)
        if isinstance(shape, Tube | Segment):
            return _segment_pose(lift(shape.start, self.dim), lift(shape.end, self.dim))
        if isinstance(shape, Dot):
            return Pose(lift(shape.point, self.dim), np.eye(3), one)
        if isinstance(shape, Disk):
            return Pose(lift(shape.centre, 2), _plane_rotation(float(shape.angle or 0.0)), one)
        if isinstance(shape, Polygon) and isinstance(first, Polygon):
            reference = np.asarray(first.points, dtype=np.float64)
            angle, centre = _kabsch_2d(reference - reference.mean(axis=0), np.asarray(shape.points, dtype=np.float64))
            return Pose(lift(centre, 2), _plane_rotation(angle), one)
        if isinstance(shape, Plane):
            return Pose(np.array([0.0, 0.0, float(shape.height) - 0.001 * self.size]), np.eye(3), one)
        if isinstance(shape, Line):
            normal = np.asarray(shape.normal, dtype=np.float64)
            angle = math.atan2(float(normal[1]), float(normal[0])) - 0.5 * math.pi  # the slab's +z along normal
            inward = lift(np.asarray(shape.point, dtype=np.float64) - 0.005 * self.size * normal, 2)
            return Pose(inward, _plane_rotation(angle), one)
        raise ContactoptError(f"the viewer cannot draw a {type(shape).__name__}")


class _Offset:
    """A meshcat object drawn displaced by ``offset`` in its parent's frame (a disk's spoke)."""

    def __init__(self, obj: Any, offset: FloatArray) -> None:
        self.obj, self.offset = obj, offset

    def lower(self) -> dict[str, Any]:
        data: dict[str, Any] = self.obj.lower()
        matrix = np.eye(4)
        matrix[:3, 3] = self.offset
        data["object"]["matrix"] = [float(x) for x in matrix.T.reshape(-1)]  # three.js: column-major
        return data


def _lighter(colour: int, amount: float) -> int:
    """``colour`` mixed with white by ``amount`` (0: itself)."""
    channels = [(colour >> shift) & 255 for shift in (16, 8, 0)]
    r, g, b = (round(c + amount * (255 - c)) for c in channels)
    return (r << 16) | (g << 8) | b


def model_shapes(drawings: list[Drawing], meshcat_geometry: Any, size: float, colour: int) -> list[ShapeModel]:
    """The shapes of a run's drawings (one per frame, the same shapes in each) as
    :class:`ShapeModel` (module docstring); ``size`` is the view's diagonal [m]."""
    first = drawings[0]
    for k, drawing in enumerate(drawings):
        if len(drawing.shapes) != len(first.shapes) or any(
                type(a) is not type(b) for a, b in zip(drawing.shapes, first.shapes, strict=True)):
            raise ContactoptError(f"the drawing of frame {k} has other shapes than the first frame's; the viewer "
                                  "animates a fixed set of shapes")
    models = []
    bodies = 0
    for j, shape in enumerate(first.shapes):
        scenery = isinstance(shape, Plane | Line)
        # bodies of one run in the run's colour, lightened in turn so that stacked ones stand apart
        builder = _Builder(meshcat_geometry, first.dim, size, _lighter(colour, (0.0, 0.3, 0.5)[bodies % 3]))
        bodies += not scenery
        poses = (builder.pose(shape, shape),) if scenery else tuple(
            builder.pose(d.shapes[j], shape) for d in drawings)
        models.append(ShapeModel(builder.objects(shape), scenery, poses))
    return models


def _patches_differ(a: Drawing, b: Drawing, size: float, top: float) -> bool:
    """Whether the patches of ``a`` and ``b`` look different: another number or mesh, a vertex
    moved by more than 1e-3 of the view's diagonal ``size``, a pressure changed by more than 2 %
    of the colour scale's ``top``."""
    if len(a.patches) != len(b.patches):
        return True
    for p, q in zip(a.patches, b.patches, strict=True):
        if p.vertices.shape != q.vertices.shape or p.faces.shape != q.faces.shape:
            return True
        if float(np.max(np.abs(p.vertices - q.vertices), initial=0.0)) > 1e-3 * size:
            return True
        if float(np.max(np.abs(p.pressures - q.pressures), initial=0.0)) > 0.02 * top:
            return True
    return False


def patch_keyframes(drawings: list[Drawing], size: float, top: float) -> list[int]:
    """The frames at which a run's patches are drawn anew (module docstring): the first with
    patches, then each whose patches differ from the last drawn (:func:`_patches_differ`), a
    frame without patches after one with them included; every k-th of those when there are
    more than :data:`MAX_PATCH_FRAMES`, the first always kept."""
    chosen: list[int] = []
    for k, drawing in enumerate(drawings):
        if not chosen:
            if drawing.patches:
                chosen.append(k)
        elif _patches_differ(drawings[chosen[-1]], drawing, size, top):
            chosen.append(k)
    if len(chosen) > MAX_PATCH_FRAMES:
        stride = math.ceil(len(chosen) / MAX_PATCH_FRAMES)
        chosen = chosen[::stride]
    return chosen


def patch_object(meshcat_geometry: Any, drawing: Drawing, top: float) -> Any | None:
    """One frame's patches as one meshcat mesh (None without patches): their triangles, each
    vertex coloured by pressure from 0 to ``top``; unlit, two-sided and drawn over the bodies
    (no depth test), as the force arrows are."""
    from contactopt.analysis.render_mpl import pressure_colours

    if not drawing.patches:
        return None
    g = meshcat_geometry
    vertices, faces, colours, start = [], [], [], 0
    for patch in drawing.patches:
        triangles, _ = patch.triangles()
        vertices.append(patch.vertices)
        faces.append(triangles + start)
        colours.append(pressure_colours(patch.vertex_pressures(), top)[:, :3])
        start += patch.vertices.shape[0]
    geometry = g.TriangularMeshGeometry(np.concatenate(vertices).astype(np.float32),
                                        np.concatenate(faces).astype(np.uint32),
                                        color=np.concatenate(colours).astype(np.float32))
    material = g.MeshBasicMaterial(vertexColors=True, side=2, transparent=True, opacity=1.0, depthTest=False)
    return g.Mesh(geometry, material)
