"""Constraint drift of the Cartesian pendulum (c = x^2 + y^2 - l^2) over 10 s, per treatment.

Continuous time (``ode``, RK45 at rtol = atol = 1e-5 with 0.1 s output intervals, so the
integrator's own error feeds the drift) and time stepping (``gauss``, h = 1 ms), each with no
treatment, Baumgarte (one critically damped alpha, Tedrake 2022; alpha and beta, the
"Lagrangian Mechanics" notes) and projection (Savin 2020). Writes
``experiments/out/constraint_drift/{constraint_drift.png, summary.json, summary.csv}``.

    python experiments/constraint_drift.py
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, Case, load, print_table, run_cases, write_results

ODE = {"rtol": 1e-5, "atol": 1e-5}
CASES = [
    Case("ode / none", "ode", "clarabel", {**ODE, "drift": "none"}),
    Case("ode / baumgarte alpha=10", "ode", "clarabel", {**ODE, "drift": "baumgarte"}),
    Case("ode / baumgarte alpha=30 beta=200", "ode", "clarabel", {**ODE, "drift": "baumgarte", "alpha": 30.0,
                                                                  "beta": 200.0}),
    Case("ode / projection", "ode", "clarabel", {**ODE, "drift": "projection"}),
    Case("gauss / none", "gauss", "clarabel", {"drift": "none"}),
    Case("gauss / baumgarte alpha=10", "gauss", "clarabel", {"drift": "baumgarte"}),
    Case("gauss / projection", "gauss", "clarabel", {"drift": "projection"}),
]


def main() -> int:
    scene = load("cartesian_pendulum")
    ode_cases = [c for c in CASES if c.formulation == "ode"]
    stepped_cases = [c for c in CASES if c.formulation != "ode"]
    trajectories = {**run_cases(scene, ode_cases, dt=0.1, duration=10.0),
                    **run_cases(scene, stepped_cases, dt=1e-3, duration=10.0)}
    rows = []
    fig, ax = plt.subplots(figsize=(9, 5), constrained_layout=True)
    floor = 1e-17
    for label, traj in trajectories.items():
        errors = traj.constraint_errors()
        times = np.array([r.t for r in traj.steps])
        rows.append({"case": label, "max_|c|_first_second": float(errors[times < 1.0].max()),
                     "max_|c|_last_second": float(errors[times >= 9.0].max()), "max_|c|": float(errors.max()),
                     "steps": len(traj.steps), "solve_s": traj.summary()["solve_time"]})
        ax.semilogy(times, np.maximum(errors, floor), label=label,
                    linestyle="-" if label.startswith("ode") else "--")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("|c(q)| = |x^2 + y^2 - l^2|")
    ax.set_title("Cartesian pendulum: constraint drift per treatment")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    folder = OUT / "constraint_drift"
    print_table(rows)
    write_results(folder, rows, {"scene": "cartesian_pendulum", "ode_options": ODE})
    fig.savefig(folder / "constraint_drift.png", dpi=110)
    print(f"wrote {folder}/constraint_drift.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
