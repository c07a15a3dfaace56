"""Which programs a run exports: every step it started, re-formed from the recorded states
(:func:`step_programs`), and the ``npz`` format: one
:func:`~contactopt.programs.save_program` file per step.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contactopt.core.errors import ContactoptError
from contactopt.formulations.base import Program
from contactopt.integrators.drift import DRIFT_DEFAULTS
from contactopt.programs import save_program
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene
from contactopt.simulation import formulate

__all__ = ["recorded_control", "resolve_formulation", "step_count", "step_programs", "write_npz"]

def resolve_formulation(traj: Trajectory, formulation: str | None,
             options: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The formulation and options to re-form the steps with (see :func:`export_run`)."""
    recorded = str(traj.info.get("formulation", ""))
    recorded_options = dict(traj.info.get("options") or {})
    if not recorded and formulation is None:
        raise ContactoptError("the trajectory does not record its formulation; pass formulation=")
    name = (formulation or recorded).strip().lower()
    drift = {key: recorded_options[key] for key in DRIFT_DEFAULTS if key in recorded_options}
    if options is not None:
        return name, {**drift, **dict(options)}
    if name == recorded:
        return name, recorded_options
    return name, drift  # another formulation: its own defaults, the run's drift treatment


def step_count(traj: Trajectory) -> int:
    return min(len(traj.steps), int(traj.q.shape[0])) if traj.steps else max(0, int(traj.q.shape[0]) - 1)


def step_programs(scene: Scene, traj: Trajectory, formulation: str | None = None,
                  options: Mapping[str, Any] | None = None) -> list[tuple[int, float, Program]]:
    """``(step, t, program)`` of every step the trajectory started, re-formed from its states."""
    name, resolved = resolve_formulation(traj, formulation, options)
    dt = float(traj.info["dt"])
    out: list[tuple[int, float, Program]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. gauss ignoring friction: said once by the run
        for i in range(step_count(traj)):
            t = float(traj.t[i])
            out.append((i, t, formulate(scene.system, traj.q[i], traj.v[i], dt, name, resolved, t,
                                        control=recorded_control(traj, i), activation=traj.act[i])))
    return out


def recorded_control(traj: Trajectory, step: int) -> Any:
    """The input the run held over ``step`` (its record's ``control``), or None without one."""
    if step >= len(traj.steps) or not traj.steps[step].control.size:
        return None
    return traj.steps[step].control


# --- npz ----------------------------------------------------------------------------------


def write_npz(programs: Iterable[tuple[int, float, Program]], folder: Path, *, resume: bool = False) -> Path:
    """``folder/step_%06d.npz`` for every program; returns ``folder``. ``resume``: a step file
    already there is kept (complete: :func:`~contactopt.programs.save_program` writes atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, _, program in programs:
        target = folder / f"step_{i:06d}.npz"
        if not (resume and target.is_file()):
            save_program(program, target)
    return folder
