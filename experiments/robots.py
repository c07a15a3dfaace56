"""Real robots under every time-stepping formulation and MuJoCo (issue "Real robots, right and fast").

The set (:mod:`robot_models`): dm-control's suite and its other standalone models, gymnasium's
MuJoCo environments when installed, and four models of this repository with what real robots
have: position and velocity actuators with kv, damped tendon actuators, condim 3/4/6 contacts,
joint frictionloss, the implicitfast and implicit integrators, keyframes with ctrl that start in
the floor past a limit.
Each model starts from its keyframe 0 with that keyframe's ctrl held, else from MuJoCo's
default state with zero ctrl, and runs ``--steps`` steps at its own timestep under
(:mod:`robot_cells`)::

    regularized -o params=model   MuJoCo's own constraint problem and step (clarabel)
    regularized                   contactopt's parameters (clarabel)
    regularized -o form=primal    the SAP-shaped primal, newton
    sap/newton, ccp/clarabel, anitescu/osqp, lcp/lemke (its default pivot budget)
    sap -o rows=model/newton      SAP's regularization over MuJoCo's own rows, the step as arrays
    mujoco                        contactopt's mj_step wrapper (the reference trajectory)

Per model and method: completed, stopped or refused (the reason in one line); time per step
against ``mj_step`` timed in the same process (``ratio_to_mj_step``); the solver's own time
(setup + solve from the step records) and the step's time over it (``ratio_to_solver``); for
the Newton rows the medians also give the solver's time alone over ``mj_step``, the floor of
``ratio_to_mj_step`` that no assembly work can lower;
largest speed and penetration; ``dist_q``, ``max |q - q_mujoco|`` after the last common step;
``one_step_q`` (``params=model``): every step against one converged ``mj_step`` from its start,
the issue's one-step equality, free of the chaos ``dist_q`` accumulates;
``spins``: largest speed above 2x MuJoCo's + 0.1 (a robot launched or spun that MuJoCo holds);
``candidates`` and ``mujoco_contacts``: contact candidates and MuJoCo's ``ncon``, medians over steps.
``reason``: why, where that is the formulation's defined behaviour (``robot_models.KNOWN_LAUNCHES``, ``KNOWN_STOPS``).
Every run has a wall-time limit (``--cell-time-limit``); a run that reaches it keeps its steps.

    PYTHONPATH=. python experiments/robots.py [--steps 250] [--models suite/hopper,gym/ant] [--quick]

The third collection, example-robot-data's URDFs on the pinocchio backend (:mod:`robot_urdfs`:
sap/newton and ccp/clarabel, completed or refused before step 0 with its reason, time per step,
the distance to the mujoco backend's run where MuJoCo compiles the URDF)::

    PYTHONPATH=. python experiments/robots.py --collection example-robot-data [--steps 100] [--models solo12,ur5_robot]

writes ``experiments/out/robots_urdf/{summary.json, summary.csv}``.

Writes ``experiments/out/robots/{summary.json, summary.csv, ratios.png}`` and prints a compact
table and the medians over the set.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import OUT, print_table, write_results
from robot_cells import METHODS, run_model, warm_up
from robot_models import KNOWN_LAUNCHES, KNOWN_ONE_STEP, KNOWN_STOPS, LEFT_OUT, own_models, select

QUICK_STEPS = 20
NEWTON_METHODS = ("regularized -o params=model -o form=primal/newton", "regularized -o form=primal/newton",
                  "sap/newton", "sap -o rows=model/newton")
SOLVER_BOUND_METHODS = ("ccp/clarabel", "anitescu/osqp")
#: mj_step above this (ms) is a "large" model: the target ratio there is 5, elsewhere 10.
LARGE_MJ_STEP_MS = 0.1


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    return float(np.median(finite)) if finite else float("nan")


def medians(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The numbers the issue reads: medians over the models where the method completed."""
    done = [row for row in rows if row.get("status") == "completed"]
    out: dict[str, Any] = {}
    for method in NEWTON_METHODS:
        mine = [row for row in done if row["method"] == method]
        out[f"{method}: median ratio_to_mj_step"] = _median([row["ratio_to_mj_step"] for row in mine])
        out[f"{method}: median ratio_to_mj_step (mj_step > {LARGE_MJ_STEP_MS} ms)"] = _median(
            [row["ratio_to_mj_step"] for row in mine if row["mj_step_ms"] > LARGE_MJ_STEP_MS])
        out[f"{method}: median solver alone / mj_step (the floor)"] = _median(
            [row["solver_ms"] / row["mj_step_ms"] for row in mine])
        out[f"{method}: completed"] = f"{len(mine)}/{sum(row['method'] == method for row in rows)}"
    for method in SOLVER_BOUND_METHODS:
        mine = [row for row in done if row["method"] == method]
        out[f"{method}: median ratio_to_solver"] = _median([row["ratio_to_solver"] for row in mine])
        out[f"{method}: completed"] = f"{len(mine)}/{sum(row['method'] == method for row in rows)}"
    out["rows above 100x mj_step (not lcp/lemke)"] = sorted(
        f"{row['model']} {row['method']} ({row['ratio_to_mj_step']:.0f}x)" for row in rows
        if row.get("steps") and row["method"] != "lcp/lemke" and row["ratio_to_mj_step"] > 100)
    one_step = [row for row in rows if row.get("steps") and math.isfinite(row.get("one_step_q", math.nan))]
    out["params=model: largest one-step distance to converged mj_step"] = max(
        (row["one_step_q"] for row in one_step), default=math.nan)
    out["params=model: one step above 1e-10 from converged mj_step"] = sorted(
        f"{row['model']} ({row['one_step_q']:.1e})" + (f" ({KNOWN_ONE_STEP[row['model']]})"
                                                       if row["model"] in KNOWN_ONE_STEP else "")
        for row in one_step if row["one_step_q"] > 1e-10)
    out["launched or spun (max speed > 2x MuJoCo's + 0.1)"] = sorted(
        f"{row['model']} {row['method']}" + (f" ({row['reason']})" if row.get("reason") else "")
        for row in rows if row.get("spins") and row.get("steps"))
    return out


def with_reasons(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its ``reason``: why a run that spins or stops early does, where that is
    known to be the formulation's defined behaviour; empty otherwise."""
    def reason(row: dict[str, Any]) -> str:
        key = (row["model"], row["method"])
        if row.get("spins"):
            return KNOWN_LAUNCHES.get(key, "")
        return KNOWN_STOPS.get(key, "") if str(row.get("status", "")).startswith("stopped") else ""
    return [{**row, "reason": reason(row)} for row in rows]


def compact(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The terminal table: one short line per row."""
    def number(value: Any, digits: int = 3) -> str:
        return f"{value:.{digits}g}" if isinstance(value, float) and math.isfinite(value) else "-"

    return [{"model": row["model"], "method": row["method"], "status": str(row["status"])[:48],
             "steps": row.get("steps", 0), "ms/step": number(row.get("ms_per_step")),
             "x mj_step": number(row.get("ratio_to_mj_step")), "x solver": number(row.get("ratio_to_solver")),
             "max |v|": number(row.get("max_speed")), "pen": number(row.get("penetration"), 2),
             "dist q": number(row.get("dist_q"), 2), "1-step q": number(row.get("one_step_q"), 2),
             "cand/mj": f"{number(row.get('candidates'))}/{number(row.get('mujoco_contacts'))}"} for row in rows]


def plot(rows: Sequence[dict[str, Any]], path: Any) -> None:
    """Time per step over ``mj_step`` per model and method, log scale."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(row["model"] for row in rows))
    methods = list(dict.fromkeys(row["method"] for row in rows if row["method"] != "(load)"))
    fig, ax = plt.subplots(figsize=(max(8.0, 0.45 * len(models)), 5.0))
    markers = "os^vDP*Xh"
    for index, method in enumerate(methods):
        xs, ys = [], []
        for row in rows:
            if row["method"] == method and row.get("steps") and math.isfinite(row["ratio_to_mj_step"]):
                xs.append(models.index(row["model"]) + 0.08 * (index - len(methods) / 2))
                ys.append(row["ratio_to_mj_step"])
        ax.scatter(xs, ys, label=method, marker=markers[index % len(markers)], s=18)
    ax.set_yscale("log")
    ax.set_xticks(range(len(models)), models, rotation=75, fontsize=7)
    ax.set_ylabel("time per step / mj_step")
    for level in (1, 10, 100):
        ax.axhline(level, color="0.8", lw=0.8, zorder=0)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help=f"steps per run (default 250; --quick: {QUICK_STEPS})")
    parser.add_argument("--models", default=None, help="comma-separated model names (default: the whole set)")
    parser.add_argument("--quick", action="store_true", help="a few models, a few steps (a smoke check)")
    parser.add_argument("--cell-time-limit", type=float, default=15.0, help="seconds per run (default 15)")
    parser.add_argument("--out", default=None, help="default experiments/out/robots (example-robot-data: robots_urdf)")
    parser.add_argument("--collection", choices=("mujoco", "example-robot-data"), default="mujoco",
                        help="mujoco: the MJCF set (default); example-robot-data: its URDFs through Pinocchio")
    parser.add_argument("--methods", default=None,
                        help="comma-separated method labels (default: every one; e.g. 'sap/newton')")
    parser.add_argument("--no-mujoco-distance", action="store_true",
                        help="example-robot-data: skip the runs on the mujoco backend")
    args = parser.parse_args(argv)
    if args.collection == "example-robot-data":
        return urdf_collection(args)
    args.out = args.out or str(OUT / "robots")
    steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick else 250)
    if steps < 1 or not args.cell_time_limit > 0:
        parser.error("--steps and --cell-time-limit must be positive")
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("robots: mujoco is not installed: pip install 'contactopt[robots]'", file=sys.stderr)
        return 1
    models = select(args.models.split(",") if args.models else None, args.quick)
    methods = METHODS
    if args.methods:
        labels = [label.strip() for label in args.methods.split(",")]
        unknown = sorted(set(labels) - {method.label for method in METHODS})
        if unknown:
            parser.error(f"unknown method(s) {', '.join(map(repr, unknown))}; known: "
                         f"{', '.join(method.label for method in METHODS)}")
        methods = [method for method in METHODS if method.label in labels]
    warm_up(own_models()[1].path, methods)
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    folder = Path(args.out)
    start = time.perf_counter()
    for number, model in enumerate(models, 1):
        print(f"[{number}/{len(models)}] {model.name} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        rows += with_reasons(run_model(model.name, model.path, steps, args.cell_time_limit, methods))
        summary = medians(rows)
        write_results(folder, rows, {"steps": steps, "cell_time_limit": args.cell_time_limit, "medians": summary,
                                     "models_done": number, "left_out": LEFT_OUT,
                                     "wall_seconds": time.perf_counter() - start,
                                     "command": "PYTHONPATH=. python " + " ".join(sys.argv)})  # after each model
    print_table(compact(rows))
    for key, value in summary.items():
        print(f"{key}: {value if not isinstance(value, float) else f'{value:.3g}'}")
    plot(rows, folder / "ratios.png")
    return 0


def urdf_collection(args: argparse.Namespace) -> int:
    """The example-robot-data collection (:mod:`robot_urdfs`)."""
    from robot_urdfs import collection_rows, counts

    from contactopt.core.errors import ContactoptError

    steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick else 100)
    if steps < 1 or not args.cell_time_limit > 0:
        raise SystemExit("robots: --steps and --cell-time-limit must be positive")
    start = time.perf_counter()
    folder = Path(args.out or str(OUT / "robots_urdf"))
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    try:
        for model in collection_rows(steps, args.cell_time_limit, not args.no_mujoco_distance,
                                     args.models.split(",") if args.models else None, sys.stderr):
            rows += model
            summary = counts(rows)
            write_results(folder, rows, {"steps": steps, "cell_time_limit": args.cell_time_limit, "counts": summary,
                                         "wall_seconds": time.perf_counter() - start,
                                         "command": "PYTHONPATH=. python " + " ".join(sys.argv)})  # after each model
    except ContactoptError as exc:  # example-robot-data or pin missing: one line
        print(f"robots: {exc}", file=sys.stderr)
        return 1
    print_table([{"model": row["model"], "method": row["method"], "status": str(row["status"])[:70],
                  "steps": row["steps"], "ms/step": f"{row.get('ms_per_step', math.nan):.3g}",
                  "dist mj": f"{row.get('dist_mujoco', math.nan):.2g}"} for row in rows])
    for key, value in summary.items():
        print(f"{key}: {value if not isinstance(value, float) else f'{value:.3g}'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
