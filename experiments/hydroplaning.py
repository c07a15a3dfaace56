"""Hydroplaning of Anitescu-type relaxations (Tedrake 2022, "Anitescu's convex formulation").

While the box slides, the relaxed constraint ``phi/h + (n + mu d_i) v' >= 0`` of the edge
opposing the slip forces ``phi(q') >= h mu |v_t|``: the box hovers at that gap, which shrinks
as it slows. The LCP keeps ``phi = 0``; the regularized (MuJoCo) model sinks slightly instead.
Writes ``experiments/out/hydroplaning/{hydroplaning.png, summary.json, summary.csv}``.

    python experiments/hydroplaning.py
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, Case, load, print_table, run_cases, write_results

CASES = [
    Case("lcp", "lcp", "lemke"),
    Case("anitescu", "anitescu", "clarabel"),
    Case("ccp", "ccp", "clarabel"),
    Case("regularized", "regularized", "clarabel", {"cone": "elliptic"}),
]


def main() -> int:
    scene = load("box_slide")
    mu, h, half = float(scene.system.mu), scene.dt, 0.1
    trajectories = run_cases(scene, CASES)
    rows = []
    fig, axes = plt.subplots(2, 1, figsize=(8, 7), sharex=True, constrained_layout=True)
    for label, traj in trajectories.items():
        gap = traj.q[:, 2] - half
        slip = np.linalg.norm(traj.v[:, :2], axis=1)
        sliding = slip > 0.2
        predicted = h * mu * slip
        ratio = float(np.median(gap[1:][sliding[1:]] / predicted[1:][sliding[1:]]))
        rows.append({"formulation": label, "max_gap_mm": 1e3 * float(gap.max()),
                     "min_gap_mm": 1e3 * float(gap.min()), "gap/(h mu |v_t|) while sliding": ratio,
                     "max_|vz|": float(np.abs(traj.v[:, 2]).max())})
        axes[0].plot(traj.t, 1e3 * gap, label=label)
        axes[1].plot(traj.t, traj.v[:, 2], label=label)
    slip = np.linalg.norm(trajectories["anitescu"].v[:, :2], axis=1)
    axes[0].plot(trajectories["anitescu"].t, 1e3 * h * mu * slip, "k:", label="h mu |v_t| (predicted)")
    axes[0].set_ylabel("height above rest, phi [mm]")
    axes[1].set_ylabel("normal velocity vz [m/s]")
    axes[1].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"Hydroplaning of the sliding box (h = {h:g}, mu = {mu:g})")
    folder = OUT / "hydroplaning"
    print_table(rows)
    write_results(folder, rows, {"dt": h, "mu": mu})
    fig.savefig(folder / "hydroplaning.png", dpi=110)
    print(f"wrote {folder}/hydroplaning.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
