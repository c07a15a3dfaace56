"""``compare``'s distance to MuJoCo (:mod:`contactopt.analysis.mujoco_distance`): with the ``mujoco``
row in the table, ``regularized -o params=model`` (MuJoCo's own program, solved by clarabel) stays
within rounding of ``mj_step``; a formulation with another contact model leaves it (its distance
and the time it first passes the tolerance recorded, matching the runs' own states); a table without
the ``mujoco`` row has no such columns."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis.mujoco_distance import TOLERANCE

pytest.importorskip("mujoco")
BOX = Path(__file__).resolve().parent.parent / "problems" / "urdf" / "box.urdf"


@pytest.fixture(scope="module")
def sliding_box() -> co.Scene:
    scene = co.load_scene(BOX, system_options={"floating_base": True, "ground": True, "backend": "mujoco"})
    return dataclasses.replace(scene, v0=np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0]), duration=0.06)


def test_distance_to_mujoco(sliding_box: co.Scene) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, traces = co.compare(sliding_box, formulations=["mujoco", "regularized:params=model", "ccp"],
                                   solvers=["clarabel"], executor="serial", return_traces=True)
    rows = table.set_index("formulation")
    assert rows.loc["mujoco", "dist_mujoco"] == 0.0
    assert rows.loc["regularized:params=model", "dist_mujoco"] <= 1e-9  # MuJoCo's program: mj_step's step
    assert np.isnan(rows.loc["regularized:params=model", "dist_mujoco_t"])
    # ccp's rigid contact against MuJoCo's soft one: the runs' own states give the same numbers
    states = {name: traces[traces["formulation"] == name].set_index("step").filter(like="q[") for name in
              ("mujoco", "ccp")}
    gap = (states["ccp"] - states["mujoco"]).abs().max(axis=1)
    assert rows.loc["ccp", "dist_mujoco"] == pytest.approx(float(gap.max()), rel=1e-12)
    assert rows.loc["ccp", "dist_mujoco"] > TOLERANCE
    first = int(gap.index[np.flatnonzero(gap.to_numpy() > TOLERANCE)[0]])
    assert rows.loc["ccp", "dist_mujoco_t"] == pytest.approx(first * sliding_box.dt, abs=1e-12)


def test_no_mujoco_row_no_columns(sliding_box: co.Scene) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = co.compare(sliding_box, formulations=["ccp"], solvers=["clarabel"], executor="serial")
    assert "dist_mujoco" not in table.columns
