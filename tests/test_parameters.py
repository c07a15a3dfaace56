"""Differentiable parameters of every system type (issue 26, gradients; docs/architecture.md, "Public API"):
``differentiable_parameters``, ``parameter_values`` and ``with_parameters`` (a new system, the
original unchanged), checked against what the physics says each parameter changes."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ParameterValueError, UnknownNameError
from contactopt.model.step import to_dense
from contactopt.systems import Brick, System

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _system(name: str) -> System:
    return co.load_scene(PROBLEMS / f"{name}.toml").system


def _M(system: System, q: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
    return np.asarray(to_dense(system.dynamics(q, np.zeros(system.nv) if v is None else v).M))


NAMES = {  # the exact names per system type, in order: the contract the derivatives rely on
    "cart_wall": ("m", "u"),  # a frictionless wall (contact dim 1): no "mu"
    "brick_push": ("mu", "m", "g", "u"),
    "pendulum": ("m", "l", "g"),
    "point_mass_drop": ("mu", "m", "g", "radius"),
    "spinning_ball": ("mu", "m", "radius", "g"),
    "cartesian_pendulum_floor": ("mu", "m", "l", "g"),
    "box_slide": ("mu", "gravity", "box.mass"),
}


@pytest.mark.parametrize("scene", sorted(NAMES))
def test_names_and_round_trip(scene: str) -> None:
    system = _system(scene)
    assert system.differentiable_parameters() == NAMES[scene]
    values = system.parameter_values()
    assert tuple(values) == NAMES[scene]
    copy = system.with_parameters(values)
    assert copy is not system and copy.parameter_values() == values
    q, v = system.default_state() or (np.ones(system.nq) * 0.3, np.ones(system.nv) * 0.2)
    assert np.array_equal(_M(copy, q, v), _M(system, q, v))
    assert np.array_equal(copy.dynamics(q, v).tau, system.dynamics(q, v).tau)


def test_textbook_parameters_change_the_physics_they_name() -> None:
    cart = _system("cart_wall")
    heavier = cart.with_parameters({"m": 2.0, "u": 3.0})
    assert _M(heavier, np.ones(1))[0, 0] == 2.0 and heavier.dynamics([1.0], [0.0]).tau[0] == 3.0
    assert _M(cart, np.ones(1))[0, 0] == 1.0 and cart.params["u"] == 0.0  # the original unchanged

    brick = _system("brick_push")
    q = np.zeros(2)
    changed = brick.with_parameters({"mu": 0.3, "m": 2.0})
    assert changed.contacts(q).mu.tolist() == [0.3] and brick.contacts(q).mu.tolist() == [0.5]
    assert np.array_equal(_M(changed, q), 2.0 * _M(brick, q))
    assert changed.dynamics(q, q).tau[1] == pytest.approx(-2.0 * 9.81)  # gravity m g doubles

    pendulum = _system("pendulum")  # M = m l^2, tau_g = -m g l sin(theta)
    theta = np.array([0.7])
    longer = pendulum.with_parameters({"l": 2.0})
    assert _M(longer, theta)[0, 0] == pytest.approx(4.0 * _M(pendulum, theta)[0, 0], rel=1e-15)
    assert longer.dynamics(theta, [0.0]).tau[0] == pytest.approx(-2.0 * 9.81 * math.sin(0.7), rel=1e-15)
    assert pendulum.with_parameters({"g": 1.62}).dynamics(theta, [0.0]).tau[0] == pytest.approx(-1.62 * math.sin(0.7))

    point = _system("point_mass_drop")  # phi = z - radius
    assert point.with_parameters({"radius": 0.25}).contacts([0.0, 1.0]).phi[0] == pytest.approx(0.75)


def test_derived_quantities_are_rebuilt() -> None:
    ball = _system("spinning_ball")  # hollow ball: I = 2/3 m r^2, derived at construction
    q = ball.default_state() or (np.array([0.0, 0.1, 0.0]), np.zeros(3))
    base = _M(ball, q[0])
    heavier = _M(ball.with_parameters({"m": 2.0}), q[0])
    assert np.allclose(heavier, 2.0 * base, rtol=1e-15)  # diag(m, m, I): every entry doubles
    wider = _M(ball.with_parameters({"radius": 0.2}), q[0])
    assert wider[2, 2] == pytest.approx(4.0 * base[2, 2], rel=1e-15) and wider[0, 0] == base[0, 0]

    four_bar = _system("four_bar")  # the initial state is assembled at construction
    turned = four_bar.with_parameters({"crank_angle": 1.3})
    q0, v0 = turned.default_state()
    assert q0[0] == pytest.approx(1.3)
    assert np.abs(turned.constraints(q0, v0).h).max() < 1e-12  # the loop closes at the new angle
    assert four_bar.default_state()[0][0] == pytest.approx(1.0)  # the original unchanged
    with pytest.raises(ParameterValueError, match="crank_angle"):
        four_bar.with_parameters({"a": 5.0})  # a crank longer than the rest cannot be assembled


def test_rigid3d_mass_scales_the_body_block_and_gravity() -> None:
    box = _system("box_slide")
    q, v = box.default_state()
    v = v + np.array([0.0, 0.0, 0.0, 0.3, -0.2, 0.5])  # spinning: the gyroscopic term scales too
    heavy = box.with_parameters({"box.mass": 2.0})  # uniform density: the inertia doubles with m
    assert np.allclose(_M(heavy, q), 2.0 * _M(box, q), rtol=1e-15)
    assert np.allclose(heavy.dynamics(q, v).tau, 2.0 * box.dynamics(q, v).tau, rtol=1e-15)
    assert box.parameter_values(["box.mass"]) == {"box.mass": 1.0}
    stronger = box.with_parameters({"gravity": 2 * 9.81, "mu": 0.2})
    assert stronger.dynamics(q, v).tau[2] == pytest.approx(-2 * 9.81)
    assert set(stronger.contacts(q).mu) == {0.2} and set(box.contacts(q).mu) == {0.5}

    stack = _system("box_stack")  # only the named body's block changes
    q, _ = stack.default_state()
    changed = _M(stack.with_parameters({"top.mass": 3.0}), q) - _M(stack, q)
    assert np.abs(changed[:6, :]).max() == 0.0 and np.abs(changed[6:, 6:]).max() > 0.0


def test_errors_name_the_parameter() -> None:
    brick = _system("brick_push")
    with pytest.raises(UnknownNameError, match=r"'nope'.*known: mu, m, g, u"):
        brick.with_parameters({"nope": 1.0})
    with pytest.raises(UnknownNameError, match="restitution"):
        brick.parameter_values(["restitution"])  # the time-stepping formulations do not read it
    with pytest.raises(UnknownNameError, match="'mu'"):
        _system("cart_wall").with_parameters({"mu": 0.5})
    for bad in (math.nan, math.inf, -1.0, "1"):
        with pytest.raises(ParameterValueError, match=r"brick\.m:"):
            brick.with_parameters({"m": bad})
    assert "mu" not in Brick({"m": 1.0, "g": 9.81, "u": 0.0}, {"mu": math.inf}).differentiable_parameters()


def test_the_held_control_stays() -> None:
    pendulum = _system("pendulum")
    pendulum.set_control(np.array([2.0]))
    copy = pendulum.with_parameters({"m": 2.0})
    assert copy.dynamics([0.0], [0.0]).tau[0] == pytest.approx(2.0)


# --------------------------------------------------------------------------- mjcf

mujoco = pytest.importorskip("mujoco")


def _mujoco_mass(model: object, q: np.ndarray) -> np.ndarray:
    data = mujoco.MjData(model)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    from contactopt.systems.mjcf.compat import full_mass_matrix

    return full_mass_matrix(mujoco, model, data)


def test_mjcf_names_mass_and_friction() -> None:
    box = _system("pushed_box_mjcf")  # slide joints x, y, z: M = m I3, gravity -m g on z
    assert box.differentiable_parameters() == ("mu", "box.mass", "floor.friction", "box.friction")
    assert box.parameter_values() == {"mu": 0.5, "box.mass": 1.0, "floor.friction": 0.5, "box.friction": 0.5}
    q = np.array([0.0, 0.0, -0.0012])  # 0.2 mm into the floor: four corner contacts
    heavy = box.with_parameters({"box.mass": 2.0})
    assert np.allclose(_M(heavy, q), 2.0 * np.eye(3), rtol=1e-15)
    assert np.array_equal(_M(heavy, q), _mujoco_mass(heavy.model, q))  # the copy's model says so too
    assert heavy.dynamics(q, np.zeros(3)).tau[2] == pytest.approx(-2.0 * 9.81)
    assert np.allclose(_M(box, q), np.eye(3)) and box.model.body_mass[1] == 1.0  # the original unchanged

    assert set(box.with_parameters({"mu": 0.3}).contacts(q).mu) == {0.3}
    # MuJoCo's combination rule: the larger of the two geoms' sliding friction
    assert set(box.with_parameters({"floor.friction": 0.9}).contacts(q).mu) == {0.9}
    slippery = box.with_parameters({"floor.friction": 0.2})
    assert set(slippery.contacts(q).mu) == {0.5}
    assert "mu" not in slippery.differentiable_parameters()  # the geoms now differ
    with pytest.raises(UnknownNameError, match=r"'box\.inertia'.*box\.mass"):
        box.with_parameters({"box.inertia": 1.0})


def test_mjcf_mass_change_agrees_with_a_mujoco_step() -> None:
    arm = _system("two_link_arm_mjcf")
    assert arm.differentiable_parameters() == ("mu", "upper_arm.mass", "forearm.mass", "floor.friction")
    q, v = arm.default_state()[0], np.array([0.4, -0.7])  # horizontal at 0.5 m: no contact
    masses = [arm.with_parameters({"forearm.mass": 0.6 * k}) for k in (1e-12, 1.0, 2.0)]
    M = [_M(system, q) for system in masses]
    # the forearm's share of M, translational and rotational, is proportional to its mass when
    # its inertia scales with it (uniform density): doubling the mass adds that share once more
    assert np.allclose(M[2] - M[1], M[1] - M[0], rtol=0.0, atol=1e-12) and np.abs(M[2] - M[1]).min() > 1e-3
    heavy = masses[2]
    assert np.allclose(heavy.model.body_inertia[2], 2.0 * arm.model.body_inertia[2], rtol=1e-15)
    assert np.allclose(M[2], _mujoco_mass(heavy.model, q), rtol=0.0, atol=1e-14)
    assert heavy.model.body_subtreemass[1] == pytest.approx(1.0 + 1.2)  # mj_setConst ran on the copy
    assert np.array_equal(heavy.model.body_margin, arm.model.body_margin)  # detection kept as loaded
    h = arm.model.opt.timestep
    for system in (arm, heavy):  # one mj_step of the model (Euler, implicit joint damping) vs the system
        data = mujoco.MjData(system.model)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_step(system.model, data)
        dynamics = system.step_dynamics(system.dynamics(q, v), h)
        v_next = v + h * np.linalg.solve(to_dense(dynamics.M), dynamics.tau)
        assert np.allclose(data.qvel, v_next, rtol=0.0, atol=1e-12)
        assert np.allclose(data.qpos, system.integrate(q, v_next, h), rtol=0.0, atol=1e-12)
    assert not np.allclose(heavy.dynamics(q, v).tau, arm.dynamics(q, v).tau)


def test_mjcf_copy_keeps_its_values_through_pickling_and_params_model() -> None:
    arm = _system("two_link_arm_mjcf")
    heavy = arm.with_parameters({"upper_arm.mass": 2.5, "mu": 0.4})
    assert heavy.native_model_data()[0].body_mass[1] == 2.5  # MuJoCo's own problem (params=model)
    assert arm.native_model_data()[0].body_mass[1] == 1.0
    again = pickle.loads(pickle.dumps(heavy))
    assert again.parameter_values() == heavy.parameter_values()
    q = arm.default_state()[0]
    assert np.array_equal(_M(again, q), _M(heavy, q))
    assert pickle.loads(pickle.dumps(arm)).parameter_values()["upper_arm.mass"] == 1.0
