"""The contact surface of a soft primitive against a rigid plane, as a polygon mesh with one
quadrature point per polygon (Elandt et al. 2019, "A pressure field model for fast, robust
approximation of net contact force and moment between nominally rigid objects", section
III.B; Masterjohn et al. 2022, "Velocity level approximation of pressure field contact
patches", section IV).

Between a soft body ``S`` and a rigid one the contact surface is the part of the rigid
body's surface inside ``S`` (the rigid body is the limit of a stiff field, so the
equal-pressure surface is its boundary), and the pressure on it is ``S``'s field. Against the
rigid half-space ``n . (x - x0) <= 0`` (the ground; ``n`` points out of it, into ``S``) the
surface is the section of ``S`` by the plane, a convex polygon for these convex primitives:

1. an interior point ``c0`` of the section: the projection of ``S``'s centre on the plane
   where it is inside ``S`` (a level body's mesh is then symmetric about it), else where
   the segment from the deepest point of ``S`` below the plane (its support point along
   ``-n``) to its centre (or to its highest point, if the centre is below the plane too)
   crosses the plane; both ends are in ``S``, so that point is, by convexity;
2. the boundary: ``rays`` rays from ``c0`` in the plane, at the angles ``2 pi (k + 1/2) / rays``
   from the projection of the body's x axis, each to where it leaves ``S`` (:meth:`PressureField.ray_exit`,
   exact for box, sphere and cylinder): a polygon inscribed in the section;
3. the mesh: ``rings`` rings at the fractions ``j / rings`` of the way from ``c0`` to the
   boundary, giving triangles around ``c0`` and quadrilaterals outside, ``rays * rings``
   polygons in all (a fixed number while the surface exists);
4. quadrature: each polygon's area ``A_i`` and centroid ``c_i`` (the shoelace formulas), the
   pressure ``p_i = p(c_i)`` and the field's gradient along the normal,
   ``g_i = grad p(c_i) . n`` (how fast the pressure at ``c_i`` grows as the plane moves into
   ``S``). ``sum A_i p_i`` is the normal force (the centroid rule, exact where ``p`` is linear
   over a polygon), ``sum A_i p_i c_i / sum A_i p_i`` the centre of pressure.

The rows of the discrete model are made from these by :mod:`.rows`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.geometry import tangent_basis
from contactopt.systems.hydroelastic.fields import PressureField

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["DEFAULT_RESOLUTION", "ContactSurface", "Face", "box_surfaces", "fan_faces", "frames_of",
           "plane_surface"]

#: ``(rays, rings)`` of the mesh by default: 44 boundary points (``rays = 4 mod 8``, so a square
#: face's corners are boundary points) and 8 rings, 352 polygons; a sphere's force is then
#: within 0.5 % of the field's closed form and its inscribed polygon's area within 0.4 %.
#: ``(4, 1)`` cuts a level square face into the 4 triangles (centre, corner, corner) of Drake's
#: box mesh, one quadrature point each.
DEFAULT_RESOLUTION = (44, 8)


@dataclass(frozen=True)
class ContactSurface:
    """One contact surface between a soft body and a rigid plane (module docstring), or between
    a soft body and another body (:mod:`.pair`).

    Attributes:
        soft: index of the soft body; rigid: index of the other body (rigid, or soft for a
            surface between two soft bodies: :mod:`.pair`), -1 for the ground.
        normal: (3,) unit normal, from the other body into the soft one (world frame).
        vertices: (V, 3) mesh vertices; faces: (F, 4) vertex indices of each polygon
            (a triangle repeats its last vertex).
        centroids: (F, 3) quadrature points; areas: (F,) m^2; pressures: (F,) Pa;
            gradients: (F,) ``g = grad p . normal`` (Pa/m) at the centroids (between two soft
            bodies the combined ``g_A g_B / (g_A + g_B)``, :mod:`.pair`).
        frame: (3, 3) the contact frame ``[n; t1; t2]`` of ``normal``
            (:func:`~contactopt.systems.geometry.tangent_basis`).
        normals: (F, 3) each polygon's unit normal on a curved surface (:mod:`.pair`); None:
            every polygon has ``normal`` (a plane section).
    """

    soft: int
    rigid: int
    normal: FloatArray
    vertices: FloatArray
    faces: IntArray
    centroids: FloatArray
    areas: FloatArray
    pressures: FloatArray
    gradients: FloatArray
    frame: FloatArray
    normals: FloatArray | None = None

    def face_frames(self) -> FloatArray:
        """(F, 3, 3) each polygon's row frame ``[n_i; t1_i; t2_i]`` (``frame`` on a plane)."""
        if self.normals is None:
            return np.broadcast_to(self.frame, (self.faces.shape[0], 3, 3)).copy()
        return frames_of(self.normals)

    @property
    def area(self) -> float:
        """``sum A_i`` (m^2)."""
        return float(self.areas.sum())

    @property
    def normal_force(self) -> float:
        """``sum A_i p_i`` (N): the field's normal force on the soft body."""
        return float(self.areas @ self.pressures)

    @property
    def centre_of_pressure(self) -> FloatArray:
        """``sum A_i p_i c_i / sum A_i p_i`` (the centroid for a zero force)."""
        weights = self.areas * self.pressures
        total = float(weights.sum())
        if total <= 0.0:
            return self.centroids.mean(axis=0) if self.centroids.shape[0] else np.zeros(3)
        return np.asarray(weights @ self.centroids / total, dtype=np.float64)


def fan_faces(rays: int, rings: int) -> IntArray:
    """(rays * rings, 4) vertex indices of the fan mesh whose vertex 0 is the centre and vertex
    ``1 + (j - 1) rays + k`` ray ``k`` of ring ``j``: triangles (centre, ray k, ray k + 1; the
    last index repeated) around the centre, then each ring's quadrilaterals outwards."""
    k = np.arange(rays)
    k1 = (k + 1) % rays
    inner = np.column_stack([np.zeros(rays, dtype=np.int_), 1 + k, 1 + k1, 1 + k1])
    quads = [np.column_stack([1 + j * rays + k, 1 + (j + 1) * rays + k, 1 + (j + 1) * rays + k1,
                              1 + j * rays + k1]) for j in range(rings - 1)]
    return np.concatenate([inner, *quads]).astype(np.int_)


def _plane_frame(normal: FloatArray, axis: FloatArray) -> tuple[FloatArray, FloatArray]:
    """In-plane unit vectors ``(t1, t2)``, ``t1`` along ``axis`` projected on the plane (the
    body's x axis, else its y axis when x is nearly normal to the plane), ``t2 = n x t1``."""
    t1 = axis - (axis @ normal) * normal
    norm = float(np.linalg.norm(t1))
    if norm < 1e-6:
        fallback = np.array([0.0, 1.0, 0.0]) if abs(normal[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
        t1 = fallback - (fallback @ normal) * normal
        norm = float(np.linalg.norm(t1))
    t1 = t1 / norm
    return t1, np.cross(normal, t1)


#: The ratio of a region's long to short half-extent above which its rays follow an ellipse.
ELONGATED = 2.0


def spread_rays(angles: FloatArray, t1: FloatArray, t2: FloatArray, n: FloatArray,
                reach: FloatArray) -> FloatArray | None:
    """The rays of a long, thin region (a capsule or cylinder on its side, two of them side by
    side), or None for the others. Rays at equal angles from the centre (``angles`` against
    ``t1``, ``t2``, reaching ``reach``) crowd such a region's long sides and leave its ends a
    few wide polygons; these rays go to ``s1 cos(theta) e1 + s2 sin(theta) e2`` (normalized),
    ``e1``, ``e2`` the principal axes of the first boundary polygon's vertices and ``s1``,
    ``s2`` its half-extents along them: equal angles of the ellipse that fits the region.
    Regions whose extents differ by less than ``ELONGATED`` keep their rays (the squares and
    disks of boxes and balls)."""
    points = reach[:, None] * np.column_stack([np.cos(angles), np.sin(angles)])
    vectors = np.linalg.eigh(points.T @ points)[1]
    long_axis, short_axis = vectors[:, 1], vectors[:, 0]
    s1, s2 = float(np.abs(points @ long_axis).max()), float(np.abs(points @ short_axis).max())
    if not s1 > ELONGATED * s2:
        return None
    e1 = long_axis[0] * t1 + long_axis[1] * t2
    e1 = e1 / np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    spread = s1 * np.cos(angles)[:, None] * e1 + s2 * np.sin(angles)[:, None] * e2
    return np.asarray(spread / np.linalg.norm(spread, axis=1)[:, None])


def ring_fractions(rings: int, elongated: bool) -> FloatArray:
    """Each ring's fraction of its ray's reach: equal steps, or for a long region's rays
    (:func:`spread_rays`) steps crowding the rim, ``sin(pi j / (2 rings))``: its ends, a few
    per cent of a ray's reach, have a pressure profile of their own (a capsule's caps)."""
    fractions = np.arange(1, rings + 1) / rings
    return np.sin(0.5 * math.pi * fractions) if elongated else fractions


def plane_surface(field: PressureField, position: FloatArray, rotation: FloatArray, normal: FloatArray,
                  offset: float, soft: int = 0, rigid: int = -1,
                  resolution: tuple[int, int] = DEFAULT_RESOLUTION,
                  face: Face | None = None) -> ContactSurface | None:
    """The contact surface of the soft primitive ``field`` at pose ``(position, rotation)``
    (body to world) against the rigid half-space ``normal . x <= offset``; None where they do
    not overlap (or where the whole body is inside the half-space, which has no surface).
    ``face``: only the rectangle of a rigid box's face counts (:func:`box_surfaces`); the rays
    then end where they leave the soft body or the rectangle, whichever is first."""
    rays, rings = int(resolution[0]), int(resolution[1])
    if rays < 3 or rings < 1:
        raise ValueError(f"plane_surface: resolution needs >= 3 rays and >= 1 ring, got {resolution}")
    n = np.asarray(normal, dtype=np.float64)
    R = np.asarray(rotation, dtype=np.float64)
    x = np.asarray(position, dtype=np.float64)
    deepest = x + R @ field.support(-(R.T @ n))
    height = lambda point: float(n @ point) - offset  # noqa: E731  (signed height above the plane)
    low = height(deepest)
    if low >= 0.0:
        return None
    other = x if height(x) > 0.0 else x + R @ field.support(R.T @ n)
    high = height(other)
    if high <= 0.0:
        return None
    c0 = deepest + (low / (low - high)) * (other - deepest)
    centre_on_plane = x - height(x) * n  # preferred where inside: a symmetric mesh for a level body
    inside = lambda p: field.depth((R.T @ (p - x))[None, :])[0] > 0.0 and (face is None or face.holds(p))  # noqa: E731
    candidates = [centre_on_plane, c0] + ([] if face is None else [face.centre, face.clamp(c0), face.clamp(x)])
    chosen = next((p for p in candidates if inside(p)), None)
    if chosen is None:
        return None
    c0 = chosen
    t1, t2 = _plane_frame(n, R[:, 0] if abs(float(R[:, 0] @ n)) < 0.99 else R[:, 1])
    angles = 2.0 * math.pi * (np.arange(rays) + 0.5) / rays
    world_dirs = np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2
    origin = R.T @ (c0 - x)
    reach = _plane_reach(field, origin, R, c0, world_dirs, face)
    spread = spread_rays(angles, t1, t2, n, reach)
    if spread is not None:
        world_dirs, reach = spread, _plane_reach(field, origin, R, c0, spread, face)
    # vertices: c0, then ring j = 1..rings, ray k at index 1 + (j - 1) rays + k
    fractions = ring_fractions(rings, spread is not None)
    ring_points = c0 + (fractions[:, None, None] * reach[None, :, None]) * world_dirs[None, :, :]
    vertices = np.concatenate([c0[None, :], ring_points.reshape(-1, 3)])
    faces = fan_faces(rays, rings)
    # shoelace in the plane coordinates (u, v) about c0
    uv = np.column_stack([(vertices - c0) @ t1, (vertices - c0) @ t2])
    u, v = uv[faces, 0], uv[faces, 1]
    u_next, v_next = np.roll(u, -1, axis=1), np.roll(v, -1, axis=1)
    cross = u * v_next - u_next * v
    twice_area = cross.sum(axis=1)
    areas = 0.5 * twice_area
    safe = np.where(np.abs(twice_area) > 0, twice_area, 1.0)
    cu = ((u + u_next) * cross).sum(axis=1) / (3.0 * safe)
    cv = ((v + v_next) * cross).sum(axis=1) / (3.0 * safe)
    centroids = c0 + cu[:, None] * t1 + cv[:, None] * t2
    local = (centroids - x) @ R  # R^T (c - x) per row
    pressures = field.pressure(local)
    gradients = (field.gradient(local) @ R.T) @ n
    b1, b2 = tangent_basis(n)
    return ContactSurface(soft=soft, rigid=rigid, normal=n.copy(), vertices=vertices, faces=faces,
                          centroids=centroids, areas=areas, pressures=pressures, gradients=gradients,
                          frame=np.array([n, b1, b2]))


def _plane_reach(field: PressureField, origin: FloatArray, rotation: FloatArray, c0: FloatArray,
                 directions: FloatArray, face: Face | None) -> FloatArray:
    """Where the in-plane rays from ``c0`` (``origin`` in the body frame) leave the soft body, or
    the rigid face's rectangle first."""
    reach = field.ray_exit(origin, directions @ rotation)  # body-frame directions: R^T d per row
    return reach if face is None else np.minimum(reach, face.ray_exit(c0, directions))


@dataclass(frozen=True)
class Face:
    """A rectangle of a plane: ``centre`` (3,), in-plane unit axes ``u``, ``v`` (3,) and half
    sizes ``(hu, hv)``: a face of a rigid box."""

    centre: FloatArray
    u: FloatArray
    v: FloatArray
    half: tuple[float, float]

    def holds(self, p: FloatArray) -> bool:
        d = p - self.centre
        return abs(float(d @ self.u)) < self.half[0] and abs(float(d @ self.v)) < self.half[1]

    def clamp(self, p: FloatArray) -> FloatArray:
        """``p`` projected into the rectangle (shrunk by 1e-9 of its size, to stay inside)."""
        d = p - self.centre
        hu, hv = (1 - 1e-9) * self.half[0], (1 - 1e-9) * self.half[1]
        return np.asarray(self.centre + np.clip(d @ self.u, -hu, hu) * self.u + np.clip(d @ self.v, -hv, hv) * self.v)

    def ray_exit(self, origin: FloatArray, directions: FloatArray) -> FloatArray:
        """Where rays ``origin + t d`` (in the plane, ``origin`` inside) leave the rectangle."""
        d = origin - self.centre
        out = np.full(directions.shape[0], np.inf)
        for axis, half in ((self.u, self.half[0]), (self.v, self.half[1])):
            speed = directions @ axis
            with np.errstate(divide="ignore", invalid="ignore"):
                limit = np.where(speed > 0, (half - d @ axis) / speed,
                                 np.where(speed < 0, (-half - d @ axis) / speed, np.inf))
            out = np.minimum(out, limit)
        return np.maximum(out, 0.0)


def box_surfaces(field: PressureField, position: FloatArray, rotation: FloatArray, box_half: FloatArray,
                 box_position: FloatArray, box_rotation: FloatArray, soft: int, rigid: int,
                 resolution: tuple[int, int] = DEFAULT_RESOLUTION) -> list[ContactSurface]:
    """The contact surface of a soft primitive against a rigid box (half extents ``box_half``,
    pose ``(box_position, box_rotation)``): the part of the box's surface inside the soft body,
    one :class:`ContactSurface` per face that the soft body reaches (Elandt et al. 2019: the
    rigid body's surface inside the soft one), each face's normal pointing out of the box."""
    out = []
    reach = field.bounding_radius
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = sign * box_rotation[:, axis]
            centre = box_position + box_half[axis] * n
            if abs(float(n @ (position - centre))) > reach:
                continue  # the soft body is too far from this face's plane
            others = [a for a in range(3) if a != axis]
            face = Face(centre, box_rotation[:, others[0]], box_rotation[:, others[1]],
                        (float(box_half[others[0]]), float(box_half[others[1]])))
            surface = plane_surface(field, position, rotation, n, float(n @ centre), soft=soft, rigid=rigid,
                                    resolution=resolution, face=face)
            if surface is not None:
                out.append(surface)
    return out


def frames_of(normals: FloatArray) -> FloatArray:
    """(n, 3, 3) frames ``[n; t1; t2]`` of unit normals (n, 3), each the one
    :func:`~contactopt.systems.geometry.tangent_basis` gives (``t1`` from the coordinate axis
    least aligned with ``n``, lowest index on ties; ``t2 = n x t1``), all at once."""
    nn = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    axis = np.zeros_like(nn)
    axis[np.arange(nn.shape[0]), np.argmin(np.abs(nn), axis=1)] = 1.0
    t1 = axis - np.sum(axis * nn, axis=1)[:, None] * nn
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    return np.stack([nn, t1, np.cross(nn, t1)], axis=1)
