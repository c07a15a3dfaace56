"""Checks of the arrays read from a program file, before any of them becomes a matrix.

scipy builds a CSC matrix from ``(data, indices, indptr)`` after checking only their lengths,
so a file with a row index out of range loads, and then crashes the solver that trusts it
(OSQP segfaults, Clarabel panics). Every array a file gives is checked here, vectorized (a
few passes of numpy over each array), and a bad one is one :class:`ContactoptError` line
naming the file and the array; no solver ever sees a malformed matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError

__all__ = ["checked_csc", "checked_csc_parts", "checked_dense"]


def _bad(where: str, name: str, problem: str) -> ContactoptError:
    return ContactoptError(f"{where}: array {name!r}: {problem}")


def _integers(value: Any, where: str, name: str) -> NDArray[np.int64]:
    array = np.asarray(value)
    if array.ndim != 1:
        raise _bad(where, name, f"expected a 1-D array, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        if array.dtype.kind == "f" and array.size and np.all(np.isfinite(array)) \
                and np.array_equal(array, np.round(array)):
            return array.astype(np.int64)
        if not (array.dtype.kind == "f" and array.size == 0):
            raise _bad(where, name, f"expected integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def _floats(value: Any, where: str, name: str, ndim: int) -> NDArray[np.float64]:
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise _bad(where, name, f"expected numbers, got dtype {array.dtype}")
    if array.ndim != ndim:
        raise _bad(where, name, f"expected a {ndim}-D array, got shape {array.shape}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise _bad(where, name, f"{int(np.size(array) - np.isfinite(array).sum())} NaN or infinite entries")
    return array


def checked_dense(value: Any, where: str, name: str, ndim: int = 1) -> NDArray[np.float64]:
    """A vector (``ndim=1``) or dense matrix of finite numbers."""
    return _floats(value, where, name, ndim)


def checked_csc_parts(data: Any, indices: Any, indptr: Any, shape: tuple[int, int], where: str,
                      names: tuple[str, str, str]) -> sp.csc_matrix:
    """``csc_matrix((data, indices, indptr), shape)`` once every invariant holds: ``indptr``
    has ``ncols + 1`` entries, starts at 0, never decreases and ends at ``nnz``; ``indices``
    and ``data`` hold ``nnz`` entries; every row index is in ``[0, nrows)``; data are finite.
    ``names``: how the file names the data, indices and indptr arrays, for the message."""
    data_name, indices_name, indptr_name = names
    rows, cols = shape
    if rows < 0 or cols < 0:
        raise ContactoptError(f"{where}: negative size {rows} x {cols}")
    pointers = _integers(indptr, where, indptr_name)
    row_index = _integers(indices, where, indices_name)
    values = _floats(data, where, data_name, 1)
    if pointers.shape[0] != cols + 1:
        raise _bad(where, indptr_name, f"{pointers.shape[0]} entries for {cols} columns (expected {cols + 1})")
    if pointers[0] != 0:
        raise _bad(where, indptr_name, f"starts at {int(pointers[0])}, not 0")
    if cols and np.any(np.diff(pointers) < 0):
        column = int(np.argmax(np.diff(pointers) < 0))
        raise _bad(where, indptr_name, f"decreases at column {column} (not monotone)")
    nnz = int(pointers[-1])
    if row_index.shape[0] != nnz or values.shape[0] != nnz:
        raise _bad(where, indices_name if row_index.shape[0] != nnz else data_name,
                   f"indptr ends at {nnz} entries but indices/data hold {row_index.shape[0]}/{values.shape[0]}")
    if nnz and (row_index.min() < 0 or row_index.max() >= rows):
        bad = row_index[(row_index < 0) | (row_index >= rows)]
        raise _bad(where, indices_name, f"row index {int(bad[0])} out of range [0, {rows})")
    index_type = np.int32 if max(rows, nnz) < np.iinfo(np.int32).max else np.int64
    parts: Any = (values, row_index.astype(index_type), pointers.astype(index_type))
    matrix = sp.csc_matrix(parts, shape=(rows, cols))
    matrix.sum_duplicates()  # sorted, without duplicates: what OSQP and Clarabel assume
    return matrix


def checked_csc(arrays: Any, prefix: str, where: str) -> sp.csc_matrix:
    """The CSC matrix stored as ``PREFIX_data``, ``_indices``, ``_indptr``, ``_shape`` in a
    contactopt program file, checked (:func:`checked_csc_parts`)."""
    missing = [f"{prefix}_{part}" for part in ("data", "indices", "indptr", "shape")
               if f"{prefix}_{part}" not in arrays]
    if missing:
        raise ContactoptError(f"{where}: missing array {missing[0]!r}")
    shape = _integers(np.asarray(arrays[f"{prefix}_shape"]).reshape(-1), where, f"{prefix}_shape")
    if shape.shape[0] != 2:
        raise _bad(where, f"{prefix}_shape", f"expected 2 sizes, got {shape.shape[0]}")
    return checked_csc_parts(arrays[f"{prefix}_data"], arrays[f"{prefix}_indices"], arrays[f"{prefix}_indptr"],
                             (int(shape[0]), int(shape[1])), where,
                             (f"{prefix}_data", f"{prefix}_indices", f"{prefix}_indptr"))
