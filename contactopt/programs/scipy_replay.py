"""Steps of scipy's sparse algorithms (``scipy/sparse/sparsetools/csr.h``) as loops that numba
compiles, shared by the kernels that must return scipy's exact arrays
(:mod:`.delassus_kernel`, :mod:`.combine_kernel`): the same floating-point operations in the
same order, and the same order of entries.

* :func:`accumulate` and :func:`emit`: one output row of ``csr_matmat`` (Gustavson's
  product). Each entry is summed from zero, ``sum += a_ik b_kj``, over the ``k`` of row ``i``
  of ``A`` in their stored order; the row lists its entries in reverse order of first touch
  (scipy's linked list); exact-zero sums are dropped.
* :func:`transpose`: ``csr_tocsc``, a counting sort that moves values without changing them.

:func:`ensure_compiled` replaces them by their numba dispatchers once (the kernels that call
them resolve them when they compile)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit

FloatArray = NDArray[np.float64]

# Indices are read as unsigned in the hot loops: numba then skips its negative-index
# (wraparound) handling, which doubled the Delassus product's time (172 -> 90 us on the pile).
UNSIGNED = np.uint64
_u = UNSIGNED
_LOCK = threading.Lock()
_compiled = False


def accumulate(value: float, Bp: Any, Bj: Any, Bx: FloatArray, k: Any, sums: FloatArray, following: Any,
               head: int, length: int) -> tuple[int, int]:
    """``sums += value * B[k]`` (row ``k`` of CSR ``B``, stored order), linking each column at
    its first touch (``following``, ``head``, ``length``: ``csr_matmat``'s list); returns
    ``(head, length)``."""
    for kk in range(_u(Bp[k]), _u(Bp[k + 1])):
        col = Bj[kk]
        sums[col] += value * Bx[kk]
        if following[col] == -1:
            following[col] = head
            head = col
            length += 1
    return head, length


def emit(head: int, length: int, sums: FloatArray, following: Any, Cj: Any, Cx: FloatArray, nnz: int) -> int:
    """The row's entries in reverse order of first touch, exact-zero sums dropped, written at
    ``nnz``; the scratch (``sums``, ``following``) reset. Returns the new ``nnz``."""
    for _ in range(length):
        if sums[head] != 0:
            Cj[nnz] = head
            Cx[nnz] = sums[head]
            nnz += 1
        previous = head
        head = following[head]
        following[previous] = -1
        sums[previous] = 0.0
    return nnz


def transpose(n_row: int, n_col: int, Ap: Any, Aj: Any, Ax: FloatArray) -> tuple[Any, Any, FloatArray]:
    """``csr_tocsc``: the other compressed form of an ``n_row x n_col`` CSR matrix (entries of
    each output row ascending); also CSC -> CSR with the roles swapped."""
    nnz = Ap[n_row]
    Bp = np.zeros(n_col + 1, np.int32)
    for n in range(_u(nnz)):
        Bp[_u(Aj[n]) + _u(1)] += 1
    for col in range(n_col):
        Bp[col + 1] += Bp[col]
    fill = Bp[:n_col].copy()
    Bi = np.empty(nnz, np.int32)
    Bx = np.empty(nnz, np.float64)
    for row in range(n_row):
        for jj in range(_u(Ap[row]), _u(Ap[row + 1])):
            target = _u(Aj[jj])
            dest = _u(fill[target])
            Bi[dest] = row
            Bx[dest] = Ax[jj]
            fill[target] += 1
    return Bp, Bi, Bx


def ensure_compiled() -> None:
    """Replace :func:`accumulate`, :func:`emit` and :func:`transpose` by numba dispatchers,
    once (under a lock: two threads' first calls must not wrap a dispatcher again)."""
    global _compiled, accumulate, emit, transpose
    if _compiled:
        return
    with _LOCK:
        if not _compiled:
            # inner loops inlined: a call each costs ~2x
            accumulate, emit = jit.njit(accumulate, inline="always"), jit.njit(emit, inline="always")
            transpose = jit.njit(transpose)
            _compiled = True
