"""The least-norm impulse among the solutions of a Stewart-Trinkle LCP on the face Lemke found.

A rigid grasp or a table on four legs is statically indeterminate: the impulses that hold it
are not unique (Tedrake 2022, "Anitescu's convex QP": "the solution to v' is unique, but the
impulses that produce it are not (think of a table with four legs)"). For the LCP of
:mod:`contactopt.formulations.lcp` the set of solutions is not even convex, and the velocity
is not unique either: Lemke's method ends at a *vertex* of it, which puts the whole load on as
few rows as the basis holds. A box gripped by two fingers (``problems/mjcf/tendon_gripper.xml``,
4 contact points per finger) is then held at one corner of each finger, and it swings about
the line through the two, where every other selection of the same LCP spreads the grip.

The selection here is the one a rigid-contact solver makes when it regularizes (the
constraint-force mixing of ODE and Bullet, MuJoCo's and Drake's impulse regularization): the
solutions of ``LCP(M + eps D, q)`` tend, as ``eps -> 0``, to the least-norm solution of a
monotone LCP (Tikhonov regularization: Facchinei & Pang, *Finite-Dimensional Variational
Inequalities and Complementarity Problems*, 2003, section 12.2), as the impact law of
Tedrake 2022 ("Impulsive collisions") takes the pseudoinverse of a singular ``n M^-1 n'``, the
least-norm impulse. Stewart-Trinkle's ``M`` is not monotone, so the least-norm problem is
taken over the polyhedron of solutions that share the *complementarity face* of Lemke's
answer ``(z0, w0)``: with ``S = {i : w0_i > 0}`` (strictly positive in its row's measure)
and ``F`` the rest,

    min  sum_i c_i z_i^2
    s.t. z_S = 0,   z_F >= 0,   (M z + q)_F = 0,   (M z + q)_S >= 0.

Every feasible point satisfies ``z_i w_i = 0`` row by row (``z_S = 0``, ``w_F = 0``), so it is
an exact solution of the step's LCP, and ``z0`` is feasible. The weights ``c_i`` are unit-free:
an impulse weighs its Delassus diagonal ``M_ii`` (the kinetic energy it alone would impart,
``z_i^2 M_ii``); a slack with a zero diagonal (slip speed ``gamma``, the friction-loss slip
``zeta``) weighs ``SLACK_WEIGHT / m_i``, ``m_i`` the mean diagonal of the rows it enters
(``gamma^2 / W`` is an energy too), a tie-break that keeps the program strictly convex.

When ``M_FF`` has full rank the face holds ``z0`` alone and it is returned as it is (bit for
bit: nothing changes where the LCP's solution is locally unique), and so it is when ``z0`` is
the least-norm point already, and when no direction along the face changes the velocity
(:func:`moves_nothing`: a box on four corners, whose load moves between them while the box
does not; the selection would cost a QP a step for the same motion; ``motion_only=False``
selects there too). Otherwise the face is ``z0 + N y`` (``N`` the null space of
``M_FF``, :func:`null_space`) within the bounds, and the QP in ``y`` is solved in closed form
when no bound is reached, else by Clarabel (with contactopt's refinement); its answer's active
set is then solved exactly (:func:`exact_on_active_set`), and the result is kept only when
contactopt's own LCP residuals (:func:`~contactopt.programs.residuals.lcp_residuals`) are at
``ACCEPT_LEVEL`` or at the solver's; otherwise the solver's answer is kept and the message says
why.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.programs import LCP, Solution, lcp_residuals
from contactopt.programs.conic import ConicProgram, Nonneg

if TYPE_CHECKING:
    from contactopt.formulations.base import SolveFunction

FloatArray = NDArray[np.float64]

#: A face direction whose velocity energy is below this fraction of its impulses' own
#: (Delassus diagonal) moves nothing (:func:`moves_nothing`).
MOTIONLESS_LEVEL = 1e-10
#: ``w_i`` above this fraction of its row's terms (``|q_i| + sum_j |M_ij z_j|``) is strictly
#: positive: its ``z_i`` stays 0. Lemke's rows that vanish come out at round-off (1e-17 against
#: terms of 1e-2 on the gripper), the separating ones at the size of their terms.
POSITIVE_LEVEL = 1e-9
#: The weight of a slack (zero diagonal) against the impulses: small enough not to move the
#: impulses beyond the tolerance of the QP, large enough to make the program strictly convex.
SLACK_WEIGHT = 1e-6
#: The largest relative LCP residual (:func:`~contactopt.programs.relative.lcp_relative`) a
#: selected answer may have when the vertex's is smaller: exact, up to round-off.
ACCEPT_LEVEL = 1e-12
#: A bound of the selection QP is active when its slack is below this fraction of its terms
#: (an interior-point answer at tolerance 1e-10 leaves active slacks many orders below the
#: inactive ones).
ACTIVE_LEVEL = 1e-7
#: Pivots of the rank-revealing QR below this fraction of the largest are zero: the gripper's
#: null directions (a duplicated slip column, a load shared between corners) come out at
#: 3e-16 and below, its other pivots above 2e-3 (step 80).
NULL_LEVEL = 1e-12
#: The objective's gradient along every null direction below this fraction of its terms: the
#: solver's answer is the least-norm point already (the planar models' out-of-plane directions,
#: unloaded on both sides), and it is returned as it is.
STATIONARY_LEVEL = 1e-12


def least_norm_on_face(program: LCP, solution: Solution, solve: SolveFunction, motion_only: bool = True) -> Solution:
    """The least-norm solution of ``program`` on the complementarity face of ``solution``
    (module docstring); ``solution`` itself when that face is a single point, when the
    solution is not usable, or when the selection does not pass contactopt's residuals."""
    if not solution.status.usable or program.n == 0:
        return solution
    start = time.perf_counter()
    M, q = np.asarray(program.M, dtype=np.float64), program.q
    z0 = solution.x
    w0 = M @ z0 + q
    row_scale = np.abs(q) + np.abs(M) @ np.abs(z0)
    separated = np.flatnonzero(w0 > POSITIVE_LEVEL * np.maximum(row_scale, np.finfo(float).tiny))
    free = np.setdiff1d(np.arange(program.n), separated)
    null = null_space(M[np.ix_(free, free)])
    if null.shape[1] == 0:  # the face is z0 alone
        return solution
    if motion_only and moves_nothing(M, free, null):  # the face's points share z0's velocity
        return solution
    y, how = _least_norm_step(M, z0, w0, free, separated, null, solve)
    if y is None or how == "stationary":
        return _kept(solution, how, time.perf_counter() - start, quiet=y is not None)
    z = exact_on_active_set(M, q, z0, w0, free, separated, null, y)
    elapsed = time.perf_counter() - start
    selected = lcp_residuals(program, z)
    if selected.relative > max(ACCEPT_LEVEL, solution.residuals.relative):
        return _kept(solution, f"the least-norm selection's residual {selected.relative:.1e} is above the "
                               f"solver's {solution.residuals.relative:.1e}", elapsed)
    return dataclasses.replace(solution, x=z, s=program.w(z), residuals=selected,
                               solve_time=solution.solve_time + elapsed,
                               message=_joined(solution.message, f"least-norm impulses on the solver's face "
                                                                 f"({null.shape[1]} free directions, {how})"))


def moves_nothing(M: FloatArray, free: NDArray[np.int_], null: FloatArray) -> bool:
    """Whether no direction along the face changes the velocity: the impulse rows (those with a
    positive diagonal; the slip speeds have none) enter the velocity through ``M^-1 J'``, and
    ``M``'s impulse block is the Delassus matrix ``J M^-1 J'``, so a direction ``d`` moves the
    velocity by an energy ``d_I' W_II d_I``. Where that is round-off against the diagonal's
    (a box resting on four corners: the load moves between them, the box does not), every
    point of the face is the same motion and the solver's answer is kept as it is."""
    diagonal = np.diag(M)[free]
    impulse = diagonal > 0.0
    if not impulse.any():
        return True
    directions = null[impulse]
    block = M[np.ix_(free[impulse], free[impulse])]
    energy = np.abs(np.einsum("ik,ij,jk->k", directions, block, directions))
    scale = np.einsum("ik,i,ik->k", directions, diagonal[impulse], directions)
    return bool(np.all(energy <= MOTIONLESS_LEVEL * np.maximum(scale, np.finfo(float).tiny)))


def null_space(matrix: FloatArray) -> FloatArray:
    """Orthonormal columns spanning the null space of a square ``matrix``: the trailing columns
    of ``Q`` in the rank-revealing QR ``matrix' P = Q R`` (Golub & Van Loan, *Matrix
    Computations*, 4th ed., section 5.4.2), past the rank, ``|R_kk| > NULL_LEVEL |R_00|``.
    (A third of an SVD's time at these sizes, and it needs no singular vectors.)"""
    size = matrix.shape[0]
    if size == 0:
        return np.zeros((0, 0))
    Q, R, _ = la.qr(matrix.T, pivoting=True)
    diagonal = np.abs(np.diagonal(R))
    rank = int(np.count_nonzero(diagonal > NULL_LEVEL * diagonal[0])) if diagonal[0] > 0.0 else 0
    return np.ascontiguousarray(Q[:, rank:])


def _least_norm_step(M: FloatArray, z0: FloatArray, w0: FloatArray, free: NDArray[np.int_],
                     separated: NDArray[np.int_], null: FloatArray,
                     solve: SolveFunction) -> tuple[FloatArray | None, str]:
    """``y`` minimizing ``sum c_i (z0 + N y)_i^2`` over ``z0_F + N y >= 0``, ``w0_S + M_SF N y >= 0``
    (``N = null``), with how it was found; None and why when it was not."""
    weights = impulse_weights(M, free)
    hessian = null.T @ (weights[:, None] * null)
    gradient = null.T @ (weights * z0[free])
    rows = np.vstack([null, M[np.ix_(separated, free)] @ null])
    floor = np.concatenate([z0[free], w0[separated]])
    moved = np.abs(rows).max(axis=1, initial=0.0) > 0.0  # rows the null space does not move stay as they are
    rows, floor = rows[moved], floor[moved]
    if np.all(np.abs(gradient) <= STATIONARY_LEVEL * (np.abs(null).T @ np.abs(weights * z0[free]))):
        return np.zeros(null.shape[1]), "stationary"  # z0 is the least-norm point already (y = 0 feasible)
    unconstrained = np.asarray(-np.linalg.solve(hessian, gradient), dtype=np.float64)
    if np.all(floor + rows @ unconstrained >= 0.0):  # no bound is reached: the closed form
        return unconstrained, "closed form"
    qp = ConicProgram(P=sp.csc_matrix(hessian), c=gradient, A=sp.csc_matrix(-rows), b=floor,
                      cones=(Nonneg(rows.shape[0]),), metadata={"selection": "least-norm impulses on an LCP face"})
    answer = solve(qp, "clarabel")
    if not answer.status.usable:
        return None, f"the least-norm selection's QP ended {answer.status.value}"
    return answer.x, "QP"


def exact_on_active_set(M: FloatArray, q: FloatArray, z0: FloatArray, w0: FloatArray, free: NDArray[np.int_],
                        separated: NDArray[np.int_], null: FloatArray, y: FloatArray) -> FloatArray:
    """The selection solved exactly on the active set of ``z0 + N y`` (the "crossover" of an
    interior-point answer, Nocedal & Wright, *Numerical Optimization*, 2nd ed., section 16.1):
    with ``Z`` the free ``z_i`` and ``T`` the separated ``w_j`` that ``y`` brings to 0 (within
    ``ACTIVE_LEVEL`` of their terms), the weighted least-norm ``z_K`` (``K = F \\ Z``) of
    ``M_{F+T, K} z_K = -q_{F+T}``, ``z_K = C^{-1/2} (M_{F+T,K} C^{-1/2})^+ (-q_{F+T})``: the rows
    of ``w`` that vanish do so to round-off, not to the QP's tolerance."""
    moved_z = z0[free] + null @ y
    moved_w = w0[separated] + M[np.ix_(separated, free)] @ (null @ y)
    z_terms = np.abs(z0[free]) + np.abs(null) @ np.abs(y)
    w_terms = np.abs(w0[separated]) + np.abs(M[np.ix_(separated, free)] @ null) @ np.abs(y)
    kept = free[moved_z > ACTIVE_LEVEL * z_terms]
    rows = np.concatenate([free, separated[moved_w <= ACTIVE_LEVEL * w_terms]])
    root = np.sqrt(impulse_weights(M, kept, columns=kept))
    scaled, *_ = np.linalg.lstsq(M[np.ix_(rows, kept)] / root, -q[rows], rcond=None)
    z = np.zeros_like(z0)
    z[kept] = np.maximum(scaled / root, 0.0)  # z_K > 0 by construction; a round-off sign is set to 0
    return z


def impulse_weights(M: FloatArray, free: NDArray[np.int_], columns: NDArray[np.int_] | None = None) -> FloatArray:
    """``c_i`` of the variables ``columns`` (default ``free``): an impulse's Delassus diagonal
    ``M_ii``; a slack (zero diagonal) ``SLACK_WEIGHT`` over the mean diagonal of the ``free``
    rows it enters."""
    columns = free if columns is None else columns
    diagonal = np.diagonal(M)[columns]
    weights = diagonal.copy()
    slack = diagonal <= 0.0
    if slack.any():
        coupling = np.abs(M[np.ix_(free, columns[slack])]) > 0.0
        row_diagonal = np.diagonal(M)[free]
        positive = np.where(row_diagonal > 0.0, row_diagonal, 0.0)
        mean = (positive @ coupling) / np.maximum(coupling.sum(axis=0), 1)
        fallback = float(positive.max(initial=0.0)) or 1.0
        weights[slack] = SLACK_WEIGHT / np.where(mean > 0.0, mean, fallback)
    return weights


def _kept(solution: Solution, why: str, elapsed: float, quiet: bool = False) -> Solution:
    message = solution.message if quiet else _joined(solution.message, f"{why}: the solver's answer kept")
    return dataclasses.replace(solution, solve_time=solution.solve_time + elapsed, message=message)


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
