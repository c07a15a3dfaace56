"""Compiled kernels of the ``newton`` solver (numba, optional): the projection (S3) per block,
the line-search derivatives, and the whole Newton loop for small dense problems.

The math is that of :mod:`contactopt.programs.cone_projection` (regimes of an isotropic
friction cone, half lines, free rows) and :mod:`contactopt.solvers.newton.solver` (Newton's method
with exact line search, SAP's criterion (S10), the cost floor); this module only changes how
it runs. Why: on the single box (6 unknowns, 8 contacts) a NumPy iteration is a few dozen
array calls of 1-5 us each, and the line search calls the projection 3-8 times per Newton
iteration: overhead, not arithmetic. Compiled, a whole solve is tens of microseconds.

Blocks are described by flat arrays: ``start`` (first row), ``dim``, ``kind`` (FREE,
NONNEG, SOC, BOX or GENERAL; a ``nonneg`` or ``box`` row is a 1-row block), ``mu`` (a box row's
bound; its cost is Huber's, :func:`box_cost`) and, per row, ``scale`` (the factor ``S`` of a
``soc_scaled`` block, 1 elsewhere). GENERAL blocks, ``soc_general`` and ``soc_scaled`` cones, are
:mod:`.newton_kernels_cones`' (their cost is ``1/2 gamma' R gamma`` too: ``gamma' R (y - gamma) =
0`` at the projection onto any cone). When numba is not installed
(or ``CONTACTOPT_NO_NUMBA`` is set) ``AVAILABLE`` is False and
:mod:`contactopt.solvers.newton.solver` uses its NumPy path (same results to rounding, tested).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.programs.cone_projection import ConeLayout
from contactopt.solvers.newton import kernels_cones as cones

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

Blocks = tuple[IntArray, IntArray, IntArray, FloatArray, FloatArray]  # (start, dim, kind, mu, scale)
FREE, NONNEG, SOC, BOX, GENERAL = 0, 1, 2, 3, 4
#: Status codes of :func:`dense_newton`, read by the solver.
CRITERION, COST_FLOOR, NO_DESCENT, MAX_ITER, NONFINITE, NOT_PD = range(6)

# numba is imported on first use (:func:`ensure_compiled`), not with contactopt: it costs
# ~0.4 s of import time that a CLI call without newton should not pay. The first compilation
# takes 10-60 s (cached on disk afterwards, in __pycache__); CONTACTOPT_NO_NUMBA=1 keeps the
# NumPy path, e.g. for a one-off run on a fresh checkout.
AVAILABLE = jit.ENABLED
_KERNELS = ("_soc_block", "project_blocks", "box_cost", "line_derivatives", "line_search", "_matvec",
            "_scaled_norm", "dense_newton")
_compiled = False


def ensure_compiled() -> None:
    """Replace this module's kernels by numba dispatchers (compiled lazily, at their first
    call, each against the others' dispatchers: numba resolves globals when it compiles)."""
    global _compiled
    if _compiled or not AVAILABLE:
        return
    jit.jit_in_place(vars(cones), cones.KERNELS)  # first: these kernels call them
    jit.jit_in_place(globals(), _KERNELS)
    _compiled = True


_CODES = {"free": FREE, "nonneg": NONNEG, "soc": SOC, "box": BOX, "soc_general": GENERAL, "soc_scaled": GENERAL}


def block_arrays(layout: ConeLayout) -> Blocks:
    """``(start, dim, kind, mu, scale)`` of every block (``scale`` per row); every kind of
    :class:`~contactopt.programs.cone_projection.Group` has its code."""
    unknown = sorted({group.kind for group in layout.groups} - set(_CODES))
    if unknown:
        raise ValueError(f"no Newton kernel for cone block kind(s) {unknown}")
    scale = cones.row_scales(layout) if any(group.kind == "soc_scaled" for group in layout.groups) \
        else np.ones(layout.m)
    parts = [(group.rows[:, 0], group.rows.shape[1], _CODES[group.kind], group.mu) for group in layout.groups]
    if not parts:  # no constraint rows
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), scale
    if len(parts) == 1:  # the common case (one kind of block) without concatenation
        first, d, code, mu = parts[0]
        n = first.shape[0]
        return (first.astype(np.int64), np.full(n, d, np.int64), np.full(n, code, np.int64),
                mu.astype(np.float64) if code != FREE and code != NONNEG else np.zeros(n), scale)
    return (np.concatenate([p[0] for p in parts]).astype(np.int64),
            np.concatenate([np.full(p[0].shape[0], p[1], np.int64) for p in parts]),
            np.concatenate([np.full(p[0].shape[0], p[2], np.int64) for p in parts]),
            np.concatenate([p[3] if p[2] not in (FREE, NONNEG) else np.zeros(p[0].shape[0])
                            for p in parts]).astype(np.float64), scale)


def _soc_block(y: FloatArray, R: FloatArray, s: int, d: int, mu: float, gamma: FloatArray,
               G: FloatArray, want_G: bool) -> None:
    """One isotropic friction cone at rows ``s..s+d``: ``gamma[s:s+d]`` and, if ``want_G``,
    the (d, d) block ``G`` (the three regimes of :mod:`.cone_projection`)."""
    yn = y[s]
    Rn = R[s]
    Rt = R[s + 1]
    yr2 = 0.0
    for i in range(1, d):
        yr2 += y[s + i] * y[s + i]
    yr = math.sqrt(yr2)
    if want_G:
        for i in range(d):
            for j in range(d):
                G[i, j] = 0.0
    if yr <= mu * yn:  # stiction
        for i in range(d):
            gamma[s + i] = y[s + i]
            if want_G:
                G[i, i] = 1.0 / R[s + i]
        return
    denominator = Rn + mu * mu * Rt
    gn = (Rn * yn + mu * Rt * yr) / denominator
    if gn <= 0.0:  # no contact (R-polar cone)
        for i in range(d):
            gamma[s + i] = 0.0
        return
    gamma[s] = gn  # sliding: yr > 0 here (yr = 0 is stiction or no contact)
    for i in range(1, d):
        gamma[s + i] = mu * gn * y[s + i] / yr
    if want_G:
        curvature = mu * gn / (Rt * yr)
        G[0, 0] = 1.0 / denominator
        for i in range(1, d):
            ti = y[s + i] / yr
            G[0, i] = mu * ti / denominator
            G[i, 0] = G[0, i]
            for j in range(1, d):
                tj = y[s + j] / yr
                G[i, j] = mu * mu * ti * tj / denominator - curvature * ti * tj
            G[i, i] += curvature


def project_blocks(y: FloatArray, R: FloatArray, start: IntArray, dim: IntArray, kind: IntArray,
                   mu: FloatArray, scale: FloatArray, gamma: FloatArray, G: FloatArray, want_G: bool) -> None:
    """``gamma`` (m,) and, if ``want_G``, ``G`` (nb, dmax, dmax) of every block."""
    for b in range(start.shape[0]):
        s = start[b]
        if kind[b] == SOC:
            _soc_block(y, R, s, dim[b], mu[b], gamma, G[b], want_G)
            continue
        if kind[b] == GENERAL:
            cones.general_block(y, R, scale, s, dim[b], mu[b], gamma, G[b], want_G)
            continue
        if kind[b] == BOX:  # clip to [-f, f]
            inside = abs(y[s]) < mu[b]
            gamma[s] = y[s] if inside else math.copysign(mu[b], y[s])
            if want_G:
                G[b, 0, 0] = 1.0 / R[s] if inside else 0.0
            continue
        positive = kind[b] == FREE or y[s] > 0.0
        gamma[s] = y[s] if positive else 0.0
        if want_G:
            G[b, 0, 0] = 1.0 / R[s] if positive else 0.0


def box_cost(y: FloatArray, R: FloatArray, start: IntArray, kind: IntArray, gamma: FloatArray) -> float:
    """What the box rows add to ``1/2 gamma' R gamma`` for the regularizer cost ``l_R``:
    ``gamma R (y - gamma)``, Huber's linear part where clipped (0 inside)."""
    extra = 0.0
    for b in range(start.shape[0]):
        if kind[b] == BOX:
            s = start[b]
            extra += gamma[s] * R[s] * (y[s] - gamma[s])
    return extra


def line_derivatives(alpha: float, vc: FloatArray, w: FloatArray, R: FloatArray, v_hat: FloatArray,
                     start: IntArray, dim: IntArray, kind: IntArray, mu: FloatArray, scale: FloatArray, a: float,
                     b: float, want_second: bool, y: FloatArray, gamma: FloatArray, G: FloatArray
                     ) -> tuple[float, float]:
    """``(l'(alpha), l''(alpha))`` along ``dv`` with ``w = J dv``, ``a = dv'A dv``, ``b =
    dv'(A v + c)``; ``y``, ``gamma``, ``G`` are scratch (G: one (dmax, dmax) block). Only the
    blocks passed count: a block whose ``y`` stays in the polar cone of ``F`` (no contact) on
    the whole segment adds nothing and may be left out (:mod:`.newton_sparse`)."""
    first = b + alpha * a
    second = a
    for k in range(start.shape[0]):  # y only on these blocks' rows (a caller may pass a subset)
        s = start[k]
        d = dim[k]
        for i in range(s, s + d):
            y[i] = (v_hat[i] - vc[i] - alpha * w[i]) / R[i]
        if kind[k] == SOC or kind[k] == GENERAL:
            if kind[k] == SOC:
                _soc_block(y, R, s, d, mu[k], gamma, G, want_second)
            else:
                cones.general_block(y, R, scale, s, d, mu[k], gamma, G, want_second)
            for i in range(d):
                first -= w[s + i] * gamma[s + i]
            if want_second:
                for i in range(d):
                    for j in range(d):
                        second += w[s + i] * G[i, j] * w[s + j]
            continue
        if kind[k] == BOX:
            inside = abs(y[s]) < mu[k]
            first -= w[s] * (y[s] if inside else math.copysign(mu[k], y[s]))
            if want_second and inside:
                second += w[s] * w[s] / R[s]
            continue
        positive = kind[k] == FREE or y[s] > 0.0
        if positive:
            first -= w[s] * y[s]
            if want_second:
                second += w[s] * w[s] / R[s]
    return first, second


def line_search(vc: FloatArray, w: FloatArray, R: FloatArray, v_hat: FloatArray, start: IntArray,
                dim: IntArray, kind: IntArray, mu: FloatArray, scale: FloatArray, a: float, b: float, slope: float,
                alpha_max: float, ls_tol: float, ls_max_iter: int, y: FloatArray, gamma: FloatArray,
                G: FloatArray) -> float:
    """The exact line search of :mod:`contactopt.solvers.newton.solver` (same steps)."""
    if not slope < 0.0:
        return 0.0
    tolerance = ls_tol * abs(slope)
    alpha = 1.0
    d, d2 = line_derivatives(alpha, vc, w, R, v_hat, start, dim, kind, mu, scale, a, b, True, y, gamma, G)
    if abs(d) <= tolerance:
        return alpha
    if d < 0.0:
        if alpha_max == 1.0:
            return alpha_max
        if line_derivatives(alpha_max, vc, w, R, v_hat, start, dim, kind, mu, scale, a, b, False, y, gamma,
                            G)[0] <= 0.0:
            return alpha_max
        low, high = 1.0, alpha_max
    else:
        low, high = 0.0, 1.0
    for _ in range(ls_max_iter):
        candidate = alpha - d / d2 if d2 > 0.0 else -1.0
        if not (low < candidate < high):
            candidate = 0.5 * (low + high)
        alpha = candidate
        d, d2 = line_derivatives(alpha, vc, w, R, v_hat, start, dim, kind, mu, scale, a, b, True, y, gamma, G)
        if abs(d) <= tolerance:
            break
        if d < 0.0:
            low = alpha
        else:
            high = alpha
        if high - low <= 1e-15 * high:
            break
    return alpha


def _matvec(M: FloatArray, x: FloatArray, out: FloatArray, transpose: bool) -> None:
    """``out = M x`` (or ``M' x``) without temporaries (BLAS call overhead dominates here)."""
    rows, cols = M.shape
    if transpose:
        for j in range(cols):
            out[j] = 0.0
        for i in range(rows):
            xi = x[i]
            if xi != 0.0:
                for j in range(cols):
                    out[j] += M[i, j] * xi
        return
    for i in range(rows):
        value = 0.0
        for j in range(cols):
            value += M[i, j] * x[j]
        out[i] = value


def _scaled_norm(d: FloatArray, x: FloatArray) -> float:
    total = 0.0
    for i in range(x.shape[0]):
        total += (d[i] * x[i]) ** 2
    return math.sqrt(total)


def dense_newton(A: FloatArray, J: FloatArray, R: FloatArray, v_hat: FloatArray, c: FloatArray,
                 d_inv: FloatArray, start: IntArray, dim: IntArray, kind: IntArray, mu: FloatArray,
                 scale: FloatArray, v: FloatArray, gamma: FloatArray, max_iter: int, tol: float, tol_abs: float,
                 cost_tol: float, alpha_max: float, ls_tol: float, ls_max_iter: int) -> tuple[int, int]:
    """Newton's method of :mod:`contactopt.solvers.newton.solver` on dense ``A``, ``J`` with a
    Cholesky factorization written out (sizes of a few dozen: no LAPACK call overhead).
    Updates ``v`` in place and leaves ``gamma(v)`` in ``gamma``; returns ``(status code,
    iterations)``."""
    nv = v.shape[0]
    m = R.shape[0]
    dmax = 1
    for k in range(dim.shape[0]):
        dmax = max(dmax, dim[k])
    y = np.empty(m)
    vc = np.empty(m)
    w = np.empty(m)
    G = np.zeros((dim.shape[0], dmax, dmax))
    scratch_y = np.empty(m)
    scratch_g = np.empty(m)
    scratch_G = np.zeros((dmax, dmax))
    H = np.empty((nv, nv))
    step = np.empty(nv)
    Av = np.empty(nv)
    jc = np.empty(nv)
    gradient = np.empty(nv)
    Astep = np.empty(nv)
    c_norm = _scaled_norm(d_inv, c)
    previous = np.inf
    for iteration in range(max_iter + 1):
        _matvec(J, v, vc, False)
        for i in range(m):
            y[i] = (v_hat[i] - vc[i]) / R[i]
        project_blocks(y, R, start, dim, kind, mu, scale, gamma, G, False)
        _matvec(A, v, Av, False)
        _matvec(J, gamma, jc, True)
        cost = 0.0
        for i in range(nv):
            gradient[i] = Av[i] + c[i] - jc[i]
            cost += 0.5 * v[i] * Av[i] + c[i] * v[i]
        for i in range(m):
            cost += 0.5 * gamma[i] * R[i] * gamma[i]
        cost += box_cost(y, R, start, kind, gamma)
        if not math.isfinite(cost):
            return NONFINITE, iteration
        size = max(_scaled_norm(d_inv, Av), c_norm, _scaled_norm(d_inv, jc))
        if _scaled_norm(d_inv, gradient) <= tol_abs + tol * size:
            return CRITERION, iteration
        if iteration > 0 and previous - cost <= cost_tol * max(abs(cost), abs(previous)):
            return COST_FLOOR, iteration
        if iteration == max_iter:
            break
        project_blocks(y, R, start, dim, kind, mu, scale, gamma, G, True)
        H[:, :] = A
        for k in range(start.shape[0]):  # H += J_b' G_b J_b
            s = start[k]
            d = dim[k]
            for i in range(d):
                for j in range(d):
                    g = G[k, i, j]
                    if g != 0.0:
                        for p in range(nv):
                            jp = g * J[s + i, p]
                            if jp != 0.0:
                                for q in range(nv):
                                    H[p, q] += jp * J[s + j, q]
        for j in range(nv):  # Cholesky H = L L' in the lower triangle
            pivot = H[j, j]
            for k in range(j):
                pivot -= H[j, k] * H[j, k]
            if not pivot > 0.0:
                return NOT_PD, iteration
            pivot = math.sqrt(pivot)
            H[j, j] = pivot
            for i in range(j + 1, nv):
                value = H[i, j]
                for k in range(j):
                    value -= H[i, k] * H[j, k]
                H[i, j] = value / pivot
        for i in range(nv):  # step = -H^{-1} gradient
            value = -gradient[i]
            for k in range(i):
                value -= H[i, k] * step[k]
            step[i] = value / H[i, i]
        for i in range(nv - 1, -1, -1):
            value = step[i]
            for k in range(i + 1, nv):
                value -= H[k, i] * step[k]
            step[i] = value / H[i, i]
        _matvec(A, step, Astep, False)
        _matvec(J, step, w, False)
        a = 0.0
        b = 0.0
        slope = 0.0
        for i in range(nv):
            a += step[i] * Astep[i]
            b += step[i] * (Av[i] + c[i])
            slope += step[i] * gradient[i]
        alpha = line_search(vc, w, R, v_hat, start, dim, kind, mu, scale, a, b, slope, alpha_max, ls_tol, ls_max_iter,
                            scratch_y, scratch_g, scratch_G)
        if alpha == 0.0:
            return NO_DESCENT, iteration
        for i in range(nv):
            v[i] += alpha * step[i]
        previous = cost
    return MAX_ITER, max_iter
