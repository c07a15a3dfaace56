"""Figures of a comparison (:func:`contactopt.compare`): trajectories with their references,
metrics per run and time per step. Every function returns a :class:`matplotlib.figure.Figure`
(built without pyplot, see :mod:`contactopt.analysis.style`) and writes a file only when given
a ``path``. Colour: formulation; line style: solver."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from contactopt.analysis.style import Styles, figure_legend, new_figure, save
from contactopt.observable_kinds import coordinate_unit
from contactopt.observables import Observable

__all__ = ["METRICS", "plot_metrics", "plot_time_per_step", "plot_trajectories"]

METRICS = [("max_penetration", "max penetration [m]"), ("max_cone_violation", "max cone violation [N·s]"),
           ("max_ncp_desaxce", "max NCP residual (De Saxcé) [N·s]"),
           ("max_abs_energy_balance", "max |energy balance| [J]"),
           ("max_constraint_error", "max bilateral error"), ("time_per_step", "time per step [s]")]

_RUN = ["formulation", "solver", "dt"]


def _label(formulation: str, solver: str, dt: float, several_dt: bool) -> str:
    return f"{formulation} / {solver}" + (f" / dt={dt:g}" if several_dt else "")


def _coordinate_axis(names: Sequence[str], column: str) -> tuple[str, str]:
    """``("box.x", "m")`` for the trace column ``q[0]``."""
    index = int(column[2:-1])
    name = names[index] if index < len(names) else column
    return name, coordinate_unit(name)


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


def plot_trajectories(table: pd.DataFrame, traces: pd.DataFrame, path: str | Path | None = None,
                      coordinates: int = 3, *, names: Sequence[str] = (), observables: Sequence[Observable] = (),
                      q0: np.ndarray | None = None) -> Figure:
    """The coordinates the observables name, then those that move most (``coordinates`` in
    all), every run overlaid; axes named by ``names`` (the system's ``q_names``) with units;
    the observables' references drawn in black; the legend outside the panels."""
    state_columns = [c for c in traces.columns if c.startswith("q[")]
    wanted = [f"q[{list(names).index(o.coordinate)}]" for o in observables
              if o.coordinate is not None and o.coordinate in names]
    ranges = traces.groupby(_RUN)[state_columns].agg(np.ptp).max() if len(traces) else pd.Series(dtype=float)
    largest = float(ranges.max()) if len(ranges) else 0.0
    moving = [c for c in ranges.sort_values(ascending=False).index  # round-off motion is not shown
              if c not in wanted and ranges[c] > 1e-6 * largest]
    chosen = list(dict.fromkeys(wanted + moving))[:max(coordinates, len(set(wanted)))] or state_columns[:1]
    several_dt = traces["dt"].nunique() > 1 if len(traces) else False
    styles = Styles(traces["formulation"] if len(traces) else [], traces["solver"] if len(traces) else [])
    fig = new_figure(11, 2.6 * max(1, len(chosen)))
    axes = fig.subplots(max(1, len(chosen)), 1, sharex=True, squeeze=False)[:, 0]
    dt = float(traces["dt"].min()) if len(traces) else 0.0
    duration = float(traces["t"].max()) if len(traces) else 0.0
    horizontal, vertical = _references(observables, q0, dt, duration)
    for (formulation, solver, step), group in traces.groupby(_RUN, sort=False):
        for ax, column in zip(axes, chosen, strict=False):
            ax.plot(group["t"], group[column], linewidth=1.2, label=_label(formulation, solver, step, several_dt),
                    **styles.line(formulation, solver))
    for ax, column in zip(axes, chosen, strict=False):
        name, unit = _coordinate_axis(names, column) if column.startswith("q[") else (column, "")
        for value, label in horizontal.get(name, []):
            ax.axhline(value, color="black", linewidth=1.0, linestyle=(0, (4, 2)), label=label)
        for value, label in vertical:
            ax.axvline(value, color="black", linewidth=0.8, linestyle=(0, (1, 2)), label=label)
        ax.set_ylabel(f"{name} [{unit}]" if unit else name)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time t [s]")
    figure_legend(fig, axes, rows_per_column=24)
    fig.suptitle("Trajectories (colour: formulation, line style: solver; black: references)")
    save(fig, path)
    return fig


def plot_metrics(table: pd.DataFrame, path: str | Path | None = None) -> Figure:
    """One horizontal bar chart per metric, a bar per run coloured by formulation (hatched if
    the run did not complete), log scale with exact zeros at the floor; all-zero metrics omitted."""
    def informative(column: str) -> bool:
        return bool((pd.to_numeric(table[column], errors="coerce").abs() > 0).any())

    present = [(c, label) for c, label in METRICS if c in table.columns and informative(c)]
    if not present and "time_per_step" in table:
        present = [("time_per_step", "time per step [s]")]
    several_dt = table["dt"].nunique() > 1 if len(table) else False
    labels = [_label(r.formulation, r.solver, r.dt, several_dt) for r in table.itertuples()]
    styles = Styles(table["formulation"] if len(table) else [], table["solver"] if len(table) else [])
    fig = new_figure(max(6.0, 3.2 * len(present)), 0.3 * len(labels) + 1.8)
    axes = fig.subplots(1, max(1, len(present)), sharey=True, squeeze=False)[0]
    floor = 1e-16
    colours = [styles.colour(f) for f in table["formulation"]] if len(table) else []
    hatches = ["//" if s != "completed" else "" for s in table["status"]] if len(table) else []
    for ax, (column, title) in zip(axes, present, strict=False):
        values = pd.to_numeric(table[column], errors="coerce").abs().to_numpy(dtype=float)
        bars = ax.barh(np.arange(len(labels)), np.maximum(np.nan_to_num(values, nan=floor), floor), color=colours)
        for bar, hatch in zip(bars, hatches, strict=True):
            bar.set_hatch(hatch)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title, fontsize="small")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(np.arange(len(labels)), labels, fontsize="x-small")
    axes[0].invert_yaxis()
    fig.suptitle("Metrics per run (colour: formulation; hatched: did not complete; zeros at the left edge)")
    save(fig, path)
    return fig


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
