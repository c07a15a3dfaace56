"""Convergence histories of contactopt's iterative solvers (solver option ``history``).

A history is one row of criteria per iterate, stored as :attr:`Solution.history
<contactopt.programs.solution.Solution.history>`: a dict of equal-length 1-D arrays keyed by
``iteration``, ``time`` (seconds since the iteration began, the solver's set-up excluded: it
is :attr:`Solution.setup_time`; and **without** the time spent computing the rows themselves,
so that a recorded run's times are those of an unrecorded one) and the criteria:

* a Coulomb problem: the columns of :func:`contactopt.programs.coulomb.coulomb_criteria`
  (FCLIB's error ``fclib``, ``signorini``, ``complementarity``, ``dual_feasibility``,
  ``dissipation_gap``, ``cost``, ``relative``);
* a conic program or an LCP (:func:`program_criteria`): contactopt's residuals of the iterate
  (:func:`contactopt.programs.residuals.residuals`: ``relative``, the unit-free reading
  :func:`contactopt.solvers.base.judge` decides by, ``primal``, ``dual``, ``gap``,
  ``complementarity``) and the ``objective`` (``1/2 x'Px + c'x``; ``1/2 z'Mz + q'z`` for an
  LCP, which for a symmetric ``M`` is the function PGS minimizes, Cottle, Pang & Stone 1992,
  section 5.2); for the CCP of an FCLIB local problem (its metadata ``format == "fclib"``,
  ``form == "dual"``, not condensed from a global one) also FCLIB's error ``fclib`` of the
  impulses (:mod:`contactopt.programs.coulomb_error`: the CCP drops De Saxcé's term, so this
  error goes to zero only where nothing slides).

A row is made only when the option is on: a solver without it does no per-iteration work for
histories.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.conic import ConicProgram
from contactopt.programs.coulomb_error import natural_map
from contactopt.programs.lcp import LCP
from contactopt.programs.residuals import residuals

__all__ = ["Recorder", "ccp_fclib_error", "program_criteria"]

FloatArray = NDArray[np.float64]


class Recorder:
    """Rows of a history, timed from ``start`` (``time.perf_counter()`` when the solve
    began) less the time spent in :meth:`add` itself."""

    def __init__(self, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.overhead = 0.0
        self.rows: list[dict[str, float]] = []

    def add(self, iteration: int, criteria: Callable[[], Mapping[str, float]]) -> None:
        """Append the row of ``iteration``: ``criteria()`` is called here, its cost not timed."""
        entered = time.perf_counter()
        row = {"iteration": float(iteration), "time": entered - self.start - self.overhead}
        row.update(criteria())
        self.rows.append(row)
        self.overhead += time.perf_counter() - entered

    def restart(self) -> None:
        """Time the rows from now on (the iteration begins)."""
        self.start = time.perf_counter()
        self.overhead = 0.0

    def discard_last(self) -> None:
        """Drop the last row (a solver that restarts from that very iterate records it again)."""
        if self.rows:
            self.rows.pop()

    def arrays(self) -> dict[str, FloatArray]:
        """The history as equal-length arrays (a column missing from a row reads NaN)."""
        return as_arrays(self.rows)


def as_arrays(rows: Sequence[Mapping[str, float]]) -> dict[str, FloatArray]:
    """Rows (dicts) to a dict of equal-length float arrays; absent entries are NaN."""
    keys: list[str] = []
    for row in rows:
        keys += [key for key in row if key not in keys]
    return {key: np.array([float(row.get(key, np.nan)) for row in rows]) for key in keys}


def ccp_fclib_error(program: ConicProgram, x: FloatArray) -> float | None:
    """FCLIB's error (``fclib_merit_local``) of the impulses of ``x``, an iterate of the CCP
    :func:`contactopt.programs.fclib.fclib_program` makes of a local FCLIB problem (dual form:
    ``P = [[W, V], [V', R]]``, ``c = [q, s]``, so ``P x + c = [u, V'r + R lambda + s]``), or None
    for any other program (a global problem's error needs its velocities, which its condensed
    CCP does not carry)."""
    meta = program.metadata
    if meta.get("format") != "fclib" or meta.get("form") != "dual" or meta.get("condensed"):
        return None
    dim, contacts = int(meta["spacedim"]), int(meta["contacts"])
    m = dim * contacts
    mu = np.asarray(meta["mu"], dtype=np.float64)
    local = np.asarray(program.P_dot(x)) + program.c
    error = (float(np.linalg.norm(natural_map(x[:m], local[:m], mu, dim)))
             / (1.0 + float(np.sqrt(np.linalg.norm(program.c[:m])))))
    if program.n > m:  # the equality rows of a mixed local problem
        error += float(np.linalg.norm(local[m:])) / (1.0 + float(np.linalg.norm(program.c[m:])))
    return error


def program_criteria(program: ConicProgram | LCP, x: FloatArray, y: FloatArray | None) -> dict[str, float]:
    """One history row of a conic program's or an LCP's iterate (module docstring)."""
    res = residuals(program, x, y)
    row = {"relative": res.relative, "primal": res.primal, "dual": res.dual, "gap": res.gap,
           "complementarity": res.complementarity}
    if isinstance(program, LCP):
        row["objective"] = float(0.5 * x @ (program.M @ x) + program.q @ x)
        return row
    row["objective"] = float(0.5 * x @ program.P_dot(x) + program.c @ x)
    error = ccp_fclib_error(program, x)
    if error is not None:
        row["fclib"] = error
    return row
