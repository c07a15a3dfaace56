"""A dual program's ``P = (W + W^T) / 2`` with ``W = rows M^{-1} rows^T + diag(R)``, compiled,
giving the *same arrays* as the scipy expressions it replaces (issue 10).

:func:`contactopt.formulations.constraint_rows.dual_program` assembles ``P`` in three scipy
steps: :func:`contactopt.formulations.common.delassus` (``(rows @ Minv @ rows.T).tocsc()``),
:func:`contactopt.programs.csc.add_diagonal` and :func:`contactopt.programs.csc.symmetric_part`.
On the MJCF sphere pile (714 rows, 600 dofs, 104k product terms, 15k entries in ``P``) they
cost 0.73-0.76 ms, much of it scipy's conversions and checks around its compiled loops;
:func:`delassus_symmetric` does the same arithmetic in one numba call, 0.30 ms (best of 50, this
2-core machine; the product's 104k multiply-adds are most of it).

**Why bit for bit.** The pile's reference trajectories move by up to 1e-7 when one entry of its
first program moves by one ulp (``tests/test_reference_trajectories.py``), so an equal-to-
rounding ``P`` is not enough. The kernel therefore replays scipy's order of operations
(``scipy/sparse/sparsetools/csr.h``):

* ``Y = rows Minv`` (``csr_matmat``, ``Minv`` converted to CSR first as scipy's ``@`` does):
  entry ``(i, l)`` summed from zero over row ``i`` of ``rows`` in its *stored* order; each row
  of ``Y`` lists its entries in reverse order of first touch (scipy's linked list), exact zeros
  dropped.
* ``W = Y rows^T`` (``csr_matmat`` again, ``rows^T`` as CSR with ascending entries): entry
  ``(i, j)`` summed from zero over row ``i`` of ``Y`` *in that reversed order*; exact zeros
  dropped. Its order within a row does not matter (``tocsc`` sorts), so it is collected
  sorted.
* ``W_ii += R_i`` on the stored diagonal (the kernel declines when a diagonal entry is
  missing: scipy's ``add_diagonal`` then takes its sparse-sum path).
* ``P = (W + W^T) / 2``: where ``W``'s pattern is symmetric, ``0.5 (w_ij + w_ji)`` with exact
  zeros dropped after scaling; otherwise scipy's ``0.5 * (W + W.T)``: the union of the patterns
  merged column by column (``csr_binop_csr_canonical``: ``w_ij + w_ji``, ``w_ij + 0`` or
  ``0 + w_ji``, zero sums dropped), then scaled.

Without numba (or with ``CONTACTOPT_NO_NUMBA`` set) :data:`COMPILED` is False and the caller
keeps the scipy expressions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.programs import scipy_replay as replay

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.int32]
Arrays = tuple[Any, Any, FloatArray]  # CSC (indptr, indices, data)

#: Whether :func:`delassus_symmetric` runs (numba installed, ``CONTACTOPT_NO_NUMBA`` unset).
COMPILED = jit.ENABLED
_u = replay.UNSIGNED  # unsigned indices in the hot loops (scipy_replay)


def _loops(m: int, nv: int, Rp: Any, Rj: Any, Rx: FloatArray, inverse_csc: bool, Mp: Any, Mi: Any,
           Mx: FloatArray, diagonal: FloatArray, add: bool) -> tuple[bool, Any, Any]:
    """``(done, P, P's upper triangle)``, each as CSC ``(indptr, indices, data)`` (module
    docstring); ``done`` False when a diagonal entry to add to is not stored."""
    if inverse_csc:  # scipy's @ converts a CSC operand to CSR first
        Mp, Mi, Mx = replay.transpose(nv, nv, Mp, Mi, Mx)
    # Y = rows Minv, csr_matmat with its linked list: rows of Y in reverse order of first touch
    Yp = np.empty(m + 1, np.int64)
    bound = 0
    for jj in range(Rp[m]):
        bound += Mp[Rj[jj] + 1] - Mp[Rj[jj]]
    Yj = np.empty(bound, np.int64)
    Yx = np.empty(bound, np.float64)
    following = np.full(nv, -1, np.int64)
    sums = np.zeros(max(nv, m), np.float64)
    count = 0
    Yp[0] = 0
    for i in range(m):
        head, length = -2, 0
        for jj in range(_u(Rp[i]), _u(Rp[i + 1])):
            head, length = replay.accumulate(Rx[jj], Mp, Mi, Mx, _u(Rj[jj]), sums, following, head, length)
        count = replay.emit(head, length, sums, following, Yj, Yx, count)
        Yp[i + 1] = count
    # rows^T as CSR (each row's entries ascending), as scipy's tocsr of rows.T
    Tp, Tj, Tx = replay.transpose(m, nv, Rp, Rj, Rx)
    # W = Y rows^T row by row, each row collected sorted: the CSC arrays of W^T
    bound = 0
    for jj in range(count):
        bound += Tp[Yj[jj] + 1] - Tp[Yj[jj]]
    Wp = np.empty(m + 1, np.int32)
    Wj = np.empty(bound, np.int32)
    Wx = np.empty(bound, np.float64)
    marker = np.full(m, -1, np.int64)
    touched = np.empty(m, np.int64)
    nnz = 0
    Wp[0] = 0
    for i in range(m):
        n_touched = 0
        for jj in range(_u(Yp[i]), _u(Yp[i + 1])):
            value = Yx[jj]
            k = _u(Yj[jj])
            for kk in range(_u(Tp[k]), _u(Tp[k + 1])):
                col = _u(Tj[kk])
                if marker[col] != i:
                    marker[col] = i
                    sums[col] = 0.0
                    touched[n_touched] = col
                    n_touched += 1
                sums[col] += value * Tx[kk]
        for a in range(1, n_touched):  # insertion sort: a row holds a few dozen entries
            key = touched[a]
            b = a - 1
            while b >= 0 and touched[b] > key:
                touched[b + 1] = touched[b]
                b -= 1
            touched[b + 1] = key
        for a in range(n_touched):
            col = touched[a]
            if sums[col] != 0:
                Wj[nnz] = col
                Wx[nnz] = sums[col]
                nnz += 1
        Wp[i + 1] = nnz
    # W^T's CSC arrays are (Wp, Wj, Wx); W's own CSC arrays by one transposition
    Cp, Ci, Cx = replay.transpose(m, m, Wp, Wj, Wx)
    if add:  # W_ii += R_i in both copies (the transposed copy is made from the sum in scipy)
        for copy in range(2):
            p_, i_, x_ = (Cp, Ci, Cx) if copy == 0 else (Wp, Wj, Wx)
            for j in range(m):
                found = False
                for p in range(_u(p_[j]), _u(p_[j + 1])):
                    if i_[p] == j:
                        x_[p] += diagonal[j]
                        found = True
                        break
                if not found:
                    return False, (Cp, Ci, Cx), (Cp, Ci, Cx)
    same = True
    for j in range(m + 1):
        if Cp[j] != Wp[j]:
            same = False
            break
    if same:
        for p in range(nnz):
            if Ci[p] != Wj[p]:
                same = False
                break
    Pp = np.empty(m + 1, np.int32)
    Pi = np.empty(Cp[m] + Wp[m], np.int32)
    Px = np.empty(Cp[m] + Wp[m], np.float64)
    out = 0
    Pp[0] = 0
    if same:  # symmetric_part's path: 0.5 (w_ij + w_ji), zeros dropped after scaling
        for j in range(m):
            for p in range(_u(Cp[j]), _u(Cp[j + 1])):
                value = 0.5 * (Cx[p] + Wx[p])
                if value != 0:
                    Pi[out] = Ci[p]
                    Px[out] = value
                    out += 1
            Pp[j + 1] = out
    else:  # 0.5 * (W + W.T): union merge, zero sums dropped, then scaled
        for j in range(m):
            a, a_end, b, b_end = Cp[j], Cp[j + 1], Wp[j], Wp[j + 1]
            while a < a_end or b < b_end:
                if b == b_end or (a < a_end and Ci[a] < Wj[b]):
                    row, total = Ci[a], Cx[a] + 0.0
                    a += 1
                elif a == a_end or Wj[b] < Ci[a]:
                    row, total = Wj[b], 0.0 + Wx[b]
                    b += 1
                else:
                    row, total = Ci[a], Cx[a] + Wx[b]
                    a += 1
                    b += 1
                if total != 0:
                    Pi[out] = row
                    Px[out] = 0.5 * total
                    out += 1
            Pp[j + 1] = out
    Up = np.zeros(m + 1, np.int32)  # the upper triangle (row <= column), what Clarabel and OSQP take
    upper = 0
    for j in range(m):
        for p in range(_u(Pp[j]), _u(Pp[j + 1])):
            if Pi[p] <= j:
                upper += 1
        Up[j + 1] = upper
    Ui = np.empty(upper, np.int32)
    Ux = np.empty(upper, np.float64)
    upper = 0
    for j in range(m):
        for p in range(_u(Pp[j]), _u(Pp[j + 1])):
            if Pi[p] <= j:
                Ui[upper] = Pi[p]
                Ux[upper] = Px[p]
                upper += 1
    return True, (Pp, Pi[:out].copy(), Px[:out].copy()), (Up, Ui, Ux)


def delassus_symmetric(rows: Any, inverse: Any, diagonal: FloatArray | None) -> tuple[Arrays, Arrays] | None:
    """CSC arrays ``(indptr, indices, data)`` of
    ``P = symmetric_part(add_diagonal((rows @ inverse @ rows.T).tocsc(), diagonal))`` (no
    ``add_diagonal`` when ``diagonal`` is None), equal to scipy's bit for bit, and of P's upper
    triangle with its diagonal (what Clarabel and OSQP take; the arrays
    :func:`contactopt.programs.csc.upper_triangle` gives); None where the kernel does not apply
    (numba missing, ``rows`` not CSR, ``inverse`` not CSC/CSR, a diagonal entry not stored):
    the caller then runs the scipy expressions."""
    if not (COMPILED and isinstance(rows, sp.csr_matrix) and isinstance(inverse, sp.csr_matrix | sp.csc_matrix)
            and rows.dtype == np.float64 and inverse.dtype == np.float64 and rows.shape[0] > 0
            and inverse.shape == (rows.shape[1], rows.shape[1]) and inverse.nnz < 2**31
            and (diagonal is None or np.shape(diagonal) == (rows.shape[0],))):
        return None  # a wrong-shaped inverse is left to scipy, which refuses it
    kernel = _compiled()
    m, nv = rows.shape
    add = diagonal is not None
    done, P, upper = kernel(m, nv, rows.indptr, rows.indices, rows.data, isinstance(inverse, sp.csc_matrix),
                            inverse.indptr.astype(np.int32, copy=False), inverse.indices.astype(np.int32, copy=False),
                            inverse.data, np.zeros(m) if diagonal is None else np.asarray(diagonal, dtype=np.float64),
                            add)
    return (P, upper) if done else None


#: The numba dispatcher of :func:`_loops` (compiled at first call, cached on disk).
_compiled = jit.LazyKernel(_loops, before=replay.ensure_compiled)
