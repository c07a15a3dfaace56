"""Anisotropy of polyhedral friction cones: push direction against sliding direction.

A box launched sliding at angle theta to the x axis: with the exact cone (``ccp``) friction
opposes the velocity and the path is straight; with ``k`` directions (``lcp``, maximum
dissipation over a polygon) friction points to the polygon vertex nearest to -v, so the
path curves toward a cone direction unless theta is one of them. Launch angles 0-45 deg,
k = 4, 8, 16 and the exact cone. Writes
``experiments/out/friction_anisotropy/{deviation.png, paths.png, summary.json, summary.csv}``.

    python experiments/friction_anisotropy.py
"""

from __future__ import annotations

import dataclasses
import sys

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, Case, load, print_table, run_cases, write_results

ANGLES_DEG = [0.0, 7.5, 15.0, 22.5, 30.0, 37.5, 45.0]
CASES = [Case("lcp k=4", "lcp", "lemke", {"k": 4}), Case("lcp k=8", "lcp", "lemke", {"k": 8}),
         Case("lcp k=16", "lcp", "lemke", {"k": 16}), Case("ccp (exact cone)", "ccp", "clarabel")]


def launched(scene, angle_deg: float, speed: float = 1.0):
    theta = np.radians(angle_deg)
    v0 = np.array(scene.v0, dtype=float)
    v0[:2] = speed * np.array([np.cos(theta), np.sin(theta)])
    return dataclasses.replace(scene, v0=v0)


def final_direction_deg(traj) -> float:
    displacement = traj.q[-1, :2] - traj.q[0, :2]
    return float(np.degrees(np.arctan2(displacement[1], displacement[0])))


def main() -> int:
    scene = load("box_slide")
    rows = []
    paths = {}
    for angle in ANGLES_DEG:
        for label, traj in run_cases(launched(scene, angle), CASES).items():
            direction = final_direction_deg(traj)
            rows.append({"launch_deg": angle, "cone": label, "slide_direction_deg": direction,
                         "deviation_deg": direction - angle})
            if angle == 22.5:
                paths[label] = traj.q[:, :2] - traj.q[0, :2]
    print_table(rows)
    folder = OUT / "friction_anisotropy"
    write_results(folder, rows, {"angles_deg": ANGLES_DEG, "dt": scene.dt})
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    for case in CASES:
        deviation = [r["deviation_deg"] for r in rows if r["cone"] == case.label]
        ax.plot(ANGLES_DEG, deviation, "o-", label=case.label)
    ax.set_xlabel("launch direction [deg from x]")
    ax.set_ylabel("sliding direction - launch direction [deg]")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title("Friction anisotropy of polyhedral cones")
    fig.savefig(folder / "deviation.png", dpi=110)
    fig, ax = plt.subplots(figsize=(6, 6), constrained_layout=True)
    for label, path in paths.items():
        ax.plot(path[:, 0], path[:, 1], label=label)
    ray = np.linspace(0, 0.11, 10)
    ax.plot(ray * np.cos(np.radians(22.5)), ray * np.sin(np.radians(22.5)), "k:", label="launch direction")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend()
    ax.grid(True, alpha=0.3)
    ax.set_title("Paths of a box launched at 22.5 deg")
    fig.savefig(folder / "paths.png", dpi=110)
    print(f"wrote {folder}/deviation.png, paths.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
