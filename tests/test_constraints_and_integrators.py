"""Bilateral constraints, drift treatments, the ODE baseline and the variational integrator.

Tedrake 2022 ("Bilateral Position Constraints", Gauss's principle), 001 (KKT system,
projection) and 003 (Baumgarte with alpha and beta, discrete Euler-Lagrange equations).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import contactopt as co
from contactopt.integrators.ode import accelerations

# The three multiplier computations solve the same linear system by different routes:
# pinv and KKT in double precision, Gauss's QP by an interior point at tolerance 1e-10.
MULTIPLIERS_AGREE = 1e-9


@pytest.mark.parametrize("scene_name", ["cartesian_pendulum", "four_bar", "double_pendulum_driven"])
def test_three_multiplier_computations_agree(scene_name: str) -> None:
    scene = co.load_scene(scene_name)
    system = scene.system
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = scene.q0 + 0.1 * rng.normal(size=system.nq)
        v = rng.normal(size=system.nv)
        dynamics = system.dynamics(q, v)
        bilateral = system.constraints(q, v, 0.3)
        r = bilateral.target_rate - bilateral.Hdot_v
        results = [accelerations(dynamics.M, dynamics.tau, bilateral.H, r, method)
                   for method in ("pinv", "kkt", "gauss")]
        for acceleration, lam in results[1:]:
            tol = {"atol": MULTIPLIERS_AGREE, "rtol": MULTIPLIERS_AGREE}
            np.testing.assert_allclose(acceleration, results[0][0], **tol)
            np.testing.assert_allclose(lam, results[0][1], **tol)
        acceleration, lam = results[0]
        np.testing.assert_allclose(dynamics.M @ acceleration, dynamics.tau + bilateral.H.T @ lam, atol=1e-9)
        np.testing.assert_allclose(bilateral.H @ acceleration, r, atol=1e-9)


def _cartesian(drift: str, **extra: float) -> co.Trajectory:
    scene = co.load_scene("cartesian_pendulum")
    # Output intervals of 0.1 s let RK45's step-size control act at rtol = atol = 1e-5 (with
    # shorter intervals the interval length, not the tolerance, bounds the step), so the
    # integration error that feeds the drift is visible within 10 s.
    options = {"drift": drift, "rtol": 1e-5, "atol": 1e-5, **extra}
    return co.simulate(scene, formulation="ode", options=options, dt=0.1, duration=10.0)


def test_cartesian_pendulum_drift_none_grows_baumgarte_bounded_projection_roundoff() -> None:
    none = _cartesian("none").constraint_errors()
    baumgarte = _cartesian("baumgarte").constraint_errors()
    separate_gains = _cartesian("baumgarte", alpha=30.0, beta=200.0).constraint_errors()  # not 2a, a^2
    projection = _cartesian("projection").constraint_errors()
    # No treatment: the error accumulates (the last second is far above the first).
    assert none[-10:].max() > 30 * none[:10].max() and none.max() > 1e-3
    # Baumgarte: bounded, well below the untreated drift, not growing.
    for errors in (baumgarte, separate_gains):
        assert errors.max() < 0.01 * none.max()
        assert errors[-50:].max() <= 1.5 * errors[:50].max()
    # Projection: round-off (|x^2 + y^2 - l^2| for l = 1).
    assert projection.max() < 1e-12


def test_four_bar_moves_with_its_loop_closed() -> None:
    scene = co.load_scene("four_bar")
    traj = co.simulate(scene, formulation="ode", options={"drift": "projection"}, dt=0.01, duration=2.0)
    assert traj.completed
    assert traj.constraint_errors().max() < 1e-12
    closure = [np.abs(scene.system.constraints(q, v, t).h).max() for q, v, t in zip(traj.q, traj.v, traj.t,
                                                                                      strict=True)]
    assert max(closure) < 1e-12
    assert np.ptp(traj.q[:, 0]) > 1.0  # the crank really turns


_FLOORED = [
    ("gauss", "clarabel", {}), ("gauss", "clarabel", {"form": "dual"}), ("lcp", "lemke", {}),
    ("anitescu", "clarabel", {}), ("anitescu", "osqp", {"form": "dual"}), ("ccp", "clarabel", {}),
    ("ccp", "clarabel", {"form": "dual"}), ("regularized", "clarabel", {}),
]


# Baumgarte changes the bilateral rows of every formulation's program, so each runs with it.
# Projection is the driver's, applied after any formulation's step (integrators.drift.project):
# a QP (gauss) and the LCP cover it; Baumgarte enters each formulation's rows, covered in the
# default suite by every formulation's primal form; the dual forms and the rest run with -m slow.
_FAST_FLOORED = {"baumgarte": (0, 2, 3, 5), "projection": (0, 2)}


@pytest.mark.parametrize(("formulation", "solver", "options", "drift"), [
    pytest.param(*case, drift, id=f"{drift}-{case[0]}-{case[1]}-options{i}",
                 marks=[] if i in _FAST_FLOORED[drift] else [pytest.mark.slow])
    for drift in ("baumgarte", "projection") for i, case in enumerate(_FLOORED)])
def test_time_stepping_keeps_the_floored_pendulum_on_its_constraint(
        formulation: str, solver: str, options: dict, drift: str) -> None:
    """The Cartesian pendulum swings down onto a floor at y = -0.8: one bilateral row and one
    contact. Bounds: projection puts q back on the circle (round-off); velocity-level
    Baumgarte with alpha = 10/s leaves an equilibrium error of about h |v|^2 / alpha
    (per-step curvature error h^2 |v|^2 / l, corrected at rate alpha): < 2e-3 here."""
    scene = co.load_scene("cartesian_pendulum_floor")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
        traj = co.simulate(scene, formulation=formulation, solver=solver, duration=1.5,
                           options={**options, "drift": drift})
    assert traj.completed, traj.message
    bound = 1e-10 if drift == "projection" else 2e-3
    assert traj.constraint_errors()[1:].max() < bound
    assert min(r.phi.min() for r in traj.steps) > -2e-3  # and it stays above the floor
    resting = traj.q[-1]
    np.testing.assert_allclose(resting, [0.6, -0.8], atol=5e-3)  # where the circle meets the floor


def test_time_stepping_without_treatment_keeps_its_drift() -> None:
    """Velocity-level rows (H v' = 0) let |h| accumulate and keep it once at rest;
    Baumgarte (H v' = -alpha h) decays it like exp(-alpha t)."""
    scene = co.load_scene("cartesian_pendulum_floor")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
        none = co.simulate(scene, duration=1.5, options={"drift": "none"}).constraint_errors()
        fixed = co.simulate(scene, duration=1.5, options={"drift": "baumgarte"}).constraint_errors()
    assert none[-1] > 1e-3 and fixed[-1] < 1e-6


def test_prescribed_joint_motion_is_tracked() -> None:
    """Driven double pendulum: theta1(t) = theta1(0) + A sin(w t) (velocity row)."""
    scene = co.load_scene("double_pendulum_driven")
    A, w = 0.5, 2 * np.pi * 0.5
    expected = lambda t: scene.q0[0] + A * np.sin(w * t)  # noqa: E731
    ode = co.simulate(scene, formulation="ode", dt=0.01, duration=2.0)
    np.testing.assert_allclose(ode.q[:, 0], expected(ode.t), atol=1e-6)
    stepped = co.simulate(scene, formulation="gauss", dt=1e-3, duration=2.0)
    # H v' = b(t + h/2): the midpoint rule, error O(h^2) (A w^3 h^2 T / 24 ~ 1e-6).
    np.testing.assert_allclose(stepped.q[:, 0], expected(stepped.t), atol=1e-5)
    variational = co.simulate(scene, formulation="variational", dt=1e-2, duration=2.0)
    np.testing.assert_allclose(variational.q[:, 0], expected(variational.t), atol=1e-3)


# 2,000 steps already show both behaviours at the same thresholds (error ~7e-6, window drift
# ~8e-7, Euler +1.4 J); the 10^4-step run is the long-horizon check.
@pytest.mark.parametrize("steps", [2_000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_variational_energy_is_bounded_where_explicit_euler_drifts(steps: int) -> None:
    """Double pendulum, ``steps`` steps of h = 5 ms. The variational integrator is symplectic:
    its energy error oscillates (window means stay at the error level, no trend). Explicit
    Euler pumps energy in monotonically."""
    scene = dataclasses.replace(co.load_scene("double_pendulum"), q0=[0.5, 0.0])

    def energy_error(traj: co.Trajectory) -> np.ndarray:
        energy = np.array([sum(scene.system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)])
        return energy - energy[0]

    variational = co.simulate(scene, formulation="variational", dt=5e-3, duration=5e-3 * steps)
    euler = co.simulate(scene, formulation="ode", options={"method": "euler"}, dt=5e-3, duration=5e-3 * steps)
    assert variational.completed and len(variational.steps) == steps
    error = energy_error(variational)
    windows = error[1:].reshape(10, -1).mean(axis=1)
    assert np.abs(error).max() < 1e-4  # |E| is about 26 J
    assert abs(windows[-1] - windows[0]) < 1e-5
    drift = energy_error(euler)
    assert drift[-1] > 1.0 and np.all(np.diff(drift[1:].reshape(10, -1).mean(axis=1)) > 0)


def test_variational_keeps_a_position_constraint_at_its_end_point() -> None:
    scene = co.load_scene("cartesian_pendulum")
    traj = co.simulate(scene, formulation="variational", dt=1e-2, duration=2.0)
    closure = [abs(q @ q - 1.0) for q in traj.q[1:]]
    assert max(closure) < 1e-9  # c(q_k+1) = 0 is solved to Newton's tolerance every step


def test_variational_refuses_systems_without_a_lagrangian_form() -> None:
    scene = co.load_scene("box_slide_mjcf")  # MJCF: no manipulator form carried (rigid3d is, issue 38)
    with pytest.raises(co.OptionError, match="needs a textbook system"):
        co.simulate(scene, formulation="variational")


@pytest.mark.parametrize(("formulation", "options", "match"), [
    ("ode", {"multipliers": "svd"}, "multipliers"),
    ("ode", {"method": "RK99"}, "method"),
    ("ode", {"drift": "magic"}, "drift"),
    ("gauss", {"drift": "magic"}, "drift"),
    ("gauss", {"alpha": -1.0}, "alpha"),
    ("variational", {"tol": 0.0}, "tol"),
    ("variational", {"newton": True}, "unknown option"),
])
def test_bad_method_options_fail_before_any_step(formulation: str, options: dict, match: str) -> None:
    with pytest.raises(co.OptionError, match=match):
        co.simulate(co.load_scene("cartesian_pendulum"), formulation=formulation, options=options)
