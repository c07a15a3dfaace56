"""The Lie-group variational integrator of free ``rigid3d`` bodies on unit quaternions
(issue 38; :mod:`contactopt.integrators.variational_rigid`): momenta and energy of a tumbling
box with a non-symmetric inertia."""

from __future__ import annotations

import numpy as np
import pytest

import contactopt as co
from contactopt.systems.rigid3d import Rigid3D
from contactopt.systems.rigid3d_bodies import RigidBody


def _tumbling(h: float, steps: int, gravity: tuple[float, float, float] = (0.0, 0.0, 0.0),
              ground: bool = False) -> tuple[Rigid3D, co.Scene]:
    """A 2 kg box of half extents (0.3, 0.2, 0.1) (principal inertia 0.033, 0.067, 0.087)
    spun mostly about its intermediate axis, the unstable one: it tumbles."""
    body = RigidBody("box", "box", np.array([0.3, 0.2, 0.1]), 2.0, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]),
                     np.array([0.3, -0.2, 0.1]), np.array([0.4, 3.0, 0.2]))
    system = Rigid3D([body], {"mu": 0.5}, gravity=gravity, ground=ground)
    q0, v0 = system.default_state()
    return system, co.Scene(system=system, q0=q0, v0=v0, dt=h, duration=h * steps, formulation="variational",
                            solver="clarabel")


def _momenta(system: Rigid3D, traj: co.Trajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Iw = np.array([system.inertia_world(q)[0] for q in traj.q])
    angular = np.einsum("nij,nj->ni", Iw, traj.v[:, 3:])  # about the centre of mass, world frame
    linear = system.bodies[0].mass * traj.v[:, :3]
    energy = np.array([sum(system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)])
    return linear, angular, energy


def _check(system: Rigid3D, traj: co.Trajectory) -> float:
    assert traj.completed, traj.message
    linear, angular, energy = _momenta(system, traj)
    # the discrete Noether theorem: exact up to rounding (measured 2e-13 and 0)
    assert np.abs(angular - angular[0]).max() <= 1e-10 * np.linalg.norm(angular[0])
    assert np.abs(linear - linear[0]).max() <= 1e-10 * np.linalg.norm(linear[0])
    np.testing.assert_allclose(np.linalg.norm(traj.q[:, 3:], axis=1), 1.0, atol=1e-14)  # unit quaternions
    return float(np.abs(energy - energy[0]).max() / energy[0])


def test_free_flight_conserves_both_momenta_and_the_energy() -> None:
    """10^3 steps of h = 0.05 (the tumble's period is about 3 s): momenta exact; the energy of
    the Moser-Veselov/LGVI map of a free body is conserved to rounding (measured 2e-13)."""
    system, scene = _tumbling(0.05, 1000)
    assert _check(system, co.simulate(scene)) <= 1e-10


@pytest.mark.slow
def test_ten_thousand_steps_of_free_flight() -> None:
    """10^4 steps of h = 1e-2: momenta to 1e-10; the energy moves by the Newton solves'
    rounding alone (measured 4.5e-10 relative), where semi-implicit Euler's error is O(1)."""
    system, scene = _tumbling(1e-2, 10_000)
    assert _check(system, co.simulate(scene)) <= 1e-8


def test_semi_implicit_euler_does_not_conserve_what_the_variational_step_does() -> None:
    """The contrast that makes the check able to fail: time stepping (gauss, no contacts) on the
    same tumble, 10^3 steps of h = 1e-2, loses the angular momentum by percents."""
    system, scene = _tumbling(1e-2, 1000)
    _, angular, _ = _momenta(system, co.simulate(scene, formulation="gauss"))
    assert np.abs(angular - angular[0]).max() > 1e-3 * np.linalg.norm(angular[0])
    _, angular, _ = _momenta(system, co.simulate(scene))
    assert np.abs(angular - angular[0]).max() <= 1e-10 * np.linalg.norm(angular[0])


def test_falling_free_body_is_exact_under_gravity() -> None:
    """Gravity (a linear potential): the midpoint DEL is exact, x = x0 + v0 t + g t^2 / 2."""
    _, scene = _tumbling(1e-2, 200, gravity=(0.0, 0.0, -9.81))
    traj = co.simulate(scene)
    assert traj.completed
    expected = np.array([0.3, -0.2, 0.1])[None, :] * traj.t[:, None]
    expected[:, 2] += -0.5 * 9.81 * traj.t**2
    np.testing.assert_allclose(traj.q[:, :3], expected, atol=1e-11)
