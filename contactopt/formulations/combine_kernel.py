"""Per-contact combinations of contact rows, ``out[c R + r] = sum_j C[c, r, j] J[c dim + j]``,
compiled, giving the *same arrays* as the scipy product it replaces (issue 10).

:meth:`contactopt.formulations.common.ActiveContacts.combine` forms the pyramid edges of
``anitescu`` and ``regularized`` (``n + mu d_i``) and the tangent directions as ``S @ J`` with
the block-diagonal ``S = blockdiag(C_c)`` built from triplets: scipy's construction of ``S``
and its conversions around the product cost more than the product itself. :func:`combine` does
the product's arithmetic in one numba call: the 1000-sphere grid's Anitescu edges 0.36 -> 0.15
ms, the MJCF pile's 0.28 -> 0.13 ms (best of 20, this 2-core machine).

**Why bit for bit.** Downstream products (the dual programs' ``J M^-1 J^T``) and the pile's
reference trajectories depend on every bit and on the order in which each row lists its
entries (``tests/test_reference_trajectories.py``). The kernel replays scipy's
``csr_matmat`` (``scipy/sparse/sparsetools/csr.h``) on that ``S``: row ``(c, r)`` of ``S``
holds ``C[c, r, 0..dim-1]`` in that order, explicit zeros included (the triplet conversion
keeps them); each output entry is summed from zero over those ``j`` and over row ``c dim + j``
of ``J`` in its stored order; a row lists its entries in reverse order of first touch, and
exact-zero sums are dropped.

Without numba (or with ``CONTACTOPT_NO_NUMBA`` set) :data:`COMPILED` is False and the caller
keeps scipy's product.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.programs import scipy_replay as replay

FloatArray = NDArray[np.float64]

#: Whether :func:`combine` runs (numba installed, ``CONTACTOPT_NO_NUMBA`` unset).
COMPILED = jit.ENABLED
_u = replay.UNSIGNED


def _loops(coefficients: FloatArray, Jp: Any, Jj: Any, Jx: FloatArray, nv: int) -> tuple[Any, Any, FloatArray]:
    """CSR arrays of ``S J`` (module docstring) for coefficients ``(na, R, dim)``."""
    na, per, dim = coefficients.shape
    bound = 0
    for c in range(na):
        bound += per * (Jp[(c + 1) * dim] - Jp[c * dim])
    Op = np.empty(na * per + 1, np.int32)
    Oj = np.empty(bound, np.int32)
    Ox = np.empty(bound, np.float64)
    following = np.full(nv, -1, np.int64)
    sums = np.zeros(nv, np.float64)
    nnz = 0
    Op[0] = 0
    for c in range(na):
        for r in range(per):
            head, length = -2, 0
            for j in range(dim):
                head, length = replay.accumulate(coefficients[c, r, j], Jp, Jj, Jx, _u(c * dim + j), sums, following,
                                                 head, length)
            nnz = replay.emit(head, length, sums, following, Oj, Ox, nnz)
            Op[c * per + r + 1] = nnz
    return Op, Oj[:nnz].copy(), Ox[:nnz].copy()


def combine(coefficients: FloatArray, J: Any) -> sp.csr_matrix | None:
    """``S @ J`` as scipy computes it (a CSR matrix with the same arrays, entry order
    included) for coefficients ``(na, R, dim)`` and the CSR contact rows ``J`` (``na dim``
    rows); None where this kernel does not apply (numba missing, ``J`` not a float CSR matrix,
    no rows)."""
    if not (COMPILED and isinstance(J, sp.csr_matrix) and J.dtype == np.float64):
        return None
    na, per, dim = coefficients.shape
    if na * per == 0 or J.shape[0] != na * dim:
        return None
    indptr, indices, data = _compiled()(np.ascontiguousarray(coefficients, dtype=np.float64), J.indptr, J.indices,
                                        J.data, int(J.shape[1]))
    # scipy's constructor (its checks, no sorting): like scipy's own product, rows are not sorted
    return sp.csr_matrix((data, indices, indptr), shape=(na * per, int(J.shape[1])))


#: The numba dispatcher of :func:`_loops` (compiled at first call, cached on disk).
_compiled = jit.LazyKernel(_loops, before=replay.ensure_compiled)
