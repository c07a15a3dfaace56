"""Robot runs of ``experiments/robots.py --steps 100`` that stopped early for contactopt's own
reasons (issue 23), each checked at its failing step, and the program-level pieces behind them:

* gym/pusher, step 0 (ccp, anitescu, lcp): the puck slides on two horizontal joints and rests on
  the table (condim 1): its contact's normal row is zero, so a rigid row read ``0 >= -phi/h``
  with ``phi = -1.4e-17``; now skipped. No force acts (gravity 0, zero ctrl, at rest): ``v' = 0``.
* gym/reacher, gym/swimmer, step 0 (ccp): ``c = 0`` (no force), and the judge read the answer's
  1e-35 against its own round-off; it now takes the units the rows ask (``|b_i| / |A_ij|``).
* own/tendon_gripper, step 34 (lcp/lemke): the all-ones covering vector's lexicographic path
  closed a loop by round-off and spent the pivot budget; a revisited basis now ends the attempt.
* suite/humanoid_CMU step 68, dm/humanoid_CMU_V2020 step 18 (``params=model``): rows of
  ``R ~ 1e6`` carry impulses of 1e-9, where Clarabel's barrier multipliers outweigh the raw
  slack; the refinement now compares the two in the row's own unit.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.programs import ConicProgram, Nonneg, Status
from contactopt.programs.residuals import residuals
from contactopt.solvers import lemke as lemke_module
from contactopt.solvers.base import Stopwatch, make_solution
from contactopt.solvers.refine import refine

ROOT = Path(__file__).resolve().parents[1]


def _asset(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        pytest.skip(f"{path} is not shipped by this {package}")
    return path


def _run(path: Path, formulation: str, solver: str | None, steps: int,
         options: dict[str, object] | None = None) -> co.Trajectory:
    pytest.importorskip("mujoco")
    scene = co.load_scene(path)
    model = scene.system.model  # type: ignore[attr-defined]
    controller = ({"type": "constant", "u": np.array(model.key_ctrl[0]).tolist()}
                  if model.nkey and model.nu else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return co.simulate(scene, formulation=formulation, solver=solver, duration=steps * scene.dt,
                           options=options or {}, controller=controller)


GYM = "envs/mujoco/assets"


@pytest.mark.parametrize(("model", "formulation", "solver"),
                         [("pusher_v5", "ccp", "clarabel"), ("pusher_v5", "anitescu", "osqp"),
                          ("pusher_v5", "lcp", "lemke"), ("pusher_v5", "regularized", "clarabel"),
                          ("reacher", "ccp", "clarabel"), ("swimmer", "ccp", "clarabel")])
def test_gymnasium_models_at_rest_take_their_first_step(model: str, formulation: str, solver: str) -> None:
    traj = _run(_asset("gymnasium", f"{GYM}/{model}.xml"), formulation, solver, 1)
    assert traj.completed, traj.message
    assert traj.steps[0].status is Status.OPTIMAL
    np.testing.assert_allclose(traj.v[1], 0.0, rtol=0, atol=1e-12)  # no force acts on a body at rest


def test_lemke_leaves_a_round_off_cycle_on_the_gripper() -> None:
    path = ROOT / "problems" / "mjcf" / "tendon_gripper.xml"
    traj = _run(path, "lcp", "lemke", 40)
    assert traj.completed, traj.message
    scene = co.load_scene(path)
    control = np.array(scene.system.model.key_ctrl[0])  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = co.formulate(scene.system, traj.q[34], traj.v[34], scene.dt, "lcp", control=control)
    assert isinstance(program, co.LCP)
    # the all-ones covering vector: solved, or a cycle caught at once; never the 3400-pivot budget
    _, status, pivots, _ = lemke_module.lemke(program.M, program.q)
    assert status is not Status.MAX_ITERATIONS and pivots < 200
    assert co.solve(program, "lemke").status is Status.OPTIMAL


def test_lemke_keeps_an_earlier_usable_answer_over_a_spent_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempts in turn: a secondary ray, an answer 1e-4 off (inaccurate: w = 1e-4 against
    |q| + |M z| = 2), then the budget; the inaccurate answer is returned."""
    scripted = iter([(None, Status.RAY_TERMINATION, 3, "ray"), (np.array([1.0001]), Status.OPTIMAL, 2, "solved"),
                     (None, Status.MAX_ITERATIONS, 50, "no solution after 50 pivots")])
    monkeypatch.setattr(lemke_module, "lemke", lambda *args, **kwargs: next(scripted))
    solution = co.solve(co.LCP(np.eye(1), np.array([-1.0])), "lemke", normalize=False)
    assert solution.status is Status.INACCURATE and solution.x[0] == 1.0001


def test_a_forceless_program_is_judged_in_the_units_its_rows_ask() -> None:
    """c = 0 (reacher's step: three limits 3 and 0.17 rad from their bounds over h = 0.01): the
    answer x = 0 to 1e-35 passes, a limit row overshot by 1 rad/s (of 300) does not."""
    P = sp.csc_matrix(np.diag([1.0012, 1.0002, 0.0031]))
    program = ConicProgram(P=P, c=np.zeros(3), A=sp.csc_matrix(np.eye(3)), b=np.array([300.0, 17.0, 17.0]),
                           cones=(Nonneg(3),))
    assert residuals(program, np.array([9.6e-35, 0.0, 0.0]), np.zeros(3)).relative < 1e-12
    assert residuals(program, np.array([301.0, 0.0, 0.0]), np.zeros(3)).relative > 1e-3


def test_refinement_compares_slack_and_multiplier_in_the_rows_unit() -> None:
    """min 1/2 x'Px + c'x, x >= 0 with P = diag(1, 1e6), c = (-1, -1e-3): x = (1, 1e-9). An
    interior-point iterate with y_2 = mu / s_2 = 8e-4 (raw: y_2 > s_2 = 1.2e-9) has row 2 inactive
    in its own unit (s_2 is half its row, y_2 W_22 = 8e-10 a third): no row is active, and the
    KKT step (not the polish the raw comparison falls back on) gives the exact x."""
    program = ConicProgram(P=sp.csc_matrix(np.diag([1.0, 1e6])), c=np.array([-1.0, -1e-3]),
                           A=sp.csc_matrix(-np.eye(2)), b=np.zeros(2), cones=(Nonneg(2),))
    iterate = make_solution(program, solver="test", status=Status.OPTIMAL, x=np.array([1.0, 1.2e-9]),
                            y=np.array([1e-12, 8e-4]), iterations=0, watch=Stopwatch())
    refined = refine(program, dataclasses.replace(iterate, status=Status.OPTIMAL))  # as claimed
    assert refined.refined and "refined on 0 active rows" in refined.message  # KKT, not polish
    np.testing.assert_allclose(refined.x, [1.0, 1e-9], rtol=1e-12)
    np.testing.assert_allclose(refined.y, 0.0, atol=1e-15)


@pytest.mark.parametrize(("relative", "steps"), [("suite/humanoid_CMU.xml", 69),
                                                 ("locomotion/walkers/assets/humanoid_CMU_V2020.xml", 19)])
def test_cmu_humanoids_params_model_pass_their_failing_step(relative: str, steps: int) -> None:
    path = _asset("dm_control", relative)
    ours = _run(path, "regularized", "clarabel", steps, {"params": "model"})
    assert ours.completed, ours.message
    reference = _run(path, "mujoco", None, steps, {"residuals": False})
    # MuJoCo's own problem, solved: its step (speeds up to 150 rad/s; 1e-14 of them per step)
    np.testing.assert_allclose(ours.v[-1], reference.v[-1], rtol=0, atol=1e-8)
