"""SAP and the primal Newton solver (issue 11): the box slide, the 100-sphere pile and the
1-1000-1 kg box stack under ``sap`` (newton, clarabel), ``regularized`` (newton on its primal
form, clarabel on its default dual form) and MuJoCo's ``mj_step``, in one run.

Per scene and method: per-step time (median over steps; build = the formulation's Python
program assembly, solver = setup + solve of the backend, total = both), the ratio of the
total and of the solver-only time to ``mj_step`` (mean over the same number of steps, same
process), Newton/interior-point iterations, the largest penetration, the box's stop distance
(against ``v0^2 / (2 mu g)``), and for newton the relative gap of its objective to Clarabel's
optimum of the same programs (``(f_newton - f_clarabel) / |f_clarabel|`` over ``--gap-steps``
steps of the newton trajectory). Writes ``experiments/out/sap/{summary.json, summary.csv,
sap.png}``.

``--drake`` adds Drake's SAP on the box slide (stop distance, per-step time of
``Simulator.AdvanceTo``), run by ``experiments/sap_drake.py`` under the interpreter of a
separate environment that has Drake (``--drake-python``, default /work/venv-drake/bin/python;
Drake is never a dependency of contactopt). ``--drake-pile`` adds Drake's SAP on the
100-sphere pile (``experiments/sap_drake_pile.py``, same interpreter, ``--pile-steps`` steps):
its ``AdvanceTo`` per step, SAP Newton iterations per step (read under gdb) and largest
penetration, and its ratio to ``mj_step`` timed in Drake's process (``ratio_total_to_mj_step``;
``wall_ms`` of the contactopt rows is the whole ``simulate`` per step, AdvanceTo's counterpart).

    PYTHONPATH=. python experiments/sap.py [--pile-steps 20] [--stack-steps 100]
        [--box-duration 0.3] [--drake] [--drake-pile] [--drake-python PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from bench_step import mj_step_time
from common import OUT, ROOT, print_table, write_results

import contactopt as co

METHODS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("sap/newton", "sap", "newton", {}),
    ("sap/clarabel", "sap", "clarabel", {}),
    # SAP with dissipation: penetration resolved over h + tau_d (what MJCF scenes settled under
    # MuJoCo's soft contacts need, see contactopt.formulations.sap).
    ("sap(tau_d=0.05)/newton", "sap", "newton", {"dissipation_time_scale": 0.05, "epsilon": 0.0}),
    ("regularized/newton", "regularized", "newton", {"form": "primal"}),
    ("regularized/clarabel", "regularized", "clarabel", {}),
]


def objective_gap(scene: co.Scene, traj: co.Trajectory, formulation: str, options: dict[str, Any],
                  steps: int) -> float:
    """Largest ``(f_newton - f_clarabel) / |f_clarabel|`` on the programs of ``steps`` states
    (NaN when none has constraints; negative: newton's objective is the lower one)."""
    worst = float("nan")
    for k in np.linspace(0, len(traj.steps) - 1, min(steps, len(traj.steps))).astype(int):
        program = co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, formulation, options=options,
                               t=float(traj.t[k]))
        if program.n == 0 or program.m == 0:
            continue
        newton = co.solve(program, "newton")
        clarabel = co.solve(program, "clarabel")
        reference = program.objective(clarabel.x)
        gap = (program.objective(newton.x) - reference) / max(abs(reference), 1e-300)
        worst = gap if np.isnan(worst) else max(worst, gap)
    return worst


def time_mj_step(mj_scene: co.Scene, steps: int) -> tuple[float, int]:
    """Seconds per ``mj_step`` on the unmodified MJCF model of ``mj_scene`` from its initial state."""
    path = getattr(mj_scene.system, "path", None)
    return mj_step_time(path, None, mj_scene.q0, mj_scene.v0, mj_scene.dt, max(steps, 200))


def run_scene(scene: co.Scene, steps: int, mj_scene: co.Scene | None, gap_steps: int) -> list[dict[str, Any]]:
    duration = steps * scene.dt
    rows: list[dict[str, Any]] = []
    mj_time = time_mj_step(mj_scene, steps)[0] if mj_scene is not None else float("nan")
    if mj_scene is not None:
        mj = co.simulate(mj_scene, formulation="mujoco", duration=duration)
        rows.append(row(scene, "mujoco mj_step", mj, mj_time, mj_time, float("nan")))
        rows[-1].update(build_ms=0.0, solver_ms=1e3 * mj_time, total_ms=1e3 * mj_time)
    for label, formulation, solver, options in METHODS:
        start = time.perf_counter()
        traj = co.simulate(scene, formulation=formulation, solver=solver, options=options, duration=duration)
        wall = time.perf_counter() - start
        gap = objective_gap(scene, traj, formulation, options, gap_steps) if solver == "newton" else float("nan")
        rows.append(row(scene, label, traj, mj_time, wall / max(1, len(traj.steps)), gap))
    return rows


def row(scene: co.Scene, label: str, traj: co.Trajectory, mj_time: float, wall: float, gap: float) -> dict[str, Any]:
    records = traj.steps
    build = float(np.median([r.build_time for r in records])) if records else 0.0
    solver = float(np.median([r.setup_time + r.solve_time for r in records])) if records else 0.0
    penetration = max((float(max(0.0, -r.phi.min(initial=0.0))) for r in records), default=0.0)
    return {"scene": scene.name, "method": label, "steps": len(records), "build_ms": 1e3 * build,
            "solver_ms": 1e3 * solver, "total_ms": 1e3 * (build + solver), "wall_ms": 1e3 * wall,
            "ratio_total_to_mj_step": (build + solver) / mj_time, "ratio_solver_to_mj_step": solver / mj_time,
            "iterations": float(np.mean([r.iterations for r in records])) if records else 0.0,
            "max_penetration_mm": 1e3 * penetration, "stop_distance_m": float(traj.q[-1, 0] - traj.q[0, 0]),
            "rel_gap_to_clarabel": gap, "max_residual": traj.summary()["max_residual"],
            "status": "completed" if traj.completed else f"stopped: {traj.message[:60]}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--box-duration", type=float, default=0.3)
    parser.add_argument("--pile-steps", type=int, default=10)
    parser.add_argument("--stack-steps", type=int, default=100)
    parser.add_argument("--gap-steps", type=int, default=5)
    parser.add_argument("--drake", action="store_true", help="compare the box slide with Drake's SAP")
    parser.add_argument("--drake-pile", action="store_true", help="compare the sphere pile with Drake's SAP")
    parser.add_argument("--drake-python", default="/work/venv-drake/bin/python")
    args = parser.parse_args()
    load = lambda name: co.load_scene(ROOT / "problems" / f"{name}.toml")  # noqa: E731
    box = load("box_slide")
    rows = run_scene(box, round(args.box_duration / box.dt), load("box_slide_mjcf"), args.gap_steps)
    pile = load("sphere_pile_mjcf")
    rows += run_scene(pile, args.pile_steps, pile, args.gap_steps)
    pile_drake = drake_pile(args.drake_python, args.pile_steps) if args.drake_pile else None
    if pile_drake is not None:
        at = next(i for i, r in enumerate(rows) if r["scene"] == pile.name) + 1  # after the pile's mj_step row
        rows.insert(at, {**{key: float("nan") for key in rows[0]}, "scene": pile.name,
                         "method": f"drake {pile_drake['drake_version']} SAP (AdvanceTo)", "steps": args.pile_steps,
                         "total_ms": pile_drake["per_step_ms"], "wall_ms": pile_drake["per_step_ms"],
                         "ratio_total_to_mj_step": pile_drake["per_step_ms"] / pile_drake["mj_step_ms"],
                         "iterations": pile_drake.get("mean_iterations", float("nan")),
                         "max_penetration_mm": pile_drake["max_penetration_mm"], "status": "completed"})
    stack = load("box_stack_mjcf")
    rows += run_scene(stack, args.stack_steps, stack, args.gap_steps)
    drake = drake_box_slide(args.drake_python, box.dt, args.box_duration) if args.drake else None
    if drake is not None:
        rows.insert(1, {**{key: float("nan") for key in rows[0]}, "scene": box.name,
                        "method": f"drake {drake['drake_version']} SAP (AdvanceTo)",
                        "steps": round(args.box_duration / box.dt), "total_ms": drake["per_step_ms"],
                        "wall_ms": drake["per_step_ms"], "stop_distance_m": drake["stop_distance_m"],
                        "status": "completed"})
    print_table(rows)
    expected = box.v0[0] ** 2 / (2 * 0.5 * 9.81)
    folder = OUT / "sap"
    write_results(folder, rows, {"box_expected_stop_distance_m": expected, "args": vars(args), "drake": drake,
                                 "drake_pile": pile_drake,
                                 "note": "ratios: contactopt per-step median / mj_step mean, same process"})
    plot(rows, folder)
    print(f"box slide: expected stop distance {expected:.4f} m; wrote {folder}/summary.json, summary.csv, sap.png")
    return 0


def run_drake(python: str, script: str, arguments: list[str], timeout: float, flag: str) -> dict[str, Any] | None:
    """The JSON object a Drake script (run by Drake's interpreter ``python``) prints last, or
    None with the reason printed under ``flag``."""
    try:
        done = subprocess.run([python, str(Path(__file__).with_name(script)), *arguments],
                              capture_output=True, text=True, timeout=timeout, check=True)
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        print(f"{flag}: no Drake comparison ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    return result


def drake_box_slide(python: str, dt: float, duration: float) -> dict[str, Any] | None:
    """Drake's SAP box slide (experiments/sap_drake.py in Drake's environment), or None with
    the reason printed."""
    return run_drake(python, "sap_drake.py", ["--dt", str(dt), "--duration", str(duration)], 600, "--drake")


def drake_pile(python: str, steps: int) -> dict[str, Any] | None:
    """Drake's SAP on the sphere pile (experiments/sap_drake_pile.py in Drake's environment,
    ``steps`` steps, iterations counted over the same steps), or None with the reason printed."""
    result = run_drake(python, "sap_drake_pile.py", ["--steps", str(steps), "--iterations", str(steps)], 1200,
                       "--drake-pile")
    if result is not None:
        print(f"drake pile: {json.dumps({k: v for k, v in result.items() if k != 'iterations_per_step'})}")
    return result


def plot(rows: list[dict[str, Any]], folder: Any) -> None:
    """Per scene (columns): time per step, iterations and largest penetration (rows); the box
    slide's panel titles carry the stop distances."""
    scenes = list(dict.fromkeys(r["scene"] for r in rows))
    fig, axes = plt.subplots(3, len(scenes), figsize=(5 * len(scenes), 11), constrained_layout=True, squeeze=False)
    for column, scene in enumerate(scenes):
        mine = [r for r in rows if r["scene"] == scene]
        x = np.arange(len(mine))
        time_ax, iteration_ax, penetration_ax = axes[:, column]
        time_ax.bar(x - 0.2, [r["solver_ms"] for r in mine], 0.4, label="solver (setup + solve)")
        time_ax.bar(x + 0.2, [r["total_ms"] for r in mine], 0.4, label="build + solver")
        time_ax.set_yscale("log")
        time_ax.set_ylabel("median time per step [ms]")
        title = scene
        if scene == "box_slide":
            stops = [f"{r['method'].split(' ')[0]} {r['stop_distance_m']:.4f}" for r in mine]
            lines = [", ".join(stops[i:i + 3]) for i in range(0, len(stops), 3)]
            title += "\nstop distance [m]: " + "\n".join(lines)
        time_ax.set_title(title, fontsize="small")
        iteration_ax.bar(x, [r["iterations"] for r in mine])
        iteration_ax.set_ylabel("iterations per step (mean)")
        penetration_ax.bar(x, [r["max_penetration_mm"] for r in mine])
        penetration_ax.set_ylabel("largest penetration [mm]")
        for ax in (time_ax, iteration_ax, penetration_ax):
            ax.set_xticks(x, [r["method"] for r in mine], rotation=35, ha="right", fontsize="small")
            ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0, 0].legend(fontsize="small")
    fig.savefig(folder / "sap.png", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
