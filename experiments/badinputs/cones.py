"""Bad inputs about contact cones and penetration recovery (issue "Real robots, right and
fast"): invalid ``max_recovery_speed`` values (API and CLI), condim values MuJoCo itself
refuses, negative or non-finite friction coefficients (sliding, torsional, rolling; geoms and
explicit pairs), which MuJoCo accepts and would hide by taking the maximum of two geoms, an
unknown ``extra_friction``; and two answers: a condim-6 model runs under ``lcp`` with its
rolling rows, and ``sap`` holds a joint whose torque is below its ``frictionloss``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import ROOT, Case, api_call, cart_scene, cli_call, co

CART = str(ROOT / "problems" / "cart_wall.toml")

#: A sphere on a plane; ``{plane}`` and ``{sphere}`` are attributes of the two geoms.
MODEL = """<mujoco><option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" {plane}/>
    <body pos="0 0 0.1"><freejoint/><geom name="ball" type="sphere" size="0.1" mass="1" {sphere}/></body>
  </worldbody>
  {extra}
  <keyframe><key qpos="0 0 0.1 1 0 0 0" qvel="1 0 0 0 10 0"/></keyframe>
</mujoco>
"""

WHEEL = """<mujoco><option timestep="0.002" gravity="0 0 0"/>
  <worldbody><body pos="0 0 1">
    <joint name="hinge" type="hinge" axis="0 0 1" frictionloss="0.5"/>
    <geom type="cylinder" size="0.2 0.05" mass="2"/>
  </body></worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>
"""


def mjcf(plane: str = "", sphere: str = "", extra: str = "", formulation: str | None = None,
         solver: str | None = None) -> Callable[[Path], Any]:
    """Load the model (and run 20 steps of ``formulation`` when given)."""
    def run(tmp: Path) -> Any:
        path = tmp / "model.xml"
        path.write_text(MODEL.format(plane=plane, sphere=sphere, extra=extra))
        scene = co.load_scene(path)
        if formulation is None:
            return scene
        return co.simulate(scene, formulation=formulation, solver=solver, duration=0.04)
    return run


def toml_extra_friction(value: str) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        (tmp / "model.xml").write_text(MODEL.format(plane="", sphere="", extra=""))
        path = tmp / "scene.toml"
        path.write_text(f'[scene]\nname = "x"\ndt = 0.002\nduration = 0.01\nformulation = "ccp"\n'
                        f'solver = "clarabel"\n\n[system]\ntype = "mjcf"\nfile = "model.xml"\n'
                        f'extra_friction = "{value}"\n')
        return co.load_scene(path)
    return run


def recovery(value: Any) -> Callable[[Path], Any]:
    return api_call(lambda: co.simulate(cart_scene(), formulation="ccp", solver="clarabel", duration=0.2,
                                        options={"max_recovery_speed": value}))


def rolled(result: Any) -> str | None:
    """The condim-6 ball's rolling rows carried impulses and every step was solved."""
    if not all(step.status.usable for step in result.steps):
        return "a step failed"
    rolling = np.array([step.angular_friction for step in result.steps if step.angular_friction.size])
    return None if rolling.size and np.abs(rolling).max() > 0 else "no torsional/rolling impulse recorded"


def stuck_wheel(tmp: Path) -> Any:
    path = tmp / "wheel.xml"
    path.write_text(WHEEL)
    scene = co.load_scene(path)
    scene.system.set_control(np.array([0.3]))  # below the frictionloss 0.5 N m
    return co.simulate(scene, formulation="sap", solver="newton", dt=0.002, duration=0.1)


def not_moving(result: Any) -> str | None:
    speed = float(np.abs(result.v[-1]).max())
    return None if speed < 1e-4 else f"the stuck joint moves at {speed:g} rad/s"


def cases() -> list[Case]:
    api, cli, model, answer = "API", "CLI", "MJCF model", "answer"
    return [
        Case(api, "max_recovery_speed = 0", recovery(0)),
        Case(api, "max_recovery_speed negative", recovery(-0.1)),
        Case(api, "max_recovery_speed NaN", recovery(float("nan"))),
        Case(api, "max_recovery_speed a string", recovery("fast")),
        Case(api, "max_recovery_speed = true", recovery(True)),
        Case(api, "max_recovery_speed = 'fast' on sap (a speed is a number)",
             api_call(lambda: co.simulate(cart_scene(), formulation="sap", solver="clarabel", duration=0.2,
                                          options={"max_recovery_speed": "fast"}))),
        Case(cli, "-o max_recovery_speed=-1", cli_call("run", CART, "-f", "anitescu", "-o", "max_recovery_speed=-1",
                                                       "--no-plot", "--no-progress")),
        Case(cli, "-o max_recovery_speed=0", cli_call("run", CART, "-f", "lcp", "-s", "lemke", "-o",
                                                      "max_recovery_speed=0", "--no-plot", "--no-progress")),
        Case(model, "condim = 2 (MuJoCo refuses it)", mjcf(sphere='condim="2"')),
        Case(model, "condim = 5 (MuJoCo refuses it)", mjcf(plane='condim="5"')),
        Case(model, "condim = 0 (MuJoCo refuses it)", mjcf(sphere='condim="0"')),
        Case(model, "negative torsional friction", mjcf(sphere='condim="4" friction="0.5 -0.01 0.0001"')),
        Case(model, "negative rolling friction", mjcf(plane='condim="6" friction="0.5 0.005 -0.001"')),
        Case(model, "negative sliding friction", mjcf(sphere='friction="-0.5 0.005 0.0001"')),
        Case(model, "NaN friction", mjcf(sphere='friction="nan 0.005 0.0001"')),
        Case(model, "negative torsional friction of an explicit pair",
             mjcf(extra='<contact><pair geom1="floor" geom2="ball" condim="4" friction="0.5 0.5 -0.01 0.001 0.001"/>'
                        '</contact>')),
        Case(model, "extra_friction = 'torsional' (unknown)", toml_extra_friction("torsional")),
        Case(answer, "condim 6 under lcp: rolling rows in the cone", mjcf(plane='condim="6"', sphere='condim="6"',
                                                                          formulation="lcp", solver="lemke"),
             expect="answer", check=rolled),
        Case(answer, "sap holds a joint below its frictionloss", stuck_wheel, expect="answer", check=not_moving),
    ]
