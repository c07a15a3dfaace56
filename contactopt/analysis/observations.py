"""The observables of a scene (:mod:`contactopt.scenes.observables`) measured on runs, in tables.

* :func:`measure_all`: one run's columns ``NAME`` (the value), ``NAME_ref`` (the reference for
  the run's step and duration) and ``NAME_err`` (relative or absolute error, as declared);
* :func:`long_table`: the comparison table reshaped to one row per cell and observable, with
  the unit, error kind, tolerance and whether the cell is within it;
* :func:`display_table`: the compact table ``contactopt compare`` prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from contactopt.records.trajectory import Trajectory
from contactopt.scenes.expressions import ExpressionError
from contactopt.scenes.loading import Scene
from contactopt.scenes.observables import Observable

__all__ = ["LONG_COLUMNS", "describe", "display_table", "long_table", "measure_all", "metadata"]

LONG_COLUMNS = ["formulation", "solver", "dt", "status", "observable", "kind", "unit", "value", "reference",
                "error", "error_kind", "tolerance", "within"]


def measure_all(scene: Scene, traj: Trajectory, run: Mapping[str, Any], h: float,
                T: float) -> tuple[dict[str, float], list[str]]:
    """The columns of every observable of ``scene`` on ``traj``, and the problems met (an
    observable that cannot be measured is NaN and named there, never a made-up value)."""
    columns: dict[str, float] = {}
    problems: list[str] = []
    for observable in scene.observables:
        try:
            value = observable.measure(traj, run, h, T)
        except (ExpressionError, ValueError, ArithmeticError) as exc:
            value = math.nan
            problems.append(f"observable {observable.name}: {exc}")
        reference = observable.reference_value(h, T)
        note = observable.reference_note(h, T)
        if note:  # reported, never an error against it
            problems.append(f"observable {observable.name}: {note}")
        error, _ = observable.compare(value, reference)
        columns.update({observable.name: value, f"{observable.name}_ref": reference,
                        f"{observable.name}_err": error})
    return columns, problems


def metadata(observables: Sequence[Observable]) -> list[dict[str, Any]]:
    """What a table needs to know about each observable (kept in ``table.attrs["observables"]``)."""
    return [{"name": o.name, "kind": o.kind, "unit": o.unit, "error": o.error, "tolerance": o.tolerance,
             "description": o.description, "coordinate": o.coordinate or "",
             "reference": "" if o.reference is None else str(o.reference)} for o in observables]


def _meta(table: pd.DataFrame, meta: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    found = list(meta if meta is not None else table.attrs.get("observables", []))
    return [m for m in found if m["name"] in table.columns]


def long_table(table: pd.DataFrame, meta: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per cell and observable (columns :data:`LONG_COLUMNS`). ``meta`` defaults to
    ``table.attrs["observables"]`` (set by :func:`contactopt.compare`)."""
    rows: list[dict[str, Any]] = []
    for m in _meta(table, meta):
        name = m["name"]
        for _, cell in table.iterrows():
            error = float(cell.get(f"{name}_err", math.nan))
            rows.append({"formulation": cell["formulation"], "solver": cell["solver"], "dt": float(cell["dt"]),
                         "status": cell.get("status", ""), "observable": name, "kind": m["kind"],
                         "unit": m["unit"], "value": float(cell.get(name, math.nan)),
                         "reference": float(cell.get(f"{name}_ref", math.nan)), "error": error,
                         "error_kind": m["error"], "tolerance": float(m["tolerance"]),
                         "within": bool(np.isfinite(error) and abs(error) <= float(m["tolerance"]))})
    return pd.DataFrame(rows, columns=LONG_COLUMNS)


def _format_error(error: float, kind: str, unit: str) -> str:
    if not math.isfinite(error):
        return "n/a"
    return f"{100 * error:+.3g}%" if kind == "relative" else f"{error:+.3g}{' ' + unit if unit else ''}"


def display_table(table: pd.DataFrame, meta: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Per cell: each observable as ``value (error) ok|OFF`` under a header naming its unit and
    reference (the reference itself when it is the same for every cell)."""
    out = table[["formulation", "solver", "dt"]].copy()
    for m in _meta(table, meta):
        name = m["name"]
        references = pd.to_numeric(table[f"{name}_ref"], errors="coerce").to_numpy(dtype=float)
        same = bool(np.all(references == references[0])) if references.size else False
        unit = f" [{m['unit']}]" if m["unit"] else ""
        undefined = bool(m["reference"]) and references.size > 0 and not np.isfinite(references).any()
        header = f"{name}{unit}" + (f" ref {references[0]:.4g}" if same and math.isfinite(references[0])
                                    else f" ref {references[0]:g} (undefined)" if undefined else "")
        cells = []
        for _, cell in table.iterrows():
            value = float(cell.get(name, math.nan))
            error = float(cell.get(f"{name}_err", math.nan))
            text = "n/a" if not math.isfinite(value) else f"{value:.4g}"
            if not same and math.isfinite(float(cell.get(f'{name}_ref', math.nan))):
                text += f" vs {float(cell[f'{name}_ref']):.4g}"
            if math.isfinite(error):
                mark = "ok" if abs(error) <= float(m["tolerance"]) else "OFF"
                text += f" ({_format_error(error, m['error'], m['unit'])}) {mark}"
            cells.append(text)
        out[header] = cells
    return out


def describe(observables: Sequence[Observable], values: Mapping[str, float]) -> list[str]:
    """One line per observable of a single run (``contactopt run``): value, reference, error,
    tolerance and whether it is within."""
    lines = []
    for o in observables:
        value, reference, error = values[o.name], values[f"{o.name}_ref"], values[f"{o.name}_err"]
        unit = f" {o.unit}" if o.unit else ""
        text = f"{o.name} = {'n/a' if not math.isfinite(value) else f'{value:.6g}{unit}'}"
        if math.isfinite(reference):
            text += f", reference {reference:.6g}{unit}"
        elif o.reference is not None:
            text += f", reference {reference} (undefined for these parameters, see below)"
        if math.isfinite(error):
            within = "ok" if abs(error) <= o.tolerance else "OFF"
            text += (f", error {_format_error(error, o.error, o.unit)} (tolerance "
                     f"{_format_error(o.tolerance, o.error, o.unit).lstrip('+')}): {within}")
        lines.append(text)
    return lines
