"""MuJoCo's RK4 integrator under ``regularized -o params=model``
(:mod:`contactopt.integrators.runge_kutta`): every step is four stage programs, MuJoCo's own
constraint problem at each stage state, and the run equals ``mj_step`` (q, v, act) with MuJoCo's
solver converged; a stage that fails fails the step; derivatives of such steps are refused."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators import time_stepping
from contactopt.programs import Status

mujoco = pytest.importorskip("mujoco")

#: (a) A damped two-link arm whose elbow starts near its limit and swings into it.
ARM = """<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.01" integrator="RK4"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.3"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" limited="true" range="-0.4 0.4" damping="0.1"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
  </worldbody>
  <keyframe><key qpos="0.3 0.3" qvel="1 2.5"/></keyframe>
</mujoco>"""

#: (b) A tumbling box (free joint: RK4's orientation stages) dropped onto a floor, where it
#: lands at step ~8 and comes to rest on its face.
BOX = """<mujoco>
  <option timestep="0.01" integrator="RK4" cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 0.12"><freejoint/><geom type="box" size=".1 .08 .05" mass="1"/></body>
  </worldbody>
  <keyframe><key qpos="0 0 0.12 0.96 0 0 0.28" qvel="0.3 0 0 1 2 3"/></keyframe>
</mujoco>"""

#: (c) Actuators with activations (a filter, an exact filter, an integrator clamped to its
#: actrange at step ~20) and a joint equality coupling two hinges.
ACTUATED = """<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.01" integrator="RK4"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="a" type="hinge" axis="0 1 0" damping="0.2"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="b" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
    <body pos="1 0 1">
      <joint name="c" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".4"/>
    </body>
  </worldbody>
  <equality><joint joint1="c" joint2="b" polycoef="0 0.5 0 0 0"/></equality>
  <actuator>
    <general name="filter" joint="a" dyntype="filter" dynprm="0.05" gainprm="2"/>
    <general name="exact" joint="b" dyntype="filterexact" dynprm="0.03" gainprm="1"/>
    <general name="integrate" joint="c" dyntype="integrator" actlimited="true" actrange="-0.4 0.6" gainprm="3"/>
  </actuator>
  <keyframe><key qpos="0.2 -0.3 -0.15" act="0.1 0.3 0.4" ctrl="0.7 -0.8 1"/></keyframe>
</mujoco>"""

STEPS = 40


def write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def converged(model: Any) -> None:
    """MuJoCo's Newton solver run to convergence (the program does not depend on these)."""
    model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000
    model.opt.ls_tolerance, model.opt.ls_iterations = 1e-15, 1000


def mujoco_run(path: Path, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qpos, qvel, act)`` at every state of ``mj_step`` from keyframe 0 (or rest), its ctrl held."""
    model = mujoco.MjModel.from_xml_path(str(path))
    converged(model)
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    states = [(data.qpos.copy(), data.qvel.copy(), data.act.copy())]
    for _ in range(steps):
        mujoco.mj_step(model, data)
        states.append((data.qpos.copy(), data.qvel.copy(), data.act.copy()))
    q, v, act = (np.array(column) for column in zip(*states, strict=True))
    return q, v, act


def model_run(path: Path, steps: int, **options: object) -> co.Trajectory:
    scene = co.load_scene(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # initial-penetration notes
        return co.simulate(scene, "regularized", "clarabel", duration=steps * scene.dt,
                           options={"params": "model", **options})


def assert_same_run(path: Path, tolerance: float, **options: object) -> co.Trajectory:
    q, v, act = mujoco_run(path, STEPS)
    traj = model_run(path, STEPS, **options)
    assert traj.completed
    assert all(step.message.startswith("RK4: 4 stage programs") for step in traj.steps)
    np.testing.assert_allclose(traj.q, q, rtol=0, atol=tolerance)
    np.testing.assert_allclose(traj.v, v, rtol=0, atol=tolerance)
    np.testing.assert_allclose(traj.act, act, rtol=0, atol=tolerance)
    return traj


def test_a_damped_arm_into_its_joint_limit_equals_mj_step(tmp_path: Path) -> None:
    traj = assert_same_run(write(tmp_path, ARM, "arm.xml"), 1e-10)
    assert max(step.limits.max(initial=0.0) for step in traj.steps) > 0  # the elbow's limit row acted


# MuJoCo's Newton solver stops on the decrease of its cost, flat to second order at the optimum:
# where an elliptic cone's boundary is active its velocities are exact only to about
# sqrt(machine epsilon) times their scale (tests/test_mjcf_rows.py), 1e-10 here (measured); the
# pyramidal cone's are exact to rounding (measured 4e-15).
@pytest.mark.parametrize(("cone", "tolerance"), [("pyramidal", 1e-10), ("elliptic", 1e-9)])
def test_a_tumbling_box_landing_on_a_floor_equals_mj_step(tmp_path: Path, cone: str, tolerance: float) -> None:
    traj = assert_same_run(write(tmp_path, BOX.format(cone=cone), f"box_{cone}.xml"), tolerance)
    assert traj.steps[-1].impulses[:, 0].sum() > 0  # it rests on the floor at the end
    assert abs(traj.v[-1]).max() < 0.05


def test_activations_and_an_equality_equal_mj_step(tmp_path: Path) -> None:
    path = write(tmp_path, ACTUATED, "actuated.xml")
    traj = assert_same_run(path, 1e-10)
    assert traj.act[:, 2].max() == 0.6  # the integrator reached its actrange: the end-of-step clamp acts
    assert abs(traj.steps[-1].bilateral).max() > 0  # the equality row acted


def installed_model(name: str) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))
    try:
        from robot_models import robot_models
    finally:
        sys.path.pop(0)
    found = [model.path for model in robot_models() if model.name == name]
    if not found:
        pytest.skip(f"{name} is not installed")
    return found[0]


@pytest.mark.parametrize("name", ["gym/ant", "gym/humanoidstandup"])
def test_one_step_of_an_installed_rk4_robot_equals_mj_step(name: str) -> None:
    """From the model's initial state, one step; the reference is MuJoCo's Newton solver
    converged (humanoidstandup's own PGS stops 1.7e-7 off in qacc; the program is the same)."""
    path = installed_model(name)
    q, v, _ = mujoco_run(path, 1)
    traj = model_run(path, 1)
    assert traj.completed and traj.steps[0].message.startswith("RK4")
    np.testing.assert_allclose(traj.q[1], q[1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(traj.v[1], v[1], rtol=0, atol=1e-10)


def test_a_failed_stage_fails_the_step_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, BOX.format(cone="pyramidal"), "box.xml")
    solve = time_stepping.solvers.solve
    calls = []

    def third_call_fails(program: object, *args: object) -> object:
        calls.append(program)
        if len(calls) == 3:
            raise ContactoptError("the backend gave up")
        return solve(program, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(time_stepping.solvers, "solve", third_call_fails)
    traj = model_run(path, 2)  # a partial run (its warning silenced there)
    assert not traj.completed and len(traj.steps) == 1
    assert traj.steps[0].status is Status.NUMERICAL_ERROR
    assert traj.steps[0].message == "RK4 stage 3 of 4 (t = 0.005): the backend gave up"


def test_only_params_model_follows_rk4_and_its_derivatives_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, ARM, "arm.xml")
    scene = co.load_scene(path)
    for formulation in ("regularized", "ccp"):
        traj = co.simulate(scene, formulation, "clarabel", duration=scene.dt)
        assert not traj.steps[0].message.startswith("RK4")  # semi-implicit Euler, one program
    with pytest.raises(OptionError, match=r"steps this model as MuJoCo's RK4, 4 stage programs"):
        co.simulate(scene, "regularized", "clarabel", duration=scene.dt, options={"params": "model"},
                    sensitivities=["v0"])
