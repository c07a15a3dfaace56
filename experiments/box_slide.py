"""Stop distance and stop time of the sliding box per formulation and solver.

A cube (half-size 0.1 m, 1 kg, mu = 0.5) launched at v0 = 1 m/s decelerates at mu g and
stops after ``v0 / (mu g) = 0.2039 s`` at ``v0^2 / (2 mu g) = 0.1019 m`` (Coulomb friction).
Writes ``experiments/out/box_slide/{box_slide.png, summary.json, summary.csv}``.

    python experiments/box_slide.py [--dt 1e-3]
"""

from __future__ import annotations

import argparse
import sys

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, Case, load, print_table, run_cases, write_results

import contactopt as co

G = 9.81

CASES = [
    Case("lcp/lemke", "lcp", "lemke"),
    Case("anitescu/clarabel", "anitescu", "clarabel"),
    Case("anitescu/osqp", "anitescu", "osqp"),
    Case("anitescu-dual/clarabel", "anitescu", "clarabel", {"form": "dual"}),
    Case("ccp/clarabel", "ccp", "clarabel"),
    Case("ccp-dual/clarabel", "ccp", "clarabel", {"form": "dual"}),
    Case("regularized-pyramidal/clarabel", "regularized", "clarabel"),
    Case("regularized-elliptic/clarabel", "regularized", "clarabel", {"cone": "elliptic"}),
    # MuJoCo's own default time constant: soft friction, slip decays instead of stopping.
    Case("regularized-solref0.02/clarabel", "regularized", "clarabel", {"solref": (0.02, 1.0)}),
]


def stop_metrics(traj: co.Trajectory, speed_tol: float = 1e-3) -> tuple[float, float]:
    """(stop time: first t with horizontal speed below ``speed_tol``; distance slid by the end)."""
    speed = np.linalg.norm(traj.v[:, :2], axis=1)
    stopped = np.flatnonzero(speed < speed_tol)
    t_stop = float(traj.t[stopped[0]]) if stopped.size else float("nan")
    return t_stop, float(np.linalg.norm(traj.q[-1, :2] - traj.q[0, :2]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dt", type=float, default=None, help="time step (default: the scene's)")
    args = parser.parse_args()
    scene = load("box_slide")
    mu = float(scene.system.mu)
    v0 = float(np.linalg.norm(scene.v0[:2]))
    t_ref, d_ref = v0 / (mu * G), v0**2 / (2 * mu * G)
    trajectories = run_cases(scene, CASES, dt=args.dt)
    rows = []
    for label, traj in trajectories.items():
        t_stop, distance = stop_metrics(traj)
        summary = traj.summary()
        rows.append({"case": label, "stop_time_s": t_stop, "stop_time_err_%": 100 * (t_stop - t_ref) / t_ref,
                     "distance_m": distance, "distance_err_%": 100 * (distance - d_ref) / d_ref,
                     "min_phi_m": summary["min_phi"], "max_residual": summary["max_residual"],
                     "solve_ms/step": 1e3 * summary["solve_time"] / max(1, summary["steps"]),
                     "status": ",".join(f"{k}:{v}" for k, v in summary["status"].items())})
    print(f"box slide: v0 = {v0:g} m/s, mu = {mu:g}, dt = {args.dt or scene.dt:g}; "
          f"analytic stop time {t_ref:.4f} s, distance {d_ref:.4f} m")
    print_table(rows)
    folder = OUT / "box_slide"
    write_results(folder, rows, {"v0": v0, "mu": mu, "dt": args.dt or scene.dt,
                                 "stop_time_ref": t_ref, "distance_ref": d_ref})
    fig, axes = plt.subplots(2, 1, figsize=(8, 7), sharex=True, constrained_layout=True)
    for label, traj in trajectories.items():
        axes[0].plot(traj.t, traj.q[:, 0] - traj.q[0, 0], label=label)
        axes[1].plot(traj.t, traj.v[:, 0], label=label)
    axes[0].axhline(d_ref, color="k", linestyle=":", label="v0^2 / (2 mu g)")
    axes[1].plot(traj.t, np.maximum(0.0, v0 - mu * G * traj.t), "k:", label="v0 - mu g t")
    axes[0].set_ylabel("distance slid x - x0 [m]")
    axes[1].set_ylabel("velocity vx [m/s]")
    axes[1].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle("Box slide: every formulation against Coulomb's closed form")
    fig.savefig(folder / "box_slide.png", dpi=110)
    print(f"wrote {folder}/box_slide.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
