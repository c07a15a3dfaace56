"""example-robot-data's URDFs, the third collection of ``experiments/robots.py``
(``--collection example-robot-data``): every URDF that Pinocchio loads, 100 steps under
sap/newton and ccp/clarabel on the ``pinocchio`` backend, from its SRDF's standing state
(:func:`contactopt.systems.urdf_file.srdf_state`) or, without one, its default configuration.

Per model, before step 0 (a refusal is one line there, never a crash mid-run): Pinocchio loads
the URDF and its collision geometry (meshes through ``package_dirs``, convex hulls by coal); the
base floats when the SRDF's state places a ``root_joint`` (legged robots, humanoids), else it is
welded to the world; self-collisions on less the disabled pairs of ``collision_srdf``
(:func:`contactopt.systems.urdf_file.example_robot_data`: the SRDF's own, except romeo_small's,
whose SRDF has states only, from ``romeo.srdf``); the ground on, except
for a fixed base whose moving links start on or below ``z = 0`` (a hand, a drone's arm, a
humanoid without an SRDF: its base is welded at the origin; tiago's wheels, whose contacts
with the ground no dof can open: their normal rows are zero); a floating robot is raised until its
lowest collision point touches ``z = 0``; the self-collision
pairs already in contact there are left out (the convex hulls of neighbouring links overlap
where the meshes do not: solo12's base and upper legs by 4 mm standing), as MoveIt's setup
assistant disables the pairs in collision at the default configuration.

Per model and formulation: completed, stopped (the step and why) or refused (why), time per
step, largest speed and penetration; and where MuJoCo also compiles the URDF, the distance
``max |q - q_mujoco|`` over the run between the two backends with ground contacts only
(``self_collisions = false`` on both: MuJoCo does not read the SRDF), run under the same
formulation (``dist_mujoco``), and the time it first exceeds 1e-6 (``dist_mujoco_t``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import contactopt as co
from contactopt.analysis.cell_limits import CellTimeLimitReached, cell_deadline

METHODS = (("sap/newton", "sap", "newton"), ("ccp/clarabel", "ccp", "clarabel"))
DT = 0.002  # MuJoCo's default step, the URDF scenes' default
DISTANCE_TOLERANCE = 1e-6
GROUND_TOLERANCE = 1e-6  # m: a fixed base's moving geometry not this far above z = 0 starts without a ground


def one_line(text: object, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def build(files: Any, backend: str, self_collisions: bool) -> tuple[co.Scene, str]:
    """The scene of one robot on ``backend`` and where its state comes from (module docstring)."""
    from contactopt.systems.mjcf.urdf import UrdfSystem
    from contactopt.systems.urdf_file import srdf_state
    from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

    floating, state = False, "default"
    if files.srdf is not None:
        try:
            probe = PinocchioUrdfSystem(files.urdf, True, False, package_dirs=[files.package_dir],
                                        self_collisions=False)
            state, _ = srdf_state(files.srdf, probe.q_names, probe.default_state()[0])
            floating = _places_root(files.srdf, state)
        except Exception as exc:  # an SRDF without states: the default configuration
            if "group_state" not in str(exc):
                raise
    probe = PinocchioUrdfSystem(files.urdf, floating, False, package_dirs=[files.package_dir], self_collisions=False)
    q0 = probe.default_state()[0]
    if state != "default":
        q0 = np.array(srdf_state(files.srdf, probe.q_names, q0, state)[1])
    low = lowest(probe, q0)
    if floating:
        q0[2] -= low  # standing on the ground
    ground = floating or low > GROUND_TOLERANCE  # a fixed base's links on or below z = 0: no ground
    srdf = files.collision_srdf if (self_collisions and backend == "pinocchio") else None
    if backend == "pinocchio":
        system: Any = PinocchioUrdfSystem(files.urdf, floating, ground, package_dirs=[files.package_dir],
                                          self_collisions=self_collisions, srdf=srdf)
        if self_collisions:
            system.disable_pairs_in_contact(q0)
    else:
        system = UrdfSystem(files.urdf, floating, ground, package_dirs=[files.package_dir],
                            self_collisions=self_collisions)
    v0 = np.zeros(system.nv)
    return co.Scene(system=system, q0=q0, v0=v0, dt=DT, duration=100 * DT, name=files.urdf.stem), state


def lowest(system: Any, q: np.ndarray) -> float:
    """The lowest point of the moving links' collision geometry at ``q`` (0 without any)."""
    from contactopt.systems.urdf_pinocchio.collision import lowest_point

    return min((lowest_point(system._shapes[k], c, R) for k, (c, R) in system._placed(q)
                if system._shapes[k].joint != 0), default=0.0)


def _places_root(srdf: Path, state: str) -> bool:
    import xml.etree.ElementTree as ET

    for group in ET.parse(srdf).getroot().iter("group_state"):
        if group.get("name") == state:
            return any(len(joint.get("value", "").split()) == 7 for joint in group.iter("joint"))
    return False


def run(scene: co.Scene, formulation: str, solver: str, steps: int, limit: float) -> tuple[Any, str, float]:
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), cell_deadline(limit) as deadline:
            warnings.simplefilter("ignore")
            traj = co.simulate(scene, formulation=formulation, solver=solver, duration=steps * scene.dt)
    except CellTimeLimitReached:
        return None, f"time limit {limit:g} s", time.perf_counter() - start
    except Exception as exc:  # a failure is a row, never a dead sweep
        return getattr(exc, "trajectory", None), f"failed: {one_line(exc)}", time.perf_counter() - start
    wall = time.perf_counter() - start
    if deadline.reached:
        return traj, f"time limit {limit:g} s", wall
    status = "completed" if traj.completed else f"stopped at step {len(traj.steps)}: {one_line(traj.message)}"
    return traj, status, wall


def model_rows(name: str, files: Any, steps: int, limit: float, with_mujoco: bool) -> list[dict[str, Any]]:
    base = {"model": name}
    try:
        scene, state = build(files, "pinocchio", True)
    except Exception as exc:  # refused before step 0, with its reason
        return [{**base, "method": label, "status": f"refused: {one_line(exc)}", "steps": 0} for label, _, _ in METHODS]
    base.update(nq=scene.system.nq, nv=scene.system.nv, start=state, floating=scene.system.floating_base,
                ground=scene.system.ground,
                shapes=len(scene.system._shapes), pairs=len(scene.system._pairs))
    mujoco_scenes: tuple[Any, Any] | None = None
    mujoco_note = ""
    if with_mujoco:
        try:
            mujoco_scenes = (build(files, "pinocchio", False)[0], build(files, "mujoco", False)[0])
        except Exception as exc:  # MuJoCo does not compile it: no distance
            mujoco_note = f"mujoco: {one_line(exc, 120)}"
    rows = []
    for label, formulation, solver in METHODS:
        traj, status, wall = run(scene, formulation, solver, steps, limit)
        done = len(traj.steps) if traj is not None else 0
        row = {**base, "method": label, "status": status, "steps": done,
               "ms_per_step": 1e3 * wall / done if done else math.nan,
               "max_speed": float(np.abs(traj.v).max()) if traj is not None and traj.v.size else math.nan,
               "penetration": float(max((-min(s.phi, default=0.0) for s in traj.steps), default=0.0))
               if traj is not None and traj.steps else math.nan,
               "dist_mujoco": math.nan, "dist_mujoco_t": math.nan, "note": mujoco_note}
        if mujoco_scenes is not None:
            ours, theirs = (run(s, formulation, solver, steps, limit)[0] for s in mujoco_scenes)
            if ours is not None and theirs is not None:
                n = min(len(ours.q), len(theirs.q))
                gap = np.abs(ours.q[:n] - theirs.q[:n]).max(axis=1)
                row["dist_mujoco"] = float(gap.max())
                over = np.flatnonzero(gap > DISTANCE_TOLERANCE)
                row["dist_mujoco_t"] = float(ours.t[over[0]]) if over.size else math.nan
        rows.append(row)
    return rows


def collection_rows(steps: int, limit: float, with_mujoco: bool, only: list[str] | None = None,
                    log: Any = None) -> Iterator[list[dict[str, Any]]]:
    """Every example-robot-data URDF's rows, model by model (module docstring); ``only``: names
    (URDF stems)."""
    from contactopt.systems.urdf_file import example_robot_data, example_robot_data_share, example_robot_urdfs

    robots = example_robot_data_share() / "example-robot-data" / "robots"
    start = time.perf_counter()
    urdfs = [p for p in example_robot_urdfs() if only is None or p.stem in only]
    for number, urdf in enumerate(urdfs, 1):
        name = urdf.relative_to(robots).as_posix()
        if log is not None:
            print(f"[{number}/{len(urdfs)}] {name} ({time.perf_counter() - start:.0f} s)", file=log, flush=True)
        yield model_rows(name, example_robot_data(name), steps, limit, with_mujoco)


def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's counts: per method, completed / stopped / refused over the models."""
    out: dict[str, Any] = {"models": len({row["model"] for row in rows})}
    for label, _, _ in METHODS:
        mine = [row for row in rows if row["method"] == label]
        out[f"{label}: completed"] = sum(row["status"] == "completed" for row in mine)
        out[f"{label}: refused before step 0"] = sum(str(row["status"]).startswith("refused") for row in mine)
        out[f"{label}: other (stopped, failed, time limit)"] = sum(
            not (row["status"] == "completed" or str(row["status"]).startswith("refused")) for row in mine)
        done = [row["ms_per_step"] for row in mine if row["status"] == "completed"]
        out[f"{label}: median ms/step (completed)"] = float(np.median(done)) if done else math.nan
        dist = [row["dist_mujoco"] for row in mine if math.isfinite(row.get("dist_mujoco", math.nan))]
        out[f"{label}: models with a MuJoCo distance"] = len(dist)
        out[f"{label}: median dist_mujoco"] = float(np.median(dist)) if dist else math.nan
    return out
