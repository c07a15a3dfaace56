"""The exact projected Gauss-Seidel solve of the two QPs of :mod:`contactopt.solvers.coulomb.staggered.solver`,
on the blocks of the Delassus matrix ``W`` (CSR, symmetric), compiled with numba when it is
installed, else the same loops run by the interpreter (:data:`COMPILED` says which).

Both QPs minimize ``1/2 r'W r + q'r`` over one part of ``r`` with the rest fixed, over a
product of per-contact sets, so cyclic block coordinate minimization applies: each block step
minimizes exactly over its own block, the objective never increases, and for a symmetric
positive semidefinite ``W`` every limit point solves the QP (Cottle, Pang & Stone, "The Linear
Complementarity Problem", 1992, section 5.2, for the nonnegative rows; Beck & Tetruashvili,
SIAM J. Optim. 23, 2013, and Luo & Tseng, JOTA 72, 1992, for block coordinate descent over
separable convex sets). ``u = W r + q`` is kept up to date after every change
(``u += W[:, i] delta``, ``W`` symmetric so its row ``i`` is its column).

* **Normal QP** (friction fixed): ``r_cN <- max(0, r_cN - u_cN / W_cN,cN)``.
* **Friction QP** (normal fixed; maximum dissipation over the disk ``||r_cT|| <= rho = mu_c
  r_cN``): with ``A = W_cT,cT`` and ``b = u_cT - A r_cT`` (the gradient at ``r_cT = 0``) the
  block minimizes ``1/2 x'A x + b'x`` over ``||x|| <= rho``. Inside: ``x = -A^-1 b``; else
  ``x(lam) = -(A + lam I)^-1 b`` with ``||x(lam)|| = rho``, ``lam > 0`` (the trust-region
  subproblem's optimality conditions, Moré & Sorensen, SIAM J. Sci. Stat. Comput. 4, 1983),
  found by Newton's method on ``phi(lam) = 1/||x(lam)|| - 1/rho`` (``phi' = x'(A + lam I)^-1 x
  / ||x||^3``) safeguarded by bisection of the bracket ``[||b||/rho - a_max, ||b||/rho - a_min]``
  (``a`` the eigenvalues of ``A``: ``||b||/(a_max + lam) <= ||x(lam)|| <= ||b||/(a_min + lam)``).
  One tangential direction (planar contacts): ``x = clip(-b / A, -rho, rho)``.

A sweep stops the stage when no entry of ``r`` moved by more than ``tol`` times the largest
impulse of the stage, or after ``max_sweeps`` sweeps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit

FloatArray = NDArray[np.float64]
F = TypeVar("F", bound=Callable[..., Any])



_JIT: Callable[[Any], Any] | None = jit.njit if jit.ENABLED else None  # else the same loops, interpreted
#: Whether the stages run compiled (:data:`contactopt.core.jit.ENABLED`).
COMPILED: bool = _JIT is not None


def _compiled(function: F) -> F:
    """``function`` compiled by numba when it is installed (its interpreted original stays as
    ``py_func``), else itself."""
    return function if _JIT is None else cast(F, _JIT(function))


NORMAL, FRICTION = 0, 1
#: Bisection/Newton steps of the disk's secular equation (each at least halves the bracket's
#: uncertainty; Newton's steps converge quadratically long before).
SECULAR_STEPS = 100


@_compiled
def _update(data: Any, indices: Any, indptr: Any, u: Any, row: int, delta: float) -> None:
    for p in range(indptr[row], indptr[row + 1]):
        u[indices[p]] += delta * data[p]


@_compiled
def disk_minimizer(a11: float, a12: float, a22: float, b1: float, b2: float, rho: float) -> tuple[float, float]:
    """``argmin 1/2 x'A x + b'x`` over ``||x|| <= rho`` for a symmetric positive semidefinite
    2x2 ``A`` (module docstring)."""
    nb = math.sqrt(b1 * b1 + b2 * b2)
    if rho <= 0.0 or nb == 0.0:
        return 0.0, 0.0
    det = a11 * a22 - a12 * a12
    if det > 0.0 and a11 > 0.0:
        x1 = -(a22 * b1 - a12 * b2) / det
        x2 = -(a11 * b2 - a12 * b1) / det
        if x1 * x1 + x2 * x2 <= rho * rho:
            return x1, x2
    half_trace = 0.5 * (a11 + a22)
    spread = math.sqrt(0.25 * (a11 - a22) * (a11 - a22) + a12 * a12)
    a_max, a_min = half_trace + spread, max(half_trace - spread, 0.0)
    low = max(nb / rho - a_max, 0.0)
    high = max(nb / rho - a_min, low)
    lam = low
    x1 = x2 = 0.0
    for _ in range(SECULAR_STEPS):
        d11, d22 = a11 + lam, a22 + lam
        det_l = d11 * d22 - a12 * a12
        if not det_l > 0.0:  # A + lam I singular: ||x|| infinite, the root lies above
            low = lam
            lam = 0.5 * (low + high)
            continue
        x1 = -(d22 * b1 - a12 * b2) / det_l
        x2 = -(d11 * b2 - a12 * b1) / det_l
        norm = math.sqrt(x1 * x1 + x2 * x2)
        phi = 1.0 / norm - 1.0 / rho
        if phi < 0.0:
            low = lam
        else:
            high = lam
        if abs(phi) * rho <= 1e-15 or high - low <= 1e-15 * high:
            break
        y1 = (d22 * x1 - a12 * x2) / det_l  # (A + lam I)^-1 x
        y2 = (d11 * x2 - a12 * x1) / det_l
        slope = (x1 * y1 + x2 * y2) / (norm * norm * norm)
        candidate = lam - phi / slope if slope > 0.0 else -1.0
        lam = candidate if low < candidate < high else 0.5 * (low + high)
    norm = math.sqrt(x1 * x1 + x2 * x2)
    if norm == 0.0:  # A = 0 and the bracket collapsed before a step: the steepest point of the disk
        return -rho * b1 / nb, -rho * b2 / nb
    return x1 * (rho / norm), x2 * (rho / norm)  # exactly on the circle (rounding of the root)


@_compiled
def _stage_loops(data: Any, indices: Any, indptr: Any, diagonal: Any, mu: Any, r: Any, u: Any, dim: int,
                 stage: int, tol: float, max_sweeps: int) -> int:  # pragma: no cover - runs compiled
    """Sweeps of one stage (module docstring), ``r`` and ``u`` updated in place; returns the
    sweeps made."""
    contacts = mu.shape[0]
    for sweep in range(1, max_sweeps + 1):
        moved, largest = 0.0, 0.0
        for c in range(contacts):
            i = c * dim
            if stage == NORMAL:
                a = diagonal[c, 0, 0]
                old = r[i]
                new = max(0.0, old - u[i] / a) if a > 0.0 else old
                if new != old:
                    r[i] = new
                    _update(data, indices, indptr, u, i, new - old)
                moved, largest = max(moved, abs(new - old)), max(largest, new)
                continue
            if dim == 1:
                continue
            rho = mu[c] * r[i]
            if dim == 2:
                a = diagonal[c, 1, 1]
                b = u[i + 1] - a * r[i + 1]
                steepest = -math.copysign(rho, b) if b != 0.0 else 0.0  # A = 0: the disk's far end
                new1, new2 = (min(max(-b / a, -rho), rho) if a > 0.0 else steepest), 0.0
            else:
                a11, a12, a22 = diagonal[c, 1, 1], 0.5 * (diagonal[c, 1, 2] + diagonal[c, 2, 1]), diagonal[c, 2, 2]
                b1 = u[i + 1] - a11 * r[i + 1] - a12 * r[i + 2]
                b2 = u[i + 2] - a12 * r[i + 1] - a22 * r[i + 2]
                new1, new2 = disk_minimizer(a11, a12, a22, b1, b2, rho)
            for k in range(1, dim):
                new_k = new1 if k == 1 else new2
                delta = new_k - r[i + k]
                if delta != 0.0:
                    r[i + k] = new_k
                    _update(data, indices, indptr, u, i + k, delta)
                moved, largest = max(moved, abs(delta)), max(largest, abs(new_k))
        if moved <= tol * largest:
            return sweep
    return max_sweeps


def run_stage(W_rows: Any, diagonal: FloatArray, mu: FloatArray, r: FloatArray, u: FloatArray, dim: int,
              stage: int, tol: float, max_sweeps: int) -> int:
    """Sweeps of ``stage`` (NORMAL or FRICTION) on ``W_rows`` (CSR) until the stage settles
    (module docstring); compiled when numba is installed and :data:`COMPILED` is true (tests may
    switch it off). Returns the sweeps made."""
    run = _stage_loops if COMPILED else getattr(_stage_loops, "py_func", _stage_loops)
    return int(run(W_rows.data, W_rows.indices, W_rows.indptr, diagonal, mu, r, u, dim, stage, float(tol),
                   int(max_sweeps)))


def ensure_compiled() -> None:
    """Compile the stages now (once per process; numba's cache makes it a load after the first
    run), so that a solve's set-up, not its iteration, pays for it."""
    global _WARM
    if not COMPILED or _WARM:
        return
    import scipy.sparse as sp

    rows = sp.csr_matrix(np.eye(3))
    for stage in (NORMAL, FRICTION):
        run_stage(rows, np.eye(3)[None], np.array([0.5]), np.zeros(3), np.array([-1.0, 1.0, 0.0]), 3, stage, 1e-12, 2)
    _WARM = True


_WARM = False
