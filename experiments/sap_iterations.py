"""Why ``sap``/``newton`` takes ~28 Newton iterations per step on the MJCF sphere pile (issue 11):
the iteration record of the ``newton`` solver (option ``history``: cost, (S10) residual, step
length ``alpha``, ``l'(alpha)/|l'(0)|`` after the step, cone blocks per regime of (S3)) on a few
pile steps, and the mean iterations per step over ``--steps`` steps as one thing is changed at
a time:

* the stopping tolerance (``tol``: ours 1e-10, SAP's/Drake's relative tolerance 1e-6);
* the start of each solve (the previous step's ``v``, SAP's warm start; ``v*``; ``v = 0``);
* the formulation's parameters: ``sigma`` (stiction regularization ``R_t = sigma w``), the
  contact set (``epsilon = 0``), compliance (``stiffness``, ``dissipation_time_scale``).

Only the rows that change ``sigma``, ``epsilon``, ``stiffness`` or ``dissipation_time_scale``
solve a different program; ``tol`` and the start leave the optimum where it is (the gap to the
reference solve is printed). Writes ``experiments/out/sap_iterations/summary.{json,csv}``.

    PYTHONPATH=. python experiments/sap_iterations.py [--steps 20] [--trace 0,5]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from common import OUT, ROOT, print_table, write_results

import contactopt as co

VARIANTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("sap defaults (near-rigid, tau_d = 0)", {}, {}),
    ("tol = 1e-6 (SAP's relative tolerance)", {}, {"tol": 1e-6}),
    ("sigma = 1e-2", {"sigma": 1e-2}, {}),
    ("sigma = 2.5e-2 (R_t = R_n)", {"sigma": 2.5e-2}, {}),
    ("epsilon = 0 (overlapping pairs only)", {"epsilon": 0.0}, {}),
    ("tau_d = 0.05, epsilon = 0", {"dissipation_time_scale": 0.05, "epsilon": 0.0}, {}),
    ("stiffness = 1e4 N/m", {"stiffness": 1e4}, {}),
]


def trace(scene: co.Scene, traj: co.Trajectory, k: int, options: dict[str, Any]) -> list[dict[str, Any]]:
    """The iteration record of the program of step ``k`` (warm-started as in the run)."""
    program = co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, "sap", options=options, t=float(traj.t[k]))
    solution = co.solve(program, "newton", {"history": True})
    rows = []
    for i, entry in enumerate(solution.raw["history"]):
        rows.append({"step": k, "iteration": i, "cost": entry["cost"],
                     "residual/scale": entry["residual"] / entry["scale"],
                     "alpha": entry.get("alpha", float("nan")),
                     "l'(alpha)/|l'(0)|": entry.get("line_slope", float("nan")),
                     "stiction": entry["stiction"], "sliding": entry["sliding"], "no_contact": entry["no_contact"]})
    return rows


def starts(scene: co.Scene, traj: co.Trajectory, steps: int) -> list[dict[str, Any]]:
    """Iterations from the previous step's v (SAP's warm start), v* and 0 on the same programs."""
    counts: dict[str, list[int]] = {"previous v": [], "v*": [], "v = 0": []}
    gaps: list[float] = []
    for k in range(steps):
        program = co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, "sap", t=float(traj.t[k]))
        primal = co.programs.primal.PrimalProgram.from_conic(program)
        answers = {"previous v": co.solve(program, "newton"),
                   "v*": co.solve(program, "newton", {"warm_start": primal.v_star}),
                   "v = 0": co.solve(program, "newton", {"warm_start": np.zeros(primal.nv)})}
        best = min(program.objective(a.x) for a in answers.values())
        for name, answer in answers.items():
            counts[name].append(answer.iterations)
            gaps.append((program.objective(answer.x) - best) / abs(best))
    return [{"start": name, "mean_iterations": float(np.mean(c)), "max_iterations": int(np.max(c)),
             "max_rel_gap_between_starts": max(gaps)} for name, c in counts.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--trace", default="0,5", help="steps whose iteration record is printed")
    args = parser.parse_args()
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    duration = args.steps * scene.dt
    rows: list[dict[str, Any]] = []
    runs: dict[str, co.Trajectory] = {}
    for name, options, solver_options in VARIANTS:
        traj = co.simulate(scene, formulation="sap", solver="newton", options=options, solver_options=solver_options,
                           duration=duration)
        runs[name] = traj
        speeds = np.abs(traj.v[-1]).reshape(-1, 6)
        its = [record.iterations for record in traj.steps]
        rows.append({"variant": name, "steps": len(its), "mean_iterations": float(np.mean(its)),
                     "max_iterations": int(np.max(its)), "solver_ms": 1e3 * float(np.median(
                         [record.solve_time for record in traj.steps])),
                     "max_speed_m_s": float(speeds[:, :3].max()), "max_spin_rad_s": float(speeds[:, 3:].max()),
                     "completed": traj.completed})
    print_table(rows)
    start_rows = starts(scene, runs[VARIANTS[0][0]], min(args.steps, 10))
    print_table(start_rows)
    traces: list[dict[str, Any]] = []
    for k in (int(s) for s in args.trace.split(",") if s):
        traces += trace(scene, runs[VARIANTS[0][0]], k, {})
    print_table(traces)
    write_results(OUT / "sap_iterations", rows, {"starts": start_rows, "trace": traces})
    print(f"wrote {OUT / 'sap_iterations'}/summary.json, summary.csv")


if __name__ == "__main__":
    main()
