"""The conic form (S6) of an unconstrained primal (:mod:`contactopt.programs.primal`) assembled
as CSC arrays from dense ``A`` and ``J`` in one compiled pass (numba, optional: plain Python
without it), with the candidate ``(x, y)`` of a primal answer ``(v, gamma)``: what the compiled
step (:mod:`contactopt.integrators.native_step`) judges without a program object.

The arrays are those :meth:`PrimalProgram.to_conic` builds from the same data, entry for entry
(its ``_box_conic`` with box rows): ``P = diag(A, R, 0)``, ``c = [-A v*, 0, f]``; a cone row ``i``
is ``-D_i [J_i, R_i]`` with ``b_i = -D_i v_hat_i``; a box row gives an upper row ``[J_i, R_i, -1]``
(``b = v_hat_i``) and a lower row ``[-J_i, -R_i, -1]`` (``b = -v_hat_i``), the lower rows after
every other row. ``x = [v, gamma, |J v + R gamma - v_hat|]`` on the box rows' slacks, and
``y = D^{-1} gamma`` on cone rows, ``((f - gamma) / 2, (f + gamma) / 2)`` on the box rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["conic_arrays", "ensure_compiled"]

_KERNELS = ("conic_arrays",)
ensure_compiled = jit.in_place_once(globals(), _KERNELS)


def conic_arrays(A: FloatArray, J: FloatArray, R: FloatArray, scale: FloatArray, v_hat: FloatArray,
                 c_v: FloatArray, bound: FloatArray, v: FloatArray, gamma: FloatArray) -> Any:
    """``(Pp, Pi, Px, Ap, Ai, Ax, b, c, x, y)`` of the module docstring: ``A`` (nv, nv), ``J``
    (m, nv) dense, the last ``bound.shape[0]`` rows box rows; exact zeros of ``A`` and ``J`` are
    left out, as sparse storage does."""
    nv = A.shape[0]
    m = R.shape[0]
    nb = bound.shape[0]
    cm = m - nb
    n = nv + m + nb
    rows = m + nb
    # P: A's columns, then R on the diagonal, then empty slack columns
    Pp = np.zeros(n + 1, np.int64)
    nnz_A = 0
    for j in range(nv):
        for i in range(nv):
            if A[i, j] != 0.0:
                nnz_A += 1
    Pi = np.empty(nnz_A + m, np.int64)
    Px = np.empty(nnz_A + m)
    k = 0
    for j in range(nv):
        for i in range(nv):
            if A[i, j] != 0.0:
                Pi[k] = i
                Px[k] = A[i, j]
                k += 1
        Pp[j + 1] = k
    for i in range(m):
        Pi[k] = nv + i
        Px[k] = R[i]
        k += 1
        Pp[nv + i + 1] = k
    for r in range(nb):
        Pp[nv + m + r + 1] = k
    # A_conic, column by column (row indices ascending)
    nnz_J = 0
    for i in range(m):
        for j in range(nv):
            if J[i, j] != 0.0:
                nnz_J += 1 if i < cm else 2
    total = nnz_J + m + nb + 2 * nb
    Ap = np.zeros(n + 1, np.int64)
    Ai = np.empty(total, np.int64)
    Ax = np.empty(total)
    k = 0
    for j in range(nv):
        for i in range(m):
            value = J[i, j]
            if value != 0.0:
                Ai[k] = i
                Ax[k] = -scale[i] * value if i < cm else value
                k += 1
        for r in range(nb):
            value = J[cm + r, j]
            if value != 0.0:
                Ai[k] = m + r
                Ax[k] = -value
                k += 1
        Ap[j + 1] = k
    for i in range(m):
        Ai[k] = i
        Ax[k] = -scale[i] * R[i] if i < cm else R[i]
        k += 1
        if i >= cm:
            Ai[k] = m + i - cm
            Ax[k] = -R[i]
            k += 1
        Ap[nv + i + 1] = k
    for r in range(nb):
        Ai[k] = cm + r
        Ax[k] = -1.0
        Ai[k + 1] = m + r
        Ax[k + 1] = -1.0
        k += 2
        Ap[nv + m + r + 1] = k
    b = np.empty(rows)
    for i in range(cm):
        b[i] = -scale[i] * v_hat[i]
    for r in range(nb):
        b[cm + r] = v_hat[cm + r]
        b[m + r] = -v_hat[cm + r]
    c = np.zeros(n)
    for j in range(nv):
        c[j] = c_v[j]
    for r in range(nb):
        c[nv + m + r] = bound[r]
    x = np.empty(n)
    for j in range(nv):
        x[j] = v[j]
    for i in range(m):
        x[nv + i] = gamma[i]
    for r in range(nb):
        i = cm + r
        value = R[i] * gamma[i] - v_hat[i]
        for j in range(nv):
            value += J[i, j] * v[j]
        x[nv + m + r] = abs(value)
    y = np.empty(rows)
    for i in range(cm):
        y[i] = gamma[i] / scale[i]
    for r in range(nb):
        y[cm + r] = 0.5 * (bound[r] - gamma[cm + r])
        y[m + r] = 0.5 * (bound[r] + gamma[cm + r])
    return Pp, Pi, Px, Ap, Ai, Ax, b, c, x, y
