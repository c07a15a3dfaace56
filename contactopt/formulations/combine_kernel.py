"""Per-contact combinations of contact rows, ``out[c R + r] = sum_j C[c, r, j] J[c dim + j]``,
in one compiled call.

:meth:`contactopt.formulations.common.ActiveContacts.combine` forms the pyramid edges of
``anitescu`` and ``regularized`` (``n + mu d_i``: Anitescu, "Optimization-based simulation of
nonsmooth rigid multibody dynamics", sec. 2; the MuJoCo documentation, "Computation",
pyramidal cones) and the tangent directions as ``S J`` with the block-diagonal
``S = blockdiag(C_c)``. Built with scipy, the construction of ``S`` and the conversions around
the product cost more than the product itself; :func:`combine` sums each output row in a dense
scratch row and writes its entries in ascending column order (a canonical CSR matrix): the
1000-sphere grid's Anitescu edges 0.36 -> 0.15 ms, the MJCF pile's 0.28 -> 0.13 ms. Entries that
sum to exactly zero are not stored. The numbers equal scipy's product to rounding.

Without numba (or with ``CONTACTOPT_NO_NUMBA`` set) :data:`COMPILED` is False and the caller
keeps scipy's product.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit

FloatArray = NDArray[np.float64]

#: Whether :func:`combine` runs (numba installed, ``CONTACTOPT_NO_NUMBA`` unset).
COMPILED = jit.ENABLED
_u = jit.UNSIGNED
_gather = jit.gather_row
_scatter = jit.scatter_add


def _loops(coefficients: FloatArray, Jp: Any, Jj: Any, Jx: FloatArray, nv: int) -> tuple[Any, Any, FloatArray]:
    """CSR arrays of ``S J`` (module docstring) for coefficients ``(na, R, dim)``."""
    na, per, dim = coefficients.shape
    bound = 0
    for c in range(na):
        bound += per * (Jp[(c + 1) * dim] - Jp[c * dim])
    Op = np.empty(na * per + 1, np.int32)
    Oj = np.empty(bound, np.int32)
    Ox = np.empty(bound, np.float64)
    sums = np.zeros(nv, np.float64)
    mark = np.full(nv, -1, np.int64)
    touched = np.empty(nv, np.int64)
    nnz = 0
    Op[0] = 0
    for c in range(na):
        for r in range(per):
            row = c * per + r
            n_touched = 0
            for j in range(dim):
                n_touched = _scatter(coefficients[c, r, j], Jp, Jj, Jx, c * dim + j, 0, row, sums, mark, touched,
                                     n_touched)
            nnz = _gather(sums, touched, n_touched, Oj, Ox, nnz)
            Op[row + 1] = nnz
    return Op, Oj[:nnz].copy(), Ox[:nnz].copy()


def combine(coefficients: FloatArray, J: Any) -> sp.csr_matrix | None:
    """``S @ J`` as a canonical CSR matrix (sorted rows, no exact zeros) for coefficients
    ``(na, R, dim)`` and the CSR contact rows ``J`` (``na dim`` rows); None where this kernel does
    not apply (numba missing, ``J`` not a float CSR matrix, no rows)."""
    if not (COMPILED and isinstance(J, sp.csr_matrix) and J.dtype == np.float64):
        return None
    na, per, dim = coefficients.shape
    if na * per == 0 or J.shape[0] != na * dim:
        return None
    indptr, indices, data = _compiled()(np.ascontiguousarray(coefficients, dtype=np.float64), J.indptr, J.indices,
                                        J.data, int(J.shape[1]))
    out = sp.csr_matrix((data, indices, indptr), shape=(na * per, int(J.shape[1])))
    out.has_sorted_indices = True  # written in ascending order: scipy need not check it again
    return out


def _ensure_helpers() -> None:
    global _scatter, _gather
    jit.compile_sparse_helpers()
    _scatter, _gather = jit.scatter_add, jit.gather_row


#: The numba dispatcher of :func:`_loops` (compiled at first call, cached on disk).
_compiled = jit.LazyKernel(_loops, before=_ensure_helpers)
