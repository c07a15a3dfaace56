"""MuJoCo's noslip pass (``opt.noslip_iterations > 0``) is not part of the convex program
``regularized -o params=model`` solves (:class:`contactopt.systems.mjcf.native.NoslipNotReproducedWarning`):
one warning names it, and the steps equal ``mj_step`` with the pass off, not with it on (a box
held on a slope by soft friction creeps down under the regularization; noslip stops the creep)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")
from contactopt.systems.mjcf.native import NoslipNotReproducedWarning  # noqa: E402

#: A box resting on a 20 degree slope (gravity tilted) with mu = 1: it sticks, up to MuJoCo's creep.
SLOPE = """
<mujoco>
  <option timestep="0.005" gravity="3.355 0 -9.218" noslip_iterations="{noslip}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1" friction="1"/>
    <body pos="0 0 0.1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1" friction="1"/></body>
  </worldbody>
</mujoco>
"""
STEPS = 20


def _path(tmp_path: Path, noslip: int) -> Path:
    path = tmp_path / f"slope_{noslip}.xml"
    path.write_text(SLOPE.format(noslip=noslip))
    return path


def _mj_steps(path: Path, noslip: int, traj: co.Trajectory) -> float:
    """The largest one-step distance of ``traj`` to a converged ``mj_step`` with ``noslip`` sweeps."""
    model = mujoco.MjModel.from_xml_path(str(path))
    model.opt.noslip_iterations, model.opt.tolerance, model.opt.iterations = noslip, 1e-15, 1000
    data = mujoco.MjData(model)
    worst = 0.0
    for k in range(STEPS):
        data.qpos[:], data.qvel[:] = traj.q[k], traj.v[k]
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.abs(data.qpos - traj.q[k + 1]).max()))
    return worst


def test_noslip_is_named_once_and_params_model_follows_the_main_solve(tmp_path: Path) -> None:
    path = _path(tmp_path, noslip=5)
    with pytest.warns(NoslipNotReproducedWarning, match='noslip_iterations="5"') as caught:
        traj = co.simulate(co.load_scene(path), formulation="regularized", solver="clarabel",
                           options={"params": "model"}, duration=STEPS * 0.005)
    assert sum(issubclass(w.category, NoslipNotReproducedWarning) for w in caught) == 1
    assert traj.completed
    assert _mj_steps(path, 0, traj) < 1e-12  # MuJoCo's main solve: the same steps
    assert _mj_steps(path, 5, traj) > 1e-7  # its noslip pass stops a creep the program keeps


def test_no_warning_without_noslip(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoslipNotReproducedWarning)
        co.simulate(co.load_scene(_path(tmp_path, noslip=0)), formulation="regularized", solver="clarabel",
                    options={"params": "model"}, duration=2 * 0.005)
