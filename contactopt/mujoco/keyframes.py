"""Keyframes of an MJCF model: the initial state a scene starts from (MuJoCo XML reference,
"keyframe/key"; ``mj_resetDataKeyframe`` of its API reference).

A scene starts at keyframe 0 when the model has one, or at the keyframe named by
``[system] keyframe = "NAME"`` (the CLI's ``--keyframe NAME``): its ``qpos``, ``qvel`` and ``act``
(the actuator activations, :mod:`.activations`), and, as ``mj_resetDataKeyframe`` sets
``data.ctrl``, its ``ctrl`` held as a constant control when the scene has no ``[control]`` table
(a zero ``ctrl`` holds none).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.errors import ContactoptError

FloatArray = NDArray[np.float64]


class KeyframeError(ContactoptError):
    """A keyframe name the model does not have (or a model without keyframes)."""


def keyframe_names(model: Any) -> list[str]:
    """The model's keyframe names in order (a nameless one is ``"#i"``)."""
    return [model.key(i).name or f"#{i}" for i in range(int(model.nkey))]


def keyframe_index(model: Any, name: str | None, source: str) -> int | None:
    """The index of keyframe ``name`` (``None``: keyframe 0 if the model has one, else no keyframe)."""
    names = keyframe_names(model)
    if name is None:
        return 0 if names else None
    if not isinstance(name, str) or not name:
        raise KeyframeError(f"keyframe: expected a keyframe name of {source}, got {name!r}")
    if not names:
        raise KeyframeError(f"keyframe {name!r}: {source} has no keyframes (no <keyframe> element)")
    if name not in names:
        raise KeyframeError(f"unknown keyframe {name!r}; known keyframes of {source}: {', '.join(names)}")
    return names.index(name)


def keyframe_state(model: Any, index: int) -> tuple[FloatArray, FloatArray]:
    """``(qpos, qvel)`` of keyframe ``index``."""
    return np.array(model.key_qpos[index], dtype=np.float64), np.array(model.key_qvel[index], dtype=np.float64)


def keyframe_control(model: Any, index: int | None) -> FloatArray | None:
    """The ``ctrl`` of keyframe ``index`` to hold, or ``None`` (no keyframe, no actuators, a zero
    ``ctrl``: module docstring)."""
    if index is None or not int(model.nu):
        return None
    ctrl = np.array(model.key_ctrl[index], dtype=np.float64)
    return ctrl if np.any(ctrl != 0.0) else None
