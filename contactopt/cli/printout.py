"""The tables ``contactopt compare`` and ``run`` print: a compact set of columns that fits the
terminal (``--wide``: every column, in panels), the legend of each column under the table, and
notes that explain every ``OFF``, ``n/a``, stopped or failed row
(:mod:`contactopt.analysis.explain`).

Compact tables move a column whose value is the same in every row into one line above the
table (``same for every run: dt 0.001, status completed, ...``), show metrics under short
two-line headers (:data:`~contactopt.analysis.legend.COMPACT_HEADERS`, each named in the
legend with its column of ``table.csv``) with 3 significant digits, and show each observable
as its error against the reference with ``ok``/``OFF`` (``--wide``: the value too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from contactopt.analysis.explain import cell_notes, not_optimal, run_notes, shown_solver
from contactopt.analysis.legend import COMPACT_HEADERS, legend, wrapped
from contactopt.core.tables import format_table, terminal_width

__all__ = ["compare_notes", "metrics_view", "observables_legend", "observables_view", "print_view"]

#: The compact metric columns of ``contactopt compare`` (table.csv name -> header).
COMPACT = {column: header for header, column in COMPACT_HEADERS.items()}
#: Columns of table.csv that --wide leaves out (observables have their own table).
HIDDEN = ("traceback", "cell")
LABELS = ("formulation", "solver")


def _same_for_every_row(view: pd.DataFrame, keep: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """``view`` less the columns with one value in every row (of at least two rows), and those
    as ``name value`` items."""
    if len(view) < 2:
        return view, []
    constant = []
    for column in view.columns:
        if column in keep:
            continue
        values = view[column].astype(str)
        if values.nunique(dropna=False) == 1:
            constant.append(column)
    items = [f"{column.replace(chr(10), ' ')} {_text(view[column].iloc[0])}" for column in constant]
    return view.drop(columns=constant), items


def _text(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3g}"
    return str(value)


def metrics_view(table: pd.DataFrame, wide: bool) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The metrics table as printed, the ``same for every run`` items (compact only) and the
    columns the legend explains (those printed and those in the ``same`` line)."""
    observables = {m["name"] for m in table.attrs.get("observables", [])}
    if wide:
        columns = [c for c in table.columns if c not in HIDDEN and c not in observables
                   and not any(c == f"{name}_ref" or c == f"{name}_err" for name in observables)]
        columns = [*LABELS, *(c for c in columns if c not in LABELS)]  # the labels each panel repeats
        view = table[columns].copy()
        view["solver"] = [shown_solver(row) for row in table.to_dict("records")]
        return view, [], list(view.columns)
    view = pd.DataFrame({"formulation": table["formulation"],
                         "solver": [shown_solver(row) for row in table.to_dict("records")],
                         "dt": table["dt"], "status": table["status"], "steps": table.get("steps")})
    for column, header in COMPACT.items():
        if column in table:
            view[header] = pd.to_numeric(table[column], errors="coerce")
    if "time_per_step" in table:
        view["ms/step"] = pd.to_numeric(table["time_per_step"], errors="coerce") * 1e3
    view["not\noptimal"] = [sum(int(part.split()[0]) for part in not_optimal(row).split(", ") if part)
                           for row in table.to_dict("records")]
    shown, same = _same_for_every_row(view, LABELS)
    return shown, same, list(view.columns)


def _compact_observable(value: float, reference: float, error: float, meta: Mapping[str, Any]) -> str:
    if not math.isfinite(value):
        return "n/a"
    if not math.isfinite(error):
        return f"{value:.4g}"
    mark = "ok" if abs(error) <= float(meta["tolerance"]) else "OFF"
    if meta["error"] == "relative":
        return f"{100 * error:+.3g}% {mark}"
    return f"{value:.3g} {mark}" if reference == 0 else f"{error:+.3g} {mark}"


def observables_view(table: pd.DataFrame, wide: bool) -> pd.DataFrame:
    """Each observable of each run: its error against the reference and ok | OFF (``wide``:
    :func:`~contactopt.analysis.observations.display_table`, value and error)."""
    from contactopt.analysis.observations import display_table

    if wide:
        view = display_table(table)
        view["solver"] = [shown_solver(row) for row in table.to_dict("records")]
        return view
    view = pd.DataFrame({"formulation": table["formulation"],
                         "solver": [shown_solver(row) for row in table.to_dict("records")]})
    if table["dt"].nunique() > 1:
        view["dt"] = table["dt"]
    for meta in table.attrs.get("observables", []):
        name = meta["name"]
        if name not in table:
            continue
        references = pd.to_numeric(table[f"{name}_ref"], errors="coerce")
        unit = f" [{meta['unit']}]" if meta["unit"] else ""
        same = references.nunique(dropna=False) == 1 and math.isfinite(float(references.iloc[0]))
        vs = f"vs {float(references.iloc[0]):.4g}" if same else (
            "vs reference" if references.notna().any() else "value")
        header = f"{name}\n{unit.strip()} {vs}".replace("\n ", "\n")
        view[header] = [_compact_observable(_number(row.get(name)), _number(row.get(f"{name}_ref")),
                                            _number(row.get(f"{name}_err")), meta) for row in table.to_dict("records")]
    return view


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def observables_legend(table: pd.DataFrame, width: int, wide: bool) -> str:
    """What each observable is, its tolerance, and how its cells read."""
    items = []
    for meta in table.attrs.get("observables", []):
        tolerance = float(meta["tolerance"])
        shown = f"{100 * tolerance:.3g} %" if meta["error"] == "relative" else \
            f"{tolerance:.3g}{' ' + meta['unit'] if meta['unit'] else ''}"
        reference = f" (reference {meta['reference']})" if meta.get("reference") else ""
        items.append(f"{meta['name']}: {meta.get('description') or meta['kind']}{reference}; tolerance {shown}")
    cells = ("value (error against the reference)" if wide else
             "error against the reference (relative in %, absolute in the unit; the value where the reference is 0)")
    items.append(f"cells: {cells}, then ok | OFF: within the tolerance or not; n/a: not measured (notes below)")
    return wrapped(items, width, title="columns")


def print_view(view: pd.DataFrame, *, width: int | None = None, digits: int = 3, index: int = 2,
               same: Sequence[str] = (), legend_of: Sequence[str] | None = None, legend_text: str = "",
               notes: Sequence[str] = ()) -> None:
    """Print ``view`` within ``width`` (default: the terminal's), preceded by the ``same for
    every run`` line, followed by the legend of its columns and by ``notes``."""
    width = terminal_width() if width is None else width
    if same:
        print(wrapped(["; ".join(same)], width, title="same for every run"))
    print(format_table(view, width=width, digits=digits, index=index))
    text = legend_text or legend(legend_of if legend_of is not None else list(view.columns), width)
    if text:
        print(text)
    if notes:
        print(wrapped(list(notes), width, title="notes"))


def compare_notes(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(notes under the metrics table, notes under the observables table)."""
    return run_notes(table), cell_notes(table)


#: Coordinates shown by :func:`print_sensitivities` (the largest; every one is in the file).
SHOWN_COORDINATES = 12


def print_sensitivities(scene: Any, traj: Any) -> None:
    """The final state's sensitivities of ``contactopt run --sensitivities``: a table of
    ``d(q_N, v_N)/d name`` for the scalar names (the largest coordinates when there are many),
    a line per vector name (``q0``, ``v0``, ``u``: their matrices are in trajectory.npz)."""
    import numpy as np

    system = scene.system
    coordinates = [*system.q_names, *system.v_names]
    scalars = {name: values[-1] for name, values in traj.sensitivities.items() if values.ndim == 2}
    width = terminal_width()
    if scalars:
        stacked = np.abs(np.stack(list(scalars.values()), axis=1))
        order = np.argsort(-np.nan_to_num(stacked.max(axis=1), nan=np.inf), kind="stable")[:SHOWN_COORDINATES]
        rows = [{"coordinate": coordinates[i], **{f"d/d {name}": float(v[i]) for name, v in scalars.items()}}
                for i in sorted(order)]
        shown = "" if len(order) == len(coordinates) else f" (the {len(order)} largest of {len(coordinates)})"
        print(f"sensitivities of the final state at t={traj.t[-1]:.6g}{shown}:")
        print(format_table(rows, width=width, digits=4, index=1))
    for name, values in traj.sensitivities.items():
        if values.ndim > 2:
            final = values[-1].reshape(values.shape[1], -1)
            print(wrapped([f"d(q, v)/d {name} at the final state: a {final.shape[0]} x {final.shape[1]} matrix "
                           f"(largest |entry| {np.nanmax(np.abs(final)) if final.size else 0.0:.4g}), every "
                           "state's in trajectory.npz"], width, title="sensitivities"))
    stopped = traj.info.get("sensitivities", {}).get("stopped")
    if stopped:
        print(wrapped([f"sensitivities stopped at {stopped}"], width, title="note"))
