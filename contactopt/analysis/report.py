"""Figures and a Markdown report for a comparison table (:func:`contactopt.analysis.compare.compare`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from contactopt.tables import format_table

__all__ = ["plot_metrics", "plot_time_per_step", "plot_trajectories", "write_report"]

METRICS = [("max_penetration", "max penetration [m]"), ("max_cone_violation", "max cone violation [N·s]"),
           ("max_ncp_desaxce", "max NCP residual (De Saxcé)"), ("max_abs_energy_drift", "max |energy drift| [J]"),
           ("max_constraint_error", "max bilateral error"), ("time_per_step", "time per step [s]")]


def _labels(table: pd.DataFrame) -> list[str]:
    multiple_dt = table["dt"].nunique() > 1
    return [f"{r.formulation} / {r.solver}" + (f" / {r.dt:g}" if multiple_dt else "") for r in table.itertuples()]


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_trajectories(table: pd.DataFrame, traces: pd.DataFrame, path: Path, coordinates: int = 3) -> Path:
    """The coordinates that move most, every run overlaid."""
    plt = _pyplot()
    state_columns = [c for c in traces.columns if c.startswith("q[")]
    ranges = traces.groupby(["formulation", "solver", "dt"])[state_columns].agg(np.ptp).max() \
        if len(traces) else pd.Series(dtype=float)
    chosen = list(ranges.sort_values(ascending=False).index[:coordinates]) or state_columns[:1]
    fig, axes = plt.subplots(len(chosen) or 1, 1, figsize=(9, 2.6 * max(1, len(chosen))), sharex=True,
                             constrained_layout=True, squeeze=False)
    for (formulation, solver, dt), group in traces.groupby(["formulation", "solver", "dt"], sort=False):
        for ax, column in zip(axes[:, 0], chosen, strict=False):
            ax.plot(group["t"], group[column], label=f"{formulation} / {solver} / {dt:g}", linewidth=1)
    for ax, column in zip(axes[:, 0], chosen, strict=False):
        ax.set_ylabel(column)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time [s]")
    axes[0, 0].legend(fontsize="x-small", ncol=2)
    fig.suptitle("Trajectories (the coordinates that move most)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_metrics(table: pd.DataFrame, path: Path) -> Path:
    """One horizontal bar chart per metric, a bar per run (log scale; exact zeros at the floor)."""
    plt = _pyplot()
    def informative(column: str) -> bool:  # all-zero metrics would only show bars at the log floor
        values = pd.to_numeric(table[column], errors="coerce").abs()
        return bool((values > 0).any())

    present = [(c, label) for c, label in METRICS if c in table.columns and informative(c)]
    if not present:
        present = [("time_per_step", "time per step [s]")] if "time_per_step" in table else []
    labels = _labels(table)
    fig, axes = plt.subplots(1, len(present), figsize=(3.2 * len(present), 0.35 * len(labels) + 1.8),
                             sharey=True, constrained_layout=True, squeeze=False)
    floor = 1e-16
    for ax, (column, title) in zip(axes[0], present, strict=True):
        values = pd.to_numeric(table[column], errors="coerce").abs().to_numpy(dtype=float)
        ax.barh(np.arange(len(labels)), np.maximum(np.nan_to_num(values, nan=floor), floor),
                color=["tab:red" if s != "completed" else "tab:blue" for s in table["status"]])
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(title, fontsize="small")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0, 0].set_yticks(np.arange(len(labels)), labels, fontsize="x-small")
    axes[0, 0].invert_yaxis()
    fig.suptitle("Metrics per run (red: the run did not complete; exact zeros at the left edge; "
                 "all-zero metrics omitted)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_time_per_step(traces: pd.DataFrame, path: Path) -> Path:
    """Build + solve time of every step, per run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    for (formulation, solver, dt), group in traces.groupby(["formulation", "solver", "dt"], sort=False):
        total = group.get("build_time", 0) + group.get("solve_time", 0)
        ax.semilogy(group["t"], np.maximum(np.asarray(total, dtype=float), 1e-7), linewidth=0.8,
                    label=f"{formulation} / {solver} / {dt:g}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("build + solve time per step [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=2)
    ax.set_title("Time per step")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(title: str, table: pd.DataFrame, traces: pd.DataFrame, folder: Path,
                 columns: Sequence[str], notes: Sequence[str] = ()) -> list[Path]:
    """Figures and ``report.md`` embedding them, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    figures: list[Path] = []
    if len(traces):
        figures.append(plot_trajectories(table, traces, folder / "trajectories.png"))
        figures.append(plot_time_per_step(traces, folder / "time_per_step.png"))
    if len(table):
        figures.append(plot_metrics(table, folder / "metrics.png"))
    lines = [f"# {title}", "", format_table(table, columns, markdown=True, digits=3), ""]
    lines += [f"- {note}" for note in notes]
    lines += ["", *(f"![{p.stem}]({p.name})\n" for p in figures)]
    lines += ["Metric definitions: `contactopt.analysis.metrics` (docstrings). Full table: `table.csv`, "
              "`table.parquet`; per-step traces: `traces.parquet`."]
    report = folder / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return [*figures, report]
