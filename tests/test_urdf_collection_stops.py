"""The two example-robot-data URDFs that stopped mid-run under ccp/clarabel (issue 36,
``experiments/robots.py --collection example-robot-data --steps 100``), each at its cause:

* tiago, step 0: a fixed base with a five-finger hand whose 36 joints start at their lower
  limit (``b = 0``), driven through ``M``'s coupling to the falling torso (19 kg, damping 1e3)
  at 1e-5 rad/s. Clarabel stops on its absolute gap (1e-10) while those rows' products
  ``s_i y_i ~ 1e-12`` are still on the central path: their slacks and multipliers are both of
  the rows' own size, contactopt's residuals refute the answer (1.0 relative) and no active set
  read from it is right (refined: 9.6e-2). Clarabel now retries such an answer once with its gap
  and feasibility tolerances times 1e-4 (:data:`contactopt.solvers.backends.clarabel.TIGHTENING`).
* romeo_small, step 27: its SRDF carries states only (its header lists the collision pairs as a
  TODO), so every pair of non-adjacent links was tested, and the convex hulls of the forearm
  (``LElbowYawLink``) and the hand (``l_wrist``) met, 8.8 um deep. The three wrist joints turn
  the hand about one point, so the contact's rows have rank 2 and no velocity leaves the
  penetration inside ccp's friction cone (``phi/h + n v' >= mu |T v'|``): the step is infeasible
  with or without the joint limits, and feasible without friction. MoveIt's matrix for the same
  model (``romeo.srdf``) disables that pair ("Never"); the robot's disabled pairs now come from
  it (:func:`contactopt.systems.urdf_file.example_robot_data`, ``collision_srdf``).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.systems.base import ParameterError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TOLERANCES = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def test_clarabel_tightens_its_tolerances_where_the_residuals_refute_it() -> None:
    """tiago's step 0 under ccp (saved program: no example-robot-data needed): with Clarabel's
    default tolerances the answer is refuted even after refinement; the retry's answer is
    optimal by contactopt's residuals and is OSQP's polished (active-set) answer, every finger's
    velocity included. Tolerances the user sets are not overridden."""
    program = co.load_program(ROOT / "tests" / "data" / "tiago_hand_limits.npz")
    as_set = co.solve(program, "clarabel", DEFAULT_TOLERANCES)
    assert as_set.status is co.Status.NUMERICAL_ERROR and "tolerances x" not in as_set.message
    solution = co.solve(program, "clarabel")
    assert solution.status is co.Status.OPTIMAL and solution.residuals.relative < 1e-9
    assert "retried with tightened tolerances: residuals" in solution.message
    reference = co.solve(program, "osqp")
    assert reference.status is co.Status.OPTIMAL and "polishing successful" in reference.message
    velocity = program.variable(solution.x, "v_next")
    expected = program.variable(reference.x, "v_next")
    fingers = np.r_[15:20, 21:27, 28:34, 35:41, 42:48]  # the flexions: |v| 1e-25 (held) to 2e-5 rad/s
    assert np.abs(expected[fingers]).max() < 1e-4
    # the refuted answer was off by 1.1e-5 rad/s there; these are the same KKT point
    np.testing.assert_allclose(velocity, expected, rtol=0, atol=1e-12)


def _files(name: str) -> Any:
    from contactopt.systems.urdf_file import example_robot_data

    try:
        return example_robot_data(name)
    except ParameterError as exc:  # not installed: skipped, naming the package
        pytest.skip(str(exc))


def _build(name: str) -> tuple[Any, Any]:
    """The robot's files and the collection's scene of it (``experiments/robot_urdfs.py``)."""
    pytest.importorskip("pinocchio")
    sys.path.insert(0, str(ROOT / "experiments"))
    try:
        robot_urdfs = importlib.import_module("robot_urdfs")
    finally:
        sys.path.pop(0)
    files = _files(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return files, robot_urdfs.build(files, "pinocchio", True)[0]


def test_romeo_small_takes_the_collision_pairs_of_romeo() -> None:
    """romeo_small's states from its own SRDF, its disabled pairs from romeo.srdf (the same
    joints and collision elements); the forearm-hand pair is not tested, and ccp passes step 27."""
    files, scene = _build("romeo_small")
    assert files.srdf is not None and files.srdf.name == "romeo_small.srdf"
    assert files.collision_srdf is not None and files.collision_srdf.name == "romeo.srdf"
    shapes = scene.system._shapes
    links = {frozenset((shapes[a].link, shapes[b].link)) for a, b in scene.system._pairs}
    assert frozenset(("LElbowYawLink", "l_wrist")) not in links
    assert frozenset(("LElbowYawLink", "torso")) in links  # a pair MoveIt keeps
    traj = co.simulate(scene, formulation="ccp", solver="clarabel", duration=30 * scene.dt)
    assert traj.completed and len(traj.steps) == 30
    solo = _files("solo12")  # an SRDF with pairs of its own keeps them
    assert solo.collision_srdf == solo.srdf


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiago", "romeo_small"])
def test_the_two_robots_complete_100_ccp_steps(name: str) -> None:
    """The issue's run: 100 steps under ccp/clarabel, every step usable by contactopt's residuals."""
    _, scene = _build(name)
    traj = co.simulate(scene, formulation="ccp", solver="clarabel", duration=100 * scene.dt)
    assert traj.completed and len(traj.steps) == 100
    assert all(step.status.usable and step.residuals.relative < 1e-2 for step in traj.steps)
