"""Replay of an MJCF run in MuJoCo's own interactive viewer (``mujoco.viewer.launch_passive``,
MuJoCo documentation "Python bindings: passive viewer"), for users who know it: the run's
states are written into a copy of the model's data (``qpos``, ``qvel``, then ``mj_forward`` so
that MuJoCo draws its own contact points and forces) at the run's pace, looping until the
window closes. It needs a display (``DISPLAY`` or ``WAYLAND_DISPLAY``); the HTML page of
:mod:`.viewer` needs none.
"""

from __future__ import annotations

import os
import time
from typing import Any

from contactopt.core.errors import ContactoptError
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System

__all__ = ["replay"]


def replay(trajectory: Trajectory, system: System, *, loops: int | None = None) -> None:
    """Show ``trajectory`` of the MJCF ``system`` in MuJoCo's viewer (module docstring); ``loops``
    times (None: until the window closes)."""
    if system.type_name not in ("mjcf", "urdf"):
        raise ContactoptError(f"MuJoCo's viewer shows MJCF models; this is a {system.type_name} system "
                              "(write the HTML page instead: drop --mujoco)")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise ContactoptError("MuJoCo's viewer needs a display and none is set (DISPLAY); write the HTML page "
                              "instead (drop --mujoco) and open it in a browser")
    import mujoco
    import mujoco.viewer

    model: Any = getattr(system, "model")  # noqa: B009 (an MjcfSystem attribute, not one of System)
    data = mujoco.MjData(model)
    pause = max(float(trajectory.dt), 1e-3)
    with mujoco.viewer.launch_passive(model, data) as window:
        done = 0
        while window.is_running() and (loops is None or done < loops):
            for q, v in zip(trajectory.q, trajectory.v, strict=False):
                if not window.is_running():
                    break
                data.qpos[:], data.qvel[:] = q, v
                mujoco.mj_forward(model, data)
                window.sync()
                time.sleep(pause)
            done += 1
