"""Findings written from a comparison table (not hand-authored): per observable, which cells
are within tolerance of the reference and which are not and by how much, the fastest
formulation/solver per accuracy level, and the fitted convergence orders."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from contactopt.analysis.convergence import orders

__all__ = ["ACCURACY_LEVELS", "findings"]

#: Accuracy levels as multiples of an observable's tolerance.
ACCURACY_LEVELS = (0.1, 1.0, 10.0)


def _label(row: pd.Series, several_dt: bool) -> str:
    return f"{row['formulation']}/{row['solver']}" + (f" dt={row['dt']:g}" if several_dt else "")


def _error(value: float, kind: str, unit: str) -> str:
    return f"{100 * value:+.3g} %" if kind == "relative" else f"{value:+.3g}{' ' + unit if unit else ''}"


def _tolerance(value: float, kind: str, unit: str) -> str:
    return f"{100 * value:.3g} %" if kind == "relative" else f"{value:.3g}{' ' + unit if unit else ''}"


def findings(long: pd.DataFrame, table: pd.DataFrame, descriptions: dict[str, str] | None = None) -> list[str]:
    """Markdown lines: the findings of a comparison. ``long`` is
    :func:`~contactopt.analysis.observations.long_table` of ``table`` (which gives the
    ``time_per_step`` of each cell); ``descriptions`` the observables' descriptions."""
    if not len(long):
        return ["- The scene declares no observables (see `contactopt.scenes.observables`): nothing to compare "
                "against a reference."]
    lines: list[str] = []
    several_dt = long["dt"].nunique() > 1
    speed = {(r.formulation, r.solver, float(r.dt)): (float(r.time_per_step), float(r.time_per_step) * float(r.steps))
             for r in table.itertuples() if hasattr(r, "time_per_step") and hasattr(r, "steps")}
    dts = sorted(long["dt"].unique())
    shown_dts = dts if len(dts) <= 3 else [dts[0], dts[-1]]
    for observable, part in long.groupby("observable", sort=False):
        first = part.iloc[0]
        kind, unit, tolerance = str(first["error_kind"]), str(first["unit"]), float(first["tolerance"])
        about = (descriptions or {}).get(str(observable), "")
        lines.append(f"### {observable}" + (f": {about}" if about else ""))
        lines.append("")
        if not np.isfinite(part["reference"]).any():
            lines.append("- No reference value: measured only (see the table).")
            lines.append("")
            continue
        for dt in shown_dts:
            at = part[part["dt"] == dt]
            reference = at["reference"].dropna()
            ref_text = f"{reference.iloc[0]:.6g}{' ' + unit if unit else ''}" if len(reference) else "n/a"
            inside = at[at["within"]].sort_values("error", key=np.abs)
            outside = at[~at["within"] & np.isfinite(at["error"])].sort_values("error", key=np.abs)
            missing = at[~np.isfinite(at["error"])]
            prefix = f"- dt = {dt:g}: " if several_dt or len(shown_dts) > 1 else "- "
            lines.append(f"{prefix}reference {ref_text}, tolerance {_tolerance(tolerance, kind, unit)}.")
            within = ", ".join(f"{_label(r, False)} ({_error(r['error'], kind, unit)})" for _, r in inside.iterrows())
            lines.append(f"  - within tolerance: {within or 'none'}.")
            if len(outside):
                lines.append("  - outside: " + ", ".join(
                    f"{_label(r, False)} ({_error(r['error'], kind, unit)}, "
                    f"{abs(r['error']) / tolerance:.3g} x the tolerance)" for _, r in outside.iterrows()) + ".")
            if len(missing):
                lines.append("  - not measured (the run did not show it, e.g. never stopped, or failed): "
                             + ", ".join(_label(r, False) for _, r in missing.iterrows()) + ".")
        lines.append("- fastest per accuracy level (build + solve time of the run): " + "; ".join(
            _fastest(part, level, tolerance, kind, unit, speed, several_dt) for level in ACCURACY_LEVELS) + ".")
        lines.append("")
    lines += _overall(long, speed, several_dt)
    fitted = orders(long)
    fitted = fitted[np.isfinite(fitted["order"])]
    if len(fitted):
        lines.append("### Convergence (order p of |error| ~ dt^p, least squares over the step sizes)")
        lines.append("")
        for observable, part in fitted.groupby("observable", sort=False):
            lines.append(f"- {observable}: " + ", ".join(
                f"{r['formulation']}/{r['solver']} p = {r['order']:.2f}" for _, r in part.iterrows()) + ".")
        lines.append("")
    return lines


def _cost(speed: dict[tuple[str, str, float], tuple[float, float]], key: tuple[str, str, float]) -> str:
    per_step, total = speed[key]
    return f"{total:.3g} s, {1e3 * per_step:.3g} ms per step"


def _fastest(part: pd.DataFrame, level: float, tolerance: float, kind: str, unit: str,
             speed: dict[tuple[str, str, float], tuple[float, float]], several_dt: bool) -> str:
    """The cell with the least total build + solve time among those within ``level`` tolerances
    (a finer step costs more steps: the run's total, not the time per step, decides)."""
    bound = level * tolerance
    good = part[np.abs(part["error"]) <= bound]
    what = f"|error| <= {_tolerance(bound, kind, unit)}"
    keys = [(r["formulation"], r["solver"], float(r["dt"])) for _, r in good.iterrows()]
    keys = [k for k in keys if k in speed and math.isfinite(speed[k][1])]
    if not keys:
        return f"{what}: none"
    best = min(keys, key=lambda k: speed[k][1])
    return f"{what}: {best[0]}/{best[1]}" + (f" dt={best[2]:g}" if several_dt else "") + f" ({_cost(speed, best)})"


def _overall(long: pd.DataFrame, speed: dict[tuple[str, str, float], tuple[float, float]],
             several_dt: bool) -> list[str]:
    """The cells within every tolerance, and the fastest of them."""
    cells = long.groupby(["formulation", "solver", "dt"], sort=False)
    rows: Sequence[tuple[tuple[str, str, float], bool]] = [
        (key, bool(group["within"].all())) for key, group in cells if np.isfinite(group["reference"]).any()]
    good = [key for key, ok in rows if ok]
    lines = ["### Overall", ""]
    if not good:
        lines.append("- No run is within the tolerance of every observable.")
    else:
        timed = sorted(good, key=lambda key: speed.get(key, (math.nan, math.inf))[1])
        listed = ", ".join(f"{f}/{s}" + (f" dt={d:g}" if several_dt else "") for f, s, d in timed)
        lines.append(f"- Within the tolerance of every observable (fastest first): {listed}.")
        if timed[0] in speed:
            f, s, d = timed[0]
            lines.append(f"- Fastest of them: {f}/{s}" + (f" dt={d:g}" if several_dt else "")
                         + f" ({_cost(speed, timed[0])}).")
    lines.append("")
    return lines
