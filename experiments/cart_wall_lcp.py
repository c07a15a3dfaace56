"""Reproduce the cart-and-wall plot of Tedrake 2022 ("Time-stepping LCP: Normal force"):
q[n+1] and f[n] as functions of (q[n], v[n]) for m = 1, h = 0.1, u = 0, and compare every
way contactopt can pose that step (gauss primal QP, gauss dual QP, LCP of the KKT
conditions) with every installed solver against the closed form

    q[n+1] = max(0, q + h v),      f[n] = m max(0, -(q + h v)) / h^2.

Prints a table (max errors, mean solve time, statuses), writes
``experiments/out/cart_wall_lcp/{surfaces.png, errors.png, summary.json, summary.csv}``.

    python experiments/cart_wall_lcp.py [--grid 21] [--solvers clarabel,osqp,cvxpy,lemke]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from tqdm import tqdm

import contactopt as co
from contactopt.integrators import TimeStepping
from contactopt.model.step import State

M_CART, H, U = 1.0, 0.1, 0.0
OUT = Path(__file__).resolve().parent / "out" / "cart_wall_lcp"


def closed_form(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    predicted = q + H * v + H**2 * U / M_CART
    return np.maximum(0.0, predicted), np.maximum(0.0, -M_CART * predicted / H**2)


def run_case(system: co.systems.System, program: str, solver: str, Q: np.ndarray,
             V: np.ndarray) -> dict[str, object]:
    q_next = np.full(Q.shape, np.nan)
    force = np.full(Q.shape, np.nan)
    statuses: dict[str, int] = {}
    solve_time = 0.0
    worst_residual = 0.0
    stepper = None if program == "kkt_lcp" else TimeStepping(system, "gauss", solver, H, {"form": program})
    for index in np.ndindex(Q.shape):
        q, v = float(Q[index]), float(V[index])
        if stepper is None:
            lcp = co.qp_to_lcp(co.formulate(system, [q], [v], H, "gauss"))
            sol = co.solve(lcp, solver)
            status, seconds, residual = sol.status, sol.setup_time + sol.solve_time, sol.residuals.worst
            if status.usable:  # z = impulse, w = phi/h + n v' = q[n+1] / h
                q_next[index], force[index] = H * sol.s[0], sol.x[0] / H
        else:
            nxt, record = stepper.step(State([q], [v]))
            status, residual = record.status, record.residuals.worst
            seconds = record.setup_time + record.solve_time
            if nxt is not None:
                q_next[index], force[index] = nxt.q[0], record.impulses[0, 0] / H
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        solve_time += seconds
        worst_residual = max(worst_residual, residual)
    q_ref, f_ref = closed_form(Q, V)
    return {"program": program, "solver": solver, "points": Q.size,
            "max_err_q_next": float(np.nanmax(np.abs(q_next - q_ref))),
            "max_err_force": float(np.nanmax(np.abs(force - f_ref))),
            "max_residual": float(worst_residual),
            "mean_solve_us": 1e6 * solve_time / Q.size,
            "status": ",".join(f"{k}:{v}" for k, v in statuses.items()),
            "_q_next": q_next, "_force": force}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", type=int, default=21, help="grid points per axis (default 21)")
    parser.add_argument("--solvers", help="comma-separated solvers (default: every installed one)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    solvers = args.solvers.split(",") if args.solvers else co.solvers.available()
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cart_wall.toml")
    system = scene.system
    Q, V = np.meshgrid(np.linspace(-1.0, 1.0, args.grid), np.linspace(-10.0, 10.0, args.grid))

    probe = co.formulate(system, [1.0], [0.0], H, "gauss")
    programs = {"primal": probe, "dual": co.formulate(system, [1.0], [0.0], H, "gauss", {"form": "dual"}),
                "kkt_lcp": co.qp_to_lcp(probe)}
    cases = [(p, s) for p, prog in programs.items() for s in solvers if co.solvers.can_take(prog, s)]
    rows = []
    start = time.perf_counter()
    for program, solver in tqdm(cases, desc="program x solver", unit="case"):
        rows.append(run_case(system, program, solver, Q, V))
    elapsed = time.perf_counter() - start

    columns = ["program", "solver", "points", "max_err_q_next", "max_err_force", "max_residual",
               "mean_solve_us", "status"]
    print(f"cart and wall, m = {M_CART:g}, h = {H:g}, u = {U:g}: {args.grid}x{args.grid} grid of "
          f"(q[n], v[n]) in [-1, 1] x [-10, 10]; errors against the closed form")
    widths = [max(len(c), *(len(_fmt(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(_fmt(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)))

    args.out.mkdir(parents=True, exist_ok=True)
    reference = next((r for r in rows if r["program"] == "kkt_lcp" and r["solver"] == "lemke"), rows[0])
    fig = plt.figure(figsize=(12, 5), constrained_layout=True)
    for k, (key, label) in enumerate((("_q_next", "q[n+1] [m]"), ("_force", "f[n] [N]"))):
        ax = fig.add_subplot(1, 2, k + 1, projection="3d")
        ax.plot_surface(Q, V, reference[key], cmap="viridis", alpha=0.85, linewidth=0)
        kink_v = np.linspace(-10, 10, 50)
        kink_q = -H * kink_v
        keep = np.abs(kink_q) <= 1
        ax.plot(kink_q[keep], kink_v[keep], np.zeros(keep.sum()), "r-", label="q + h v = 0")
        ax.set_xlabel("q[n]")
        ax.set_ylabel("v[n]")
        ax.set_zlabel(label)
        ax.set_title(f"{label} ({reference['program']}, {reference['solver']})")
        ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(f"Cart and wall, m = {M_CART:g}, h = {H:g}, u = {U:g}")
    fig.savefig(args.out / "surfaces.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    labels = [f"{r['program']}\n{r['solver']}" for r in rows]
    x = np.arange(len(rows))
    floor = 1e-17  # exact answers plotted at the floor of the log axis
    ax.bar(x - 0.2, [max(floor, r["max_err_q_next"]) for r in rows], 0.4, label="max |q[n+1] error| [m]")
    ax.bar(x + 0.2, [max(floor, r["max_err_force"]) for r in rows], 0.4, label="max |f[n] error| [N]")
    ax.set_yscale("log")
    ax.set_xticks(x, labels, fontsize="small")
    ax.set_ylabel("max error over the grid")
    ax.set_title("Error against the closed form, per program and solver")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    fig.savefig(args.out / "errors.png", dpi=110)
    plt.close(fig)

    public = [{c: r[c] for c in columns} for r in rows]
    (args.out / "summary.json").write_text(json.dumps(
        {"m": M_CART, "h": H, "u": U, "grid": args.grid, "elapsed_s": elapsed, "rows": public}, indent=2))
    with (args.out / "summary.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(public)
    print(f"wrote {args.out / 'surfaces.png'}, {args.out / 'errors.png'}, summary.json, summary.csv")
    return 0


def _fmt(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
