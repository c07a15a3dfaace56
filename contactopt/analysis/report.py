"""Figures and a Markdown report for a comparison table (:func:`contactopt.analysis.compare.compare`).

``report.md`` holds the metrics table, the observables with their references and errors,
findings computed from those tables (:mod:`contactopt.analysis.findings`), the convergence
orders of a step-size sweep, and the figures (:mod:`contactopt.analysis.figures`,
:mod:`contactopt.analysis.convergence`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from contactopt.analysis.convergence import orders, plot_convergence
from contactopt.analysis.explain import cell_notes, run_notes, shown_solver
from contactopt.analysis.figures import METRICS, plot_metrics, plot_time_per_step, plot_trajectories
from contactopt.analysis.findings import findings
from contactopt.analysis.legend import DEFINITIONS
from contactopt.analysis.observations import display_table, long_table
from contactopt.core.outputs import write_text
from contactopt.core.tables import format_table
from contactopt.scenes.loading import Scene

__all__ = ["METRICS", "plot_metrics", "plot_time_per_step", "plot_trajectories", "write_report"]


def write_report(title: str, table: pd.DataFrame, traces: pd.DataFrame, folder: Path,
                 columns: Sequence[str], notes: Sequence[str] = (), *, scene: Scene | None = None) -> list[Path]:
    """Figures and ``report.md`` embedding them, in ``folder`` (``scene`` gives coordinate
    names, the observables and their references; without it the report has the metrics only)."""
    folder.mkdir(parents=True, exist_ok=True)
    figures: list[Path] = []
    observables = scene.observables if scene is not None else ()
    if len(traces):
        plot_trajectories(table, traces, folder / "trajectories.png",
                          names=scene.system.q_names if scene is not None else (), observables=observables,
                          q0=np.asarray(scene.q0) if scene is not None else None,
                          units=scene.system.coordinate_units()[0] if scene is not None else ())
        plot_time_per_step(traces, folder / "time_per_step.png")
        figures += [folder / "trajectories.png", folder / "time_per_step.png"]
    if len(table):
        plot_metrics(table, folder / "metrics.png")
        figures.append(folder / "metrics.png")
    long = long_table(table) if len(table) else pd.DataFrame()
    fitted = orders(long) if len(long) else pd.DataFrame()
    if len(fitted):
        plot_convergence(long, folder / "convergence.png")
        figures.append(folder / "convergence.png")
    shown = table.copy()
    if len(shown):
        shown["solver"] = [shown_solver(row) for row in table.to_dict("records")]
    lines = [f"# {title}", "", format_table(shown, columns, markdown=True, digits=3), ""]
    lines += [f"- {note}" for note in notes]
    lines += ["", "Columns:", ""] + [f"- `{column}`: {DEFINITIONS[column]}" for column in columns
                                     if column in DEFINITIONS]
    if len(long):
        lines += ["", "## Observables", "", "Value (error against the reference; `ok` within tolerance, "
                  "`OFF` outside). Definitions: `contactopt.scenes.observables`; one row per cell and "
                  "observable: `observables.csv`.", "",
                  format_table(display_table(shown), markdown=True, digits=4), ""]
    if len(fitted):
        lines += ["## Convergence", "", format_table(fitted, markdown=True, digits=3), ""]
    descriptions = {o.name: o.description for o in observables}
    lines += ["## Findings", "", *findings(long, table, descriptions)] if len(table) else []
    explained = [*cell_notes(table), *run_notes(table)] if len(table) else []
    if explained:  # every OFF and n/a cell, every run that stopped, failed or was not solved to tolerance
        lines += ["### Why cells are OFF or n/a, and runs not completed", "", *(f"- {line}" for line in explained), ""]
    lines += ["", *(f"![{p.stem}]({p.name})\n" for p in figures)]
    lines += ["Metric definitions: `contactopt.analysis.metrics` (docstrings); the energy balance: "
              "`contactopt.analysis.energy`. Full table: `table.csv`, `table.parquet`; per-step traces: "
              "`traces.parquet`."]
    report = folder / "report.md"
    write_text(report, "\n".join(lines) + "\n", "report")
    return [*figures, report]
