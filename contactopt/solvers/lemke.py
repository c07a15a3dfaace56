"""Lemke's complementary pivoting algorithm for ``LCP(M, q)``, written for contactopt.

Find ``z >= 0`` with ``w = M z + q >= 0`` and ``z'w = 0`` (Lemke 1965; Cottle, Pang & Stone,
"The Linear Complementarity Problem", 1992, section 4.4). The augmented system

    w - M z - d z0 = q,      d > 0 the covering vector (default all ones),

starts from the almost-complementary basis ``w``; ``z0`` enters at the value that makes the
basis feasible, and each step brings in the complement of the variable that just left,
until ``z0`` leaves (a solution) or the entering column has no positive entry (a secondary
ray: **ray termination**, reported as a status, never as an answer). For ``M`` a P-matrix,
or copositive-plus with a feasible LCP (e.g. symmetric PSD), Lemke's method ends in a
solution; ray termination for copositive-plus ``M`` proves the LCP infeasible.

Anti-cycling: the lexicographic minimum-ratio rule on the rows ``[rhs_i, (B^{-1})_i] / col_i``
(B^{-1} is read off the tableau's ``w`` columns), which makes every basis lexico-feasible and
so prevents cycling under degeneracy: in exact arithmetic no almost-complementary basis is
visited twice (Cottle, Pang & Stone, section 4.4). In floating point, ties decided by
round-off can still close a loop (own/tendon_gripper's step 34: pivot 56 returns to pivot 52's
basis, and the all-ones covering vector would spend the whole budget there while every other
attempt solves it in 43-59 pivots), so a revisited basis ends the attempt as
``numerical_error`` and the next attempt is tried. Every ``refresh_every`` pivots and at the end the
tableau is recomputed from the basis (``B^{-1} T_0`` by one LU solve), so round-off does not
accumulate across pivots; pivots are accepted above a tolerance relative to the entering
column's scale; the basic ``z`` are finally recomputed by a direct solve of
``M_SS z_S = -q_S`` when that is more accurate.

**Budget** (a loud failure, never a hang): ``max_iter`` pivots, by default
:func:`default_pivot_budget` = ``min(max(1000, 50 n), 5e8 / n^2)``: 50 pivots per unknown (a
solution needs about one per basic ``z``; every existing scene and test solves well within
it), but no more than ``5e8 / n^2`` since a pivot updates the ``n x 2n`` tableau, which keeps
an unsolvable or slow problem to seconds (``n = 2916``, one step of ``sphere_pile_mjcf``: 58
pivots of about 0.05 s each, where Lemke needs more than 1000). Reaching the budget returns
``max_iterations`` at once (the other attempts are not tried) with a message naming the
option, unless an earlier attempt gave a usable (``inaccurate``) answer: that one is returned
(own/tendon_gripper's step 34: the second attempt's 2.3e-6, then the third cycles through the
budget). ``refresh_every`` defaults to 8 pivots up to ``n = 256`` and ``n / 32`` above (a
refresh is an ``O(n^3)`` solve).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.budgets import count_option
from contactopt.core.errors import OptionError
from contactopt.programs import LCP, Solution, Status, lcp_residuals
from contactopt.solvers.base import Program, SolverSpec, Stopwatch, check_options, make_solution

FloatArray = NDArray[np.float64]

SPEC = SolverSpec(
    name="lemke", kinds=frozenset({"lcp"}), module=__name__, requires=None,
    install_hint="(built in)", description="Lemke's complementary pivoting (ours, lexicographic)",
)

OPTIONS = {"max_iter", "pivot_tol", "covering", "refresh_every"}

#: Tableau entries (``n x 2n`` per pivot, counted as ``n^2``) the default budget allows.
PIVOT_WORK = 5e8


def default_pivot_budget(n: int) -> int:
    """Pivots allowed by default on ``LCP(M, q)`` of size ``n``: ``min(max(1000, 50 n), 5e8 / n^2)``."""
    return int(min(max(1000, 50 * n), PIVOT_WORK / max(n, 1) ** 2))


def default_refresh(n: int) -> int:
    """Pivots between tableau refreshes: 8 up to ``n = 256``, ``n / 32`` above."""
    return 8 if n <= 256 else n // 32


#: Attempts ``(pivot tolerance, covering vector)`` made in turn when the caller sets
#: neither: degenerate contact LCPs (a walker standing on two feet, normals of rank 4 among 6
#: contacts; a quadruped's toes on a floor and a height field, 28 contacts of rank 12) have
#: near-zero pivots and tied ratios whose resolution is decided by round-off, and one
#: tolerance or the all-ones covering vector can follow it onto a secondary ray or into a
#: wrong basis where another choice reaches the solution ("generic": entries in [1, 1.5)
#: from the golden-ratio sequence, which breaks the ties of the all-ones vector). Each
#: attempt is judged by contactopt's own residuals; the message names the failed ones.
ATTEMPTS: tuple[tuple[float, str], ...] = ((1e-12, "ones"), (1e-12, "generic"), (1e-9, "ones"),
                                           (1e-9, "generic"), (1e-14, "ones"), (1e-7, "ones"))


def generic_covering(n: int) -> FloatArray:
    """A deterministic covering vector without ties: ``1 + frac(i phi) / 2``."""
    return 1.0 + 0.5 * np.modf(np.arange(1, n + 1) * 0.6180339887498949)[0]


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    assert isinstance(program, LCP)
    check_options("lemke", options, OPTIONS)
    n = program.q.shape[0]
    budget = count_option(options, "max_iter", "lemke", default_pivot_budget(n), minimum=0)
    refresh = count_option(options, "refresh_every", "lemke", default_refresh(n), minimum=1)
    given = "pivot_tol" in options or "covering" in options
    attempts = ((options.get("pivot_tol", 1e-12), "given"),) if given else ATTEMPTS
    rest = {"max_iter": budget, "refresh_every": refresh}
    first: Solution | None = None
    best: tuple[Solution, str] | None = None
    failures: list[str] = []
    for tolerance, covering in attempts:
        vector = (options.get("covering") if covering == "given"
                  else generic_covering(program.q.shape[0]) if covering == "generic" else None)
        watch = Stopwatch()
        with watch.time("solve"):
            z, status, pivots, message = lemke(program.M, program.q, pivot_tol=tolerance, covering=vector, **rest)
        solution = make_solution(program, solver="lemke", status=status, x=z, y=None,
                                 iterations=pivots, watch=watch, message=message)
        capped = solution.status is Status.MAX_ITERATIONS  # the budget is spent: no other attempt
        if capped:
            how = ("the max_iter option" if "max_iter" in options
                   else f"the default min(max(1000, 50 n), 5e8 / n^2), n = {n}")
            solution = dataclasses.replace(solution, message=f"{solution.message}: the pivot budget ({how}) "
                                           "is reached; raise it with the solver option max_iter")
        if capped and best is not None:  # an earlier attempt's usable answer beats a spent budget
            failures.append(f"pivot tolerance {tolerance:g}, covering {covering}: {solution.message}")
            break
        if solution.status is Status.OPTIMAL or capped or len(attempts) == 1:
            if failures:
                solution = dataclasses.replace(solution, message=f"{solution.message} (pivot tolerance "
                                               f"{tolerance:g}, covering {covering}; {'; '.join(failures)})")
            return solution
        if solution.status.usable and (best is None or solution.residuals.worst < best[0].residuals.worst):
            best = (solution, f"pivot tolerance {tolerance:g}, covering {covering}")
        first = first or solution
        failures.append(f"pivot tolerance {tolerance:g}, covering {covering}: {solution.message}")
    if best is not None:  # no attempt was judged optimal: the usable one with the smallest residuals
        chosen, how = best
        return dataclasses.replace(chosen, message=f"{chosen.message} ({how}; {'; '.join(failures)})")
    assert first is not None
    return dataclasses.replace(first, message="; ".join(failures))


def lemke(
    M: FloatArray, q: FloatArray, *, max_iter: int | None = None, pivot_tol: float = 1e-12,
    covering: FloatArray | None = None, refresh_every: int | None = None,
) -> tuple[FloatArray | None, Status, int, str]:
    """Solve ``LCP(M, q)``; return ``(z, status, pivots, message)`` (``z`` None unless solved)."""
    M = np.asarray(M, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    n = q.shape[0]
    d = np.ones(n) if covering is None else np.asarray(covering, dtype=np.float64)
    if d.shape != (n,) or not np.all(d > 0):
        raise OptionError(f"solver 'lemke': the covering vector must have {n} strictly positive "
                          f"entries, got {d}")
    max_iter = default_pivot_budget(n) if max_iter is None else int(max_iter)
    refresh_every = default_refresh(n) if refresh_every is None else int(refresh_every)
    if n == 0 or q.min() >= 0:
        return np.zeros(n), Status.OPTIMAL, 0, "trivial: q >= 0, z = 0"
    if max_iter < 1:
        return None, Status.MAX_ITERATIONS, 0, "max_iter < 1: no pivot allowed"

    # Tableau columns: w (0..n-1), z (n..2n-1), z0 (2n), rhs (2n+1).
    z0 = 2 * n
    rhs = 2 * n + 1
    T = np.zeros((n, 2 * n + 2))
    T[:, :n] = np.eye(n)
    T[:, n : 2 * n] = -M
    T[:, z0] = -d
    T[:, rhs] = q
    T_initial = T.copy()
    basis = np.arange(n)

    # First pivot: z0 enters at max_i(-q_i / d_i). Among tied rows the last index keeps the
    # rows [rhs, B^{-1}] lexicographically positive after the pivot. Ties are relative to the
    # minimum itself: an absolute tolerance would tie a q_i = -1e-17 (a tangential speed that
    # is zero up to rounding) with the q_j = 0 rows, and pivoting on one of those leaves
    # q_i < 0 in the basis (a secondary ray after 1 pivot on MuJoCo's planar models).
    ratios = q / d
    tied = np.flatnonzero(ratios <= ratios.min() + pivot_tol * abs(ratios.min()))
    row = int(tied[-1])
    entering = _complement(_pivot(T, basis, row, z0), n)
    pivots = 1
    visited = {np.sort(basis).tobytes(): pivots}  # each basis, by its set of basic variables
    while pivots < max_iter:
        if pivots % refresh_every == 0:
            _refresh(T, T_initial, basis)
        column = T[:, entering]
        # Pivot tolerance relative to the column's scale: degenerate contact LCPs (many
        # friction directions on few degrees of freedom) produce near-zero pivots whose
        # round-off sign is meaningless.
        candidates = np.flatnonzero(column > pivot_tol * max(1.0, float(np.abs(column).max())))
        if candidates.size == 0:
            return None, Status.RAY_TERMINATION, pivots, (
                f"secondary ray after {pivots} pivots: no solution found "
                "(for copositive-plus M this proves the LCP infeasible)")
        row = _lexicographic_min_ratio(T, basis, candidates, column, n, pivot_tol, z0)
        leaving = int(basis[row])
        _pivot(T, basis, row, entering)
        pivots += 1
        if leaving == z0:
            _refresh(T, T_initial, basis)
            return _extract(M, q, T, basis, n), Status.OPTIMAL, pivots, f"solved in {pivots} pivots"
        key = np.sort(basis).tobytes()
        if key in visited:  # the lexicographic path is simple: only round-off can bring it back
            return None, Status.NUMERICAL_ERROR, pivots, (
                f"cycling: pivot {pivots} returns to the basis of pivot {visited[key]} (round-off broke "
                "the lexicographic rule)")
        visited[key] = pivots
        entering = _complement(leaving, n)
    return None, Status.MAX_ITERATIONS, pivots, f"no solution after {pivots} pivots"


def _complement(variable: int, n: int) -> int:
    """``w_i <-> z_i``: column ``i`` <-> column ``n + i``."""
    return variable + n if variable < n else variable - n


def _refresh(T: FloatArray, T_initial: FloatArray, basis: NDArray[np.int_]) -> None:
    """Recompute the tableau ``B^{-1} T_0`` from the basis, discarding the round-off that
    Gauss-Jordan updates accumulate (kept if the basis matrix is numerically singular)."""
    with contextlib.suppress(np.linalg.LinAlgError):
        T[:] = np.linalg.solve(T_initial[:, basis], T_initial)


def _pivot(T: FloatArray, basis: NDArray[np.int_], row: int, entering: int) -> int:
    """Gauss-Jordan pivot on ``(row, entering)``; return the variable that left."""
    leaving = int(basis[row])
    T[row] /= T[row, entering]
    factors = T[:, entering].copy()
    factors[row] = 0.0
    T -= np.outer(factors, T[row])
    basis[row] = entering
    return leaving


def _lexicographic_min_ratio(
    T: FloatArray, basis: NDArray[np.int_], candidates: NDArray[np.int_], column: FloatArray,
    n: int, tol: float, z0: int,
) -> int:
    """Row of the lexicographic minimum of ``[rhs_i, (B^{-1})_i] / column_i`` over candidates.

    If ``z0`` is among the rows tied on the first (rhs) ratio, it leaves: that ends the
    algorithm with a solution and is consistent with the minimum-ratio rule.
    """
    rhs = T.shape[1] - 1
    keys = [rhs, *range(n)]
    remaining = candidates
    for depth, key in enumerate(keys):
        ratio = T[remaining, key] / column[remaining]
        best = ratio.min()
        remaining = remaining[ratio <= best + tol * max(1.0, abs(best))]
        if depth == 0:
            z0_rows = remaining[basis[remaining] == z0]
            if z0_rows.size:
                return int(z0_rows[0])
        if remaining.size == 1:
            break
    return int(remaining[0])


def _extract(M: FloatArray, q: FloatArray, T: FloatArray, basis: NDArray[np.int_], n: int) -> FloatArray:
    """z from the final tableau, or from a direct solve on the final basis if more accurate."""
    lcp = LCP(M, q)
    basic_z = basis >= n
    support = basis[basic_z] - n
    z = np.zeros(n)
    z[support] = np.maximum(T[basic_z, -1], 0.0)
    if support.size == 0:
        return z
    try:
        direct = np.zeros(n)
        direct[support] = np.linalg.solve(M[np.ix_(support, support)], -q[support])
    except np.linalg.LinAlgError:
        return z
    if direct.min() < -1e-12:  # the tableau's basis is the answer; keep its values
        return z
    direct = np.maximum(direct, 0.0)
    return direct if lcp_residuals(lcp, direct).worst <= lcp_residuals(lcp, z).worst else z
