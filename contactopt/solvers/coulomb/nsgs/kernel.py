"""The sweeps of :mod:`contactopt.solvers.coulomb.nsgs.solver`, compiled with numba when it is installed
(``pip install 'contactopt[fast]'``), else run by the Python interpreter with NumPy row
products (selected automatically; :data:`COMPILED` says which; both do the same arithmetic).

**The problem** (FCLIB's local Coulomb problem; De Saxcé & Feng 1991): find ``r`` with
``C*_mu ∋ û ⟂ r ∈ C_mu``, ``u = W r + q``, ``û_c = u_c + [mu_c ||u_cT||, 0(, 0)]``, rows per
contact ``[n, t1(, t2)]``; the friction cone ``C_mu = {||r_T|| <= mu r_N}`` is the one of
Tedrake's "Multi-Body Dynamics" appendix (section "Time-stepping LCP: Coulomb Friction" and the
SOCP friction cone ``FC(q)``; Tedrake 2022, docs/references.md).

**A sweep** (nonsmooth Gauss-Seidel: Jean, "The non-smooth contact dynamics method", Comput.
Methods Appl. Mech. Engrg. 177, 1999; Acary & Brogliato, "Numerical methods for nonsmooth
dynamical systems", Springer 2008, ch. 13; Acary, Brémond & Huber, "On solving contact problems
with Coulomb friction: formulations and numerical comparisons", 2018, the NSGS with local
solvers) visits the contacts in order; for contact ``c`` it forms
``q'_c = q_c + sum_{d != c} W_cd r_d`` as the products with ``W``'s sparse rows (CSR) less the
diagonal block's (from the current ``r``: no running sum that drifts) and replaces ``r_c`` by
the exact solution of the one-contact problem ``u_c = W_cc r_c + q'_c``
(:func:`contactopt.solvers.coulomb.nsgs.local.local_solve`), relaxed by ``omega`` in ``(0, 1]`` (a
convex combination of two points of the cone stays in it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.core.jit import UNSIGNED as _u  # unsigned indexing: no wraparound test
from contactopt.core.jit import jit_in_place
from contactopt.solvers.coulomb.nsgs import local as nsgs_local
from contactopt.solvers.coulomb.nsgs.local import local_solve, project_cone

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

def rows_and_blocks(m: int, dim: int, Wp: Any, Wi: Any, Wx: Any) -> tuple[Any, Any, Any, Any]:
    """From ``W``'s CSC arrays: its CSR arrays ``(indptr, indices, data)`` (each row's columns
    ascending: the columns are visited in order) and its diagonal blocks (m / dim, dim, dim)."""
    nnz = Wp[m]
    Rp = np.zeros(m + 1, np.int64)
    for p in range(nnz):
        Rp[Wi[p] + 1] += 1
    for i in range(m):
        Rp[i + 1] += Rp[i]
    Ri = np.empty(nnz, np.int64)
    Rx = np.empty(nnz, np.float64)
    fill = Rp[:m].copy()
    blocks = np.zeros((m // dim, dim, dim))
    for c in range(m // dim):
        start = c * dim  # the block's rows are start..start + dim - 1 (no division per entry)
        for col in range(dim):
            j = start + col
            for p in range(Wp[j], Wp[j + 1]):
                i = Wi[p]
                Ri[fill[i]] = j
                Rx[fill[i]] = Wx[p]
                fill[i] += 1
                if start <= i < start + dim:
                    blocks[c, i - start, col] += Wx[p]
    return Rp, Ri, Rx, blocks


def sweep(data: Any, indices: Any, indptr: Any, blocks: Any, q: Any, mu: Any, dim: int, r: Any,
          slip: Any, omega: float, counts: Any) -> float:
    """One sweep over the contacts (module docstring), updating ``r`` and the slip ratios in
    place and adding each local outcome to ``counts``; returns ``||r_new - r_old||^2``. ``W`` is
    given by its CSR arrays and its diagonal blocks ``blocks`` (nc, dim, dim)."""
    nc = blocks.shape[0]
    qp = np.empty(dim)
    new = np.empty(dim)
    work = np.empty(dim)
    change = 0.0
    for c in range(nc):
        start = c * dim
        for k in range(dim):
            i = start + k
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * r[_u(indices[p])]
            for col in range(dim):  # less the diagonal block's part: q'_c
                acc -= blocks[c, k, col] * r[start + col]
            qp[k] = q[i] + acc
            new[k] = r[i]
        outcome, s = local_solve(blocks[c], dim, qp, mu[c], slip[c], new, work)
        slip[c] = s
        counts[outcome] += 1
        for k in range(dim):
            value = omega * new[k] + (1.0 - omega) * r[start + k]
            delta = value - r[start + k]
            change += delta * delta
            r[start + k] = value
    return change


def fclib_error(data: Any, indices: Any, indptr: Any, q: Any, mu: Any, dim: int, r: Any,
                q_scale: float) -> float:
    """FCLIB's error of ``r`` (``fclib_merit_local``: ``||r - P_C(r - û)|| / (1 + sqrt ||q||)``,
    ``q_scale`` being the denominator), with ``u = W r + q`` from the CSR rows."""
    nc = mu.shape[0]
    u = np.empty(dim)
    e = np.empty(dim)
    total = 0.0
    for c in range(nc):
        start = c * dim
        for k in range(dim):
            i = start + k
            acc = q[i]
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * r[_u(indices[p])]
            u[k] = acc
        u[0] += mu[c] * math.sqrt(u[1] * u[1] + (u[2] * u[2] if dim == 3 else 0.0))
        for k in range(dim):
            e[k] = r[start + k] - u[k]
        project_cone(e, dim, mu[c])
        for k in range(dim):
            d = r[start + k] - e[k]
            total += d * d
    return math.sqrt(total) / q_scale


def run(data: Any, indices: Any, indptr: Any, blocks: Any, q: Any, mu: Any, dim: int, r: Any,
        slip: Any, omega: float, counts: Any, max_sweeps: int, change_tol: float, tol: float,
        q_scale: float) -> tuple[int, float, float]:
    """Sweep until FCLIB's error is at most ``tol`` or ``max_sweeps`` are done; returns
    ``(sweeps, error, change_tol)`` (error -1 when never computed). The error (as costly as a
    sweep) is computed only after a sweep whose change ``||dr|| / q_scale`` is at most
    ``change_tol``; when it is still above ``tol`` the change threshold is lowered in
    proportion (error and change shrink together once the sweeps converge linearly), so a
    second check usually succeeds."""
    error = -1.0
    for done in range(1, max_sweeps + 1):
        change = math.sqrt(sweep(data, indices, indptr, blocks, q, mu, dim, r, slip, omega, counts)) / q_scale
        if not math.isfinite(change):
            return done, math.nan, change_tol
        if change <= change_tol:
            error = fclib_error(data, indices, indptr, q, mu, dim, r, q_scale)
            if error <= tol:
                return done, error, change_tol
            change_tol = 0.5 * change * tol / error
    return max_sweeps, error, change_tol


def sweep_numpy(W: Any, blocks: FloatArray, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray,
                slip: FloatArray, omega: float, counts: IntArray) -> float:
    """:func:`sweep` without numba: ``q'_c`` by NumPy products with the CSR rows of ``W``
    (``W`` a scipy CSR matrix) less the diagonal block's, and the same local solve."""
    data, indices, indptr = W.data, W.indices, W.indptr
    work = np.empty(dim)
    change = 0.0
    for c in range(blocks.shape[0]):
        start, stop = c * dim, (c + 1) * dim
        lo, hi = indptr[start], indptr[stop]
        coupled = data[lo:hi] * r[indices[lo:hi]]
        own = (indices[lo:hi] >= start) & (indices[lo:hi] < stop)
        coupled[own] = 0.0
        rows = np.repeat(np.arange(dim), np.diff(indptr[start:stop + 1]))
        qp = q[start:stop] + np.bincount(rows, weights=coupled, minlength=dim)
        new = r[start:stop].copy()
        outcome, s = local_solve(blocks[c], dim, qp, float(mu[c]), float(slip[c]), new, work)
        slip[c] = s
        counts[outcome] += 1
        value = omega * new + (1.0 - omega) * r[start:stop]
        change += float(np.sum((value - r[start:stop]) ** 2))
        r[start:stop] = value
    return change


def fclib_error_numpy(W: Any, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray, q_scale: float) -> float:
    """:func:`fclib_error` in NumPy."""
    hat = np.asarray(W @ r + q).reshape(-1, dim)
    hat[:, 0] += mu * np.linalg.norm(hat[:, 1:], axis=1)
    R = r.reshape(-1, dim)
    trial = R - hat
    for c in range(trial.shape[0]):
        project_cone(trial[c], dim, float(mu[c]))
    return float(np.linalg.norm(R - trial)) / q_scale


def run_numpy(W: Any, blocks: FloatArray, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray,
              slip: FloatArray, omega: float, counts: IntArray, max_sweeps: int, change_tol: float,
              tol: float, q_scale: float) -> tuple[int, float, float]:
    """:func:`run` without numba (same decisions, NumPy sweeps)."""
    error = -1.0
    for done in range(1, max_sweeps + 1):
        change = math.sqrt(sweep_numpy(W, blocks, q, mu, dim, r, slip, omega, counts)) / q_scale
        if not math.isfinite(change):
            return done, math.nan, change_tol
        if change <= change_tol:
            error = fclib_error_numpy(W, q, mu, dim, r, q_scale)
            if error <= tol:
                return done, error, change_tol
            change_tol = 0.5 * change * tol / error
    return max_sweeps, error, change_tol


# numba's disk cache keys each function on its own file only: a change to nsgs_local alone leaves
# the compiled sweeps of this file calling the old local solver (edit this file too, or clear the
# cache). numba is imported at the first compiled solve, not with contactopt (its import costs ~0.4 s);
# CONTACTOPT_NO_NUMBA=1 keeps the NumPy path.
AVAILABLE = jit.ENABLED
#: Whether solves run compiled (tests may switch it off to run the NumPy path).
COMPILED: bool = AVAILABLE
_KERNELS = ("sweep", "fclib_error", "run", "rows_and_blocks")
_compiled = False


def ensure_compiled() -> None:
    """Replace the loop kernels here and in :mod:`~contactopt.solvers.coulomb.nsgs.local` by numba
    dispatchers (compiled at first call, cached on disk); this module's names of the local
    solver are pointed at its dispatchers, which :func:`sweep` then calls compiled."""
    global _compiled, local_solve, project_cone
    if _compiled or not AVAILABLE:
        return
    jit_in_place(vars(nsgs_local), nsgs_local.KERNELS)
    local_solve, project_cone = nsgs_local.local_solve, nsgs_local.project_cone
    jit_in_place(globals(), _KERNELS)
    _compiled = True
