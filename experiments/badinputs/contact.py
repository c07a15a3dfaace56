"""Bad inputs about contact geometry (rigid3d body pairs, the ground plane's keys, initial
penetration): bodies placed inside each other or the ground run with one
InitialPenetrationWarning naming the contact; a stack must rest; malformed plane keys and a
box pair without MuJoCo are one line."""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import ROOT, Case, api_call, co, raw_scene

BOX = """[[system.bodies]]
name = "{name}"
shape = "box"
size = [0.1, 0.1, 0.1]
mass = 1.0
position = {position}
"""
SPHERE = """[[system.bodies]]
name = "{name}"
shape = "sphere"
radius = 0.1
mass = 1.0
position = {position}
"""


def scene(system_keys: str = "", bodies: str = BOX.format(name="box", position="[0.0, 0.0, 0.1]"),
          duration: float = 0.02) -> str:
    """A rigid3d scene: ``system_keys`` added to ``[system]``, then the bodies."""
    return f"""[scene]
name = "contact"
dt = 1e-2
duration = {duration}
formulation = "anitescu"
solver = "clarabel"

[system]
type = "rigid3d"
{system_keys}

{bodies}
[contact]
mu = 0.5
"""


def simulated(text: str, **options: Any) -> Callable[[Path], Any]:
    """Load the scene and run it (the warning comes from the run)."""
    def run(tmp: Path) -> Any:
        return co.simulate(raw_scene(text)(tmp), **options)
    return run


@contextlib.contextmanager
def _without_mujoco() -> Iterator[None]:
    saved = sys.modules.get("mujoco")
    sys.modules["mujoco"] = None  # type: ignore[assignment]  # import mujoco raises ImportError
    try:
        yield
    finally:
        if saved is None:
            del sys.modules["mujoco"]
        else:
            sys.modules["mujoco"] = saved


def without_mujoco(text: str) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        with _without_mujoco():
            return raw_scene(text)(tmp)
    return run


def _stack_rests(traj: Any) -> str | None:
    top = traj.q[:, 9]
    if not traj.completed:
        return f"stopped: {traj.message}"
    if np.abs(top - 0.3).max() > 1e-6 or np.abs(traj.v).max() > 1e-6:
        return f"the top box moved: z in [{top.min():.6g}, {top.max():.6g}], |v| <= {np.abs(traj.v).max():.3g}"
    return None


def _incline_slides(traj: Any) -> str | None:
    theta = math.radians(30)
    expected = 9.81 * (math.sin(theta) - 0.3 * math.cos(theta))
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    fitted = float(np.polyfit(traj.t[5:], (traj.v[:, :3] @ downhill)[5:], 1)[0])
    if abs(fitted - expected) > 1e-2 * expected:
        return f"acceleration {fitted:.6g} m/s^2, expected g (sin - mu cos) = {expected:.6g}"
    return None


def _stacked(top: str) -> str:
    return BOX.format(name="bottom", position="[0.0, 0.0, 0.1]") + "\n" + BOX.format(name="top", position=top)


def cases() -> list[Case]:
    geometry, penetration = "contact geometry", "initial penetration"
    incline = (ROOT / "problems" / "box_incline.toml").read_text()
    stack = (ROOT / "problems" / "box_stack.toml").read_text()
    normal_line = "ground_normal = [-0.49999999999999994, 0.0, 0.8660254037844387]"
    assert normal_line in incline
    return [
        # --- the ground plane's keys --------------------------------------------------------
        Case(geometry, "ground_normal the zero vector", raw_scene(scene("ground_normal = [0.0, 0.0, 0.0]"))),
        Case(geometry, "ground_normal with a NaN", raw_scene(scene("ground_normal = [nan, 0.0, 1.0]"))),
        Case(geometry, "ground_normal with an inf", raw_scene(scene("ground_normal = [0.0, inf, 1.0]"))),
        Case(geometry, "ground_normal of two numbers", raw_scene(scene("ground_normal = [0.0, 1.0]"))),
        Case(geometry, "ground_normal a string", raw_scene(scene('ground_normal = "up"'))),
        Case(geometry, "ground_point with a NaN", raw_scene(scene("ground_point = [0.0, nan, 0.0]"))),
        Case(geometry, "ground_normal with ground = false",
             raw_scene(scene("ground = false\nground_normal = [0.0, 0.0, 1.0]"))),
        Case(geometry, "box_pairs not a bool", raw_scene(scene('box_pairs = "yes"'))),
        Case(geometry, "collision_margin negative", raw_scene(scene("collision_margin = -0.01"))),
        Case(geometry, "collision_margin inf", raw_scene(scene("collision_margin = inf"))),
        Case(geometry, "box pair without MuJoCo installed", without_mujoco(stack)),
        Case(geometry, "penetration_tolerance negative",
             simulated(scene(), penetration_tolerance=-1e-3)),
        # --- placements the run must flag ---------------------------------------------------
        Case(penetration, "box 1 m under the ground",
             simulated(scene(bodies=BOX.format(name="box", position="[0.0, 0.0, -0.9]"))), expect="warning"),
        Case(penetration, "ground normal pointing down (box on the wrong side)",
             simulated(scene("ground_normal = [0.0, 0.0, -1.0]")), expect="warning"),
        Case(penetration, "box half inside a tilted plane",
             simulated(incline.replace("position = [-0.049999999999999996, 0.0, 0.08660254037844388]",
                                       "position = [0.0, 0.0, 0.0]").replace("duration = 0.5", "duration = 0.02")),
             expect="warning"),
        Case(penetration, "top box sunk 5 cm into the bottom box",
             simulated(scene(bodies=_stacked("[0.0, 0.0, 0.25]"))), expect="warning"),
        Case(penetration, "sphere inside a box",
             simulated(scene(bodies=BOX.format(name="box", position="[0.0, 0.0, 0.1]") + "\n"
                             + SPHERE.format(name="ball", position="[0.05, 0.0, 0.22]"))), expect="warning"),
        Case(penetration, "two spheres overlapping",
             simulated(scene(bodies=SPHERE.format(name="a", position="[0.0, 0.0, 0.1]") + "\n"
                             + SPHERE.format(name="b", position="[0.0, 0.05, 0.25]"))), expect="warning"),
        # --- answers that must be right -----------------------------------------------------
        Case(geometry, "two stacked boxes rest",
             api_call(lambda: co.simulate(co.load_scene(ROOT / "problems" / "box_stack.toml"), dt=1e-2,
                                          duration=0.3)), expect="answer", check=_stack_rests),
        Case(geometry, "box on a 30 degree incline slides at g (sin - mu cos)",
             simulated(incline, dt=2e-3, duration=0.3), expect="answer", check=_incline_slides),
        Case(geometry, "ground_normal not normalized (scaled by 7)",
             simulated(incline.replace(normal_line, "ground_normal = [-3.5, 0.0, 6.06217782649107]"),
                       dt=2e-3, duration=0.3), expect="answer", check=_incline_slides),
    ]
