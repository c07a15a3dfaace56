"""The sweep of :mod:`contactopt.solvers.pgs.solver`, compiled with numba when it is installed
(``pip install 'contactopt[fast]'``), else the same arithmetic in NumPy (selected
automatically; :data:`COMPILED` says which).

One sweep visits the blocks in order (module docstring of :mod:`~contactopt.solvers.pgs.solver`):
a Nonneg row takes the projected Gauss-Seidel step ``u_i <- max(0, u_i - omega g_i / H_ii)``,
an SOC block the projected gradient step ``u_b <- Proj(u_b - (omega / L_b) g_b)`` onto the
circular cone ``{||u_t|| <= m u_0}``; after each change ``g += H[:, b] delta``. Blocks are
given as arrays ``starts, stops, slopes, steps`` (slope ``-1`` marks a Nonneg row).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.programs import coulomb_cone

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

NONNEG = -1.0


def sweep_numpy(HT: FloatArray, u: FloatArray, g: FloatArray, starts: IntArray, stops: IntArray,
                slopes: FloatArray, steps: FloatArray, omega: float) -> None:
    """One sweep in NumPy (the reference path), updating ``u`` and ``g`` in place."""
    for b in range(starts.shape[0]):
        start, stop, slope, step = int(starts[b]), int(stops[b]), float(slopes[b]), float(steps[b])
        if slope == NONNEG:
            old = float(u[start])
            new = old - omega * step * float(g[start])
            if not new >= 0.0:  # also sends NaN to 0; a NaN g is caught by the residual
                new = 0.0
            if new != old:
                u[start] = new
                g += (new - old) * HT[start]
        else:
            trial = u[start:stop] - (omega * step) * g[start:stop]
            delta = project_cone(trial, slope) - u[start:stop]
            if delta.any():
                u[start:stop] += delta
                for k in range(stop - start):  # row by row: the compiled path's order
                    g += delta[k] * HT[start + k]


def project_cone(v: FloatArray, slope: float) -> FloatArray:
    """The projection of ``v = (a, t)`` onto the cone ``{||t|| <= slope a}``, slope > 0, as a new
    array (:func:`contactopt.programs.coulomb_cone.project_cone`)."""
    out = np.array(v, dtype=np.float64)
    coulomb_cone.project_cone(out, out.shape[0], float(slope))
    return out


def _sweep_loops(data: Any, indices: Any, indptr: Any, u: Any, g: Any, starts: Any, stops: Any,
                 slopes: Any, steps: Any, omega: float) -> None:  # pragma: no cover - runs compiled
    """The same sweep as explicit loops, for numba (identical operation order), with the rows
    of ``H`` in CSR form (``data, indices, indptr``): ``g += d H[i, :]`` touches only the
    nonzeros, so a sweep costs O(nnz(H)) instead of O(n^2) (the skipped terms add exact
    zeros)."""
    trial = np.empty(8)
    for b in range(starts.shape[0]):
        start, stop, slope, step = starts[b], stops[b], slopes[b], steps[b]
        if slope == NONNEG:
            old = u[start]
            new = old - omega * step * g[start]
            if not new >= 0.0:
                new = 0.0
            if new != old:
                u[start] = new
                d = new - old
                for p in range(indptr[start], indptr[start + 1]):
                    g[indices[p]] += d * data[p]
            continue
        dim = stop - start
        if trial.shape[0] < dim:
            trial = np.empty(dim)
        for k in range(dim):
            trial[k] = u[start + k] - (omega * step) * g[start + k]
        coulomb_cone.project_cone(trial, dim, slope)
        for k in range(dim):
            d = trial[k] - u[start + k]
            if d != 0.0:
                u[start + k] += d
                for p in range(indptr[start + k], indptr[start + k + 1]):
                    g[indices[p]] += d * data[p]


def _compile() -> Callable[..., None] | None:
    if not jit.ENABLED:
        return None
    jit.jit_in_place(vars(coulomb_cone), coulomb_cone.KERNELS)  # the sweep calls the projection
    return jit.njit(_sweep_loops)


_COMPILED = _compile()
#: Whether sweeps run compiled (:data:`contactopt.core.jit.ENABLED`).
COMPILED: bool = _COMPILED is not None


def sweep(HT: FloatArray, HT_rows: Any, u: FloatArray, g: FloatArray, starts: IntArray,
          stops: IntArray, slopes: FloatArray, steps: FloatArray, omega: float) -> None:
    """One sweep: compiled when numba is installed and :data:`COMPILED` is true (tests may
    switch it off), else NumPy. ``HT_rows`` is ``HT`` as a CSR matrix (for the compiled path)."""
    if COMPILED and _COMPILED is not None:
        _COMPILED(HT_rows.data, HT_rows.indices, HT_rows.indptr, u, g, starts, stops, slopes, steps,
                  float(omega))
    else:
        sweep_numpy(HT, u, g, starts, stops, slopes, steps, omega)
