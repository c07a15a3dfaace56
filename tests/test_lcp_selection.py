"""The least-norm selection of ``lcp -o impulses=min_norm`` (contactopt/formulations/lcp_selection.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.formulations.lcp_selection import least_norm_on_face
from contactopt.programs import LCP, lcp_residuals

GRIPPER = Path(__file__).resolve().parents[1] / "problems" / "mjcf" / "tendon_gripper.xml"


def test_two_contacts_sharing_a_load_take_the_least_norm_split() -> None:
    """Two frictionless rows along ``r = (1, 2)`` (``M = r r'``, ``q = -r``): every
    ``z1 + 2 z2 = 1``, ``z >= 0`` solves the LCP. Least ``z1^2 M11 + z2^2 M22 = z1^2 + 4 z2^2``
    on that line (a Lagrange multiplier): ``z = (1/2, 1/4)``, each row carrying half; Lemke's
    answer is a vertex, (1, 0) or (0, 1/2)."""
    r = np.array([1.0, 2.0])
    program = LCP(np.outer(r, r), -r)
    vertex = co.solve(program, "lemke")
    assert np.count_nonzero(vertex.x) == 1
    chosen = least_norm_on_face(program, vertex, co.solve, motion_only=False)  # r d = 0: same motion, selected anyway
    np.testing.assert_allclose(chosen.x, [0.5, 0.25], rtol=0, atol=1e-15)
    assert lcp_residuals(program, chosen.x).relative <= 1e-15  # still an exact solution
    assert chosen.status is vertex.status


def test_a_unique_solution_is_returned_as_it_is() -> None:
    """``M`` positive definite: the LCP has one solution, ``z = (1/3, 1/3)``; the selection hands
    back the solver's own answer object, bit for bit."""
    program = LCP(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, -1.0]))
    vertex = co.solve(program, "lemke")
    assert least_norm_on_face(program, vertex, co.solve) is vertex


def _box_spin(formulation: str, steps: int, options: dict[str, str] | None = None) -> tuple[np.ndarray, list]:
    scene = co.load_scene(GRIPPER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the palm's own overlapping geoms are skipped candidates
        if formulation == "mujoco":
            trajectory = co.simulate(scene, "mujoco", duration=steps * scene.dt)
        else:
            trajectory = co.simulate(scene, formulation, "lemke", duration=steps * scene.dt, options=options)
    v = np.asarray(trajectory.v)
    return np.linalg.norm(v[:, -3:], axis=1), trajectory.steps  # the free box's angular velocity


def test_the_gripper_holds_its_box_under_lcp() -> None:
    """own/tendon_gripper (issue 23): the grip is static (MuJoCo turns the box at 1e-15 rad/s,
    ccp at 1e-24). Lemke's vertex holds it at one corner of each finger and it swings at
    0.37 rad/s after one step; the least-norm selection spreads the load over both fingers'
    corners, and every step's answer is still an exact solution of its LCP."""
    steps = 10
    mujoco, _ = _box_spin("mujoco", steps)
    spin, records = _box_spin("lcp", steps)
    assert len(records) == steps and all(record.status is co.Status.OPTIMAL for record in records)
    assert max(record.residuals.relative for record in records) <= 1e-12
    assert spin.max() <= 2.0 * mujoco.max() + 1e-6
    vertex, _ = _box_spin("lcp", 1, {"impulses": "vertex"})
    assert vertex[1] > 0.1  # the swing the selection removes


@pytest.mark.parametrize("value", ["least", "vertices"])
def test_an_unknown_choice_is_refused(value: str) -> None:
    with pytest.raises(co.errors.OptionError, match="impulses"):
        co.formulations.get("lcp").resolve_options({"impulses": value})


def test_a_face_that_moves_nothing_keeps_the_solvers_answer() -> None:
    """A box resting on four corners: the load can move between the corners, the box cannot
    (every face direction has zero Delassus energy), so the solver's answer is kept as it is,
    while the selection forced anyway spreads the load with the same velocity."""
    scene = co.load_scene(Path(__file__).resolve().parents[1] / "problems" / "box_slide.toml")
    rest = np.zeros(scene.system.nv)
    program = co.formulate(scene.system, scene.q0, rest, scene.dt, "lcp")
    vertex = co.solve(program, "lemke")
    assert least_norm_on_face(program, vertex, co.solve) is vertex
    spread = least_norm_on_face(program, vertex, co.solve, motion_only=False)
    assert spread is not vertex and lcp_residuals(program, spread.x).relative <= 1e-12
    delassus = np.asarray(program.M)[np.ix_(np.diag(program.M) > 0, np.diag(program.M) > 0)]
    impulse = np.diag(program.M) > 0
    change = spread.x[impulse] - vertex.x[impulse]
    assert abs(change @ delassus @ change) <= 1e-10 * float(np.diag(delassus) @ change**2)
