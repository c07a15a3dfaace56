"""The pinocchio backend's collision geometry (:mod:`.system`): the URDF's ``<collision>``
elements as Pinocchio loads them (``pin.buildGeomFromUrdfString``, coal shapes), against the
ground plane ``z = 0`` and against each other.

**Shapes.** Boxes, spheres, cylinders and capsules (Pinocchio's URDF extension
``<collision_checking><capsule name="..."/>`` makes the named cylinder a capsule) are kept as
coal primitives; a mesh (STL, OBJ, DAE, as coal's loader reads it, scaled by its ``scale``)
becomes its **convex hull** (coal's ``buildConvexHull``, Qhull with triangulated output ``Qt``;
where Qhull refuses that, with joggled input ``QJ``, which perturbs the points by about 1e-11
of their extent), as MuJoCo collides a mesh through its convex hull (MuJoCo documentation,
"Modeling: Meshes"). Other coal shapes are refused in one line.

**Ground contacts** (each shape on a moving link; geometry fixed to the world is not tested, as
MuJoCo's world body is not):

* primitives: :mod:`.ground`, MuJoCo's plane collisions restated (up to 4 points per shape); a
  capsule as MuJoCo's ``mjc_PlaneCapsule``: the sphere at each end of its segment, ``+h`` along
  its axis first;
* a convex hull: after MuJoCo's ``mjc_PlaneConvex`` (``src/engine/engine_collision_convex.c``):
  its deepest vertex (the support point along ``-e_z``, the witness point of coal's
  halfspace-convex distance), and up to three more hull vertices within the margin of the
  plane, deepest first, each at least ``0.3 r`` from the first (``r`` the hull's bounding radius
  about the mesh origin, MuJoCo's ``tolplanemesh``); at most 4 points, as MuJoCo 3.17 gives for a
  mesh box resting on a face. MuJoCo takes the extra points from the deepest vertex's
  neighbours in its own mesh graph, in the graph's order: a single deepest vertex is the same
  contact under both backends (tests/test_urdf_collisions.py, 1e-15), but where several
  vertices are within the margin the two may choose different ones (here from all hull
  vertices: restricted to coal's hull graph, the choice matched MuJoCo's less often).

Each point is ``pos = x - n dist / 2`` (half-way between the vertex and the plane) with
``dist`` its height, as MuJoCo's.

**Self-collisions.** A pair of shapes is tested when their links move on different Pinocchio
joints (links welded by ``fixed`` joints share one) that are not parent and child, the world
(joint 0, where a fixed base's links are) counting as a joint; with an SRDF, its
``<disable_collisions link1 link2>`` pairs are left out (the MoveIt setup assistant writes the
adjacent pairs, those always in contact, and those that never meet). This is MuJoCo's rule
(geoms of one weld body and of parent-child weld bodies are filtered, MuJoCo documentation,
"Computation: Collision detection") except that MuJoCo does not filter a world-welded geom
against the world's children. A pair within a bounding-sphere test runs coal's GJK/EPA signed
distance (``coal.distance``, tolerances 1e-9): one contact per pair, with the normal ``n`` coal
returns (from the first shape to the second), ``dist`` the signed distance and ``pos`` the
midpoint of the two witness points (``p2 - p1 = dist n``).

**Order.** The ground contacts first, shape by shape in MuJoCo's geom order (links depth first
as in the file, then a link's geometry as written), each shape's points as above; then the
self-collisions, pairs in the same order (first shape, then second).

**Frames.** ``[n, t1, t2]`` of :func:`.ground.contact_frame` (MuJoCo's ``mju_makeFrame``): for
the ground ``[e_z, e_y, -e_x]``. The rows are ``frame (J_2(pos) - J_1(pos))``, ``J_k(x)`` the
linear velocity at ``x`` of the point fixed to shape ``k``'s joint (its ``LOCAL_WORLD_ALIGNED``
Jacobian moved to ``x``: ``J_lin - [x - o]x J_ang``, the frame Jacobian of a frame at ``x``;
zero for the ground and the world). The normal row is then ``d dist / dt`` (the witness points
move with their shapes; at the midpoint the rotation terms cancel along ``n`` because
``p2 - p1`` is parallel to it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.base import ParameterError
from contactopt.systems.urdf_pinocchio import ground

FloatArray = NDArray[np.float64]
PLANE_MESH_POINTS = 4  # MuJoCo 3.17's count for a mesh box on a face
PLANE_MESH_SPREAD = 0.3  # MuJoCo's tolplanemesh, a fraction of the bounding radius
GJK_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Shape:
    """One collision shape: its index in Pinocchio's ``GeometryModel``, link, joint (0: the world),
    kind (``box``, ``sphere``, ``cylinder``, ``capsule``, ``convex``), MuJoCo-style size (``box``:
    half sides, ``sphere``: radius, ``cylinder`` and ``capsule``: radius and half-length), the coal shape, the hull's
    vertices (``convex``; geometry frame), the centre and half extents of its bounding box and
    its bounding radius about its origin."""

    index: int
    name: str
    link: str
    joint: int
    kind: str
    size: FloatArray
    coal_shape: Any
    points: FloatArray
    centre: FloatArray
    half: FloatArray
    radius: float


@dataclass(frozen=True)
class Contact:
    """A contact between shape ``second`` and shape ``first`` (``-1``: the ground): signed
    distance, point (world) and unit normal from ``first`` to ``second``."""

    first: int
    second: int
    dist: float
    pos: FloatArray
    normal: FloatArray


def shapes(pin: Any, model: Any, geometry: Any, link_order: list[str], urdf: str) -> list[Shape]:
    """The collision shapes in MuJoCo's geom order (module docstring), meshes made convex hulls."""
    rank = {link: k for k, link in enumerate(link_order)}
    objects = list(enumerate(geometry.geometryObjects))
    objects.sort(key=lambda item: (rank.get(model.frames[item[1].parentFrame].name, len(rank)), item[0]))
    out = []
    for index, obj in objects:
        shape, kind = obj.geometry, type(obj.geometry).__name__
        link, joint = model.frames[obj.parentFrame].name, int(obj.parentJoint)
        zero = np.zeros(3)
        if kind == "Box":
            half = np.array(shape.halfSide, dtype=np.float64)
            out.append(Shape(index, obj.name, link, joint, "box", half, shape, np.zeros((0, 3)), zero, half,
                             float(np.linalg.norm(half))))
        elif kind == "Sphere":
            r = float(shape.radius)
            out.append(Shape(index, obj.name, link, joint, "sphere", np.array([r]), shape, np.zeros((0, 3)), zero,
                             np.full(3, r), r))
        elif kind == "Cylinder":
            r, h = float(shape.radius), float(shape.halfLength)
            out.append(Shape(index, obj.name, link, joint, "cylinder", np.array([r, h]), shape, np.zeros((0, 3)),
                             zero, np.array([r, r, h]), float(np.hypot(r, h))))
        elif kind == "Capsule":
            r, h = float(shape.radius), float(shape.halfLength)
            out.append(Shape(index, obj.name, link, joint, "capsule", np.array([r, h]), shape, np.zeros((0, 3)),
                             zero, np.array([r, r, h + r]), h + r))
        elif kind.startswith("BVHModel") or kind in ("Convex", "ConvexBase"):
            hull = _hull(shape, kind, obj.name, urdf)
            points = np.array(hull.points(), dtype=np.float64).reshape(-1, 3)
            low, high = points.min(axis=0), points.max(axis=0)
            out.append(Shape(index, obj.name, link, joint, "convex", np.zeros(0), hull, points, (low + high) / 2,
                             (high - low) / 2, float(np.linalg.norm(points, axis=1).max())))
        else:
            raise ParameterError("system.file", f"system.file: {urdf}: collision geometry {obj.name!r} is a "
                                 f"{kind}; the pinocchio backend takes boxes, spheres, cylinders, capsules and meshes")
    return out


def _hull(shape: Any, kind: str, name: str, urdf: str) -> Any:
    if not kind.startswith("BVHModel"):
        return shape
    if int(shape.num_vertices) < 4:
        raise ParameterError("system.file", f"system.file: {urdf}: collision mesh {name!r} has "
                             f"{int(shape.num_vertices)} vertices: no convex hull")
    try:
        shape.buildConvexHull(False, "Qt")
    except Exception:  # Qhull's refusal (coplanar points: "Too many neighbors"): joggled input
        try:
            shape.buildConvexHull(False, "QJ")
        except Exception as exc:  # a flat or degenerate mesh: one line
            reason = " ".join(str(exc).split()[-12:])
            raise ParameterError("system.file", f"system.file: {urdf}: collision mesh {name!r}: coal cannot build "
                                 f"its convex hull (Qhull: {reason})") from exc
    if shape.convex is None:
        raise ParameterError("system.file", f"system.file: {urdf}: collision mesh {name!r}: coal built no convex hull")
    return shape.convex


def disabled_pairs(srdf: Path) -> set[frozenset[str]]:
    """The SRDF's ``<disable_collisions link1 link2>`` pairs of link names."""
    try:
        root = ET.parse(srdf).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ParameterError("system.srdf", f"system.srdf: cannot read {srdf} as SRDF: {exc}") from exc
    return {frozenset((item.get("link1", ""), item.get("link2", ""))) for item in root.iter("disable_collisions")}


def pairs(model: Any, items: list[Shape], disabled: set[frozenset[str]]) -> list[tuple[int, int]]:
    """The self-collision pairs of shape numbers (module docstring's rule), in order."""
    parents = [int(p) for p in model.parents]
    out = []
    for a, first in enumerate(items):
        for b in range(a + 1, len(items)):
            second = items[b]
            ja, jb = first.joint, second.joint
            if ja == jb or parents[ja] == jb or parents[jb] == ja:
                continue
            if frozenset((first.link, second.link)) in disabled:
                continue
            out.append((a, b))
    return out


def ground_contacts(item: Shape, number: int, centre: FloatArray, rotation: FloatArray,
                    margin: float) -> list[Contact]:
    """The shape's contacts with ``z = 0`` at its placement (module docstring)."""
    if item.kind == "box":
        touches = ground.box(centre, rotation, item.size, margin)
    elif item.kind == "sphere":
        touches = ground.sphere(centre, float(item.size[0]), margin)
    elif item.kind == "capsule":
        axis = rotation[:, 2] * float(item.size[1])
        touches = (ground.sphere(centre + axis, float(item.size[0]), margin)
                   + ground.sphere(centre - axis, float(item.size[0]), margin))
    elif item.kind == "cylinder":
        touches = ground.cylinder(centre, rotation, float(item.size[0]), float(item.size[1]), margin)
    else:
        touches = plane_convex(centre + item.points @ rotation.T, item.radius, margin)
    return [Contact(-1, number, touch.dist, touch.pos, ground.NORMAL) for touch in touches]


def plane_convex(vertices: FloatArray, radius: float, margin: float) -> list[ground.Touch]:
    """The hull's contacts with ``z = 0`` from its vertices (world), after ``mjc_PlaneConvex``."""
    heights = vertices[:, 2]
    deepest = int(np.argmin(heights))
    if heights[deepest] > margin:
        return []
    first = vertices[deepest]
    out = [ground.Touch(float(heights[deepest]), first - ground.NORMAL * (heights[deepest] / 2))]
    for k in np.argsort(heights, kind="stable"):
        if len(out) >= PLANE_MESH_POINTS or heights[k] > margin:
            break
        if k == deepest or np.linalg.norm(vertices[k] - first) < PLANE_MESH_SPREAD * radius:
            continue
        out.append(ground.Touch(float(heights[k]), vertices[k] - ground.NORMAL * (heights[k] / 2)))
    return out


def near_pairs(candidates: list[tuple[int, int]], items: list[Shape], placements: list[Any],
               margin: float) -> list[tuple[int, int]]:
    """The pairs whose bounding spheres (about the shapes' origins) are within ``margin``, in order."""
    if not candidates:
        return []
    index = np.array(candidates, dtype=np.int_)
    centres = np.array([c for c, _ in placements])
    radii = np.array([item.radius for item in items])
    gap = np.linalg.norm(centres[index[:, 0]] - centres[index[:, 1]], axis=1) - radii[index[:, 0]] - radii[index[:, 1]]
    return [candidates[k] for k in np.flatnonzero(gap <= margin)]


def pair_contact(coal: Any, first: Shape, second: Shape, a: int, b: int, placements: list[Any],
                 margin: float) -> Contact | None:
    """The contact of shapes ``a`` and ``b`` (coal's signed distance), if within ``margin``."""
    (ca, Ra), (cb, Rb) = placements[a], placements[b]
    if np.linalg.norm(ca - cb) - first.radius - second.radius > margin:  # bounding spheres about the origins
        return None
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = request.epa_tolerance = GJK_TOLERANCE
    result = coal.DistanceResult()
    dist = float(coal.distance(first.coal_shape, coal.Transform3s(Ra, ca), second.coal_shape,
                               coal.Transform3s(Rb, cb), request, result))
    if dist > margin:
        return None
    p1, p2 = np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())
    normal = np.array(result.normal, dtype=np.float64)
    length = float(np.linalg.norm(normal))
    if not np.isfinite(dist) or length < 0.5:
        return None  # coal found no direction (coincident centres of two spheres): nothing to push along
    return Contact(a, b, dist, (p1 + p2) / 2, normal / length)


def lowest_point(item: Shape, centre: FloatArray, rotation: FloatArray) -> float:
    """The lowest ``z`` of the shape at its placement: its bounding box for primitives (as
    :func:`.ground.lowest_point`, MuJoCo's ``geom_aabb``), its lowest hull vertex for a hull."""
    if item.kind == "convex":
        return float((centre + item.points @ rotation.T)[:, 2].min())
    return ground.lowest_point(centre, rotation, item.half)


def corners(item: Shape, centre: FloatArray, rotation: FloatArray) -> FloatArray:
    """The corners (world) of the shape's bounding box in its own frame."""
    signs = np.array(list(np.ndindex(2, 2, 2)), dtype=np.float64) * 2 - 1
    return centre + (item.centre + signs * item.half) @ rotation.T
