"""The verdict of a conic program's candidate in one compiled pass (issue 34, item 4).

:func:`verdict_kernel` computes what :func:`contactopt.programs.residuals.conic_check` and
:func:`contactopt.programs.relative.conic_data_violation` compute, from the program's flat
arrays: the absolute residuals (primal, dual, gap, complementarity), the worst row-wise
relative residual (componentwise backward errors, Oettli and Prager 1964; Higham, "Accuracy
and Stability of Numerical Algorithms", 2nd ed., section 7.2; the terms, floors, reaches and
dual weights of :mod:`contactopt.programs.relative`, whose docstring derives them) and the
data violation the judge reads (:func:`contactopt.solvers.base.judge`). One call, O(nnz(P) +
nnz(A) + m + n), its scratch arrays allocated inside the kernel.

The math is the NumPy path's, read entry by entry in the same order where it matters: the
products ``P x``, ``A x``, ``|A| X``, ``A^T y`` are summed column by column as scipy's CSC
product does (``P`` in its full symmetric storage, as ``ConicProgram.P_dot`` multiplies it),
so the numbers agree to rounding (``tests/test_relative_kernel.py``). Nothing here replaces
the NumPy path; a solver may call :func:`conic_verdict` instead of ``conic_check``.

The cone layout is three integer arrays per cone, in row order (:func:`cone_arrays`): its
kind (:data:`ZERO`, :data:`NONNEG`, :data:`SOC`), first row and dimension. Compiled by numba
when it is installed and ``CONTACTOPT_NO_NUMBA`` is unset (:mod:`contactopt.core.jit`), at the
first call of :func:`conic_verdict` (or after :func:`ensure_compiled`); otherwise the same
loops run as plain Python (the same numbers, slower).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core import jit
from contactopt.core.errors import ShapeError
from contactopt.programs.conic import Cone, ConicProgram
from contactopt.programs.relative import FLOOR
from contactopt.programs.solution import Residuals

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ConeArrays = tuple[IntArray, IntArray, IntArray]

__all__ = ["AVAILABLE", "NONNEG", "SOC", "ZERO", "cone_arrays", "conic_verdict", "ensure_compiled",
           "verdict_kernel"]

#: Cone kind codes of :func:`cone_arrays`.
ZERO, NONNEG, SOC = 0, 1, 2
_CODES = {"zero": ZERO, "nonneg": NONNEG, "soc": SOC}
#: The smallest floor a scale takes (its reciprocal stays finite), as in ``relative._floored``.
_SMALLEST_FLOOR = 1.0 / float(np.finfo(np.float64).max)

AVAILABLE = jit.ENABLED
_KERNELS = ("_floor", "_abs_product", "_column_max", "_fill_reach", "_soc_norms", "verdict_kernel")
_compiled = False


def ensure_compiled() -> None:
    """Replace this module's kernels by numba dispatchers (compiled at their first call, callees
    first: numba resolves a kernel's globals when it compiles it); without numba, nothing."""
    global _compiled
    if _compiled or not AVAILABLE:
        return
    jit.jit_in_place(globals(), _KERNELS)
    _compiled = True


def cone_arrays(cones: Sequence[Cone]) -> ConeArrays:
    """``(kind, start, dim)`` of every cone in row order, as int64 arrays (kinds coded
    :data:`ZERO`, :data:`NONNEG`, :data:`SOC`)."""
    count = len(cones)
    kind = np.fromiter((_CODES[cone.kind] for cone in cones), dtype=np.int64, count=count)
    dim = np.fromiter((cone.dim for cone in cones), dtype=np.int64, count=count)
    start = np.cumsum(dim) - dim
    return kind, start, dim


def _floor(scale: Any) -> None:
    """``relative._floored`` in place: :data:`FLOOR` times the largest entry as a floor (all
    empty: ones)."""
    top = 0.0
    for i in range(scale.shape[0]):
        if scale[i] > top:
            top = scale[i]
    if not top > 0.0:
        scale[:] = 1.0
        return
    floor = max(FLOOR * top, _SMALLEST_FLOOR)
    for i in range(scale.shape[0]):
        if not scale[i] >= floor:
            scale[i] = floor


def _abs_product(indptr: Any, indices: Any, data: Any, v: Any, out: Any) -> None:
    """``out = |M| v`` of a CSC matrix, summed column by column (scipy's order)."""
    out[:] = 0.0
    for j in range(indptr.shape[0] - 1):
        vj = v[j]
        for k in range(indptr[j], indptr[j + 1]):
            out[indices[k]] += abs(data[k]) * vj


def _column_max(indptr: Any, indices: Any, data: Any, rhs: Any, out: Any) -> None:
    """``relative.column_max``: ``max_i rhs_i / |A_ij|`` per column over its entries above
    :data:`FLOOR` times the column's largest (0 for a column without such entries)."""
    for j in range(indptr.shape[0] - 1):
        largest = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            if abs(data[k]) > largest:
                largest = abs(data[k])
        best = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            entry = abs(data[k])
            if entry > FLOOR * largest:
                ratio = rhs[indices[k]] / entry
                if ratio > best:
                    best = ratio
        out[j] = best


def _fill_reach(reach: Any, curvature: Any) -> None:
    """``relative.filled_reach`` in place: entries below :data:`FLOOR` times the largest take
    the geometric mean of the others, or, with curvature, the reach of the mean energy."""
    n = reach.shape[0]
    top = 0.0
    for j in range(n):
        if reach[j] > top:
            top = reach[j]
    if not top > 0.0:
        return
    threshold = FLOOR * top
    log_sum, defined, log_energy, known = 0.0, 0, 0.0, 0
    for j in range(n):
        if reach[j] > threshold:
            log_sum += math.log(reach[j])
            defined += 1
            if curvature[j] > 0.0:
                log_energy += math.log(curvature[j]) + 2.0 * math.log(reach[j])
                known += 1
    if defined == n:
        return
    mean = math.exp(log_sum / defined)
    for j in range(n):
        if not reach[j] > threshold:
            if known > 0 and curvature[j] > 0.0:
                reach[j] = math.exp(0.5 * (log_energy / known - math.log(curvature[j])))
            else:
                reach[j] = mean


def _soc_norms(s: Any, y: Any, start: int, dim: int) -> tuple[float, float, float, float, float]:
    """``(|s|, |s_t|, |y|, |y_t|, s . y)`` of one second-order cone's rows (``t``: all but the
    first)."""
    st, yt, dot = 0.0, 0.0, s[start] * y[start]
    for i in range(start + 1, start + dim):
        st += s[i] * s[i]
        yt += y[i] * y[i]
        dot += s[i] * y[i]
    s_norm = math.sqrt(s[start] * s[start] + st)
    y_norm = math.sqrt(y[start] * y[start] + yt)
    return s_norm, math.sqrt(st), y_norm, math.sqrt(yt), dot


def verdict_kernel(P_indptr: Any, P_indices: Any, P_data: Any, c: Any, A_indptr: Any, A_indices: Any,
                   A_data: Any, b: Any, cone_kind: Any, cone_start: Any, cone_dim: Any, x: Any, y: Any,
                   s: Any) -> tuple[float, float, float, float, float, float]:
    """``(primal, dual, gap, complementarity, relative, data_violation)`` of a finite ``(x, y)``
    for ``min 1/2 x'Px + c'x  s.t.  Ax + s = b, s in K`` (``P`` and ``A`` as CSC arrays, ``P``
    both triangles; the cones as :func:`cone_arrays`); writes ``s = b - A x`` into ``s``."""
    n, m = c.shape[0], b.shape[0]
    diagonal, Px, reach, column_scale, column_work = np.zeros(n), np.zeros(n), np.empty(n), np.empty(n), np.empty(n)
    row_scale, mobility, share = np.empty(m), np.zeros(m), np.zeros(m)
    s[:] = 0.0
    for j in range(n):  # P x and A x by columns (scipy's order), diag(P)
        xj = x[j]
        for k in range(P_indptr[j], P_indptr[j + 1]):
            Px[P_indices[k]] += P_data[k] * xj
            if P_indices[k] == j:
                diagonal[j] += P_data[k]
        for k in range(A_indptr[j], A_indptr[j + 1]):
            s[A_indices[k]] += A_data[k] * xj
    for i in range(m):
        s[i] = b[i] - s[i]
    # absolute residuals (conic_check)
    dual, xPx, cx, by, sy = 0.0, 0.0, 0.0, 0.0, 0.0
    for j in range(n):
        ATy, abs_ATy = 0.0, 0.0
        for k in range(A_indptr[j], A_indptr[j + 1]):
            ATy += A_data[k] * y[A_indices[k]]
            abs_ATy += abs(A_data[k]) * abs(y[A_indices[k]])
        column_work[j] = Px[j] + c[j] + ATy  # stationarity
        column_scale[j] = abs_ATy  # |A|^T |y|: its last term
        if abs(column_work[j]) > dual:
            dual = abs(column_work[j])
        xPx += x[j] * Px[j]
        cx += c[j] * x[j]
    for i in range(m):
        by += b[i] * y[i]
        sy += s[i] * y[i]
    primal, zero_worst, dual_cone = 0.0, 0.0, 0.0
    for cone in range(cone_kind.shape[0]):
        start, dim = cone_start[cone], cone_dim[cone]
        if cone_kind[cone] == SOC:
            _, st_norm, _, yt_norm, _ = _soc_norms(s, y, start, dim)
            primal = max(primal, st_norm - s[start])
            dual_cone = max(dual_cone, yt_norm - y[start])
            continue
        for i in range(start, start + dim):
            if cone_kind[cone] == ZERO:
                zero_worst = max(zero_worst, abs(s[i]))
            else:
                primal = max(primal, -s[i])
                dual_cone = max(dual_cone, -y[i])
    primal = max(primal, zero_worst)
    dual = max(dual, dual_cone)
    gap = abs(xPx + cx + by)
    complementarity = abs(sy)

    # scales (relative._scales): the data's reach, filled where empty
    any_reach = False
    for j in range(n):
        reach[j] = abs(c[j]) / diagonal[j] if diagonal[j] > 0.0 else 0.0
        any_reach = any_reach or reach[j] != 0.0
    if not any_reach:  # c = 0: the rows' own demand (relative._driven_reach)
        _column_max(A_indptr, A_indices, A_data, np.abs(b), reach)
    for j in range(n):
        reach[j] += abs(x[j])
    _fill_reach(reach, diagonal)
    _abs_product(A_indptr, A_indices, A_data, reach, row_scale)
    for i in range(m):
        row_scale[i] += abs(b[i])
    _floor(row_scale)
    _abs_product(P_indptr, P_indices, P_data, reach, Px)  # Px is free: reused for |P| X
    for j in range(n):
        column_scale[j] += abs(c[j]) + Px[j]
    _floor(column_scale)
    for j in range(n):  # mobility sum_j A_ij^2 / P_jj and share sum_j |A_ij| / T_j, by columns
        inverse = 1.0 / diagonal[j] if diagonal[j] > 0.0 else 0.0
        reciprocal = 1.0 / column_scale[j]
        for k in range(A_indptr[j], A_indptr[j + 1]):
            mobility[A_indices[k]] += A_data[k] * A_data[k] * inverse
            share[A_indices[k]] += abs(A_data[k]) * reciprocal

    # relative terms (relative.conic_relative_terms)
    stationarity_term, reach_size = 0.0, 0.0
    for j in range(n):
        stationarity_term = max(stationarity_term, abs(column_work[j]) / column_scale[j])
        reach_size += reach[j] * column_scale[j]
    size = abs(xPx) + abs(cx) + abs(by) + reach_size  # the objective's terms, or their size at the reach
    primal_term, dual_term, complementarity_term = 0.0, 0.0, 0.0
    for cone in range(cone_kind.shape[0]):
        start, dim = cone_start[cone], cone_dim[cone]
        if cone_kind[cone] == SOC:
            scale, block_mobility, block_share = row_scale[start], mobility[start], share[start]
            for i in range(start + 1, start + dim):
                scale = max(scale, row_scale[i])
                block_mobility = max(block_mobility, mobility[i])
                block_share = max(block_share, share[i])
            weight = block_mobility / scale if block_mobility > 0.0 else block_share
            s_norm, st_norm, y_norm, yt_norm, dot = _soc_norms(s, y, start, dim)
            primal_term = max(primal_term, (st_norm - s[start]) / scale)
            dual_side = yt_norm - y[start]
            dual_term = max(dual_term, 0.0 if dual_side == 0.0 else dual_side * weight)
            norms = s_norm * y_norm
            ratio = abs(dot) / norms if norms > 0.0 else 0.0
            y_size = 0.0 if y_norm == 0.0 else y_norm * weight
            complementarity_term = max(complementarity_term, min(min(s_norm / scale, y_size), ratio))
            continue
        for i in range(start, start + dim):
            s_rel = s[i] / row_scale[i]
            if cone_kind[cone] == ZERO:
                primal_term = max(primal_term, abs(s_rel))
                continue
            weight = mobility[i] / row_scale[i] if mobility[i] > 0.0 else share[i]
            y_rel = 0.0 if y[i] == 0.0 else y[i] * weight
            primal_term = max(primal_term, -s_rel)
            dual_term = max(dual_term, -y_rel)
            complementarity_term = max(complementarity_term, min(abs(s_rel), abs(y_rel)))
    gap_term = gap / size if size > 0.0 else 0.0
    relative = max(stationarity_term, primal_term, dual_term, complementarity_term, gap_term)

    # data violation (relative.conic_data_violation): rows against the data's own magnitudes
    violation, violated = share, False  # share is free: reused for the rows' violations
    for cone in range(cone_kind.shape[0]):
        start, dim = cone_start[cone], cone_dim[cone]
        for i in range(start, start + dim):
            if cone_kind[cone] == ZERO:
                violation[i] = abs(s[i])
            elif cone_kind[cone] == NONNEG:
                violation[i] = max(0.0, -s[i])
            else:  # a second-order cone's violation sits on its first row
                violation[i] = max(0.0, _soc_norms(s, s, start, dim)[1] - s[start]) if i == start else 0.0
            violated = violated or violation[i] != 0.0
    data_violation = 0.0
    if violated:
        _column_max(A_indptr, A_indices, A_data, np.abs(b), column_work)
        for j in range(n):
            reach[j] = max(abs(c[j]) / diagonal[j] if diagonal[j] > 0.0 else 0.0, column_work[j])
        _abs_product(A_indptr, A_indices, A_data, reach, row_scale)
        for i in range(m):
            row_scale[i] += abs(b[i])
        _floor(row_scale)
        for i in range(m):
            data_violation = max(data_violation, violation[i] / row_scale[i])
    return primal, dual, gap, complementarity, relative, data_violation


def program_cones(program: ConicProgram) -> ConeArrays:
    """:func:`cone_arrays` of a program, made once (cached on the frozen program)."""
    cached = program.__dict__.get("_cone_arrays")
    if cached is None:
        cached = cone_arrays(program.cones)
        object.__setattr__(program, "_cone_arrays", cached)  # a cache on a frozen program
    return cached


def conic_verdict(program: ConicProgram, x: ArrayLike, y: ArrayLike,
                  s: NDArray[np.float64] | None = None) -> tuple[Residuals, float]:
    """``(residuals, data violation)`` of ``(x, y)``: the numbers of ``conic_check`` and
    ``conic_data_violation`` (at ``s = b - A x``, written into ``s`` when given) from one kernel
    call; a non-finite candidate gets infinite residuals, as ``conic_residuals`` gives it."""
    xv = np.ascontiguousarray(x, dtype=np.float64)
    yv = np.ascontiguousarray(y, dtype=np.float64)
    if xv.shape != (program.n,) or yv.shape != (program.m,):
        raise ShapeError(f"conic_verdict: x must have shape ({program.n},) and y ({program.m},), "
                         f"got {xv.shape} and {yv.shape}")
    if not (np.isfinite(xv).all() and np.isfinite(yv).all()):
        return Residuals(np.inf, np.inf, np.inf, np.inf, np.inf), np.inf
    ensure_compiled()
    P, A = program.P, program.A
    primal, dual, gap, complementarity, relative, data = verdict_kernel(
        P.indptr, P.indices, P.data, program.c, A.indptr, A.indices, A.data, program.b, *program_cones(program),
        xv, yv, np.empty(program.m) if s is None else s)
    return Residuals(primal, dual, gap, complementarity, relative), data
