"""Copies of an :class:`~.system.MjcfSystem` without reading its file again: pickling (process
pools, Dask: the file's path and settings, loaded again there), a deep copy (MuJoCo's models and
data copied), and the batch's evaluation copy (``simulate_batch``'s worlds: the models shared,
their data copied), measured on dm-control's humanoid at 118 ms (load), 55 ms and 3 ms."""

from __future__ import annotations

import copy
from typing import Any


def get_state(system: Any) -> dict[str, Any]:
    """What pickling keeps: the file, its settings and the parameters set on it."""
    return {"path": str(system.path), "detection_margin": system.detection_margin,
            "extra_friction": system.extra_friction, "keyframe": system.keyframe, "parameters": system.parameter_arrays}


def set_state(system: Any, state: dict[str, Any]) -> None:
    """The system loaded again from :func:`get_state`'s record."""
    from contactopt.systems.mjcf import parameters

    system.__init__(state["path"], state["detection_margin"], state.get("extra_friction", "model"),
                    keyframe=state.get("keyframe"))
    parameters.reload(system, state.get("parameters"))


def deep_copy(system: Any, memo: dict[int, Any]) -> Any:
    """Every attribute copied (MuJoCo's models and data by their own copies), MuJoCo's module shared."""
    memo[id(system.mujoco)] = system.mujoco
    twin = object.__new__(type(system))
    memo[id(system)] = twin
    for name, value in system.__dict__.items():
        twin.__dict__[name] = copy.deepcopy(value, memo)
    return twin


def evaluation_copy(system: Any) -> Any:
    """A system whose evaluation state is its own (MuJoCo's data, the caches) and whose MuJoCo
    models are the original's: a run reads a model and never changes it (the native evaluation
    sets the step's ``timestep`` and ``cone`` before every use), so B worlds share one model as
    MJX's batch does; each ``MjData`` is copied whole (``mj_copyData``). Copies of one system are
    for runs one after the other or in other processes, not in threads of one process (those
    evaluations write the shared model's ``timestep`` and ``cone``). The model as written
    (``native_model_data``) is loaded once, on the original, for every copy to share."""
    system.native_model_data()
    mujoco = system.mujoco
    memo: dict[int, Any] = {id(mujoco): mujoco}
    for value in system.__dict__.values():
        for part in value if isinstance(value, tuple) else (value,):
            if isinstance(part, mujoco.MjModel):
                memo[id(part)] = part
            elif isinstance(part, mujoco.MjData):
                memo[id(part)] = copy.copy(part)
    return deep_copy(system, memo)
