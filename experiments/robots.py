"""dm-control's suite models (issue 13, item 2) under every time-stepping formulation and MuJoCo.

Each model (``problems/dm_NAME.toml``: the XML of the installed dm-control, its sinusoidal ctrl)
runs ``--duration`` seconds (default 2) at the model's own timestep under gauss, lcp (lemke),
anitescu, ccp, regularized and sap (newton), and under MuJoCo's ``mj_step`` (the ``mujoco`` row,
the same ctrl set before each step). Per model and formulation:

* whether it ran the whole duration (else the step and the reason it stopped);
* time per step: the wall time of ``simulate`` over its steps, and the same for ``mj_step``
  alone on a fresh ``MjData`` with the same ctrl sequence (same process, same round), as a ratio;
* the distance from MuJoCo's own trajectory: ``max_t |q(t) - q_mujoco(t)|_inf`` over the first
  0.1 s and over the whole run (free-joint quaternions included as numbers).

Every formulation gets MuJoCo's joint and tendon limits, equality and frictionloss rows and its
implicit joint damping (issue 16). ``regularized`` runs with ``-o params=model``: MuJoCo's own
constraint problem and integrator step, so its row isolates the solver (it reproduces
``mj_step`` up to MuJoCo's own solver tolerance); where ``params=model`` refuses the model's
integrator (cartpole: RK4), it runs with the model's cone, solref, solimp and impratio instead,
and the row says so. The remaining rows differ from MuJoCo by their contact model (hard or
relaxed contact against MuJoCo's soft one), which is what the distances measure.

    PYTHONPATH=. python experiments/robots.py [--duration 2] [--models hopper,walker]

Writes ``experiments/out/robots/{summary.json, summary.csv}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import numpy as np
from common import OUT, load, print_table, write_results

import contactopt as co
from contactopt.control import make_controller
from contactopt.formulations.regularized import MIN_IMPEDANCE
from contactopt.mujoco import suite

MODELS = ["cartpole", "hopper", "walker", "cheetah", "humanoid", "finger", "ball_in_cup"]
METHODS = [("gauss", "clarabel"), ("lcp", "lemke"), ("anitescu", "clarabel"), ("ccp", "clarabel"),
           ("regularized", "clarabel"), ("sap", "newton")]


def mujoco_parameters(model: Any) -> tuple[dict[str, Any], str]:
    """``regularized`` options equal to the model's own, and a note when geoms disagree."""
    solref, solimp = model.geom_solref, model.geom_solimp
    note = "" if (np.ptp(solref, axis=0).max() == 0 and np.ptp(solimp, axis=0).max() == 0) else \
        "geoms' solref/solimp differ: the first geom's used"
    first = solimp[0].tolist()
    if first[0] < MIN_IMPEDANCE:  # MuJoCo clamps d to [1e-4, 0.9999]; regularized takes d0 > 0 only
        first[0] = MIN_IMPEDANCE
        note = (note + "; " if note else "") + "solimp d0 = 0 passed as MuJoCo's minimum 1e-4"
    return {"cone": "elliptic" if int(model.opt.cone) == 1 else "pyramidal", "solref": solref[0].tolist(),
            "solimp": first, "impratio": float(model.opt.impratio)}, note


def mj_step_time(scene: co.Scene, controls: np.ndarray) -> float:
    """Seconds per ``mj_step`` replaying ``controls`` on a fresh copy of the model."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(scene.system.path))  # type: ignore[attr-defined]
    model.opt.timestep = scene.dt
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = scene.q0, scene.v0
    start = time.perf_counter()
    for u in controls:
        data.ctrl[:] = u
        mujoco.mj_step(model, data)
    return (time.perf_counter() - start) / max(1, len(controls))


def distance(traj: co.Trajectory, ref: co.Trajectory | np.ndarray, until: float) -> float:
    ref_q = ref.q if isinstance(ref, co.Trajectory) else ref
    n = min(traj.q.shape[0], ref_q.shape[0])
    keep = traj.t[:n] <= until + 1e-12
    return float(np.abs(traj.q[:n][keep] - ref_q[:n][keep]).max())


def run_model(name: str, duration: float) -> list[dict[str, Any]]:
    scene = load(f"dm_{name}")
    model = scene.system.model  # type: ignore[attr-defined]
    if int(model.opt.integrator) in (0, 3):  # Euler, implicitfast: MuJoCo's own problem and step
        params, note = {"params": "model"}, "params=model"
    else:
        params, note = mujoco_parameters(model)
        note = (note + "; " if note else "") + "model's parameters (params=model refuses RK4/implicit)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        ref = co.simulate(scene, formulation="mujoco", duration=duration, options={"residuals": False})
        ref_wall = (time.perf_counter() - start) / max(1, len(ref.steps))
    controller = make_controller(scene.control, scene.system)
    assert controller is not None
    mj = mj_step_time(scene, ref.controls())
    common = {"model": name, "nv": scene.system.nv, "nu": scene.system.control_size, "dt": scene.dt}
    rows = [{**common, "method": "mujoco", "ran": ref.completed, "steps": len(ref.steps), "ms_per_step": 1e3 * ref_wall,
             "mj_step_ms": 1e3 * mj, "ratio_to_mj_step": ref_wall / mj, "dist_0.1s": 0.0, "dist_all": 0.0,
             "stopped": ref.message[:100], "note": ""}]
    for formulation, solver in METHODS:
        options = params if formulation == "regularized" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            try:
                traj = co.simulate(scene, formulation=formulation, solver=solver, duration=duration, options=options)
                message = traj.message
            except co.ContactoptError as exc:  # a step raised: keep what was computed
                traj = getattr(exc, "trajectory", None)
                message = str(exc)
            wall = time.perf_counter() - start
        steps = len(traj.steps) if traj is not None else 0
        row = {**common, "method": f"{formulation}/{solver}", "ran": traj is not None and traj.completed,
               "steps": steps, "ms_per_step": 1e3 * wall / max(1, steps), "mj_step_ms": 1e3 * mj,
               "ratio_to_mj_step": wall / max(1, steps) / mj,
               "dist_0.1s": distance(traj, ref, 0.1) if traj is not None else float("nan"),
               "dist_all": distance(traj, ref, duration) if traj is not None else float("nan"),
               "stopped": message[:100], "note": note if formulation == "regularized" else ""}
        rows.append(row)
        print(f"  {name} {row['method']}: ran={row['ran']} steps={steps} {row['ms_per_step']:.2f} ms/step "
              f"dist={row['dist_all']:.3g} {message[:80]}", file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    if not suite.available():
        print(f"dm-control is not installed: {suite.INSTALL_HINT}", file=sys.stderr)
        return 1
    rows: list[dict[str, Any]] = []
    for name in args.models.split(","):
        rows += run_model(name, args.duration)
    print_table([{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()
                  if k not in ("nv", "dt")} for row in rows])
    write_results(OUT / "robots", rows, {"duration": args.duration,
                                         "command": "PYTHONPATH=. python " + " ".join(sys.argv)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
