"""Active-set refinement of interior-point answers: exact solutions on degenerate steps.

An interior-point method stops at a point of the central path, ``s_i y_i ~ mu > 0``. Where
strict complementarity fails (``s_i = y_i = 0`` at the solution: a cart resting exactly
against the wall with zero force, Tedrake 2022 "The Dynamics of Contact"), the iterate is
only ``O(sqrt(mu))`` from the solution (Wright, *Primal-Dual Interior-Point Methods*, 1997,
ch. 7), which shows as a slow creep over many steps. The fix is the classical
"crossover"/active-set identification (Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
§16.1 and §16.6):

1. Identify the active set ``E`` from the slacks and duals of the interior-point answer, for
   ``min 1/2 x'Px + c'x  s.t.  Ax + s = b, s in K`` with dual ``y in K*``:
   zero-cone rows are always in ``E``; a nonnegative row is active when ``s_i <= y_i``
   (then ``s_i = 0`` and ``y_i`` is free), inactive otherwise (``y_i = 0``); a second-order
   cone block is at the apex (``s = 0``, in ``E``) when ``||s|| << ||y||``, dropped
   (``y = 0``) when ``||y|| << ||s||``. A block with both ``s`` and ``y`` on the cone boundary
   has the nonlinear complementarity ``y = alpha R s`` (``R = diag(1, -1, ..., -1)``,
   ``alpha >= 0``: Alizadeh & Goldfarb 2003, "Second-order cone programming", Lemma 15), so
   the step goes to the semismooth Newton polish of :mod:`contactopt.solvers.polish`
   (accepted under the same test as below; otherwise left as the interior-point solver gave
   it, and the solution's message says so).
2. Solve the equality-constrained KKT system (Nocedal & Wright eq. 16.4) ::

        [ P    A_E^T ] [ x   ]   [ -c  ]
        [ A_E  0     ] [ y_E ] = [ b_E ],      y_i = 0 outside E.

3. Accept ``(x, y)`` only when contactopt's own residuals (:mod:`contactopt.programs.residuals`:
   ``s in K``, ``y in K*``, stationarity, gap, complementarity) are smaller than those of the
   interior-point answer. These are the KKT conditions of a convex program, which are
   sufficient for optimality, so an accepted point is optimal whatever the classification.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from contactopt.programs import ConicProgram, Solution
from contactopt.programs.conic import cone_row_indices
from contactopt.programs.relative import conic_row_measures
from contactopt.programs.residuals import conic_check
from contactopt.solvers.polish import min_norm_solve, polish, regularized_kkt_solve

__all__ = ["active_rows", "refine"]

#: ``||s|| <= RATIO ||y||`` puts an SOC block at the apex (and the reverse drops it). An
#: interior-point answer at tolerance 1e-10 has ``s_i y_i ~ 1e-10``: the small side is many
#: orders below the large one unless both vanish (degenerate), which the absolute floor covers.
RATIO = 1e-3
#: Both sides below this (relative to the data) is a degenerate block: either choice is
#: tried as apex first (s = 0), and the residual test decides.
FLOOR = 1e-6
#: KKT systems up to this size are solved dense (LAPACK), larger ones by the regularized sparse
#: LDL^T (:func:`~contactopt.solvers.polish.regularized_kkt_solve`): on the grid of 100 spheres
#: (size 400, diagonal-dominated) the dense LDL^T took 2-9 ms, SuperLU 0.6 ms.
DENSE_LIMIT = 100
#: Reciprocal condition number above which a dense KKT system is solved by LDL^T rather than
#: by least squares (:func:`_dense_correction`): the correction ``dz`` is then accurate to
#: about 1e-7 of itself at worst, and it is small (the interior-point answer is already within
#: its tolerance), while the residual test of :func:`refine` still decides acceptance. Below
#: it the system is treated as singular and the minimum-norm correction chooses.
RCOND_LDL = 1e-9


def active_rows(program: ConicProgram, x: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray | str:
    """The rows of ``E`` (step 1 of the module docstring), or why refinement is skipped.
    Vectorized over the cones: the zero and nonnegative rows by mask, the second-order cones
    of each dimension together (their row indices come from the program's cone layout). A
    nonnegative row's ``s_i`` and ``y_i`` are compared in its own unit
    (:func:`~contactopt.programs.relative.conic_row_measures`, as the residuals judge them): on
    MuJoCo's dual of suite/humanoid_CMU's step 68 a row of ``R = 9.6e5`` carries an impulse of
    3e-9 N s with a slack of the same size, and Clarabel's ``y_i ~ mu / s_i = 6e-4`` (m/s)
    would outweigh it raw while it is a tenth of the row's own velocity."""
    floor = FLOOR * max(1.0, float(np.abs(program.b).max(initial=0.0)), float(np.abs(program.c).max(initial=0.0)))
    zero, nonneg, socs = cone_row_indices(program)
    rows = [zero]
    if nonneg.size:
        s_measure, y_measure = conic_row_measures(program, x, y, s)
        rows.append(nonneg[s_measure[nonneg] <= y_measure[nonneg]])
    for index in socs:  # (count, dim) row indices of the cones of one dimension
        ns = np.linalg.norm(s[index], axis=1)
        ny = np.linalg.norm(y[index], axis=1)
        apex = (ns <= np.maximum(RATIO * ny, floor)) & (ns <= ny + floor)
        boundary = ~apex & (ny > np.maximum(RATIO * ns, floor))
        if boundary.any():
            first = index[np.flatnonzero(boundary)[0]]
            return f"second-order cone rows {first[0]}..{first[-1]} on the cone boundary (s and y both nonzero)"
        rows.append(index[apex].reshape(-1))
    return np.sort(np.concatenate(rows))  # row order, whatever the order of the cones


def _kkt_solve(program: ConicProgram, rows: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> np.ndarray | None:
    """``(x, y)`` from the KKT system of step 2, as the interior-point answer ``(x0, y0)`` plus
    the minimum-norm correction. Where the system is singular (more active rows than degrees
    of freedom: a box resting on four corners is statically indeterminate, Stewart 2000,
    SIAM Review 42(1) §4) the multipliers are not unique; the smallest change keeps those the
    interior-point method chose (strictly inside the cone), instead of an arbitrary one.
    None when no correction is found (see :func:`_dense_correction`)."""
    n, size = program.n, program.n + rows.size
    rhs = np.concatenate([-program.c, program.b[rows]])
    start = np.concatenate([x0, y0[rows]])
    if size <= DENSE_LIMIT:  # time steps are small: dense LAPACK beats assembling a sparse matrix
        K = np.zeros((size, size))
        dense_P = program._dense("P")
        K[:n, :n] = program.P.toarray() if dense_P is None else dense_P
        K[n:, :n] = program.A_rows_dense(rows)
        K[:n, n:] = K[n:, :n].T
        correction: np.ndarray | None = _dense_correction(K, rhs - K @ start)
    else:
        A_E: Any = program.A.tocsr()[rows]
        K_sparse: Any = sp.csc_matrix(sp.bmat([[program.P, A_E.T], [A_E, None]]))
        correction = regularized_kkt_solve(K_sparse, rhs - K_sparse @ start, n)
    if correction is None:
        return None
    z = start + correction
    if not np.all(np.isfinite(z)):
        return None
    y = np.zeros(program.m)
    y[rows] = z[n:]
    # rounding leaves multipliers of exactly-zero force at -1e-25; they belong to the cone
    nonneg = cone_row_indices(program)[1]
    tiny = 1e-14 * max(1.0, float(np.abs(y).max(initial=0.0)))
    y_nonneg = y[nonneg]
    y[nonneg[(y_nonneg < 0) & (y_nonneg > -tiny)]] = 0.0
    return np.concatenate([z[:n], y])


#: LAPACK's symmetric-indefinite routines for float64 arrays, looked up once.
_LAPACK = cast(tuple[Any, Any, Any, Any], la.get_lapack_funcs(("sytrf", "sytrs", "sycon", "lange"),
                                                              (np.zeros((1, 1)),)))


def _dense_correction(K: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """``K dz = residual`` for the symmetric KKT matrix ``K``: LDL^T (Bunch-Kaufman, LAPACK
    ``sytrf``/``sytrs``) when its estimated reciprocal condition number (``sycon``) is above
    :data:`RCOND_LDL`, where the solution is unique to working accuracy; otherwise the
    minimum-norm least-squares correction (:func:`~contactopt.solvers.polish.min_norm_solve`:
    LAPACK below 32 unknowns, a QDLDL iteration above), which keeps the interior-point multipliers on a statically
    indeterminate step. It costs several times the factorization, so it is kept for the steps
    that need it. (LAPACK's least squares ``gelsy`` was 78-94 % of a humanoid's step: at 35-41
    unknowns, 0.13 ms alone but 130 ms inside a simulation, OpenBLAS's threads spinning against
    each other on 2 shared cores.)"""
    sytrf, sytrs, sycon, lange = _LAPACK
    factor, pivots, info = sytrf(K, lower=1)
    if info == 0:
        rcond, info = sycon(factor, pivots, lange("1", K), lower=1)
        if info == 0 and rcond > RCOND_LDL:
            dz, info = sytrs(factor, pivots, residual, lower=1)
            if info == 0 and np.all(np.isfinite(dz)):
                return np.asarray(dz)
    return min_norm_solve(K, residual)


def refine(program: ConicProgram, solution: Solution) -> Solution:
    """``solution`` replaced by the active-set KKT point when that point's residuals are
    smaller (``refined=True``); otherwise ``solution`` with the reason in its message."""
    if not solution.status.usable or program.n == 0:
        return solution
    if not (program.b.any() or program.c.any()):  # homogeneous: x = 0, y = 0 is a KKT point, exactly
        x, y = np.zeros(program.n), np.zeros(program.m)  # (s = 0 in K, y = 0 in K*, P 0 + c + A'0 = 0)
        res, s = conic_check(program, x, y)
        return dataclasses.replace(solution, x=x, y=y, s=s, residuals=res, refined=True,
                                   message=f"{solution.message}; refined: b = 0 and c = 0, so x = 0")
    rows = active_rows(program, solution.x, solution.s, solution.y)
    if isinstance(rows, str):  # a block on the cone boundary: semismooth Newton instead (polish.py)
        return _polished(program, solution, rows) or dataclasses.replace(
            solution, message=f"{solution.message}; refinement skipped: {rows}")
    xy = _kkt_solve(program, rows, solution.x, solution.y)
    if xy is None:
        return dataclasses.replace(solution, message=f"{solution.message}; refinement skipped: KKT system not solvable")
    x, y = xy[: program.n], xy[program.n:]
    res, s = conic_check(program, x, y)
    if not res.relative < solution.residuals.relative:  # a misread active set: Newton on the natural map
        return _polished(program, solution, "active set not confirmed") or solution
    return dataclasses.replace(solution, x=x, y=y, s=s, residuals=res, refined=True,
                               message=f"{solution.message}; refined on {rows.size} active rows")


def _polished(program: ConicProgram, solution: Solution, why: str) -> Solution | None:
    """The semismooth Newton polish (:mod:`contactopt.solvers.polish`) when it lowers
    contactopt's residuals, else None."""
    polished = polish(program, solution.x, solution.y)
    if polished is None:
        return None
    x, y = polished
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    res, s = conic_check(program, x, y)
    if not res.relative < solution.residuals.relative:
        return None
    return dataclasses.replace(solution, x=x, y=y, s=s, residuals=res, refined=True,
                               message=f"{solution.message}; polished by semismooth Newton ({why})")
