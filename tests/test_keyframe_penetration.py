"""A keyframe that penetrates (issue 23, "Must show"): an MJCF model's own ``<key>`` starts a
body 15 mm in the floor and a joint 0.1 rad past its range (``tests/data/sunk_keyframe.xml``),
loaded by name through ``[system] keyframe = "sunk"`` (``tests/data/sunk_keyframe.toml``).

* Step 0 warns: one :class:`~contactopt.core.errors.InitialPenetrationWarning` naming the contact
  (MuJoCo's geom names, ``floor|crate``) and its depth, one
  :class:`~contactopt.core.errors.InitialLimitViolationWarning` naming the limit and its violation
  (:mod:`contactopt.integrators.initial_penetration`); the model's in-range keyframe warns of nothing.
* No launch under ``ccp``, ``anitescu``, ``lcp``: each rigid row asks ``n v' >= min(-phi / h,
  v_max)`` (:mod:`contactopt.formulations.recovery`) with ``v_max`` = MJCF's documented default
  0.1 m/s (rad/s for the hinge), so the crate rises at exactly ``v_max`` (gravity is inside the
  step: the row is active and holds equality) where ``-phi / h`` would be 7.5 m/s, and the elbow
  turns back at ``v_max`` where it would turn at 50 rad/s. The margin 1e-6 is the interior-point
  solvers' tolerance (Lemke's answer is exact to round-off).
* The CLI path (``contactopt run sunk_keyframe.toml``) issues the same warning.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core.errors import InitialLimitViolationWarning, InitialPenetrationWarning

pytest.importorskip("mujoco")

DATA = Path(__file__).resolve().parent / "data"
SCENE = DATA / "sunk_keyframe.toml"
STEPS, H, DEPTH, Z0, VIOLATION = 20, 0.002, 0.015, 0.085, 0.1
#: Free joint v = (vx vy vz wx wy wz), then the elbow.
CRATE_VZ, CRATE_W, ELBOW = 2, slice(3, 6), 6
SOLVER_TOLERANCE = 1e-6


def _messages(caught: list[warnings.WarningMessage], category: type[Warning]) -> list[str]:
    """The messages of exactly ``category`` (the limit warning subclasses the penetration one)."""
    return [str(w.message) for w in caught if w.category is category]


@pytest.mark.parametrize(("formulation", "solver"), [("ccp", "clarabel"), ("anitescu", "clarabel"),
                                                     ("lcp", "lemke")])
def test_penetrating_keyframe_warns_and_does_not_launch(formulation: str, solver: str) -> None:
    scene = co.load_scene(SCENE)
    assert scene.q0[2] == Z0 and scene.q0[7] == 0.5 + VIOLATION  # keyframe "sunk", not keyframe 0
    v_max = scene.system.default_max_recovery_speed
    assert v_max == 0.1  # the default documented in contactopt.formulations.recovery
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trajectory = co.simulate(scene, formulation=formulation, solver=solver, duration=STEPS * H)
    contact = _messages(caught, InitialPenetrationWarning)
    limit = _messages(caught, InitialLimitViolationWarning)
    assert len(contact) == 1 and len(limit) == 1
    assert f"contact 'floor|crate' is {DEPTH:g} m deep (and 3 other contacts)" in contact[0]  # the 4 corners
    assert f"joint 'elbow' upper limit is violated by {VIOLATION:g}" in limit[0]
    assert trajectory.completed and len(trajectory.steps) == STEPS
    assert all(step.status == co.Status.OPTIMAL for step in trajectory.steps)
    # not launched: the crate rises at v_max (7.5 m/s uncapped), level, and the elbow turns back at v_max
    assert trajectory.v[:, CRATE_VZ].max() <= v_max + SOLVER_TOLERANCE
    np.testing.assert_allclose(trajectory.v[1:, CRATE_VZ], v_max, atol=SOLVER_TOLERANCE)
    assert np.abs(trajectory.v[:, CRATE_W]).max() <= SOLVER_TOLERANCE
    np.testing.assert_allclose(trajectory.v[1:, ELBOW], -v_max, atol=SOLVER_TOLERANCE)
    # semi-implicit Euler, q' = q + h v': still 11 mm in after 20 steps, on its way out
    assert trajectory.q[-1, 2] == pytest.approx(Z0 + STEPS * H * v_max, abs=STEPS * H * SOLVER_TOLERANCE)


def test_in_range_keyframe_warns_of_nothing() -> None:
    scene = co.load_scene(SCENE, keyframe="rest")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitialPenetrationWarning)
        trajectory = co.simulate(scene, formulation="lcp", solver="lemke", duration=H)
    assert trajectory.completed


def test_cli_run_of_the_keyframe_scene_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.warns(InitialPenetrationWarning) as caught:
        code = main(["run", str(SCENE), "-f", "lcp", "-s", "lemke", "--duration", str(5 * H), "--out",
                     str(tmp_path / "run"), "--no-plot", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    contact = _messages(list(caught), InitialPenetrationWarning)
    assert len(contact) == 1 and f"contact 'floor|crate' is {DEPTH:g} m deep" in contact[0]
    assert len(_messages(list(caught), InitialLimitViolationWarning)) == 1
