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

from contactopt.core.errors import ContactoptError

FloatArray = NDArray[np.float64]


class KeyframeError(ContactoptError):
    """A keyframe name the model does not have (or a model without keyframes)."""


def equality_violations(mujoco: Any, model: Any, data: Any) -> list[tuple[str, float]]:
    """``(label, violation)`` of every active equality at ``data`` (after ``mj_fwdPosition``):
    the distance of a ``connect``'s two points (m, the norm of its 3 ``efc_pos`` rows), the larger
    of a ``weld``'s position (m) and rotation (rad) errors, the largest ``|efc_pos|`` of another
    kind (a ``joint`` coupling's, rad or m), labelled ``"connect 'NAME'"``; a run that starts
    with one violated is pulled together by its first steps (the initial-state check of
    :mod:`contactopt.integrators.initial_penetration` warns, naming the worst)."""
    nefc = int(data.nefc)
    kinds = np.asarray(data.efc_type)[:nefc]
    rows = np.flatnonzero(kinds == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY))
    if not rows.size:
        return []
    ids = np.asarray(data.efc_id)[:nefc][rows]
    pos = np.abs(np.asarray(data.efc_pos, dtype=np.float64)[:nefc][rows])
    kinds_known = ("connect", "weld", "joint", "tendon", "flex", "distance")
    kind_names = {int(getattr(mujoco.mjtEq, f"mjEQ_{k.upper()}")): k for k in kinds_known
                  if hasattr(mujoco.mjtEq, f"mjEQ_{k.upper()}")}
    out = []
    for eq in dict.fromkeys(int(i) for i in ids):
        kind = kind_names.get(int(model.eq_type[eq]), "equality")
        name = model.equality(eq).name or f"#{eq}"
        own = pos[ids == eq]  # connect: 3 position rows; weld: 3 position, then 3 rotation rows
        size = (np.linalg.norm(own[:3]) if kind == "connect" else max(np.linalg.norm(own[:3]), np.linalg.norm(own[3:]))
                if kind == "weld" else own.max())
        out.append((f"{kind} {name!r}", float(size)))
    return out


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
