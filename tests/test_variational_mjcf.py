"""The variational integrator on MJCF hinge and slide joints (issue 38): ``L = 1/2 v^T M(q) v - U(q)``
with ``M`` from MuJoCo, the non-conservative forces (damping, inputs) the odd part of MuJoCo's
forces in ``v`` (:mod:`contactopt.integrators.variational`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import OptionError

pytest.importorskip("mujoco")
ROOT = Path(__file__).resolve().parents[1]


def test_a_damped_mjcf_chain_is_second_order_against_a_tight_ode_reference() -> None:
    """problems/mjcf/identification_chain.xml (two hinges, damping 0.1 and 0.05, armature 0.01),
    from q = (0.4, -0.3), v = (1, 0.5), 0.2 s: the midpoint DEL is second order, so halving h
    quarters its distance to RK45 at rtol 1e-10 (measured 1.68e-5 and 4.21e-6 at h = 4e-3 and
    2e-3, ratio 3.98); a damping treated wrongly (as a conservative force, or dropped) would
    leave an O(1) difference instead."""
    scene = co.load_scene(ROOT / "problems" / "mjcf" / "identification_chain.xml")
    scene = dataclasses.replace(scene, q0=np.array([0.4, -0.3]), v0=np.array([1.0, 0.5]))
    errors = []
    for h in (4e-3, 2e-3):
        variational = co.simulate(scene, formulation="variational", dt=h, duration=0.2)
        reference = co.simulate(scene, formulation="ode", dt=h, duration=0.2, options={"rtol": 1e-10, "atol": 1e-12})
        assert variational.completed and reference.completed
        errors.append(float(np.abs(variational.q[-1] - reference.q[-1]).max()))
    assert errors[0] < 1e-3
    assert 3.5 < errors[0] / errors[1] < 4.5


def test_joint_limits_are_refused_before_step_0(tmp_path: Path) -> None:
    model = tmp_path / "limited.xml"
    model.write_text('<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0" limited="true" '
                     'range="-30 30"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" '
                     'contype="0" conaffinity="0"/></body></worldbody></mujoco>')
    scene = co.load_scene(model)
    with pytest.raises(OptionError, match="carries no joint limits"):
        co.simulate(scene, formulation="variational", duration=0.01)
