"""Figures of a comparison (:func:`contactopt.compare`): trajectories with their references,
metrics per run and time per step. Every function returns a :class:`matplotlib.figure.Figure`
(built without pyplot, see :mod:`contactopt.analysis.style`) and writes a file only when given
a ``path``. Colour: formulation; line style: solver; line width and opacity: time step
(:class:`contactopt.analysis.style.Styles`, no two runs with the same colour and line style).
With more than :data:`MAX_CURVES` curves per panel the runs become small multiples: a column
of panels per group of formulations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from contactopt.analysis.style import Styles, dt_text, new_figure, save
from contactopt.scenes.observables import Observable
from contactopt.systems.units import unit_of_name

__all__ = ["METRICS", "METRIC_TOLERANCES", "plot_metrics", "plot_time_per_step", "plot_trajectories"]

METRICS = [("max_penetration", "max penetration [m]"), ("max_cone_violation", "max cone violation [N·s]"),
           ("max_ncp_desaxce", "max NCP residual (De Saxcé) [N·s]"),
           ("max_abs_energy_balance", "max |energy balance| [J]"),
           ("max_constraint_error", "max bilateral error [m or rad]"), ("time_per_step", "time per step [s]")]
#: Values at or below these are drawn as "0 (below tol)", never as bars: they are at the level
#: of the solvers' default tolerances (about 1e-8 of a unit-size program's impulses, velocities
#: and lengths), so a bar would only show which run's round-off is largest.
METRIC_TOLERANCES = {"max_penetration": 1e-8, "max_cone_violation": 1e-8, "max_ncp_desaxce": 1e-8,
                     "max_abs_energy_balance": 1e-8, "max_constraint_error": 1e-8}
#: Metrics in impulse units, also shown as forces (impulse / dt) when the runs share one dt.
IMPULSE_METRICS = ("max_cone_violation", "max_ncp_desaxce")
#: Most curves in one panel before the runs are split into small multiples.
MAX_CURVES = 8

#: Black line styles of the references, one per reference (distinct up to this many).
REFERENCE_STYLES: list[Any] = [(0, (4, 2)), (0, (1, 2)), (0, (6, 2, 1, 2)), (0, (2, 4)), (0, (8, 2, 1, 2, 1, 2))]

_RUN = ["formulation", "solver", "dt"]


def _label(formulation: str, solver: str, dt: float, several_dt: bool) -> str:
    return f"{formulation} / {solver}" + (f", {dt_text(float(dt))}" if several_dt else "")


def _coordinate_axis(names: Sequence[str], units: Sequence[str], column: str) -> tuple[str, str]:
    """``("box.x", "m")`` for the trace column ``q[0]``."""
    index = int(column[2:-1])
    name = names[index] if index < len(names) else column
    return name, units[index] if index < len(units) else unit_of_name(name)


def _references(observables: Sequence[Observable], q0: np.ndarray | None, dt: float,
                duration: float) -> tuple[dict[str, list[tuple[float, str]]], list[tuple[float, str]]]:
    """Reference lines: horizontal ones per coordinate name, vertical ones (times) for all panels."""
    horizontal: dict[str, list[tuple[float, str]]] = {}
    vertical: list[tuple[float, str]] = []
    for o in observables:
        reference = o.reference_value(dt, duration) if o.reference is not None else float("nan")
        if not np.isfinite(reference):
            continue
        if o.kind in ("stop_time", "contact_time"):
            vertical.append((reference, f"reference {o.name}"))
        elif o.coordinate is not None and o.coordinate in o.q_names and o.kind in (
                "stop_distance", "final_position", "hover_height", "apex_height"):
            start = float(q0[o.q_names.index(o.coordinate)]) if q0 is not None else 0.0
            base = {"stop_distance": start, "hover_height": start, "final_position": 0.0,
                    "apex_height": o._resolved(dt, duration)["offset"]}[o.kind]
            horizontal.setdefault(o.coordinate, []).append((base + reference, f"reference {o.name}"))
    return horizontal, vertical


def _columns(traces: pd.DataFrame) -> list[list[str]]:
    """Formulations per column of small multiples: in order, packed while a column has at most
    MAX_CURVES curves (a formulation with more gets a column of its own)."""
    curves = traces.groupby(_RUN, sort=False).size().reset_index().groupby("formulation", sort=False).size()
    columns: list[list[str]] = [[]]
    count = 0
    for formulation, n in curves.items():
        if columns[-1] and count + n > MAX_CURVES:
            columns.append([])
            count = 0
        columns[-1].append(str(formulation))
        count += int(n)
    return columns


def _legend(fig: Figure, axes: Sequence[Any], styles: Styles, runs: Sequence[tuple[str, str]]) -> None:
    """One legend outside the panels, factorized: an entry per run (formulation / solver), one
    per time step (its line width), then the references, each once."""
    handles: list[Any] = [Line2D([], [], label=f"{f} / {s}", **{**styles.line(f, s), "linewidth": 1.3, "alpha": 1.0})
                          for f, s in runs]
    if len(styles.dts) > 1:
        handles += [Line2D([], [], color="0.3", linewidth=styles.width(dt)[0], alpha=styles.width(dt)[1],
                           label=dt_text(dt)) for dt in styles.dts]
    labels = [h.get_label() for h in handles]
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label.startswith("reference") and label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize="x-small", ncol=1 if len(handles) <= 30 else 2)


def plot_trajectories(table: pd.DataFrame, traces: pd.DataFrame, path: str | Path | None = None,
                      coordinates: int = 3, *, names: Sequence[str] = (), observables: Sequence[Observable] = (),
                      q0: np.ndarray | None = None, units: Sequence[str] = ()) -> Figure:
    """The coordinates the observables name, then those that move most (``coordinates`` in
    all), a panel each with its name (``names``: the system's ``q_names``) and unit (``units``,
    else read from the name); then the energy [J] and, when some run has one, the bilateral
    constraint error. Every run overlaid, or small multiples (module docstring); the
    observables' references drawn in black; the legend outside the panels."""
    state_columns = [c for c in traces.columns if c.startswith("q[")]
    wanted = [f"q[{list(names).index(o.coordinate)}]" for o in observables
              if o.coordinate is not None and o.coordinate in names]
    ranges = traces.groupby(_RUN)[state_columns].agg(np.ptp).max() if len(traces) else pd.Series(dtype=float)
    largest = float(ranges.max()) if len(ranges) else 0.0
    moving = [c for c in ranges.sort_values(ascending=False).index  # round-off motion is not shown
              if c not in wanted and ranges[c] > 1e-6 * largest]
    chosen = list(dict.fromkeys(wanted + moving))[:max(coordinates, len(set(wanted)))] or state_columns[:1]
    if "energy" in traces and np.isfinite(pd.to_numeric(traces["energy"], errors="coerce")).any():
        chosen.append("energy")
    if "constraint_error" in traces and (pd.to_numeric(traces["constraint_error"], errors="coerce") > 0).any():
        chosen.append("constraint_error")
    several_dt = traces["dt"].nunique() > 1 if len(traces) else False
    empty: list[Any] = []
    styles = Styles(traces["formulation"] if len(traces) else empty, traces["solver"] if len(traces) else empty,
                    traces["dt"] if len(traces) else empty)
    groups = _columns(traces) if len(traces) else [[]]
    fig = new_figure(3.4 + 5.0 * len(groups) if len(groups) > 1 else 11, 2.4 * max(1, len(chosen)) + 0.6)
    grid = fig.subplots(max(1, len(chosen)), len(groups), sharex=True, sharey="row", squeeze=False)
    dt = float(traces["dt"].min()) if len(traces) else 0.0
    duration = float(traces["t"].max()) if len(traces) else 0.0
    horizontal, vertical = _references(observables, q0, dt, duration)
    references = [text for lines in horizontal.values() for _, text in lines] + [text for _, text in vertical]
    reference_style = {text: REFERENCE_STYLES[k % len(REFERENCE_STYLES)] for k, text in enumerate(references)}
    runs: list[tuple[str, str]] = []
    for (formulation, solver, step), group in traces.groupby(_RUN, sort=False):
        runs = runs if (formulation, solver) in runs else [*runs, (formulation, solver)]
        column = next(k for k, members in enumerate(groups) if str(formulation) in members)
        for ax, quantity in zip(grid[:, column], chosen, strict=False):
            values = pd.to_numeric(group[quantity], errors="coerce").to_numpy(dtype=float)
            ax.plot(group["t"], np.abs(values) if quantity == "constraint_error" else values,
                    label=_label(formulation, solver, step, several_dt), **styles.line(formulation, solver, step))
    for row, quantity in enumerate(chosen):
        name, unit = _coordinate_axis(names, units, quantity) if quantity.startswith("q[") else (quantity, "")
        label = {"energy": "energy [J]", "constraint_error": "bilateral error\n|h(q)| [m or rad]"}.get(
            quantity, f"{name} [{unit}]" if unit else f"{name} [unit not stated]")
        for k, ax in enumerate(grid[row]):
            for value, text in horizontal.get(name, []):
                ax.axhline(value, color="black", linewidth=1.0, linestyle=reference_style[text], label=text)
            for value, text in vertical:
                ax.axvline(value, color="black", linewidth=0.8, linestyle=reference_style[text], label=text)
            if quantity == "constraint_error":
                ax.set_yscale("log")
            if k == 0:
                ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
    for ax in grid[-1]:
        ax.set_xlabel("time t [s]")
    if len(groups) > 1:
        for ax, members in zip(grid[0], groups, strict=True):
            ax.set_title(", ".join(members), fontsize="small")
    _legend(fig, list(grid.flat), styles, runs)
    fig.suptitle("Trajectories (colour: formulation, line style: solver"
                 + (", line width: dt" if several_dt else "") + "; black: references)")
    save(fig, path)
    return fig


def plot_metrics(table: pd.DataFrame, path: str | Path | None = None) -> Figure:
    """One horizontal bar chart per metric, a bar per run coloured by formulation (hatched if
    the run did not complete), on a log scale that starts at the metric's tolerance
    (:data:`METRIC_TOLERANCES`): a value at or below it is written "0 (below tol)" instead of
    drawn, so insignificant values are never the most visible; impulse metrics also read in
    newtons (impulse / dt) when the runs share one dt; all-zero metrics omitted."""
    def informative(column: str) -> bool:
        return bool((pd.to_numeric(table[column], errors="coerce").abs() > 0).any())

    present = [(c, label) for c, label in METRICS if c in table.columns and informative(c)]
    if not present and "time_per_step" in table:
        present = [("time_per_step", "time per step [s]")]
    several_dt = table["dt"].nunique() > 1 if len(table) else False
    labels = [_label(r.formulation, r.solver, r.dt, several_dt) for r in table.itertuples()]
    styles = Styles(table["formulation"] if len(table) else [], table["solver"] if len(table) else [])
    fig = new_figure(max(6.0, 3.2 * len(present)), 0.3 * len(labels) + 2.0)
    axes = fig.subplots(1, max(1, len(present)), sharey=True, squeeze=False)[0]
    colours = [styles.colour(f) for f in table["formulation"]] if len(table) else []
    hatches = ["//" if s != "completed" else "" for s in table["status"]] if len(table) else []
    for ax, (column, title) in zip(axes, present, strict=False):
        _metric_bars(ax, column, title, pd.to_numeric(table[column], errors="coerce").abs().to_numpy(dtype=float),
                     colours, hatches, float(table["dt"].iloc[0]) if len(table) and not several_dt else None)
    axes[0].set_yticks(np.arange(len(labels)), labels, fontsize="x-small")
    if labels:
        axes[0].set_ylim(len(labels) - 0.5, -0.5)  # the first run at the top
    fig.suptitle("Metrics per run (colour: formulation; hatched: did not complete; log scale from the tolerance)")
    save(fig, path)
    return fig


def _metric_bars(ax: Any, column: str, title: str, values: np.ndarray, colours: Sequence[Any],
                 hatches: Sequence[str], dt: float | None) -> None:
    finite = values[np.isfinite(values) & (values > 0)]
    tol = METRIC_TOLERANCES.get(column, float(finite.min()) / 3.0 if finite.size else 1e-9)
    top = max(float(finite.max()) if finite.size else tol, tol) * 3.0
    above = np.isfinite(values) & (values > tol)
    rows = np.arange(len(values))
    bars = ax.barh(rows[above], values[above] - tol, left=tol, color=np.asarray(colours, dtype=object)[above]
                   if len(colours) else None)
    for bar, hatch in zip(bars, np.asarray(hatches, dtype=object)[above] if len(hatches) else [], strict=True):
        bar.set_hatch(hatch)
    for row in rows[~above]:
        ax.text(tol * 1.15, row, "n/a" if not np.isfinite(values[row]) else "0 (below tol)", va="center",
                fontsize="xx-small", color="0.35")
    ax.set_xscale("log")
    ax.set_xlim(tol, top)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_title(title + (f"\ntol {tol:g}" if column in METRIC_TOLERANCES else ""), fontsize="small")
    ax.grid(True, axis="x", alpha=0.3)
    if column in IMPULSE_METRICS and dt is not None and dt > 0:
        force = ax.secondary_xaxis("top", functions=(lambda x: x / dt, lambda f: f * dt))
        force.set_xlabel("as a force: impulse / dt [N]", fontsize="x-small")
        force.tick_params(labelsize="xx-small")


def plot_time_per_step(traces: pd.DataFrame, path: str | Path | None = None) -> Figure:
    """Build + solve time of the steps of each run as a box plot (log scale; the median, the
    quartiles, whiskers at 1.5 IQR, outliers as points), runs sorted by median, coloured by
    formulation."""
    rows = []
    for (formulation, solver, dt), group in traces.groupby(_RUN, sort=False) if len(traces) else []:
        total = group.get("build_time", 0) + group.get("solve_time", 0)
        rows.append((formulation, solver, dt, np.maximum(np.asarray(total, dtype=float), 1e-7)))
    styles = Styles([r[0] for r in rows], [r[1] for r in rows])  # the order of the other figures
    rows.sort(key=lambda row: float(np.median(row[3])))
    several_dt = len({row[2] for row in rows}) > 1
    fig = new_figure(9, 0.32 * len(rows) + 1.6)
    ax = fig.subplots()
    if rows:
        parts = ax.boxplot([r[3] for r in rows], orientation="horizontal", widths=0.6, patch_artist=True,
                           flierprops={"markersize": 2, "alpha": 0.4})
        for patch, row in zip(parts["boxes"], rows, strict=True):
            patch.set_facecolor(styles.colour(row[0]))
            patch.set_alpha(0.7)
        ax.set_yticks(np.arange(1, len(rows) + 1), [_label(r[0], r[1], r[2], several_dt) for r in rows],
                      fontsize="x-small")
        ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("build + solve time per step [s]")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.set_title("Time per step (box: quartiles, line: median; fastest first)")
    save(fig, path)
    return fig
