"""The ``mujoco`` reference row judged fairly: contactopt's residuals of MuJoCo's own answer
are at MuJoCo's solver tolerance on models with ``frictionloss`` (dof and tendon boxes), and
its recorded time is ``mj_step`` alone (:mod:`contactopt.integrators.mujoco_stepper`)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

#: An arm with dry friction on both joints and on a tendon across them, and a box on a floor.
DRY = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" frictionloss="0.5" damping="0.2"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".5"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" frictionloss="0.2"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".3"/>
      </body>
    </body>
    <body pos="0.5 0 0.3"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
  <tendon>
    <fixed name="pair" frictionloss="0.3"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="1"/></fixed>
  </tendon>
</mujoco>
"""


def worst_residuals(path: Path, **options: float | str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trajectory = co.simulate(co.load_scene(path), formulation="mujoco", duration=0.5, options=options)
    assert all("constraint rows; residuals checked in" in record.message for record in trajectory.steps)
    return np.array([[r.residuals.primal, r.residuals.dual, r.residuals.gap] for r in
                     (record for record in trajectory.steps)]).max(axis=0)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_mujoco_answer_has_residuals_at_its_tolerance_with_frictionloss(tmp_path: Path, cone: str) -> None:
    path = tmp_path / "dry.xml"
    path.write_text(DRY)
    loose = worst_residuals(path, cone=cone)
    assert loose.max() < 1e-3  # was 0.85 here (3.4 on robot models): a box's duals split by least squares
    tight = worst_residuals(path, cone=cone, tolerance=1e-14, iterations=1000)
    assert tight.max() < 1e-6 and tight.max() <= loose.max()
