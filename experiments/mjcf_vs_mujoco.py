"""MuJoCo's control-suite models under every formulation against MuJoCo's own ``mj_step``
(issue 16): how far each formulation's trajectory is from MuJoCo's, when it first separates,
and a chaos-free one-step check.

Per model (dm-control's suite files, loaded from the installed ``dm_control`` package; the
optional extra: without it the script says so and stops) and per method:

* ``max |q - q_mj|`` and ``max |v - v_mj|`` over ``--duration`` seconds from the model's
  initial state (``qpos0``, zero velocity), both runs at the model's own time step;
* the first step where ``|q - q_mj|_inf`` exceeds 1e-6 (``none`` if never);
* the largest joint/tendon limit excursion beyond its bound (MuJoCo's own next to it);
* **one step**: from ``--states`` states along MuJoCo's own trajectory (the same states for
  every method), one step each, ``max |v'_method - v'_mj| / max(|v'_mj|, 1e-3)``: free of
  chaos, this is the difference between the formulations' step programs and MuJoCo's.

``regularized(params=model)`` solves MuJoCo's own constraint problem (its rows,
regularization, reference accelerations and cone, its Euler/implicitfast velocity step); the
others use contactopt's rows (limits, tendons, equalities, frictionloss, contacts) with their
own contact models. MuJoCo's reference runs with its model's solver settings. Writes
``experiments/out/mjcf_vs_mujoco/{summary.json, summary.csv}``.

    PYTHONPATH=. python experiments/mjcf_vs_mujoco.py [--models hopper,walker,...]
        [--methods lcp,regularized_model,...] [--duration 1.0] [--states 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from common import OUT, print_table, write_results

import contactopt as co
from contactopt.formulations import get
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.systems.mjcf.system import MjcfSystem

MODELS = ["hopper", "walker", "cheetah", "humanoid", "ball_in_cup", "quadruped", "finger", "manipulator"]
METHODS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gauss": ("gauss", "clarabel", {}),
    "lcp": ("lcp", "lemke", {}),
    "anitescu": ("anitescu", "clarabel", {}),
    "ccp": ("ccp", "clarabel", {}),
    "regularized": ("regularized", "clarabel", {}),
    "regularized_model": ("regularized", "clarabel", {"params": "model"}),
    "sap": ("sap", "newton", {}),
}


def suite_file(name: str) -> Path | None:
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "suite" / f"{name}.xml"
    return path if path.exists() else None


def mujoco_trajectory(scene: co.Scene, duration: float) -> co.Trajectory:
    return co.simulate(scene, formulation="mujoco", duration=duration)


def limit_excursion(system: Any, q: np.ndarray) -> float:
    data, model = system.data_at(q), system.model
    worst = 0.0
    for j in np.flatnonzero(model.jnt_limited):
        if int(model.jnt_type[j]) in (2, 3):  # slide, hinge
            value = float(data.qpos[model.jnt_qposadr[j]])
            worst = max(worst, model.jnt_range[j][0] - value, value - model.jnt_range[j][1])
    for t in np.flatnonzero(model.tendon_limited):
        length = float(data.ten_length[t])
        worst = max(worst, model.tendon_range[t][0] - length, length - model.tendon_range[t][1])
    return float(worst)


def one_step(scene: co.Scene, reference: co.Trajectory, method: tuple[str, str, dict[str, Any]],
             states: int) -> float:
    """Largest relative difference of v' to mj_step's from ``states`` states of MuJoCo's run."""
    import mujoco

    formulation_name, solver, options = method
    system = scene.system
    formulation = get(formulation_name)
    resolved = formulation.resolve_options(options)
    model = mujoco.MjModel.from_xml_path(str(system.path))
    data = mujoco.MjData(model)
    worst = 0.0
    for k in np.linspace(0, len(reference.t) - 2, states).astype(int):
        q, v = reference.q[k], reference.v[k]
        problem = build_step_problem(system, q, v, scene.dt, native=formulation.native_request(resolved))
        program = formulation.build(problem, resolved)
        solution = co.solve(program, solver)
        if not solution.status.usable:
            return float("nan")
        ours = formulation.recover(problem, program, solution).v_next
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_step(model, data)
        # relative to |v'_mj|, absolute below 1e-3 (a model at rest has v'_mj ~ 0)
        worst = max(worst, float(np.linalg.norm(ours - data.qvel) / max(np.linalg.norm(data.qvel), 1e-3)))
    return worst


def run_model(name: str, path: Path, methods: list[str], duration: float, states: int) -> list[dict[str, Any]]:
    scene = co.load_scene(path)
    system = scene.system
    if int(np.max(system.model.geom_condim, initial=3)) > 3:  # type: ignore[attr-defined]
        # the formulations refuse condim 4/6 contacts by default; here they keep their sliding
        # friction only (MuJoCo and params=model keep torsional/rolling friction)
        sliding = MjcfSystem(system.path, system.detection_margin, "sliding")  # type: ignore[attr-defined]
        scene = dataclasses.replace(scene, system=sliding)
    reference = mujoco_trajectory(scene, duration)
    rows = [{"model": name, "method": "mujoco (mj_step)", "steps": len(reference.steps), "completed": True,
             "max_dq": 0.0, "max_dv": 0.0, "first_separation_step": "none",
             "limit_excursion": max(limit_excursion(scene.system, q) for q in reference.q),
             "one_step_rel_dv": 0.0, "wall_s": float("nan"), "message": ""}]
    for label in methods:
        formulation, solver, options = METHODS[label]
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                traj = co.simulate(scene, formulation=formulation, solver=solver, duration=duration,
                                   options=options)
            wall = time.perf_counter() - start
            n = min(len(traj.t), len(reference.t))
            dq = np.abs(traj.q[:n] - reference.q[:n]).max(axis=1)
            dv = np.abs(traj.v[:n] - reference.v[:n]).max(axis=1)
            apart = np.flatnonzero(dq > 1e-6)
            step_error = one_step(scene, reference, (formulation, solver, options), states)
            rows.append({"model": name, "method": label, "steps": len(traj.steps), "completed": traj.completed,
                         "max_dq": float(dq.max()), "max_dv": float(dv.max()),
                         "first_separation_step": int(apart[0]) if apart.size else "none",
                         "limit_excursion": max(limit_excursion(scene.system, q) for q in traj.q),
                         "one_step_rel_dv": step_error, "wall_s": wall, "message": (traj.message or "")[:120]})
        except co.ContactoptError as exc:
            rows.append({"model": name, "method": label, "steps": 0, "completed": False, "max_dq": float("nan"),
                         "max_dv": float("nan"), "first_separation_step": "n/a", "limit_excursion": float("nan"),
                         "one_step_rel_dv": float("nan"), "wall_s": time.perf_counter() - start,
                         "message": str(exc)[:120]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--duration", type=float, default=1.0)
    parser.add_argument("--states", type=int, default=10, help="states of the one-step check per model")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    rows: list[dict[str, Any]] = []
    for name in [m for m in args.models.split(",") if m]:
        path = suite_file(name)
        if path is None:
            print(f"{name}: dm-control (the optional extra with the control-suite models) is not installed "
                  f"or has no such model; skipped")
            continue
        rows += run_model(name, path, methods, args.duration, args.states)
        print_table([r for r in rows if r["model"] == name])
    folder = OUT / "mjcf_vs_mujoco"
    write_results(folder, rows, {"args": vars(args), "note": "max_dq, max_dv: inf-norm over the run against "
                                 "mj_step's trajectory; one_step_rel_dv: |v'-v'_mj|/|v'_mj| from MuJoCo's states"})
    print(f"wrote {folder}/summary.json, summary.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
