"""Robots (issue 13, items 2 and 3): dm-control's suite models from the installed package, and
the shipped quadruped standing under PD control.

* Each suite scene loads ``dm_control/suite/NAME.xml`` of the installed package and runs a few
  steps with its controller under ``regularized`` and MuJoCo's own ``mj_step``; the controller's
  ctrl reaches MuJoCo (the suite's motors exert ``gain * clamp(ctrl, ctrlrange)``). Skipped with
  a reason when dm-control is missing (CI installs it through the ``dev`` extra).
* The quadruped (``problems/quadruped_stand.toml``) stands under every time-stepping
  formulation: the run completes, no foot sinks 2 mm into the floor, and the trunk stays at the
  standing height (``0.2833`` m at the start, less the knee sag of load / kp ~ 0.03 rad, i.e.
  ~3 mm: within [0.275, 0.29]) and upright. The default suite checks the first 0.1 s (the
  landing and the start of the settling); ``@pytest.mark.slow`` checks the full 2 s.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.systems.mjcf import suite

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["cartpole", "hopper", "walker", "cheetah", "humanoid", "finger", "ball_in_cup"]
TIME_STEPPING = [("gauss", "clarabel"), ("lcp", "lemke"), ("anitescu", "clarabel"), ("ccp", "clarabel"),
                 ("regularized", "clarabel"), ("sap", "newton")]
needs_suite = pytest.mark.skipif(not suite.available(), reason=f"dm-control is not installed: {suite.INSTALL_HINT}")


@needs_suite
@pytest.mark.parametrize("name", SUITE)
def test_dm_control_suite_models_load_and_run(name: str) -> None:
    mujoco = pytest.importorskip("mujoco")
    scene = co.load_scene(ROOT / "problems" / f"dm_{name}.toml")
    model = scene.system.model  # type: ignore[attr-defined]
    assert Path(scene.system.path).parent == suite.suite_dir()  # type: ignore[attr-defined]
    assert scene.control is not None and scene.system.control_size == model.nu > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = co.simulate(scene, formulation="regularized", solver="clarabel", duration=5 * scene.dt)
        # residuals=False: contactopt's re-solve of MuJoCo's problem does not take the
        # frictionloss rows of finger (contactopt.analysis.reproduce)
        ref = co.simulate(scene, formulation="mujoco", duration=5 * scene.dt, options={"residuals": False})
    assert ours.completed and ref.completed and np.all(np.isfinite(ours.q))
    assert ours.controls().shape == (5, model.nu) and np.array_equal(ours.controls(), ref.controls())
    # the ctrl of step 4 drives MuJoCo's actuators: force = gain * clamp(ctrl, ctrlrange) (times gear in joint space)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = ours.q[4], ours.v[4], ours.controls()[4]
    mujoco.mj_forward(model, data)
    low, high = model.actuator_ctrlrange.T
    clamped = np.where(model.actuator_ctrllimited, np.clip(ours.controls()[4], low, high), ours.controls()[4])
    assert np.allclose(data.actuator_force, model.actuator_gainprm[:, 0] * clamped, atol=1e-12)
    assert np.abs(data.actuator_force).max() > 0


def test_list_problems_shows_suite_scenes_or_how_to_get_them(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if suite.available():
        assert main(["list", "problems"]) == 0
        printed = " ".join(capsys.readouterr().out.split())  # descriptions wrap at the terminal's width
        assert "dm_hopper mjcf dm-control suite: one-legged hopper" in printed
    monkeypatch.setattr(suite, "suite_dir", lambda: None)  # as without the package
    assert main(["list", "problems"]) == 0
    printed = capsys.readouterr().out
    assert [line.split()[:2] for line in printed.splitlines() if "dm_hopper" in line] == [["dm_hopper", "mjcf"]]
    assert f"dm_hopper mjcf (needs dm-control: {suite.INSTALL_HINT})" in " ".join(printed.split())  # wrapped
    with pytest.raises(co.ContactoptError, match=r"dm_hopper\.toml: system\.file: 'dm_control:hopper' needs the "
                                                  r"dm-control package: pip install"):
        co.load_scene(ROOT / "problems/dm_hopper.toml")


def _check_standing(traj: co.Trajectory) -> None:
    assert traj.completed, traj.message
    penetration = -min(record.phi.min() for record in traj.steps if record.phi.size)
    assert penetration < 2e-3
    height, upright = traj.q[:, 2], traj.q[:, 3]  # trunk z and quaternion w
    assert height.min() > 0.275 and height.max() < 0.29
    assert upright.min() > math.cos(0.05 / 2)  # tilted by less than 0.05 rad
    assert any(record.impulses[:, 0].sum() > 0 for record in traj.steps if record.impulses.size)  # it is on its feet


@pytest.mark.parametrize(("formulation", "solver"), TIME_STEPPING)
def test_quadruped_stands(formulation: str, solver: str) -> None:
    pytest.importorskip("mujoco")
    scene = co.load_scene(ROOT / "problems/quadruped_stand.toml")
    _check_standing(co.simulate(scene, formulation=formulation, solver=solver, duration=0.1))


@pytest.mark.slow
@pytest.mark.parametrize(("formulation", "solver"), TIME_STEPPING)
def test_quadruped_stands_two_seconds(formulation: str, solver: str) -> None:
    pytest.importorskip("mujoco")
    scene = co.load_scene(ROOT / "problems/quadruped_stand.toml")
    traj = co.simulate(scene, formulation=formulation, solver=solver, duration=2.0)
    _check_standing(traj)
    # settled: the knees sag by the load over the gain, ~1 N m / 30 = 0.033 rad
    knees = traj.q[-1, 8::2]
    assert np.all(np.abs(knees + 1.0 - (-0.033)) < 0.01) and np.abs(traj.v[-1]).max() < 1e-2


def test_robots_experiment_quick_run_writes_its_summary(tmp_path: Path) -> None:
    """experiments/robots.py on one small model for a few steps: a row per method, each completed or
    refused with a one-line reason, and the summary, table and figure written."""
    pytest.importorskip("mujoco")
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "robots.py"), "--quick", "--steps", "3",
                           "--models", "own/position_arm", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "summary.json").read_text())["rows"]
    assert rows[0]["method"] == "mujoco" and len(rows) == 10  # mujoco and the 9 methods of robot_cells.METHODS
    for row in rows:
        assert row["status"] == "completed" or row["status"].startswith(("refused: ", "stopped: ", "time limit"))
        assert "\n" not in row["status"]
        assert row["reason"] == "" or row["spins"]  # a reason explains a launch, nothing else
    assert all(row["steps"] == 3 for row in rows if row["status"] == "completed")
    assert (tmp_path / "summary.csv").is_file() and (tmp_path / "ratios.png").is_file()
    assert "x mj_step" in done.stdout
