"""Rows, summaries and the figure of ``experiments/coulomb_peers.py``.

Every answer is judged by FCLIB's error (``fclib_merit``, FCLIB's MERIT_1: ``||r - P_C(r - û)|| /
(1 + sqrt ||q||)`` with De Saxcé's ``û = u + mu ||u_T|| e_N`` and ``u = W r + q`` recomputed here;
Acary, Brémond, Huber 2018 §3) at the tolerance the solver was asked for: a success is an error at
or below it, whatever the solver itself claimed. Time ratios are ours / Siconos's on the same
problem at the same tolerance; a family's median ratio is taken over the problems both solved.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

from contactopt.programs.coulomb_error import FclibAnswer, fclib_merit
from contactopt.programs.fclib import FclibLocal

Row = dict[str, Any]


def fclib_error(problem: FclibLocal, r: NDArray[np.float64] | None) -> float:
    """FCLIB's error of the impulses ``r`` (inf when there is no finite answer of the right size)."""
    if r is None or r.shape != problem.q.shape or not np.all(np.isfinite(r)):
        return math.inf
    u = np.asarray(problem.W @ r + problem.q, dtype=np.float64)
    return fclib_merit(problem, FclibAnswer(r=r, u=u, lam=np.zeros(problem.equalities)))


def run_row(label: str, group: str, contacts: int, side: str, solver: str, family: str, tol: float, *,
            error: float, iterations: int, seconds: float, rounds: int, own_error: float, status: str,
            message: str = "", solver_tol: float | None = None) -> Row:
    """One solver at one tolerance on one problem (the CSV's columns, in order); ``solver_tol``:
    the tolerance the solver was given in its own measure when it is not ``tol`` itself."""
    return {"problem": label, "group": group, "contacts": contacts, "side": side, "solver": solver,
            "family": family, "tol": tol, "solver_tol": tol if solver_tol is None else solver_tol,
            "success": bool(error <= tol), "fclib_error": error,
            "iterations": iterations, "us": seconds * 1e6, "rounds": rounds, "own_error": own_error,
            "status": status, "message": message}


def failed_row(label: str, group: str, contacts: int, side: str, solver: str, family: str, tol: float,
               why: str) -> Row:
    """A problem a solver did not get to solve (unreadable, not exported, unsupported)."""
    return run_row(label, group, contacts, side, solver, family, tol, error=math.inf, iterations=0,
                   seconds=math.nan, rounds=0, own_error=math.nan, status="not run", message=why)


def _median(values: Iterable[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(median(finite)) if finite else math.nan


def _index(rows: Sequence[Row]) -> dict[tuple[str, str, str, float], Row]:
    return {(row["problem"], row["side"], row["solver"], row["tol"]): row for row in rows}


def ratio_rows(rows: Sequence[Row], pairs: Sequence[tuple[str, str]], family: Mapping[str, str]) -> list[Row]:
    """Per problem, per pair (ours, Siconos) and tolerance: both outcomes, iterations, time ratio;
    ``same_family`` when ``family`` maps our solver to that Siconos solver."""
    index = _index(rows)
    out: list[Row] = []
    for (problem, side, solver, tol), mine in index.items():
        if side != "ours":
            continue
        for ours, theirs in pairs:
            peer = index.get((problem, "siconos", theirs, tol))
            if ours != solver or peer is None:
                continue
            out.append({"problem": problem, "group": mine["group"], "ours": ours, "siconos": theirs,
                        "same_family": family.get(ours) == theirs, "tol": tol,
                        "ours_success": mine["success"], "siconos_success": peer["success"],
                        "ours_error": mine["fclib_error"], "siconos_error": peer["fclib_error"],
                        "ours_iterations": mine["iterations"], "siconos_iterations": peer["iterations"],
                        "ours_us": mine["us"], "siconos_us": peer["us"],
                        "time_ratio": mine["us"] / peer["us"] if peer["us"] > 0 else math.nan})
    return out


def family_summary(ratios: Sequence[Row]) -> list[Row]:
    """Per pair and tolerance: successes of each side, and the median time ratio over the
    problems both solved (and over all problems both gave a time for)."""
    keys = sorted({(r["ours"], r["siconos"], r["tol"]) for r in ratios}, key=lambda k: (k[0], k[1], -k[2]))
    out: list[Row] = []
    for ours, theirs, tol in keys:
        mine = [r for r in ratios if (r["ours"], r["siconos"], r["tol"]) == (ours, theirs, tol)]
        both = [r for r in mine if r["ours_success"] and r["siconos_success"]]
        out.append({"ours": ours, "siconos": theirs, "same_family": mine[0]["same_family"], "tol": tol,
                    "problems": len(mine),
                    "ours_success": sum(r["ours_success"] for r in mine),
                    "siconos_success": sum(r["siconos_success"] for r in mine),
                    "ours_where_siconos": sum(r["ours_success"] for r in mine if r["siconos_success"]),
                    "median_ratio_both_solved": _median(r["time_ratio"] for r in both),
                    "median_ratio_all": _median(r["time_ratio"] for r in mine)})
    return out


def group_summary(rows: Sequence[Row]) -> list[Row]:
    """Per group (scene or folder), solver and tolerance: successes, median time and iterations
    over the problems it ran on."""
    keys = sorted({(r["group"], r["side"], r["solver"], r["tol"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2], -k[3]))
    out: list[Row] = []
    for group, side, solver, tol in keys:
        mine = [r for r in rows if (r["group"], r["side"], r["solver"], r["tol"]) == (group, side, solver, tol)]
        ran = [r for r in mine if r["rounds"] > 0]
        out.append({"group": group, "side": side, "solver": solver, "tol": tol, "problems": len(mine),
                    "ran": len(ran), "success": sum(r["success"] for r in mine),
                    "median_us": _median(r["us"] for r in ran),
                    "median_iterations": _median(float(r["iterations"]) for r in ran),
                    "max_error": max((r["fclib_error"] for r in ran), default=math.nan)})
    return out


def figure(rows: Sequence[Row], ratios: Sequence[Row], path: Path, title: str) -> None:
    """Left: success rate per solver at each tolerance; right: ours vs Siconos time per problem at
    the finest tolerance, for the pairs of one family (every pair when none is), log-log, with
    the lines of equal time and of twice Siconos's time."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    solvers = sorted({(r["side"], r["solver"]) for r in rows})
    tols = sorted({r["tol"] for r in rows}, reverse=True)
    width = 0.8 / max(len(tols), 1)
    for k, tol in enumerate(tols):
        rates = []
        for side, solver in solvers:
            mine = [r for r in rows if (r["side"], r["solver"], r["tol"]) == (side, solver, tol)]
            rates.append(100.0 * sum(r["success"] for r in mine) / max(len(mine), 1))
        left.bar(np.arange(len(solvers)) + k * width, rates, width, label=f"FCLIB error <= {tol:g}")
    left.set_xticks(np.arange(len(solvers)) + width * (len(tols) - 1) / 2)
    left.set_xticklabels([f"{solver}\n({side})" for side, solver in solvers], fontsize=8)
    left.set_ylabel("problems solved [%]")
    left.set_ylim(0, 105)
    left.legend(fontsize=8)
    pairs = sorted({(r["ours"], r["siconos"]) for r in ratios if r["same_family"]})
    pairs = pairs or sorted({(r["ours"], r["siconos"]) for r in ratios})  # no family met: every pair
    finest = min(tols) if tols else 0.0
    spans: list[float] = []
    for ours, theirs in pairs:
        mine = [r for r in ratios if (r["ours"], r["siconos"], r["tol"]) == (ours, theirs, finest)
                and math.isfinite(r["ours_us"]) and math.isfinite(r["siconos_us"])]
        if not mine:
            continue
        x = np.array([r["siconos_us"] for r in mine])
        y = np.array([r["ours_us"] for r in mine])
        solved = np.array([r["ours_success"] and r["siconos_success"] for r in mine])
        dots = right.scatter(x[solved], y[solved], s=12, label=f"{ours} vs {theirs} (both solved)")
        if (~solved).any():
            right.scatter(x[~solved], y[~solved], s=14, marker="x", color=dots.get_facecolor()[0] if solved.any()
                          else None, label=f"{ours} vs {theirs} (not both solved)")
        spans += [float(x.min()), float(x.max()), float(y.min()), float(y.max())]
    if spans:
        lo, hi = min(spans) / 2, max(spans) * 2
        right.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="equal time")
        right.plot([lo, hi], [2 * lo, 2 * hi], "k--", lw=0.8, label="2x Siconos")
        right.set_xscale("log")
        right.set_yscale("log")
        right.legend(fontsize=7)
    right.set_xlabel(f"Siconos time per problem [us] (FCLIB error {finest:g})")
    right.set_ylabel("our time per problem [us]")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table_rows(summary: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The summary with floats rounded for printing."""
    return [{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()} for row in summary]
