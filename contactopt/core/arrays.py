"""Array checks shared by the core types (:mod:`contactopt.model.step`, :mod:`contactopt.model.rows`):
vectors, matrices and ``scipy.sparse`` matrices as finite float64 arrays of a given shape."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ShapeError

FloatArray = NDArray[np.float64]
Matrix = Any  # dense, or scipy.sparse (kept sparse throughout)

#: Generalized velocities from which the systems build M, M^-1 and J as scipy.sparse matrices
#: (MuJoCo's own mjJAC_AUTO threshold); below it they are dense, where scipy.sparse's per-object
#: overhead costs more than the zeros it skips (a box step: ~0.5 ms of sparse bookkeeping).
SPARSE_FROM_NV = 60

#: Dense mass matrices up to this many entries are checked for symmetry every step (cheap);
#: larger dense and all sparse ones only under :func:`debug_checks` (see :class:`Dynamics`).
_DENSE_CHECK_ENTRIES = 4096


def debug_checks() -> bool:
    """Whether the costly matrix checks run (``CONTACTOPT_DEBUG=1``)."""
    return os.environ.get("CONTACTOPT_DEBUG", "") not in ("", "0")


def as_sparse(value: Any, name: str, shape: tuple[int, int] | None, fmt: str) -> Any:
    """A ``scipy.sparse`` matrix as float64 CSC/CSR with finite entries, checked in O(nnz)."""
    out = value.tocsc() if fmt == "csc" else value.tocsr()
    if out.dtype != np.float64:
        out = out.astype(np.float64)
    if shape is not None and out.shape != shape:
        raise ShapeError(f"{name}: expected shape {shape}, got {out.shape}")
    if not np.isfinite(out.data).all():
        raise ShapeError(f"{name}: contains NaN or infinite entries")
    return out


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a scipy.sparse matrix (a plain bool: no type narrowing)."""
    return bool(sp.issparse(value))


def to_dense(value: Matrix) -> FloatArray:
    """A dense copy of a dense or sparse matrix (for the small-system integrators)."""
    return np.asarray(value.toarray()) if is_sparse(value) else np.asarray(value)


def as_vector(value: ArrayLike, name: str, length: int | None = None) -> FloatArray:
    """Return ``value`` as a finite 1-D float array, or raise :class:`ShapeError` naming it."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim != 1:
        raise ShapeError(f"{name}: expected a vector, got an array of shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ShapeError(f"{name}: expected length {length}, got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise ShapeError(f"{name}: contains NaN or infinite entries: {arr}")
    arr.setflags(write=False)
    return arr


def as_matrix(value: ArrayLike, name: str, shape: tuple[int, int]) -> FloatArray:
    """Return ``value`` as a finite 2-D float array of ``shape``, or raise :class:`ShapeError`."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim == 1 and shape[0] == 0:
        arr = arr.reshape(0, shape[1])
    if arr.shape != shape:
        raise ShapeError(f"{name}: expected shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ShapeError(f"{name}: contains NaN or infinite entries")
    arr.setflags(write=False)
    return arr


def is_symmetric_dense(M: FloatArray, rtol: float = 1e-10, atol: float = 0.0) -> bool:
    """``|M - M^T| <= atol + rtol |M^T|`` entrywise (``np.allclose(M, M.T)``'s test without
    its argument handling, which costs more than the comparison on a time step's small M)."""
    transposed = M.T
    return bool((np.abs(M - transposed) <= atol + rtol * np.abs(transposed)).all())


def is_symmetric_mass(M: FloatArray) -> bool:
    """A dense mass matrix's symmetry test: :func:`is_symmetric_dense` to 1e-10 relative, 1e-12 of
    its largest entry (at least 1) absolute."""
    return is_symmetric_dense(M, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(M).max(initial=0.0))))
