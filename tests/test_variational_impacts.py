"""The variational integrator loses an impact's energy and no more between impacts (issue 38):
Housner's rocking block, an inverted pendulum swinging into the ground on one corner and then
the other (Housner 1963, "The behavior of inverted pendulum structures during earthquakes":
a plastic impact onto the other corner keeps the angular momentum about it, so the angular
velocity drops by ``r = 1 - 3/2 sin^2 alpha``, ``alpha = atan(w / h)``, and the energy by
``r^2``; between impacts the block pivots on one corner and keeps its energy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import contactopt as co
from contactopt.systems.planar_body import PlanarBody

G, W, H = 9.81, 0.02, 0.2  # half width and half height [m]: alpha = 0.0997 rad
ALPHA, RADIUS = math.atan(W / H), math.hypot(W, H)
HOUSNER = (1 - 1.5 * math.sin(ALPHA) ** 2) ** 2  # energy kept by an impact: 0.9705
RATE = math.sqrt(3 * G / (4 * RADIUS))  # p: the pivoting block's rate, I_corner = 4/3 m R^2 [1/s]


def _rocking(h: float, duration: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The block released at rest on its right corner, tilted alpha / 2 (mu = 1: no slip):
    its angle, its energy above upright rest, and the steps at which it changes corner."""
    system = PlanarBody({"m": 1.0, "g": G, "radius": 0.1, "half_width": W, "half_height": H},
                        {"mu": 1.0, "restitution": 0.0}, shape="box")
    tilt = -0.5 * ALPHA  # clockwise: on the corner (+w, -h)
    corner = (W * math.cos(tilt) + H * math.sin(tilt), W * math.sin(tilt) - H * math.cos(tilt))
    scene = co.Scene(system=system, q0=np.array([-corner[0], -corner[1], tilt]), v0=np.zeros(3), dt=h,
                     duration=duration, formulation="variational", solver="lemke")
    traj = co.simulate(scene, options={"contact": "lcp"})
    assert traj.completed, traj.message
    assert min(float(record.phi.min()) for record in traj.steps) >= -1e-8  # penetration: contact_tol
    energy = np.array([sum(system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)]) - G * H
    angle = traj.q[:, 2]
    impacts = [int(k) for k in np.nonzero(np.sign(angle[1:]) != np.sign(angle[:-1]))[0]]
    return angle, energy, impacts


def _check_swings(energy: np.ndarray, impacts: list[int], h: float, tol: float) -> list[float]:
    """Per impact: the energy kept (after / before), and between impacts the energy's spread
    within ``(h p)^2`` of the swing's (the DEL's oscillation, no drift)."""
    kept, start = [], 0
    for k in impacts:
        swing = energy[start + 3: k - 1]  # pivoting on one corner (the impact steps left out)
        assert swing.max() - swing.min() <= (h * RATE) ** 2 * energy[k - 1], (k, swing.max() - swing.min())
        kept.append(energy[k + 3] / energy[k - 1])
        assert abs(kept[-1] - HOUSNER) <= tol, (k, kept[-1])
        start = k
    return kept


def test_the_rocking_block_loses_housners_energy_at_each_impact_and_none_between() -> None:
    """h = 2e-3, 1.2 s: three impacts. Between them the energy stays within (h p)^2 = 1.5e-4 of
    the swing (measured 4e-5 to 9e-5: the constrained DEL's oscillation, where the contact rows
    at q_k+1 drifted 1e-2 of it per swing). Each impact keeps Housner's r^2 = 0.9705 to first
    order in h: measured 0.898, 0.926, 0.935, within 8 h p = 0.097 (the impact falls inside a
    step; at h = 1e-3 the error halves, the slow test below)."""
    h = 2e-3
    _, energy, impacts = _rocking(h, 1.2)
    assert len(impacts) >= 3
    kept = _check_swings(energy, impacts, h, 8 * h * RATE)
    assert max(kept) < 1.0  # every impact loses energy


@pytest.mark.slow
def test_twenty_resolved_impacts_lose_their_energy_and_no_more() -> None:
    """h = 1e-3 for 5.4 s: the first 20 impacts, each after a swing of at least 150 steps. Every
    swing keeps its energy within (h p)^2 (measured 0.67 to 0.78 of it) and every impact keeps
    Housner's r^2 to within 12 h p = 0.073 (measured 2.7 to 12 h p: the error grows as the
    swings shrink, since the energy read from (q_k, v_k) carries the DEL's O(g h) rest momentum,
    |v| = g h / 2 at rest, against a smaller speed); the first three impacts' mean error (0.031)
    is below the h = 2e-3 one's (0.051): first order in h. Later, shorter swings are not
    resolved (under 100 steps an impact can land twice on one corner), and after about 45
    impacts the block is at rest (the rocking of a block ends in finite time)."""
    fine: list[float] = []
    coarse: list[float] = []
    for h, duration, kept, count in ((1e-3, 5.4, fine, 20), (2e-3, 1.2, coarse, 3)):
        _, energy, impacts = _rocking(h, duration)
        assert len(impacts) >= count
        kept += _check_swings(energy, impacts[:count], h, 12 * h * RATE)
    assert np.mean(np.abs(np.array(fine[:3]) - HOUSNER)) < np.mean(np.abs(np.array(coarse) - HOUSNER))
