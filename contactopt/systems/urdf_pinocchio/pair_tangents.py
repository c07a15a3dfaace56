"""First-order motion of a self-collision contact between a sphere and a box (:mod:`.collision`'s
pair contacts), for :class:`.derivatives.StepLinearization`: the analytic tangents of the
contact's separation, point, normal and frame along the dofs.

**The contact in closed form.** A sphere (centre ``s``, radius ``r``) and a box (centre ``c``,
rotation ``R``, half sides ``h``) with ``s`` outside the box: in the box frame ``l = R^T (s - c)``,
the box's closest point ``k = clip(l, -h, h)``, ``d = l - k``, ``rho = |d|``; the unit normal from
the box to the sphere ``m = R d / rho``, the separation ``rho - r`` (negative: penetration), the
witness points ``w_b = c + R k`` and ``w_s = s - r m`` (Ericson, "Real-Time Collision Detection",
sec. 5.1.3, the closest point on an oriented box; sec. 4.3 for the sphere). The contact point is
their midpoint and the normal runs from the first shape to the second, as coal's signed distance
gives them (:func:`.collision.pair_contact`; coal's sphere-box distance is this closed form: the
two agree to 1e-15 on problems/ur5_like_arm_push.toml). A sphere centre inside the box (the
deepest-face case) is not covered: the caller keeps central differences there.

**Its motion.** The shapes move rigidly with their joints: per dof, ``ds = J_o - [s - o]x J_w``
for the sphere's joint, ``dc`` likewise and ``dR = [w_b]x R`` (``w_b`` the box joint's angular
Jacobian). Then ``dl = R^T (ds - dc - w_b x (s - c))``; ``k`` follows ``l`` in the coordinates
strictly inside the box's slab and is fixed in the clamped ones (``dk = mask dl``,
``dd = dl - dk``); ``d rho = d.dd / rho``; ``dm = w_b x m + R (dd / rho - d d rho / rho^2)``;
``dw_b = dc + w_b x (R k) + R dk``, ``dw_s = ds - r dm`` (the chain rule, term by term).

**The frame** ``[n, t1, t2]`` of :func:`.ground.contact_frame` (MuJoCo's ``mju_makeFrame``):
``u = e - n (n.e)`` with ``e = e_y`` (``|n_y| < 0.5``) or ``e_z``, ``t1 = u / |u|``,
``t2 = n x t1``; so ``du = -(dn (n.e) + n (dn.e))``, ``dt1 = (du - t1 (t1.du)) / |u|``,
``dt2 = dn x t1 + n x dt1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PairMotion:
    """A pair contact at the base and its tangents per dof: ``dist`` and ``ddist`` ((nv,)),
    ``pos`` and ``dpos`` ((3, nv)), the normal from the first shape to the second, ``normal`` and
    ``dnormal`` ((3, nv))."""

    dist: float
    pos: FloatArray
    normal: FloatArray
    ddist: FloatArray
    dpos: FloatArray
    dnormal: FloatArray


def sphere_box(sphere: FloatArray, radius: float, dsphere: FloatArray, centre: FloatArray, R: FloatArray,
               half: FloatArray, dcentre: FloatArray, spin: FloatArray, sphere_first: bool) -> PairMotion | None:
    """The sphere-box contact and its motion (module docstring); ``dsphere``, ``dcentre`` the
    centres' motion per dof ((3, nv)), ``spin`` the box's angular Jacobian ((3, nv)). None where
    the sphere's centre is inside the box (or on its surface), or on a slab's boundary (the
    closest feature changes there: not differentiable)."""
    local = R.T @ (sphere - centre)
    clamped = np.clip(local, -half, half)
    gap = local - clamped
    rho = float(np.linalg.norm(gap))
    inside = np.abs(local) < half
    if rho <= 1e-12 * float(np.linalg.norm(half)) or np.any(np.isclose(np.abs(local), half, rtol=1e-12, atol=0.0)):
        return None
    moved = R.T @ (dsphere - dcentre + _skew(sphere - centre) @ spin)  # dl, (3, nv): w x r = -[r]x w
    dk = moved * inside[:, None]
    dgap = moved - dk
    drho = gap @ dgap / rho
    m = R @ gap / rho
    dm = -_skew(m) @ spin + R @ (dgap / rho - np.outer(gap, drho) / rho**2)
    on_box = centre + R @ clamped
    don_box = dcentre - _skew(R @ clamped) @ spin + R @ dk
    on_sphere = sphere - radius * m
    don_sphere = dsphere - radius * dm
    sign = -1.0 if sphere_first else 1.0
    return PairMotion(rho - radius, (on_box + on_sphere) / 2, sign * m, drho, (don_box + don_sphere) / 2, sign * dm)


def frame_tangent(normal: FloatArray, dnormal: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``[n, t1, t2]`` (rows, as :func:`.ground.contact_frame`) and its motion ``(3, 3, nv)``
    (row, column, dof) along ``dn`` (module docstring)."""
    n = normal
    e = np.array([0.0, 1.0, 0.0]) if -0.5 < n[1] < 0.5 else np.array([0.0, 0.0, 1.0])
    u = e - n * (n @ e)
    size = float(np.linalg.norm(u))
    t1 = u / size
    du = -(dnormal * (n @ e) + np.outer(n, e @ dnormal))
    dt1 = (du - np.outer(t1, t1 @ du)) / size
    dt2 = -_skew(t1) @ dnormal + _skew(n) @ dt1
    return np.vstack([n, t1, np.cross(n, t1)]), np.stack([dnormal, dt1, dt2])


def _skew(x: FloatArray) -> FloatArray:
    """``[x]x``: ``[x]x y = x cross y`` (a product, cheaper than ``np.cross`` on (3, nv) arrays)."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])
