"""Semismooth Newton polish of an interior-point answer whose second-order cone blocks sit on
the cone boundary (a sliding contact: both the slack ``s`` and the dual ``y`` nonzero), where
the active-set refinement of :mod:`contactopt.solvers.refine` cannot fix the rows.

The KKT conditions of ``min 1/2 x'Px + c'x  s.t.  Ax + s = b, s in K`` (K a product of Zero,
Nonneg and SOC cones, self-dual but for Zero) are the natural-map equations (Facchinei & Pang,
*Finite-Dimensional Variational Inequalities and Complementarity Problems*, 2003, §1.5;
Hayashi, Yamashita & Fukushima 2005 for second-order cones)::

    P x + c + A' y = 0
    s_Z = 0                                   on Zero rows (s = b - A x)
    y_K - Pi_K(y_K - s_K) = 0                 on Nonneg and SOC blocks

``Pi`` the Euclidean projection onto the cone (SOC: ``z -> 0`` below the polar cone, ``z``
inside, ``(z0 + |z1|) / 2 (1, z1 / |z1|)`` otherwise). ``Pi`` is strongly semismooth, so
Newton's method with an element of its generalized Jacobian converges quadratically from the
interior-point point, which is already close (Qi & Sun 1993): a few iterations take a
sliding contact's ``O(sqrt(tol))`` error to rounding. Steps are damped by halving until the
residual norm decreases; the caller accepts the result only if contactopt's own residuals
fall.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import qdldl  # type: ignore[import-not-found]
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray
from scipy.sparse.csgraph import structural_rank

from contactopt.programs import ConicProgram
from contactopt.programs.conic import cone_row_indices

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

#: Newton systems up to this size are polished; larger programs are left as they are.
SIZE_LIMIT = 600
#: Systems up to this size are solved dense (LAPACK); larger ones sparse (SuperLU, QDLDL). Above
#: it OpenBLAS runs its threads, which spin against each other on a loaded machine: on 2 shared
#: cores ``gelsy`` took 0.12 ms at size 64 and 244 ms at 72, ``getrf`` 260 ms at 150 (one
#: thread: 0.2 ms and 0.3 ms), 78-94 % of a humanoid's step.
DENSE_LIMIT = 64
#: Reciprocal condition number above which a dense Newton system is solved by LU (LAPACK
#: ``getrf``, fast and single-threaded at these sizes) rather than by :func:`min_norm_solve`.
RCOND_LU = 1e-9
#: LAPACK's general LU routines for float64 arrays, looked up once.
_LAPACK = cast(tuple[Any, Any, Any, Any], la.get_lapack_funcs(("getrf", "getrs", "gecon", "lange"),
                                                              (np.zeros((1, 1)),)))
#: Dense systems below this size take LAPACK's ``gelsy`` in :func:`min_norm_solve`: inside a
#: simulation on 2 shared cores it took 0.02-0.04 ms (median) below 32 unknowns and 117 ms
#: (median) from 32 on (OpenBLAS's threads), where the QDLDL iteration takes 0.3 ms.
GELSY_LIMIT = 32
_GELSY: Any = cast(list[Any], la.get_lapack_funcs(("gelsy",), (np.zeros((1, 1)),)))[0]
#: ``delta`` of :func:`min_norm_solve` relative to the largest entry of ``K`` squared, and its
#: most sweeps.
MIN_NORM_REGULARIZATION, MIN_NORM_SWEEPS = 1e-8, 40
#: ``delta`` of :func:`regularized_kkt_solve`, relative to the largest entry of ``K``, and its
#: refinement sweeps: a component of eigenvalue ``sigma`` shrinks by ``delta / (sigma + delta)``
#: per sweep.
REGULARIZATION, REFINEMENT_SWEEPS = 1e-9, 12


def min_norm_solve(K: Any, rhs: FloatArray) -> FloatArray:
    """The minimum-norm least-squares solution of ``K z = rhs`` (``K`` square, dense or sparse,
    possibly singular): LAPACK's ``gelsy`` below :data:`GELSY_LIMIT` dense unknowns, otherwise
    without dense LAPACK, by iterated Tikhonov regularization:
    ``z += K' (K K' + delta I)^{-1} (rhs - K z)`` from ``z = 0`` stays in the range of ``K'`` and
    converges to ``K^+ rhs``, the component of singular value ``sigma`` at the rate
    ``delta / (sigma^2 + delta)`` per sweep (Engl, Hanke & Neubauer, *Regularization of Inverse
    Problems*, 1996, §5.1). Each sweep solves the quasi-definite augmented system
    ``[[I, K'], [K, -delta I]]``, factorized once by QDLDL (:func:`_quasi_definite_solver`).
    Components with ``sigma^2`` far below ``delta = 1e-8 |K|_max^2`` are cut, as a rank cut
    (a smaller ``delta`` amplifies the rounding of an inconsistent right-hand side by
    ``1 / delta``); the sweeps stop when the correction no longer shrinks."""
    size = K.shape[0]
    if size == 0:
        return np.zeros(0)
    if isinstance(K, np.ndarray) and size < GELSY_LIMIT:
        return _gelsy_solve(K, rhs)
    scale = max(float(abs(K).max()), 1e-300)
    delta = MIN_NORM_REGULARIZATION * scale * scale
    sparse = sp.issparse(K)  # a flag: the type guard would narrow ``K`` to scipy's abstract base
    if sparse:
        K = sp.csc_matrix(K)
        solver = _quasi_definite_solver(sp.triu(sp.bmat([[sp.eye(size), K.T], [K, -delta * sp.eye(size)]]),
                                                format="csc"))
    else:
        solver = _quasi_definite_solver(_augmented_upper(K, delta))
    if solver is None:  # a zero pivot from rounding: the SVD answers the same question
        dense: FloatArray = K.toarray() if sparse else K
        return np.asarray(np.linalg.lstsq(dense, rhs, rcond=None)[0])
    z = np.zeros(size)
    last = np.inf
    for _ in range(MIN_NORM_SWEEPS):
        step = solver.solve(np.concatenate([np.zeros(size), rhs - K @ z]))[:size]
        z = z + step
        change = float(np.abs(step).max(initial=0.0))
        if change <= 1e-15 * float(np.abs(z).max(initial=0.0)) or not change < last:
            break
        last = change
    return z


def _gelsy_solve(K: FloatArray, rhs: FloatArray) -> FloatArray:
    """The minimum-norm least-squares solution by LAPACK's complete orthogonal factorization
    ``gelsy`` (QR with column pivoting; rank cut at ``eps * size`` relative, NumPy's ``lstsq``
    default): the SVD's answer at half its cost, for systems below :data:`GELSY_LIMIT`."""
    size = K.shape[0]
    lwork = 4 * size * (size + 1) + 1  # at least the minimum 4 size + 1, room for blocked QR
    _, solution, _, _, info = _GELSY(K, rhs.reshape(size, 1), np.zeros(size, dtype=np.int32),
                                     np.finfo(np.float64).eps * size, lwork)
    if info != 0:  # an illegal argument: the SVD answers the same question
        return np.asarray(np.linalg.lstsq(K, rhs, rcond=None)[0])
    return np.asarray(solution[:, 0])


def _augmented_upper(K: FloatArray, delta: float) -> sp.csc_matrix:
    """The upper triangle of ``[[I, K'], [K, -delta I]]`` in CSC, assembled from the nonzeros of
    the dense ``K`` directly (scipy's ``csc_matrix`` of a dense array and ``triu`` cost 0.3 ms
    at 80 rows, the solve a few microseconds): column ``size + j`` holds row ``j`` of ``K``
    above ``-delta`` on the diagonal."""
    size = K.shape[0]
    row_of_K, column_of_K = np.nonzero(K)  # row-major: grouped by j = row_of_K, i ascending
    diagonal = np.arange(size)
    columns = np.concatenate([row_of_K, diagonal])  # j of column size + j
    rows = np.concatenate([column_of_K, size + diagonal])
    order = np.lexsort((rows, columns))
    counts = np.bincount(columns, minlength=size)
    indptr = np.concatenate([np.arange(size + 1), size + np.cumsum(counts)])
    indices = np.concatenate([diagonal, rows[order]])
    data = np.concatenate([np.ones(size), np.concatenate([K[row_of_K, column_of_K], np.full(size, -delta)])[order]])
    return sp.csc_matrix((data, indices, indptr), shape=(2 * size, 2 * size))


def _quasi_definite_solver(upper: sp.csc_matrix) -> Any:
    """QDLDL's factorization of a symmetric quasi-definite matrix given by its upper triangle, or
    None on a zero pivot (impossible in exact arithmetic: Vanderbei, "Symmetric quasidefinite
    matrices", SIAM J. Optim. 5(1), 1995)."""
    try:
        return qdldl.Solver(upper, upper=True)
    except ValueError:
        return None


def regularized_kkt_solve(K: Any, rhs: FloatArray, n: int) -> FloatArray | None:
    """A solution of the symmetric KKT system ``K z = rhs`` (``K = [[P, A'], [A, 0]]``, ``P``
    positive semidefinite on the first ``n`` rows), possibly singular, by sparse algebra only:
    the quasi-definite ``K_delta = K + diag(delta I_n, -delta I_m)`` has an ``LDL^T``
    factorization for every symmetric ordering (Vanderbei, "Symmetric quasidefinite matrices",
    SIAM J. Optim. 5(1), 1995), computed once by QDLDL, and iterative refinement
    ``z += K_delta^{-1} (rhs - K z)`` from ``z = 0`` converges to a solution of a consistent
    system while leaving the null space of ``K`` (the multipliers a statically indeterminate
    step does not fix) nearly untouched: the least change, as the minimum-norm solution of
    :func:`min_norm_solve` (the regularized inner iteration of OSQP and of the proximal method
    of multipliers). Returns the iterate of smallest residual, or None when the factorization
    fails."""
    size = K.shape[0]
    delta = REGULARIZATION * max(1.0, float(abs(K).max()))
    shift = np.full(size, -delta)
    shift[:n] = delta
    solver = _quasi_definite_solver(sp.triu(K + sp.diags(shift), format="csc"))
    if solver is None:
        return None
    best, best_norm = np.zeros(size), float(np.linalg.norm(rhs))
    z = best
    for _ in range(REFINEMENT_SWEEPS):
        z = z + solver.solve(rhs - K @ z)
        norm = float(np.linalg.norm(rhs - K @ z))
        if not norm < best_norm:  # inconsistent or stalled: the null-space part grows
            break
        best, best_norm = z, norm
        if norm <= 1e-15 * max(1.0, float(np.abs(rhs).max(initial=0.0))):
            break
    return best


def _soc_projections(z: FloatArray, jacobian: bool) -> tuple[FloatArray, FloatArray | None]:
    """``Pi(z_i)`` of (count, dim) points, one second-order cone each, and (count, dim, dim)
    elements of the generalized Jacobians: ``z`` inside the cone (``|z1| <= z0``): ``z`` and
    ``I``; in the polar cone (``|z1| <= -z0``): 0 and 0; otherwise, with ``w = z1 / |z1|``,
    ``(z0 + |z1|) / 2 (1, w)`` and ``1/2 [[1, w'], [w, (1 + z0/|z1|) I - (z0/|z1|) w w']]``."""
    count, dim = z.shape
    z0, z1 = z[:, 0], z[:, 1:]
    t = np.sqrt(np.einsum("ij,ij->i", z1, z1))
    inside, polar = t <= z0, t <= -z0
    side = ~(inside | polar)
    safe_t = np.where(side, t, 1.0)  # t > 0 on the side (t = 0 is inside or polar)
    w = z1 / safe_t[:, None]
    value = np.empty_like(z)
    value[:, 0] = 1.0
    value[:, 1:] = w
    value *= (0.5 * (z0 + t))[:, None]
    value[inside] = z[inside]
    value[polar] = 0.0
    if not jacobian:
        return value, None
    ratio = z0 / safe_t
    jac = np.empty((count, dim, dim))
    jac[:, 0, 0] = 1.0
    jac[:, 0, 1:] = w
    jac[:, 1:, 0] = w
    outer = w[:, :, None] * w[:, None, :]
    jac[:, 1:, 1:] = (1.0 + ratio)[:, None, None] * np.eye(dim - 1) - ratio[:, None, None] * outer
    jac *= 0.5
    jac[inside] = np.eye(dim)
    jac[polar] = 0.0
    return value, jac


def _residual(program: ConicProgram, P: Any, A: Any, x: FloatArray, y: FloatArray,
              jacobian: bool, top: tuple[IntArray, IntArray, FloatArray] | None = None) -> tuple[FloatArray, Any]:
    """The natural map ``F(x, y)`` and, if asked, an element of its generalized Jacobian,
    vectorized over the cones. A Zero row is written ``y - Pi(y - s)`` with ``Pi`` the identity
    (the projection onto the free dual cone), which is ``s``: every row then reads
    ``y - Pi(y - s)`` with a block-diagonal ``D = dPi``, and the Jacobian is
    ``[[P, A'], [-D A, I - D]]``: dense when ``P`` and ``A`` are arrays, sparse CSC otherwise
    (``top``: the triplets of ``[P, A']``, :func:`_top_block`)."""
    n, m = program.n, program.m
    zero, nonneg, socs = cone_row_indices(program)
    s = program.b - A @ x
    z = y - s
    projected = np.empty(m)
    projected[zero] = z[zero]
    projected[nonneg] = np.maximum(z[nonneg], 0.0)
    entries = [(zero, zero, np.ones(zero.size)), (nonneg, nonneg, (z[nonneg] > 0).astype(np.float64))]
    for rows in socs:  # (count, dim) row indices of the cones of one dimension
        value, jac = _soc_projections(z[rows], jacobian)
        projected[rows] = value
        if jac is not None:
            dim = rows.shape[1]
            entries.append((np.repeat(rows, dim, axis=1).ravel(), np.tile(rows, dim).ravel(), jac.ravel()))
    F = np.empty(n + m)
    F[:n] = P @ x + program.c + (A.T @ y if top is None else program.A_T @ y)
    F[n:] = y - projected
    if not jacobian:
        return F, None
    d_rows, d_cols, d_values = (np.concatenate(part) for part in zip(*entries, strict=True))
    if top is not None:  # COO triplets: scipy's bmat costs ~2 ms a call
        DA = (sp.csr_matrix((d_values, (d_rows, d_cols)), shape=(m, m)) @ A).tocoo()
        top_rows, top_cols, top_values = top
        diagonal = n + np.arange(m)
        rows = np.concatenate([top_rows, n + DA.row, diagonal, n + d_rows])
        cols = np.concatenate([top_cols, DA.col, diagonal, n + d_cols])
        values = np.concatenate([top_values, -DA.data, np.ones(m), -d_values])
        jacobian_matrix = sp.csc_matrix((values, (rows, cols)), shape=(n + m, n + m))  # duplicates summed
        jacobian_matrix.eliminate_zeros()  # I - D = 0 on rows where D = 1: structural_rank must see it
        return F, jacobian_matrix
    D_dense = np.zeros((m, m))
    D_dense[d_rows, d_cols] = d_values
    Jm = np.empty((n + m, n + m))
    Jm[:n, :n] = P
    Jm[:n, n:] = A.T
    Jm[n:, :n] = -(D_dense @ A)
    Jm[n:, n:] = np.eye(m) - D_dense
    return F, Jm


def _top_block(P: Any, A: Any) -> tuple[IntArray, IntArray, FloatArray]:
    """The COO triplets of ``[P, A']``, the rows of the Jacobian that do not change."""
    P_coo, A_coo = P.tocoo(), A.tocoo()
    return (np.concatenate([P_coo.row, A_coo.col]), np.concatenate([P_coo.col, P.shape[1] + A_coo.row]),
            np.concatenate([P_coo.data, A_coo.data]))


def _newton_step(Jm: Any, F: FloatArray) -> FloatArray | None:
    """``Jm step = -F``: the minimum-norm solution of a dense system, SuperLU's of a sparse one
    (None when it is singular: structurally singular matrices are not handed to SuperLU, whose
    factorization of one calls BLAS with illegal sizes, see :mod:`contactopt.solvers.refine`)."""
    if isinstance(Jm, np.ndarray):  # LU when well conditioned (a few microseconds), else least change
        getrf, getrs, gecon, lange = _LAPACK
        factor, pivots, info = getrf(Jm)
        if info == 0:
            rcond, info = gecon(factor, lange("1", Jm), norm="1")
            if info == 0 and rcond > RCOND_LU:
                step, info = getrs(factor, pivots, -F)
                if info == 0:
                    return np.asarray(step)
        return min_norm_solve(Jm, -F)
    if structural_rank(Jm) < Jm.shape[0]:
        return None
    try:
        return np.asarray(spla.splu(Jm).solve(-F))
    except RuntimeError:
        return None


def polish(program: ConicProgram, x: FloatArray, y: FloatArray, iterations: int = 20) -> tuple[FloatArray,
                                                                                                FloatArray] | None:
    """``(x, y)`` after semismooth Newton on the natural map (module docstring), or None when
    the program is too large or Newton makes no progress."""
    n, m = program.n, program.m
    if n + m > SIZE_LIMIT or any(cone.kind not in ("zero", "nonneg", "soc") for cone in program.cones):
        return None
    dense = n + m <= DENSE_LIMIT
    P, A = (program.P.toarray(), program.A.toarray()) if dense else (program.P, program.A)
    top = None if dense else _top_block(P, A)
    x, y = np.array(x, dtype=np.float64), np.array(y, dtype=np.float64)
    F, Jm = _residual(program, P, A, x, y, True, top)
    norm = float(np.linalg.norm(F))
    start = norm
    for _ in range(iterations):
        step = _newton_step(Jm, F)
        if step is None or not np.all(np.isfinite(step)):
            break
        scale = 1.0
        while scale > 1e-4:
            x_new, y_new = x + scale * step[:n], y + scale * step[n:]
            F_new, _ = _residual(program, P, A, x_new, y_new, False, top)
            if float(np.linalg.norm(F_new)) < norm:
                break
            scale *= 0.5
        else:
            break
        x, y = x_new, y_new
        F, Jm = _residual(program, P, A, x, y, True, top)
        norm = float(np.linalg.norm(F))
        if norm <= 1e-15 * max(1.0, float(np.abs(program.c).max(initial=0.0))):
            break
    return (x, y) if norm < start else None
