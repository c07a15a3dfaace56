"""The dm-control and mujoco that the ``robots``/``dev`` extras install work together:
``dm_control.suite.load("hopper", "stand")`` builds and steps (dm-control 1.0.50 reads
``MjModel.flex_vertedge``, which mujoco 4.0 no longer has: ``suite.load`` raised AttributeError
under the pair ``pip install -e ".[dev]"`` resolved before the pin). The ``dm_*`` scenes read the
suite's XML files only, so they load under either pair; this is the user's own dm-control."""

from __future__ import annotations

import numpy as np
import pytest

suite = pytest.importorskip("dm_control.suite")


def test_suite_hopper_loads_and_steps() -> None:
    env = suite.load("hopper", "stand", task_kwargs={"random": 0})
    timestep = env.reset()
    spec = env.action_spec()
    start = env.physics.data.time
    for _ in range(10):
        timestep = env.step(np.zeros(spec.shape))
    # ten control steps of the task's control timestep, each an integer number of physics steps
    assert env.physics.data.time == pytest.approx(start + 10 * env.control_timestep(), rel=1e-9)
    assert all(np.isfinite(value).all() for value in timestep.observation.values())
    assert np.isfinite(timestep.reward)
