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

**Why QDLDL, and CHOLMOD for dense patterns** (pile Hessian at a step's optimum: 600
unknowns, 79 active cones, 5.9k entries; best of 20, this 2-core machine): QDLDL numeric
update 0.028 ms + solve 0.008 ms, analysis 0.14 ms; CHOLMOD (cvxopt) numeric 0.067 ms
supernodal / 0.044 ms simplicial + solve 0.029 ms; scipy's SuperLU (no symbolic reuse) 0.41
ms; dense LAPACK 6.8 ms. CHOLMOD's supernodal code wins on full candidate patterns, as the
``regularized`` primal's (MuJoCo's pyramids: every edge of every contact in the margin, 8.7k
entries, ~15 per unknown): QDLDL 0.51-0.76 ms against CHOLMOD 0.27-0.53 ms per factorization
and solve (one process, alternating), a regularized pile step 9.5 -> 7.5 ms. So a pattern of
at least :data:`CHOLMOD_DENSITY` entries per unknown goes to CHOLMOD where cvxopt is installed
(extra ``fast``): its ``spmatrix`` is made once per pattern and its values replaced in place
(no conversion per call: that conversion, 0.2 ms, had ruled CHOLMOD out), its symbolic
analysis kept like QDLDL's. Both are exact factorizations of the same matrix: the iterates
agree to rounding (tested). SAP's active patterns (~7 entries per unknown) stay with QDLDL.

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
CHOLMOD_DENSITY = 10  # pattern entries per unknown from which CHOLMOD's supernodal code factorizes
_PATTERNS: OrderedDict[int, SparsePattern] = OrderedDict()
_CHOLMOD: Any = None


def _cholmod() -> Any | None:
    """cvxopt's CHOLMOD module where cvxopt is installed (extras ``fast``, ``cvxpy``), else None."""
    global _CHOLMOD
    if _CHOLMOD is None:
        try:
            from cvxopt import cholmod  # type: ignore[import-untyped]
        except ImportError:
            _CHOLMOD = False
        else:
            _CHOLMOD = cholmod
    return _CHOLMOD or None


class SparsePattern:
    """The upper triangle of ``H`` in CSC order: ``keys = col * nv + row`` (sorted), a CSC
    template whose ``data`` the kernels fill, and the factorization analysed for it: QDLDL,
    CHOLMOD's supernodal Cholesky for patterns of :data:`CHOLMOD_DENSITY` or more entries per
    unknown (module docstring), or LAPACK for nearly full ones."""

    def __init__(self, nv: int, keys: IntArray) -> None:
        self.nv, self.keys = nv, keys
        indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // nv, minlength=nv))])
        self.matrix = sp.csc_matrix((np.zeros(keys.shape[0]), (keys % nv).astype(np.int32), indptr.astype(np.int32)),
                                    shape=(nv, nv))
        self.dense = nv > DENSE_MIN_SIZE and keys.shape[0] > DENSE_FILL * nv * (nv + 1) / 2
        self.cholmod = not self.dense and keys.shape[0] >= CHOLMOD_DENSITY * nv and _cholmod() is not None
        self.solver: Any = None
        self._values: Any = None

    def factor_solve(self, rhs: FloatArray) -> FloatArray:
        """``H^{-1} rhs`` with ``H``'s values in ``matrix.data`` (numeric refactorization only,
        unless the pattern is new). Raises ``ValueError`` where ``H`` is not positive definite."""
        if self.dense:
            factor = scipy.linalg.cho_factor(self.matrix.toarray(), lower=False, check_finite=False)
            return np.asarray(scipy.linalg.cho_solve(factor, rhs, check_finite=False))
        if self.cholmod:
            return self._cholmod_solve(rhs)
        import qdldl  # type: ignore[import-not-found]

        if self.solver is None:
            self.solver = qdldl.Solver(self.matrix, upper=True)
        else:
            self.solver.update(self.matrix, upper=True)
        return np.asarray(self.solver.solve(rhs))

    def _cholmod_solve(self, rhs: FloatArray) -> FloatArray:
        """CHOLMOD through cvxopt: the pattern as a cvxopt ``spmatrix`` made once (its values
        replaced in place, in the same compressed-column order), the supernodal symbolic
        analysis once, then a numeric factorization and a solve per call."""
        from cvxopt import matrix, spmatrix

        cholmod: Any = _cholmod()
        if self.solver is None:
            columns = np.repeat(np.arange(self.nv, dtype=np.int64), np.diff(self.matrix.indptr))
            self._values = spmatrix(matrix(np.ones(self.keys.shape[0])), matrix(self.matrix.indices.astype(np.int64)),
                                    matrix(columns), (self.nv, self.nv))
            chosen = cholmod.options.get("supernodal")
            cholmod.options["supernodal"] = 2  # supernodal whatever CHOLMOD's estimate (measured)
            try:
                self.solver = cholmod.symbolic(self._values, uplo="U")
            finally:
                if chosen is None:
                    cholmod.options.pop("supernodal", None)
                else:
                    cholmod.options["supernodal"] = chosen
        self._values.V = matrix(self.matrix.data)
        try:
            cholmod.numeric(self._values, self.solver)
        except ArithmeticError as exc:  # not positive definite, as qdldl's ValueError
            raise ValueError(f"CHOLMOD: {exc}") from exc
        out = matrix(np.asarray(rhs, dtype=np.float64))
        cholmod.solve(self.solver, out)
        return np.asarray(out).reshape(-1)


def sorted_unique(keys: IntArray) -> IntArray:
    """``numpy.unique`` by a sort (numpy's hash-based unique is several times slower here). The
    keys come in sorted runs (a pattern's keys followed by new ones; each block's in column
    order), which the stable sort (timsort) merges instead of sorting afresh: same result, 5-8 %
    of a SAP pile step less (whose pattern grows several times a step)."""
    keys = np.sort(keys, kind="stable")
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
