"""The reference's spinning ball (Tedrake 2022, "A spinning ball bouncing on the ground"): the
post-impact velocity of a hollow ball with infinite friction against the reference's matrix

    qdot+ = [[3/5, 0, -2r/5], [0, -e, 0], [-3/(5r), 0, 2/5]] qdot-,    q = [x, z, theta].

1. The impact law on random pre-impact states: the sticking law (closed form), the formula as
   the reference prints it, and the friction-cone impact program solved by Clarabel with
   ``mu = inf``, each against the matrix.
2. ``problems/spinning_ball_hybrid.toml`` simulated by the event-driven ``hybrid`` method:
   every recorded impact (``v-``, ``v+``) against the matrix, and the trajectory next to the
   same throw with finite friction (``mu = 0.2``: the impact program) and next to a time-stepping
   formulation (Anitescu, ``mu = 0.2``).

Writes ``experiments/out/spinning_ball/{spinning_ball.png, summary.json, summary.csv}``.

    python experiments/spinning_ball.py [--samples 200] [--duration 1.5]
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, load, print_table, write_results

import contactopt as co
from contactopt.integrators.impacts import reference_sticking_matrix, solve_impact, sticking_impact_matrix


def reference_matrix(r: float, e: float) -> np.ndarray:
    """The reference's post-impact map of the hollow ball."""
    return np.array([[3 / 5, 0, -2 * r / 5], [0, -e, 0], [-3 / (5 * r), 0, 2 / 5]])


def impact_law_table(samples: int, seed: int = 0) -> list[dict[str, Any]]:
    """Worst error of each route over ``samples`` random balls and pre-impact states."""
    rng = np.random.default_rng(seed)
    worst = {"sticking law (closed form)": 0.0, "reference's printed formula": 0.0,
             "impact program (clarabel, mu = inf)": 0.0}
    for _ in range(samples):
        m, r, e = rng.uniform(0.1, 5.0), rng.uniform(0.02, 0.5), rng.uniform(0.0, 1.0)
        system = co.systems.PlanarBall({"m": m, "radius": r, "g": 9.81}, {"mu": math.inf, "restitution": e})
        q = np.array([0.0, r, 0.0])
        M, J = system.dynamics(q, np.zeros(3)).M, system.contacts(q).J
        v = rng.normal(size=3) * [1.0, 3.0, 1.0 / r]
        v[1] = -abs(v[1])
        expected = reference_matrix(r, e) @ v
        scale = max(1.0, float(np.abs(v).max()))
        answers = {
            "sticking law (closed form)": sticking_impact_matrix(M, J, e, 2) @ v,
            "reference's printed formula": reference_sticking_matrix(M, J, e, 2) @ v,
            "impact program (clarabel, mu = inf)": solve_impact(M, J, v, e, math.inf, 2, law="program").v_post,
        }
        for name, answer in answers.items():
            worst[name] = max(worst[name], float(np.abs(answer - expected).max()) / scale)
    return [{"route": name, "samples": samples, "max_rel_error": error} for name, error in worst.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--duration", type=float, default=1.5)
    args = parser.parse_args()

    law_rows = impact_law_table(args.samples)
    print_table(law_rows)

    scene = load("spinning_ball_hybrid")
    r, e = scene.system.params["radius"], scene.system.restitution
    traj = co.simulate(scene, duration=args.duration)
    rows = []
    for impact in traj.all_impacts():
        predicted = reference_matrix(r, e) @ impact.v_pre
        rows.append({"t": impact.t, "step": int(impact.t // scene.dt),
                     **{f"v_pre_{k}": float(x) for k, x in zip("xzt", impact.v_pre, strict=True)},
                     **{f"v_post_{k}": float(x) for k, x in zip("xzt", impact.v_post, strict=True)},
                     "max_abs_error_vs_matrix": float(np.abs(impact.v_post - predicted).max()),
                     "plastic": bool(abs(impact.v_post[1]) < 1e-12)})
    print()
    print_table([{k: row[k] for k in ("t", "v_pre_x", "v_pre_z", "v_pre_t", "v_post_x", "v_post_z", "v_post_t",
                                      "max_abs_error_vs_matrix")} for row in rows[:8]])

    finite = copy.deepcopy(scene)
    finite.system.mu = 0.2
    others = {"hybrid, mu = inf (reference)": traj,
              "hybrid, mu = 0.2 (impact program)": co.simulate(finite, duration=args.duration),
              "anitescu time stepping, mu = 0.2": co.simulate(finite, formulation="anitescu", solver="clarabel",
                                                              duration=args.duration)}
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True, constrained_layout=True)
    for label, run in others.items():
        axes[0].plot(run.t, run.q[:, 1] - r, label=label)
        axes[1].plot(run.t, run.v[:, 0], label=label)
        axes[2].plot(run.t, run.v[:, 2], label=label)
    for impact in traj.all_impacts():
        for ax in axes:
            ax.axvline(impact.t, color="grey", alpha=0.2, lw=0.8)
    axes[0].set_ylabel("height of the lowest point [m]")
    axes[1].set_ylabel("vx [m/s]")
    axes[2].set_ylabel("omega [rad/s]")
    axes[2].set_xlabel("time [s]  (grey: impacts of the mu = inf run)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"Spinning hollow ball, r = {r:g} m, e = {e:g}: v+ = matrix v- at every impact")
    folder = OUT / "spinning_ball"
    write_results(folder, rows, {"impact_law": law_rows, "scene": "spinning_ball_hybrid", "radius": r,
                                 "restitution": e, "duration": args.duration,
                                 "max_error_over_impacts": max((row["max_abs_error_vs_matrix"] for row in rows),
                                                               default=float("nan"))})
    fig.savefig(folder / "spinning_ball.png", dpi=110)
    print(f"wrote {folder}/spinning_ball.png, summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
