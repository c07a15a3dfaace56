"""The sparse compiled path of ``newton`` (numba) for programs beyond the dense compiled loop
of :mod:`.newton_kernels` (the MJCF sphere pile: 600 unknowns, 485 cones, 1455 rows). Same
algorithm as :mod:`contactopt.solvers.newton.solver` (Newton on (S1), Hessian ``A + J^T G J`` (S5),
exact line search, criterion (S10), cost floor); per iteration two compiled calls
(:func:`evaluate_and_assemble`: ``gamma``, ``G``, gradient, cost and ``H``'s values;
:func:`search_step`: line search and ``v += alpha dv``) around QDLDL's refactorization.

**Pattern of H** (kept across iterations and steps, factorized by QDLDL reusing its
analysis): :mod:`.newton_pattern`.

**Line search.** A block in the polar cone of ``F`` (no contact) at ``alpha = 0`` and at
``alpha_max`` stays there in between (a convex cone), adding nothing to ``l'``, ``l''``: the
search runs over the other blocks only."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton import kernels_cones as cones
from contactopt.solvers.newton.pattern import _PATTERNS, SparsePattern, block_keys, distinct_runs, pattern_for

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
PatternIndex = NDArray[np.int32]  # the pattern's scipy CSC index arrays

RESET_FRACTION = 0.8  # a solve that used less than this fraction of the pattern rebuilds it
FULL_SHARE = 0.8  # share of the blocks' column sets in use beyond which the pattern takes all blocks
MAX_LOCAL_PAIRS = 4_000_000  # blocks x cols^2 above which this path is not used (memory)
_KERNELS = ("local_blocks", "locate_block", "_matvec", "evaluate_and_assemble", "search_step")
_compiled = False


def ensure_compiled() -> None:
    """numba dispatchers for these kernels (and :mod:`.newton_kernels`', which they call)."""
    global _compiled
    if _compiled:
        return
    kernels.ensure_compiled()
    jit.jit_in_place(globals(), _KERNELS)
    _compiled = True


def local_blocks(indptr: IntArray, indices: IntArray, data: FloatArray, start: IntArray, dim: IntArray,
                 dmax: int) -> tuple[IntArray, IntArray, FloatArray]:
    """Per block its sorted distinct columns ``cols`` (nb, K; -1 padded), their count and the
    local Jacobian ``Jl`` (nb, dmax, K): block ``b``'s rows restricted to ``cols[b]``. When a
    block's rows hold the same increasing columns (a contact's frame rows, a pyramid edge: the
    usual case) the first row names them and entry ``k`` of each row is column ``k``; otherwise
    the columns are sorted and matched one by one."""
    nb = start.shape[0]
    bound = 1
    for b in range(nb):
        bound = max(bound, indptr[start[b] + dim[b]] - indptr[start[b]])
    cols = np.full((nb, bound), -1, np.int64)
    count = np.zeros(nb, np.int64)
    shared = np.zeros(nb, np.bool_)
    for b in range(nb):
        first, width = indptr[start[b]], indptr[start[b] + 1] - indptr[start[b]]
        same = True
        for k in range(1, width):
            if indices[first + k] <= indices[first + k - 1]:
                same = False
        for i in range(1, dim[b]):
            row = start[b] + i
            if indptr[row + 1] - indptr[row] != width:
                same = False
            else:
                for k in range(width):
                    if indices[indptr[row] + k] != indices[first + k]:
                        same = False
        shared[b] = same
        if same:
            for k in range(width):
                cols[b, k] = indices[first + k]
            count[b] = width
            continue
        low, high = indptr[start[b]], indptr[start[b] + dim[b]]
        found = np.sort(indices[low:high])
        n = 0
        for i in range(found.shape[0]):
            if n == 0 or found[i] != cols[b, n - 1]:
                cols[b, n] = found[i]
                n += 1
        count[b] = n
    K = max(1, int(count.max())) if nb else 1
    Jl = np.zeros((nb, dmax, K))
    for b in range(nb):
        for i in range(dim[b]):
            row = start[b] + i
            if shared[b]:
                for k in range(indptr[row + 1] - indptr[row]):
                    Jl[b, i, k] += data[indptr[row] + k]
                continue
            for p in range(indptr[row], indptr[row + 1]):
                for j in range(count[b]):
                    if cols[b, j] == indices[p]:
                        Jl[b, i, j] += data[p]
                        break
    return cols[:, :K].copy(), count, Jl


def locate_block(indptr: PatternIndex, rows: PatternIndex, cols: IntArray, count: IntArray, b: int,
                 pos: IntArray) -> bool:
    """``pos[b, p, q]`` (``p <= q``): the index in the pattern's CSC arrays (``indptr``,
    sorted ``rows``; the order of its ``keys``) of entry ``(cols[b, p], cols[b, q])``; whether
    the pattern holds all of them. Block ``b``'s columns are sorted, so each pattern column is
    walked once, merged with them (binary searches per entry cost 0.9 ms a regularized pile
    step: 547 blocks of 78 entries, located anew each step)."""
    complete = True
    for q in range(count[b]):
        column = cols[b, q]
        at, end = indptr[column], indptr[column + 1]
        for p in range(q + 1):
            row = cols[b, p]
            while at < end and rows[at] < row:
                at += 1
            if at < end and rows[at] == row:
                pos[b, p, q] = at
            else:
                complete = False
    return complete


def _matvec(Jp: IntArray, Ji: IntArray, Jx: FloatArray, x: FloatArray, out: FloatArray) -> int:
    for i in range(out.shape[0]):  # out = J x (CSR); returns J's row count
        value = 0.0
        for p in range(Jp[i], Jp[i + 1]):
            value += Jx[p] * x[Ji[p]]
        out[i] = value
    return out.shape[0]


def evaluate_and_assemble(v: FloatArray, Jp: IntArray, Ji: IntArray, Jx: FloatArray, Ap: IntArray, Ai: IntArray,
                          Ax: FloatArray, R: FloatArray, v_hat: FloatArray, c: FloatArray, d_inv: FloatArray,
                          start: IntArray, dim: IntArray, kind: IntArray, mu: FloatArray, scale: FloatArray,
                          vc: FloatArray,
                          y: FloatArray, gamma: FloatArray, G: FloatArray, Av: FloatArray, jc: FloatArray,
                          gradient: FloatArray, assemble: bool, Hx: FloatArray, a_pos: IntArray, h_indptr: PatternIndex,
                          h_rows: PatternIndex, cols: IntArray, pos: IntArray, located: NDArray[np.bool_],
                          Jl: FloatArray, count: IntArray, active: NDArray[np.bool_]
                          ) -> tuple[float, float, float, int]:
    """At ``v``: ``vc = J v``, ``gamma`` and ``G`` (S3), ``A v``, ``J^T gamma``, the gradient
    (S5); with ``assemble`` also ``H``'s values into ``Hx`` (``a_pos``: where ``A``'s entries
    go, -1 below the diagonal; ``pos`` where block ``b``'s go, found in the pattern's CSC arrays
    ``h_indptr``, ``h_rows`` when ``b`` is first active: ``located``). Marks ``active``
    (``G_b != 0``). Returns ``(cost, ||D g||, max(||D A v||, ||D J^T gamma||), number of
    active blocks outside the pattern)``."""
    nv, m = v.shape[0], _matvec(Jp, Ji, Jx, v, vc)
    for i in range(m):
        y[i] = (v_hat[i] - vc[i]) / R[i]
    kernels.project_blocks(y, R, start, dim, kind, mu, scale, gamma, G, assemble)
    cost = 0.0
    for j in range(nv):
        Av[j] = 0.0
        jc[j] = 0.0
    for j in range(nv):  # A symmetric: column j times v[j]
        for p in range(Ap[j], Ap[j + 1]):
            Av[Ai[p]] += Ax[p] * v[j]
    for i in range(m):
        cost += 0.5 * gamma[i] * R[i] * gamma[i]
        if gamma[i] != 0.0:
            for p in range(Jp[i], Jp[i + 1]):
                jc[Ji[p]] += Jx[p] * gamma[i]
    cost += kernels.box_cost(y, R, start, kind, gamma)
    g2 = a2 = j2 = 0.0
    for j in range(nv):
        gradient[j] = Av[j] + c[j] - jc[j]
        cost += 0.5 * v[j] * Av[j] + c[j] * v[j]
        g2 += (d_inv[j] * gradient[j]) ** 2
        a2 += (d_inv[j] * Av[j]) ** 2
        j2 += (d_inv[j] * jc[j]) ** 2
    missing = 0
    if assemble:
        for k in range(Hx.shape[0]):
            Hx[k] = 0.0
        for k in range(Ax.shape[0]):
            if a_pos[k] >= 0:
                Hx[a_pos[k]] += Ax[k]
        dmax = G.shape[1]
        local = np.empty((dmax, Jl.shape[2]))
        for b in range(start.shape[0]):
            d, n = dim[b], count[b]
            nonzero = False
            for i in range(d):
                for j in range(d):
                    if G[b, i, j] != 0.0:
                        nonzero = True
            if not nonzero:
                continue
            active[b] = True
            if not located[b]:
                if not locate_block(h_indptr, h_rows, cols, count, b, pos):
                    missing += 1
                    continue
                located[b] = True
            for i in range(d):  # local = G_b Jl_b
                for q in range(n):
                    value = 0.0
                    for j in range(d):
                        value += G[b, i, j] * Jl[b, j, q]
                    local[i, q] = value
            for q in range(n):  # H += Jl_b' (G_b Jl_b), upper triangle
                for p in range(q + 1):
                    value = 0.0
                    for i in range(d):
                        value += Jl[b, i, p] * local[i, q]
                    Hx[pos[b, p, q]] += value
    return cost, np.sqrt(g2), np.sqrt(max(a2, j2)), missing


def search_step(v: FloatArray, step: FloatArray, Jp: IntArray, Ji: IntArray, Jx: FloatArray, Ap: IntArray,
                Ai: IntArray, Ax: FloatArray, R: FloatArray, v_hat: FloatArray, c: FloatArray, vc: FloatArray,
                Av: FloatArray, gradient: FloatArray, start: IntArray, dim: IntArray, kind: IntArray, mu: FloatArray,
                scale: FloatArray, alpha_max: float, ls_tol: float, ls_max_iter: int, w: FloatArray, y: FloatArray,
                gamma: FloatArray, G: FloatArray) -> float:
    """The exact line search along ``step`` (:func:`.newton_kernels.line_search` over the
    blocks not in their no-contact regime on the whole segment) and ``v += alpha step``."""
    nv = v.shape[0]
    _matvec(Jp, Ji, Jx, step, w)
    a = b = slope = 0.0
    for j in range(nv):
        column = 0.0
        for p in range(Ap[j], Ap[j + 1]):
            column += Ax[p] * step[Ai[p]]
        a += step[j] * column
        b += step[j] * (Av[j] + c[j])
        slope += step[j] * gradient[j]
    keep = np.zeros(start.shape[0], np.bool_)
    for k in range(start.shape[0]):
        s = start[k]
        if kind[k] == kernels.FREE or kind[k] == kernels.BOX:  # never without an impulse on the segment
            keep[k] = True
            continue
        for alpha in (0.0, alpha_max):
            yn = (v_hat[s] - vc[s] - alpha * w[s]) / R[s]
            if kind[k] == kernels.NONNEG:
                inside = yn <= 0.0
            elif kind[k] == kernels.GENERAL:
                inside = cones.general_no_contact(v_hat, vc, w, R, scale, s, dim[k], mu[k], alpha)
            else:
                yr2 = 0.0
                for i in range(1, dim[k]):
                    yi = (v_hat[s + i] - vc[s + i] - alpha * w[s + i]) / R[s + i]
                    yr2 += yi * yi
                inside = R[s] * yn + mu[k] * R[s + 1] * np.sqrt(yr2) <= 0.0
            if not inside:
                keep[k] = True
    chosen = np.flatnonzero(keep)
    alpha = kernels.line_search(vc, w, R, v_hat, start[chosen], dim[chosen], kind[chosen], mu[chosen], scale, a, b,
                                slope, alpha_max, ls_tol, ls_max_iter, y, gamma, G)
    for j in range(nv):
        v[j] += alpha * step[j]
    return alpha


class SparseNewton:
    """One program's data for the sparse path: CSR ``J``, CSC ``A``, the local blocks and their
    places in the shared :class:`SparsePattern`."""

    def __init__(self, A: sp.csc_matrix, J: sp.csr_matrix, blocks: kernels.Blocks) -> None:
        self.nv, self.m = A.shape[0], J.shape[0]
        self.A, self.J, self.blocks = A, J, blocks
        start, dim = blocks[0], blocks[1]
        self.dmax = int(dim.max(initial=1))
        self.cols, self.count, self.Jl = local_blocks(J.indptr.astype(np.int64), J.indices.astype(np.int64),
                                                      J.data, start, dim, self.dmax)
        a_col = np.repeat(np.arange(self.nv), np.diff(A.indptr))
        self.a_keys = np.where(A.indices <= a_col, a_col * self.nv + A.indices, -1)
        self.active = np.zeros(start.shape[0], dtype=np.bool_)
        self.column_sets = distinct_runs(self.cols)
        self.located = np.zeros(start.shape[0], dtype=np.bool_)
        self.pos = np.full((start.shape[0], self.cols.shape[1], self.cols.shape[1]), -1, np.int64)
        a_keys = self.a_keys[self.a_keys >= 0]
        self.pattern = pattern_for(self.nv, a_keys if A.has_sorted_indices else np.sort(a_keys))
        self._locate()

    @staticmethod
    def fits(J: sp.csr_matrix, blocks: kernels.Blocks) -> bool:
        """Whether the local blocks stay small enough for this path (memory)."""
        widths = J.indptr[blocks[0] + blocks[1]] - J.indptr[blocks[0]]
        return int(blocks[0].shape[0]) * int(widths.max(initial=1)) ** 2 <= MAX_LOCAL_PAIRS

    def _locate(self) -> None:
        found = np.minimum(np.searchsorted(self.pattern.keys, self.a_keys), self.pattern.keys.shape[0] - 1)
        self.a_pos = np.where(self.a_keys >= 0, found, -1)
        self.located[:] = False

    def takes_all(self) -> bool:
        """Whether the active blocks span over ``FULL_SHARE`` of the column sets of all blocks."""
        return distinct_runs(self.cols[self.active]) > FULL_SHARE * self.column_sets

    def grow(self) -> None:
        """Add the active blocks' entries (all blocks' when :meth:`takes_all`: MuJoCo's
        pyramids) to the pattern (a new analysis at the next factor)."""
        chosen = np.ones_like(self.active) if self.takes_all() else self.active
        self.pattern = pattern_for(self.nv, block_keys(self.cols[chosen], self.nv))
        self._locate()

    def release(self) -> None:
        """After a solve: rebuild the pattern from the entries this solve used when they are
        less than ``RESET_FRACTION`` of it (the next solve analyses afresh)."""
        keys = self.pattern.keys
        if self.takes_all():  # all blocks belong in it (see grow)
            return
        used = np.zeros(keys.shape[0] + 1, dtype=np.bool_)
        used[self.a_pos] = True  # -1 (below the diagonal) marks the spare last entry
        used[self.pos[self.active & self.located].reshape(-1)] = True
        if int(used[:-1].sum()) < RESET_FRACTION * keys.shape[0]:
            _PATTERNS[self.nv] = SparsePattern(self.nv, keys[used[:-1]])


def minimize(primal: Any, blocks: kernels.Blocks, v: FloatArray, opts: Any,
             history: list[dict[str, Any]] | None = None) -> tuple[int, FloatArray, FloatArray, int]:
    """Newton's method of :mod:`contactopt.solvers.newton.solver` from ``v`` (updated in place) on the
    sparse path: ``(status code of .newton_kernels, v, gamma(v), iterations)``; ``history``
    (a list) receives the iterates' entries of :func:`contactopt.solvers.newton.history.record`."""
    from contactopt.solvers.newton.history import record, record_step
    A, J, R, v_hat, c = primal.A, primal.J, primal.R, primal.v_hat, primal.c
    run = SparseNewton(A, J, blocks)
    nv, m, nb = run.nv, run.m, blocks[0].shape[0]
    Jp, Ji, Ap, Ai = (x.astype(np.int64) for x in (J.indptr, J.indices, A.indptr, A.indices))
    d_inv = 1.0 / np.sqrt(A.diagonal())
    c_norm = float(np.linalg.norm(d_inv * c))
    vc, y, gamma, w, y2, gamma2 = (np.empty(m) for _ in range(6))
    Av, jc, gradient = np.empty(nv), np.empty(nv), np.empty(nv)
    G, G2 = np.zeros((nb, run.dmax, run.dmax)), np.zeros((run.dmax, run.dmax))
    max_iter, tol, tol_abs, cost_tol = (int(opts["max_iter"]), float(opts["tol"]), float(opts["tol_abs"]),
                                        float(opts["cost_tol"]))

    def evaluate(assemble: bool) -> tuple[float, float, float, int]:
        return evaluate_and_assemble(
            v, Jp, Ji, J.data, Ap, Ai, A.data, R, v_hat, c, d_inv, *blocks, vc, y, gamma, G, Av, jc, gradient,
            assemble, run.pattern.matrix.data, run.a_pos, run.pattern.matrix.indptr, run.pattern.matrix.indices,
            run.cols, run.pos, run.located, run.Jl,
            run.count, run.active)

    previous, code, iterations = np.inf, kernels.MAX_ITER, max_iter
    layout = primal.cone_layout if history is not None else None
    last: tuple[float, float, FloatArray] | None = None  # (alpha, l'(0), dv) of the previous step
    try:
        for iteration in range(max_iter + 1):
            cost, g_norm, size, missing = evaluate(iteration < max_iter)
            if layout is not None:
                if last is not None:
                    record_step(history, last[0], last[1], float(last[2] @ gradient))
                record(history, layout, y, gamma, cost, g_norm, max(size, c_norm), v)
            if not np.isfinite(cost):
                code, iterations = kernels.NONFINITE, iteration
            elif g_norm <= tol_abs + tol * max(size, c_norm):
                code, iterations = kernels.CRITERION, iteration
            elif iteration and previous - cost <= cost_tol * max(abs(cost), abs(previous)):
                code, iterations = kernels.COST_FLOOR, iteration
            if code != kernels.MAX_ITER or iteration == max_iter:
                break
            if missing:
                run.grow()
                evaluate(True)
            try:
                step = -run.pattern.factor_solve(gradient)
            except (ValueError, np.linalg.LinAlgError):  # qdldl raises ValueError on a zero pivot
                code, iterations = kernels.NOT_PD, iteration
                break
            alpha = search_step(v, step, Jp, Ji, J.data, Ap, Ai, A.data, R, v_hat, c, vc, Av, gradient, *blocks,
                                float(opts["alpha_max"]), float(opts["ls_tol"]), int(opts["ls_max_iter"]), w, y2,
                                gamma2, G2)
            if alpha == 0.0:
                code, iterations = kernels.NO_DESCENT, iteration
                break
            previous = cost
            if layout is not None:
                last = (alpha, float(step @ gradient), step)
    finally:
        run.release()
    return code, v, gamma, iterations
