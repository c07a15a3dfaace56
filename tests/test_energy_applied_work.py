"""The energy balance counts the work of actuators, dampers and applied forces
(:func:`contactopt.analysis.energy.applied_work`), so an actuated MJCF model reads 0 where it read
the motors' work. A block on a horizontal slide (no gravity work, constant M) with a motor under a
sinusoidal control, a spring (its potential in MuJoCo's energy) and a damper (implicit in the
Euler step): the only thing semi-implicit Euler leaves is the spring's own discrete error,

    V(q') - V(q) + h k q·v̄ = (k h / 2)(q' v' - q v)      (q' = q + h v', v̄ = (v + v')/2),

which telescopes: ``B_k = (k h / 2)(q_k v_k - q_0 v_0)`` exactly."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis.metrics import run_metrics, step_metrics

pytest.importorskip("mujoco")

K, DAMPING, H = 40.0, 0.8, 0.002
SLIDER = f"""
<mujoco>
  <option timestep="{H}" gravity="0 0 -9.81"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="x" type="slide" axis="1 0 0" stiffness="{K}" damping="{DAMPING}"/>
      <geom type="box" size=".05 .05 .05" mass="2"/>
    </body>
  </worldbody>
  <actuator><motor joint="x" gear="3"/></actuator>
  <keyframe><key qpos="0.1" qvel="0.5"/></keyframe>
</mujoco>
"""
SCENE = """
[scene]
name = "slider"
dt = {h}
duration = 0.6
formulation = "regularized"
solver = "clarabel"

[system]
type = "mjcf"
file = "slider.xml"

[control]
type = "sinusoid"
amplitude = 2.0
frequency = 3.0
"""


@pytest.fixture(scope="module")
def slider(tmp_path_factory: pytest.TempPathFactory) -> tuple[co.Scene, co.Trajectory]:
    folder = Path(tmp_path_factory.mktemp("slider"))
    (folder / "slider.xml").write_text(SLIDER)
    (folder / "slider.toml").write_text(SCENE.format(h=H))
    scene = co.load_scene(folder / "slider.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        return scene, co.simulate(scene)


def test_motor_damper_and_spring_are_accounted_for(slider: tuple[co.Scene, co.Trajectory]) -> None:
    scene, traj = slider
    assert traj.completed
    table = step_metrics(scene, traj)
    q, v = traj.q[:, 0], traj.v[:, 0]
    expected = 0.5 * K * H * (q * v - q[0] * v[0])
    known = table["energy_balance"].to_numpy()
    np.testing.assert_allclose(known, expected[:known.shape[0]], rtol=0, atol=1e-12)
    # the motor (gear 3, ctrl held over the step) and the damper (at v', Euler's implicit damping)
    # did work of a tenth of a joule, which the balance read before it counted them
    motor = sum(H * 3.0 * float(record.control[0]) * 0.5 * (v[i] + v[i + 1]) for i, record in enumerate(traj.steps))
    damper = sum(-DAMPING * v[i + 1] * H * 0.5 * (v[i] + v[i + 1]) for i in range(len(traj.steps)))
    assert abs(motor) > 0.1 and abs(damper) > 0.05
    assert run_metrics(scene, traj)["max_abs_energy_balance"] <= np.abs(expected).max() + 1e-12


@pytest.mark.parametrize(("formulation", "options"), [("regularized", {}), ("regularized", {"params": "model"}),
                                                     ("mujoco", {})])
def test_hopper_balance_is_its_contacts_positive_work(formulation: str, options: dict[str, str]) -> None:
    """dm_hopper (4 motors under a 1 Hz sinusoid, damped joints with armature, limits, a soft foot
    contact) over 1 s: the motors and dampers do ~107 J of work in absolute value (~70-80 J net),
    all of which the balance read before. Now what is left, beyond the soft contacts' positive
    work (7 J under regularized, 14 J under MuJoCo's own parameters and mj_step itself, whose
    record holds its limit and dry-friction impulses: inadmissible for Coulomb contact, so shown
    on purpose), is the step's own error (``M(q)``'s change over a step, Euler's gravity term:
    O(h)), measured at 0.35 J and 0.03 J; bound: 1 % of the work."""
    pytest.importorskip("dm_control")
    from contactopt.analysis.metrics import _gather

    scene = co.load_scene("dm_hopper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        traj = co.simulate(scene, formulation=formulation, duration=1.0, options=options)
    assert traj.completed
    table = step_metrics(scene, traj)
    applied = _gather(scene, traj).applied_work[:-1]
    balance = table["energy_balance"].to_numpy()[-1]
    positive = float(np.nansum((table["contact_work"] - table["dissipation"]).to_numpy()[:-1]))
    assert abs(applied.sum()) > 50.0  # what the balance missed before
    assert abs(balance - positive) < 0.01 * np.abs(applied).sum()
