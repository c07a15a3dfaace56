"""Compressed-column matrices assembled directly, for the programs of a time step (issue 10).

``scipy.sparse`` checks and converts its arguments on every construction (``check_format``,
index dtype choice, a copy): 15-40 us per matrix, more than the arithmetic of a small step's
program, and a step builds several. The programs here are canonical by construction (sorted
row indices within each column, no repeated entries), so they are assembled as arrays and
wrapped once, without the checks. Everything returned is an ordinary ``scipy.sparse.csc_matrix``.

``CONTACTOPT_DEBUG=1`` runs scipy's own format check on every matrix made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.arrays import debug_checks

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.int32]

__all__ = [
    "add_diagonal",
    "attach_upper",
    "attached_upper",
    "coo_to_csc",
    "csc",
    "csr",
    "csr_to_csc",
    "dense_to_csc",
    "dense_to_csr",
    "diagonal_csc",
    "empty_csc",
    "mark_symmetric",
    "pad_columns",
    "rows_of",
    "symmetric_by_construction",
    "symmetric_part",
    "to_csc",
    "to_csr",
    "upper_triangle",
    "vstack_csc",
]


def csc(data: FloatArray, indices: Any, indptr: Any, shape: tuple[int, int]) -> sp.csc_matrix:
    """A ``csc_matrix`` over ``(data, indices, indptr)`` that are canonical by construction
    (row indices sorted within each column, no duplicates), without scipy's checks."""
    return cast(sp.csc_matrix, _compressed(sp.csc_matrix, data, indices, indptr, shape))


def _compressed(kind: Any, data: FloatArray, indices: Any, indptr: Any, shape: tuple[int, int]) -> Any:
    """An instance of ``kind`` (csc or csr) over canonical arrays: the attributes scipy's
    constructor sets, plus the format facts it caches on the object (they hold by construction)."""
    if not _DIRECT:
        return kind((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int32),
                     np.asarray(indptr, dtype=np.int32)), shape=shape)
    matrix: Any = object.__new__(kind)
    matrix.__dict__.update(_shape=(int(shape[0]), int(shape[1])), maxprint=50,
                           data=np.asarray(data, dtype=np.float64),
                           indices=np.asarray(indices, dtype=np.int32),
                           indptr=np.asarray(indptr, dtype=np.int32),
                           _has_sorted_indices=True, _has_canonical_format=True)
    if debug_checks():
        matrix.check_format(full_check=True)
    return matrix


def empty_csc(rows: int, cols: int) -> sp.csc_matrix:
    """An all-zero ``rows x cols`` matrix (zero-row and zero-column shapes included)."""
    return csc(np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(cols + 1, dtype=np.int32), (rows, cols))


def dense_to_csc(dense: FloatArray) -> sp.csc_matrix:
    """The nonzero entries of a dense matrix, column by column."""
    rows, cols = dense.shape
    transposed = dense.T
    col_of, row_of = np.nonzero(transposed)
    indptr = np.zeros(cols + 1, dtype=np.int32)
    np.cumsum(np.count_nonzero(transposed, axis=1), out=indptr[1:])
    return csc(transposed[col_of, row_of], row_of, indptr, (rows, cols))


def to_csc(matrix: Any) -> sp.csc_matrix:
    """``matrix`` (dense or any scipy.sparse) as a canonical float64 ``csc_matrix``; a
    canonical ``csc_matrix`` is returned as it is."""
    return cast(sp.csc_matrix, _canonical(matrix, sp.csc_matrix))


def _canonical(matrix: Any, kind: Any) -> Any:
    """``matrix`` as a canonical float64 matrix of the scipy class ``kind`` (csc or csr)."""
    if isinstance(matrix, kind) and matrix.dtype == np.float64:
        if not matrix.has_canonical_format:
            matrix = matrix.copy()
            matrix.sum_duplicates()
        return matrix
    if sp.issparse(matrix):
        out = kind(cast(Any, matrix), dtype=np.float64)
        out.sum_duplicates()
        return out
    dense = np.asarray(matrix, dtype=np.float64).reshape(np.shape(matrix))
    return dense_to_csc(dense) if kind is sp.csc_matrix else dense_to_csr(dense)


def vstack_csc(blocks: Sequence[Any]) -> sp.csc_matrix:
    """Blocks with the same number of columns stacked by rows, as one canonical CSC matrix:
    every entry keeps its column; a stable sort by column puts the blocks' entries of a
    column in block order, hence rows sorted."""
    parts = [to_csc(block) for block in blocks]
    if len(parts) == 1:
        return parts[0]
    cols = parts[0].shape[1]
    offsets = np.cumsum([0] + [part.shape[0] for part in parts])
    column_of = np.concatenate([np.repeat(np.arange(cols, dtype=np.int32), np.diff(part.indptr))
                                for part in parts])
    row_of = np.concatenate([part.indices + offset for part, offset in zip(parts, offsets, strict=False)])
    data = np.concatenate([part.data for part in parts])
    order = np.argsort(column_of, kind="stable")
    indptr = np.zeros(cols + 1, dtype=np.int32)
    np.cumsum(sum(np.diff(part.indptr) for part in parts), out=indptr[1:])
    return csc(data[order], row_of[order], indptr, (int(offsets[-1]), cols))


def pad_columns(matrix: sp.csc_matrix, cols: int) -> sp.csc_matrix:
    """``[matrix, 0]`` with ``cols`` columns in all (the new columns empty)."""
    extra = cols - matrix.shape[1]
    if extra == 0:
        return matrix
    indptr = np.concatenate([matrix.indptr, np.full(extra, matrix.indptr[-1], dtype=np.int32)])
    return csc(matrix.data, matrix.indices, indptr, (matrix.shape[0], cols))


def coo_to_csc(rows: Any, cols: Any, values: FloatArray, shape: tuple[int, int]) -> sp.csc_matrix:
    """Triplets with distinct ``(row, col)`` as a canonical CSC matrix (sorted by column,
    then row)."""
    rows = np.asarray(rows, dtype=np.int32)
    cols = np.asarray(cols, dtype=np.int32)
    order = np.lexsort((rows, cols))
    indptr = np.zeros(shape[1] + 1, dtype=np.int32)
    np.cumsum(np.bincount(cols, minlength=shape[1]), out=indptr[1:])
    return csc(np.asarray(values, dtype=np.float64)[order], rows[order], indptr, shape)


def csr(data: FloatArray, indices: Any, indptr: Any, shape: tuple[int, int]) -> sp.csr_matrix:
    """A ``csr_matrix`` over canonical ``(data, indices, indptr)`` (column indices sorted
    within each row, no duplicates), without scipy's checks; see :func:`csc`."""
    return cast(sp.csr_matrix, _compressed(sp.csr_matrix, data, indices, indptr, shape))


def dense_to_csr(dense: FloatArray) -> sp.csr_matrix:
    """The nonzero entries of a dense matrix, row by row."""
    transposed = dense_to_csc(np.asarray(dense, dtype=np.float64).T)
    return csr(transposed.data, transposed.indices, transposed.indptr, dense.shape)


def to_csr(matrix: Any) -> sp.csr_matrix:
    """``matrix`` (dense or any scipy.sparse) as a canonical float64 ``csr_matrix``; a
    canonical ``csr_matrix`` is returned as it is."""
    return cast(sp.csr_matrix, _canonical(matrix, sp.csr_matrix))


#: Entries up to which :func:`csr_to_csc` sorts in NumPy rather than calling scipy's conversion.
_SORT_LIMIT = 2000


def csr_to_csc(matrix: sp.csr_matrix) -> sp.csc_matrix:
    """A canonical CSR matrix in compressed-column form: a stable sort of its entries by
    column keeps the rows sorted (small matrices), scipy's compiled O(nnz) conversion for
    large ones, where the sort's O(nnz log nnz) costs more than the constructor's checks."""
    if matrix.nnz > _SORT_LIMIT:
        return to_csc(matrix.tocsc())
    rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int32), np.diff(matrix.indptr))
    order = np.argsort(matrix.indices, kind="stable")
    indptr = np.zeros(matrix.shape[1] + 1, dtype=np.int32)
    np.cumsum(np.bincount(matrix.indices, minlength=matrix.shape[1]), out=indptr[1:])
    return csc(matrix.data[order], rows[order], indptr, matrix.shape)


def diagonal_csc(values: Any) -> sp.csc_matrix:
    """``diag(values)``, explicit zeros kept (a fixed pattern whatever the values)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    index = np.arange(values.shape[0] + 1, dtype=np.int32)
    return csc(values.copy(), index[:-1], index, (values.shape[0], values.shape[0]))


def _direct_construction_works() -> bool:
    """Whether this scipy's matrices built by attribute assignment behave like constructed
    ones (checked once at import on a small matrix with every operation the programs use);
    otherwise :func:`csc` and :func:`csr` go through scipy's checked constructors."""
    global _DIRECT
    _DIRECT = True
    try:
        dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])
        for kind, indices, indptr, data in ((sp.csc_matrix, [0, 1, 0, 1], [0, 1, 2, 4], [1.0, 3.0, 2.0, 4.0]),
                                            (sp.csr_matrix, [0, 2, 1, 2], [0, 2, 4], [1.0, 2.0, 3.0, 4.0])):
            ours = _compressed(kind, np.array(data), indices, indptr, (2, 3))
            ours.check_format(full_check=True)
            x = np.array([1.0, -1.0, 0.5])
            if not (np.array_equal(ours.toarray(), dense) and np.array_equal(ours @ x, dense @ x)
                    and np.array_equal(ours.T @ np.ones(2), dense.T @ np.ones(2))
                    and np.array_equal((ours + ours).toarray(), 2 * dense) and ours.has_canonical_format):
                return False
        return True
    except Exception:
        return False


_DIRECT = True
_DIRECT = _direct_construction_works()


def add_diagonal(matrix: Any, diagonal: FloatArray) -> sp.csc_matrix:
    """``matrix + diag(diagonal)`` for a square sparse matrix, as CSC: added in place of a copy
    of the data when every diagonal entry is stored (the Delassus matrix of contact rows), by
    scipy's sparse sum otherwise. The same floating-point sums either way."""
    out = to_csc(matrix)
    n = out.shape[0]
    columns = np.repeat(np.arange(n, dtype=np.int32), np.diff(out.indptr))
    position = np.flatnonzero(out.indices == columns)
    if position.shape[0] != n:
        return to_csc(out + sp.diags(diagonal))
    data = out.data.copy()
    data[position] += diagonal
    return csc(data, out.indices, out.indptr, out.shape)


def symmetric_part(matrix: Any) -> sp.csc_matrix:
    """``(W + W^T) / 2`` of a square sparse matrix as CSC, from W's arrays and one transpose
    when W's pattern is symmetric (entry by entry ``0.5 (w_ij + w_ji)``, exact zeros dropped:
    the numbers and pattern of scipy's ``0.5 * (W + W.T)``), by that expression otherwise.
    The result is symmetric by construction (``a + b = b + a`` in floating point), and is
    marked so (:func:`symmetric_by_construction`): a program checks it only under
    ``CONTACTOPT_DEBUG=1``."""
    W = to_csc(matrix)
    transposed = csr_to_csc(csr(W.data, W.indices, W.indptr, (W.shape[1], W.shape[0])))
    if not (np.array_equal(W.indptr, transposed.indptr) and np.array_equal(W.indices, transposed.indices)):
        out = to_csc(0.5 * (W + W.T))
    else:
        data = 0.5 * (W.data + transposed.data)
        keep = data != 0
        if keep.all():
            out = csc(data, W.indices, W.indptr, W.shape)
        else:
            columns = np.repeat(np.arange(W.shape[1], dtype=np.int32), np.diff(W.indptr))
            out = coo_to_csc(W.indices[keep], columns[keep], data[keep], W.shape)
    return mark_symmetric(out)


#: The attribute under which :func:`mark_symmetric` records the arrays known symmetric.
_SYMMETRIC_MARK = "_contactopt_symmetric"


def mark_symmetric(matrix: Any) -> Any:
    """``matrix``, recorded as symmetric positive semidefinite by construction (its assembler
    guarantees it: :func:`symmetric_part` of a Delassus product, block-diagonal inertia of
    symmetric blocks, a mass matrix), so that programs take it without the O(nnz) symmetry
    check and the convexity check (both still run under ``CONTACTOPT_DEBUG=1``)."""
    matrix.__dict__[_SYMMETRIC_MARK] = (matrix.data, matrix.indices, matrix.indptr)
    return matrix


def symmetric_by_construction(matrix: Any) -> bool:
    """Whether ``matrix`` was marked by :func:`mark_symmetric` with its arrays unchanged (the
    same array objects: a matrix rebuilt or given new arrays loses the mark; changing the
    values in place is not detected, and nothing in contactopt does it after assembly)."""
    mark = getattr(matrix, "__dict__", {}).get(_SYMMETRIC_MARK)
    return mark is not None and mark[0] is matrix.data and mark[1] is matrix.indices and mark[2] is matrix.indptr


#: The attribute under which :func:`attach_upper` records a symmetric matrix's upper triangle.
_UPPER_MARK = "_contactopt_upper"


def attach_upper(matrix: Any, upper: sp.csc_matrix) -> Any:
    """``matrix`` with its upper triangle (diagonal included, CSC) recorded, as its assembler
    produced it in the same pass (:mod:`contactopt.programs.delassus_kernel`): a program's
    ``P_upper`` takes it instead of masking ``P`` again. Tied to the arrays like
    :func:`mark_symmetric`; ``CONTACTOPT_DEBUG=1`` compares it with the masked triangle."""
    matrix.__dict__[_UPPER_MARK] = (matrix.data, matrix.indices, matrix.indptr, upper)
    return matrix


def attached_upper(matrix: Any) -> sp.csc_matrix | None:
    """The upper triangle recorded by :func:`attach_upper`, or None (none recorded, or the
    matrix has other arrays now)."""
    mark = getattr(matrix, "__dict__", {}).get(_UPPER_MARK)
    if mark is None or mark[0] is not matrix.data or mark[1] is not matrix.indices or mark[2] is not matrix.indptr:
        return None
    return cast(sp.csc_matrix, mark[3])


def upper_triangle(P: sp.csc_matrix) -> sp.csc_matrix:
    """The upper triangle of a canonical CSC matrix with its diagonal, by masking its arrays
    (``scipy.sparse.triu`` goes through COO and costs several times more on a step's program)."""
    n = P.shape[0]
    columns = np.repeat(np.arange(n), np.diff(P.indptr))
    keep = P.indices <= columns
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(columns[keep], minlength=n), out=indptr[1:])
    return csc(P.data[keep], P.indices[keep], indptr, (n, n))


def rows_of(matrix: Any, rows: Any) -> Any:
    """``matrix[rows]`` for a dense array or a sparse matrix (CSR out): a canonical CSR
    matrix's rows are gathered straight from its arrays (scipy's fancy row indexing costs
    ~0.2 ms of argument handling on a pile step's Jacobian); the same entries in the same order."""
    rows = np.asarray(rows, dtype=np.intp).reshape(-1)
    if not sp.issparse(matrix):
        return matrix[rows]
    source = to_csr(matrix)
    starts, stops = source.indptr[rows], source.indptr[rows + 1]
    lengths = stops - starts
    indptr = np.zeros(rows.shape[0] + 1, dtype=np.int32)
    np.cumsum(lengths, out=indptr[1:])
    # position of every kept entry in the source: its row's start plus its rank within the row
    positions = np.repeat(starts - indptr[:-1], lengths) + np.arange(int(indptr[-1]))
    return csr(source.data[positions], source.indices[positions], indptr, (rows.shape[0], source.shape[1]))
