"""Compliant contact against stiffness (Tedrake 2022, "Compliant Contact Models": stiff springs
make stiff differential equations).

The bouncing ball (``problems/bouncing_ball.toml``, 1 kg, dropped from 1 m) made plastic
(``e = 0``: the default damping ratio is then 4.8, tuned so that the clipped spring-damper
rebounds with ``e = 0.01``) lands at 4.4 m/s and rests on a linear spring of stiffness
``k``. For each ``k`` and each integrator we record

* the steady-state penetration at the end against ``m g / k``;
* the cost: right-hand-side evaluations and internal steps of the integrator, wall time;
* what went wrong: ``euler`` (fixed-step explicit Euler at the scene's dt, the "step at a fixed
  rate" integrator) throws the ball out of the ground as ``k`` grows (the maximum height after
  the landing) and, at the largest ``k``, faster than ``max_speed`` (a failed step); RK45 and
  DOP853 (explicit, error-controlled) stay accurate but their step is bounded by stability,
  ``h ~ 1 / sqrt(k / m)``, so their cost grows like ``sqrt(k)`` (they are skipped above
  ``--explicit-max``); Radau, BDF and LSODA (stiff) take long steps while the ball rests.

The adaptive solvers are swept up to 1e9 N/m. Beyond it the linear model's force jump at the
onset of contact (the damper force ``c xdot`` switches on at ``x = 0``) takes over: at 1e10 N/m
Radau still needs ~2.8e3 evaluations but BDF and LSODA ~3e4-5e4 (~18 s), and at 1e11 N/m Radau
stops at the landing ("required step size is less than spacing between numbers"), where
Hunt-Crossley (force continuous at ``x = 0``) still runs.

Writes ``experiments/out/compliant_stiffness/{compliant_stiffness.png, summary.json, summary.csv}``.

    python experiments/compliant_stiffness.py [--duration 1.5] [--explicit-max 1e8]

(RK45 and DOP853 at 1e9 N/m: about 6e5 evaluations and two minutes each.)
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, load, print_table, write_results

import contactopt as co

STIFFNESSES = (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)
#: Fixed-step Euler is cheap at any k: it also gets these, where it fails outright.
EULER_EXTRA = (1e10, 1e11, 1e12)
METHODS = ("euler", "RK45", "DOP853", "Radau", "BDF", "LSODA")
EXPLICIT_ADAPTIVE = ("RK45", "DOP853")


def run(scene: co.Scene, k: float, method: str, duration: float) -> dict[str, Any]:
    """One run and its numbers."""
    m, g, r = scene.system.params["m"], scene.system.params["g"], scene.system.params["radius"]
    start = time.perf_counter()
    traj = co.simulate(scene, formulation="compliant", duration=duration,
                       options={"stiffness": k, "method": method})
    wall = time.perf_counter() - start
    phi = traj.q[:, 1] - r
    landed = np.flatnonzero(phi < 0)
    after = phi[landed[0]:] if landed.size else phi
    ok = [record for record in traj.steps if record.status.usable]
    return {
        "k": k, "method": method, "completed": traj.completed,
        "final_penetration": float(-phi[-1]) if traj.completed else float("nan"),
        "mg_over_k": m * g / k,
        "final_over_mg_k": float(-phi[-1] / (m * g / k)) if traj.completed else float("nan"),
        "max_height_after_landing": float(after.max()),
        "evaluations": int(sum(record.iterations for record in ok)),
        "internal_steps": int(sum(record.substeps for record in ok)),
        "wall_s": wall,
        "message": traj.message[:120],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=1.5)
    parser.add_argument("--explicit-max", type=float, default=1e8,
                        help="largest k for RK45 and DOP853 (their cost grows like sqrt(k))")
    args = parser.parse_args()
    scene = copy.deepcopy(load("bouncing_ball"))
    scene.system.restitution = 0.0  # plastic landing: the ball comes to rest
    rows = []
    for method in METHODS:
        for k in STIFFNESSES + (EULER_EXTRA if method == "euler" else ()):
            if method in EXPLICIT_ADAPTIVE and k > args.explicit_max:
                continue
            row = run(scene, k, method, args.duration)
            rows.append(row)
            print(f"{method:7s} k={k:8.1e}  completed={row['completed']!s:5s} evals={row['evaluations']:8d} "
                  f"final/(mg/k)={row['final_over_mg_k']:.4f}  {row['wall_s']:.2f}s", flush=True)
    print_table([{key: row[key] for key in ("method", "k", "completed", "final_over_mg_k",
                                            "max_height_after_landing", "evaluations", "internal_steps", "wall_s")}
                 for row in rows])

    fig, axes = plt.subplots(1, 3, figsize=(16, 5), constrained_layout=True)
    ks = np.array(STIFFNESSES + EULER_EXTRA)
    m, g = scene.system.params["m"], scene.system.params["g"]
    axes[0].loglog(ks, m * g / ks, "k--", label="m g / k")
    for method in METHODS:
        mine = [row for row in rows if row["method"] == method]
        good = [row for row in mine if row["completed"]]
        failed = [row for row in mine if not row["completed"]]
        resting = [row for row in good if 0.5 < row["final_over_mg_k"] < 2.0]  # not thrown into the air
        line, = axes[0].loglog([row["k"] for row in resting], [row["final_penetration"] for row in resting], "o-",
                               label=method, alpha=0.8)
        axes[1].loglog([row["k"] for row in good], [max(row["evaluations"], 1) for row in good], "o-",
                       color=line.get_color(), label=method)
        axes[2].loglog([row["k"] for row in mine], [max(row["max_height_after_landing"], 1e-9) for row in mine],
                       "o-", color=line.get_color(), label=method)
        if failed:
            axes[1].loglog([row["k"] for row in failed], [max(row["evaluations"], 1) for row in failed], "x",
                           color=line.get_color(), ms=12, mew=3)
            axes[2].loglog([row["k"] for row in failed],
                           [max(row["max_height_after_landing"], 1e-9) for row in failed], "x",
                           color=line.get_color(), ms=12, mew=3)
    axes[0].set_title("steady-state penetration (runs that came to rest)")
    axes[0].set_ylabel("penetration at the end [m]")
    axes[1].set_title("cost (x: the run stopped on a failed step)")
    axes[1].set_ylabel("right-hand-side evaluations")
    axes[2].set_title("explosion: highest point after the landing")
    axes[2].set_ylabel("max height of the lowest point after landing [m]")
    for ax in axes:
        ax.set_xlabel("stiffness k [N/m]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"Compliant contact: ball (1 kg) dropped from 1 m, e = 0, {args.duration:g} s, "
                 f"output dt = {scene.dt:g} s")
    folder = OUT / "compliant_stiffness"
    write_results(folder, rows, {"scene": "bouncing_ball (restitution 0)", "duration": args.duration,
                                 "dt": scene.dt, "methods": list(METHODS), "stiffnesses": list(STIFFNESSES)})
    fig.savefig(folder / "compliant_stiffness.png", dpi=110)
    print(f"wrote {folder}/compliant_stiffness.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
