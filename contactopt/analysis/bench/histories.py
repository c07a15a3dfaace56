"""Convergence histories over a set of problems, per solver: a tidy table and the figure of
error against iterations and against time (median and interquartile band).

Input: for each solver, the histories of its solves (``Solution.history``: dicts of equal-length
1-D arrays with ``iteration``, ``time`` [s] and criteria, :mod:`contactopt.solvers.history`),
optionally with the problems' names.

* :func:`history_table` / :func:`write_histories`: one row per (solver, problem, iteration),
  columns ``solver, problem, iteration, time`` then every criterion (NaN where a solver has
  none); CSV or parquet by the file's suffix.
* :func:`median_curve`: the median and quartiles over the solves of one solver of a criterion
  as a function of the iteration or of the time. A solve that stopped keeps its last value
  afterwards (the answer it returned: a converged solve counts as converged, a failed one at
  the error it reached, as in the performance profiles of Dolan & Moré, Math. Program. 91,
  2002, where a solve is judged by its final state), and against time each solve's error is
  that of its latest iterate (a step function; before its first row, undefined and left out).
  Quartiles are NumPy's linear-interpolation percentiles 25 and 75.
* :func:`plot_histories`: one figure, two panels (against iterations; against time, on a
  logarithmic time axis), log error axis, one colour per solver, its median line and its
  interquartile band. Criterion ``"auto"``: FCLIB's error where every history has it, else
  contactopt's ``relative`` residual (both dimensionless). Errors of exactly 0 are drawn at
  :data:`DISPLAY_FLOOR` (a log axis has no 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from numpy.typing import ArrayLike, NDArray

from contactopt.analysis.style import new_figure, save
from contactopt.core.errors import OptionError
from contactopt.core.outputs import atomic_path, output_errors

__all__ = ["DISPLAY_FLOOR", "history_table", "median_curve", "plot_histories", "write_histories"]

FloatArray = NDArray[np.float64]
Histories = Mapping[str, Sequence[Mapping[str, ArrayLike] | None]]

#: Errors drawn at this value when they are exactly 0 (below double rounding of unit data).
DISPLAY_FLOOR = 1e-18
#: Points of the common time grid of :func:`median_curve` (log-spaced).
TIME_POINTS = 200
LEADING = ["solver", "problem", "iteration", "time"]
_LABELS = {"fclib": "FCLIB error (dimensionless)", "relative": "relative residual (dimensionless)"}


def _recorded(histories: Histories) -> dict[str, list[Mapping[str, ArrayLike]]]:
    """The histories that were recorded (None: a solve without one, left out)."""
    return {solver: [h for h in runs if h is not None] for solver, runs in histories.items()}


def history_table(histories: Histories, problems: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """The tidy table of the module docstring; ``problems[solver][i]`` names the i-th solve
    (default ``"#i"``)."""
    frames = []
    for solver, runs in histories.items():
        names = list(problems[solver]) if problems is not None and solver in problems else None
        for index, history in enumerate(runs):
            if history is None:
                continue
            columns = {key: np.asarray(value, dtype=np.float64).reshape(-1) for key, value in history.items()}
            lengths = {values.shape[0] for values in columns.values()}
            if len(lengths) > 1 or "iteration" not in columns or "time" not in columns:
                raise OptionError(f"history {index} of solver {solver!r}: needs 'iteration' and 'time' and "
                                  f"columns of one length, got {sorted(lengths)}")
            frame = pd.DataFrame(columns)
            frame.insert(0, "problem", names[index] if names is not None else f"#{index}")
            frame.insert(0, "solver", solver)
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=LEADING)
    table = pd.concat(frames, ignore_index=True)
    return table[LEADING + [c for c in table.columns if c not in LEADING]]


def write_histories(table: pd.DataFrame | Histories, path: str | Path) -> Path:
    """Write :func:`history_table` (or the histories it is made from) to ``path``: parquet for
    a ``.parquet`` suffix, else CSV."""
    frame = table if isinstance(table, pd.DataFrame) else history_table(table)
    out = Path(path)
    with output_errors(out, "histories table"):
        out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, "histories table") as temporary:
        if out.suffix == ".parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
    return out


def _criterion(recorded: Mapping[str, list[Mapping[str, ArrayLike]]], criterion: str) -> str:
    runs = [h for solver_runs in recorded.values() for h in solver_runs]
    if criterion != "auto":
        missing = sum(criterion not in h for h in runs)
        if missing:
            raise OptionError(f"criterion {criterion!r} is missing from {missing} of {len(runs)} histories")
        return criterion
    has_fclib = all("fclib" in h and np.any(np.isfinite(np.asarray(h["fclib"], dtype=float))) for h in runs)
    return "fclib" if runs and has_fclib else "relative"


def _by_iteration(runs: Sequence[Mapping[str, ArrayLike]], criterion: str) -> tuple[FloatArray, FloatArray]:
    """(iterations 0..K, values (solves, K + 1)) with each solve's last value carried on."""
    series = [np.asarray(h[criterion], dtype=np.float64).reshape(-1) for h in runs]
    iterations = [np.asarray(h["iteration"], dtype=np.float64).reshape(-1) for h in runs]
    last = int(max((it.max(initial=0.0) for it in iterations), default=0.0))
    grid = np.arange(last + 1, dtype=np.float64)
    values = np.full((len(series), grid.size), np.nan)
    for row, (it, value) in enumerate(zip(iterations, series, strict=True)):
        if value.size:
            position = np.searchsorted(it, grid, side="right") - 1  # the latest row at or before k
            values[row] = np.where(position >= 0, value[np.maximum(position, 0)], np.nan)
    return grid, values


def _by_time(runs: Sequence[Mapping[str, ArrayLike]], criterion: str) -> tuple[FloatArray, FloatArray]:
    """(a log-spaced time grid [s], values (solves, points)): each solve's latest iterate."""
    times = [np.asarray(h["time"], dtype=np.float64).reshape(-1) for h in runs]
    positive = np.concatenate([t[t > 0] for t in times] + [np.zeros(0)])
    if positive.size == 0:
        return np.zeros(0), np.zeros((len(runs), 0))
    grid = np.geomspace(positive.min(), positive.max(), TIME_POINTS) if positive.max() > positive.min() \
        else positive[:1]
    values = np.full((len(runs), grid.size), np.nan)
    for row, (t, h) in enumerate(zip(times, runs, strict=True)):
        value = np.asarray(h[criterion], dtype=np.float64).reshape(-1)
        if value.size:
            position = np.searchsorted(t, grid, side="right") - 1
            values[row] = np.where(position >= 0, value[np.maximum(position, 0)], np.nan)
    return grid, values


def median_curve(runs: Sequence[Mapping[str, ArrayLike]], criterion: str = "fclib",
                 against: str = "iteration") -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(x, median, q25, q75)`` over ``runs`` (the histories of one solver) of ``criterion``
    against ``"iteration"`` or ``"time"`` (module docstring); NaN where no solve is defined."""
    if against not in ("iteration", "time"):
        raise OptionError(f"median_curve: against must be 'iteration' or 'time', got {against!r}")
    x, values = (_by_iteration if against == "iteration" else _by_time)(runs, criterion)
    defined = np.any(np.isfinite(values), axis=0) if values.size else np.zeros(x.size, dtype=bool)
    median, q25, q75 = (np.full(x.size, np.nan) for _ in range(3))
    if defined.any():
        q25[defined], median[defined], q75[defined] = np.nanpercentile(values[:, defined], [25, 50, 75], axis=0)
    return x, median, q25, q75


def plot_histories(histories: Histories, criterion: str = "auto", path: str | Path | None = None,
                   title: str | None = None) -> Figure:
    """The figure of the module docstring; saved to ``path`` only if one is given. Each median
    line's label is ``SOLVER (n = N)`` (N solves), and its ``gid`` ``SOLVER``."""
    from matplotlib import colormaps

    recorded = _recorded(histories)
    name = _criterion(recorded, criterion)
    fig = new_figure(10.0, 4.0)
    by_iteration, by_time = fig.subplots(1, 2)
    palette = colormaps["tab10"]
    for index, (solver, runs) in enumerate(recorded.items()):
        if not runs:
            continue
        colour = palette(index % palette.N)
        for ax, against in ((by_iteration, "iteration"), (by_time, "time")):
            x, median, q25, q75 = median_curve(runs, name, against)
            if x.size == 0:
                continue
            shown = [np.maximum(v, DISPLAY_FLOOR) for v in (median, q25, q75)]
            line = ax.plot(x, shown[0], color=colour, label=f"{solver} (n = {len(runs)})",
                           drawstyle="steps-post")[0]
            line.set_gid(solver)
            ax.fill_between(x, shown[1], shown[2], color=colour, alpha=0.25, linewidth=0, step="post")
    label = _LABELS.get(name, name)
    by_iteration.set_xlabel("iteration")
    by_time.set_xlabel("time [s]")
    by_time.set_xscale("log")
    for ax in (by_iteration, by_time):
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    if any(recorded.values()):
        by_iteration.legend(fontsize="small")
    fig.suptitle(title or f"{label.split(' (')[0]} over the set: median and interquartile band")
    save(fig, path)
    return fig

