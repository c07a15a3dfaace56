"""The shipped quadruped (issue 13, item 3) trotting under every formulation and MuJoCo.

``problems/quadruped_trot.toml``: 0.5 s of standing under PD control, then a scripted trot
(PD to targets that swing the diagonal leg pairs in antiphase at 2 Hz), ``--duration`` seconds
in all (default 3) at h = 2 ms. Per method:

* whether it ran the whole duration;
* foot slip: the horizontal speed of the foot sphere's material point at its lowest point,
  ``|(J_p(q_k) v_{k+1})_xy|`` (MuJoCo's point Jacobian of the shin at that point; ``v_{k+1}`` is
  the velocity the semi-implicit step moved with), times ``h``, summed over the steps in which
  the foot is on the floor (its sphere within 1 mm of it) and averaged over the four feet [m];
  the same per second of stance as a mean slip speed;
* penetration: the largest depth of any contact over the run (``-min phi``) [m];
* time per step: the wall time of ``simulate`` over its steps [ms], and its ratio to
  ``mj_step`` timed alone on the same control sequence (same process);
* how far the trunk travelled forward (x) and its final height.

Methods: gauss (frictionless), lcp (lemke), anitescu, ccp, regularized (contactopt's default
solref = 2h; and MuJoCo's own parameters: pyramidal, solref (0.02, 1), solimp of the geoms),
sap (newton) and MuJoCo's ``mj_step``.

    PYTHONPATH=. python experiments/quadruped.py [--duration 3]

Writes ``experiments/out/quadruped/{summary.json, summary.csv, quadruped.png}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, load, print_table, write_results
from robot_cells import mj_step_time  # the same ctrl replayed through plain mj_step

import contactopt as co

FEET = ("fl_foot", "fr_foot", "bl_foot", "br_foot")
METHODS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("gauss/clarabel", "gauss", "clarabel", {}),
    ("lcp/lemke", "lcp", "lemke", {}),
    ("anitescu/clarabel", "anitescu", "clarabel", {}),
    ("ccp/clarabel", "ccp", "clarabel", {}),
    ("regularized/clarabel", "regularized", "clarabel", {}),
    ("regularized(MuJoCo's params)/clarabel", "regularized", "clarabel",
     {"cone": "pyramidal", "solref": [0.02, 1.0], "solimp": [0.9, 0.95, 0.001, 0.5, 2.0], "impratio": 1.0}),
    ("sap/newton", "sap", "newton", {}),
    ("mujoco", "mujoco", "", {}),
]


def foot_slip(scene: co.Scene, traj: co.Trajectory) -> tuple[float, float]:
    """(mean slip per foot [m], mean slip speed in stance [m/s]) as in the module docstring."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(scene.system.path))  # type: ignore[attr-defined]
    data = mujoco.MjData(model)
    geoms = [model.geom(name).id for name in FEET]
    slip, stance = np.zeros(4), np.zeros(4)
    jac = np.zeros((3, model.nv))
    n = min(len(traj.steps), traj.q.shape[0] - 1)
    for k in range(n):
        data.qpos[:] = traj.q[k]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        for i, g in enumerate(geoms):
            radius = model.geom_size[g, 0]
            point = data.geom_xpos[g] - np.array([0.0, 0.0, radius])
            if point[2] > 1e-3:
                continue
            mujoco.mj_jac(model, data, jac, None, point, model.geom_bodyid[g])
            slip[i] += scene.dt * np.linalg.norm((jac @ traj.v[k + 1])[:2])
            stance[i] += scene.dt
    return float(slip.mean()), float(slip.sum() / max(stance.sum(), 1e-12))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args()
    scene = load("quadruped_trot")
    rows: list[dict[str, Any]] = []
    trajectories: dict[str, co.Trajectory] = {}
    mj = float("nan")
    for label, formulation, solver, options in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            traj = co.simulate(scene, formulation=formulation, solver=solver or None, options=options,
                               duration=args.duration)
            wall = (time.perf_counter() - start) / max(1, len(traj.steps))
        if formulation == "mujoco":
            mj = mj_step_time(scene, traj.controls())
        trajectories[label] = traj
        slip, slip_speed = foot_slip(scene, traj)
        phis = [record.phi.min() for record in traj.steps if record.phi.size]
        rows.append({"method": label, "ran": traj.completed, "steps": len(traj.steps),
                     "slip_per_foot_m": slip, "slip_speed_m_s": slip_speed,
                     "penetration_m": max(0.0, -min(phis)) if phis else 0.0,
                     "ms_per_step": 1e3 * wall, "forward_m": float(traj.q[-1, 0] - traj.q[0, 0]),
                     "final_height_m": float(traj.q[-1, 2]), "stopped": traj.message[:80]})
        print(f"  {label}: {rows[-1]}", file=sys.stderr)
    for row in rows:
        row["ratio_to_mj_step"] = row["ms_per_step"] / (1e3 * mj)
    print(f"mj_step alone: {1e3 * mj:.4f} ms per step")
    print_table([{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()} for row in rows])
    folder = OUT / "quadruped"
    write_results(folder, rows, {"duration": args.duration, "mj_step_ms": 1e3 * mj,
                                 "command": "PYTHONPATH=. python " + " ".join(sys.argv)})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, traj in trajectories.items():
        axes[0].plot(traj.t, traj.q[:, 0], label=label)
        axes[1].plot(traj.t, traj.q[:, 2], label=label)
    axes[0].set(xlabel="t [s]", ylabel="trunk x [m]", title="forward travel (trot from 0.5 s)")
    axes[1].set(xlabel="t [s]", ylabel="trunk z [m]", title="trunk height")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / "quadruped.png", dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
