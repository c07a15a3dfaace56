"""Semismooth Newton polish of an interior-point answer whose second-order cone blocks sit on
the cone boundary (a sliding contact: both the slack ``s`` and the dual ``y`` nonzero), where
the active-set refinement of :mod:`contactopt.solvers.refine` cannot fix the rows.

The KKT conditions of ``min 1/2 x'Px + c'x  s.t.  Ax + s = b, s in K`` (K a product of Zero,
Nonneg and SOC cones, self-dual but for Zero) are the natural-map equations (Facchinei & Pang,
*Finite-Dimensional Variational Inequalities and Complementarity Problems*, 2003, §1.5;
Hayashi, Yamashita & Fukushima 2005 for second-order cones)::

    P x + c + A' y = 0
    s_Z = 0                                   on Zero rows (s = b - A x)
    y_K - Pi_K(y_K - s_K) = 0                 on Nonneg and SOC blocks

``Pi`` the Euclidean projection onto the cone (SOC: ``z -> 0`` below the polar cone, ``z``
inside, ``(z0 + |z1|) / 2 (1, z1 / |z1|)`` otherwise). ``Pi`` is strongly semismooth, so
Newton's method with an element of its generalized Jacobian converges quadratically from the
interior-point point, which is already close (Qi & Sun 1993): a few iterations take a
sliding contact's ``O(sqrt(tol))`` error to rounding. Steps are damped by halving until the
residual norm decreases; the caller accepts the result only if contactopt's own residuals
fall.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import scipy.linalg as la
from numpy.typing import NDArray

from contactopt.programs import ConicProgram
from contactopt.programs.residuals import cone_row_indices

FloatArray = NDArray[np.float64]

#: Dense Newton systems only (time steps are small); larger programs are left as they are.
SIZE_LIMIT = 600

_GELSY: Any = cast(list[Any], la.get_lapack_funcs(("gelsy",), (np.zeros((1, 1)),)))[0]


def min_norm_solve(K: FloatArray, rhs: FloatArray) -> FloatArray:
    """The minimum-norm least-squares solution of ``K z = rhs`` (square ``K``, possibly
    singular), by LAPACK's complete orthogonal factorization ``gelsy`` (QR with column
    pivoting; rank cut at ``eps * size`` relative, NumPy's ``lstsq`` default): the same answer
    as the SVD (``gelsd``) at about half its cost on the small systems of a time step."""
    size = K.shape[0]
    if size == 0:
        return np.zeros(0)
    lwork = 4 * size * (size + 1) + 1  # at least the minimum 4 size + 1, room for blocked QR
    _, solution, _, _, info = _GELSY(K, rhs.reshape(size, 1), np.zeros(size, dtype=np.int32),
                                     np.finfo(np.float64).eps * size, lwork)
    if info != 0:  # an illegal argument: the SVD answers the same question
        return np.asarray(np.linalg.lstsq(K, rhs, rcond=None)[0])
    return np.asarray(solution[:, 0])


def _soc_projections(z: FloatArray, jacobian: bool) -> tuple[FloatArray, FloatArray | None]:
    """``Pi(z_i)`` of (count, dim) points, one second-order cone each, and (count, dim, dim)
    elements of the generalized Jacobians: ``z`` inside the cone (``|z1| <= z0``): ``z`` and
    ``I``; in the polar cone (``|z1| <= -z0``): 0 and 0; otherwise, with ``w = z1 / |z1|``,
    ``(z0 + |z1|) / 2 (1, w)`` and ``1/2 [[1, w'], [w, (1 + z0/|z1|) I - (z0/|z1|) w w']]``."""
    count, dim = z.shape
    z0, z1 = z[:, 0], z[:, 1:]
    t = np.sqrt(np.einsum("ij,ij->i", z1, z1))
    inside, polar = t <= z0, t <= -z0
    side = ~(inside | polar)
    safe_t = np.where(side, t, 1.0)  # t > 0 on the side (t = 0 is inside or polar)
    w = z1 / safe_t[:, None]
    value = np.empty_like(z)
    value[:, 0] = 1.0
    value[:, 1:] = w
    value *= (0.5 * (z0 + t))[:, None]
    value[inside] = z[inside]
    value[polar] = 0.0
    if not jacobian:
        return value, None
    ratio = z0 / safe_t
    jac = np.empty((count, dim, dim))
    jac[:, 0, 0] = 1.0
    jac[:, 0, 1:] = w
    jac[:, 1:, 0] = w
    outer = w[:, :, None] * w[:, None, :]
    jac[:, 1:, 1:] = (1.0 + ratio)[:, None, None] * np.eye(dim - 1) - ratio[:, None, None] * outer
    jac *= 0.5
    jac[inside] = np.eye(dim)
    jac[polar] = 0.0
    return value, jac


def _residual(program: ConicProgram, P: FloatArray, A: FloatArray, x: FloatArray, y: FloatArray,
              jacobian: bool) -> tuple[FloatArray, FloatArray | None]:
    """The natural map ``F(x, y)`` and, if asked, an element of its generalized Jacobian,
    vectorized over the cones. A Zero row is written ``y - Pi(y - s)`` with ``Pi`` the identity
    (the projection onto the free dual cone), which is ``s``: every row then reads
    ``y - Pi(y - s)`` with a block-diagonal ``D = dPi``, and the Jacobian is
    ``[[P, A'], [-D A, I - D]]``."""
    n, m = program.n, program.m
    zero, nonneg, socs = cone_row_indices(program)
    s = program.b - A @ x
    z = y - s
    projected = np.empty(m)
    projected[zero] = z[zero]
    projected[nonneg] = np.maximum(z[nonneg], 0.0)
    D = np.zeros((m, m)) if jacobian else None
    if D is not None:
        D[zero, zero] = 1.0
        D[nonneg, nonneg] = (z[nonneg] > 0).astype(np.float64)
    for rows in socs:  # (count, dim) row indices of the cones of one dimension
        value, jac = _soc_projections(z[rows], jacobian)
        projected[rows] = value
        if D is not None and jac is not None:
            D[rows[:, :, None], rows[:, None, :]] = jac
    F = np.empty(n + m)
    F[:n] = P @ x + program.c + A.T @ y
    F[n:] = y - projected
    if D is None:
        return F, None
    Jm = np.empty((n + m, n + m))
    Jm[:n, :n] = P
    Jm[:n, n:] = A.T
    Jm[n:, :n] = -(D @ A)
    Jm[n:, n:] = np.eye(m) - D
    return F, Jm


def polish(program: ConicProgram, x: FloatArray, y: FloatArray, iterations: int = 20) -> tuple[FloatArray,
                                                                                                FloatArray] | None:
    """``(x, y)`` after semismooth Newton on the natural map (module docstring), or None when
    the program is too large or Newton makes no progress."""
    n, m = program.n, program.m
    if n + m > SIZE_LIMIT or any(cone.kind not in ("zero", "nonneg", "soc") for cone in program.cones):
        return None
    P, A = program.P.toarray(), program.A.toarray()
    x, y = np.array(x, dtype=np.float64), np.array(y, dtype=np.float64)
    F, Jm = _residual(program, P, A, x, y, True)
    norm = float(np.linalg.norm(F))
    start = norm
    for _ in range(iterations):
        assert Jm is not None
        step = min_norm_solve(Jm, -F)
        scale = 1.0
        while scale > 1e-4:
            x_new, y_new = x + scale * step[:n], y + scale * step[n:]
            F_new, _ = _residual(program, P, A, x_new, y_new, False)
            if float(np.linalg.norm(F_new)) < norm:
                break
            scale *= 0.5
        else:
            break
        x, y = x_new, y_new
        F, Jm = _residual(program, P, A, x, y, True)
        norm = float(np.linalg.norm(F))
        if norm <= 1e-15 * max(1.0, float(np.abs(program.c).max(initial=0.0))):
            break
    return (x, y) if norm < start else None
