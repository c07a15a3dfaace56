"""``regularized`` with elliptic cones on a contact whose frame has a row that moves nothing
(a ball on x/z slides: its contact's y tangent is locked): that row takes its normal row's
``R / impratio`` (:func:`contactopt.formulations.regularized_unmoved.unmoved_rows_regularized`), so the
dual has a unique answer and the primal a finite ``1/R`` (before: every dual step inaccurate,
the primal refused). Both forms are the same program, so their runs agree, and a pressed
sliding contact is on its cone's boundary with nothing on the locked row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

#: A 1 kg ball on x/z slides, sliding along x at 1 m/s on a floor with mu = 0.5.
SLID = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction="0.5"/>
    <body pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size=".1" mass="1" friction="0.5"/>
    </body>
  </worldbody>
  <keyframe><key qpos="0 0" qvel="1 0"/></keyframe>
</mujoco>
"""
STEPS = 20


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> co.Scene:
    path = Path(tmp_path_factory.mktemp("slid")) / "slid.xml"
    path.write_text(SLID)
    return co.load_scene(path)


def test_an_unmoved_frame_row_is_regularized_like_its_normal(scene: co.Scene) -> None:
    runs = {form: co.simulate(scene, formulation="regularized", solver=solver, duration=STEPS * scene.dt,
                              options={"cone": "elliptic", "form": form})
            for form, solver in (("dual", "clarabel"), ("primal", "newton"))}
    for traj in runs.values():
        assert traj.completed and {record.status for record in traj.steps} == {co.Status.OPTIMAL}
    # the same convex program in two forms: the same velocities to the solvers' tolerance
    np.testing.assert_allclose(runs["dual"].v, runs["primal"].v, rtol=0, atol=1e-7)
    # each step that presses the contact with the box still sliding after it is on its cone's
    # boundary (Coulomb sliding: |gamma_t| = mu gamma_n), and the locked tangent carries nothing
    for traj in runs.values():
        pressed = 0
        for k, record in enumerate(traj.steps):
            if not record.impulses.size:
                continue
            normal, tangent = record.impulses[0, 0], record.impulses[0, 1:]
            if normal > 1e-6 and traj.v[k + 1, 0] > 1e-3:
                pressed += 1
                assert np.abs(tangent).max() == pytest.approx(0.5 * normal, rel=1e-6)
                assert np.abs(tangent).min() <= 1e-9 * normal
                # the x impulse is the 1 kg ball's momentum change (gravity has no x share)
                assert traj.v[k + 1, 0] - traj.v[k, 0] == pytest.approx(-np.abs(tangent).max(), rel=1e-6)
        assert pressed >= 2  # the sphere bounces: step 0 and its landing press the floor


#: The same ball with condim 6: its torsional and rolling rows move nothing (no rotation dof).
SLID_CONDIM6 = SLID.replace('friction="0.5"/>', 'friction="0.5 0.01 0.001" condim="6"/>')


def test_unmoved_angular_rows_are_regularized_like_their_normal(tmp_path: Path) -> None:
    """condim 6, elliptic: the torsional and rolling rows (``J = 0``) take their contact's normal
    ``R / impratio`` too (before: ``R = 0`` there, and the primal form refused the program: "R must
    be positive"); dual and primal give the same run."""
    assert SLID_CONDIM6.count('condim="6"') == 2
    path = tmp_path / "slid6.xml"
    path.write_text(SLID_CONDIM6)
    scene = co.load_scene(path)
    runs = {form: co.simulate(scene, formulation="regularized", solver=solver, duration=STEPS * scene.dt,
                              options={"cone": "elliptic", "form": form})
            for form, solver in (("dual", "clarabel"), ("primal", "newton"))}
    for traj in runs.values():
        assert traj.completed and {record.status for record in traj.steps} == {co.Status.OPTIMAL}
    np.testing.assert_allclose(runs["dual"].v, runs["primal"].v, rtol=0, atol=1e-7)
