"""Dry friction (MuJoCo's ``frictionloss``) in the primal programs: ``sap`` and
``regularized -o form=primal`` take box rows ``|gamma| <= h frictionloss`` as Huber terms of
the row velocity (:mod:`contactopt.programs.primal`, "Box rows"), solved by ``newton`` and,
through their conic form, by Clarabel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.formulations import get
from contactopt.integrators.time_stepping import build_step_problem

pytest.importorskip("mujoco")

from contactopt.systems.mjcf.system import MjcfSystem

MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"

#: A disc (I = m r^2 / 2 = 0.04 kg m^2) on a vertical hinge with dry friction 0.5 N m, driven by a motor.
WHEEL_XML = """
<mujoco><option timestep="0.002" gravity="0 0 0"/>
  <worldbody><body pos="0 0 1">
    <joint name="hinge" type="hinge" axis="0 0 1" frictionloss="0.5"/>
    <geom type="cylinder" size="0.2 0.05" mass="2"/>
  </body></worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>
"""


def one_step(system: MjcfSystem, q: np.ndarray, v: np.ndarray, h: float, formulation: str,
             options: dict[str, object], solver: str) -> co.formulations.base.StepResult:
    problem = build_step_problem(system, q, v, h)
    spec = get(formulation)
    program = spec.build(problem, spec.resolve_options(options))
    solution = co.solve(program, solver, {"tol": 1e-14} if solver == "newton" else {})
    assert solution.status == co.Status.OPTIMAL
    return spec.recover(problem, program, solution)


@pytest.mark.filterwarnings("ignore::contactopt.systems.mjcf.candidates.UnmodelledFrictionWarning")
def test_regularized_primal_equals_its_dual_with_frictionloss() -> None:
    """limited_arm.xml: 4 dofs and a tendon with frictionloss, limits, contacts. From rest
    (rows stuck) and from a swing (rows slipping), the primal's step (newton and Clarabel)
    equals the dual's to 1e-8."""
    system = MjcfSystem(MJCF / "limited_arm.xml", extra_friction="sliding")
    q, v0 = system.default_state()
    for v in (v0, v0 + 0.3, v0 + 0.002):
        dual = one_step(system, q, v, 0.002, "regularized", {}, "clarabel")
        for solver in ("newton", "clarabel"):
            primal = one_step(system, q, v, 0.002, "regularized", {"form": "primal"}, solver)
            assert primal.friction_loss.shape == dual.friction_loss.shape == (5,)
            assert np.max(np.abs(primal.v_next - dual.v_next)) <= 1e-8
            assert np.max(np.abs(primal.friction_loss - dual.friction_loss)) <= 1e-8 * 0.002


@pytest.mark.parametrize("solver", ["newton", "clarabel"])
def test_sap_sticks_below_frictionloss_and_slips_above(tmp_path: Path, solver: str) -> None:
    """Motor torque 0.3 N m < frictionloss 0.5: the wheel stays (closed form: no motion; SAP's
    regularization R = sigma w of a friction row leaves a creep of sigma h tau / I = 1.5e-5
    rad/s); 0.8 N m > 0.5: it spins up at (0.8 - 0.5) / I = 7.5 rad/s^2, the friction impulse
    on its bound h frictionloss."""
    path = tmp_path / "wheel.xml"
    path.write_text(WHEEL_XML)
    scene = co.load_scene(path)
    h, duration, inertia = 0.002, 0.2, 0.04
    for torque, rate in ((0.3, 0.0), (0.8, (0.8 - 0.5) / inertia)):
        scene.system.set_control(np.array([torque]))
        trajectory = co.simulate(scene, formulation="sap", solver=solver, dt=h, duration=duration)
        assert all(step.status == co.Status.OPTIMAL for step in trajectory.steps)
        assert trajectory.v[-1, 0] == pytest.approx(rate * duration, abs=2e-3 * h * torque / inertia + 1e-9)
        assert np.all(np.abs(trajectory.steps[-1].friction_loss) <= h * 0.5 * (1 + 1e-9))


def test_the_conic_form_of_box_rows_is_t_minus_and_plus_the_row_residual() -> None:
    """``to_conic``'s box rows, assembled as CSC arrays: at ``x = conic_x(v, gamma)`` (``t = |r|``,
    ``r = J v + R gamma - v_hat`` on a box row) their slacks are ``t - r`` and ``t + r``, one of
    each pair zero, and the slacks carry no curvature."""
    from contactopt.programs.primal import PrimalProgram

    system = MjcfSystem(MJCF / "position_arm.xml")
    model = system.model
    program = co.formulate(system, np.array(model.key_qpos[0]), np.zeros(system.nv), 0.002, "sap",
                           control=np.array(model.key_ctrl[0]))
    primal = PrimalProgram.from_conic(program)
    nb, m, nv = primal.box.shape[0], primal.m, primal.nv
    assert nb == 2  # the arm's two joints with frictionloss
    conic = primal.to_conic()
    rng = np.random.default_rng(3)
    v, gamma = rng.standard_normal(nv), rng.standard_normal(m)
    x = primal.conic_x(v, gamma)
    slack = conic.b - conic.A @ x
    rows = slice(m - nb, m)
    r = primal.J[rows] @ v + primal.R[rows] * gamma[rows] - primal.v_hat[rows]
    np.testing.assert_allclose(slack[m - nb:m], np.abs(r) - r, rtol=0, atol=1e-12 * np.abs(r).max())
    np.testing.assert_allclose(slack[m:m + nb], np.abs(r) + r, rtol=0, atol=1e-12 * np.abs(r).max())
    assert conic.P.shape == (nv + m + nb,) * 2 and not conic.P[:, nv + m:].count_nonzero()
