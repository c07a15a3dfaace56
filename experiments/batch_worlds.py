"""Batched worlds against MuJoCo (issue "The step at MuJoCo's speed", item 6): ``co.simulate_batch``
of B dm-control humanoids (the ``dm_humanoid`` scene, its sinusoid controller; each world from the
scene's state with its own small random velocity) under ``sap -o rows=model``/newton, the step as
arrays, in ``--workers`` processes; per batch step against B ``mj_step`` calls timed in the same run
(each world's state stepped by MuJoCo with the scene's timestep).

Rows: per B and worker count, the wall time per batch step (the whole ``simulate_batch``, process
start and result transfer included, over the run's steps), B ``mj_step``s (one after the other,
one core: MuJoCo's own cost of the same worlds), their ratio, and the time per world-step, whose
flatness over B is the batch's linearity.

    cd experiments && python batch_worlds.py [--sizes 8,16,32,64] [--workers 1,2] [--steps 200]

Writes ``experiments/out/batch_worlds/{summary.json, summary.csv}``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import mujoco
import numpy as np
from common import OUT, print_table, write_results

import contactopt as co

METHOD = {"formulation": "sap", "solver": "newton", "options": {"rows": "model"}}


def mj_steps(scene: co.Scene, V0: np.ndarray, steps: int) -> float:
    """Seconds for ``steps`` steps of each world under ``mj_step``, one world after the other."""
    model = mujoco.MjModel.from_xml_path(str(scene.system.path))
    model.opt.timestep = scene.dt
    data = mujoco.MjData(model)
    start = time.perf_counter()
    for v0 in V0:
        data.qpos[:], data.qvel[:] = scene.q0, v0
        for _ in range(steps):
            mujoco.mj_step(model, data)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="8,16,32,64", help="comma-separated batch sizes B")
    parser.add_argument("--workers", default=f"1,{os.cpu_count() or 1}", help="comma-separated worker counts")
    parser.add_argument("--steps", type=int, default=200, help="steps per world")
    parser.add_argument("--scene", default="dm_humanoid")
    args = parser.parse_args()
    scene = co.load_scene(args.scene)
    duration = args.steps * scene.dt
    rng = np.random.default_rng(0)
    co.simulate(scene, duration=5 * scene.dt, **METHOD)  # compile (or load the cached kernels) first
    rows = []
    for B in [int(b) for b in args.sizes.split(",")]:
        V0 = np.repeat(scene.v0[None], B, axis=0) + 0.05 * rng.normal(size=(B, scene.system.nv))
        reference = mj_steps(scene, V0, args.steps)
        for workers in [int(w) for w in args.workers.split(",")]:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                batch = co.simulate_batch(scene, v0=V0, duration=duration, workers=workers, **METHOD)
            wall = time.perf_counter() - start
            rows.append({"B": B, "workers": workers, "completed": f"{int(batch.completed.sum())}/{B}",
                         "batch_step_ms": 1e3 * wall / args.steps, "mj_steps_ms": 1e3 * reference / args.steps,
                         "ratio": wall / reference, "world_step_us": 1e6 * wall / (args.steps * B)})
            print(f"B={B} workers={workers}: {rows[-1]['ratio']:.2f}x {B} mj_steps", flush=True)
    print_table(rows)
    write_results(OUT / "batch_worlds", rows, {"scene": args.scene, "steps": args.steps, "method": METHOD,
                                               "cpus": os.cpu_count()})


if __name__ == "__main__":
    main()
