"""Order of convergence of each observable's error with the step size, per formulation and solver.

For a run at step ``h`` an observable's error ``e(h)`` (relative or absolute, as declared)
behaves like ``C h^p`` as ``h -> 0``; the order ``p`` is the slope of the least-squares line
through ``(log h, log |e(h)|)`` over the step sizes of a sweep (``contactopt compare --dt
h1,h2,...``). Semi-implicit Euler is first order (``p = 1``); an error that does not shrink
with ``h`` (Anitescu's hydroplaning hop) gives ``p ~ 0``. Points whose error is not finite
or at round-off (``<= ROUNDOFF``: an exact answer has no order) are left out; ``points``
counts those used.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from contactopt.analysis.style import Styles, figure_legend, new_figure, save

__all__ = ["CONVERGENCE_COLUMNS", "fit_order", "orders", "plot_convergence"]

#: Errors at or below this are round-off (an exact answer): they have no order and are left out.
ROUNDOFF = 1e-12

CONVERGENCE_COLUMNS = ["formulation", "solver", "observable", "order", "points", "dt_min", "dt_max",
                       "error_at_dt_min"]


def fit_order(dts: np.ndarray, errors: np.ndarray) -> tuple[float, int]:
    """``(p, n)``: the least-squares slope of ``log |error|`` against ``log dt`` and the number
    of points used (NaN with fewer than 2 distinct step sizes)."""
    dts = np.asarray(dts, dtype=np.float64)
    magnitude = np.abs(np.asarray(errors, dtype=np.float64))
    keep = np.isfinite(magnitude) & (magnitude > ROUNDOFF) & np.isfinite(dts) & (dts > 0)
    n = int(keep.sum())
    if np.unique(dts[keep]).size < 2:
        return math.nan, n
    slope = np.polyfit(np.log(dts[keep]), np.log(magnitude[keep]), 1)[0]
    return float(slope), n


def orders(long: pd.DataFrame) -> pd.DataFrame:
    """The fitted order per formulation, solver and observable (columns
    :data:`CONVERGENCE_COLUMNS`) from a :func:`~contactopt.analysis.observations.long_table`;
    empty unless some run was made at two step sizes or more."""
    rows = []
    if len(long) and long["dt"].nunique() >= 2:
        for (formulation, solver, observable), group in long.groupby(["formulation", "solver", "observable"],
                                                                      sort=False):
            order, n = fit_order(group["dt"].to_numpy(), group["error"].to_numpy())
            finest = group.loc[group["dt"].idxmin()]
            rows.append({"formulation": formulation, "solver": solver, "observable": observable, "order": order,
                         "points": n, "dt_min": float(group["dt"].min()), "dt_max": float(group["dt"].max()),
                         "error_at_dt_min": float(finest["error"])})
    numeric = {"order": float, "points": int, "dt_min": float, "dt_max": float, "error_at_dt_min": float}
    return pd.DataFrame(rows, columns=CONVERGENCE_COLUMNS).astype(numeric)


def plot_convergence(long: pd.DataFrame, path: str | Path | None = None) -> Figure:
    """|error| against dt on log-log axes, one panel per observable: colour by formulation,
    line style by solver, an order-1 guide line; the legend outside the panels (with the
    fitted order when there is one observable; :func:`orders` has them all). Saved to ``path`` only if one is given."""
    observables = list(dict.fromkeys(long["observable"])) if len(long) else []
    styles = Styles(long["formulation"] if len(long) else [], long["solver"] if len(long) else [])
    fig = new_figure(4.2 * max(1, len(observables)) + 3.0, 3.8)
    axes = fig.subplots(1, max(1, len(observables)), squeeze=False)[0]
    table = orders(long)
    for ax, observable in zip(axes, observables, strict=False):
        part = long[long["observable"] == observable]
        kind = part["error_kind"].iloc[0]
        unit = part["unit"].iloc[0]
        for (formulation, solver), group in part.groupby(["formulation", "solver"], sort=False):
            group = group.sort_values("dt")
            magnitude = group["error"].abs().to_numpy(dtype=float)
            shown = np.isfinite(magnitude) & (magnitude > ROUNDOFF)
            if not shown.any():
                continue
            fitted = table[(table["formulation"] == formulation) & (table["solver"] == solver)
                           & (table["observable"] == observable)]["order"]
            order = f", p = {float(fitted.iloc[0]):.2f}" if (
                len(observables) == 1 and len(fitted) and math.isfinite(fitted.iloc[0])) else ""
            ax.loglog(group["dt"].to_numpy()[shown], magnitude[shown], marker=styles.marker(solver),
                      label=f"{formulation} / {solver}{order}", **styles.line(formulation, solver))
        dts = np.sort(part["dt"].unique())
        magnitude = part["error"].abs()
        positive = magnitude[np.isfinite(magnitude) & (magnitude > ROUNDOFF)]
        if dts.size >= 2 and len(positive):
            anchor = float(np.exp(np.log(positive).mean()))
            middle = float(np.exp(np.log(dts).mean()))
            ax.loglog(dts, anchor * dts / middle, color="0.5", linestyle=(0, (1, 2)), linewidth=1,
                      label="order 1 (guide)" if ax is axes[0] else None)
        ax.set_xlabel("step size dt [s]")
        ax.set_ylabel(f"|relative error| of {observable}" if kind == "relative"
                      else f"|error| of {observable}" + (f" [{unit}]" if unit else ""))
        ax.set_title(observable, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
    figure_legend(fig, axes)
    fig.suptitle("Error against step size (colour: formulation, line style: solver)")
    save(fig, path)
    return fig
