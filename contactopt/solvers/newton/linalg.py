"""The Hessian ``H = A + J^T G J`` of SAP's primal in a fixed sparsity pattern, and its
factorization with the symbolic analysis reused between Newton iterations and time steps.

``G`` is block diagonal with one dense ``d x d`` block per constraint block (a friction cone,
or a scalar row), whatever its regime, so the pattern of ``H`` depends only on the pattern
of ``A``, the rows of ``J`` and the blocks: it is computed once (:class:`Pattern`, the
"symbolic" part: the union of ``A``'s upper triangle and of ``cols_b x cols_b`` for every
block ``b``, ``cols_b`` the columns its rows touch) and every Newton iteration only sums the
local products ``J_b^T G_b J_b`` into it (``numpy.bincount``). scipy's sparse products
would drop entries that happen to be zero (a contact in its no-contact regime), changing the
pattern and forcing a new analysis.

Factorization: QDLDL (Stellato, Goulart et al., the LDL^T of OSQP; ``import qdldl``), whose
``Solver`` does the AMD ordering and elimination tree once and whose ``update`` refactors
numerically with the same pattern. The last few patterns and their solvers are cached by
pattern, so consecutive steps with the same contacts reuse the analysis. Measured on this
machine (2 shared cores): a QDLDL update + solve takes 8-13 us for 6-24 unknowns against
28-38 us for LAPACK's dense Cholesky through scipy (call overhead dominates), and on the
sphere pile (600 unknowns, 8-16k entries in H's triangle, 41k in L) an update takes 0.5-2 ms
and the first analysis 1.3-3 ms (a dense LAPACK Cholesky of that size: 74 ms, loaded machine);
dense matrices win beyond ~50 unknowns (96 dense unknowns: 93 us LAPACK, 240 us QDLDL), so
a dense LAPACK Cholesky is used when ``H`` is more than a quarter full and has more than 48
unknowns. (scikit-sparse's CHOLMOD, supernodal, is not installed here.)
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.programs.cone_projection import ConeLayout, Group

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

DENSE_MIN_SIZE, DENSE_FILL = 48, 0.25
FULL_FRACTION = 0.5
_CACHE_SIZE = 16  # patterns: a solve meets a few active sets, a step the next ones
_TABLE_MAX = 4_000_000  # index tables up to this many entries (32 MB) replace sorting
_SPARSE_KEYS = 32  # ... when the keys fill 1/32 of the table: filling a sparse table costs more than a sort


@dataclass
class Pattern:
    """Symbolic data of ``H`` for one (A pattern, J pattern, block layout)."""

    nv: int
    indptr: IntArray
    indices: IntArray
    a_map: IntArray  # H index of each upper-triangular entry of A
    a_select: IntArray  # which entries of A.data are upper triangular
    groups: list[tuple[IntArray, IntArray, int, IntArray]] = field(default_factory=list)
    # per group: (J.data gather, local J flat index, k, H index of each local (p, q) entry)
    solver: Any = None  # the qdldl.Solver once factorized
    dense: bool = False
    template: Any = None  # a CSC matrix of this pattern whose data is overwritten

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])


_CACHE: OrderedDict[tuple[Any, ...], Pattern] = OrderedDict()


def pattern_for(A: sp.csc_matrix, J: sp.csr_matrix, layout: ConeLayout) -> Pattern:
    """The cached :class:`Pattern` of ``A + J^T G J``, analysed on first sight."""
    key = (A.shape[0], A.indptr.tobytes(), A.indices.tobytes(), J.indptr.tobytes(), J.indices.tobytes(),
           tuple(group.rows.tobytes() for group in layout.groups))
    pattern = _CACHE.get(key)
    if pattern is None:
        pattern = _analyse(A, J, layout)
        _CACHE[key] = pattern
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return pattern


def _analyse(A: sp.csc_matrix, J: sp.csr_matrix, layout: ConeLayout) -> Pattern:
    nv = A.shape[0]
    a_col = np.repeat(np.arange(nv), np.diff(A.indptr))
    a_select = np.flatnonzero(A.indices <= a_col)
    keys = [a_col[a_select] * nv + A.indices[a_select], np.arange(nv) * (nv + 1)]  # + the diagonal
    local: list[tuple[IntArray, IntArray, int, IntArray]] = []
    for group in layout.groups:
        nb, d = group.rows.shape
        rows = group.rows.reshape(-1)
        counts = J.indptr[rows + 1] - J.indptr[rows]
        starts = np.repeat(J.indptr[rows] - np.cumsum(counts) + counts, counts)
        positions = starts + np.arange(counts.sum())  # J.data index of every nonzero in these rows
        flat_row = np.repeat(np.arange(nb * d), counts)  # b * d + i
        block = flat_row // d
        cols = J.indices[positions]
        unique, inverse = _unique(block * nv + cols, nb * nv)
        unique_block = unique // nv
        per_block = np.bincount(unique_block, minlength=nb)
        k = int(per_block.max(initial=0))
        first = np.concatenate([[0], np.cumsum(per_block)[:-1]])
        slot = np.arange(unique.shape[0]) - first[unique_block]
        block_cols = np.full((nb, k), -1)
        block_cols[unique_block, slot] = unique % nv
        target = flat_row * k + slot[inverse]
        p_cols = block_cols[:, :, None]
        q_cols = block_cols[:, None, :]
        upper = (p_cols >= 0) & (q_cols >= 0) & (p_cols <= q_cols)
        pair_keys = np.where(upper, q_cols * nv + p_cols, -1).reshape(-1)
        keys.append(pair_keys[pair_keys >= 0])
        local.append((positions, target, k, pair_keys))
    all_keys = np.concatenate(keys)
    unique_keys = _unique(all_keys, nv * nv)[0]
    columns = unique_keys // nv
    indptr = np.concatenate([[0], np.cumsum(np.bincount(columns, minlength=nv))])
    nnz = unique_keys.shape[0]
    table = None
    if nv * nv <= _TABLE_MAX and _SPARSE_KEYS * all_keys.shape[0] >= nv * nv:  # a table beats a binary search
        table = np.empty(nv * nv, dtype=np.int64)
        table[unique_keys] = np.arange(nnz)

    def locate(query: IntArray) -> IntArray:
        safe = np.maximum(query, 0)
        where = table[safe] if table is not None else np.searchsorted(unique_keys, safe)
        return np.where(query >= 0, where, nnz)  # nnz: a discarded slot for padding

    pattern = Pattern(nv=nv, indptr=indptr, indices=unique_keys % nv,
                      a_map=locate(a_col[a_select] * nv + A.indices[a_select]), a_select=a_select)
    pattern.groups = [(positions, target, k, locate(pair_keys)) for positions, target, k, pair_keys in local]
    pattern.dense = nv > DENSE_MIN_SIZE and nnz > DENSE_FILL * nv * (nv + 1) / 2
    return pattern


def _unique(keys: IntArray, bound: int) -> tuple[IntArray, IntArray]:
    """``numpy.unique(keys, return_inverse=True)`` for keys in ``[0, bound)``; by marking a
    table when ``bound`` is moderate and the keys dense in it (linear time instead of a sort)."""
    if bound > _TABLE_MAX or _SPARSE_KEYS * keys.shape[0] < bound:
        unique, inverse = np.unique(keys, return_inverse=True)
        return unique, inverse.reshape(-1)
    mark = np.zeros(bound, dtype=bool)
    mark[keys] = True
    unique = np.flatnonzero(mark)
    position = np.empty(bound, dtype=np.int64)
    position[unique] = np.arange(unique.shape[0])
    return unique, position[keys]


class Hessian:
    """``A + J^T G J`` of one step: local Jacobian blocks gathered once, then per Newton
    iteration :meth:`factor` (numeric only) and :meth:`solve`."""

    def __init__(self, A: sp.csc_matrix, J: sp.csr_matrix, layout: ConeLayout) -> None:
        self.pattern = pattern_for(A, J, layout)
        self.a_values = A.data[self.pattern.a_select]
        self.blocks: list[FloatArray] = []
        for (positions, target, k, _), group in zip(self.pattern.groups, layout.groups, strict=True):
            nb, d = group.rows.shape
            values = np.zeros(nb * d * k)
            values[target] = J.data[positions]
            local = values.reshape(nb, d, k)
            # Scalar rows: J_b^T g_b J_b = g_b (outer product), formed once per step.
            self.blocks.append(local[:, 0, :, None] * local[:, 0, None, :] if d == 1 else local)
        self._factor: Any = None
        self._map = np.concatenate([self.pattern.a_map, *(group[3] for group in self.pattern.groups)])
        self._values = np.empty(self._map.shape[0])
        self._values[:self.a_values.shape[0]] = self.a_values

    def matrix(self, G: list[FloatArray]) -> sp.csc_matrix:
        """The upper triangle of ``A + J^T G J`` in the fixed pattern."""
        p = self.pattern
        start = self.a_values.shape[0]
        for Jl, Gb in zip(self.blocks, G, strict=True):
            out = self._values[start:start + Jl.shape[0] * Jl.shape[2] * Jl.shape[2]].reshape(
                Jl.shape[0], Jl.shape[2], Jl.shape[2])
            if Gb.shape[1] == 1:
                np.multiply(Gb[:, 0, 0, None, None], Jl, out=out)
            else:
                np.matmul(Jl.transpose(0, 2, 1), Gb @ Jl, out=out)
            start += out.size
        data = np.bincount(self._map, weights=self._values, minlength=p.nnz + 1)[:p.nnz]
        if p.template is None:  # scipy's constructor checks cost more than the assembly
            p.template = sp.csc_matrix((data, p.indices, p.indptr), shape=(p.nv, p.nv))
        else:
            p.template.data[:] = data
        return p.template

    def factor(self, G: list[FloatArray]) -> None:
        """Numeric factorization of ``H`` (the symbolic analysis is the pattern's)."""
        H = self.matrix(G)
        p = self.pattern
        if p.dense:
            self._factor = scipy.linalg.cho_factor(H.toarray(), lower=False, check_finite=False)
            return
        import qdldl  # type: ignore[import-not-found]

        if p.solver is None:
            p.solver = qdldl.Solver(H, upper=True)
        else:
            p.solver.update(H, upper=True)
        self._factor = p.solver

    def solve(self, rhs: FloatArray) -> FloatArray:
        if self.pattern.dense:
            return np.asarray(scipy.linalg.cho_solve(self._factor, rhs, check_finite=False))
        return np.asarray(self._factor.solve(rhs))


class ActiveHessian:
    """``A + J^T G J`` in the pattern of the blocks that have been active during this solve
    (a block whose ``G`` is zero, a contact in its no-contact regime or a half line at
    ``y <= 0``, adds nothing). Most candidate contacts of a pile are separated: factorizing in
    the pattern of the active blocks is far cheaper (sphere pile, 80 of 485 contacts active:
    QDLDL update 0.04 ms against 2.6 ms for all candidates, a fresh analysis 0.3 ms against
    7 ms). The set only grows (a block that was active stays in the pattern with whatever
    ``G`` it has, zero included), so a solve re-analyses only when a block becomes active for
    the first time, a handful of times; :func:`pattern_for` caches the patterns. Once more
    than ``FULL_FRACTION`` of the blocks are in, all are (one last analysis; the regularized
    pile has 80-90 % of its pyramid edges active, where growing would re-analyse every step)."""

    def __init__(self, A: sp.csc_matrix, J: sp.csr_matrix, layout: ConeLayout) -> None:
        self.A, self.J, self.layout = A, J, layout
        self._union = [np.zeros(group.rows.shape[0], dtype=bool) for group in layout.groups]
        self._hessian: Hessian | None = None
        self._kept: list[int] = []

    def factor(self, G: list[FloatArray]) -> None:
        grown = False
        for union, Gb in zip(self._union, G, strict=True):
            active = np.any(Gb.reshape(Gb.shape[0], -1) != 0.0, axis=1)
            if np.any(active & ~union):
                union |= active
                grown = True
        if grown and sum(int(u.sum()) for u in self._union) > FULL_FRACTION * sum(u.size for u in self._union):
            for union in self._union:  # mostly active (MuJoCo's soft contacts): one analysis for all
                union[:] = True
        if self._hessian is None or grown:
            self._kept = [i for i, union in enumerate(self._union) if union.any()]
            groups = tuple(Group(self.layout.groups[i].kind, self.layout.groups[i].rows[self._union[i]],
                                 self.layout.groups[i].mu[self._union[i]] if self.layout.groups[i].mu.size
                                 else self.layout.groups[i].mu,
                                 self.layout.groups[i].scale[self._union[i]] if self.layout.groups[i].scale.size
                                 else self.layout.groups[i].scale) for i in self._kept)
            self._hessian = Hessian(self.A, self.J, ConeLayout(groups, self.layout.m))
        self._hessian.factor([G[i][self._union[i]] for i in self._kept])

    def solve(self, rhs: FloatArray) -> FloatArray:
        assert self._hessian is not None, "factor first"
        return self._hessian.solve(rhs)
