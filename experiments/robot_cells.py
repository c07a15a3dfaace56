"""One robot model under every formulation of ``experiments/robots.py``, and MuJoCo's ``mj_step``.

Per method (a formulation, its options and a solver) one row: whether it completed, stopped or
was refused (the reason in one line), time per step against ``mj_step`` timed in the same
process on the same state and ctrl, the solver's own time (setup + solve from the step
records), largest speed and penetration, the distance to MuJoCo's trajectory after the
last common step, and the contact candidates against MuJoCo's own contacts (medians over steps);
for ``params=model`` also ``one_step_q``, every step against one converged ``mj_step`` from its
start (:func:`one_step_distance`).
Each run has a wall-time limit (:func:`contactopt.analysis.cell_limits.cell_deadline`,
the machinery of ``compare(..., cell_time_limit=...)``): one slow formulation cannot stall the
set, and the row keeps the steps it finished.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import contactopt as co
from contactopt.analysis.cell_limits import CellTimeLimitReached, cell_deadline


@dataclass(frozen=True)
class Method:
    """A formulation with its options and solver; ``label`` names the row."""

    label: str
    formulation: str
    solver: str | None
    options: dict[str, Any] = field(default_factory=dict)


METHODS = [
    Method("regularized -o params=model", "regularized", "clarabel", {"params": "model"}),
    Method("regularized -o params=model -o form=primal/newton", "regularized", "newton",
           {"params": "model", "form": "primal"}),
    Method("regularized", "regularized", "clarabel"),
    Method("regularized -o form=primal/newton", "regularized", "newton", {"form": "primal"}),
    Method("sap/newton", "sap", "newton"),
    Method("sap -o rows=model/newton", "sap", "newton", {"rows": "model"}),
    Method("ccp/clarabel", "ccp", "clarabel"),
    Method("anitescu/osqp", "anitescu", "osqp"),
    Method("lcp/lemke", "lcp", "lemke"),
]
MUJOCO = Method("mujoco", "mujoco", None, {"residuals": False})
#: ``mj_step`` is timed over at least this many steps (a few microseconds each).
MJ_STEP_TIMING_STEPS = 500
#: A run that moves this much faster than MuJoCo launches or spins the robot.
SPIN_FACTOR, SPIN_MARGIN = 2.0, 0.1


def one_line(text: object, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def held_ctrl(model: Any) -> np.ndarray | None:
    """Keyframe 0's ctrl when the model has a keyframe and actuators (held over the run)."""
    return np.array(model.key_ctrl[0]) if model.nkey and model.nu else None


def mj_step_time(scene: co.Scene, controls: np.ndarray) -> float:
    """Seconds per ``mj_step`` from the scene's state on a fresh ``MjData`` of the same model,
    replaying ``controls`` (one ctrl row per step; no rows for a model without actuators)."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(scene.system.path))  # type: ignore[attr-defined]
    model.opt.timestep = scene.dt  # a copy: the scene's own model is left as it is
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = scene.q0, scene.v0
    data.act[:] = scene.system.initial_activation()  # the keyframe's act (mj_resetDataKeyframe)
    start = time.perf_counter()
    for u in controls:
        data.ctrl[:] = u
        mujoco.mj_step(model, data)
    return (time.perf_counter() - start) / max(1, len(controls))


#: MuJoCo's solver run to convergence for the one-step check (the issue's "mj_step (converged)").
CONVERGED = {"tolerance": 1e-15, "iterations": 1000, "ls_iterations": 100}


def one_step_distance(scene: co.Scene, traj: co.Trajectory | None, held: np.ndarray) -> float:
    """``max_k |q_{k+1} - mj_step(q_k, v_k, act_k)|``: each step of ``traj`` against one ``mj_step``
    from the same state, MuJoCo's solver converged (:data:`CONVERGED`), the model's options
    otherwise (its integrator, cone, noslip). Chaos cannot grow here: every step starts afresh."""
    import mujoco

    if traj is None or not traj.steps:
        return float("nan")
    model = mujoco.MjModel.from_xml_path(str(scene.system.path))  # type: ignore[attr-defined]
    model.opt.timestep = scene.dt
    for name, value in CONVERGED.items():
        setattr(model.opt, name, value)
    data = mujoco.MjData(model)
    worst = 0.0
    for k in range(min(len(traj.steps), len(traj.q) - 1)):
        data.qpos[:], data.qvel[:], data.time = traj.q[k], traj.v[k], traj.t[k]
        data.act[:] = traj.act[k]
        data.ctrl[:] = held
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.abs(data.qpos - traj.q[k + 1]).max()))
    return worst


def simulate_within(scene: co.Scene, method: Method, steps: int, controller: Any,
                    limit: float) -> tuple[co.Trajectory | None, str, float]:
    """``(trajectory, status, wall seconds)``: status ``completed``, ``stopped: why``,
    ``time limit S s`` or ``refused: why`` (an error before or during the run)."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), cell_deadline(limit) as deadline:
            warnings.simplefilter("ignore")
            traj = co.simulate(scene, formulation=method.formulation, solver=method.solver,
                               duration=steps * scene.dt, options=dict(method.options), controller=controller)
    except CellTimeLimitReached:
        return None, f"time limit {limit:g} s", time.perf_counter() - start
    except Exception as exc:  # a refusal or a failure is a row, never a dead sweep
        return getattr(exc, "trajectory", None), f"refused: {one_line(exc)}", time.perf_counter() - start
    wall = time.perf_counter() - start
    if deadline.reached:
        return traj, f"time limit {limit:g} s", wall
    return traj, "completed" if traj.completed else f"stopped: {one_line(traj.message)}", wall


def marginal_seconds(scene: co.Scene, method: Method, controller: Any, limit: float, wall: float,
                     done: int) -> float:
    """Seconds per step without the per-run setup (scene checks, step 0's program checked
    before the loop, first factorizations): ``(wall(N) - wall(1)) / (N - 1)`` from a second,
    one-step run; ``wall / N`` when that is not positive or ``N = 1``."""
    if done == 0:
        return float("nan")
    if done > 1:
        _, _, one = simulate_within(scene, method, 1, controller, limit)
        if wall > one:
            return (wall - one) / (done - 1)
    return wall / done


def _median_count(traj: co.Trajectory, name: str) -> float:
    """The median over steps of a recorded count (NaN where a step did not record it)."""
    values = [getattr(record, name) for record in traj.steps]
    return float(np.median(values)) if values and min(values) >= 0 else float("nan")


def trajectory_numbers(traj: co.Trajectory | None, reference: co.Trajectory | None) -> dict[str, float]:
    """Largest speed and penetration, solver-only time per step, distance to ``reference``, and
    the median over steps of the contact candidates and of MuJoCo's own contacts (``ncon``)."""
    if traj is None or not traj.steps:
        return {"max_speed": np.nan, "penetration": np.nan, "solver_ms": np.nan, "dist_q": np.nan,
                "candidates": np.nan, "mujoco_contacts": np.nan}
    count = len(traj.steps)
    phis = [record.phi.min() for record in traj.steps if record.phi.size]
    solver = sum(record.setup_time + record.solve_time for record in traj.steps)
    numbers = {"max_speed": float(np.abs(traj.v[: count + 1]).max()),
               "penetration": max(0.0, -min(phis)) if phis else 0.0,
               "solver_ms": 1e3 * solver / count, "dist_q": np.nan,
               **{name: _median_count(traj, name) for name in ("candidates", "mujoco_contacts")}}
    if reference is not None:
        last = min(len(traj.q), len(reference.q)) - 1  # a failed step is recorded without its state
        numbers["dist_q"] = float(np.abs(traj.q[last] - reference.q[last]).max())
    return numbers


def run_model(name: str, path: Any, steps: int, limit: float, methods: list[Method]) -> list[dict[str, Any]]:
    """The rows of one model (a single ``refused`` row when the model does not load or its
    bookkeeping fails: one model cannot end the sweep)."""
    try:
        return _model_rows(name, path, steps, limit, methods)
    except Exception as exc:
        return [{"model": name, "method": "(all)", "status": f"refused: {type(exc).__name__}: {one_line(exc)}"}]


def _model_rows(name: str, path: Any, steps: int, limit: float, methods: list[Method]) -> list[dict[str, Any]]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scene = co.load_scene(path)
    except Exception as exc:
        return [{"model": name, "method": "(load)", "status": f"refused: {one_line(exc)}"}]
    model = scene.system.model  # type: ignore[attr-defined]
    ctrl = held_ctrl(model)
    controller = {"type": "constant", "u": ctrl.tolist()} if ctrl is not None else None
    held = np.zeros(model.nu) if ctrl is None else ctrl
    mj_seconds = mj_step_time(scene, np.tile(held, (max(steps, MJ_STEP_TIMING_STEPS), 1)))
    # the model as written is compiled once, outside every timing (as mj_step_time compiles its own):
    # otherwise the first method that reads MuJoCo's own rows pays ~0.1 s of loading in its steps
    scene.system.native_model_data()  # type: ignore[attr-defined]
    common = {"model": name, "nv": int(model.nv), "nu": int(model.nu), "dt": scene.dt,
              "keyframe": bool(model.nkey), "mj_step_ms": 1e3 * mj_seconds}
    reference, mujoco_status, mujoco_wall = simulate_within(scene, MUJOCO, steps, controller, limit)
    rows = []
    mujoco_speed = trajectory_numbers(reference, None)["max_speed"]
    for method in [MUJOCO, *methods]:
        if method is MUJOCO:
            traj, status, wall = reference, mujoco_status, mujoco_wall
        else:
            traj, status, wall = simulate_within(scene, method, steps, controller, limit)
        done = len(traj.steps) if traj is not None else 0
        numbers = trajectory_numbers(traj, reference if method is not MUJOCO else None)
        numbers["one_step_q"] = (one_step_distance(scene, traj, held) if method.options.get("params") == "model"
                                 else np.nan)  # MuJoCo's own step: each step against one converged mj_step
        seconds = marginal_seconds(scene, method, controller, limit, wall, done)
        rows.append({**common, "method": method.label, "status": status, "steps": done,
                     "ms_per_step": 1e3 * seconds, "ratio_to_mj_step": seconds / mj_seconds,
                     **numbers, "ratio_to_solver": 1e3 * seconds / numbers["solver_ms"]
                     if numbers["solver_ms"] > 0 else np.nan,
                     "spins": bool(numbers["max_speed"] > SPIN_FACTOR * mujoco_speed + SPIN_MARGIN)})
    return rows


def warm_up(path: Any, methods: list[Method]) -> None:
    """A few steps of every method first, so that no timed run pays for imports or JIT compilation."""
    run_model("warm-up", path, 3, 60.0, methods)
