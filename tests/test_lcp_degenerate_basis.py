"""An LCP derivative where strict complementarity is lost (issue 26, found by sweeping the
derivatives over scenes nobody wrote for them): the Cartesian pendulum above its floor under
``lcp``. Its untouched floor contact has every friction index at ``z = w = 0``; keeping them
basic (the ``active`` side) couples two tangent rows that differ by 7.8e-11, whose solve
returned impulses of 1e10 and a step Jacobian entry of -2/h (-2000) where the step gives 0.02.
The derivative now takes the better-conditioned side there (``LCPDerivative._choose_basis``).
Reference: the whole run re-simulated at ``v0 +- t d`` along a random ``d`` (central
differences, ``t = 1e-6``), measured 2.5e-10 relative (before: 3e-3)."""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import PROBLEMS

import contactopt as co


def test_untouched_contact_does_not_turn_the_lcp_derivative_singular() -> None:
    scene = co.load_scene(PROBLEMS / "cartesian_pendulum_floor.toml")
    steps = 3
    traj = co.simulate(scene, "lcp", "lemke", duration=steps * scene.dt, sensitivities=["v0"])
    direction = np.random.default_rng(0).standard_normal(scene.system.nv)
    t = 1e-6 * max(1.0, float(np.abs(scene.v0).max()))
    ends = []
    for sign in (1.0, -1.0):
        moved = co.simulate(dataclasses.replace(scene, v0=scene.v0 + sign * t * direction), "lcp", "lemke",
                            duration=steps * scene.dt)
        ends.append(np.concatenate([moved.q[-1], moved.v[-1]]))
    reference = (ends[0] - ends[1]) / (2 * t)
    ours = traj.sensitivities["v0"][-1] @ direction
    assert np.linalg.norm(ours - reference) <= 1e-6 * np.linalg.norm(reference)
