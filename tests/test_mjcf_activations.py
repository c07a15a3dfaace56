"""Actuator activations (MuJoCo's ``act``, :mod:`contactopt.systems.mjcf.activations`) carried by the
state: every time-stepping formulation advances them as ``mj_step`` does, the ``mujoco`` method
returns MuJoCo's own, a keyframe's ``act`` and ``ctrl`` start the run, and what cannot carry
them (continuous-time methods, derivatives through ``act``) is refused before step 0."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.model.step import State

mujoco = pytest.importorskip("mujoco")

#: A two-link arm driven by a filter (with ``actearly`` when asked), a clamped integrator and a
#: muscle, and a box on x/z slides driven by an exact filter. With ``floor`` the box rests on a
#: frictionless plane (condim 1): its contact pushes along z only, so the arm and x follow the
#: actuators alone. The integrator's act starts at 0.3 and grows by 0.01 a step under ctrl = 1:
#: it reaches its actrange 0.6 at step 30.
MODEL = """
<mujoco>
  <option timestep="0.01" integrator="{integrator}"/>
  <worldbody>
    {floor}
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.2"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
    <body pos="1 1 {height}">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1" mass="1" condim="1"/>
    </body>
  </worldbody>
  <actuator>
    <general name="filter" joint="shoulder" dyntype="filter" dynprm="0.05" gainprm="2" actearly="{early}"/>
    <general name="integrate" joint="elbow" dyntype="integrator" actlimited="true" actrange="-0.4 0.6"
             gainprm="3"/>
    <general name="exact" joint="x" dyntype="filterexact" dynprm="0.03" gainprm="15"/>
    <muscle name="muscle" joint="shoulder" force="5" lengthrange="-1 1"/>
  </actuator>
  {keyframe}
</mujoco>
"""
KEYFRAME = '<keyframe><key name="start" qpos="0.2 -0.3 0 0" act="0.1 0.3 0.3 0.05" ctrl="0.7 1 -0.8 0.5"/></keyframe>'
STEPS = 40
FLOOR = '<geom type="plane" size="3 3 .1" condim="1"/>'


def write_model(tmp_path: Path, integrator: str = "Euler", floor: bool = False, early: bool = False,
                keyframe: bool = True) -> Path:
    path = tmp_path / f"act_{integrator}_{floor}_{early}_{keyframe}.xml"
    path.write_text(MODEL.format(integrator=integrator, floor=FLOOR if floor else "", height=0.1 if floor else 0.5,
                                 early=str(early).lower(), keyframe=KEYFRAME if keyframe else ""))
    return path


def mujoco_run(path: Path, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qpos, qvel, act)`` at every state of ``mj_step`` from keyframe 0, holding its ctrl."""
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    states = [(data.qpos.copy(), data.qvel.copy(), data.act.copy())]
    for _ in range(steps):
        mujoco.mj_step(model, data)
        states.append((data.qpos.copy(), data.qvel.copy(), data.act.copy()))
    q, v, act = (np.array(column) for column in zip(*states, strict=True))
    return q, v, act


def run(path: Path, formulation: str, solver: str | None, steps: int = STEPS, **options: object) -> co.Trajectory:
    scene = co.load_scene(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # initial-penetration notes of the resting box
        return co.simulate(scene, formulation, solver, duration=steps * scene.dt, options=options)


@pytest.mark.parametrize(("integrator", "early"), [("Euler", False), ("implicitfast", False), ("implicitfast", True)])
def test_params_model_equals_mj_step_with_activations(tmp_path: Path, integrator: str, early: bool) -> None:
    path = write_model(tmp_path, integrator, early=early)
    q, v, act = mujoco_run(path, STEPS)
    assert act[:, 1].max() == 0.6  # the integrator reached its actrange: the clamp is exercised
    traj = run(path, "regularized", "clarabel", params="model")
    assert traj.completed
    # no constraint rows: the step is MuJoCo's own linear solve, equal to rounding
    np.testing.assert_allclose(traj.q, q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(traj.v, v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(traj.act, act, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("formulation", "solver"), [("ccp", "clarabel"), ("sap", "newton"), ("lcp", "lemke")])
def test_contact_formulations_advance_mujocos_act(tmp_path: Path, formulation: str, solver: str) -> None:
    path = write_model(tmp_path, floor=True)
    q, _, act = mujoco_run(path, STEPS)
    traj = run(path, formulation, solver)
    assert traj.completed and traj.steps[0].phi.size  # the box rests on the floor
    # act does not depend on the contact solve: MuJoCo's advance of MuJoCo's act_dot, to rounding
    np.testing.assert_allclose(traj.act, act, rtol=0, atol=1e-14)
    # the frictionless floor pushes along z only: the arm and x follow the actuators exactly ...
    np.testing.assert_allclose(traj.q[:, :3], q[:, :3], rtol=0, atol=1e-9)
    # ... and z differs by MuJoCo's soft-contact sinking (g h^2 = 1e-3 m at h = 0.01), which
    # rigid formulations do not have
    np.testing.assert_allclose(traj.q[:, 3], q[:, 3], rtol=0, atol=2e-3)


def test_mujoco_method_returns_mujocos_act(tmp_path: Path) -> None:
    path = write_model(tmp_path, floor=True)
    q, _, act = mujoco_run(path, STEPS)
    traj = run(path, "mujoco", None)
    np.testing.assert_array_equal(traj.act, act)
    np.testing.assert_array_equal(traj.q, q)


def test_keyframe_act_and_ctrl_start_the_run(tmp_path: Path) -> None:
    path = write_model(tmp_path)
    scene = co.load_scene(path)
    assert scene.control is not None and scene.control.values["u"] == (0.7, 1.0, -0.8, 0.5)
    np.testing.assert_array_equal(scene.system.initial_activation(), [0.1, 0.3, 0.3, 0.05])
    traj = run(path, "ccp", "clarabel", steps=2)
    np.testing.assert_array_equal(traj.act[0], [0.1, 0.3, 0.3, 0.05])
    _, _, act = mujoco_run(path, 2)
    np.testing.assert_allclose(traj.act, act, rtol=0, atol=1e-15)
    # saved and read back with the activations; a file written before them reads as (N+1, 0)
    saved = co.Trajectory.load(traj.save(path.with_suffix(".npz")))
    np.testing.assert_array_equal(saved.act, traj.act)
    without = co.Trajectory(t=traj.t, q=traj.q, v=traj.v)
    assert without.act.shape == (3, 0)
    # no keyframe: mj_resetData's zeros, and no control held
    bare = co.load_scene(write_model(tmp_path, keyframe=False))
    assert bare.control is None
    np.testing.assert_array_equal(bare.system.initial_activation(), np.zeros(4))


def test_a_system_without_activations_keeps_an_empty_act(tmp_path: Path) -> None:
    scene = co.load_scene("problems/box_slide.toml")
    traj = co.simulate(scene, "ccp", "clarabel", duration=3 * scene.dt)
    assert traj.act.shape == (4, 0) and State([0.0], [0.0]).act.shape == (0,)


def test_open_loop_sensitivities_match_finite_differences(tmp_path: Path) -> None:
    """``act`` is the same along every perturbation of ``v0`` and ``q0`` under the held ctrl,
    so the sensitivities that leave it out are exact: central differences of whole runs agree."""
    path = write_model(tmp_path)
    scene = co.load_scene(path)
    steps = 8
    traj = co.simulate(scene, "ccp", "clarabel", duration=steps * scene.dt, sensitivities=["q0", "v0"])
    eps = 1e-6
    for name, column in (("v0", 0), ("v0", 1), ("q0", 1)):
        sides = []
        for sign in (1.0, -1.0):
            moved = {"q0": scene.q0.copy(), "v0": scene.v0.copy()}
            moved[name][column] += sign * eps
            other = co.simulate(dataclasses.replace(scene, **moved), "ccp", "clarabel", duration=steps * scene.dt)
            sides.append(np.concatenate([other.q[-1], other.v[-1]]))
        difference = (sides[0] - sides[1]) / (2 * eps)
        # central differences: O(eps^2) truncation and O(1e-16 / eps) rounding
        np.testing.assert_allclose(traj.sensitivities[name][-1][:, column], difference, rtol=1e-5, atol=1e-6)


def test_what_cannot_carry_activations_is_refused(tmp_path: Path) -> None:
    scene = co.load_scene(write_model(tmp_path))
    for method in ("ode", "compliant", "hybrid"):
        with pytest.raises(OptionError, match=f"formulation '{method}' does not carry actuator activations"):
            co.simulate(scene, method, "clarabel", duration=scene.dt)
    for names in (["u"], ["dt"]):
        with pytest.raises(OptionError, match=r"actuator activation.*derivatives by"):
            co.simulate(scene, "ccp", "clarabel", duration=scene.dt, sensitivities=names)
    with pytest.raises(OptionError, match=r"controller reading the state \(type 'pd'\)"):
        co.simulate(scene, "ccp", "clarabel", duration=scene.dt, sensitivities=["v0"],
                    controller={"type": "pd", "kp": 1.0, "target": [0.0, 0.0, 0.0, 0.0]})
    with pytest.raises(OptionError, match="controller reading the state"):
        co.gradient(scene, lambda q, v: (0.0, np.zeros_like(q), np.zeros_like(v)), ["v0"], formulation="ccp",
                    solver="clarabel", duration=scene.dt, controller=lambda t, q, v: np.zeros(4))
    early = co.load_scene(write_model(tmp_path, "implicitfast", early=True))
    with pytest.raises(OptionError, match=r"actearly.*opt\.timestep = 0\.01"):
        co.simulate(early, "ccp", "clarabel", dt=0.005, duration=0.01)
    with pytest.raises(ContactoptError, match="na = 4 actuator activations, got 2"):
        co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "ccp", activation=[0.0, 0.0])


def test_a_step_re_formed_from_its_recorded_act_gives_the_next_state(tmp_path: Path) -> None:
    """``formulate(..., activation=traj.act[k])`` (what ``export`` and ``contactopt program`` do)
    is the program the run solved at step ``k``: the same next velocity; the initial act is not."""
    path = write_model(tmp_path)
    scene = co.load_scene(path)
    traj = run(path, "ccp", "clarabel", steps=12)
    k, ctrl = 10, np.array([0.7, 1.0, -0.8, 0.5])

    def next_velocity(activation: np.ndarray) -> np.ndarray:
        program = co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, "ccp", t=float(traj.t[k]),
                               control=ctrl, activation=activation)
        assert program.variables[0].name == "v_next"
        return np.asarray(co.solve(program, "clarabel").x[: scene.system.nv])

    # the same program solved again by the same solver (no contact: an unconstrained QP)
    np.testing.assert_allclose(next_velocity(traj.act[k]), traj.v[k + 1], rtol=0, atol=1e-10)
    assert np.abs(next_velocity(traj.act[0]) - traj.v[k + 1]).max() > 1e-3
