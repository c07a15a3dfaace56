"""Per-step time of contactopt's formulations and solvers against MuJoCo's ``mj_step`` on the
same MJCF scene, in the same run, as ratios; and the scaling with the number of contacts.

For each scene: ``mj_step`` on MuJoCo's own model (mean over ``--steps`` steps after warm-up),
then each formulation x solver for the same number of steps from the same state, recording
build, solve and total time per step (from the trajectory records) and the worst residual
(contactopt's own, for MuJoCo too via the ``mujoco`` method). Scaling: sphere piles of
growing size (generated like problems/mjcf/sphere_pile.xml). Writes
``experiments/out/bench_step/{bench_step.json, bench_step.csv, scaling.png}``.

    python experiments/bench_step.py [--steps 20] [--spheres 4,10,25,50,100,200]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, ROOT, print_table, write_results
from make_mjcf_problems import write_pile

import contactopt as co

CASES = [("regularized", "clarabel", {}), ("regularized", "clarabel", {"cone": "elliptic"}),
         ("regularized", "pgs", {"cone": "elliptic"}), ("ccp", "clarabel", {"form": "dual"}),
         ("anitescu", "osqp", {}), ("lcp", "lemke", {})]
LEMKE_MAX_CONTACTS = 40  # dense pivoting: only on small scenes


def time_mj_step(scene: co.Scene, steps: int) -> tuple[float, int]:
    """Mean seconds per ``mj_step`` (MuJoCo's unmodified model) and mean contact count."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(scene.system.path))  # type: ignore[attr-defined]
    model.opt.timestep = scene.dt
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = scene.q0, scene.v0
    for _ in range(3):
        mujoco.mj_step(model, data)
    data.qpos[:], data.qvel[:] = scene.q0, scene.v0
    contacts = []
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data)
        contacts.append(int(data.ncon))
    return (time.perf_counter() - start) / steps, int(np.mean(contacts))


def run(scene: co.Scene, steps: int, cases: list[tuple[str, str, dict[str, object]]]) -> list[dict[str, object]]:
    mj_time, contacts = time_mj_step(scene, steps)
    rows: list[dict[str, object]] = []
    duration = steps * scene.dt
    reference = co.simulate(scene, formulation="mujoco", duration=duration)
    rows.append({"scene": scene.name, "contacts": contacts, "method": "mujoco mj_step", "build_ms": 0.0,
                 "solve_ms": 1e3 * mj_time, "total_ms": 1e3 * mj_time, "ratio_to_mj_step": 1.0,
                 "max_residual": reference.summary()["max_residual"], "status": "completed"})
    for formulation, solver, options in cases:
        if solver == "lemke" and contacts > LEMKE_MAX_CONTACTS:
            continue
        label = f"{formulation}/{solver}" + "".join(f" {k}={v}" for k, v in options.items())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = co.simulate(scene, formulation=formulation, solver=solver, options=options, duration=duration)
        summary = traj.summary()
        n = max(1, summary["steps"])
        build, solve = summary["build_time"] / n, summary["solve_time"] / n
        rows.append({"scene": scene.name, "contacts": contacts, "method": label, "build_ms": 1e3 * build,
                     "solve_ms": 1e3 * solve, "total_ms": 1e3 * (build + solve),
                     "ratio_to_mj_step": (build + solve) / mj_time, "max_residual": summary["max_residual"],
                     "status": "completed" if traj.completed else f"stopped: {traj.message[:60]}"})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--spheres", default="4,10,25,50,100,200", help="sphere-pile sizes for the scaling")
    args = parser.parse_args()
    rows = []
    for name in ("box_slide_mjcf", "sphere_pile_mjcf"):
        rows += run(co.load_scene(ROOT / "problems" / f"{name}.toml"), args.steps, CASES)
    with tempfile.TemporaryDirectory() as folder:
        for count in [int(c) for c in args.spheres.split(",")]:
            path = Path(folder) / f"pile_{count}.xml"
            write_pile(count, path)
            scene = co.load_scene(path)
            scene = dataclasses.replace(scene, name=f"pile_{count}")
            rows += run(scene, args.steps, CASES)
    print_table(rows)
    folder = OUT / "bench_step"
    write_results(folder, rows, {"steps": args.steps, "note": "ratios = contactopt build+solve per step / mj_step"})
    (folder / "summary.json").rename(folder / "bench_step.json")
    (folder / "summary.csv").rename(folder / "bench_step.csv")
    fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
    piles = [r for r in rows if str(r["scene"]).startswith("pile_")]
    for method in dict.fromkeys(r["method"] for r in piles):
        points = sorted((r["contacts"], r["total_ms"]) for r in piles if r["method"] == method)
        ax.loglog([p[0] for p in points], [p[1] for p in points], "o-", label=method)
    xs = np.array(sorted({r["contacts"] for r in piles}), dtype=float)
    if xs.size:
        ax.loglog(xs, xs / xs[0] * min(r["total_ms"] for r in piles), "k:", label="linear growth")
    ax.set_xlabel("contacts")
    ax.set_ylabel("time per step [ms]")
    ax.set_title("Per-step time against the number of contacts (sphere piles)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(folder / "scaling.png", dpi=110)
    print(f"wrote {folder}/bench_step.json, bench_step.csv, scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
