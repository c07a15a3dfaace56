"""MuJoCo's mass matrix ``M(q)`` and its inverse as sparse matrices, assembled per step by
gathers through index arrays computed once per model (issue 10: no dense ``nv x nv`` array
and no per-step sparse bookkeeping on the step's hot path).

``M``: MuJoCo keeps the lower triangle of ``M`` in CSR form (``MjData.M`` with the model's
``M_rownnz``/``M_rowadr``/``M_colind``, MuJoCo 3.1+; MuJoCo's documentation, "Computation:
mass matrix"), whose pattern is fixed by the model. The symmetric CSC matrix is that data
gathered into a pattern computed once.

``M^{-1}``: ``M`` is block-diagonal over the connected components of its pattern (the
kinematic trees, or single degrees of freedom where MuJoCo's pattern says so: a free sphere
with its centre of mass at the joint has a diagonal ``M``), so ``M^{-1}`` is block-diagonal
too, with dense blocks. Components of equal size are inverted in one batched call
(``1 / M_ii`` for single degrees of freedom), and the blocks are gathered into a CSC pattern
computed once. With it the Delassus matrix ``J M^{-1} J^T`` of a sparse ``J`` is a sparse
product (:func:`contactopt.formulations.common.delassus`), linear in the contacts. A model
whose components are large (mean block size above :data:`MAX_MEAN_BLOCK`: one long chain)
gets no explicit inverse: its ``M^{-1}`` is dense, and MuJoCo's factorization is used instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

#: Largest ``nnz(M^{-1}) / nv`` (the mean block size) for which ``M^{-1}`` is formed explicitly.
MAX_MEAN_BLOCK = 64


class MassLayout:
    """The index arrays of one model: ``M``'s symmetric CSC pattern gathered from MuJoCo's
    lower-triangular storage, and ``M^{-1}``'s block pattern (``None`` where not sparse)."""

    def __init__(self, model: Any) -> None:
        nv = int(model.nv)
        self.nv = nv
        rownnz = np.asarray(model.M_rownnz, dtype=np.int_)
        rowadr = np.asarray(model.M_rowadr, dtype=np.int_)
        colind = np.asarray(model.M_colind, dtype=np.int_)
        row = np.repeat(np.arange(nv), rownnz)
        entry = np.repeat(rowadr, rownnz) + np.arange(row.shape[0]) - np.repeat(np.cumsum(rownnz) - rownnz, rownnz)
        col = colind[entry]
        off = np.flatnonzero(col != row)
        rows = np.concatenate([row, col[off]])  # the lower triangle and its mirror
        cols = np.concatenate([col, row[off]])
        source = np.concatenate([entry, entry[off]])
        order = np.lexsort((rows, cols))  # CSC: by column, rows sorted within
        self.source = source[order]
        self.indices = rows[order]
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=nv))])
        pattern = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(nv, nv))
        count, labels = connected_components(pattern, directed=False)
        sizes = np.bincount(labels, minlength=count)
        self.groups: list[tuple[IntArray, IntArray]] = []  # (component dofs (T, s), M positions (T, s, s))
        self.inverse_pattern: tuple[IntArray, IntArray, IntArray] | None = None
        if nv and int(np.sum(sizes**2)) <= MAX_MEAN_BLOCK * nv:
            self._block_layout(np.asarray(labels, dtype=np.int_), sizes)

    def _block_layout(self, labels: IntArray, sizes: IntArray) -> None:
        """Per component size: the components' dofs, where each block entry sits in ``M``'s
        CSC data (``-1``: a structural zero), and ``M^{-1}``'s CSC pattern of the blocks."""
        dofs_by_label = np.argsort(labels, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)])
        inv_rows, inv_cols = [], []
        for size in np.unique(sizes):
            members = np.flatnonzero(sizes == size)
            dofs = np.stack([dofs_by_label[starts[c]:starts[c] + size] for c in members])  # (T, s)
            rows, cols = np.repeat(dofs, size, axis=1), np.tile(dofs, (1, size))  # entry (i, j) of each block
            where = self._positions(rows.reshape(-1), cols.reshape(-1)).reshape(len(members), size, size)
            self.groups.append((dofs, where))
            inv_rows.append(rows.reshape(-1))
            inv_cols.append(cols.reshape(-1))
        r, c = np.concatenate(inv_rows), np.concatenate(inv_cols)
        order = np.lexsort((r, c))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=self.nv))])
        self.inverse_pattern = (order, r[order], indptr)

    def _positions(self, rows: IntArray, cols: IntArray) -> IntArray:
        """Where entries ``(rows, cols)`` sit in the pattern's CSC data; ``-1`` where not stored."""
        keys = np.repeat(np.arange(self.nv), np.diff(self.indptr)) * self.nv + self.indices  # sorted (CSC order)
        found = cols * self.nv + rows
        where = np.minimum(np.searchsorted(keys, found), max(keys.shape[0] - 1, 0))
        return np.where(keys[where] == found, where, -1) if keys.size else np.full(found.shape, -1)

    def values(self, lower: FloatArray) -> FloatArray:
        """``M``'s entries on the symmetric pattern, from MuJoCo's lower-triangular ``MjData.M``."""
        return np.asarray(lower)[self.source]

    def values_of(self, M: Any) -> FloatArray:
        """The entries of a matrix with (a subset of) ``M``'s pattern, on that pattern."""
        coo = sp.coo_matrix(M)
        where = self._positions(coo.row.astype(np.int_), coo.col.astype(np.int_))
        if np.any(where < 0):
            raise ValueError("MassLayout.values_of: entries outside the model's mass-matrix pattern")
        values = np.zeros(self.indices.shape[0])
        np.add.at(values, where, coo.data)
        return values

    def holds(self, matrix: Any) -> bool:
        """Whether every stored entry of ``matrix`` lies on the pattern (a free body's diagonal
        ``M`` does not hold the rotational coupling of MuJoCo's implicit ``qDeriv``)."""
        coo = sp.coo_matrix(matrix)
        return bool(np.all(self._positions(coo.row.astype(np.int_), coo.col.astype(np.int_)) >= 0))

    def diagonal(self) -> IntArray:
        """Positions of the diagonal entries in the pattern's data (every diagonal entry is stored)."""
        columns = np.repeat(np.arange(self.nv), np.diff(self.indptr))
        return np.flatnonzero(self.indices == columns)

    def dense(self, values: FloatArray) -> FloatArray:
        """:meth:`matrix` as a dense array (small models)."""
        out = np.zeros((self.nv, self.nv))
        out[self.indices, np.repeat(np.arange(self.nv), np.diff(self.indptr))] = values
        return out

    def matrix(self, values: FloatArray) -> sp.csc_matrix:
        """The symmetric CSC ``M`` of :meth:`values` (explicit zeros dropped)."""
        M = sp.csc_matrix((values.copy(), self.indices.copy(), self.indptr.copy()), shape=(self.nv, self.nv))
        M.eliminate_zeros()  # in place: hence the copies
        return M

    def inverse(self, values: FloatArray) -> sp.csc_matrix | None:
        """``M^{-1}`` (CSC, block-diagonal over the components) of the matrix with these
        :meth:`values` (``M + h D`` included), or ``None`` where it would be dense."""
        if self.inverse_pattern is None:
            return None
        _, indices, indptr = self.inverse_pattern
        inverse_M = sp.csc_matrix((self._inverse_values(values), indices.copy(), indptr.copy()),
                                  shape=(self.nv, self.nv))
        inverse_M.eliminate_zeros()
        return inverse_M

    def inverse_dense(self, values: FloatArray) -> FloatArray | None:
        """:meth:`inverse` as a dense array (small models)."""
        if self.inverse_pattern is None:
            return None
        _, indices, indptr = self.inverse_pattern
        out = np.zeros((self.nv, self.nv))
        out[indices, np.repeat(np.arange(self.nv), np.diff(indptr))] = self._inverse_values(values)
        return out

    def _inverse_values(self, values: FloatArray) -> FloatArray:
        """The entries of ``M^{-1}`` in the order of the inverse pattern (component blocks
        inverted in batches, symmetrized exactly)."""
        assert self.inverse_pattern is not None
        padded = np.concatenate([values, [0.0]])  # index -1: a structural zero
        parts = []
        for dofs, where in self.groups:
            blocks = padded[where]
            if dofs.shape[1] == 1:
                parts.append(1.0 / blocks.reshape(-1))
            else:
                inverse = np.linalg.inv(blocks)
                parts.append((0.5 * (inverse + inverse.transpose(0, 2, 1))).reshape(-1))  # exactly symmetric
        return np.concatenate(parts)[self.inverse_pattern[0]]
