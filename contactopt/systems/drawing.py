"""Geometry for drawing: what a system looks like at one configuration.

A system describes itself as a :class:`Drawing`, a list of simple shapes in world
coordinates (2-D: ``(horizontal, vertical)``; 3-D: ``(x, y, z)`` with ``z`` up) plus, where it
has contacts, their points and frames so that a renderer can draw contact forces as arrows.
Nothing here draws: :mod:`contactopt.analysis.render` turns drawings into pictures (matplotlib),
so a system type needs no plotting code, only :meth:`~contactopt.systems.base.System.drawing`.

The contact frames follow the contact rows of the system (normal first, as in ``J``), written
in drawing coordinates: row ``j`` of ``frames[k]`` is the world direction of impulse component
``j`` of contact ``k``. The force on the body the contact rows act on is then
``F_k = frames[k]^T lambda_k / h`` (impulses over the step length; docs/architecture.md, "Conventions").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.systems.rigid3d_contacts import CORNER_SIGNS

FloatArray = NDArray[np.float64]

__all__ = ["Ball", "Box", "ContactMarks", "Disk", "Dot", "Drawing", "Line", "Patch", "Plane", "Polygon",
           "Segment", "Shape", "Tube"]


def _vec(value: ArrayLike, name: str, length: int | None = None) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected {length} numbers, got {arr.shape[0]}")
    return arr


@dataclass(frozen=True)
class Segment:
    """A straight link from ``start`` to ``end`` (2-D or 3-D), ``width`` in points."""

    start: FloatArray
    end: FloatArray
    width: float = 3.0

    def extent(self) -> FloatArray:
        return np.array([_vec(self.start, "Segment.start"), _vec(self.end, "Segment.end")])


@dataclass(frozen=True)
class Polygon:
    """A filled 2-D polygon (a box seen from the side, a cart), ``points`` (k, 2) in order."""

    points: FloatArray

    def extent(self) -> FloatArray:
        return np.asarray(self.points, dtype=np.float64).reshape(-1, 2)


@dataclass(frozen=True)
class Disk:
    """A 2-D disk; with ``angle`` a radius drawn at that angle shows its rotation."""

    centre: FloatArray
    radius: float
    angle: float | None = None

    def extent(self) -> FloatArray:
        c = _vec(self.centre, "Disk.centre", 2)
        return np.array([c - self.radius, c + self.radius])


@dataclass(frozen=True)
class Dot:
    """A point mass or a joint: a marker of fixed size on screen (``size`` in points)."""

    point: FloatArray
    size: float = 8.0

    def extent(self) -> FloatArray:
        return _vec(self.point, "Dot.point").reshape(1, -1)


@dataclass(frozen=True)
class Line:
    """An unbounded 2-D line through ``point`` with unit ``normal`` (ground, wall); the solid
    side is ``-normal``. Not counted in the view bounds."""

    point: FloatArray
    normal: FloatArray

    def extent(self) -> FloatArray:
        return np.zeros((0, 2))


@dataclass(frozen=True)
class Box:
    """A 3-D box: centre, rotation (body to world) and half extents."""

    centre: FloatArray
    rotation: FloatArray
    half_extents: FloatArray

    def corners(self) -> FloatArray:
        """(8, 3) world corners, ``itertools.product((-1, 1), repeat=3)`` order."""
        return _vec(self.centre, "Box.centre", 3) + (CORNER_SIGNS * _vec(self.half_extents, "Box.half_extents", 3)) @ \
            np.asarray(self.rotation, dtype=np.float64).reshape(3, 3).T

    def extent(self) -> FloatArray:
        return self.corners()


@dataclass(frozen=True)
class Ball:
    """A 3-D sphere (or, with ``scale``, an ellipsoid); ``rotation`` orients its meridians so
    that spinning shows."""

    centre: FloatArray
    radius: float
    rotation: FloatArray = field(default_factory=lambda: np.eye(3))
    scale: FloatArray = field(default_factory=lambda: np.ones(3))

    def extent(self) -> FloatArray:
        c = _vec(self.centre, "Ball.centre", 3)
        r = self.radius * float(np.max(self.scale))
        return np.array([c - r, c + r])


@dataclass(frozen=True)
class Tube:
    """A 3-D capsule or cylinder of ``radius`` around the segment ``start``-``end``."""

    start: FloatArray
    end: FloatArray
    radius: float

    def extent(self) -> FloatArray:
        ends = np.array([_vec(self.start, "Tube.start", 3), _vec(self.end, "Tube.end", 3)])
        return np.concatenate([ends - self.radius, ends + self.radius])


@dataclass(frozen=True)
class Plane:
    """The 3-D ground plane ``z = height``; drawn under the bodies, not counted in the bounds."""

    height: float = 0.0

    def extent(self) -> FloatArray:
        return np.zeros((0, 3))


Shape = Segment | Polygon | Disk | Dot | Line | Box | Ball | Tube | Plane


@dataclass(frozen=True)
class ContactMarks:
    """Contact points (nc, d) and frames (nc, contact_dim, d) in drawing coordinates, in the
    order of the system's contacts at the same configuration (see the module docstring)."""

    points: FloatArray
    frames: FloatArray

    def __post_init__(self) -> None:
        points = np.asarray(self.points, dtype=np.float64)
        frames = np.asarray(self.frames, dtype=np.float64)
        if points.ndim != 2 or frames.ndim != 3 or frames.shape[0] != points.shape[0] \
                or frames.shape[2] != points.shape[1]:
            raise ValueError(f"ContactMarks: points {points.shape} and frames {frames.shape} do not fit "
                             "((nc, d) and (nc, contact_dim, d))")
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "frames", frames)

    def forces(self, impulses: ArrayLike, dt: float) -> FloatArray | None:
        """(nc, d) world forces ``frames^T lambda / h``; None when ``impulses`` has another
        shape than these contacts (the record belongs to other contacts) or is not finite."""
        imp = np.asarray(impulses, dtype=np.float64)
        if imp.shape != self.frames.shape[:2] or not np.all(np.isfinite(imp)) or not dt > 0:
            return None
        return np.einsum("kj,kjd->kd", imp, self.frames) / dt


@dataclass(frozen=True)
class Patch:
    """A contact surface (a hydroelastic patch, :mod:`contactopt.systems.hydroelastic`): the
    polygon mesh ``vertices`` (V, 3) and ``faces`` (F, 4) (vertex indices; a triangle repeats
    its last), with the pressure ``pressures`` (F,) [Pa] on each polygon, and ``rows``: how many
    of the drawing's contact marks are its quadrature points (the patches' marks come last, in
    patch order), whose forces a renderer sums into one arrow. Not a :data:`Shape`: its mesh
    changes from frame to frame, and it lies inside the bodies, so a renderer draws it over
    them, coloured by pressure."""

    vertices: FloatArray
    faces: NDArray[np.int_]
    pressures: FloatArray
    rows: int = 0

    def __post_init__(self) -> None:
        vertices = np.asarray(self.vertices, dtype=np.float64)
        faces = np.asarray(self.faces, dtype=np.int_)
        pressures = np.asarray(self.pressures, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or faces.ndim != 2 or faces.shape[1] != 4 \
                or pressures.shape != (faces.shape[0],):
            raise ValueError(f"Patch: vertices {vertices.shape}, faces {faces.shape} and pressures {pressures.shape} "
                             "do not fit ((V, 3), (F, 4) and (F,))")
        if faces.size and (faces.min() < 0 or faces.max() >= vertices.shape[0]):
            raise ValueError(f"Patch: face indices must lie in [0, {vertices.shape[0]}), "
                             f"got {faces.min()}..{faces.max()}")
        if isinstance(self.rows, bool) or not isinstance(self.rows, (int, np.integer)) or self.rows < 0:
            raise ValueError(f"Patch: rows must be an integer >= 0, got {self.rows!r}")
        object.__setattr__(self, "vertices", vertices)
        object.__setattr__(self, "faces", faces)
        object.__setattr__(self, "pressures", pressures)
        object.__setattr__(self, "rows", int(self.rows))

    def polygons(self) -> list[FloatArray]:
        """Each face's corners (3 or 4, 3): a triangle without its repeated vertex."""
        return [self.vertices[face[:3] if face[3] == face[2] else face] for face in self.faces]

    def triangles(self) -> tuple[NDArray[np.int_], FloatArray]:
        """(T, 3) vertex indices of the faces split into triangles ``(0, 1, 2)``, ``(0, 2, 3)``
        (none from a repeated vertex), and each triangle's face pressure (T,)."""
        first = self.faces[:, [0, 1, 2]]
        second = self.faces[:, [0, 2, 3]]
        keep = self.faces[:, 3] != self.faces[:, 2]
        return (np.concatenate([first, second[keep]]),
                np.concatenate([self.pressures, self.pressures[keep]]))

    def vertex_pressures(self) -> FloatArray:
        """(V,) at each vertex the mean pressure of the faces around it (0 where none)."""
        total, count = np.zeros(self.vertices.shape[0]), np.zeros(self.vertices.shape[0])
        for column in range(4):
            unique = (column < 3) | (self.faces[:, 3] != self.faces[:, 2])
            np.add.at(total, self.faces[unique, column], self.pressures[unique])
            np.add.at(count, self.faces[unique, column], 1.0)
        return np.where(count > 0, total / np.maximum(count, 1.0), 0.0)


@dataclass(frozen=True)
class Drawing:
    """What a system looks like at one configuration.

    Attributes:
        dim: 2 (a vertical plane) or 3.
        shapes: the shapes, drawn in order.
        contacts: contact points and frames for force arrows, or None.
        axes: names of the drawing axes, e.g. ``("x", "z")``.
        patches: the contact surfaces at this configuration (3-D only; their number may
            change from frame to frame), drawn over the shapes.
    """

    dim: int
    shapes: tuple[Shape, ...]
    contacts: ContactMarks | None = None
    axes: tuple[str, ...] = ()
    patches: tuple[Patch, ...] = ()

    def __post_init__(self) -> None:
        if self.dim not in (2, 3):
            raise ValueError(f"Drawing.dim must be 2 or 3, got {self.dim}")
        object.__setattr__(self, "shapes", tuple(self.shapes))
        object.__setattr__(self, "patches", tuple(self.patches))
        if self.patches and self.dim != 3:
            raise ValueError("Drawing.patches: contact surfaces are 3-D; this drawing has dim 2")
        if not self.axes:
            object.__setattr__(self, "axes", ("x", "z") if self.dim == 2 else ("x", "y", "z"))

    def extent(self) -> FloatArray:
        """(k, dim) points the view must contain (unbounded lines and planes excluded)."""
        parts = [shape.extent().reshape(-1, self.dim) for shape in self.shapes]
        if self.contacts is not None and self.contacts.points.size:
            parts.append(self.contacts.points)
        return np.concatenate(parts) if parts else np.zeros((0, self.dim))
