"""The cap on the speed at which rigid formulations remove a penetration
(:mod:`contactopt.formulations.recovery`): an MJCF box starting 10 mm in the floor is pushed out
at ``max_recovery_speed`` (0.1 m/s by default on MJCF models), not launched at ``phi / h``;
the textbook scenes keep the references' exact ``phi / h``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

pytestmark = [pytest.mark.filterwarnings("ignore::contactopt.core.errors.InitialPenetrationWarning"),
              pytest.mark.filterwarnings("ignore::contactopt.formulations.gauss.FrictionIgnoredWarning")]

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"

BOX_XML = """
<mujoco><option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.09"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
  </worldbody>
</mujoco>
"""

CASES = [("ccp", "clarabel"), ("anitescu", "clarabel"), ("lcp", "lemke"), ("gauss", "clarabel")]


@pytest.mark.parametrize(("formulation", "solver"), CASES)
def test_box_starting_in_the_floor_is_not_launched(tmp_path: Path, formulation: str, solver: str) -> None:
    """Uncapped, one step of 2 ms gives the box 0.01 m / h = 5 m/s upward (about 1.3 m of
    flight). With MJCF's default cap (0.1 m/s) its upward speed never exceeds the cap (plus
    the step's gravity), and it still leaves the penetration, at 0.1 m/s, within 0.1 s."""
    path = tmp_path / "sunk_box.xml"
    path.write_text(BOX_XML)
    scene = co.load_scene(path)
    h = 0.002
    capped = co.simulate(scene, formulation=formulation, solver=solver, dt=h, duration=0.14)
    assert all(step.status == co.Status.OPTIMAL for step in capped.steps)
    assert capped.v[:, 2].max() <= 0.1 + 1e-9
    assert capped.v[1, 2] == pytest.approx(0.1, abs=1e-6)  # the cap, not 5 m/s
    assert capped.q[-1, 2] == pytest.approx(0.1, abs=2e-3 + 1e-9)  # resting on the floor
    loose = co.simulate(scene, formulation=formulation, solver=solver, dt=h, duration=h,
                        options={"max_recovery_speed": float("inf")})
    assert loose.v[1, 2] == pytest.approx(0.01 / h, rel=1e-3)
    fast = co.simulate(scene, formulation=formulation, solver=solver, dt=h, duration=h,
                       options={"max_recovery_speed": 1.0})
    assert fast.v[1, 2] == pytest.approx(1.0, abs=1e-6)


def test_textbook_cart_wall_is_unchanged() -> None:
    """The cart against the wall keeps the reference's exact ``phi / h`` (no default cap): a
    cart started 1 cm inside the wall leaves it in one step, at 0.01 / h."""
    scene = co.load_scene(PROBLEMS / "cart_wall.toml")
    assert scene.system.default_max_recovery_speed == float("inf")
    inside = dataclasses.replace(scene, q0=np.array([-0.01]), v0=np.zeros(1))
    h = 0.01
    trajectory = co.simulate(inside, formulation="gauss", solver="clarabel", dt=h, duration=h)
    assert trajectory.q[1, 0] == pytest.approx(0.0, abs=1e-9)
    capped = co.simulate(inside, formulation="gauss", solver="clarabel", dt=h, duration=h,
                         options={"max_recovery_speed": 0.1})
    assert capped.q[1, 0] == pytest.approx(-0.01 + 0.1 * h, abs=1e-9)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), "fast", True])
def test_bad_recovery_speeds_are_refused(value: object) -> None:
    scene = co.load_scene(PROBLEMS / "cart_wall.toml")
    with pytest.raises(co.OptionError, match="max_recovery_speed must be a number > 0"):
        co.simulate(scene, formulation="ccp", solver="clarabel", dt=0.01, duration=0.01,
                    options={"max_recovery_speed": value})
