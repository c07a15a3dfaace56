"""The iteration record of :mod:`contactopt.solvers.newton.solver` (option ``history``).

Each iterate appends one entry (:func:`record`, :func:`record_step`): Newton's own numbers, as
Drake's SapSolver statistics keep them (cost, (S10) residual, step length, regimes), kept as
``Solution.raw["history"]``; and, with the iterate itself kept aside, the uniform history of
:mod:`contactopt.solvers.history` (:func:`uniform_history`: ``iteration``, ``time`` and
contactopt's residuals of the conic answer ``x = [v, gamma(v)]``, ``y = D^-1 gamma(v)`` the
iterate stands for, the last row being those of the returned answer), stored as
``Solution.history``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.cone_projection import ConeLayout
from contactopt.programs.conic import ConicProgram
from contactopt.solvers.history import as_arrays, program_criteria

__all__ = ["public_entries", "record", "record_step", "uniform_history"]

FloatArray = NDArray[np.float64]

#: Entry keys that carry the iterate and its timing for :func:`uniform_history` (not part of
#: the published record).
_PRIVATE = ("_v", "_gamma", "_clock", "_spent")


def record(history: list[dict[str, Any]] | None, layout: ConeLayout, y: FloatArray, gamma: FloatArray,
           cost: float, residual: float, scale: float, v: FloatArray) -> None:
    """Append one iterate's entry to ``history`` (option ``history``; a no-op when None): the
    cost ``l(v)``, the (S10) residual ``||D g||`` and its scale, and how many cone blocks are in
    each regime of the projection (S3): ``stiction`` (``gamma = y``: inside the cone, also a
    positive ``nonneg`` row), ``sliding`` (on the cone's boundary, ``0 != gamma != y``) and
    ``no_contact`` (``gamma = 0``); free rows are not counted. The step taken from the iterate
    is added by :func:`record_step`, as Drake's SapSolver statistics keep cost, residual and
    step length per iteration. A copy of ``v`` and ``gamma`` and the time of the call are kept
    for :func:`uniform_history` (the callers reuse their arrays)."""
    if history is None:
        return
    entered = time.perf_counter()
    counts = {"stiction": 0, "sliding": 0, "no_contact": 0}
    for group in layout.groups:
        if group.kind == "free":
            continue
        g, yb = gamma[group.rows], y[group.rows]
        none = ~np.any(g != 0.0, axis=1)
        stick = ~none & np.all(g == yb, axis=1)
        counts["no_contact"] += int(none.sum())
        counts["stiction"] += int(stick.sum())
        counts["sliding"] += int((~none & ~stick).sum())
    before = history[-1]["_spent"] if history else 0.0
    history.append({"cost": cost, "residual": residual, "scale": scale, **counts,
                    "_v": np.array(v), "_gamma": np.array(gamma), "_clock": entered,
                    "_spent": before + time.perf_counter() - entered})


def record_step(history: list[dict[str, Any]] | None, alpha: float, slope: float, slope_after: float) -> None:
    """Add to the last entry the step length ``alpha`` taken from it and ``l'(alpha) / |l'(0)|``
    (``slope_after``: ``g(v + alpha dv)' dv / |g(v)' dv|``; about 0 when the exact line search
    stopped inside ``(0, alpha_max)``, <= 0 at ``alpha_max``)."""
    if history is not None and history:
        history[-1]["alpha"] = alpha
        history[-1]["line_slope"] = slope_after / abs(slope) if slope != 0.0 else 0.0


def public_entries(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without the kept iterates and clocks (``Solution.raw["history"]``)."""
    return [{key: value for key, value in entry.items() if key not in _PRIVATE} for entry in history]


def uniform_history(program: ConicProgram, primal: Any, history: list[dict[str, Any]],
                    start: float) -> dict[str, FloatArray]:
    """``Solution.history``: per entry, ``iteration``, ``time`` since ``start`` (less the time
    spent recording: the ``_spent`` before the entry), contactopt's residuals and objective of
    the conic answer of the iterate (:func:`contactopt.solvers.history.program_criteria`) and
    Newton's own columns (``cost`` ``l(v)``, ``residual``, ``scale``, regime counts, ``alpha``,
    ``line_slope``; NaN where an entry has none, e.g. the last one's step)."""
    rows = []
    spent = 0.0
    for iteration, entry in enumerate(history):
        v, gamma = entry["_v"], entry["_gamma"]
        row: dict[str, float] = {"iteration": float(iteration), "time": entry["_clock"] - start - spent}
        finite = bool(np.all(np.isfinite(v)) and np.all(np.isfinite(gamma)))
        if finite:
            row.update(program_criteria(program, primal.conic_x(v, gamma), primal.dual(gamma)))
        row.update({key: float(value) for key, value in entry.items() if key not in _PRIVATE})
        rows.append(row)
        spent = entry["_spent"]
    return as_arrays(rows)
