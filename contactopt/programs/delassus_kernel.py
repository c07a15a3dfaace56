"""A dual program's ``P = K M^{-1} K^T + diag(R)`` for sparse rows ``K`` and a sparse
``M^{-1}``, assembled in one compiled call, symmetric by construction.

The Delassus operator ``W = K M^{-1} K^T`` (Acary & Brogliato, "Numerical Methods for Nonsmooth
Dynamical Systems", sec. 10.1; Anitescu, "Optimization-based simulation of nonsmooth rigid
multibody dynamics", eq. (13)) is symmetric positive semidefinite. The kernel computes

* ``Y = K M^{-1}`` row by row (``Y_i = sum_k K_ik (M^{-1})_k``, the rows of ``M^{-1}`` read from
  its CSR arrays: one transposition when it is given as CSC);
* the upper triangle only, ``W_ij = Y_i . K_j`` for ``j >= i`` (``K_j`` through ``K``'s columns),
  plus ``R_i`` on the diagonal, every row's entries in ascending order;
* ``P`` as CSC by mirroring that triangle: ``P_ij = P_ji`` exactly, so no ``(W + W^T) / 2`` step.

Entries that sum to exactly zero are not stored; a diagonal entry is stored whenever it is
not zero (a row that moves nothing but carries ``R_i > 0``). On the MJCF sphere pile (714 rows,
600 dofs) the scipy expressions it replaces (a product, a conversion, a diagonal sum and a
symmetric part) cost 0.73-0.76 ms, this call about a third of that. The numbers equal scipy's
to rounding (each entry is the same sum of products, summed in another order); programs built
either way agree to ``1e-15`` relative (``tests/test_delassus_kernel.py``).

Without numba (or with ``CONTACTOPT_NO_NUMBA`` set) :data:`COMPILED` is False and the caller
keeps the scipy expressions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit

FloatArray = NDArray[np.float64]
Arrays = tuple[Any, Any, FloatArray]  # compressed (indptr, indices, data)

#: Whether :func:`delassus_symmetric` runs (numba installed, ``CONTACTOPT_NO_NUMBA`` unset).
COMPILED = jit.ENABLED
_u = jit.UNSIGNED  # unsigned indices in the hot loops: numba skips its wraparound test
_gather = jit.gather_row
_scatter = jit.scatter_add


def transpose(n_row: int, n_col: int, Ap: Any, Aj: Any, Ax: FloatArray) -> tuple[Any, Any, FloatArray]:
    """The other compressed form of an ``n_row x n_col`` compressed matrix (CSR -> CSC, or CSC
    -> CSR with the roles swapped) by a counting sort: each output row's entries ascending."""
    nnz = Ap[n_row]
    Bp = np.zeros(n_col + 1, np.int64)
    for n in range(_u(nnz)):
        Bp[_u(Aj[n]) + _u(1)] += 1
    for col in range(n_col):
        Bp[col + 1] += Bp[col]
    fill = Bp[:n_col].copy()
    Bi = np.empty(nnz, np.int64)
    Bx = np.empty(nnz, np.float64)
    for row in range(n_row):
        for jj in range(_u(Ap[row]), _u(Ap[row + 1])):
            target = _u(Aj[jj])
            dest = _u(fill[target])
            Bi[dest] = row
            Bx[dest] = Ax[jj]
            fill[target] += 1
    return Bp, Bi, Bx


def _loops(m: int, nv: int, Kp: Any, Kj: Any, Kx: FloatArray, inverse_csc: bool, Mp: Any, Mi: Any,
           Mx: FloatArray, diagonal: FloatArray) -> tuple[Arrays, Arrays]:
    """``(P, P's upper triangle)`` as CSC arrays (module docstring)."""
    if inverse_csc:  # the rows of M^{-1} from its columns
        Mp, Mi, Mx = transpose(nv, nv, Mp, Mi, Mx)
    Cp, Ci, Cx = transpose(m, nv, Kp, Kj, Kx)  # K's columns: C_k lists (j, K_jk), j ascending
    y = np.zeros(nv, np.float64)  # Y_i, dense
    y_mark = np.full(nv, -1, np.int64)
    y_cols = np.empty(nv, np.int64)
    w = np.zeros(m, np.float64)  # row i of the upper triangle, dense
    w_mark = np.full(m, -1, np.int64)
    w_cols = np.empty(m, np.int64)
    capacity = 4 * m + 16
    Up = np.empty(m + 1, np.int64)  # the triangle by rows (CSR of U)
    Uj = np.empty(capacity, np.int64)
    Ux = np.empty(capacity, np.float64)
    nnz = 0
    Up[0] = 0
    for i in range(m):
        n_y = 0
        for jj in range(_u(Kp[i]), _u(Kp[i + 1])):
            n_y = _scatter(Kx[jj], Mp, Mi, Mx, Kj[jj], 0, i, y, y_mark, y_cols, n_y)
        n_w = 1
        w_mark[i] = i
        w[i] = diagonal[i]
        w_cols[0] = i
        for a in range(n_y):  # K's columns are ascending (transpose): only j >= i is read
            n_w = _scatter(y[y_cols[a]], Cp, Ci, Cx, y_cols[a], i, i, w, w_mark, w_cols, n_w)
        if nnz + n_w > capacity:
            capacity = max(2 * capacity, nnz + n_w)
            grown_j = np.empty(capacity, np.int64)
            grown_x = np.empty(capacity, np.float64)
            grown_j[:nnz] = Uj[:nnz]
            grown_x[:nnz] = Ux[:nnz]
            Uj, Ux = grown_j, grown_x
        nnz = _gather(w, w_cols, n_w, Uj, Ux, nnz)
        Up[i + 1] = nnz
    # CSR(U) = CSC(U^T) = CSC of the lower triangle; CSC(U) by one transposition
    Tp, Ti, Tx = transpose(m, m, Up, Uj, Ux)
    Pp = np.empty(m + 1, np.int64)
    Pi = np.empty(2 * nnz, np.int64)
    Px = np.empty(2 * nnz, np.float64)
    out = 0
    Pp[0] = 0
    for j in range(m):  # column j of P: rows <= j from CSC(U), then rows > j from U's row j
        for p in range(_u(Tp[j]), _u(Tp[j + 1])):
            Pi[out] = Ti[p]
            Px[out] = Tx[p]
            out += 1
        for p in range(_u(Up[j]), _u(Up[j + 1])):
            if Uj[p] > j:
                Pi[out] = Uj[p]
                Px[out] = Ux[p]
                out += 1
        Pp[j + 1] = out
    return (Pp, Pi[:out].copy(), Px[:out].copy()), (Tp, Ti, Tx)


def delassus_symmetric(rows: Any, inverse: Any, diagonal: FloatArray | None) -> tuple[Arrays, Arrays] | None:
    """CSC arrays ``(indptr, indices, data)`` of ``P = rows inverse rows^T + diag(diagonal)`` (no
    diagonal when None) and of P's upper triangle with its diagonal (what Clarabel and OSQP
    take), int32 indices; None where the kernel does not apply (numba missing, ``rows`` not
    float CSR, ``inverse`` not float CSC/CSR of the right shape): the caller then runs scipy's
    expressions."""
    if not (COMPILED and isinstance(rows, sp.csr_matrix) and isinstance(inverse, sp.csr_matrix | sp.csc_matrix)
            and rows.dtype == np.float64 and inverse.dtype == np.float64 and rows.shape[0] > 0
            and inverse.shape == (rows.shape[1], rows.shape[1]) and inverse.nnz < 2**31
            and (diagonal is None or np.shape(diagonal) == (rows.shape[0],))):
        return None  # a wrong-shaped inverse is left to scipy, which refuses it
    m, nv = rows.shape
    index = np.int64  # one compiled variant whatever the index width of the inputs
    P, upper = _compiled()(m, nv, rows.indptr.astype(index), rows.indices.astype(index), rows.data,
                           isinstance(inverse, sp.csc_matrix), inverse.indptr.astype(index),
                           inverse.indices.astype(index), inverse.data,
                           np.zeros(m) if diagonal is None else np.asarray(diagonal, dtype=np.float64))
    if P[0][-1] >= 2**31:
        return None  # int32 indices (what scipy, Clarabel and OSQP take) cannot hold it
    return ((P[0].astype(np.int32), P[1].astype(np.int32), P[2]),
            (upper[0].astype(np.int32), upper[1].astype(np.int32), upper[2]))


def _ensure_helpers() -> None:
    global _scatter, _gather
    jit.compile_sparse_helpers()
    _scatter, _gather = jit.scatter_add, jit.gather_row
    jit.jit_in_place(globals(), ("transpose",))


#: The numba dispatcher of :func:`_loops` (compiled at first call, cached on disk).
_compiled = jit.LazyKernel(_loops, before=_ensure_helpers)
