"""Small geometry helpers shared by the rigid-body systems.

Quaternions are stored scalar first, ``[w, x, y, z]``, and represent the rotation ``R`` that
maps body-frame vectors to the world frame (``p_world = x + R p_body``). The composition
``q_a * q_b`` (Hamilton product) is the rotation ``R_a R_b``.

References: Featherstone, *Rigid Body Dynamics Algorithms* (2008), section 2.8 (rotations,
cross-product operator) and appendix A; quaternion formulas are the standard Hamilton ones.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ShapeError

FloatArray = NDArray[np.float64]

__all__ = [
    "box_inertia",
    "perp2",
    "point_row",
    "quat_exp",
    "quat_exp_rows",
    "quat_multiply",
    "quat_multiply_rows",
    "quat_normalize",
    "quat_to_matrix",
    "rot2",
    "skew",
    "tangent_basis",
]


def skew(w: ArrayLike) -> FloatArray:
    """The cross-product matrix ``[w]x`` with ``[w]x a = w x a`` (Featherstone 2008, eq. 2.23)."""
    x, y, z = np.asarray(w, dtype=np.float64)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def quat_normalize(q: ArrayLike, name: str = "quaternion") -> FloatArray:
    """``q / |q|``; raises :class:`ShapeError` for a zero (or non-finite) quaternion."""
    arr = np.asarray(q, dtype=np.float64)
    norm = float(np.linalg.norm(arr))
    if not (math.isfinite(norm) and norm > 1e-300):
        raise ShapeError(f"{name}: cannot normalize a zero or non-finite quaternion {arr}")
    return arr / norm


def quat_multiply(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Hamilton product ``a * b`` of scalar-first quaternions (rotation ``R_a R_b``)."""
    aw, ax, ay, az = np.asarray(a, dtype=np.float64)
    bw, bx, by, bz = np.asarray(b, dtype=np.float64)
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_to_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrix of a quaternion (normalized first), body to world."""
    w, x, y, z = quat_normalize(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_exp(rotation_vector: ArrayLike) -> FloatArray:
    """Unit quaternion ``exp(theta / 2)`` of a rotation vector ``theta`` (angle ``|theta|``
    about ``theta / |theta|``): ``[cos(|theta|/2), sin(|theta|/2) theta / |theta|]``.

    Uses ``sin(a/2)/a = sinc(a / 2 pi) / 2`` so that it is exact and smooth at ``a = 0``.
    """
    theta = np.asarray(rotation_vector, dtype=np.float64)
    angle = float(np.linalg.norm(theta))
    half_sinc = 0.5 * float(np.sinc(angle / (2.0 * math.pi)))
    return np.concatenate(([math.cos(0.5 * angle)], half_sinc * theta))


def tangent_basis(n: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Tangents ``(t1, t2)`` completing the unit normal ``n`` to a right-handed orthonormal
    frame (``t1 x t2 = n``).

    ``t1`` is the coordinate axis least aligned with ``n`` (lowest index on ties) with its
    ``n`` component removed, normalized; ``t2 = n x t1``. The chosen axis has
    ``|a . n| <= 1/sqrt(3)``, so the normalization never divides by less than ``sqrt(2/3)``.
    For ``n = +z`` this gives ``t1 = +x``, ``t2 = +y`` (the ground frame).
    """
    nn = np.asarray(n, dtype=np.float64)
    axis = np.zeros(3)
    axis[int(np.argmin(np.abs(nn)))] = 1.0
    t1 = axis - float(axis @ nn) * nn
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(nn, t1)
    return t1, t2


def point_row(r: ArrayLike, d: ArrayLike) -> FloatArray:
    """Row ``[d^T, (r x d)^T]`` mapping a body's twist ``[v; w]`` (world frame, about its
    centre of mass) to ``d . (v + w x r)``, the velocity along ``d`` of the material point at
    offset ``r`` from the centre (Featherstone 2008, section 2.3; ``d.(w x r) = w.(r x d)``)."""
    dd = np.asarray(d, dtype=np.float64)
    return np.concatenate((dd, np.cross(np.asarray(r, dtype=np.float64), dd)))


def box_inertia(mass: float, half_extents: ArrayLike) -> FloatArray:
    """Principal moments of a solid box with half extents ``(a, b, c)``:
    ``m/3 (b^2 + c^2), m/3 (a^2 + c^2), m/3 (a^2 + b^2)`` (full sides ``2a``: ``m/12 (4b^2 + 4c^2)``)."""
    a, b, c = np.asarray(half_extents, dtype=np.float64) ** 2
    return mass / 3.0 * np.array([b + c, a + c, a + b])


def rot2(theta: float) -> FloatArray:
    """Planar rotation ``[[cos, -sin], [sin, cos]]`` acting on ``(x, z)`` columns: a positive
    ``theta`` turns ``+x`` toward ``+z`` (counterclockwise with x right and z up)."""
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def perp2(offset: ArrayLike) -> FloatArray:
    """``d(rot2(theta) p)/dtheta = perp2(rot2(theta) p)`` with ``perp2((a, b)) = (-b, a)``:
    the velocity of a point at ``offset`` on a body turning at unit rate."""
    a, b = np.asarray(offset, dtype=np.float64)
    return np.array([-b, a])


def _hamilton_map() -> FloatArray:
    """(16, 4) constant ``C`` with ``a * b = vec(a b^T) C`` (Hamilton product of scalar-first
    quaternions: every component of the product is a signed sum of the products ``a_i b_j``)."""
    table = {0: [(0, 0, 1), (1, 1, -1), (2, 2, -1), (3, 3, -1)], 1: [(0, 1, 1), (1, 0, 1), (2, 3, 1), (3, 2, -1)],
             2: [(0, 2, 1), (1, 3, -1), (2, 0, 1), (3, 1, 1)], 3: [(0, 3, 1), (1, 2, 1), (2, 1, -1), (3, 0, 1)]}
    C = np.zeros((16, 4))
    for component, terms in table.items():
        for i, j, sign in terms:
            C[4 * i + j, component] = sign
    return C


_HAMILTON = _hamilton_map()


def quat_multiply_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """Row-wise Hamilton products ``a_i * b_i`` of (N, 4) scalar-first quaternions."""
    return (a[:, :, None] * b[:, None, :]).reshape(-1, 16) @ _HAMILTON


def quat_exp_rows(theta: FloatArray) -> FloatArray:
    """Row-wise ``exp(theta / 2)`` of (N, 3) rotation vectors (see ``geometry.quat_exp``)."""
    angle = np.sqrt(np.einsum("ij,ij->i", theta, theta))
    out = np.empty((theta.shape[0], 4))
    out[:, 0] = np.cos(0.5 * angle)
    out[:, 1:] = (0.5 * np.sinc(angle / (2.0 * math.pi)))[:, None] * theta
    return out
