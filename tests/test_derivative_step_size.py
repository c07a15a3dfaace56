"""The difference step of a state block at rest (issue 26, found by sweeping the derivatives over
scenes nobody wrote for them): a block whose entries are all tiny but not zero (a hanging
pendulum at ``theta = 1e-30``, a cart whose position after one step is ``1e-34``) has no size
of its own, and a step relative to it (``1e-36``) is lost to round-off in the next state
``theta' = theta + h v' ~ 1e-3``, which returned a zero Jacobian. The reference is the whole
run re-simulated at ``q0 +- h`` (central differences, ``h = 1e-6``: truncation ``O(h^2)`` on
the pendulum's smooth map, far below the tolerance)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import PROBLEMS

import contactopt as co


@pytest.mark.parametrize("formulation, solver", [("ccp", "clarabel"), ("sap", "newton")])
def test_state_block_near_zero_is_differenced_on_a_unit_scale(formulation: str, solver: str) -> None:
    scene = dataclasses.replace(co.load_scene(PROBLEMS / "pendulum.toml"), q0=np.array([1e-30]), v0=np.array([1.0]))
    duration = 2 * scene.dt
    traj = co.simulate(scene, formulation=formulation, solver=solver, duration=duration, sensitivities=["q0"])
    h = 1e-6
    ends = []
    for sign in (1.0, -1.0):
        moved = co.simulate(dataclasses.replace(scene, q0=scene.q0 + sign * h), formulation=formulation,
                            solver=solver, duration=duration)
        ends.append(np.concatenate([moved.q[-1], moved.v[-1]]))
    central = (ends[0] - ends[1]) / (2 * h)
    sensitivity = traj.sensitivities["q0"][-1][:, 0]
    # dtheta'/dtheta0 ~ 1 - O(dt^2 g / l): a zero Jacobian (the defect) is off by 1
    assert np.linalg.norm(sensitivity - central) <= 1e-6 * np.linalg.norm(central)
