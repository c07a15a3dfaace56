"""Restitution in the variational contact step (issue 38; :mod:`contactopt.integrators.variational_contact`,
"Restitution"): Newton's impact law at the knot where the impulse acts (Tedrake 2022, "Impulsive
Collisions": ``phidot+ = -e phidot-``), beside Signorini. A pendulum swinging into a wall loses
``1 - e^2`` of its energy at each impact and nothing between them, over 100 impacts; the
bouncing ball's apexes fall by ``e^2``."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from numpy.typing import ArrayLike

import contactopt as co
from contactopt.model.step import Contacts
from contactopt.systems.pendulums import Pendulum

G, L, E_REST = 9.81, 1.0, 0.99
OMEGA = math.sqrt(G / L)  # small-swing angular frequency [rad/s]


class WallPendulum(Pendulum):
    """The simple pendulum with a wall along the vertical below the pivot: one normal-only contact,
    the gap ``phi = theta`` (the bob hits the wall at the bottom of its swing, where the
    potential is least, so the energy measured from there is all kinetic at the impact)."""

    def contacts(self, q: ArrayLike) -> Contacts:
        theta = float(np.asarray(q, dtype=np.float64).reshape(-1)[0])
        return Contacts(phi=np.array([theta]), J=np.array([[1.0]]), mu=np.zeros(1),
                        restitution=np.array([self.restitution]), dim=1)


def _swings(h: float, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(discrete energy at the knots, measured from the wall, the impact steps, the energy
    averaged over each swing between impacts) of the pendulum released at 1 rad."""
    system = WallPendulum({"m": 1.0, "l": L, "g": G}, {"mu": 0.0, "restitution": E_REST})
    scene = co.Scene(system=system, q0=np.array([1.0]), v0=np.zeros(1), dt=h, duration=duration,
                     formulation="variational", solver="lemke")
    traj = co.simulate(scene, options={"contact": "lcp"})
    assert traj.completed, traj.message
    energy = 0.5 * L**2 * traj.v[:, 0] ** 2 + G * L * (1.0 - np.cos(traj.q[:, 0]))
    impacts = np.flatnonzero([record.impulses[0, 0] > 0 for record in traj.steps])
    assert traj.q[:, 0].min() >= -1e-8  # never through the wall
    means = np.array([energy[a + 1: b + 1].mean() for a, b in itertools.pairwise(impacts)])
    return energy, impacts, means


def test_a_pendulum_swinging_into_a_wall_loses_the_impact_energy_and_no_more_over_100_impacts() -> None:
    """l = 1 m, e = 0.99, released at 1 rad, h = 0.1 s (about 10 steps a swing), 104 s: 100
    impacts and more. Each swing's energy (the mean of the knots' discrete energy over the
    swing, which averages the DEL's phase-dependent O(h^2) oscillation) is e^2 times the
    previous one to

        (1 - e^2) (omega h)^2 + s,

    the first term bounding the loss's error from the impact acting at the knot theta_k in
    [0, h |w|) instead of at the wall (the knot's potential ``<= 1/2 omega^2 theta_k^2 <=
    (omega h)^2 E`` keeps its ``1 - e^2`` share), the second the largest relative spread of the
    energy within a swing (measured 1.8e-3; the ratios' error: 2.8e-4 at most). The
    tolerance, 3.7e-3, is a third of the gap between e^2 and e (an impact that kept ``e`` of
    the energy fails). Between impacts the energy oscillates without drift: its spread over a
    swing is the DEL's O(h^2), under (omega h)^2 / 20 of the energy (measured (omega h)^2 / 56;
    halving h divides it by 3.9: the slow test), and its least-squares trend over each swing
    is inside that spread. Over the whole run the last swing's energy is e^(2n) times the
    first's to n (1 - e^2) (omega h)^2 / 3, the impact-location bias summed (theta_k is uniform
    in [0, h |w|), whose mean square is a third of the largest; measured 0.9 %)."""
    h = 0.1
    energy, impacts, means = _swings(h, 104.0)
    assert impacts.size >= 100
    spreads = np.array([np.ptp(energy[a + 1: b + 1]) for a, b in itertools.pairwise(impacts)])
    spread = float((spreads / means).max())
    assert spread <= (OMEGA * h) ** 2 / 20
    ratios = means[1:] / means[:-1]
    np.testing.assert_allclose(ratios, E_REST**2, rtol=0, atol=(1 - E_REST**2) * (OMEGA * h) ** 2 + spread)
    for a, b in itertools.pairwise(impacts):
        swing = energy[a + 1: b + 1]
        trend = np.polyfit(np.arange(swing.size), swing, 1)[0] * swing.size
        assert abs(trend) <= np.ptp(swing)
    n = means.size - 1
    assert abs(means[-1] / (means[0] * E_REST ** (2 * n)) - 1) <= n * (1 - E_REST**2) * (OMEGA * h) ** 2 / 3


@pytest.mark.slow
def test_the_pendulums_impact_and_swing_errors_fall_with_h() -> None:
    """The same pendulum at h = 0.05 and 0.025 s (about 20 and 40 steps a swing, 108 s): the
    swing energy's spread falls by about 4 (the DEL's O(h^2) oscillation; measured 4.5e-4 and
    1.1e-4 of the energy), and the largest error of the swing ratios and the cumulative error
    over the 100-odd impacts fall with h, at least first order (measured 2.3e-4 / 1.2e-4 and
    6.4e-3 / 3.4e-3)."""
    spreads, worst, total = [], [], []
    for h in (0.05, 0.025):
        energy, impacts, means = _swings(h, 108.0)
        assert impacts.size >= 100
        spreads.append(max(np.ptp(energy[a + 1: b + 1]) / m
                           for a, b, m in zip(impacts[:-1], impacts[1:], means, strict=True)))
        worst.append(float(np.abs(means[1:] / means[:-1] - E_REST**2).max()))
        n = means.size - 1
        total.append(abs(means[-1] / (means[0] * E_REST ** (2 * n)) - 1))
    assert spreads[1] <= spreads[0] / 3  # second order: 4, less the sampling's noise
    assert worst[1] <= 0.6 * worst[0] and total[1] <= 0.6 * total[0]  # first order: 0.5


def _apexes(traj: co.Trajectory, radius: float) -> np.ndarray:
    """The heights above the ground of the lowest point at the local maxima after the drop."""
    z = traj.q[:, 1] - radius
    return np.array([z[i] for i in range(1, z.size - 1) if z[i] >= z[i - 1] and z[i] > z[i + 1]])


def test_the_bouncing_balls_apexes_fall_by_e_squared() -> None:
    """problems/bouncing_ball.toml (e = 0.8, dropped from h0 = 1 m): the event-driven closed
    form has apexes e^(2k) h0 (Tedrake 2022, "Impulsive Collisions": the normal velocity leaves
    at e times its approach). The variational step bounces at the knot before the ground, up to
    one step's travel ``h |v|`` (4.4e-3 m at the first landing) above it, and the impact law acts
    on the knot velocity, so each apex is e^2 times the last to first order in h: within
    ``2 g h / |v|`` relative per bounce (the speed's change over one step), checked at two h
    with the first apex's error falling (measured 0.6456 and 0.6424 m at h = 4e-3 and 2e-3, the
    second 0.4147 and 0.4136 m against 0.4096)."""
    scene = co.load_scene("bouncing_ball")
    e, radius = 0.8, 0.1
    errors = []
    for h in (4e-3, 2e-3):
        traj = co.simulate(scene, formulation="variational", dt=h, duration=1.5)
        assert traj.completed, traj.message
        apexes = _apexes(traj, radius)
        assert apexes.size >= 2
        closed = e ** (2 * np.arange(1, apexes.size + 1))
        speed = math.sqrt(2 * G * closed[-1] / e**2)  # the slowest landing's speed
        np.testing.assert_allclose(apexes, closed, rtol=2 * G * h / speed * apexes.size)
        errors.append(abs(apexes[0] - closed[0]))
        assert (traj.q[:, 1] - radius).min() >= -1e-8
    assert errors[1] < errors[0]


def test_the_derivative_through_an_impact_matches_central_differences_of_whole_runs() -> None:
    """The wall pendulum through its first impact (h = 2e-2, 0.8 s: it hits the wall at
    about 0.5 s), d/dv0 and d/dl of the final state: the contacts under Newton's impact law are
    the same set at the moved inputs, and their bound moves with v_k (contactopt.derivatives.
    variational). To 1e-6 relative against differences of 1e-6 (measured 8e-9 and 5e-9; the
    difference's own error is contact_tol 1e-12 over eps, 1e-6, and eps^2)."""
    system = WallPendulum({"m": 1.0, "l": L, "g": G}, {"mu": 0.0, "restitution": E_REST})
    scene = co.Scene(system=system, q0=np.array([1.0]), v0=np.array([0.3]), dt=2e-2, duration=0.8,
                     formulation="variational", solver="lemke")
    run = {"options": {"contact": "lcp", "contact_tol": 1e-12}}
    traj = co.simulate(scene, sensitivities=["v0", "l"], **run)
    assert traj.completed, traj.message
    assert any(record.impulses[0, 0] > 0 for record in traj.steps)  # the impact is in the run

    def final(moved: co.Scene) -> np.ndarray:
        out = co.simulate(moved, **run)
        return np.concatenate([out.q[-1], out.v[-1]])

    eps = 1e-6
    by_v0 = final(dataclasses.replace(scene, v0=scene.v0 + eps)) - final(dataclasses.replace(scene, v0=scene.v0 - eps))
    by_l = (final(dataclasses.replace(scene, system=system.with_parameters({"l": L * (1 + eps)})))
            - final(dataclasses.replace(scene, system=system.with_parameters({"l": L * (1 - eps)}))))
    for name, reference in (("v0", by_v0 / (2 * eps)), ("l", by_l / (2 * eps * L))):
        computed = np.asarray(traj.sensitivities[name][-1]).reshape(-1)
        error = np.abs(computed - reference.reshape(-1)).max() / np.abs(reference).max()
        assert error <= 1e-6, (name, error)
