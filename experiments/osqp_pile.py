"""Where OSQP's time goes on the 100-sphere pile with Anitescu's QP (the ``anitescu/osqp`` row
of ``bench_step.py``, issue 10), measured rather than assumed.

1. **Per step** of a ``simulate`` (20 steps, as in the benchmark): contacts, ADMM iterations,
   how polishing ended (OSQP's message), setup and solve time, contactopt's worst residual.
2. **The first step's program** under OSQP settings (defaults as contactopt sets them, other
   ``rho``, adaptive-rho schedules, no scaling, looser ``eps``): iterations, polishing, solve
   time; Clarabel on the same program for scale; and the velocities that program asks for
   (Anitescu recovers the keyframe's penetrations, up to 0.64 mm, within one step of a
   jammed packing), next to those of the regularized (MuJoCo-style) formulation.
3. **Warm starts** on steps 1..19 (each step's program set up afresh, as its contact set
   differs from the previous step's): cold, from the previous step's ``x = v'`` only, and from
   ``x`` plus the previous edge impulses ``y`` carried over contact by contact (contacts
   matched by MuJoCo geom pair, :meth:`contactopt.systems.mjcf.system.MjcfSystem.contact_keys`).

Writes ``experiments/out/osqp_pile/summary.json`` (and ``summary.csv``, the per-step rows).

    python experiments/osqp_pile.py [--steps 20]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's contactopt, not an installed one
from common import OUT, print_table, write_results  # noqa: E402

import contactopt as co  # noqa: E402
from contactopt.solvers.backends.osqp import DEFAULTS  # noqa: E402

SWEEP: list[dict[str, Any]] = [
    {}, {"rho": 1.0}, {"rho": 10.0}, {"adaptive_rho_tolerance": 2.0, "adaptive_rho_interval": 100},
    {"alpha": 1.0}, {"scaling": 0, "rho": 1.0}, {"scaling": 0, "rho": 2.0, "adaptive_rho": False},
    {"eps_abs": 1e-5, "eps_rel": 1e-5}, {"eps_abs": 1e-3, "eps_rel": 1e-3},
    {"polish_refine_iter": 30, "delta": 1e-9},
]


def osqp_run(program: co.ConicProgram, settings: dict[str, Any], x0: Any = None, y0: Any = None) -> dict[str, Any]:
    """One fresh OSQP setup and solve of ``program`` (optionally warm-started)."""
    import osqp

    solver = osqp.OSQP()
    solver.setup(program.P_upper, program.c, program.A, np.full(program.m, -np.inf), program.b,
                 **{**DEFAULTS, **settings})
    if x0 is not None:
        solver.warm_start(x=x0, y=y0)
    start = time.perf_counter()
    result = solver.solve(raise_error=False)
    return {"iterations": int(result.info.iter), "status": result.info.status,
            "polish": int(result.info.status_polish), "solve_ms": 1e3 * (time.perf_counter() - start),
            "x": result.x, "y": result.y}


def per_step(scene: co.Scene, steps: int) -> tuple[list[dict[str, Any]], list[co.ConicProgram], Any]:
    """Rows of a ``simulate`` with anitescu/osqp, the programs it solved, and its trajectory."""
    import contactopt.solvers.backends.osqp as backend

    programs: list[co.ConicProgram] = []
    solve = backend.solve

    def recording(program: Any, variant: Any, options: Any) -> Any:
        programs.append(program)
        return solve(program, variant, options)

    backend.solve = recording  # type: ignore[assignment]
    try:
        traj = co.simulate(scene, formulation="anitescu", solver="osqp", duration=steps * scene.dt)
    finally:
        backend.solve = solve  # type: ignore[assignment]
    rows = [{"step": i, "contacts": int(s.phi.shape[0]), "rows": programs[i].m, "iterations": s.iterations,
             "polishing": s.message.split("polishing ")[-1], "setup_ms": 1e3 * s.setup_time,
             "solve_ms": 1e3 * s.solve_time, "worst_residual": s.residuals.worst}
            for i, s in enumerate(traj.steps)]
    return rows, programs, traj


def warm_starts(scene: co.Scene, programs: list[co.ConicProgram], traj: Any) -> list[dict[str, Any]]:
    """Cold, x-only and x+y (matched by geom pair) starts of steps 1.. from step i-1's answer."""
    keys = [scene.system.contact_keys(q)[0] for q in traj.q[:len(programs)]]  # type: ignore[attr-defined]
    rows = []
    previous = osqp_run(programs[0], {})
    for i in range(1, len(programs)):
        program, last = programs[i], programs[i - 1]
        per = max(int(program.metadata["k"]), 1)
        pairs_now = [tuple(k) for k in keys[i][program.metadata["contacts"]]]
        pairs_before = {tuple(k): j for j, k in enumerate(keys[i - 1][last.metadata["contacts"]])}
        y0 = np.zeros(program.m)
        impulses = previous["y"].reshape(-1, per)
        matched = 0
        for j, pair in enumerate(pairs_now):
            if pair in pairs_before:
                y0[j * per:(j + 1) * per] = impulses[pairs_before[pair]]
                matched += 1
        cold = osqp_run(program, {})
        x_only = osqp_run(program, {}, previous["x"], np.zeros(program.m))
        mapped = osqp_run(program, {}, previous["x"], y0)
        rows.append({"step": i, "contacts": len(pairs_now), "matched": matched,
                     "cold": cold["iterations"], "x_only": x_only["iterations"], "x_and_y": mapped["iterations"],
                     "polished (cold, x, x+y)": f"{cold['polish']}, {x_only['polish']}, {mapped['polish']}"})
        previous = cold
    return rows


def first_step(scene: co.Scene, program: co.ConicProgram) -> dict[str, Any]:
    """The settings sweep on step 0, Clarabel on it, and the velocities it produces."""
    sweep = []
    for settings in SWEEP:
        run = osqp_run(program, settings)
        sweep.append({"settings": settings or "contactopt defaults", "iterations": run["iterations"],
                      "status": run["status"], "polish": run["polish"], "solve_ms": round(run["solve_ms"], 1)})
        print(f"  step 0 {settings or 'defaults'}: {run['iterations']} iterations, polish {run['polish']}, "
              f"{run['solve_ms']:.0f} ms", flush=True)
    clarabel = co.solve(program, "clarabel")
    active = int(np.sum(program.b - program.A @ clarabel.x <= 1e-7 * max(1.0, float(np.abs(program.b).max()))))
    velocity = {}
    for formulation in ("anitescu", "regularized"):
        traj = co.simulate(scene, formulation=formulation, solver="clarabel", duration=scene.dt)
        v = traj.v[-1].reshape(-1, 6)
        velocity[formulation] = {"max_linear": float(np.abs(v[:, :3]).max()),
                                 "max_angular": float(np.abs(v[:, 3:]).max())}
    return {"n": program.n, "m": program.m, "active_rows_at_solution": active, "sweep": sweep,
            "clarabel": {"iterations": clarabel.iterations, "objective": program.objective(clarabel.x),
                         "max_edge_impulse": float(clarabel.y.max())},
            "min_phi": float(scene.system.contacts(scene.q0).phi.min()), "velocity_after_step_0": velocity}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="steps of the simulate (the benchmark's 20)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    rows, programs, traj = per_step(scene, args.steps)
    print_table(rows)
    warm = warm_starts(scene, programs, traj)
    print_table(warm)
    step0 = first_step(scene, programs[0])
    total = sum(r["setup_ms"] + r["solve_ms"] for r in rows)
    extra = {"solver_ms_total": total, "solver_ms_step_0": rows[0]["setup_ms"] + rows[0]["solve_ms"],
             "first_step": step0, "warm_starts": warm}
    print(f"solver time: {total:.0f} ms over {len(rows)} steps, of which step 0 {extra['solver_ms_step_0']:.0f} ms")
    write_results(OUT / "osqp_pile", rows, extra)
    print(f"wrote {OUT / 'osqp_pile'}/summary.json, summary.csv")


if __name__ == "__main__":
    main()
