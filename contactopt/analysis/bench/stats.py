"""Statistics of a benchmark table: shifted geometric means, ratios to the best solver and
Dolan-Moré performance profiles (definitions in :mod:`contactopt.analysis.bench`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contactopt.core.errors import OptionError

__all__ = ["SHIFT", "display_summary", "performance_profile", "performance_ratios", "shifted_geometric_mean",
           "summarize"]

#: Shift of the shifted geometric means (qpbenchmark's value).
SHIFT = 10.0

# Why qpsolvers_benchmark's own statistics are not called here (they are the reference the
# tests check these against, tests/test_export_bench.py):
# * qpsolvers_benchmark.shgeom.shgeom computes exp(mean(log(v + s))) - s. For residuals of 1e-9
#   with s = 10 the subtraction cancels all but about 6 significant digits (and 1e-12 would keep
#   3); the same mean as s * expm1(mean(log1p(v / s))) keeps them all. It also refuses s < 1.
# * Results.build_shgeom_df / build_success_rate_df read qpbenchmark's results CSV (columns
#   found, settings, primal_residual, cost_error, ... of a TestSet run) and return only the
#   ratios to the best solver; our table comes from contactopt's own solves and residuals and
#   reports the means as well as the ratios.
# * Importing qpsolvers_benchmark imports qpsolvers and every backend it finds (about 2 s), and
#   it is only a development dependency, while `contactopt bench` is part of the core package.
# * qpbenchmark plots the number of problems solved against a metric (plot_metric); it has no
#   Dolan-Moré performance profile, which is computed below.


def shifted_geometric_mean(values: ArrayLike, shift: float = SHIFT) -> float:
    """``exp(mean(log(v + shift))) - shift`` of non-negative ``values`` (module docstring)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return float("nan")
    if not shift > 0:
        raise OptionError(f"the shift must be positive, got {shift}")
    if np.any(np.isnan(v)) or np.any(v < 0):
        raise OptionError("the shifted geometric mean takes non-negative numbers")
    if np.any(np.isinf(v)):
        return float("inf")
    return float(shift * np.expm1(np.mean(np.log1p(v / shift))))


def summarize(df: Any, shift: float = SHIFT) -> Any:
    """Per (solver, profile): problems, solved, success_rate (fraction in [0, 1]), time_sgm [s]
    and residual_sgm (shifted geometric means, failures counted at the time limit / at the
    tolerance, see the module docstring: qpbenchmark's scores, not times of any solve), their
    ratios to the best solver of the profile, time_sgm_solved [s] (the same mean over the
    solved programs only; NaN if none), time_median_solved and time_iqr_solved [s] (median and
    interquartile range over the solved programs), and unsupported (programs the solver could not take,
    counted as failures). :func:`display_summary` is the table to show a reader."""
    import pandas as pd

    records: list[dict[str, Any]] = []
    for (solver, profile), group in df.groupby(["solver", "profile"], sort=False):
        success = group["success"].to_numpy(dtype=bool)
        times = np.where(success, group["runtime"].to_numpy(dtype=float), group["time_limit"].to_numpy(dtype=float))
        residual = group["residual"].to_numpy(dtype=float)
        usable = np.isin(group["status"].to_numpy(dtype=str), ["optimal", "inaccurate"]) & np.isfinite(residual)
        residual = np.where(usable, residual, group["tolerance"].to_numpy(dtype=float))
        records.append({
            "solver": solver, "profile": profile, "problems": len(group), "solved": int(success.sum()),
            "success_rate": float(success.mean()) if len(group) else float("nan"),
            "time_sgm": shifted_geometric_mean(times, shift),
            "time_sgm_solved": shifted_geometric_mean(times[success], shift),
            **_median_and_spread(times[success]),
            "residual_sgm": shifted_geometric_mean(residual, shift),
            "unsupported": int((group["status"] == "unsupported").sum()),
        })
    summary = pd.DataFrame(records, columns=["solver", "profile", "problems", "solved", "success_rate",
                                             "time_sgm", "time_sgm_solved", "time_median_solved",
                                             "time_iqr_solved", "residual_sgm", "unsupported"])
    for column in ("time_sgm", "residual_sgm"):
        best = summary.groupby("profile")[column].transform("min")
        summary[f"{column}_ratio"] = [_ratio(v, b) for v, b in zip(summary[column], best, strict=True)]
    return summary[["solver", "profile", "problems", "solved", "success_rate", "time_sgm",
                    "time_sgm_ratio", "time_sgm_solved", "time_median_solved", "time_iqr_solved", "residual_sgm",
                    "residual_sgm_ratio", "unsupported"]]


def _median_and_spread(times: Any) -> dict[str, float]:
    """Median run time of the solved programs and its spread, the interquartile range
    (75th minus 25th percentile, numpy's linear interpolation); NaN where none was solved."""
    if len(times) == 0:
        return {"time_median_solved": float("nan"), "time_iqr_solved": float("nan")}
    q1, median, q3 = np.percentile(np.asarray(times, dtype=float), [25.0, 50.0, 75.0])
    return {"time_median_solved": float(median), "time_iqr_solved": float(q3 - q1)}


def display_summary(summary: Any) -> list[dict[str, Any]]:
    """The rows of :func:`summarize` as a reader sees them: no penalty shown as a time.

    ``solved`` as ``k/N``; ``time_sgm_solved [s]`` the mean over the solved programs, ``failed``
    where none was solved and ``(k/N)`` after it where some were not; ``time_score`` the
    penalised ratio ``time_sgm_ratio`` (qpbenchmark's ranking, dimensionless), ``failed`` where
    nothing was solved; ``residual_sgm`` likewise ``failed`` where nothing was solved.
    """
    rows: list[dict[str, Any]] = []
    for record in summary.to_dict("records"):
        solved, problems = int(record["solved"]), int(record["problems"])
        none = solved == 0
        time = "failed" if none else f"{record['time_sgm_solved']:.4g}"
        if 0 < solved < problems:
            time += f" ({solved}/{problems})"
        rows.append({
            "solver": record["solver"], "profile": record["profile"], "solved": f"{solved}/{problems}",
            "success_rate": record["success_rate"], "time_sgm_solved [s]": time,
            "median (IQR) [s]": "failed" if none else
            f"{record['time_median_solved']:.3g} ({record['time_iqr_solved']:.2g})",
            "time_score": "failed" if none else f"{record['time_sgm_ratio']:.4g}",
            "residual_sgm": "failed" if none else f"{record['residual_sgm']:.3g}",
            "unsupported": record["unsupported"],
        })
    return rows


def _ratio(value: float, best: float) -> float:
    if best > 0:
        return float(value / best)
    return 1.0 if value == best else float("inf")


def performance_ratios(df: Any, profile: str) -> Any:
    """(programs x solvers) Dolan-Moré ratios ``t_ps / min_s t_ps`` for one profile (inf: failed)."""
    import pandas as pd

    rows = df[df["profile"] == profile]
    programs = list(dict.fromkeys(rows["program"]))
    solvers = list(dict.fromkeys(rows["solver"]))
    times = np.full((len(programs), len(solvers)), np.inf)
    where = {name: i for i, name in enumerate(programs)}
    which = {name: j for j, name in enumerate(solvers)}
    for program, solver, success, runtime in rows[["program", "solver", "success", "runtime"]].itertuples(
            index=False):
        if success:
            i, j = where[program], which[solver]
            times[i, j] = min(times[i, j], float(runtime))
    best = times.min(axis=1, keepdims=True) if solvers else np.zeros((len(programs), 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(np.isfinite(times) & np.isfinite(best), times / np.maximum(best, 1e-300), np.inf)
    return pd.DataFrame(ratios, index=programs, columns=solvers)


def performance_profile(df: Any, path: str | Path, *, title: str | None = None) -> Path:
    """Dolan-Moré performance profile of run time, one panel per profile, written to ``path``."""
    from matplotlib.figure import Figure  # no pyplot: a running notebook's backend is left alone

    from contactopt.analysis.style import save

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    profiles = list(dict.fromkeys(df["profile"]))
    fig = Figure(figsize=(7.0 * max(1, len(profiles)), 4.2), layout="constrained")
    axes = fig.subplots(1, max(1, len(profiles)), squeeze=False)
    for ax, profile in zip(axes[0], profiles, strict=False):
        ratios = performance_ratios(df, profile)
        finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
        top = max(2.0, 1.2 * float(finite.max())) if finite.size else 2.0
        for solver in ratios.columns:
            r = np.sort(ratios[solver].to_numpy())
            solved = int(np.isfinite(r).sum())
            if solved == 0:  # no curve: a failure is not a time; said in the legend
                ax.plot([], [], linestyle="none", marker="x", label=f"{solver}: failed all {r.size}")
                continue
            taus = np.concatenate([[1.0], r[np.isfinite(r)], [top]])
            rho = np.array([np.mean(r <= tau) for tau in taus])
            label = solver if solved == r.size else f"{solver} ({solved}/{r.size} solved)"
            ax.step(taus, rho, where="post", label=label, linewidth=2)
        ax.set_xscale("log", base=2)
        ax.set_xlim(1.0, top)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("tau (time within a factor tau of the best solver)")
        ax.set_ylabel("fraction of programs solved")
        ax.set_title(f"profile {profile} ({len(ratios)} programs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")  # outside the data
    if title:
        fig.suptitle(title)
    save(fig, path, dpi=120)
    return path
