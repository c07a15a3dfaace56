"""The regressor of ``rigid3d`` bodies: the standard ten parameters per body (Atkeson, An and
Hollerbach 1986, "Estimation of inertial parameters of manipulator loads and links"), the
Newton-Euler equations about the body frame's origin ``O`` written linearly in them.

With ``R`` the body's rotation, ``a = vdot[:3]`` the acceleration of ``O`` and ``w, wd`` the
angular velocity and acceleration (all in world axes, contactopt's ``rigid3d`` convention),
``h = R (m c)`` the first moment and ``I_O = R I_b R^T`` the inertia about ``O``, the force and
torque the motion needs are (the body's gravity ``m g`` acting at its centre of mass)::

    f = m (a - g) + wd x h + w x (w x h)
    n = I_O wd + w x (I_O w) + h x (a - g)

Per body ``phi = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]`` (``c`` and
``I_b`` in the body frame); ``rigid3d`` puts ``O`` at the centre of mass with principal axes, so
its values are ``[m, 0, 0, 0, I_1, 0, 0, I_2, 0, I_3]`` and ``Y phi`` is its own ``M vdot - tau``
(tested). The energy ``T + U = 1/2 m |v|^2 + v . (w x h) + 1/2 w^T I_O w - g . (m x + h)`` is
linear in ``phi`` the same way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.geometry import quat_to_matrix

FloatArray = NDArray[np.float64]

__all__ = ["rigid3d_energy", "rigid3d_lumped", "rigid3d_regressor"]

SUFFIXES = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
#: The symmetric basis matrices of ``I_xx, I_xy, I_xz, I_yy, I_yz, I_zz``.
_BASIS = []
for _i, _j in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)):
    _E = np.zeros((3, 3))
    _E[_i, _j] = _E[_j, _i] = 1.0
    _BASIS.append(_E)


def rigid3d_lumped(system: object) -> tuple[tuple[str, ...], FloatArray]:
    """Names ``"<body>.m"``, ... and values of every body's ten parameters (module docstring)."""
    names: list[str] = []
    values: list[float] = []
    for body in system.bodies:  # type: ignore[attr-defined]
        names.extend(f"{body.name}.{s}" for s in SUFFIXES)
        i1, i2, i3 = body.inertia
        values.extend([body.mass, 0.0, 0.0, 0.0, i1, 0.0, 0.0, i2, 0.0, i3])
    return tuple(names), np.array(values, dtype=np.float64)


def _bodies(system: object, q: FloatArray) -> list[tuple[FloatArray, FloatArray]]:
    qq = q.reshape(-1, 7)
    return [(qq[b, :3], quat_to_matrix(qq[b, 3:] / np.linalg.norm(qq[b, 3:]))) for b in range(qq.shape[0])]


def rigid3d_regressor(system: object, q: FloatArray, v: FloatArray, vdot: FloatArray) -> FloatArray:
    """``Y``, (6 N, 10 N): ``Y phi = [f; n]`` per body (module docstring)."""
    g = np.asarray(system.gravity, dtype=np.float64)  # type: ignore[attr-defined]
    frames = _bodies(system, q)
    n = len(frames)
    Y = np.zeros((6 * n, 10 * n))
    vv, aa = v.reshape(-1, 6), vdot.reshape(-1, 6)
    for b, (_, R) in enumerate(frames):
        w, wd, a = vv[b, 3:], aa[b, 3:], aa[b, :3]
        rows, cols = slice(6 * b, 6 * b + 6), 10 * b
        block = np.zeros((6, 10))
        block[:3, 0] = a - g
        for j in range(3):
            h = R[:, j]
            block[:3, 1 + j] = np.cross(wd, h) + np.cross(w, np.cross(w, h))
            block[3:, 1 + j] = np.cross(h, a - g)
        for k, E in enumerate(_BASIS):
            Ew = R @ E @ R.T
            block[3:, 4 + k] = Ew @ wd + np.cross(w, Ew @ w)
        Y[rows, cols : cols + 10] = block
    return Y


def rigid3d_energy(system: object, q: FloatArray, v: FloatArray) -> FloatArray:
    """``h``, (10 N,): ``T + U = h phi`` (module docstring)."""
    g = np.asarray(system.gravity, dtype=np.float64)  # type: ignore[attr-defined]
    frames = _bodies(system, q)
    out = np.zeros(10 * len(frames))
    vv = v.reshape(-1, 6)
    for b, (x, R) in enumerate(frames):
        lin, w = vv[b, :3], vv[b, 3:]
        row = np.zeros(10)
        row[0] = 0.5 * float(lin @ lin) - float(g @ x)
        for j in range(3):
            h = R[:, j]
            row[1 + j] = float(lin @ np.cross(w, h)) - float(g @ h)
        for k, E in enumerate(_BASIS):
            row[4 + k] = 0.5 * float(w @ (R @ E @ R.T) @ w)
        out[10 * b : 10 * b + 10] = row
    return out
