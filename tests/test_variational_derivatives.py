"""Derivatives of the variational integrator (issue 38; :mod:`contactopt.derivatives.variational`):
``co.simulate(..., sensitivities=...)`` and ``co.gradient`` against central differences of whole
runs on smooth segments (free flight, constrained swing, sliding contact)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.gradients import final_state_loss
from contactopt.systems.brick import Brick
from contactopt.systems.rigid3d import Rigid3D
from contactopt.systems.rigid3d_bodies import RigidBody

ROOT = Path(__file__).resolve().parents[1]


def _final(scene: co.Scene, run: Mapping[str, Any]) -> np.ndarray:
    traj = co.simulate(scene, **run)
    assert traj.completed, traj.message
    return np.concatenate([traj.q[-1], traj.v[-1]])


def _differences(scene: co.Scene, name: str, eps: float, run: Mapping[str, Any]) -> np.ndarray:
    """Central differences of the whole run's final state by ``v0`` (columns) or a parameter
    (moved relative to its value)."""
    if name == "v0":
        columns = []
        for j in range(scene.v0.shape[0]):
            moved = [dataclasses.replace(scene, v0=scene.v0 + sign * eps * np.eye(scene.v0.shape[0])[j])
                     for sign in (1.0, -1.0)]
            columns.append((_final(moved[0], run) - _final(moved[1], run)) / (2 * eps))
        return np.stack(columns, axis=1)
    if name == "dt":  # the same number of steps: the duration moves with dt
        dt, duration = run.get("dt", scene.dt), run.get("duration", scene.duration)
        sides = [_final(scene, {**run, "dt": dt * (1 + s * eps), "duration": duration * (1 + s * eps)})
                 for s in (1.0, -1.0)]
        return (sides[0] - sides[1]) / (2 * eps * dt)
    value = scene.system.parameter_values([name])[name]
    sides = [_final(dataclasses.replace(scene, system=scene.system.with_parameters({name: value * (1 + s * eps)})),
                    run) for s in (1.0, -1.0)]
    return (sides[0] - sides[1]) / (2 * eps * value)


def _check(scene: co.Scene, names: list[str], run: Mapping[str, Any], eps: float, tol: float) -> None:
    traj = co.simulate(scene, sensitivities=names, **run)
    assert traj.completed, traj.message
    assert not traj.info["sensitivities"]["stopped"]
    for name in names:
        reference = _differences(scene, name, eps, run)
        error = np.abs(traj.sensitivities[name][-1] - reference).max() / np.abs(reference).max()
        assert error <= tol, (name, error)


def test_the_constrained_swing_matches_central_differences_of_whole_runs() -> None:
    """The Cartesian pendulum (a bilateral position row, x = (q_k+1, lambda)), 50 steps of
    h = 1e-2: d/dv0, d/dl and d/dt to 1e-6 relative (measured 3.1e-7, 5.4e-7 and 2.2e-7 against differences
    of 1e-5, whose own error is Newton's tolerance over eps, 1e-12 / 1e-5, and eps^2)."""
    scene = co.load_scene(ROOT / "problems" / "cartesian_pendulum.toml")
    run = {"formulation": "variational", "dt": 1e-2, "duration": 0.5, "options": {"tol": 1e-12}}
    _check(scene, ["v0", "l", "dt"], run, 1e-5, 1e-6)


def test_the_double_pendulum_matches_central_differences_to_the_inner_differences_noise() -> None:
    """M(q) varies: the discrete Lagrangian holds dM/dq by central differences (step 1e-6), whose
    round-off (~1e-12 in v_k+1 per step) both the derivative and the whole-run differences see;
    measured 1.3e-6 relative over 50 steps, so 1e-5."""
    scene = co.load_scene(ROOT / "problems" / "double_pendulum.toml")
    run = {"formulation": "variational", "dt": 1e-2, "duration": 0.5, "options": {"tol": 1e-12}}
    _check(scene, ["v0"], run, 1e-5, 1e-5)


def test_rigid3d_free_flight_matches_central_differences_of_whole_runs() -> None:
    """The Lie-group step (x = the step's twist) of a tumbling box under gravity, 30 steps:
    d/dv0 and d/dg to 1e-6 (measured 3e-9; the mass would be no test: the free motion does not
    depend on it)."""
    body = RigidBody("box", "box", np.array([0.3, 0.2, 0.1]), 2.0, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]),
                     np.array([0.3, -0.2, 0.1]), np.array([0.4, 3.0, 0.2]))
    system = Rigid3D([body], {"mu": 0.5}, ground=False)
    q0, v0 = system.default_state()
    scene = co.Scene(system=system, q0=q0, v0=v0, dt=1e-2, duration=0.3, formulation="variational",
                     solver="clarabel")
    _check(scene, ["v0", "gravity"], {}, 1e-6, 1e-6)


@pytest.mark.parametrize(("contact", "solver"), [("lcp", "lemke"), ("anitescu", "clarabel")])
def test_a_sliding_brick_matches_central_differences_through_the_contact_programs(contact: str,
                                                                                  solver: str) -> None:
    """The brick sliding at 1 m/s for 0.15 s (it stops at 0.2 s): every step a contact step, its
    iterate program differentiated by its own implicit function theorem. d/dv0, d/dmu and d/dt to
    1e-6 (measured 5e-10, 2e-9 and 4e-9; the interior point's 1e-9 answers bound the differences)."""
    system = Brick({"m": 1.0, "g": 9.81, "u": 0.0}, {"mu": 0.5, "restitution": 0.0})
    scene = co.Scene(system=system, q0=np.zeros(2), v0=np.array([1.0, 0.0]), dt=1e-2, duration=0.15,
                     formulation="variational", solver=solver)
    _check(scene, ["v0", "mu", "dt"], {"options": {"contact": contact}}, 1e-6, 1e-6)


def test_the_rigid3d_box_slide_matches_central_differences() -> None:
    """problems/box_slide.toml under lcp for 0.1 s (sliding): the box's four resting corners share
    the load in many ways (a degenerate LCP, the one-sided derivative of the pivot's own
    pattern), yet the derivative of the run is unique and matches to 1e-6 (measured 6e-9)."""
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    run = {"formulation": "variational", "solver": "lemke", "dt": 1e-2, "duration": 0.1,
           "options": {"contact": "lcp"}}
    _check(scene, ["mu"], run, 1e-6, 1e-6)


def test_the_gradient_is_the_contracted_forward_sensitivities() -> None:
    """co.gradient's adjoint sweep through the variational steps equals the forward
    sensitivities contracted with the loss (the same step Jacobians: to rounding, 1e-10)."""
    system = Brick({"m": 1.0, "g": 9.81, "u": 0.0}, {"mu": 0.5, "restitution": 0.0})
    scene = co.Scene(system=system, q0=np.zeros(2), v0=np.array([1.0, 0.0]), dt=1e-2, duration=0.1,
                     formulation="variational", solver="lemke")
    target_q, target_v = np.array([0.2, 0.0]), np.zeros(2)
    loss = final_state_loss(q_target=target_q, v_target=target_v)
    result = co.gradient(scene, loss, ["v0", "mu"], options={"contact": "lcp"})
    traj = co.simulate(scene, options={"contact": "lcp"}, sensitivities=["v0", "mu"])
    _, gq, gv = (np.asarray(part) for part in loss(traj.q, traj.v))
    seed = np.concatenate([gq[-1], gv[-1]])
    np.testing.assert_allclose(np.asarray(result.gradients["v0"]), seed @ traj.sensitivities["v0"][-1], rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(result.gradients["mu"], seed @ traj.sensitivities["mu"][-1], rtol=0, atol=1e-10)
    assert abs(result.gradients["mu"]) > 1e-3  # the slide's length depends on mu
