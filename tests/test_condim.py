"""Contacts of condim 4 and 6 (MuJoCo's torsional and rolling friction, MuJoCo documentation
"Computation: contact"): their rows are MuJoCo's own, every formulation puts them in its cone
(:mod:`contactopt.formulations.angular_friction`), and the closed forms hold.

* A sphere spinning on the floor about the vertical (condim 4): the torsional impulse is bounded
  by ``mu_t lambda_n`` (``mu_t`` a length), so while it spins
  ``I dw/dt = -mu_t N``: ``w(T) = w0 - mu_t m g T / I`` with ``I = 2/5 m r^2``.
* A ball rolling on a plane (condim 6): about the contact point only the rolling torque acts,
  so ``L = I w + m r v`` falls by ``mu_r N T`` when the rolling row saturates. Keeping the
  ball rolling takes a sliding force ``F = mu_r N / (1.4 r)``, a share ``eps = F / (mu N) =
  mu_r / (1.4 r mu)`` of the cone, which MuJoCo's elliptic cone (and its polyhedral edges)
  takes from the rolling torque: ``L(T)`` lies between ``L0 - mu_r m g T`` and
  ``L0 - (1 - eps) mu_r m g T``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")

from contactopt.systems.mjcf.contacts import Chains, contact_jacobian, declared_condims, rotational_rows  # noqa: E402

H, G = 0.002, 9.81
RADIUS, MASS = 0.1, 1.0
INERTIA = 0.4 * MASS * RADIUS**2

TOP = """
<mujoco><option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1" condim="4" friction="0.5 {mu_t} 0.0001"/>
    <body pos="0 0 0.1"><freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="4" friction="0.5 {mu_t} 0.0001"/></body>
  </worldbody>
  <keyframe><key qpos="0 0 0.1 1 0 0 0" qvel="0 0 0 0 0 {spin}"/></keyframe>
</mujoco>
"""

BALL = """
<mujoco><option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" condim="6" friction="0.5 0.005 0.002"/>
    <body pos="0 0 0.1"><freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="6" friction="0.5 0.005 0.002"/></body>
  </worldbody>
  <keyframe><key qpos="0 0 0.1 1 0 0 0" qvel="1 0 0 0 10 0"/></keyframe>
</mujoco>
"""

#: Every formulation with friction (``gauss`` is frictionless), in both cones and forms.
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("ccp", {}, "clarabel"), ("ccp", {"form": "dual"}, "clarabel"),
    ("anitescu", {}, "clarabel"), ("anitescu", {"form": "dual"}, "clarabel"), ("lcp", {}, "lemke"),
    ("sap", {}, "newton"), ("sap", {}, "clarabel"),
    ("regularized", {}, "clarabel"), ("regularized", {"cone": "elliptic"}, "clarabel"),
    ("regularized", {"cone": "elliptic", "form": "primal"}, "newton"),
    ("regularized", {"form": "primal"}, "newton"),
]
ELLIPTIC = {"ccp", "sap"}


def scene(tmp_path: Path, text: str, name: str) -> co.Scene:
    """The model with candidates detected 1 cm early: the rigid formulations then keep the
    resting contact every step (at the model's own margin 0 a contact driven to ``dist = 0``
    is found or missed by rounding, which adds impacts to the friction this file measures)."""
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    return co.load_scene(path, system_options={"detection_margin": 0.01})


def in_cone(trajectory: co.Trajectory, mu: float, angular_mu: np.ndarray) -> None:
    """Every recorded impulse inside MuJoCo's elliptic cone (the polyhedral edges are inside it)."""
    for step in trajectory.steps:
        if not step.impulses.shape[0]:
            continue
        normal = step.impulses[:, 0].sum()
        scaled = np.concatenate([step.impulses[:, 1:].reshape(-1) / mu, step.angular_friction / angular_mu])
        assert np.linalg.norm(scaled) <= normal * (1 + 1e-6) + 1e-12


def test_rows_are_mujocos_efc_rows() -> None:
    """A condim-6 contact of an articulated chain (hinges and a ball joint): the frame rows and
    the torsional/rolling rows are MuJoCo's ``efc_J`` (elliptic cone), exactly."""
    xml = """<mujoco><option cone="elliptic"/><worldbody>
      <geom type="plane" size="1 1 .1" condim="6" friction="0.5 0.02 0.003"/>
      <body pos="0 0 .5"><joint type="hinge" axis="0 1 0"/><joint type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" contype="0" conaffinity="0"/>
        <body pos="0 0 -0.4"><joint type="ball"/><geom type="sphere" size=".11" pos="0.05 0 0" condim="6"/></body>
      </body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = [0.1, -0.2, 0.9, 0.1, 0.2, 0.3]
    data.qpos[2:] /= np.linalg.norm(data.qpos[2:])
    mujoco.mj_forward(model, data)
    assert data.ncon == 1 and int(data.contact.dim[0]) == 6 and declared_condims(model) == [6]
    contact = data.contact[0]
    body1, body2 = (np.array([model.geom_bodyid[g]]) for g in contact.geom)
    frame = np.asarray(contact.frame).reshape(1, 3, 3)
    chains = Chains(model)
    rows = np.vstack([contact_jacobian(chains, data, model.nv, frame, np.asarray(contact.pos)[None], body1, body2,
                                       dense=True), rotational_rows(chains, data, model.nv, frame, body1, body2)])
    efc = np.zeros((data.nefc, model.nv))
    mujoco.mju_sparse2dense(efc, data.efc_J, data.efc_J_rownnz, data.efc_J_rowadr, data.efc_J_colind) \
        if mujoco.mj_isSparse(model) else efc.__setitem__(slice(None), np.asarray(data.efc_J).reshape(efc.shape))
    assert np.array_equal(rows, efc[:6])


@pytest.mark.parametrize(("formulation", "options", "solver"), CASES)
def test_spinning_top_slows_at_the_torsional_rate(tmp_path: Path, formulation: str, options: dict[str, Any],
                                                   solver: str) -> None:
    """``w(T) = w0 - mu_t m g T / I`` (module docstring): exactly ``I dw = -mu_t sum lambda_n``
    step by step (the torsional row saturated while spinning), and within one step's decrement
    ``h mu_t m g / I`` of the closed form for the rigid formulations (their first step lifts the
    sphere by ``h mu_t w0``, Anitescu's relaxation, and loads the contact a little less), 2% for
    MuJoCo's soft contact (``regularized``: the normal impulse oscillates about ``m g h``)."""
    mu_t, spin, duration = 0.01, 10.0, 0.2
    top = scene(tmp_path, TOP.format(mu_t=mu_t, spin=spin), "top")
    trajectory = co.simulate(top, formulation=formulation, solver=solver, dt=H, duration=duration, options=options)
    assert all(step.status == co.Status.OPTIMAL for step in trajectory.steps)
    normal = sum(float(step.impulses[:, 0].sum()) for step in trajectory.steps)
    torsional = sum(float(step.angular_friction.sum()) for step in trajectory.steps)
    assert torsional == pytest.approx(-mu_t * normal, rel=1e-6)
    assert trajectory.v[-1, 5] - spin == pytest.approx(torsional / INERTIA, rel=1e-6)
    closed = spin - mu_t * MASS * G * duration / INERTIA
    rigid = formulation != "regularized"
    tolerance = H * mu_t * MASS * G / INERTIA if rigid else 0.02 * (spin - closed)
    assert trajectory.v[-1, 5] == pytest.approx(closed, abs=tolerance)
    in_cone(trajectory, 0.5, np.array([mu_t]))


@pytest.mark.parametrize(("formulation", "options", "solver"), [*CASES, ("gauss", {}, "clarabel")])
@pytest.mark.filterwarnings("ignore::contactopt.formulations.gauss.FrictionIgnoredWarning")
def test_rolling_ball_of_condim_six_runs_under_every_formulation(tmp_path: Path, formulation: str,
                                                                  options: dict[str, Any], solver: str) -> None:
    """The condim-6 ball runs under every formulation, its impulses inside the cone; with
    friction, ``L = I w + m r v`` about the contact point follows the rolling coefficient
    (module docstring: between ``L0 - mu_r m g T`` and ``L0 - (1 - eps) mu_r m g T``)."""
    mu, mu_r, duration = 0.5, 0.002, 0.4
    ball = scene(tmp_path, BALL, "ball")
    trajectory = co.simulate(ball, formulation=formulation, solver=solver, dt=H, duration=duration, options=options)
    assert all(step.status.usable for step in trajectory.steps)
    momentum = INERTIA * trajectory.v[:, 4] + MASS * RADIUS * trajectory.v[:, 0]
    if formulation == "gauss":
        assert momentum[-1] == pytest.approx(momentum[0], rel=1e-9)
        return
    in_cone(trajectory, mu, np.array([0.005, mu_r, mu_r]))
    loss = mu_r * MASS * G * duration
    eps = mu_r / (1.4 * RADIUS * mu)
    soft = 0.01 * loss if formulation == "regularized" else 1e-9  # the soft normal impulse about m g h
    assert momentum[0] - loss - soft <= momentum[-1] <= momentum[0] - (1 - eps) * loss + soft


def test_friction_coefficients_are_checked_at_load(tmp_path: Path) -> None:
    """MuJoCo accepts negative friction and combines geoms by the maximum, which would hide it:
    refused at load, one line naming the geom and the coefficient."""
    path = tmp_path / "negative.xml"
    path.write_text(TOP.format(mu_t=-0.01, spin=0.0))
    with pytest.raises(co.SceneError, match=r"torsional friction -0\.01"):
        co.load_scene(path)
