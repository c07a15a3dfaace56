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

import numpy as np
from numpy.typing import NDArray

from contactopt.programs import ConicProgram

FloatArray = NDArray[np.float64]

#: Dense Newton systems only (time steps are small); larger programs are left as they are.
SIZE_LIMIT = 600


def _soc_projection(z: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``Pi(z)`` and an element of its generalized Jacobian for one second-order cone."""
    dim = z.shape[0]
    z0, z1 = float(z[0]), z[1:]
    t = float(np.linalg.norm(z1))
    if t <= z0:
        return z.copy(), np.eye(dim)
    if t <= -z0:
        return np.zeros(dim), np.zeros((dim, dim))
    w = z1 / t
    value = np.concatenate([[1.0], w]) * 0.5 * (z0 + t)
    jac = np.empty((dim, dim))
    jac[0, 0] = 1.0
    jac[0, 1:] = w
    jac[1:, 0] = w
    jac[1:, 1:] = (1.0 + z0 / t) * np.eye(dim - 1) - (z0 / t) * np.outer(w, w)
    return value, 0.5 * jac


def _residual(program: ConicProgram, P: FloatArray, A: FloatArray, x: FloatArray, y: FloatArray,
              jacobian: bool) -> tuple[FloatArray, FloatArray | None]:
    n, m = program.n, program.m
    s = program.b - A @ x
    F = np.empty(n + m)
    F[:n] = P @ x + program.c + A.T @ y
    Jm = np.zeros((n + m, n + m)) if jacobian else None
    if Jm is not None:
        Jm[:n, :n] = P
        Jm[:n, n:] = A.T
    row = 0
    for cone in program.cones:
        idx = slice(row, row + cone.dim)
        r = slice(n + row, n + row + cone.dim)
        row += cone.dim
        if cone.kind == "zero":
            F[r] = s[idx]
            if Jm is not None:
                Jm[r, :n] = -A[idx]
            continue
        z = y[idx] - s[idx]
        if cone.kind == "nonneg":
            value = np.maximum(z, 0.0)
            d = np.diag((z > 0).astype(np.float64))
        else:
            value, d = _soc_projection(z)
        F[r] = y[idx] - value
        if Jm is not None:  # z = y - b + A x
            Jm[r, :n] = -d @ A[idx]
            Jm[r, n + idx.start:n + idx.stop] = np.eye(cone.dim) - d
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
        step = np.linalg.lstsq(Jm, -F, rcond=None)[0]
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
