"""MJCF keyframes (:mod:`contactopt.systems.mjcf.keyframes`): a scene starts at keyframe 0 or the
named one, holding its ``ctrl`` as ``mj_resetDataKeyframe`` sets it, so that a robot holds
its pose under ``regularized -o params=model`` as under ``mj_step``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core.errors import InitialLimitViolationWarning, SceneError

mujoco = pytest.importorskip("mujoco")

#: A two-joint arm held by stiff position servos, with two poses and their controls.
ARM = """
<mujoco>
  <option timestep="0.005" integrator="implicitfast"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.5"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="shoulder" joint="shoulder" kp="400" kv="20"/>
    <position name="elbow" joint="elbow" kp="200" kv="10"/>
  </actuator>
  <keyframe>
    <key name="low" qpos="0.3 0.2" qvel="0 0" ctrl="0.3 0.2"/>
    <key name="high" qpos="-0.8 1.1" qvel="0.1 0" ctrl="-0.8 1.1"/>
  </keyframe>
</mujoco>
"""


@pytest.fixture
def arm(tmp_path: Path) -> Path:
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    return path


def test_keyframe_zero_by_default_and_by_name(arm: Path) -> None:
    first = co.load_scene(arm)
    np.testing.assert_array_equal(first.q0, [0.3, 0.2])
    assert first.control is not None and first.control.values["u"] == (0.3, 0.2)
    high = co.load_scene(arm, keyframe="high")
    np.testing.assert_array_equal(high.q0, [-0.8, 1.1])
    np.testing.assert_array_equal(high.v0, [0.1, 0.0])
    assert high.control is not None and high.control.values["u"] == (-0.8, 1.1)


def test_toml_keyframe_and_its_control_table(arm: Path, tmp_path: Path) -> None:
    scene = tmp_path / "arm.toml"
    scene.write_text(f'[scene]\ndt = 0.005\nduration = 0.1\n[system]\ntype = "mjcf"\nfile = "{arm.name}"\n'
                     'keyframe = "high"\n')
    loaded = co.load_scene(scene)
    np.testing.assert_array_equal(loaded.q0, [-0.8, 1.1])
    assert loaded.control is not None and loaded.control.values["u"] == (-0.8, 1.1)
    assert co.load_scene(scene, keyframe="low").control.values["u"] == (0.3, 0.2)  # type: ignore[union-attr]
    scene.write_text(scene.read_text() + '[control]\ntype = "constant"\nu = 0.0\n')
    assert co.load_scene(scene).control.values["u"] == (0.0, 0.0)  # type: ignore[union-attr]


def test_unknown_keyframe_is_one_line_naming_the_known_ones(arm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SceneError, match=r"unknown keyframe .middle.; known keyframes of arm\.xml: low, high"):
        co.load_scene(arm, keyframe="middle")
    assert main(["run", str(arm), "--keyframe", "middle", "--no-plot", "--no-progress"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "known keyframes of arm.xml: low, high" in error
    with pytest.raises(SceneError, match="only an MJCF scene has keyframes"):
        co.load_scene("box_slide", keyframe="low")


@pytest.mark.parametrize("name", ["low", "high"])
def test_the_arm_holds_its_keyframe_as_under_mj_step(arm: Path, name: str) -> None:
    scene = co.load_scene(arm, keyframe=name)
    trajectory = co.simulate(scene, formulation="regularized", solver="clarabel", options={"params": "model"},
                             duration=100 * scene.dt)
    model = mujoco.MjModel.from_xml_path(str(arm))
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(name).id)
    for _ in range(100):
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(trajectory.q[-1], data.qpos, rtol=0, atol=1e-8)
    np.testing.assert_allclose(trajectory.q[-1], scene.q0, atol=0.05)  # held near its pose (gravity sag only)


#: A thumb keyframed 0.26 rad beyond its range and a split tendon keyframed past its length range.
HAND = """
<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 0"/>
  <worldbody>
    <body><joint name="thumb" type="hinge" axis="0 0 1" range="-0.5 0.5" limited="true"/>
      <geom type="capsule" size=".02" fromto="0 0 0 .1 0 0"/></body>
    <body pos="0 .2 0"><joint name="left" type="slide" axis="1 0 0"/><geom type="box" size=".02 .02 .02"/></body>
    <body pos="0 .4 0"><joint name="right" type="slide" axis="1 0 0"/><geom type="box" size=".02 .02 .02"/></body>
  </worldbody>
  <tendon>
    <fixed name="split" limited="true" range="-0.1 0.1">
      <joint joint="left" coef="1"/><joint joint="right" coef="-1"/>
    </fixed>
  </tendon>
  <keyframe><key name="bad" qpos="0.76 0.1 -0.05"/><key name="good" qpos="0.2 0 0"/></keyframe>
</mujoco>
"""


def test_a_limit_violated_at_step_0_is_one_warning_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "hand.xml"
    path.write_text(HAND)
    scene = co.load_scene(path)
    with pytest.warns(InitialLimitViolationWarning) as caught:
        co.simulate(scene, formulation="ccp", solver="clarabel", duration=scene.dt)
    messages = [str(w.message) for w in caught if issubclass(w.category, InitialLimitViolationWarning)]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert "joint 'thumb' upper limit is violated by 0.26" in messages[0] and "(and 1 other limit)" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitialLimitViolationWarning)
        co.simulate(co.load_scene(path, keyframe="good"), formulation="ccp", solver="clarabel", duration=scene.dt)
        co.simulate(scene, formulation="ccp", solver="clarabel", duration=scene.dt, penetration_tolerance=0.3)
