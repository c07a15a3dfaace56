"""``coulomb``/nsn against ``coulomb``/nsgs at stick-slip transitions (issue 35, item 1).

Runs, for both solvers at their default FCLIB tolerance (1e-8):

* the box slide (``problems/box_slide.toml``) over the grid mu in {0.1, ..., 1.0} x v0 in
  {0.3, ..., 3.0} m/s, each until 0.1 s after Coulomb's stop ``v0 / (mu g)`` (the stalls came
  after it, on four resting corners), plus the issue's case mu 0.33, v0 1.2 m/s for 0.5 s;
* the table on four legs, the sphere stack and the 100-sphere pile from its keyframe, at their
  scene durations;
* every dm-control and gymnasium model of ``experiments/robot_models.py`` that is installed
  (``--steps`` steps from keyframe 0 with its ctrl held, as ``experiments/robots.py``), each
  run under a wall-time limit; a model the ``coulomb`` formulation refuses is a row with the
  reason, a source not installed is listed with why.

Per run: completed steps, the failure (if any), and at the *transition steps* -- steps where a
contact with friction switches between sticking and sliding (by the Alart-Curnier mode of its
answer, :func:`contactopt.solvers.coulomb.alart_curnier.alart_curnier` with ``rho = 1 / max diag W_cc``:
``||z_T|| < mu z_N`` sticks, else it slides; a step whose contact set changed counts when its
numbers of sticking or sliding contacts change) -- the median Newton steps of nsn (and its
fallback's NSGS sweeps) and the median sweeps of nsgs, beside their medians over all steps.

    PYTHONPATH=. python experiments/coulomb_transitions.py [--quick] [--steps 250] [--time-limit 120]

Writes ``experiments/out/coulomb_transitions/{summary.json, summary.csv, transitions.png}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, ROOT, print_table, write_results
from robot_cells import held_ctrl, one_line
from robot_models import dm_control_models, gymnasium_models

import contactopt as co
from contactopt.analysis.cell_limits import CellTimeLimitReached, cell_deadline
from contactopt.programs.coulomb import CoulombProgram, local_scaling
from contactopt.solvers.coulomb.alart_curnier import alart_curnier

G = 9.81
SOLVERS = ("nsn", "nsgs")
MUS = [round(0.1 * k, 1) for k in range(1, 11)]
V0S = [round(0.3 * k, 1) for k in range(1, 11)]
QUICK_GRID = [(0.3, 0.6), (0.7, 2.1)]
ISSUE_CASE = (0.33, 1.2, 0.5)  # mu, v0, duration: nsn stalled at step 382 before the fallback
AFTER_STOP = 0.1  # s simulated past the stop
SCENES = ["table_four_legs", "sphere_stack", "sphere_pile_mjcf"]
QUICK_MODELS = ["suite/hopper", "gym/hopper"]
TAKE_OFF, STICK, SLIDE = 0, 1, 2
#: Models whose stop at their default options is the rigid formulations' documented behaviour
#: (robot_models.KNOWN_STOPS), with the option that documents it. The CMU humanoid's welded root
#: overlaps both femurs and the lower back by 4-8.7 cm; at the default recovery speed (0.1 m/s) its
#: step 10 has no Coulomb solution at all (max over r of min over contacts of u_N is -0.0654: FCLIB
#: error at least 1.2e-3 for any r), as anitescu's, ccp's and lcp's programs there are infeasible.
DOCUMENTED_OPTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "dm/humanoid_CMU_V2020": ({"max_recovery_speed": 0.001}, "step 10 at the default recovery speed has no "
                              "solution (welded-root overlap; robot_models.KNOWN_STOPS)"),
}


class Recorder:
    """A ``simulate`` observer: after every solved step, the Alart-Curnier mode of each contact
    with friction (TAKE_OFF, STICK, SLIDE), the solver's iterations and nsn's fallback sweeps."""

    stopped = ""

    def __init__(self) -> None:
        self.modes: list[np.ndarray] = []
        self.iterations: list[int] = []
        self.sweeps: list[int] = []

    def advance(self, stepper: Any, state: Any, u: Any, index: int) -> None:
        program, solution = stepper.last_program, stepper.last_solution
        self.iterations.append(int(solution.iterations))
        raw = solution.raw if isinstance(solution.raw, dict) else {}
        self.sweeps.append(int(raw.get("fallback_sweeps", 0)))
        self.modes.append(modes(program, np.asarray(solution.x, dtype=np.float64)))


def modes(program: CoulombProgram, r: np.ndarray) -> np.ndarray:
    """The mode of each contact with ``mu > 0`` at the answer ``r`` (the cases of
    :func:`~contactopt.solvers.coulomb.alart_curnier.alart_curnier`'s generalized Jacobian)."""
    _, blocks = alart_curnier(r, program.velocity(r), program.mu, local_scaling(program), program.dim)
    tangent = blocks[:, 1:, 1:]
    stick = np.all(np.isclose(tangent, np.eye(program.dim - 1), rtol=0, atol=0), axis=(1, 2))
    code = np.where(blocks[:, 0, 0] == 0.0, TAKE_OFF, np.where(stick, STICK, SLIDE))
    return code[program.mu > 0.0]


def transition_steps(recorded: list[np.ndarray]) -> list[int]:
    """Steps (indices into ``recorded``) where a contact switches between stick and slip."""
    found = []
    for k in range(1, len(recorded)):
        before, now = recorded[k - 1], recorded[k]
        if before.shape == now.shape:
            switched = ((before == STICK) & (now == SLIDE)) | ((before == SLIDE) & (now == STICK))
            if np.any(switched):
                found.append(k)
        elif (np.count_nonzero(before == STICK) != np.count_nonzero(now == STICK)
              or np.count_nonzero(before == SLIDE) != np.count_nonzero(now == SLIDE)):
            found.append(k)
    return found


def _median(values: list[int]) -> float:
    return float(np.median(values)) if values else math.nan


def run(scene: co.Scene, solver: str, duration: float, limit: float, controller: Any = None,
        options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run's row (never raises: a refusal or a time limit is the row's status)."""
    recorder = Recorder()
    steps = round(duration / scene.dt)
    start = time.perf_counter()
    traj: co.Trajectory | None = None
    try:
        with warnings.catch_warnings(), cell_deadline(limit) as deadline:
            warnings.simplefilter("ignore")
            traj = co.simulate(scene, formulation="coulomb", solver=solver, duration=steps * scene.dt,
                               controller=controller, options=options, _observer=recorder)
        status = ("time limit" if deadline.reached else "completed" if traj.completed
                  else f"failed: {one_line(traj.message)}")
    except CellTimeLimitReached:
        status = f"time limit {limit:g} s"
    except Exception as exc:  # refused by the formulation or the solver: a row, not a dead sweep
        traj = getattr(exc, "trajectory", None)
        status = f"refused: {one_line(exc)}"
    wall = time.perf_counter() - start
    done = len(traj.steps) if traj is not None else 0
    solved = sum(1 for step in traj.steps if step.status.usable) if traj is not None else 0
    transitions = transition_steps(recorder.modes)
    its = recorder.iterations
    fclib = [step.residuals.fclib for step in traj.steps if step.status.usable] if traj is not None else []
    return {"solver": solver, "status": status, "steps": steps, "completed_steps": solved,
            "failures": done - solved, "transitions": len(transitions),
            "median_iterations_at_transitions": _median([its[k] for k in transitions]),
            "max_iterations_at_transitions": max((its[k] for k in transitions), default=math.nan),
            "median_fallback_sweeps_at_transitions": _median([recorder.sweeps[k] for k in transitions]),
            "median_iterations": _median(its), "max_iterations": max(its, default=math.nan),
            "fallback_sweeps": int(sum(recorder.sweeps)), "max_fclib": max(fclib, default=math.nan),
            "wall_s": wall}


def box_slide(mu: float, v0: float, duration: float) -> tuple[co.Scene, float]:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    velocity = scene.v0.copy()
    velocity[0] = v0
    return dataclasses.replace(scene, system=scene.system.with_parameters({"mu": mu}), v0=velocity), duration


def grid_rows(quick: bool, limit: float) -> list[dict[str, Any]]:
    cells = QUICK_GRID if quick else [(mu, v0) for mu in MUS for v0 in V0S]
    cases = [(mu, v0, round(v0 / (mu * G) + AFTER_STOP, 3)) for mu, v0 in cells] + [ISSUE_CASE]
    rows = []
    for mu, v0, duration in cases:
        scene, duration = box_slide(mu, v0, duration)
        for solver in SOLVERS:
            row = run(scene, solver, duration, limit)
            rows.append({"group": "box_slide", "case": f"mu={mu:g} v0={v0:g}", "mu": mu, "v0": v0, **row})
            print(f"box_slide mu={mu:g} v0={v0:g} {solver}: {row['status']} {row['completed_steps']}/"
                  f"{row['steps']}, at transitions {row['median_iterations_at_transitions']}", flush=True)
    return rows


def scene_rows(quick: bool, limit: float) -> list[dict[str, Any]]:
    rows = []
    for name in SCENES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scene = co.load_scene(ROOT / "problems" / f"{name}.toml")
        duration = min(scene.duration, 20 * scene.dt) if quick else scene.duration
        for solver in SOLVERS:
            row = run(scene, solver, duration, limit)
            rows.append({"group": "scene", "case": name, **row})
            print(f"{name} {solver}: {row['status']} {row['completed_steps']}/{row['steps']}", flush=True)
    return rows


def model_rows(quick: bool, steps: int, limit: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    skipped: dict[str, str] = {}
    models = dm_control_models() + gymnasium_models()
    if not dm_control_models():
        skipped["dm_control"] = "not installed (pip install 'contactopt[robots]')"
    if not gymnasium_models():
        skipped["gymnasium"] = "not installed (pip install gymnasium)"
    if quick:
        models = [model for model in models if model.name in QUICK_MODELS]
    rows = []
    for model in models:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scene = co.load_scene(model.path)  # contactopt reads the XML itself (no suite.load)
        except Exception as exc:
            rows.append({"group": "model", "case": model.name, "solver": "(load)",
                         "status": f"refused: {one_line(exc)}"})
            continue
        ctrl = held_ctrl(scene.system.model)  # type: ignore[attr-defined]
        controller = {"type": "constant", "u": ctrl.tolist()} if ctrl is not None else None
        for solver in SOLVERS:
            row = run(scene, solver, steps * scene.dt, limit, controller)
            rows.append({"group": "model", "case": model.name, **row})
            print(f"{model.name} {solver}: {row['status']} {row['completed_steps']}/{row['steps']}, "
                  f"at transitions {row['median_iterations_at_transitions']}", flush=True)
            if model.name in DOCUMENTED_OPTIONS and not row["status"].startswith("completed"):
                # a documented stop (robot_models.KNOWN_STOPS): the run again with the option it documents
                options, why = DOCUMENTED_OPTIONS[model.name]
                again = run(scene, solver, steps * scene.dt, limit, controller, options)
                label = f"{model.name} -o " + ",".join(f"{k}={v}" for k, v in options.items())
                rows.append({"group": "model (documented option)", "case": label, **again, "reason": why})
                print(f"{label} {solver}: {again['status']} {again['completed_steps']}/{again['steps']}", flush=True)
    return rows, skipped


def totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group and solver: runs, runs completed, refused, and the median over runs of the
    transition medians."""
    out = []
    for group in ("box_slide", "scene", "model", "model (documented option)"):
        for solver in SOLVERS:
            mine = [row for row in rows if row["group"] == group and row.get("solver") == solver]
            ran = [row for row in mine if not str(row["status"]).startswith("refused")]
            medians = [row["median_iterations_at_transitions"] for row in ran
                       if math.isfinite(row["median_iterations_at_transitions"])]
            out.append({"group": group, "solver": solver, "runs": len(ran),
                        "completed": sum(row["status"] == "completed" for row in ran),
                        "refused": len(mine) - len(ran),
                        "median_at_transitions": float(np.median(medians)) if medians else math.nan,
                        "worst_at_transitions": max((row["max_iterations_at_transitions"] for row in ran
                                                     if math.isfinite(row["max_iterations_at_transitions"])),
                                                    default=math.nan)})
    return out


def figure(rows: list[dict[str, Any]], path: Path) -> None:
    grid = [row for row in rows if row["group"] == "box_slide" and row["mu"] in MUS and row["v0"] in V0S]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), constrained_layout=True)
    for ax, solver in zip(axes[:2], SOLVERS, strict=True):
        image = np.full((len(MUS), len(V0S)), np.nan)
        for row in grid:
            if row["solver"] == solver:
                image[MUS.index(row["mu"]), V0S.index(row["v0"])] = row["median_iterations_at_transitions"]
        shown = ax.imshow(image, origin="lower", aspect="auto", cmap="viridis",
                          extent=(V0S[0] - 0.15, V0S[-1] + 0.15, MUS[0] - 0.05, MUS[-1] + 0.05))
        for row in grid:
            if row["solver"] == solver and row["status"] != "completed":
                ax.plot(row["v0"], row["mu"], "rx", markersize=10)
        fig.colorbar(shown, ax=ax, label="Newton steps" if solver == "nsn" else "sweeps")
        ax.set_title(f"box slide, {solver}: median at transition steps (x: failed)")
        ax.set_xlabel("v0 [m/s]")
        ax.set_ylabel("mu")
    others = [row for row in rows if row["group"] != "box_slide" and "median_iterations" in row]
    names = sorted({row["case"] for row in others})
    for offset, solver in ((-0.2, "nsn"), (0.2, "nsgs")):
        values = [next((row["median_iterations_at_transitions"] for row in others
                        if row["case"] == name and row["solver"] == solver), np.nan) for name in names]
        axes[2].barh(np.arange(len(names)) + offset, values, height=0.4, label=solver)
    axes[2].set_yticks(np.arange(len(names)), names, fontsize=6)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("median at transition steps (nsn: Newton steps)")
    axes[2].legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two grid cells, 20 steps of each scene, two models")
    parser.add_argument("--steps", type=int, default=None, help="steps of each robot model (default 250, quick 20)")
    parser.add_argument("--time-limit", type=float, default=120.0, help="wall seconds per run (default 120)")
    parser.add_argument("--out", type=Path, default=OUT / "coulomb_transitions", help="output folder")
    args = parser.parse_args(argv)
    steps = args.steps if args.steps is not None else 20 if args.quick else 250
    if steps < 1 or not args.time_limit > 0:
        parser.error("--steps must be >= 1 and --time-limit positive")
    rows = grid_rows(args.quick, args.time_limit) + scene_rows(args.quick, args.time_limit)
    robots, skipped = model_rows(args.quick, steps, args.time_limit)
    rows += robots
    summary = totals(rows)
    print_table([{"case": row["case"], "solver": row.get("solver"), "status": one_line(row["status"], 48),
                  "done": f"{row.get('completed_steps')}/{row.get('steps')}", "transitions": row.get("transitions"),
                  "at_transitions": row.get("median_iterations_at_transitions"),
                  "sweeps_there": row.get("median_fallback_sweeps_at_transitions")}
                 for row in rows if row["group"] != "box_slide" or row["status"] != "completed"])
    print_table(summary)
    keys = sorted({key for row in rows for key in row}, key=lambda key: next(
        (i for row in rows for i, k in enumerate(row) if k == key), 0))
    write_results(args.out, [{key: row.get(key) for key in keys} for row in rows],
                  {"quick": args.quick, "robot_steps": steps, "time_limit_s": args.time_limit,
                   "tolerance": "FCLIB error 1e-8 (the solvers' default)", "skipped": skipped, "totals": summary})
    figure(rows, args.out / "transitions.png")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
