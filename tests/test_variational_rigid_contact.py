"""The Lie-group variational integrator of ``rigid3d`` with contact (issue 38;
:mod:`contactopt.integrators.variational_rigid`, :func:`rigid_lagrangian`, and the contact step of
:mod:`contactopt.integrators.variational_contact`): closed forms of a slide, a stick on a
slope, a dropped ball and a dropped tumbling box, on boxes as their corners and spheres on the
ground."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.systems.rigid3d import Rigid3D
from contactopt.systems.rigid3d_bodies import RigidBody
from contactopt.systems.rigid3d_collision import GroundPlane

ROOT = Path(__file__).resolve().parents[1]
G, MU, V0 = 9.81, 0.5, 1.0


def _energy(system: Rigid3D, traj: co.Trajectory) -> np.ndarray:
    return np.array([sum(system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)])


@pytest.mark.parametrize(("contact", "solver"), [("lcp", "lemke"), ("coulomb", "nsgs")])
def test_the_box_slide_stops_at_the_closed_form_to_first_order_in_h_without_hovering(contact: str,
                                                                                      solver: str) -> None:
    """problems/box_slide.toml (a cube on its four bottom corners, 1 m/s, mu = 0.5) stops at
    v0^2 / (2 mu g) = 0.10194 m. The end point is within one step's travel v0 h at both h
    (measured 3.7e-5 and 3.1e-6 at h = 1e-2 and 5e-3 under lcp) and closer at the smaller h.
    Neither the polyhedral cone along the slide (lcp) nor the exact cone (coulomb iterates,
    De Saxce's complementarity) lifts the box: z stays 0.1 to the solver's tolerance (lcp:
    rounding; nsgs: measured 2e-10, its 1e-8 tolerance bounds it)."""
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    closed = V0**2 / (2 * MU * G)
    errors = []
    for h in (1e-2, 5e-3):
        traj = co.simulate(scene, formulation="variational", solver=solver, dt=h, duration=0.4,
                           options={"contact": contact})
        assert traj.completed, traj.message
        errors.append(abs(traj.q[-1, 0] - closed))
        assert errors[-1] <= V0 * h
        np.testing.assert_allclose(traj.q[-10:, 0], traj.q[-1, 0], atol=1e-9)  # it stopped
        assert np.abs(traj.q[:, 2] - 0.1).max() <= (1e-12 if contact == "lcp" else 1e-8)  # no hover
        assert np.abs(traj.q[:, 3] - 1.0).max() <= 1e-12  # no tipping: the quaternion stays identity
    assert errors[1] < errors[0]


def test_the_box_slide_agrees_with_the_time_stepping_coulomb_problem_to_first_order_in_h() -> None:
    """Against semi-implicit Euler with the exact Coulomb problem (coulomb/nsgs) on the same
    rigid3d slide: both first order, so their stops agree within v0 h (measured 5e-3 and 2.5e-3:
    the time-stepping stop is short by about v0 h / 2)."""
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    for h in (1e-2, 5e-3):
        variational = co.simulate(scene, formulation="variational", solver="lemke", dt=h, duration=0.4,
                                  options={"contact": "lcp"})
        coulomb = co.simulate(scene, formulation="coulomb", solver="nsgs", dt=h, duration=0.4)
        assert variational.completed and coulomb.completed
        assert abs(variational.q[-1, 0] - coulomb.q[-1, 0]) <= V0 * h


def _slope(degrees: float) -> Rigid3D:
    """A cube resting on a plane tilted ``degrees`` about y (normal ``[-sin, 0, cos]``)."""
    theta = math.radians(degrees)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    box = RigidBody("box", "box", np.full(3, 0.1), 1.0, 0.1 * normal,
                    np.array([math.cos(theta / 2), 0.0, -math.sin(theta / 2), 0.0]), np.zeros(3), np.zeros(3))
    return Rigid3D([box], {"mu": MU}, plane=GroundPlane(normal, np.zeros(3)))


@pytest.mark.parametrize(("degrees", "contact", "solver"), [(20.0, "lcp", "lemke"), (20.0, "coulomb", "nsgs"),
                                                             (35.0, "lcp", "lemke")])
def test_a_box_on_a_tilted_plane_sticks_below_the_friction_angle(degrees: float, contact: str,
                                                                 solver: str) -> None:
    """tan 20 deg = 0.36 < mu = 0.5: the box stays (lcp: to rounding; the exact cone by nsgs to
    its tolerance, measured 7e-9 in 0.5 s). tan 35 deg = 0.70 > mu: it slides down the slope
    a T^2 / 2 with a = g (sin - mu cos); the midpoint DEL is exact for a constant force
    (measured 2e-16 relative), so 1e-12 relative."""
    system = _slope(degrees)
    q0, v0 = system.default_state()
    h, T = 1e-2, 0.5
    scene = co.Scene(system=system, q0=q0, v0=v0, dt=h, duration=T, formulation="variational", solver=solver)
    traj = co.simulate(scene, options={"contact": contact})
    assert traj.completed, traj.message
    theta = math.radians(degrees)
    moved = traj.q[:, :3] - q0[:3]
    if degrees == 20.0:
        assert np.abs(moved).max() <= (1e-12 if contact == "lcp" else 1e-7)
    else:
        a = G * (math.sin(theta) - MU * math.cos(theta))
        along = -moved[-1, 0] / math.cos(theta)
        assert abs(along - a * T**2 / 2) <= 1e-12 * a * T**2
        normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
        assert np.abs(moved @ normal).max() <= 1e-12  # on the plane, no hover


@pytest.mark.parametrize(("contact", "solver"), [("lcp", "lemke"), ("ccp", "clarabel")])
def test_a_dropped_ball_comes_to_rest_rolling_without_gaining_energy(contact: str, solver: str) -> None:
    """A ball (r = 0.1, 1 kg) dropped from 0.5 m with vx = 0.3: the plastic impact stops it on
    the ground (penetration at the step's contact_tol, 1e-8; measured 0), no step gains energy
    (round-off, measured 3e-15), and friction turns the slip into rolling at 5/7 v0 (the angular
    momentum about the contact point is kept: the impulses act through it): measured relative
    error 2e-5 at h = 1e-2, so within h. At rest the discrete momentum is the DEL's
    ``vz = -g h / 2`` (as on the planar point mass)."""
    ball = RigidBody("ball", "sphere", np.array([0.1]), 1.0, np.array([0.0, 0.0, 0.6]), np.array([1.0, 0, 0, 0]),
                     np.array([0.3, 0.0, 0.0]), np.zeros(3))
    system = Rigid3D([ball], {"mu": MU})
    q0, v0 = system.default_state()
    h = 1e-2
    scene = co.Scene(system=system, q0=q0, v0=v0, dt=h, duration=1.0, formulation="variational", solver=solver)
    traj = co.simulate(scene, options={"contact": contact})
    assert traj.completed, traj.message
    energy = _energy(system, traj)
    assert np.diff(energy).max() <= 1e-12 * energy[0]
    assert (traj.q[:, 2] - 0.1).min() >= -1e-8
    landed = traj.t > math.sqrt(2 * 0.5 / G) + 0.05
    np.testing.assert_allclose(traj.q[landed, 2], 0.1, atol=1e-8)
    np.testing.assert_allclose(traj.v[landed, 2], -0.5 * G * h, atol=1e-9)
    assert abs(traj.v[-1, 0] / (5 / 7 * 0.3) - 1) <= h
    assert abs(traj.v[-1, 4] * 0.1 / traj.v[-1, 0] - 1) <= h  # rolling: w_y r = vx


@pytest.mark.parametrize(("contact", "solver"), [("lcp", "lemke"), ("coulomb", "nsgs")])
def test_a_tumbling_box_dropped_on_its_corners_comes_to_rest_on_a_face(contact: str, solver: str) -> None:
    """problems/box_drop.toml (tilted, spinning cube from 0.5 m) with restitution 0: it lands on
    an edge, rotates onto a face and stays, at height 0.1 to the contact tolerance, with a body
    axis vertical, and no step gains energy beyond the step's tolerance: the DEL residual is
    accepted below contact_tol = 1e-8 of the momentum, so about 1e-8 |v| J a step; measured
    6e-11 J (lcp) and 1e-9 J (nsgs), bounded here by 1e-9 |E0| = 6e-9 J."""
    drop = co.load_scene(ROOT / "problems" / "box_drop.toml")
    assert isinstance(drop.system, Rigid3D)
    system = Rigid3D(drop.system.bodies, {"mu": MU, "restitution": 0.0})
    scene = dataclasses.replace(drop, system=system, dt=1e-2, duration=1.0, formulation="variational",
                                solver=solver)
    traj = co.simulate(scene, options={"contact": contact})
    assert traj.completed, traj.message
    energy = _energy(system, traj)
    assert np.diff(energy).max() <= 1e-9 * abs(energy[0])
    assert min(float(record.phi.min()) for record in traj.steps) >= -1e-8  # penetration: contact_tol
    np.testing.assert_allclose(traj.q[-10:, 2], 0.1, atol=1e-8)
    w, x, y, z = traj.q[-1, 3:]
    up = np.array([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])  # R's last row
    assert abs(np.abs(up).max() - 1) <= 1e-9  # a body axis is vertical: it rests on a face
    assert np.abs(traj.v[-1, 3:]).max() <= 1e-8 and np.abs(traj.v[-1, :2]).max() <= 1e-8


def test_far_from_the_ground_the_contact_step_is_the_free_flight_step() -> None:
    """A tumbling box 10 m above the ground, no gravity: its 8 candidates are inactive, and the
    contact step (each iterate an lcp with zero impulses) solves the same Lie-group DEL as the
    free-flight Newton: the runs agree to the contact step's tolerance (contact_tol = 1e-12 on
    the DEL residual, whose per-step error in w is 1e-12 / I_min = 3e-11; over 100 steps
    3e-9; measured 7e-10 in v and 1e-10 in q, 4 iterates a step)."""
    body = RigidBody("box", "box", np.array([0.3, 0.2, 0.1]), 2.0, np.array([0.0, 0.0, 10.0]),
                     np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.3, -0.2, 0.1]), np.array([0.4, 3.0, 0.2]))
    runs = []
    for ground in (True, False):
        system = Rigid3D([body], {"mu": MU}, gravity=(0.0, 0.0, 0.0), ground=ground)
        q0, v0 = system.default_state()
        scene = co.Scene(system=system, q0=q0, v0=v0, dt=1e-2, duration=1.0, formulation="variational",
                         solver="lemke")
        runs.append(co.simulate(scene, options={"contact": "lcp", "contact_tol": 1e-12}))
        assert runs[-1].completed, runs[-1].message
    assert all(record.impulses.shape == (8, 3) for record in runs[0].steps)
    np.testing.assert_allclose(runs[0].v, runs[1].v, rtol=0, atol=1e-8)
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-9)


def test_a_run_that_names_no_iterate_takes_the_one_its_solver_solves() -> None:
    """contactopt.integrators.variational.default_iterate: with clarabel the default is
    Anitescu's relaxation (a QP), with nsgs the exact cone (``coulomb``), which does not hover:
    the rigid3d box slide stays at z = 0.1 to nsgs's tolerance (measured 3.4e-11) and stops at
    the closed form v0^2 / (2 mu g) within one step's travel (measured 0.1019368 m at h = 1e-3)."""
    scene = dataclasses.replace(co.load_scene("box_slide"), duration=0.4)
    traj = co.simulate(scene, formulation="variational", solver="nsgs")
    assert traj.completed, traj.message
    assert all("coulomb iterates" in record.message for record in traj.steps)
    assert np.abs(traj.q[:, 2] - 0.1).max() <= 1e-8  # no hover (anitescu lifts it ~h mu |v_t|)
    assert abs(traj.q[-1, 0] - 1.0 / (2 * 0.5 * 9.81)) <= 1.0 * scene.dt
    relaxed = co.simulate(dataclasses.replace(scene, duration=0.02), formulation="variational", solver="clarabel")
    assert all("anitescu iterates" in record.message for record in relaxed.steps)
