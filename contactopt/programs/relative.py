"""Residuals judged where they live: each one relative to the terms of its own row.

A residual means something only next to the numbers it was computed from. A global scale
(``max(1, |q|, |b|, ...)``) mixes rows of different units (velocities and impulses in one
LCP) and makes a verdict depend on the units a scene is written in: a 1 g box whose friction
rows carry impulses of 1e-5 N s was judged against the 200 m/s of a far corner's ``phi / h``.
Here every residual is a componentwise backward error (Oettli and Prager, 1964; Higham,
"Accuracy and Stability of Numerical Algorithms", 2nd ed., section 7.2): the violation of a
row divided by the sum of the absolute values of the terms that row adds up,

    primal row i:        |viol_i| / (|b_i| + sum_j |A_ij| X_j)
    stationarity col j:  |(P x + c + A^T y)_j| / (|c_j| + sum_k |P_jk| |x_k| + sum_i |A_ij| |y_i|)

where ``X_j = |x_j| + |c_j| / P_jj`` adds to ``|x_j|`` the size one step of the applied forces
gives the variable (``v_free`` for a velocity, ``m g h``-sized impulses for an impulse;
:func:`data_reach`): a
contact at rest has ``phi ~ 0`` and ``v ~ 0``, and its row must still be read in the
velocity unit the step moves things by, not in the round-off of zero. A variable whose
``X_j`` is empty (zero, untouched by any force) takes the geometric mean of the others'.
The stationarity scale ``T_j`` uses ``X`` too (``sum_k |P_jk| X_k`` in place of ``|P x|``), so
that a program whose multipliers are all zero at the optimum still has a force unit. A second-order cone is
one geometric object: its rows share the largest of their scales. Dual variables are
measured by what they do: ``y_i`` weighs ``|y_i| W_ii / S_i``, the change it makes in its own
row (``W_ii = sum_j A_ij^2 / P_jj``, the diagonal of the Delassus operator ``A P^-1 A^T`` of a
diagonal ``P``) against that row's scale; complementarity of a cone is met when either side is negligible
in its own measure, or (second-order cones) when both lie on the boundary, opposite
(``|s . y| / (|s| |y|)`` small). The LCP ``w = M z + q`` is read the same way, row by row,
with ``Z_j = |z_j| + |q_j| / M_jj``.

Every quantity is homogeneous: multiplying a row, a variable or the objective by a positive
constant (a change of units) leaves each ratio unchanged, so the verdict of a step does not
depend on grams or tonnes, millimetres or kilometres. A floor of :data:`FLOOR` times the
largest scale of the same family keeps rows that are exactly empty from dividing by zero.

A diverging iterate on an infeasible program (``|x| ~ 1e11`` leaving a row violated by 0.5)
passes a backward-error test, since ``0.5`` is round-off next to ``1e11``;
:func:`conic_data_violation` measures the rows against the magnitudes the data alone implies
(``X0_j``: the larger of :func:`data_reach` and ``max_i |b_i| / |A_ij|``) for the judge to
catch it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.programs.conic import ConicProgram, cone_row_indices
from contactopt.programs.csc import csc, to_csc
from contactopt.programs.lcp import LCP

FloatArray = NDArray[np.float64]

__all__ = [
    "FLOOR",
    "conic_data_violation",
    "conic_relative",
    "conic_relative_terms",
    "conic_row_measures",
    "data_reach",
    "filled_reach",
    "lcp_data_violation",
    "lcp_reach",
    "lcp_relative",
]

#: A scale is never taken below this fraction of the largest scale of its family (rows,
#: columns): an exactly empty row divides by the floor, not by zero.
FLOOR = 1e-10


def _absolute(matrix: sp.spmatrix, program: object, key: str) -> sp.csc_matrix:
    """``|matrix|`` (same pattern), cached on the (frozen) program; built from the canonical
    arrays directly (scipy's checking constructor costs more than the step's own products)."""
    cached = program.__dict__.get(key)
    if cached is None:
        canonical = to_csc(matrix)
        cached = csc(np.abs(canonical.data), canonical.indices, canonical.indptr, canonical.shape)
        object.__setattr__(program, key, cached)  # a cache on a frozen program
    return cached


def _floored(scale: FloatArray) -> FloatArray:
    """``scale`` with :data:`FLOOR` times its largest entry as a floor (all empty: ones; the
    floor never goes below the smallest normal number, so that its reciprocal is finite)."""
    top = float(scale.max(initial=0.0))
    if not top > 0.0:
        return np.ones_like(scale)
    return np.maximum(scale, max(FLOOR * top, 1.0 / np.finfo(np.float64).max))


def _share(values: FloatArray, weight: FloatArray) -> FloatArray:
    """``values * weight`` with exact zeros kept (a weight may overflow to inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(values == 0.0, 0.0, values * weight)


def filled_reach(reach: FloatArray, curvature: FloatArray | None = None) -> FloatArray:
    """``reach`` with its empty entries (below :data:`FLOOR` times the largest: a variable at
    zero that no force moves) set from the others: the program's own unit for a variable, so
    that its rows are not read in round-off (a ball at rest whose impact program's
    multipliers are all zero still has the velocity unit of its other variables).

    An empty entry takes the geometric mean of the defined reaches, except one with
    curvature (``P_jj > 0``) when defined variables with curvature exist: it takes the reach at
    which it carries their geometric-mean energy ``E = P_kk X_k^2`` (the objective's unit, the
    one all variables share), ``sqrt(E / P_jj)``. Reaches alone would mix units: SAP's
    program puts velocities (P = a mass) beside constraint slacks of ``5e-11`` (P = 6.6e7 for
    a 1 ug box), and a slack given a velocity's size weighs 1e8 times the objective."""
    top = float(reach.max(initial=0.0))
    defined = reach > FLOOR * top
    if not top > 0.0 or defined.all():
        return reach
    out = reach.copy()
    out[~defined] = float(np.exp(np.log(reach[defined]).mean()))
    if curvature is not None:
        curved = curvature > 0.0
        known = defined & curved
        if known.any():
            # in logarithms: P_jj X_j^2 over- or underflows for extreme units
            log_energy = float((np.log(curvature[known]) + 2.0 * np.log(reach[known])).mean())
            fill = ~defined & curved
            out[fill] = np.exp(0.5 * (log_energy - np.log(curvature[fill])))
    return out


def data_reach(program: ConicProgram) -> FloatArray:
    """The size the data give each variable: ``|c_j| / P_jj``, what one step of the applied
    forces moves it by (0 where the variable has no curvature or no force)."""
    return _diagonal_reach(_P_diagonal(program), np.abs(program.c))


def _driven_reach(program: ConicProgram, abs_A: sp.csc_matrix) -> FloatArray:
    """:func:`data_reach`; where it is empty for every variable (``c = 0``: no force moves
    anything, a robot at rest without gravity), the size the rows ask of each variable,
    ``max_i |b_i| / |A_ij|`` (as :func:`lcp_reach` does for an LCP): such a program's optimum is
    ``x = 0`` up to what the rows push, and without this its only unit would be the iterate's
    own round-off (gymnasium's pusher at rest: ``|x| ~ 1e-18``, a gap of ``4e-37`` read as
    13 % of itself)."""
    reach = data_reach(program)
    if reach.any():
        return reach
    return column_max(abs_A, np.abs(program.b))


def _P_diagonal(program: ConicProgram) -> FloatArray:
    """``diag(P)``, read-only, cached on the (frozen) program (three readings per check)."""
    cached = program.__dict__.get("_P_diagonal")
    if cached is None:
        cached = program.P.diagonal()
        cached.setflags(write=False)
        object.__setattr__(program, "_P_diagonal", cached)  # a cache on a frozen program
    return cached


def _diagonal_reach(diagonal: FloatArray, numerator: FloatArray) -> FloatArray:
    """``numerator / diagonal`` where the diagonal is positive, else 0."""
    out = np.zeros_like(numerator)
    positive = diagonal > 0.0
    out[positive] = numerator[positive] / diagonal[positive]
    return out


def _soc_ratio(s: FloatArray, y: FloatArray) -> FloatArray:
    """``|s . y| / (|s| |y|)`` per row of (count, dim) blocks; 0 where a side is zero."""
    dot = np.abs(np.einsum("cd,cd->c", s, y))
    norms = np.linalg.norm(s, axis=1) * np.linalg.norm(y, axis=1)
    return np.where(norms > 0.0, dot / np.where(norms > 0.0, norms, 1.0), 0.0)


def conic_relative(program: ConicProgram, x: FloatArray, y: FloatArray, s: FloatArray,
                   stationarity: FloatArray, objective_terms: tuple[float, float, float], gap: float) -> float:
    """The worst relative residual of a finite ``(x, y)`` with ``s = b - A x`` and
    ``stationarity = P x + c + A^T y`` (see the module docstring); ``objective_terms`` are
    ``(x'Px, c'x, b'y)``: the duality gap is measured against their absolute values plus
    ``sum_j X_j T_j`` (an optimum whose objective is zero, a box at rest, still has a size)."""
    return max(conic_relative_terms(program, x, y, s, stationarity, objective_terms, gap).values())


def conic_relative_terms(program: ConicProgram, x: FloatArray, y: FloatArray, s: FloatArray,
                         stationarity: FloatArray, objective_terms: tuple[float, float, float],
                         gap: float) -> dict[str, float]:
    """:func:`conic_relative` term by term: the worst ``stationarity``, ``primal`` (rows of
    ``s`` outside ``K``), ``dual`` (``y`` outside ``K*``), ``complementarity`` and ``gap``, each
    relative to its own row (which one failed, when a step is judged)."""
    abs_y = np.abs(y)
    reach, row_scale, column_scale, mobility, share = _scales(program, x, abs_y)
    y_weight = _weight(mobility, share, row_scale)

    terms = {"stationarity": float((np.abs(stationarity) / column_scale).max(initial=0.0)),
             "primal": 0.0, "dual": 0.0, "complementarity": 0.0, "gap": 0.0}
    zero, nonneg, socs = cone_row_indices(program)
    if zero.size:
        terms["primal"] = float((np.abs(s[zero]) / row_scale[zero]).max())
    if nonneg.size:
        s_rel = s[nonneg] / row_scale[nonneg]
        y_rel = _share(y[nonneg], y_weight[nonneg])
        terms["primal"] = max(terms["primal"], float(-s_rel.min()))
        terms["dual"] = max(terms["dual"], float(-y_rel.min()))
        terms["complementarity"] = float(np.minimum(np.abs(s_rel), np.abs(y_rel)).max())
    for rows in socs:  # (count, dim) row indices per SOC dimension
        s_block, y_block = s[rows], y[rows]
        block_scale = row_scale[rows].max(axis=1)
        block_weight = _weight(mobility[rows].max(axis=1), share[rows].max(axis=1), block_scale)
        s_norm = np.linalg.norm(s_block, axis=1)
        y_norm = np.linalg.norm(y_block, axis=1)
        primal = (np.linalg.norm(s_block[:, 1:], axis=1) - s_block[:, 0]) / block_scale
        dual = _share(np.linalg.norm(y_block[:, 1:], axis=1) - y_block[:, 0], block_weight)
        complementarity = np.minimum(np.minimum(s_norm / block_scale, _share(y_norm, block_weight)),
                                     _soc_ratio(s_block, y_block))
        terms["primal"] = max(terms["primal"], float(primal.max()))
        terms["dual"] = max(terms["dual"], float(dual.max()))
        terms["complementarity"] = max(terms["complementarity"], float(complementarity.max()))
    size = sum(abs(term) for term in objective_terms) + float(reach @ column_scale)
    if size > 0.0:  # the objective's terms, or what they amount to at the variables' reach
        terms["gap"] = abs(gap) / size
    return terms


def _scales(program: ConicProgram, x: FloatArray, abs_y: FloatArray) -> tuple[FloatArray, ...]:
    """``(reach X, row scales S, column scales T, mobility, share)`` of the module docstring."""
    abs_A = _absolute(program.A, program, "_abs_A")
    abs_P = _absolute(program.P, program, "_abs_P")
    reach = filled_reach(np.abs(x) + _driven_reach(program, abs_A), _P_diagonal(program))
    row_scale = _floored(np.abs(program.b) + abs_A @ reach)
    column_scale = _floored(np.abs(program.c) + abs_P @ reach + abs_A.T @ abs_y)
    mobility, share = _dual_weight(program, abs_A, column_scale)
    return reach, row_scale, column_scale, mobility, share


def conic_row_measures(program: ConicProgram, x: FloatArray, y: FloatArray,
                       s: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(s_i / S_i, y_i W_ii / S_i)`` per row: each slack and each multiplier in its own row's
    unit, as :func:`conic_relative_terms` reads them (rows of a second-order cone each against
    their own scale). Which side of a complementary pair is zero is decided on these, not on
    the raw ``s_i`` and ``y_i``, which have different units (an impulse's slack against a
    velocity)."""
    _, row_scale, _, mobility, share = _scales(program, x, np.abs(y))
    return s / row_scale, _share(y, _weight(mobility, share, row_scale))


def _dual_weight(program: ConicProgram, abs_A: sp.csc_matrix,
                 column_scale: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(mobility, share)`` per row: ``|y_i| W_ii / S`` measures ``y_i`` in its row's unit (the
    change it would make there) with the mobility ``W_ii = sum_j A_ij^2 / P_jj`` (the diagonal
    of ``A P^-1 A^T`` for a diagonal ``P``); where no column of the row has curvature,
    ``|y_i| share_i`` is its share of its stationarity rows, ``share_i = sum_j |A_ij| / T_j``
    (:func:`_weight` picks)."""
    mobility = program.__dict__.get("_mobility")
    if mobility is None:  # the program's alone: cached on the (frozen) program, as |A| is
        diagonal = _P_diagonal(program)
        inverse = np.zeros_like(diagonal)
        positive = diagonal > 0.0
        inverse[positive] = 1.0 / diagonal[positive]
        A = program.A
        mobility = csc(A.data * A.data, A.indices, A.indptr, A.shape) @ inverse
        mobility.setflags(write=False)
        object.__setattr__(program, "_mobility", mobility)
    with np.errstate(over="ignore"):
        share = abs_A @ (1.0 / column_scale)
    return mobility, share


def _weight(mobility: FloatArray, share: FloatArray, scale: FloatArray) -> FloatArray:
    with np.errstate(over="ignore"):
        return np.where(mobility > 0.0, mobility / scale, share)


def conic_data_violation(program: ConicProgram, x: FloatArray, s: FloatArray) -> float:
    """The worst primal row violation of ``x`` relative to the magnitudes the data alone
    implies: ``|b_i| + sum_j |A_ij| X0_j`` with ``X0_j`` the larger of :func:`data_reach` and
    ``max_i |b_i| / |A_ij|``: a diverging iterate's round-off is not a data-sized residual.
    (Holding ``X0_j`` to what the rows ask where the reach is larger would catch the nearly
    flat infeasible QP of ``tests/test_fuzz.py``, but also refuse a cart at rest whose rows
    ask ``3e-32`` of round-off: both are violations within their program's own precision.)"""
    zero, nonneg, socs = cone_row_indices(program)
    violation = np.zeros(program.m)
    violation[zero] = np.abs(s[zero])
    violation[nonneg] = np.maximum(0.0, -s[nonneg])
    for rows in socs:
        violation[rows[:, 0]] = np.maximum(0.0, np.linalg.norm(s[rows[:, 1:]], axis=1) - s[rows[:, 0]])
    if not violation.any():
        return 0.0
    abs_A = _absolute(program.A, program, "_abs_A")
    reach = np.maximum(data_reach(program), column_max(abs_A, np.abs(program.b)))
    data_scale = _floored(np.abs(program.b) + abs_A @ reach)
    return float((violation / data_scale).max())


def column_max(abs_matrix: sp.csc_matrix, rhs: FloatArray) -> FloatArray:
    """``max_i rhs_i / |A_ij|`` per column ``j`` over its entries that are not round-off
    (at least :data:`FLOOR` times the column's largest: an entry of 1e-284 asks nothing)."""
    out = np.zeros(abs_matrix.shape[1])
    if abs_matrix.nnz == 0:
        return out
    counts = np.diff(abs_matrix.indptr)
    filled = counts > 0
    starts = abs_matrix.indptr[:-1][filled]
    largest = np.zeros(abs_matrix.shape[1])
    largest[filled] = np.maximum.reduceat(abs_matrix.data, starts)
    significant = abs_matrix.data > FLOOR * np.repeat(largest, counts)
    ratio = np.zeros_like(abs_matrix.data)
    ratio[significant] = rhs[abs_matrix.indices[significant]] / abs_matrix.data[significant]
    out[filled] = np.maximum.reduceat(ratio, starts)
    return out


def lcp_relative(lcp: LCP, z: FloatArray, w: FloatArray) -> float:
    """The worst relative residual of a finite ``z`` for ``0 <= z  _|_  w = M z + q >= 0``:
    each row of ``w`` against ``|q_i| + sum_j |M_ij| Z_j`` (``Z_j = |z_j| + |q_j| / M_jj``),
    each ``z_j`` by its share of the rows it enters, complementarity met when either side is
    negligible in its own measure."""
    abs_M, q = _abs_dense(lcp), lcp.q
    reach = np.abs(z) + _diagonal_reach(np.diagonal(lcp.M), np.abs(q))
    row_scale = _floored(np.abs(q) + abs_M @ reach)
    with np.errstate(over="ignore"):
        z_weight = (1.0 / row_scale) @ abs_M  # z_j's share of the rows it enters
    w_rel = w / row_scale
    z_rel = _share(z, z_weight)
    return max(float(-w_rel.min(initial=0.0)), float(-z_rel.min(initial=0.0)),
               float(np.minimum(np.abs(w_rel), np.abs(z_rel)).max(initial=0.0)))


#: Passes of :func:`lcp_reach` over the rows.
LCP_REACH_PASSES = 3


def lcp_reach(lcp: LCP) -> FloatArray:
    """The size the data give each ``z_j``: ``|q_j| / M_jj``; a variable that no ``q_j`` drives
    (``q_j = 0``, or no diagonal: the Stewart-Trinkle LCP's slip speeds) takes the size the
    rows it enters ask of it, ``max_i (|q_i| + sum_k |M_ik| Z_k) / |M_ij|`` over the others'
    sizes known so far (:data:`LCP_REACH_PASSES` passes: z1 of ``M = [[2, -1, 0], [0, 2, -1],
    [0, 1, 2]], q = (0, 0, -1)`` learns its size through z2), which keeps each in its own unit
    (a slip speed in m/s, not in the N·s of the impulses beside it); any still empty: the
    geometric mean of the others (1 when none has a size)."""
    abs_M = _abs_dense(lcp)
    reach = _diagonal_reach(np.diagonal(lcp.M), np.abs(lcp.q))
    for _ in range(LCP_REACH_PASSES):
        empty = ~(reach > FLOOR * reach.max(initial=0.0))
        if not empty.any() or not reach.any():
            break
        known = np.where(empty, 0.0, reach)
        row_size = np.abs(lcp.q) + abs_M @ known
        with np.errstate(divide="ignore", invalid="ignore"):
            asked = np.where(abs_M[:, empty] > 0.0, row_size[:, None] / abs_M[:, empty], 0.0)
        reach[empty] = asked.max(axis=0, initial=0.0)
    filled = filled_reach(reach)
    return np.where(filled > 0.0, filled, 1.0)


def lcp_data_violation(lcp: LCP, z: FloatArray, w: FloatArray) -> float:
    """The worst violation of ``w >= 0`` relative to ``|q_i| + sum_j |M_ij| Z0_j`` with the
    data-implied ``Z0_j`` of :func:`lcp_reach` (see :func:`conic_data_violation`)."""
    violation = np.maximum(0.0, -w)
    if not violation.any():
        return 0.0
    data_scale = _floored(np.abs(lcp.q) + _abs_dense(lcp) @ lcp_reach(lcp))
    return float((violation / data_scale).max())


def _abs_dense(lcp: LCP) -> FloatArray:
    """``|M|`` of an LCP (dense, like ``M``), cached on the frozen program."""
    cached = lcp.__dict__.get("_abs_M")
    if cached is None:
        cached = np.abs(lcp.M)
        object.__setattr__(lcp, "_abs_M", cached)  # a cache on a frozen program
    return cached
