"""Exported steps are the steps the run solved, control included: ``export`` re-forms each
step with the input its record holds (:func:`contactopt.analysis.export.steps.recorded_control`),
so a pushed box's exported program gives the run's next velocity and its FCLIB problem the
pushed free velocity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis.export import export_run
from contactopt.analysis.export.fclib import fclib_local_problem
from contactopt.analysis.export.steps import step_programs
from contactopt.programs.fclib_io import read_fclib

pytest.importorskip("mujoco")
pytest.importorskip("h5py")

#: A 1 kg box on x/y/z slides, pushed along x by a motor (ctrl 8 N against friction 0.5 x 9.81 N).
PUSHED = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="0.5"/>
    <body pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1" mass="1" friction="0.5"/>
    </body>
  </worldbody>
  <actuator><motor name="push" joint="x" gear="1"/></actuator>
</mujoco>
"""
PUSH = 8.0


@pytest.fixture
def pushed(tmp_path: Path) -> tuple[co.Scene, co.Trajectory]:
    path = tmp_path / "pushed.xml"
    path.write_text(PUSHED)
    scene = co.load_scene(path)
    traj = co.simulate(scene, formulation="ccp", solver="clarabel", duration=5 * scene.dt,
                       controller={"type": "constant", "u": [PUSH]})
    assert traj.completed and traj.v[-1, 0] > 0.1  # the push wins over friction: the box slides
    return scene, traj


def test_an_exported_step_gives_the_run_s_next_velocity(pushed: tuple[co.Scene, co.Trajectory]) -> None:
    scene, traj = pushed
    for k, _, program in step_programs(scene, traj)[1:4]:
        v_next = np.asarray(co.solve(program, "clarabel").x[: scene.system.nv])
        np.testing.assert_allclose(v_next, traj.v[k + 1], rtol=0, atol=1e-9)


def test_the_fclib_problem_holds_the_push(pushed: tuple[co.Scene, co.Trajectory], tmp_path: Path) -> None:
    scene, traj = pushed
    written = export_run(scene, traj, tmp_path / "export", formats="fclib")
    k = 2
    stored = read_fclib(written["fclib"] / f"step_{k:06d}.hdf5")
    args = (scene, traj.q[k], traj.v[k], scene.dt, float(traj.t[k]))
    pushed_q = fclib_local_problem(*args, control=[PUSH]).q
    free_q = fclib_local_problem(*args).q
    np.testing.assert_allclose(stored.q, pushed_q, rtol=0, atol=1e-12)
    # the push adds h F / m to the free sliding velocity along x: a tangent row of the contact
    assert np.abs(pushed_q - free_q).max() == pytest.approx(scene.dt * PUSH / 1.0, rel=1e-9)
