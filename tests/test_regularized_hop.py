"""The pushed brick hops under ``regularized`` (MuJoCo's soft contact, Todorov 2014), and that
is the formulation's defined behaviour, not a defect (``contactopt.formulations.regularized``,
"Sliding contacts hop"): ``a_ref = -b_ref J v - k_ref phi`` damps the sliding contact's active
cone edge ``n - mu t``, whose velocity is ``v_z - mu v_x``, so one step at ``tc = 2 h`` launches
the brick at ``v_z ~ mu v_x``. Pinned here by MuJoCo's own ``mj_step`` on the equivalent model,
by the edge row's reference identity on every contact step, and by the energy falling every step.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import contactopt as co

H, STEPS = 0.01, 50
MASS, GRAVITY, PUSH, MU = 1.0, 9.81, 8.0, 0.5  # problems/brick_push.toml
SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)  # MuJoCo's default, also regularized's

# brick_push as MuJoCo sees it: a point-contact sphere on x and z slide joints, MuJoCo's default
# solref (0.02, 1) = (2 h, 1), regularized's default at h = 0.01. The elliptic cone: MuJoCo's
# pyramid would add two edges n +- mu t_y, pure normal rows here (no y joint); in 2-D the
# elliptic cone and the two-edge pyramid are one program.
EQUIVALENT_MJCF = f"""
<mujoco model="brick_push_equivalent">
  <option timestep="{H}" integrator="Euler" cone="elliptic" gravity="0 0 -{GRAVITY}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="{MU} 0.005 0.0001"
          solref="0.02 1" solimp="{' '.join(map(str, SOLIMP))}"/>
    <body name="brick" pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom name="brick" type="sphere" size="0.1" mass="{MASS}" friction="{MU} 0.005 0.0001"
            solref="0.02 1" solimp="{' '.join(map(str, SOLIMP))}"/>
    </body>
  </worldbody>
  <actuator><motor name="push" joint="x" gear="1"/></actuator>
</mujoco>
"""


def brick_run(z0: float, options: dict[str, object] | None = None) -> co.Trajectory:
    scene = dataclasses.replace(co.load_scene("brick_push"), q0=np.array([0.0, z0]))
    return co.simulate(scene, "regularized", "clarabel", dt=H, duration=STEPS * H, options=options)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_mujoco_hops_the_same_on_the_equivalent_model(cone: str) -> None:
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_string(EQUIVALENT_MJCF)
    data = mujoco.MjData(model)
    # 0.1 mm down: MuJoCo leaves a contact at exactly dist = 0 out of its constraint problem,
    # regularized (epsilon = 0) takes it; from inside both take it at step 0.
    z0 = -1e-4
    data.qpos[:] = [0.0, z0]
    data.ctrl[:] = [PUSH]
    q_mj, v_mj = [data.qpos.copy()], [data.qvel.copy()]
    for _ in range(STEPS):
        mujoco.mj_step(model, data)
        q_mj.append(data.qpos.copy())
        v_mj.append(data.qvel.copy())
    traj = brick_run(z0, {"cone": cone})
    # The same one-row program each step, solved to Clarabel's 1e-8 (observed: 1e-15).
    np.testing.assert_allclose(traj.q, np.array(q_mj), rtol=0, atol=1e-8)
    np.testing.assert_allclose(traj.v, np.array(v_mj), rtol=0, atol=1e-8)
    # MuJoCo's own brick leaves the ground by more than a centimetre (rigid contact: never).
    assert max(q[1] for q in q_mj) > 0.01


def test_each_contact_step_damps_the_sliding_edge_and_energy_still_falls() -> None:
    traj = brick_run(0.0)  # the reported run: brick_push as written, h = 0.01
    tc, dmax = 2 * H, SOLIMP[1]  # default solref (2 h, 1)
    b_ref = 2 / (dmax * tc)  # MuJoCo documentation, "Computation: Constraint model": solref
    contact_steps = 0
    for k, step in enumerate(traj.steps):
        normal, friction = step.impulses[0]
        if normal <= 0:
            continue
        contact_steps += 1
        assert friction == pytest.approx(-MU * normal, rel=1e-9)  # sliding: only edge n - mu t carries
        (vx, vz), (vx1, vz1), phi = traj.v[k], traj.v[k + 1], traj.q[k, 1]
        # MuJoCo's impedance (power-2 sigmoid of |phi| / width) and the row's R and k_ref
        x = min(abs(phi) / SOLIMP[2], 1.0)
        y = x**2 / 0.5 if x <= 0.5 else 1 - (1 - x) ** 2 / 0.5
        d = SOLIMP[0] + y * (SOLIMP[1] - SOLIMP[0])
        k_ref = d / (dmax * tc) ** 2
        R = (1 - d) / d * (1 + MU**2) / MASS  # (1 - d)/d times the edge's Delassus diagonal
        # The edge row reaches its reference velocity less R times its impulse (the optimality
        # condition of the regularized dual, Todorov 2014), so with h b_ref = 1.05 the brick
        # leaves with v_z ~ mu v_x.
        edge_reference = (1 - H * b_ref) * (vz - MU * vx) - H * k_ref * phi
        assert vz1 - MU * vx1 == pytest.approx(edge_reference - R * normal, abs=1e-7)
    assert contact_steps >= 5
    # It hops (up to 1.8 cm within 0.5 s), yet energy, the push's potential included, falls
    # every step: the hop's energy comes from the sliding motion, not from the contact.
    assert traj.q[:, 1].max() > 0.01
    energy = 0.5 * MASS * (traj.v**2).sum(axis=1) + MASS * GRAVITY * traj.q[:, 1] - PUSH * traj.q[:, 0]
    assert np.all(np.diff(energy) < 0)
