"""Bad inputs of MJCF models (issue "Real robots, right and fast"): keyframe names that do
not exist (API, TOML, every CLI subcommand that loads a scene), keyframes on a model without
any, joints and tendons outside their limits at step 0 (one warning naming the limit), step
matrices no convex program can take, and derivatives of RK4 steps (``params=model``'s four
stage programs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import Case, cli_call, co

#: A two-joint arm with a limited elbow, a tendon across both joints and two named keyframes.
ARM = """<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.005" integrator="{integrator}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" limited="true" range="-1 1"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="pair" limited="true" range="-1.5 1.5">
      <joint joint="shoulder" coef="1"/><joint joint="elbow" coef="1"/>
    </fixed>
  </tendon>
  <actuator>
    <position name="shoulder" joint="shoulder" kp="400" kv="20"/>
    <position name="elbow" joint="elbow" kp="200" kv="10"/>
    {extra}
  </actuator>
  {keyframes}
</mujoco>
"""
KEYFRAMES = """<keyframe>
    <key name="rest" qpos="0.2 0.3" ctrl="0.2 0.3 {pusher}"/>
    <key name="reach" qpos="-0.5 0.8" ctrl="-0.5 0.8 {pusher}"/>
    <key name="thumb_out" qpos="0.2 1.26" ctrl="0.2 0.9 {pusher}"/>
    <key name="pair_out" qpos="0.9 0.9" ctrl="0.6 0.6 {pusher}"/>
  </keyframe>"""


def arm(integrator: str = "implicitfast", extra: str = "", keyframes: bool = True) -> str:
    """The arm; ``extra``: more actuators."""
    keys = KEYFRAMES.format(pusher="0" if extra else "") if keyframes else ""
    return ARM.format(integrator=integrator, extra=extra, keyframes=keys)


#: An actuator whose force grows with the joint's speed (a positive velocity bias).
PUSHER = '<general name="pusher" joint="shoulder" biastype="affine" biasprm="0 0 2000"/>'



def model_file(text: str) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        path = tmp / "arm.xml"
        path.write_text(text)
        return path
    return write


def loaded(text: str, keyframe: str | None = None) -> Callable[[Path], Any]:
    """``load_scene`` of the model (with ``keyframe``)."""
    return lambda tmp: co.load_scene(model_file(text)(tmp), keyframe=keyframe)


def toml_scene(system_keys: str, text: str = arm(), extra: str = "") -> Callable[[Path], Any]:
    """A TOML scene of the arm with ``system_keys`` in ``[system]``."""
    def run(tmp: Path) -> Any:
        model_file(text)(tmp)
        path = tmp / "scene.toml"
        path.write_text(f'[scene]\nname = "arm"\ndt = 0.005\nduration = 0.02\nformulation = "ccp"\n'
                        f'[system]\ntype = "mjcf"\nfile = "arm.xml"\n{system_keys}\n{extra}')
        return co.load_scene(path)
    return run


def simulated(text: str, keyframe: str | None = None, formulation: str = "ccp",
              **options: Any) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        scene = co.load_scene(model_file(text)(tmp), keyframe=keyframe)
        return co.simulate(scene, formulation=formulation, solver="clarabel", duration=4 * scene.dt,
                           options=options or None)
    return run


def cli_on_arm(*argv: str) -> Callable[[Path], Any]:
    """The CLI on the arm's file (``{model}`` in an argument)."""
    def run(tmp: Path) -> Any:
        path = model_file(arm())(tmp)
        return cli_call(*(a.replace("{model}", str(path)) for a in argv))(tmp)
    return run


def _holds(control: Any) -> Callable[[Any], str | None]:
    def check(scene: Any) -> str | None:
        held = None if scene.control is None else scene.control.values.get("u")
        return None if held == control else f"held control {held}, expected {control}"
    return check


def _reach_pose(scene: Any) -> str | None:
    if not np.array_equal(scene.q0, [-0.5, 0.8]):
        return f"q0 = {scene.q0.tolist()}, expected keyframe 'reach' [-0.5, 0.8]"
    return _holds((-0.5, 0.8))(scene)


def cases() -> list[Case]:
    key, limits, step = "MJCF keyframes", "MJCF limits at step 0", "MJCF step matrix"
    no_keys = arm(keyframes=False)
    return [
        # --- keyframes ------------------------------------------------------------------------
        Case(key, "unknown keyframe name (API)", loaded(arm(), "home")),
        Case(key, "keyframe on a model without keyframes (API)", loaded(no_keys, "rest")),
        Case(key, "unknown [system] keyframe (TOML)", toml_scene('keyframe = "home"')),
        Case(key, "[system] keyframe a number", toml_scene("keyframe = 1")),
        Case(key, "[system] keyframe empty", toml_scene('keyframe = ""')),
        Case(key, "[system] keyframe on a model without keyframes", toml_scene('keyframe = "rest"', no_keys)),
        Case(key, "run --keyframe unknown", cli_on_arm("run", "{model}", "--keyframe", "home", "--no-plot",
                                                       "--no-progress")),
        Case(key, "compare --keyframe unknown", cli_on_arm("compare", "{model}", "--keyframe", "home", "--no-plot",
                                                           "--no-progress", "--executor", "serial")),
        Case(key, "export --keyframe unknown", cli_on_arm("export", "{model}", "--keyframe", "home",
                                                          "--no-progress", "--out", "{tmp}/export")),
        Case(key, "program --keyframe unknown", cli_on_arm("program", "{model}", "--keyframe", "home")),
        Case(key, "render --keyframe unknown", cli_on_arm("render", "{model}", "--keyframe", "home",
                                                          "--no-progress", "--out", "{tmp}/video.mp4")),
        Case(key, "--keyframe on a scene of another system", cli_call("run", "box_slide", "--keyframe", "rest",
                                                                      "--no-plot", "--no-progress")),
        Case(key, "keyframe by name: its pose and its ctrl held", loaded(arm(), "reach"), expect="answer",
             check=_reach_pose),
        Case(key, "a [control] table overrides the keyframe's ctrl",
             toml_scene('keyframe = "reach"', extra='[control]\ntype = "constant"\nu = 0.0\n'),
             expect="answer", check=_holds((0.0, 0.0))),
        # --- limits violated at the start ------------------------------------------------------
        Case(limits, "joint 0.26 rad outside its range at step 0", simulated(arm(), "thumb_out"), expect="warning"),
        Case(limits, "tendon outside its range at step 0", simulated(arm(), "pair_out"), expect="warning"),
        Case(limits, "joint outside its range from a TOML scene's initial q",
             lambda tmp: co.simulate(toml_scene("", extra="[initial]\nq = [0.0, -1.5]\n")(tmp), solver="clarabel"),
             expect="warning"),
        # --- step matrix and integrators -------------------------------------------------------
        Case(step, "velocity bias +2000: M - h D not positive definite", simulated(arm(extra=PUSHER))),
        Case(step, "negative kv in the XML (MuJoCo's parse error, one line)", loaded(arm().replace(
            'kv="20"', 'kv="-20"'))),
        Case(step, "implicit integrator with Coriolis terms (symmetric part for the QPs)", _spinning_implicit(),
             expect="warning"),
        Case(step, "sensitivities of params=model on an RK4 model (four stage programs a step)", _rk4_sensitivities()),
    ]


def _rk4_sensitivities() -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        scene = co.load_scene(model_file(arm("RK4"))(tmp))
        return co.simulate(scene, formulation="regularized", solver="clarabel", duration=4 * scene.dt,
                           options={"params": "model"}, sensitivities=["v0"])
    return run


def _spinning_implicit() -> Callable[[Path], Any]:
    """A free box spinning about a non-principal axis under the implicit integrator."""
    text = """<mujoco><option integrator="implicit" gravity="0 0 0"/><worldbody>
      <body><freejoint/><geom type="box" size=".3 .1 .05"/></body></worldbody>
      <keyframe><key qpos="0 0 0 1 0 0 0" qvel="0 0 0 3 .5 4"/></keyframe></mujoco>"""
    return simulated(text, formulation="ccp")
