"""The contact surface between a soft body and another body of the scene: a second soft body
(the equal-pressure surface) or a rigid sphere (its boundary inside the soft body), for boxes,
spheres, cylinders and capsules (Elandt et al. 2019, "A pressure field model for fast, robust approximation of net
contact force and moment between nominally rigid objects", section III.B; Masterjohn et al.
2022, "Velocity level approximation of pressure field contact patches", section IV).

Between two soft bodies ``A`` and ``B`` with fields ``p_A`` and ``p_B`` the contact surface is
the part of ``A ∩ B`` where ``p_A = p_B``; its pressure is that common value. A rigid body is
the limit of an infinitely stiff field, so between a soft ``A`` and a rigid ``B`` the surface
is ``B``'s boundary inside ``A``, with ``A``'s pressure. Both are built here as the graph of a
function over a plane (the surface is one where every line along the normal ``n``, from ``B``
into ``A``, crosses it once, as for bodies that overlap by much less than their size):

1. the normal ``n``: between two spheres along their centres; between a box and a sphere from
   the box's nearest point to the sphere's centre (or the box face the centre is nearest, if it
   is inside); between two boxes the face normal of least overlap (the separating-axis test
   over both boxes' face normals); with a cylinder or a capsule the same test over the centre
   line, the boxes' face normals, the cylinders' axes and radial directions, and the
   directions between the bodies' nearest core points (:func:`_axis_normal`); no surface
   where the bodies' projections on one of these axes are apart;
2. the mesh's centre ``c0``: among the lines along ``n`` through the two centres, their
   midpoint and each body's deepest point into the other, the one whose chord through
   ``A ∩ B`` is longest (the first on ties, so two stacked equal boxes are meshed about their
   common axis); each line's chord comes from :func:`.fields.line_interval`;
3. the boundary: ``rays`` rays from ``c0`` in the plane normal to ``n`` (angles
   ``2 pi (k + 1/2) / rays`` from the projection of ``A``'s x axis, as :mod:`.surface`), each to
   where its lines stop crossing ``A ∩ B`` (bisection: the projection of the convex ``A ∩ B``
   is convex), and ``rings`` rings, the fan mesh of :func:`.surface.fan_faces`;
4. each vertex lifted along ``n`` onto the surface: for a soft ``B`` the root of
   ``p_A - p_B`` on the line's chord (``p_A - p_B <= 0`` where the chord enters ``A``, ``>= 0``
   where it leaves ``B``), for a rigid ``B`` the point where the line leaves ``B``; a boundary
   vertex at the height of the surface just inside (1e-6 of its ray's reach), its limit;
5. quadrature, one point per polygon: its area ``A_i`` and unit normal ``n_i`` (the sum of its
   two triangles' vector areas), its point ``c_i`` (the triangles' area-weighted centroid,
   lifted onto the surface), the pressure ``p_i`` there and the gradients along ``n_i``:
   ``g_A = grad p_A . n_i``, ``g_B = -grad p_B . n_i``, combined in series,
   ``g = g_A g_B / (g_A + g_B)`` (``g = g_A`` against a rigid body), as Masterjohn et al.
   combine the two fields' stiffness (Drake's discrete hydroelastic does the same).

Two equal boxes face to face (one the mirror image of the other through a plane) meet on that
plane, where their fields are equal by symmetry: the surface is the overlap rectangle at half
the penetration, with pressure ``E min(delta / 2, d_side) / c``; two equal spheres likewise on
their bisecting plane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.hydroelastic.fields import LINE_SHAPES, PressureField, line_interval, support_point
from contactopt.systems.hydroelastic.surface import (
    ContactSurface,
    _plane_frame,
    fan_faces,
    frames_of,
    ring_fractions,
    spread_rays,
)

FloatArray = NDArray[np.float64]

__all__ = ["PAIR_SHAPES", "Solid", "pair_normal", "pair_surface"]

#: The shapes of both bodies of a pair surface.
PAIR_SHAPES: tuple[str, ...] = LINE_SHAPES

#: Halvings of a ray's bisection (to 2^-44, 6e-14, of its bracket) and the most steps of a
#: vertex's root.
_HALVINGS = 44


@dataclass(frozen=True)
class Solid:
    """A box, sphere, cylinder or capsule at a pose: ``shape``, ``size`` (half extents, ``(R,)``,
    or ``(R, L)`` about the body's z axis), ``position`` (3,), ``rotation`` (3, 3) body to world,
    and its pressure ``field`` (None: rigid)."""

    shape: str
    size: tuple[float, ...]
    position: FloatArray
    rotation: FloatArray
    field: PressureField | None = None

    def __post_init__(self) -> None:
        if self.shape not in PAIR_SHAPES:
            raise ValueError(f"Solid: shape must be one of {PAIR_SHAPES}, got {self.shape!r}")
        if self.field is not None and (self.field.shape != self.shape or self.field.size != tuple(self.size)):
            raise ValueError(f"Solid: the field's shape {self.field.shape!r} {self.field.size} is not the body's "
                             f"{self.shape!r} {tuple(self.size)}")

    @property
    def radius(self) -> float:
        """The radius of a ball about ``position`` that holds the body."""
        if self.shape == "box":
            return float(np.linalg.norm(self.size))
        if self.shape == "cylinder":
            return math.hypot(self.size[0], self.size[1])
        return float(self.size[0]) + (float(self.size[1]) if self.shape == "capsule" else 0.0)

    def chord(self, origins: FloatArray, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(t_in, t_out)`` of the world lines ``o + t d`` (:func:`.fields.line_interval`)."""
        return line_interval(self.shape, self.size, (origins - self.position) @ self.rotation,
                             self.rotation.T @ direction)

    def support(self, direction: FloatArray) -> FloatArray:
        """The body's point farthest along the world ``direction``."""
        return np.asarray(self.position + self.rotation @ support_point(self.shape, self.size,
                                                                        self.rotation.T @ direction))

    def core(self, point: FloatArray) -> FloatArray:
        """The point of the body's core nearest the world ``point``: the centre of a sphere, the
        nearest point of a capsule's segment, and of a box or cylinder the nearest point of
        the body itself (``point`` where it is inside)."""
        local = self.rotation.T @ (point - self.position)
        if self.shape == "sphere":
            return self.position.copy()
        if self.shape == "capsule":
            nearest = np.array([0.0, 0.0, min(max(float(local[2]), -self.size[1]), self.size[1])])
        elif self.shape == "box":
            nearest = np.clip(local, -np.array(self.size), np.array(self.size))
        else:
            rho = math.hypot(float(local[0]), float(local[1]))
            scale = min(1.0, self.size[0] / rho) if rho > 0 else 1.0
            nearest = np.array([local[0] * scale, local[1] * scale,
                                min(max(float(local[2]), -self.size[1]), self.size[1])])
        return np.asarray(self.position + self.rotation @ nearest)

    def pressure(self, points: FloatArray) -> FloatArray:
        assert self.field is not None
        return self.field.pressure((points - self.position) @ self.rotation)

    def gradient(self, points: FloatArray) -> FloatArray:
        assert self.field is not None
        return self.field.gradient((points - self.position) @ self.rotation) @ self.rotation.T


def _box_sphere_direction(box: Solid, sphere: Solid) -> FloatArray:
    """The unit direction from ``box`` towards ``sphere``'s centre: from the box's nearest
    point, or the normal of the face nearest the centre when the centre is inside."""
    half = np.array(box.size)
    local = box.rotation.T @ (sphere.position - box.position)
    nearest = np.clip(local, -half, half)
    gap = local - nearest
    if float(np.linalg.norm(gap)) > 0.0:
        return np.asarray(box.rotation @ (gap / np.linalg.norm(gap)))
    axis = int(np.argmin(half - np.abs(local)))
    return np.asarray((1.0 if local[axis] >= 0 else -1.0) * box.rotation[:, axis])


def _overlap(a: Solid, b: Solid, n: FloatArray) -> float:
    """How far ``b`` reaches past ``a``'s far side along ``n`` (from ``b`` into ``a``):
    ``max_{x in b} n.x - min_{x in a} n.x``, positive where their projections overlap."""
    return float(n @ b.support(n) - n @ a.support(-n))


def _axis_normal(a: Solid, b: Solid) -> FloatArray | None:
    """The separating-axis test over candidate directions, for pairs with a cylinder or a
    capsule: the centre line; each box's face normals and each cylinder's axis; for each
    body the direction between its core's point nearest the other's centre and the other's
    nearest point to that (the radial direction of a capsule or a cylinder's side, a sphere's
    centre line to a box face). Each is signed from ``b`` towards ``a``; the least overlap
    decides, and a direction along which the two are apart means no contact (module docstring,
    step 1)."""
    gap = a.position - b.position
    candidates = [gap]
    for body, other in ((a, b), (b, a)):
        if body.shape in ("box", "cylinder"):
            candidates += list(body.rotation.T if body.shape == "box" else [body.rotation[:, 2]])
        if body.shape == "cylinder":
            axis = body.rotation[:, 2]
            candidates.append(gap - (gap @ axis) * axis)
        start = body.core(other.position)
        direction = start - other.core(start)
        candidates.append(direction if body is a else -direction)
    best, normal = math.inf, None
    for candidate in candidates:
        size = float(np.linalg.norm(candidate))
        if size < 1e-12 * max(a.radius, b.radius):
            continue
        n = candidate / size
        n = n if float(n @ gap) >= 0.0 else -n
        overlap = _overlap(a, b, n)
        if overlap <= 0.0:
            return None
        if overlap < best:
            best, normal = overlap, n
    return normal if normal is not None else np.array([0.0, 0.0, 1.0])


def pair_normal(a: Solid, b: Solid) -> FloatArray | None:
    """The surface's normal ``n`` from ``b`` into ``a`` (module docstring, step 1); None where the
    bodies are apart (their bounding balls, or their projections on a candidate axis)."""
    gap = a.position - b.position
    if float(np.linalg.norm(gap)) >= a.radius + b.radius:
        return None
    if {a.shape, b.shape} & {"cylinder", "capsule"}:
        return _axis_normal(a, b)
    if a.shape == "sphere" and b.shape == "sphere":
        norm = float(np.linalg.norm(gap))
        return gap / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
    if a.shape == "sphere":
        return _box_sphere_direction(b, a)
    if b.shape == "sphere":
        return -_box_sphere_direction(a, b)
    best, normal = math.inf, np.zeros(3)
    for axis in np.concatenate([a.rotation.T, b.rotation.T]):
        reach = float(np.abs(a.rotation.T @ axis) @ np.array(a.size) + np.abs(b.rotation.T @ axis) @ np.array(b.size))
        offset = float(axis @ gap)
        overlap = reach - abs(offset)
        if overlap <= 0.0:
            return None
        if overlap < best:
            best, normal = overlap, (1.0 if offset >= 0 else -1.0) * axis
    return normal


def _chords(a: Solid, b: Solid, points: FloatArray, n: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per line ``points + s n``: the chord ``[low, high]`` of ``a ∩ b`` and ``b``'s exit."""
    a_in, a_out = a.chord(points, n)
    b_in, b_out = b.chord(points, n)
    return np.maximum(a_in, b_in), np.minimum(a_out, b_out), b_out


def _lift(a: Solid, b: Solid, points: FloatArray, n: FloatArray) -> FloatArray:
    """``points`` moved along ``n`` onto the surface (module docstring, step 4); a line that
    misses ``a ∩ b`` (only at the boundary, by rounding) keeps its point. The root of
    ``f = p_A - p_B`` on the chord: its midpoint first (the root itself between mirror images,
    and where ``f`` is flat to rounding, as at the rim of two equal boxes), then the Illinois
    variant of regula falsi (Dahlquist and Bjorck, "Numerical Methods", section 6.2), exact in
    one step where both fields are linear along the chord, stopped at ``|f|`` below 1e-5 of
    the most ``f`` can change along the chord, ``(g_A + g_B) L`` (``g = E / d_max``, ``L`` the
    chord's length: the root is then within 1e-5 L; this also takes the midpoint where ``f`` is
    flat but for rounding-sized offsets, as along the coinciding side faces of two stacked equal
    boxes, slightly tilted), or at a bracket of 1e-15 of the chord."""
    low, high, b_exit = _chords(a, b, points, n)
    empty = ~(low <= high)
    low, high = np.where(empty, 0.0, low), np.where(empty, 0.0, high)
    if b.field is None:
        return points + np.clip(b_exit, low, high)[:, None] * n

    def f(s: FloatArray) -> FloatArray:
        at = points + s[:, None] * n
        return a.pressure(at) - b.pressure(at)

    assert a.field is not None
    slope = a.field.modulus / a.field.extent + b.field.modulus / b.field.extent
    tolerance = 1e-5 * slope * (high - low)
    f_low, f_high = f(low), f(high)
    root = 0.5 * (low + high)
    f_root = f(root)
    done = empty | (np.abs(f_root) <= tolerance) | (f_low >= 0) | (f_high <= 0)
    root = np.where(~empty & ~(np.abs(f_root) <= tolerance) & (f_low >= 0), low, root)
    root = np.where(~empty & ~(np.abs(f_root) <= tolerance) & (f_low < 0) & (f_high <= 0), high, root)
    below = f_root < 0
    low, f_low = np.where(below, root, low), np.where(below, f_root, f_low)
    high, f_high = np.where(below, high, root), np.where(below, f_high, f_root)
    width = np.maximum(high - low, 0.0)
    side = np.zeros(points.shape[0], dtype=np.int_)  # the side moved last: -1 low, +1 high
    for _ in range(_HALVINGS):
        if done.all():
            break
        denominator = f_high - f_low
        guess = np.where(denominator > 0, high - f_high * (high - low) / np.where(denominator > 0, denominator, 1.0),
                         0.5 * (low + high))
        f_guess = f(guess)
        root = np.where(done, root, guess)
        done |= (np.abs(f_guess) <= tolerance) | (high - low <= 1e-15 * width)
        below = f_guess < 0
        f_high = np.where(below & (side == -1), 0.5 * f_high, f_high)  # Illinois: halve the stale end
        f_low = np.where(~below & (side == 1), 0.5 * f_low, f_low)
        low, f_low = np.where(below, guess, low), np.where(below, f_guess, f_low)
        high, f_high = np.where(below, high, guess), np.where(below, f_high, f_guess)
        side = np.where(below, -1, 1)
    return points + root[:, None] * n


def _reach(a: Solid, b: Solid, base: FloatArray, directions: FloatArray, n: FloatArray,
           halvings: int = _HALVINGS) -> FloatArray:
    """How far each in-plane ray from ``base`` (whose line crosses ``a ∩ b``) goes while its
    lines along ``n`` still cross ``a ∩ b`` (``halvings`` steps of bisection; the projection of
    ``a ∩ b`` is convex and lies within each body's bounding ball's shadow)."""
    limit = min(float(np.linalg.norm((base - body.position) - ((base - body.position) @ n) * n)) + body.radius
                for body in (a, b))
    inside, outside = np.zeros(directions.shape[0]), np.full(directions.shape[0], limit)
    for _ in range(halvings):
        mid = 0.5 * (inside + outside)
        lo, hi, _ = _chords(a, b, base + mid[:, None] * directions, n)
        hit = lo < hi
        inside, outside = np.where(hit, mid, inside), np.where(hit, outside, mid)
    return inside


def _elongated(a: Solid, b: Solid, base: FloatArray, n: FloatArray, angles: FloatArray, t1: FloatArray,
               t2: FloatArray, directions: FloatArray, reach: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The rays of a long, thin region and their reach (:func:`.surface.spread_rays`); the
    same ``directions`` and ``reach`` for the others."""
    spread = spread_rays(angles, t1, t2, n, reach)
    return (directions, reach) if spread is None else (spread, _reach(a, b, base, spread, n))


def pair_surface(a: Solid, b: Solid, soft: int, other: int, resolution: tuple[int, int]) -> ContactSurface | None:
    """The contact surface of the soft body ``a`` against ``b`` (soft: the equal-pressure
    surface; rigid: ``b``'s boundary inside ``a``), normal from ``b`` into ``a``; None where
    they do not overlap. ``soft``, ``other``: the bodies' indices, kept in the surface."""
    if a.field is None:
        raise ValueError("pair_surface: the first body must be soft (have a pressure field)")
    rays, rings = int(resolution[0]), int(resolution[1])
    if rays < 3 or rings < 1:
        raise ValueError(f"pair_surface: resolution needs >= 3 rays and >= 1 ring, got {resolution}")
    n = pair_normal(a, b)
    if n is None:
        return None
    candidates = np.array([0.5 * (a.position + b.position), a.position, b.position, a.support(-n), b.support(n)])
    low, high, _ = _chords(a, b, candidates, n)
    length = np.where(low <= high, high - low, -np.inf)
    if not length.max() > 0.0:
        return None
    base = candidates[int(np.flatnonzero(length > 0.0)[0])]
    t1, t2 = _plane_frame(n, a.rotation[:, 0] if abs(float(a.rotation[:, 0] @ n)) < 0.99 else a.rotation[:, 1])
    angles = 2.0 * math.pi * (np.arange(rays) + 0.5) / rays
    directions = np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2
    reach = _reach(a, b, base, directions, n, halvings=20)  # to 1e-6 of the bound: enough to recentre
    # recentre on the boundary polygon's centroid (inside it: the region is convex), so that
    # the fan is not cut short on one side when the first centre is off the middle
    u, v = reach * np.cos(angles), reach * np.sin(angles)
    cross = u * np.roll(v, -1) - np.roll(u, -1) * v
    if cross.sum() > 0.0:
        shift = (((u + np.roll(u, -1)) * cross).sum() * t1 + ((v + np.roll(v, -1)) * cross).sum() * t2) / (
            3.0 * cross.sum())
        base = base + shift
        reach = _reach(a, b, base, directions, n)
    spread, reach = _elongated(a, b, base, n, angles, t1, t2, directions, reach)
    inside = reach
    fractions = ring_fractions(rings, spread is not directions)
    directions = spread
    ring_points = base + (fractions[:, None, None] * inside[None, :, None]) * directions[None, :, :]
    flat = np.concatenate([base[None, :], ring_points.reshape(-1, 3)])
    # the boundary ring at the height of the surface 1e-6 of the reach inside it: at the boundary
    # itself the chord shrinks to a point (or, along coinciding side faces, the height is
    # ill-posed, p = 0 on the whole chord); the surface's own limit there is well-posed
    pulled = flat.copy()
    pulled[-rays:] = base + (1.0 - 1e-6) * inside[:, None] * directions
    vertices = _lift(a, b, pulled, n) + (flat - pulled)
    faces = fan_faces(rays, rings)
    p0, p1, p2, p3 = (vertices[faces[:, j]] for j in range(4))
    first, second = 0.5 * np.cross(p1 - p0, p2 - p0), 0.5 * np.cross(p2 - p0, p3 - p0)
    w1, w2 = np.linalg.norm(first, axis=1), np.linalg.norm(second, axis=1)
    areas = w1 + w2
    vector = first + second
    size = np.linalg.norm(vector, axis=1)
    normals = np.where(size[:, None] > 0, vector / np.where(size > 0, size, 1.0)[:, None], n)
    safe = np.where(areas > 0, areas, 1.0)
    centroids = (w1[:, None] * (p0 + p1 + p2) + w2[:, None] * (p0 + p2 + p3)) / (3.0 * safe[:, None])
    centroids = np.where(areas[:, None] > 0, centroids, (p0 + p1 + p2) / 3.0)
    centroids = _lift(a, b, centroids - ((centroids - base) @ n)[:, None] * n, n)
    g_a = np.einsum("ij,ij->i", a.gradient(centroids), normals)
    if b.field is None:
        pressures, gradients = a.pressure(centroids), g_a
    else:
        pressures = 0.5 * (a.pressure(centroids) + b.pressure(centroids))
        g_b = -np.einsum("ij,ij->i", b.gradient(centroids), normals)
        positive = (g_a > 0) & (g_b > 0)
        gradients = np.where(positive, g_a * g_b / np.where(positive, g_a + g_b, 1.0), 0.0)
    frame = frames_of(n[None, :])[0]
    return ContactSurface(soft=soft, rigid=other, normal=n.copy(), vertices=vertices, faces=faces,
                          centroids=centroids, areas=areas, pressures=pressures, gradients=gradients, frame=frame,
                          normals=normals)
