"""One compiled call per step of ``regularized -o params=model,form=primal`` / ``newton``
(:mod:`.native_step`): the rows ordered (:func:`contactopt.formulations.model_primal.ordered_rows`),
Newton's method (:func:`contactopt.solvers.newton.kernels.dense_newton`), the conic form's
arrays (:func:`contactopt.programs.primal_arrays.conic_arrays`) and contactopt's row-wise verdict
(:func:`contactopt.programs.relative_kernel.verdict_kernel`), Newton continued to its rounding
floor where the verdict asks (as :func:`contactopt.solvers.newton.solver.solve` does), MuJoCo's
velocity update and the contacts' frame impulses. Each piece is the one implementation its
module holds; this kernel only calls them in order, with no Python between them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from contactopt.core import jit
from contactopt.formulations import model_primal
from contactopt.programs import primal_arrays, relative_kernel
from contactopt.solvers.newton import kernels

__all__ = ["ANISOTROPIC", "DENSE_MAX", "ensure_compiled", "native_step"]

#: Unknowns up to which the compiled step factorizes Newton's matrix densely (``nv^3 / 3`` flops
#: an iteration: 0.2 Mflop at nv = 85, a fraction of ``mj_step`` on such a model); larger
#: programs go to the ``newton`` solver's sparse path on the program object.
DENSE_MAX = 128

#: Returned in place of a Newton status when a cone has a row scale <= 0 (no friction cone): the
#: program object takes that step (and its solver says what is wrong).
ANISOTROPIC = -1


def native_step(M: Any, S: Any, v: Any, smooth_force: Any, acceleration_free: Any, J_rows: Any, R_rows: Any,
                v_hat_rows: Any, kind: Any, bound_rows: Any, cone_scale: Any, contact: Any, contact_address: Any,
                contact_dim: Any, friction: Any, pyramidal: bool, dt: float, max_iter: int, tol: float,
                tol_abs: float, cost_tol: float, alpha_max: float, ls_tol: float, ls_max_iter: int,
                confirm: float, v_next: Any, x: Any, frame: Any, residuals: Any) -> tuple[int, int]:
    """``(Newton status code or ANISOTROPIC, iterations)``; writes ``v_next`` (nv,), the row
    impulses ``x`` (m, the system's order), ``frame`` (nc, 3) and ``residuals`` (6: primal,
    dual, gap, complementarity, relative, data violation). ``R_rows`` and ``v_hat_rows`` are the
    rows' regularization and target velocities in the system's order
    (:func:`contactopt.formulations.model_primal.row_values`)."""
    nv, m = v.shape[0], R_rows.shape[0]
    order, free, nonneg, box, cone_start, cone_dim, J, R, v_hat, scale, bound = model_primal.ordered_rows(
        kind, contact, contact_address, J_rows, R_rows, v_hat_rows, cone_scale, bound_rows, dt)
    cones = cone_start.shape[0]
    scalar = free + nonneg
    blocks = scalar + box + cones
    start, dim, block_kind = np.empty(blocks, np.int64), np.ones(blocks, np.int64), np.empty(blocks, np.int64)
    mu, row_scale = np.zeros(blocks), np.ones(m)
    for b in range(scalar):
        start[b], block_kind[b] = b, kernels.FREE if b < free else kernels.NONNEG
    for r in range(box):
        start[scalar + r], block_kind[scalar + r], mu[scalar + r] = m - box + r, kernels.BOX, bound[r]
    for k in range(cones):
        b = scalar + box + k
        s, d = cone_start[k], cone_dim[k]
        start[b], dim[b] = s, d
        if d == 1:
            block_kind[b] = kernels.NONNEG
            continue
        kind_b, mu[b], scaled = cone_block(scale, R, s, d)
        if kind_b < 0:  # a row scale <= 0: no friction cone (the program object says so)
            return ANISOTROPIC, 0
        block_kind[b] = kind_b
        if scaled:
            for i in range(s, s + d):  # MuJoCo's elliptic cone: S = scale / scale_n
                row_scale[i] = scale[i] / scale[s]
    c = np.empty(nv)
    d_inv = np.empty(nv)
    for i in range(nv):
        total = 0.0
        for j in range(nv):
            total += M[i, j] * (v[j] + dt * acceleration_free[j])
        c[i] = -total
        d_inv[i] = 1.0 / math.sqrt(M[i, i])
    u = v.copy()
    gamma = np.empty(m)
    code, iterations = kernels.dense_newton(M, J, R, v_hat, c, d_inv, start, dim, block_kind, mu, row_scale, u, gamma,
                                            max_iter, tol, tol_abs, cost_tol, alpha_max, ls_tol, ls_max_iter)
    _judge(M, J, R, scale, v_hat, c, bound, u, gamma, free, nonneg, cone_start, cone_dim, residuals)
    usable = code == kernels.CRITERION or code == kernels.COST_FLOOR or code == kernels.NO_DESCENT
    if usable and math.isfinite(residuals[4]) and residuals[4] > confirm:
        more, extra = kernels.dense_newton(M, J, R, v_hat, c, d_inv, start, dim, block_kind, mu, row_scale, u, gamma,
                                           max_iter, 0.0, 0.0, cost_tol, alpha_max, ls_tol, ls_max_iter)
        iterations += extra
        if more != kernels.MAX_ITER:
            code = more
        _judge(M, J, R, scale, v_hat, c, bound, u, gamma, free, nonneg, cone_start, cone_dim, residuals)
    for p in range(m):
        x[order[p]] = gamma[p]
    rhs = dt * smooth_force
    for j in range(nv):
        for i in range(m):
            rhs[j] += J_rows[i, j] * x[i]
    step = np.linalg.solve(S, rhs)
    for j in range(nv):
        v_next[j] = v[j] + step[j]
    model_primal.frame_kernel(x, contact_address, contact_dim, friction, pyramidal, frame)
    return code, iterations


def _spread(values: Any, first: int, count: int) -> float:
    """``max - min`` of ``values[first:first + count]``."""
    low, high = values[first], values[first]
    for i in range(first + 1, first + count):
        low, high = min(low, values[i]), max(high, values[i])
    return high - low


def _largest(values: Any, first: int, count: int) -> float:
    largest = 0.0
    for i in range(first, first + count):
        largest = max(largest, abs(values[i]))
    return largest


def cone_block(scale: Any, R: Any, s: int, d: int, rtol: float = 1e-9) -> tuple[int, float, bool]:
    """``(Newton block kind, mu, scaled)`` of the friction cone at rows ``s..s+d`` as
    :func:`contactopt.programs.cone_projection.cone_layout` groups it: SOC where the tangential
    scales and ``R`` agree (``mu = scale_t / scale_n``), GENERAL with ``mu = scale_t / scale_n``
    where only ``R`` differs (``soc_general``), GENERAL with ``mu = 1`` and row factors ``scale /
    scale_n`` where the scales differ (``soc_scaled``, MuJoCo's condim 4 and 6); ``(-1, 0)``
    where a row scale is not positive (``cone_layout`` refuses it); ``scaled`` for ``soc_scaled``."""
    for i in range(s, s + d):
        if not scale[i] > 0.0:
            return -1, 0.0, False
    if _spread(scale, s + 1, d - 1) > rtol * _largest(scale, s + 1, d - 1):
        return kernels.GENERAL, 1.0, True
    mu = scale[s + 1] / scale[s]
    if _spread(R, s + 1, d - 1) <= rtol * _largest(R, s + 1, d - 1):
        return kernels.SOC, mu, False
    return kernels.GENERAL, mu, False


def _judge(M: Any, J: Any, R: Any, scale: Any, v_hat: Any, c: Any, bound: Any, u: Any, gamma: Any, free: int,
           nonneg: int, cone_start: Any, cone_dim: Any, residuals: Any) -> None:
    """The verdict's six numbers of ``(u, gamma)`` into ``residuals`` (infinite if not finite)."""
    finite = True
    for value in u:
        finite = finite and math.isfinite(value)
    for value in gamma:
        finite = finite and math.isfinite(value)
    if not finite:
        residuals[:] = np.inf
        return
    Pp, Pi, Px, Ap, Ai, Ax, b, c_full, x, y = primal_arrays.conic_arrays(M, J, R, scale, v_hat, c, bound, u, gamma)
    count = (1 if free else 0) + (1 if nonneg else 0) + cone_start.shape[0] + (1 if bound.shape[0] else 0)
    kind, start, dim = np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count, np.int64)
    k = 0
    if free:
        kind[k], start[k], dim[k] = relative_kernel.ZERO, 0, free
        k += 1
    if nonneg:
        kind[k], start[k], dim[k] = relative_kernel.NONNEG, free, nonneg
        k += 1
    for i in range(cone_start.shape[0]):
        kind[k], start[k], dim[k] = (relative_kernel.SOC if cone_dim[i] > 1 else relative_kernel.NONNEG,
                                     cone_start[i], cone_dim[i])
        k += 1
    if bound.shape[0]:
        kind[k], start[k], dim[k] = relative_kernel.NONNEG, R.shape[0] - bound.shape[0], 2 * bound.shape[0]
    s = np.empty(b.shape[0])
    out = relative_kernel.verdict_kernel(Pp, Pi, Px, c_full, Ap, Ai, Ax, b, kind, start, dim, x, y, s)
    for i in range(6):
        residuals[i] = out[i]


_KERNELS = ("_spread", "_largest", "cone_block", "_judge", "native_step")
#: Compiles the callees first (numba resolves a kernel's globals when it compiles it).
ensure_compiled = jit.in_place_once(globals(), _KERNELS, before=(
    kernels.ensure_compiled, model_primal.ensure_compiled, primal_arrays.ensure_compiled,
    relative_kernel.ensure_compiled))
