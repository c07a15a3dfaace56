"""The variational integrator with contact (issue 38; the "Lagrangian Mechanics" notes, "Variational Integrator with
Contacts"; :mod:`contactopt.integrators.variational_contact`): closed forms of a drop, a slide,
a stick on a slope and a pendulum swinging into a floor."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import OptionError
from contactopt.systems.base import System
from contactopt.systems.brick import Brick
from contactopt.systems.planar_body import PlanarBody

ROOT = Path(__file__).resolve().parents[1]
G, MU, V0 = 9.81, 0.5, 1.0


def _energy(system: System, traj: co.Trajectory) -> np.ndarray:
    return np.array([sum(system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)])


def _brick(h: float, v0: float = V0, g: float = G, push: float = 0.0, duration: float = 0.4) -> co.Scene:
    system = Brick({"m": 1.0, "g": g, "u": push}, {"mu": MU, "restitution": 0.0})
    return co.Scene(system=system, q0=np.zeros(2), v0=np.array([v0, 0.0]), dt=h, duration=duration,
                    formulation="variational", solver="lemke")


def test_a_dropped_point_mass_comes_to_rest_on_the_ground_without_gaining_energy() -> None:
    """Dropped from 1 m (frictionless): lands, stays at z = 0 to the solver tolerance, keeps vx."""
    scene = co.load_scene(ROOT / "problems" / "point_mass_drop.toml")
    traj = co.simulate(scene, formulation="variational", dt=0.01, duration=1.0)
    assert traj.completed, traj.message
    energy = _energy(scene.system, traj)
    assert np.diff(energy).max() <= 1e-12 * energy[0]  # no step gains energy (round-off)
    landed = traj.t > math.sqrt(2.0 / G) + 0.02
    assert np.abs(traj.q[landed, 1]).max() <= 1e-8  # at rest on the ground: contact_tol
    assert traj.q[:, 1].min() >= -1e-8  # never below it
    np.testing.assert_allclose(traj.v[landed, 0], 0.5, atol=1e-9)  # frictionless: vx kept
    # at rest the discrete momentum p = D2 L_d is M vd - h/2 m g (variational_contact's doc)
    np.testing.assert_allclose(traj.v[landed, 1], -0.5 * G * 0.01, atol=1e-9)


def test_a_dropped_ball_comes_to_rest() -> None:
    """A planar ball (disk with rotation) dropped 0.5 m: rests at z = r, energy never rises."""
    system = PlanarBody({"m": 1.0, "g": G, "radius": 0.1, "half_width": 0.1, "half_height": 0.1},
                        {"mu": 0.5, "restitution": 0.0}, shape="disk")
    scene = co.Scene(system=system, q0=np.array([0.0, 0.6, 0.0]), v0=np.array([0.3, 0.0, 0.0]), dt=0.01,
                     duration=1.0, formulation="variational", solver="clarabel")
    traj = co.simulate(scene, options={"contact": "ccp"})
    assert traj.completed, traj.message
    energy = _energy(system, traj)
    assert np.diff(energy).max() <= 1e-9 * energy[0]  # interior-point answers to ~1e-9
    assert (traj.q[:, 1] - 0.1).min() >= -1e-8
    np.testing.assert_allclose(traj.q[-10:, 1], traj.q[-1, 1], atol=1e-9)  # at rest vertically


@pytest.mark.parametrize("contact", ["lcp", "anitescu"])
def test_the_slide_stops_at_the_closed_form_to_first_order_in_h(contact: str) -> None:
    """Brick from v0 = 1 m/s, mu = 0.5: stops at v0^2 / (2 mu g) = 0.10194 m. First order in h:
    the error is within one step of travel, v0 h, at both h (measured: lcp 3.7e-5 and 4e-7 at
    h = 1e-2 and 1e-3). lcp (k = 2, exact Coulomb in the plane) does not hover; Anitescu's
    relaxation, named so, hovers by its own h mu |v_t| per step as in time stepping."""
    closed = V0**2 / (2 * MU * G)
    errors = []
    for h in (1e-2, 1e-3):
        solver = "lemke" if contact == "lcp" else "clarabel"
        traj = co.simulate(_brick(h), solver=solver, options={"contact": contact})
        assert traj.completed, traj.message
        errors.append(abs(traj.q[-1, 0] - closed))
        assert errors[-1] <= V0 * h
        np.testing.assert_allclose(traj.q[-20:, 0], traj.q[-1, 0], atol=1e-10)  # it stopped
        if contact == "lcp":
            assert np.abs(traj.q[:, 1]).max() <= 1e-12  # no hover
    assert errors[1] < errors[0]


def test_the_slide_agrees_with_the_time_stepping_coulomb_problem_to_first_order_in_h() -> None:
    """Against semi-implicit Euler with the exact Coulomb problem (coulomb/nsgs) on the same slide:
    both are first order, so they agree to within v0 h (the time-stepping one is v0 h / 2 short)."""
    for h in (1e-2, 5e-3):
        variational = co.simulate(_brick(h), options={"contact": "lcp"})
        coulomb = co.simulate(_brick(h), formulation="coulomb", solver="nsgs")
        assert variational.completed and coulomb.completed
        assert abs(variational.q[-1, 0] - coulomb.q[-1, 0]) <= V0 * h


@pytest.mark.parametrize(("theta", "sticks"), [(math.radians(20.0), True), (math.radians(35.0), False)])
def test_a_block_on_a_slope_sticks_below_the_friction_angle(theta: float, sticks: bool) -> None:
    """A slope tilted theta, in its own frame: gravity g cos(theta) into the plane and a push
    m g sin(theta) along it (the brick's u). tan 20 deg = 0.36 < mu = 0.5 sticks; tan 35 = 0.70
    slides with a = g (sin - mu cos), distance a T^2 / 2 to first order in h."""
    h, T = 1e-2, 0.5
    scene = _brick(h, v0=0.0, g=G * math.cos(theta), push=G * math.sin(theta), duration=T)
    traj = co.simulate(scene, options={"contact": "lcp"})
    assert traj.completed, traj.message
    if sticks:
        assert np.abs(traj.q[:, 0]).max() <= 1e-12
    else:
        a = G * (math.sin(theta) - MU * math.cos(theta))
        assert abs(traj.q[-1, 0] - a * T**2 / 2) <= a * T * h


def test_a_pendulum_swinging_into_the_floor_loses_the_impact_energy_and_no_more() -> None:
    """The Cartesian pendulum (bilateral row) released horizontally hits the floor y = -0.8.
    Before the impact the energy is that of the contact-free DEL (the same equations); the
    impact is plastic, so the mass rests at (0.6, -0.8) with E = -m g 0.8 up to the discrete
    rest momentum (|v| = g h / 2 at most, 1/2 m (g h)^2 in energy), and no energy is lost after."""
    scene = co.load_scene(ROOT / "problems" / "cartesian_pendulum_floor.toml")
    h = 1e-2
    traj = co.simulate(scene, formulation="variational", solver="lemke", options={"contact": "lcp"}, dt=h,
                       duration=2.0)
    assert traj.completed, traj.message
    energy = _energy(scene.system, traj)
    normal = np.array([record.impulses[0, 0] for record in traj.steps])
    first = int(np.argmax(normal > 0))
    free = co.load_scene(ROOT / "problems" / "cartesian_pendulum.toml")
    reference = co.simulate(free, formulation="variational", dt=h, duration=first * h)
    np.testing.assert_allclose(energy[: first + 1], _energy(free.system, reference), atol=1e-7)
    assert np.abs(energy[: first + 1] - energy[0]).max() < 1e-2  # the DEL's bounded oscillation
    np.testing.assert_allclose(traj.q[-1], [0.6, -0.8], atol=1e-8)
    settled = energy[first + 5 :]
    assert abs(settled[-1] - (-G * 0.8)) <= 0.5 * (G * h) ** 2
    np.testing.assert_allclose(settled, settled[-1], atol=1e-9)  # no loss between impacts
    assert np.diff(energy[first:]).max() <= 1e-9  # from the impact on, never a gain


def test_variational_refuses_unknown_iterates_and_their_solvers_before_step_0() -> None:
    with pytest.raises(OptionError, match="contact must be one of"):
        co.simulate(_brick(1e-2), options={"contact": "gauss"})
    with pytest.raises(OptionError, match=r"iterates are 'lcp' programs .* solver 'clarabel' cannot take"):
        co.simulate(_brick(1e-2), solver="clarabel", options={"contact": "lcp"})


def test_a_planar_box_on_its_four_corners_slides_to_the_same_stop_without_tipping() -> None:
    """The planar box (q = [x, z, theta], four corner contacts whose rows depend on theta) from
    1 m/s: stops at v0^2 / (2 mu g) within v0 h, with no tilt and no hover under lcp."""
    system = PlanarBody({"m": 1.0, "g": G, "radius": 0.1, "half_width": 0.1, "half_height": 0.1},
                        {"mu": MU, "restitution": 0.0}, shape="box")
    h = 1e-2
    scene = co.Scene(system=system, q0=np.array([0.0, 0.1, 0.0]), v0=np.array([V0, 0.0, 0.0]), dt=h,
                     duration=0.4, formulation="variational", solver="lemke")
    traj = co.simulate(scene, options={"contact": "lcp"})
    assert traj.completed, traj.message
    assert abs(traj.q[-1, 0] - V0**2 / (2 * MU * G)) <= V0 * h
    assert np.abs(traj.q[:, 2]).max() <= 1e-12
    np.testing.assert_allclose(traj.q[:, 1], 0.1, atol=1e-12)
