"""Pressure fields of soft primitives (Elandt et al. 2019, "A pressure field model for fast,
robust approximation of net contact force and moment between nominally rigid objects",
section III; Drake's documentation, "Hydroelastic Contact User Guide", "Pressure field").

A soft body carries a scalar pressure field ``p(x) >= 0`` over its volume, zero on its
boundary and rising inwards. For the primitives Drake builds it from the distance to the
boundary, normalized by the largest such distance (the primitive's own extent), times the
``hydroelastic_modulus`` ``E`` (Pa)::

    p(x) = E * d(x) / d_max,        d(x) = distance from x to the boundary (x inside)

* box, half extents ``(a, b, c)``: ``d = min_i (h_i - |x_i|)``, ``d_max = min(a, b, c)``
  (Drake's box field, linear on the tetrahedra of its medial-axis mesh, is this function);
* sphere, radius ``R``: ``d = R - |x|``, ``d_max = R``;
* cylinder, radius ``R`` and half length ``L`` along the body's z axis:
  ``d = min(R - rho, L - |z|)``, ``d_max = min(R, L)``;
* capsule, radius ``R`` around the segment ``|z| <= L`` of the body's z axis:
  ``d = R - dist(x, segment)``, ``d_max = R``.

``gradient`` is ``grad p`` (body frame), piecewise constant for the box and cylinder, where
the nearest face decides it. Everything here is in the body frame; ``support`` and
``ray_exit`` serve the contact surface (:mod:`.surface`); :func:`line_interval` the surface
between two bodies (:mod:`.pair`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

__all__ = ["LINE_SHAPES", "PRIMITIVES", "PressureField", "line_interval", "support_point"]

#: The soft primitives and the number of size parameters each takes.
PRIMITIVES: dict[str, int] = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}


@dataclass(frozen=True)
class PressureField:
    """The pressure field of one soft primitive (module docstring), in its body frame.

    Attributes:
        shape: ``"box"``, ``"sphere"``, ``"cylinder"`` or ``"capsule"``.
        size: box half extents ``(a, b, c)``; sphere ``(R,)``; cylinder and capsule
            ``(R, L)`` (radius, half length along z).
        modulus: the hydroelastic modulus ``E`` (Pa), > 0.
    """

    shape: str
    size: tuple[float, ...]
    modulus: float

    def __post_init__(self) -> None:
        if self.shape not in PRIMITIVES:
            raise ValueError(f"PressureField: unknown shape {self.shape!r}; known: {', '.join(PRIMITIVES)}")
        size = tuple(float(s) for s in self.size)
        if len(size) != PRIMITIVES[self.shape] or not all(math.isfinite(s) and s > 0 for s in size):
            raise ValueError(f"PressureField: a {self.shape} needs {PRIMITIVES[self.shape]} positive finite "
                             f"size(s), got {self.size!r}")
        if not (math.isfinite(self.modulus) and self.modulus > 0):
            raise ValueError(f"PressureField: modulus must be a finite number > 0 (Pa), got {self.modulus!r}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "modulus", float(self.modulus))

    @property
    def extent(self) -> float:
        """``d_max``: the largest distance from an interior point to the boundary."""
        s = self.size
        if self.shape == "box":
            return min(s)
        if self.shape == "cylinder":
            return min(s[0], s[1])
        return s[0]

    @property
    def bounding_radius(self) -> float:
        """The radius of a ball about the origin that holds the primitive."""
        s = self.size
        if self.shape == "box":
            return float(np.linalg.norm(s))
        if self.shape == "sphere":
            return s[0]
        if self.shape == "cylinder":
            return math.hypot(s[0], s[1])
        return s[0] + s[1]

    def depth(self, x: FloatArray) -> FloatArray:
        """Signed distance to the boundary, positive inside (``d(x)``), of points (n, 3);
        outside it is a lower bound of minus the distance (enough for inside tests)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        s = self.size
        if self.shape == "box":
            return np.min(np.array(s)[None, :] - np.abs(x), axis=1)
        if self.shape == "sphere":
            return s[0] - np.linalg.norm(x, axis=1)
        if self.shape == "cylinder":
            return np.minimum(s[0] - np.hypot(x[:, 0], x[:, 1]), s[1] - np.abs(x[:, 2]))
        nearest = np.column_stack([np.zeros((x.shape[0], 2)), np.clip(x[:, 2], -s[1], s[1])])
        return s[0] - np.linalg.norm(x - nearest, axis=1)

    def pressure(self, x: FloatArray) -> FloatArray:
        """``p(x) = E max(d(x), 0) / d_max`` (Pa) at points (n, 3)."""
        return self.modulus * np.maximum(self.depth(x), 0.0) / self.extent

    def gradient(self, x: FloatArray) -> FloatArray:
        """(n, 3) ``grad p`` at interior points: ``E / d_max`` times the inward unit normal of
        the nearest boundary piece (box face, cylinder side or cap; radial for the sphere and
        capsule); zero at the centre of a sphere or on a capsule's axis, where it is undefined."""
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        scale = self.modulus / self.extent
        s = self.size
        out = np.zeros_like(x)
        if self.shape == "box":
            face = np.argmin(np.array(s)[None, :] - np.abs(x), axis=1)
            rows = np.arange(x.shape[0])
            out[rows, face] = -np.sign(x[rows, face]) * scale
            return out
        if self.shape == "cylinder":
            rho = np.hypot(x[:, 0], x[:, 1])
            side = (s[0] - rho) <= (s[1] - np.abs(x[:, 2]))
            safe = np.where(rho > 0, rho, 1.0)
            out[:, 0] = np.where(side, -x[:, 0] / safe, 0.0)
            out[:, 1] = np.where(side, -x[:, 1] / safe, 0.0)
            out[:, 2] = np.where(side, 0.0, -np.sign(x[:, 2]))
            return scale * out
        axis_point = np.zeros_like(x)
        if self.shape == "capsule":
            axis_point[:, 2] = np.clip(x[:, 2], -s[1], s[1])
        offset = x - axis_point
        norm = np.linalg.norm(offset, axis=1)
        return -scale * np.where(norm[:, None] > 0, offset / np.where(norm > 0, norm, 1.0)[:, None], 0.0)

    def support(self, direction: FloatArray) -> FloatArray:
        """The point of the primitive farthest along ``direction`` (3,), body frame."""
        return support_point(self.shape, self.size, direction)

    def ray_exit(self, origin: FloatArray, directions: FloatArray) -> FloatArray:
        """Distances ``t >= 0`` at which rays ``origin + t d`` (``origin`` (3,) inside the
        primitive, ``d`` (n, 3) unit) leave it: the slabs of the box and the cylinder's caps,
        the quadratics of the sphere and the cylinder's side, bisection on ``depth`` for the
        capsule (60 halvings of the bounding diameter: to 1e-18 of it)."""
        o = np.asarray(origin, dtype=np.float64)
        d = np.asarray(directions, dtype=np.float64).reshape(-1, 3)
        s = self.size
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.shape == "box":
                h = np.array(s)
                limits = np.where(d > 0, (h - o) / d, np.where(d < 0, (-h - o) / d, np.inf))
                return np.maximum(np.min(limits, axis=1), 0.0)
            if self.shape == "sphere":
                return np.maximum(_quadratic_exit(d, o, s[0], planar=False), 0.0)
            if self.shape == "cylinder":
                side = _quadratic_exit(d, o, s[0], planar=True)
                caps = np.where(d[:, 2] > 0, (s[1] - o[2]) / d[:, 2],
                                np.where(d[:, 2] < 0, (-s[1] - o[2]) / d[:, 2], np.inf))
                return np.maximum(np.minimum(side, caps), 0.0)
        low = np.zeros(d.shape[0])
        high = np.full(d.shape[0], 2.0 * self.bounding_radius)
        for _ in range(60):
            mid = 0.5 * (low + high)
            inside = self.depth(o[None, :] + mid[:, None] * d) >= 0
            low, high = np.where(inside, mid, low), np.where(inside, high, mid)
        return low


def _quadratic_exit(d: FloatArray, o: FloatArray, radius: float, planar: bool) -> FloatArray:
    """The larger root ``t`` of ``|o + t d|^2 = radius^2`` (over x, y only if ``planar``;
    ``inf`` for a ray parallel to the cylinder's axis)."""
    dd = d[:, :2] if planar else d
    oo = o[:2] if planar else o
    a = np.sum(dd * dd, axis=1)
    b = dd @ oo
    c = float(oo @ oo) - radius * radius
    root = np.sqrt(np.maximum(b * b - a * c, 0.0))
    return np.where(a > 1e-300, (-b + root) / np.where(a > 1e-300, a, 1.0), np.inf)


#: The shapes :func:`line_interval` takes.
LINE_SHAPES: tuple[str, ...] = ("box", "sphere", "cylinder", "capsule")


def _sphere_interval(o: FloatArray, d: FloatArray, radius: float,
                     planar: bool = False) -> tuple[FloatArray, FloatArray]:
    """The roots of ``|o + t d|^2 = radius^2`` (over x, y only if ``planar``: the infinite
    cylinder about z), ``(inf, -inf)`` for a line that misses; a line parallel to the
    cylinder's axis is inside it along its whole length, or misses it."""
    dd = d[:2] if planar else d
    oo = o[:, :2] if planar else o
    a = float(dd @ dd)
    c = np.sum(oo * oo, axis=1) - radius * radius
    if a <= 1e-300:  # along the axis: all of the line or none of it
        return np.where(c <= 0, -np.inf, np.inf), np.where(c <= 0, np.inf, -np.inf)
    b = oo @ dd
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    return np.where(disc >= 0, (-b - root) / a, np.inf), np.where(disc >= 0, (-b + root) / a, -np.inf)


def line_interval(shape: str, size: tuple[float, ...], origins: FloatArray,
                  direction: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Where the lines ``o + t d`` (``origins`` (n, 3), one unit ``direction`` (3,), body frame)
    cross a box (half extents ``size``: the slabs' entry and exit, Kay and Kajiya's slab test), a
    sphere (radius ``size[0]``: the roots of ``|o + t d|^2 = R^2``), a cylinder (``(R, L)``: the
    infinite cylinder ``x^2 + y^2 <= R^2`` cut by the slab ``|z| <= L``) or a capsule (``(R, L)``:
    the union of that cylinder and the balls of radius ``R`` about ``(0, 0, +-L)``, one interval
    since the capsule is convex): ``(t_in, t_out)`` (n,) each, ``t_in > t_out`` for a line that
    misses it."""
    if shape not in LINE_SHAPES:
        raise ValueError(f"line_interval: shape must be one of {LINE_SHAPES}, got {shape!r}")
    o = np.asarray(origins, dtype=np.float64).reshape(-1, 3)
    d = np.asarray(direction, dtype=np.float64).reshape(3)
    if shape == "sphere":
        return _sphere_interval(o, d, float(size[0]))
    if shape == "box":
        return _slab_interval(o, d, np.asarray(size, dtype=np.float64))
    R, L = float(size[0]), float(size[1])
    side_in, side_out = _sphere_interval(o, d, R, planar=True)
    slab_in, slab_out = _slab_interval(o, d, np.array([np.inf, np.inf, L]))
    t_in, t_out = np.maximum(side_in, slab_in), np.minimum(side_out, slab_out)
    if shape == "cylinder":
        return t_in, t_out
    missed = t_in > t_out  # an empty cut of the side and the slab: nothing to join the caps to
    t_in, t_out = np.where(missed, np.inf, t_in), np.where(missed, -np.inf, t_out)
    for end in (L, -L):
        cap_in, cap_out = _sphere_interval(o - np.array([0.0, 0.0, end]), d, R)
        t_in, t_out = np.where(cap_in <= cap_out, np.fmin(t_in, cap_in), t_in), \
            np.where(cap_in <= cap_out, np.fmax(t_out, cap_out), t_out)
    return t_in, t_out


def _slab_interval(o: FloatArray, d: FloatArray, half: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Kay and Kajiya's slab test of the lines against ``|x_i| <= half_i`` (an infinite
    ``half_i`` leaves that axis free)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / d  # +-inf along a slab: its entry and exit are then -inf and +inf inside
        first, second = (-half - o) * inverse, (half - o) * inverse  # it, both -inf or +inf outside
    # fmin/fmax skip the NaN of a line on a slab's face parallel to it (0 * inf), and of a free axis
    t_in = np.fmax.reduce(np.fmin(first, second), axis=1)
    t_out = np.fmin.reduce(np.fmax(first, second), axis=1)
    return t_in, t_out


def support_point(shape: str, size: tuple[float, ...], direction: FloatArray) -> FloatArray:
    """The point of the primitive (body frame) farthest along ``direction`` (3,)."""
    d = np.asarray(direction, dtype=np.float64)
    s = size
    if shape == "box":
        return np.sign(d) * np.array(s)  # a face's (or edge's) centre on ties
    if shape == "sphere":
        return s[0] * d / max(float(np.linalg.norm(d)), 1e-300)
    planar = np.array([d[0], d[1], 0.0])
    rho = float(np.linalg.norm(planar))
    cap = np.array([0.0, 0.0, s[1] * (1.0 if d[2] >= 0 else -1.0)])
    if shape == "cylinder":
        return cap + (s[0] * planar / rho if rho > 0 else 0.0)
    return cap + s[0] * d / max(float(np.linalg.norm(d)), 1e-300)
