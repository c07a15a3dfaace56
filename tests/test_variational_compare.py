"""``compare`` takes the variational integrator by default on the scenes it takes (issue 38):
its energy beside the time-stepping formulations' on the box slide, and the scenes it refuses
left out with the reason (:func:`contactopt.integrators.variational.refusal`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import contactopt as co
from contactopt.analysis import metrics
from contactopt.analysis.compare import default_formulations, plan
from contactopt.integrators.variational import refusal

G = 9.81


def test_the_default_comparison_has_a_variational_row_where_variational_takes_the_scene() -> None:
    box = co.load_scene("box_slide")
    assert "variational" in default_formulations(box)
    cells, _ = plan(box, solvers_=["clarabel"])
    assert [cell.solver for cell in cells if cell.method == "variational"] == ["-"]  # one cell per dt
    ball = co.load_scene("bouncing_ball")  # restitution 0.8: Newton's impact law at the knot
    assert "variational" in default_formulations(ball)
    assert refusal(ball.system, ball.q0, ball.v0, ball.dt, ball.options) is None


def test_mjcf_free_joints_are_refused_and_hinge_and_slide_models_run() -> None:
    """A free MJCF body (quaternion state) is refused before step 0. Hinge and slide joints run:
    the pushed box (slide joints, constant M) and the two-link arm falling onto the floor
    (hinges, M(q)), whose MuJoCo contacts come and go within a step; there the gaps are
    linearized at q_k (the time-stepping gap), said in the step's message."""
    pytest.importorskip("mujoco")
    mjcf = co.load_scene("box_slide_mjcf")  # a free joint: no manipulator form carried
    assert "variational" not in default_formulations(mjcf)
    assert "formulation 'variational' needs a textbook system" in str(
        refusal(mjcf.system, mjcf.q0, mjcf.v0, mjcf.dt, mjcf.options))
    for name, dt, duration in (("pushed_box_mjcf", 2e-3, 0.1), ("two_link_arm_mjcf", 4e-3, 0.36)):
        scene = co.load_scene(name)
        assert "variational" in default_formulations(scene)
        traj = co.simulate(scene, formulation="variational", dt=dt, duration=duration)
        assert traj.completed, traj.message
        assert any("gaps linearized at q_k" in record.message for record in traj.steps)


def test_the_box_slide_table_shows_the_variational_energy_beside_time_stepping() -> None:
    """The rigid3d box slide at h = 1e-2: friction takes all the kinetic energy, 1/2 m v0^2 =
    0.5 J, under lcp (to rounding); the variational row keeps the discrete rest momentum of its
    DEL, |v| = g h / 2, so its final drift is -(0.5 - 1/2 m (g h / 2)^2) J (to the iterate's
    1e-9 answers)."""
    h = 1e-2
    table = co.compare("box_slide", ["variational", "lcp"], ["lemke", "clarabel"], dts=[h], executor="serial")
    assert isinstance(table, pd.DataFrame)
    rows = {row.formulation: row for row in table.itertuples() if row.status == "completed"}
    assert set(rows) == {"variational", "lcp"}
    np.testing.assert_allclose(rows["lcp"].final_energy_drift, -0.5, atol=1e-12)
    np.testing.assert_allclose(rows["variational"].final_energy_drift, -(0.5 - 0.5 * (G * h / 2) ** 2), atol=1e-8)


# slow (3.4 s, the default suite's budget)
@pytest.mark.slow
def test_the_variational_energy_balance_charges_the_impulses_at_the_knot() -> None:
    """contactopt.analysis.energy, "Variational rows": a variational step's impulse works at
    (v_k + v_k^+) / 2, the mean of the knot velocities around it, which makes the DEL's
    energy change exact for a constant M and uniform gravity. The bouncing ball (e = 0.8,
    planar, 1.5 s, two bounces) then balances to 1e-9 J (measured 1.1e-11; charged at
    (v_k + v_k+1) / 2 it read 0.070 J). The box slide with the lcp iterate balances to the one
    positive work its start takes, 1/2 m (g h / 2)^2 (the box starts at v = 0, off the DEL's
    rest momentum |v| = g h / 2, and the ground's first impulse does that work; charged at
    (v_k + v_k+1) / 2, 0.19 J at h = 1e-2)."""
    ball = dataclasses.replace(co.load_scene("bouncing_ball"), duration=1.5)
    run = metrics.run_metrics(ball, co.simulate(ball, formulation="variational"))
    assert run["max_abs_energy_balance"] <= 1e-9
    assert run["max_abs_energy_drift"] > 5.0  # it did lose the bounces' energy
    h = 1e-2
    slide = co.load_scene("box_slide")
    run = metrics.run_metrics(slide, co.simulate(slide, formulation="variational", solver="lemke", dt=h,
                                                 options={"contact": "lcp"}))
    np.testing.assert_allclose(run["max_abs_energy_balance"], 0.5 * (G * h / 2) ** 2, rtol=1e-6)


def test_a_run_naming_no_solver_takes_the_exact_cone_and_does_not_hover() -> None:
    """compare's variational row names no solver: it takes the exact Coulomb cone (nsgs), not
    the scene's solver's Anitescu relaxation (clarabel: the box slide's scene solver), so the
    sliding box stays on the ground to the solver's tolerance (the relaxation lifts it 8 mm)."""
    scene = co.load_scene("box_slide")
    exact = co.simulate(scene, formulation="variational", duration=0.1)
    assert exact.info["solver"] == "nsgs"
    assert float(np.max(exact.q[:, 2] - exact.q[0, 2])) < 1e-9
    relaxed = co.simulate(scene, formulation="variational", solver="clarabel", duration=0.1)
    assert float(np.max(relaxed.q[:, 2] - relaxed.q[0, 2])) > 1e-3  # anitescu's hover, named by its solver
