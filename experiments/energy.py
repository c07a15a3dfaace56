"""Energy of the double pendulum under semi-implicit Euler, explicit Euler, RK45 and the
variational integrator ("Lagrangian Mechanics" notes: symplectic, no secular energy drift).

Same scene (m1 = m2 = 1, l1 = l2 = 1, released horizontal), h = 10 ms, 100 s (10^4 steps).
Writes ``experiments/out/energy/{energy.png, summary.json, summary.csv}``.

    python experiments/energy.py [--duration 100] [--dt 0.01]
"""

from __future__ import annotations

import argparse
import sys

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, Case, load, print_table, run_cases, write_results

CASES = [
    Case("semi-implicit Euler (gauss time stepping)", "gauss", "clarabel"),
    Case("explicit Euler", "ode", "clarabel", {"method": "euler"}),
    Case("RK45 (rtol 1e-9)", "ode", "clarabel"),
    Case("variational (midpoint DEL)", "variational", "clarabel"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=100.0)
    parser.add_argument("--dt", type=float, default=0.01)
    args = parser.parse_args()
    scene = load("double_pendulum")
    trajectories = run_cases(scene, CASES, dt=args.dt, duration=args.duration)
    rows = []
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), constrained_layout=True)
    for label, traj in trajectories.items():
        energy = np.array([sum(scene.system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)])
        error = energy - energy[0]
        tenth = max(1, len(error) // 10)
        rows.append({"integrator": label, "max_|dE|_J": float(np.abs(error).max()),
                     "mean_dE_first_tenth": float(error[:tenth].mean()),
                     "mean_dE_last_tenth": float(error[-tenth:].mean()), "completed": traj.completed,
                     "time_s": traj.summary()["solve_time"]})
        axes[0].plot(traj.t, error, label=label)
        axes[1].semilogy(traj.t, np.maximum(np.abs(error), 1e-16), label=label)
    axes[0].set_ylabel("E(t) - E(0) [J]")
    axes[1].set_ylabel("|E(t) - E(0)| [J]")
    axes[1].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"Double pendulum energy, h = {args.dt:g} s")
    folder = OUT / "energy"
    print_table(rows)
    write_results(folder, rows, {"dt": args.dt, "duration": args.duration})
    fig.savefig(folder / "energy.png", dpi=110)
    print(f"wrote {folder}/energy.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
