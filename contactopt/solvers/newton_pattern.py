"""The Hessian pattern of the sparse compiled path of ``newton`` (:mod:`.newton_sparse`):
which entries of ``H = A + J^T G J`` (S5) are stored, shared by the solves of one ``nv``, and
their factorization by QDLDL with the symbolic analysis reused.

**Pattern of H, kept across iterations and steps.** ``J_b^T G_b J_b`` fills only
``cols_b x cols_b`` (``cols_b``: the columns of block ``b``'s rows, 12 for a contact of two
free bodies). The pattern (:class:`SparsePattern`, one per ``nv``) is ``A``'s upper triangle
plus ``cols_b x cols_b`` of the blocks that have been active (``G_b != 0``): keyed by
*columns*, it survives MuJoCo's new contact list every step (the body pairs in contact
change slowly), and pyramid edges or several contacts of one body pair share entries. A
block first active outside the pattern grows it (new analysis: QDLDL's AMD ordering and
elimination tree); a solve that used under ``RESET_FRACTION`` of the pattern rebuilds it
from what it used (``RESET_FRACTION`` and ``FULL_SHARE`` are :mod:`.newton_sparse`'s).
Separated contacts add nothing (pile: ~80 of 485 cones active at the end
of a step, 100-250 during its solve). When the active blocks already span ``FULL_SHARE`` of
the distinct column sets (runs of consecutive blocks with the same columns: a contact's
pyramid edges), the pattern takes every block: few more entries, no more growths (the
pyramidal ``regularized`` pile: 984 edge blocks on ~300 column sets). A share of the *blocks*
was the rule before; on SAP's pile, whose candidate list (``epsilon = inf``) holds ~240
separated pairs, it took them all once half the cones were active (step 0: 246 of 486),
doubling the pattern (16k entries against 4-9k) and the factorization time (8.8 -> 5.3 ms a
step over 20 steps, same run).

**Why QDLDL** (pile Hessian at a step's optimum: 600 unknowns, 79 active cones, 5.9k
entries; best of 20, this 2-core machine): QDLDL numeric update 0.028 ms + solve 0.008 ms,
analysis 0.14 ms; CHOLMOD (cvxopt) numeric 0.067 ms supernodal / 0.044 ms simplicial + solve
0.029 ms + 0.2 ms converting the matrix; scipy's SuperLU (no symbolic reuse) 0.41 ms; dense
LAPACK 6.8 ms. CHOLMOD's supernodal code wins only on full candidate patterns (all 485 cones:
0.39 ms against QDLDL's 1.27 ms), which the active pattern avoids.

Not thread-safe: a pattern's value buffer is shared by the solves of one ``nv``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DENSE_MIN_SIZE, DENSE_FILL = 48, 0.25  # a pattern fuller than this is factorized densely (LAPACK)
_PATTERNS: OrderedDict[int, SparsePattern] = OrderedDict()


class SparsePattern:
    """The upper triangle of ``H`` in CSC order: ``keys = col * nv + row`` (sorted), a CSC
    template whose ``data`` the kernels fill, and the QDLDL solver analysed for it."""

    def __init__(self, nv: int, keys: IntArray) -> None:
        self.nv, self.keys = nv, keys
        indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // nv, minlength=nv))])
        self.matrix = sp.csc_matrix((np.zeros(keys.shape[0]), (keys % nv).astype(np.int32), indptr.astype(np.int32)),
                                    shape=(nv, nv))
        self.dense = nv > DENSE_MIN_SIZE and keys.shape[0] > DENSE_FILL * nv * (nv + 1) / 2
        self.solver: Any = None

    def factor_solve(self, rhs: FloatArray) -> FloatArray:
        """``H^{-1} rhs`` with ``H``'s values in ``matrix.data`` (numeric refactorization only,
        unless the pattern is new)."""
        if self.dense:
            factor = scipy.linalg.cho_factor(self.matrix.toarray(), lower=False, check_finite=False)
            return np.asarray(scipy.linalg.cho_solve(factor, rhs, check_finite=False))
        import qdldl  # type: ignore[import-not-found]

        if self.solver is None:
            self.solver = qdldl.Solver(self.matrix, upper=True)
        else:
            self.solver.update(self.matrix, upper=True)
        return np.asarray(self.solver.solve(rhs))


def sorted_unique(keys: IntArray) -> IntArray:
    """``numpy.unique`` by a sort (numpy's hash-based unique is several times slower here)."""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.shape[0] else keys


def pattern_for(nv: int, keys: IntArray) -> SparsePattern:
    """The cached pattern of ``nv`` unknowns, grown to hold the sorted unique ``keys`` if it
    does not already."""
    pattern = _PATTERNS.get(nv)
    if pattern is not None:
        _PATTERNS.move_to_end(nv)
        found = np.minimum(np.searchsorted(pattern.keys, keys), pattern.keys.shape[0] - 1)
        if (pattern.keys[found] == keys).all():
            return pattern
        keys = sorted_unique(np.concatenate([pattern.keys, keys]))
    pattern = SparsePattern(nv, keys)
    _PATTERNS[nv] = pattern
    if len(_PATTERNS) > 4:
        _PATTERNS.popitem(last=False)
    return pattern


def distinct_runs(cols: IntArray) -> int:
    """The number of runs of consecutive blocks with the same column set (``cols`` rows): the
    distinct sets where equal ones are adjacent (a contact's pyramid edges)."""
    if cols.shape[0] == 0:
        return 0
    return 1 + int(np.any(cols[1:] != cols[:-1], axis=1).sum())


def block_keys(cols: IntArray, nv: int) -> IntArray:
    """The pattern keys ``col * nv + row`` (row <= col) of the blocks' ``cols x cols`` entries."""
    upper = (cols[:, :, None] >= 0) & (cols[:, :, None] <= cols[:, None, :])  # -1: padding
    return sorted_unique((cols[:, None, :] * nv + cols[:, :, None])[upper])
