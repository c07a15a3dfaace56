"""The continuous-time contact baselines: compliant contact and event-driven hybrid impacts.

Tedrake 2022, "Compliant Contact Models", "Impulsive Collisions", "A spinning ball bouncing on
the ground" and "Putting it all together"; Tedrake 2020, "Contact Models".
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import contactopt as co
from contactopt import integrators
from contactopt.analysis import cell, compare, metrics
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators.compliant import clipped_restitution, restitution_damping_ratio
from contactopt.integrators.impacts import (
    impact_program,
    newton_impact,
    reference_sticking_matrix,
    solve_impact,
    sticking_impact,
    sticking_impact_matrix,
)
from contactopt.model.step import State
from contactopt.programs import Status
from contactopt.records.trajectory import Trajectory

G = 9.81


def _ball_matrix(r: float, e: float) -> np.ndarray:
    """The reference's post-impact map for the hollow ball, q = [x, z, theta]."""
    return np.array([[3 / 5, 0, -2 * r / 5], [0, -e, 0], [-3 / (5 * r), 0, 2 / 5]])


def _hollow_ball(m: float, r: float) -> tuple[np.ndarray, np.ndarray]:
    """M and the contact rows [n; t] of the reference's ball (planar_ball, inertia "hollow")."""
    system = co.systems.PlanarBall({"m": m, "radius": r, "g": G}, {"mu": math.inf, "restitution": 0.5})
    q = np.array([0.0, r, 0.0])
    return system.dynamics(q, np.zeros(3)).M, system.contacts(q).J


# --- impact laws ------------------------------------------------------------------------------

def test_spinning_ball_impact_law_is_the_reference_matrix() -> None:
    """Random balls and pre-impact states: the sticking law (closed form), the reference's printed
    formula and the friction-cone program with mu = inf all give the reference's matrix."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        m, r, e = rng.uniform(0.1, 5.0), rng.uniform(0.02, 0.5), rng.uniform(0.0, 1.0)
        M, J = _hollow_ball(m, r)
        expected = _ball_matrix(r, e)
        # Closed forms: one pseudoinverse of a 2x2 matrix, round-off only.
        np.testing.assert_allclose(sticking_impact_matrix(M, J, e, 2), expected, atol=1e-12)
        np.testing.assert_allclose(reference_sticking_matrix(M, J, e, 2), expected, atol=1e-12)
        v = rng.normal(size=3) * [1.0, 3.0, 1.0 / r]
        v[1] = -abs(v[1])  # approaching
        v_post, impulse = sticking_impact(M, J, v, e, 2)
        np.testing.assert_allclose(v_post, expected @ v, atol=1e-12 * max(1.0, np.abs(v).max()))
        assert impulse[0, 0] > 0
        # The program (interior point, tolerance ~1e-8) reproduces it; v+ is recomputed from the
        # impulses, so momentum is exact and the answer is as accurate as the impulses.
        result = solve_impact(M, J, v, e, math.inf, 2, law="program")
        np.testing.assert_allclose(result.v_post, expected @ v, atol=1e-7 * max(1.0, np.abs(v).max()))


def test_reference_sticking_formula_order_matters_when_rows_couple() -> None:
    """The reference prints diag(1+e,1,1) before [J M^-1 J^T]^#; that satisfies its own condition
    J v+ = diag(-e, 0) J v- only when normal and tangent rows are decoupled (the ball). At a box
    corner (n M^-1 t^T != 0) only the derived order does."""
    system = co.systems.PlanarBody({"m": 1.3, "g": G, "radius": 0.1, "half_width": 0.2, "half_height": 0.1},
                                   {"mu": math.inf, "restitution": 0.6}, shape="box")
    q = np.array([0.0, 0.3, 0.3])
    M = system.dynamics(q, np.zeros(3)).M
    J = system.contacts(q).J_dense[:2]  # corner (-, -)
    v = np.array([0.3, -1.0, 0.5])
    target = np.array([-0.6, 0.0]) * (J @ v)
    np.testing.assert_allclose(J @ sticking_impact_matrix(M, J, 0.6, 2) @ v, target, atol=1e-12)
    assert np.abs(J @ reference_sticking_matrix(M, J, 0.6, 2) @ v - target).max() > 0.1


def test_impact_program_reproduces_the_closed_forms_and_coulomb() -> None:
    M, J = _hollow_ball(1.0, 0.1)
    v = np.array([2.0, -1.0, 0.0])
    # mu = 0: Newton's restitution with the projection formula.
    closed, normal = newton_impact(M, J[:1], v, 0.7)
    np.testing.assert_allclose(closed, [2.0, 0.7, 0.0], atol=1e-12)
    assert normal[0] == pytest.approx(1.7)
    program = solve_impact(M, J, v, 0.7, 0.0, 2, law="program")
    np.testing.assert_allclose(program.v_post, closed, atol=1e-7)
    # finite mu, sliding impact (the sticking impulse 2m/5 * 2 = 0.8 exceeds mu * 1 = 0.3): the
    # friction impulse is on the cone, opposing the slip, and the normal one is plastic.
    sliding = solve_impact(M, J, v, 0.0, 0.3, 2)
    assert sliding.law == "program"
    np.testing.assert_allclose(sliding.impulses, [[1.0, -0.3]], atol=1e-7)
    np.testing.assert_allclose(sliding.v_post, [1.7, 0.0, -0.3 * 0.1 / (2 / 3 * 0.01)], atol=1e-6)
    # finite mu, large enough: the sticking answer.
    sticking = solve_impact(M, J, v, 0.0, 1.0, 2)
    np.testing.assert_allclose(sticking.v_post, _ball_matrix(0.1, 0.0) @ v, atol=1e-7)
    prog = impact_program(M, J, v, 0.0, 0.3, 2)
    assert prog.kind == "socp" and [b.name for b in prog.variables] == ["v_plus", "impulse", "bilateral"]


# --- hybrid -----------------------------------------------------------------------------------

def test_hybrid_spinning_ball_records_the_reference_impact() -> None:
    scene = co.load_scene("spinning_ball_hybrid")
    traj = co.simulate(scene, duration=0.6)
    assert traj.completed and scene.formulation == "hybrid"
    r, e = 0.1, 0.5
    impacts = traj.all_impacts()
    assert len(impacts) >= 2
    first = impacts[0]
    # Free flight from z = 0.5 to the ground (z = r) is a parabola, integrated exactly by RK45
    # and located by the root finder to ~1e-12 s; the guard fires at phi = -1e-9 m, which adds
    # g * 1e-9 / v = 4e-9 m/s.
    t_hit = math.sqrt(2 * (0.5 - r) / G)
    assert first.t == pytest.approx(t_hit, abs=1e-9)
    np.testing.assert_allclose(first.v_pre, [1.0, -G * t_hit, 20.0], atol=1e-8)
    for impact in impacts:
        np.testing.assert_allclose(impact.v_post, _ball_matrix(r, e) @ impact.v_pre, atol=1e-12)
        assert list(impact.contacts) == [0]
    # Recorded in the step in which it happens.
    step = int(first.t // scene.dt)
    assert traj.steps[step].impacts and traj.steps[step].impacts[0] is first
    assert traj.steps[step].t <= first.t < traj.steps[step].t + scene.dt
    # The step's impulse includes the impact's.
    np.testing.assert_allclose(traj.steps[step].impulses, first.impulses, atol=1e-12)


def test_bouncing_ball_apex_heights_fall_by_e_squared() -> None:
    scene = co.load_scene("bouncing_ball")
    e = 0.8
    dt = 2e-3
    traj = co.simulate(scene, dt=dt, duration=2.7)  # five impacts: 0.45, 1.17, 1.75, 2.21, 2.58 s
    assert traj.completed
    impacts = traj.all_impacts()
    assert len(impacts) >= 5
    # From the recorded impacts: apex = vz+^2 / (2 g). Free flight is integrated exactly and the
    # impact located to the root finder's precision, so the ratio is e^2 to ~1e-9.
    apex = np.array([impact.v_post[1] ** 2 / (2 * G) for impact in impacts])
    np.testing.assert_allclose(apex[1:] / apex[:-1], e**2, rtol=1e-8)
    assert apex[0] == pytest.approx(e**2 * 1.0, rel=1e-8)  # dropped from 1 m
    # From the sampled trajectory: the highest sample between impacts misses the apex by at most
    # g dt^2 / 8 = 4.9e-6 m; on apexes of 0.17 m or more that is a relative 3e-5 per apex.
    times = [impact.t for impact in impacts]
    heights = [traj.q[(traj.t > a) & (traj.t < b), 1].max() - 0.1 for a, b in itertools.pairwise(times[:5])]
    ratios = np.array(heights[1:]) / np.array(heights[:-1])
    np.testing.assert_allclose(ratios, e**2, rtol=1e-4)


def test_bouncing_ball_comes_to_rest_after_finitely_many_bounces() -> None:
    """The bounces accumulate at t = t1 (1 + e) / (1 - e) = 4.06 s (Zeno); below rest_velocity
    (1 mm/s) an impact is plastic and the contact becomes active."""
    scene = co.load_scene("bouncing_ball")
    traj = co.simulate(scene, dt=0.01, duration=4.5)
    assert traj.completed
    impacts = traj.all_impacts()
    v0 = math.sqrt(2 * G)
    # Impact speeds v0 e^k until one falls below 1e-3: k <= log(1e-3 / v0) / log(e) + 1.
    assert len(impacts) == math.ceil(math.log(1e-3 / v0) / math.log(0.8)) + 1
    assert -impacts[-1].v_pre[1] < 1e-3 and impacts[-1].v_post[1] == pytest.approx(0.0, abs=1e-12)
    assert impacts[-1].t < 0.4515 * 9 + 1e-3
    assert traj.q[-1, 1] == pytest.approx(0.1, abs=2e-9) and np.abs(traj.v[-1]).max() < 1e-9
    np.testing.assert_allclose(traj.steps[-1].impulses[0] / 0.01, [G, 0.0], atol=1e-9)  # resting: m g


def test_hybrid_stick_slide_guards_brick() -> None:
    scene = co.load_scene("brick_push")
    system = scene.system
    # Pushed below mu m g: it sticks, friction balances the push.
    system.params["u"] = 3.0
    traj = co.simulate(scene, formulation="hybrid", duration=0.2)
    assert abs(traj.q[-1, 0]) < 1e-12
    np.testing.assert_allclose(traj.steps[-1].impulses[0] / scene.dt, [G, -3.0], atol=1e-9)
    # Pushed above: it slides with a = (u - mu m g) / m from the first instant.
    system.params["u"] = 8.0
    traj = co.simulate(scene, formulation="hybrid", duration=1.0)
    assert traj.q[-1, 0] == pytest.approx(0.5 * (8.0 - 0.5 * G), rel=1e-9)
    assert "stick -> slide" in traj.steps[0].message
    # Launched at 2 m/s and not pushed: it slides to rest at v0^2 / (2 mu g); the slide -> stick
    # guard locates the stop to the root finder's precision.
    system.params["u"] = 0.0
    launched = dataclasses.replace(scene, v0=np.array([2.0, 0.0]))
    traj = co.simulate(launched, formulation="hybrid", duration=0.6)
    assert traj.q[-1, 0] == pytest.approx(4.0 / (2 * 0.5 * G), rel=1e-9)
    assert any("slide -> stick" in record.message for record in traj.steps)


def test_hybrid_finite_friction_ball_slides_then_rolls() -> None:
    """The backspinning ball of problems/spinning_ball.toml (mu = 0.4, e = 0): the impact is
    solved by the friction-cone program, the ball slides, then rolls (vx = -r omega)."""
    scene = co.load_scene("spinning_ball")
    traj = co.simulate(scene, formulation="hybrid", duration=0.5)
    impact = traj.all_impacts()[0]
    assert impact.impulses[0, 1] == pytest.approx(-0.4 * impact.impulses[0, 0], rel=1e-6)  # on the cone
    assert impact.v_post[1] == pytest.approx(0.0, abs=1e-9)  # plastic
    assert any("slide -> stick" in record.message for record in traj.steps)
    x, z, omega = traj.v[-1]
    assert x == pytest.approx(-0.1 * omega, abs=1e-9) and abs(z) < 1e-9


def test_hybrid_rejects_what_it_cannot_simulate() -> None:
    with pytest.raises(OptionError, match="needs qdot = v"):
        co.simulate(co.load_scene("box_drop"), formulation="hybrid", duration=0.01)
    scene = co.load_scene("bouncing_ball")
    with pytest.raises(OptionError, match="known: method, rtol"):
        co.simulate(scene, options={"stiffness": 1.0}, duration=0.01)
    with pytest.raises(OptionError, match="impact_solver"):
        co.simulate(scene, options={"impact_solver": "nope"}, duration=0.01)
    with pytest.raises(OptionError, match="method"):
        co.simulate(scene, options={"method": "euler"}, duration=0.01)


# --- compliant --------------------------------------------------------------------------------

def _resting_point_mass(mu: float = 0.0, z: float = 0.0, vx: float = 0.0) -> co.Scene:
    scene = co.load_scene("point_mass_drop")
    scene.system.mu = mu
    return dataclasses.replace(scene, q0=np.array([0.0, z]), v0=np.array([vx, 0.0]))


def test_compliant_steady_penetration_is_mg_over_k() -> None:
    scene = _resting_point_mass()
    depths = []
    for k in (1e4, 1e5, 1e6):
        traj = co.simulate(scene, formulation="compliant", dt=0.02, duration=1.5, options={"stiffness": k})
        assert traj.completed
        depth = -traj.q[-1, 1]
        # e = 0 is damped with zeta = 4.8 (overdamped): the slow mode decays at 0.105 sqrt(k / m),
        # time constant <= 0.1 s, so after 1.5 s the transient is below 1e-6 relative; what is
        # left is the integrator's error (atol 1e-9 m on a depth of 1e-5 m or more).
        assert depth == pytest.approx(1.0 * G / k, rel=1e-2)
        # The recorded impulse over the last interval is m g dt (the integrated force).
        np.testing.assert_allclose(traj.steps[-1].impulses[0], [G * 0.02, 0.0], rtol=1e-5, atol=1e-12)
        depths.append(depth)
    assert depths[0] > depths[1] > depths[2]
    # Hunt-Crossley with the Hertz exponent: k x^1.5 = m g (alpha = 30 s/m damps the
    # oscillation, whose damping k x^p alpha = m g alpha is light at the default alpha).
    traj = co.simulate(scene, formulation="compliant", dt=0.01, duration=0.5,
                       options={"model": "hunt_crossley", "exponent": 1.5, "stiffness": 1e6, "damping": 30.0})
    assert -traj.q[-1, 1] == pytest.approx((G / 1e6) ** (1 / 1.5), rel=1e-2)


def test_compliant_default_damping_reproduces_the_restitution() -> None:
    """The clipped spring-damper's restitution (closed form) against a direct integration, and
    the bouncing ball (e = 0.8) under compliant contact: apex ratio e^2."""
    for zeta in (0.1, 0.5, 0.9, 1.0, 1.5, 4.0):
        def rhs(t: float, y: np.ndarray, zeta: float = zeta) -> list[float]:
            return [y[1], -y[0] - 2 * zeta * y[1]]

        def release(t: float, y: np.ndarray, zeta: float = zeta) -> float:  # force k x + c xdot = 0
            return float(y[0] + 2 * zeta * y[1])
        release.terminal, release.direction = True, -1  # type: ignore[attr-defined]
        solution = solve_ivp(rhs, (0, 100), [0.0, 1.0], events=release, rtol=1e-12, atol=1e-14)
        assert clipped_restitution(zeta) == pytest.approx(-solution.y_events[0][0][1], rel=1e-9)
    assert clipped_restitution(1.0) == pytest.approx(math.exp(-2))
    np.testing.assert_allclose([clipped_restitution(z) for z in restitution_damping_ratio(np.array([0.3, 0.8]))],
                               [0.3, 0.8], rtol=1e-9)
    traj = co.simulate(co.load_scene("bouncing_ball"), formulation="compliant", duration=1.8,
                       options={"stiffness": 1e6})
    height, t = traj.q[:, 1] - 0.1, traj.t
    first, second = height[(t > 0.5) & (t < 1.1)].max(), height[(t > 1.2) & (t < 1.8)].max()
    # Gravity acts during the ~3 ms contacts and the apexes are sampled every 1 ms: 1 %.
    assert first == pytest.approx(0.64, rel=1e-2) and second / first == pytest.approx(0.64, rel=1e-2)


@pytest.mark.parametrize("friction", ["coulomb_pwl", "stribeck"])
def test_compliant_sliding_stop_distance(friction: str) -> None:
    """Launched at 1 m/s on the ground with mu_dynamic = 0.5 (mu_static = 0.6), it stops after
    v0^2 / (2 mu_d g). The regularization adds ~v_s^2 / (mu g) (1e-9 m for v_s = 1e-4) and the
    static bump near v_s ~v_s * t_stop; 2 % is the issue's bound."""
    k = 1e6
    scene = _resting_point_mass(mu=0.5, z=-G / k, vx=1.0)
    traj = co.simulate(scene, formulation="compliant", dt=0.01, duration=0.4,
                       options={"stiffness": k, "mu_static": 0.6, "mu_dynamic": 0.5, "friction": friction,
                                "slip_velocity": 1e-4})
    assert traj.completed
    stop = 1.0 / (2 * 0.5 * G)
    assert traj.q[-1, 0] == pytest.approx(stop, rel=2e-2)
    assert abs(traj.v[-1, 0]) < 1e-6


def test_compliant_rigid3d_sphere_rests_at_mg_over_k() -> None:
    """Quaternion coordinates: qdot = N(q) v (Rigid3D.qdot); the spinning sphere stays a unit
    quaternion and rests at m g / k."""
    body = co.systems.RigidBody(name="ball", shape="sphere", size=np.array([0.1]), mass=2.0,
                                position=np.array([0.0, 0.0, 0.1]), orientation=np.array([1.0, 0, 0, 0]),
                                velocity=np.zeros(3), angular_velocity=np.array([0.0, 0.0, 3.0]))
    system = co.systems.Rigid3D([body], {"mu": 0.5})
    q0, v0 = system.default_state()
    scene = co.Scene(name="sphere_rest", system=system, q0=q0, v0=v0, dt=0.01, duration=0.3,
                     formulation="compliant")
    traj = co.simulate(scene, options={"stiffness": 1e5})
    assert traj.completed
    assert 0.1 - traj.q[-1, 2] == pytest.approx(2.0 * G / 1e5, rel=1e-2)
    assert np.linalg.norm(traj.q[-1, 3:]) == pytest.approx(1.0, abs=1e-12)
    assert traj.v[-1, 5] == pytest.approx(3.0, rel=1e-6)  # no torsional friction at a point contact


def test_compliant_explicit_euler_blows_up_stiff_solver_does_not() -> None:
    """Fixed-step explicit Euler at k = 1e12 launches the ball out of the ground at > 1e6 m/s on
    its first contact step: a failed step (status numerical_error), not an exception."""
    scene = co.load_scene("bouncing_ball")
    traj = co.simulate(scene, formulation="compliant", duration=0.5, options={"stiffness": 1e12, "method": "euler"})
    assert not traj.completed and "blew up" in traj.message
    assert traj.steps[-1].status == Status.NUMERICAL_ERROR and np.isnan(traj.steps[-1].impulses).all()
    assert len(traj.steps) == len(traj.t)  # the failed record is the extra last one
    stiff = co.simulate(scene, formulation="compliant", dt=0.01, duration=0.6,
                        options={"stiffness": 1e9, "method": "Radau"})
    assert stiff.completed and -stiff.q[:, 1].min() + 0.1 < 1e-3


def test_compliant_option_validation() -> None:
    scene = co.load_scene("bouncing_ball")
    with pytest.raises(OptionError, match=r"unknown option\(s\) 'k'; known: model, stiffness"):
        co.simulate(scene, formulation="compliant", options={"k": 1.0}, duration=0.01)
    for bad, match in (({"model": "hertz"}, "model"), ({"friction": "viscous"}, "friction"),
                       ({"method": "rk4"}, "method"), ({"stiffness": -1.0}, "stiffness"),
                       ({"mu_static": 0.1, "mu_dynamic": 0.3}, "mu_static"), ({"exponent": 1.5}, "exponent"),
                       ({"damping": float("nan")}, "damping"), ({"rtol": 0}, "rtol")):
        with pytest.raises(OptionError, match=match):
            co.simulate(scene, formulation="compliant", options=bad, duration=0.01)
    with pytest.raises(OptionError, match="infinite friction"):
        co.simulate(co.load_scene("spinning_ball_hybrid"), formulation="compliant", duration=0.01)
    # ... unless both coefficients are given.
    traj = co.simulate(co.load_scene("spinning_ball_hybrid"), formulation="compliant", duration=0.01,
                       options={"mu_static": 0.5, "mu_dynamic": 0.4})
    assert traj.completed


# --- records, metrics and comparison ----------------------------------------------------------

def test_impacts_persist_and_old_files_load(tmp_path: Path) -> None:
    traj = co.simulate(co.load_scene("spinning_ball_hybrid"), duration=0.4)
    path = traj.save(tmp_path / "ball.npz")
    loaded = Trajectory.load(path)
    assert len(loaded.all_impacts()) == len(traj.all_impacts()) > 0
    for a, b in zip(loaded.all_impacts(), traj.all_impacts(), strict=True):
        assert a.t == b.t
        np.testing.assert_array_equal(a.contacts, b.contacts)
        np.testing.assert_array_equal(a.v_pre, b.v_pre)
        np.testing.assert_array_equal(a.v_post, b.v_post)
        np.testing.assert_array_equal(a.impulses, b.impulses)
    assert [r.substeps for r in loaded.steps] == [r.substeps for r in traj.steps]
    # A file written before impacts and substeps were recorded still loads, with none.
    with np.load(path) as arrays:
        old = {name: arrays[name] for name in arrays.files if not name.startswith("impact_") and name != "substeps"}
    legacy = tmp_path / "legacy.npz"
    np.savez_compressed(legacy, **old)
    loaded = Trajectory.load(legacy)
    assert loaded.all_impacts() == [] and all(r.substeps == 0 for r in loaded.steps)


def _runnable(scene: co.Scene, name: str, dt: float) -> bool:
    try:
        stepper = integrators.make_stepper(scene.system, name, scene.solver, dt)
        check = getattr(stepper, "check_state", None)  # methods that refuse contact (ode, variational)
        if check is not None:
            check(State(scene.q0, scene.v0, 0.0))
    except (ContactoptError, ImportError):
        return False
    return True


def test_every_method_runs_the_bouncing_ball_through_metrics_and_compare() -> None:
    """One scene through every method that can take it: each trajectory feeds the same metrics
    and the comparison tooling's run_cell."""
    scene = co.load_scene("bouncing_ball")
    dt, duration = 0.01, 0.6  # the ball lands at 0.45 s
    ran = []
    for name in integrators.names():
        if not _runnable(scene, name, dt):
            continue  # e.g. variational (textbook systems only), mujoco (MJCF only)
        if name in ("ode", "variational", "compliant", "hybrid"):
            solver = cell.NO_SOLVER
        else:  # the first solver that can take the formulation's program
            cells, _ = compare.plan(scene, [name], None, [dt], duration)
            solver = cells[0].solver
        if name == "ode":  # it does not model contact: refused before the first step (issue 12)
            with pytest.raises(OptionError, match="does not model contact"):
                co.simulate(scene, formulation=name, dt=dt, duration=duration)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = co.simulate(scene, formulation=name, solver=solver if solver != cell.NO_SOLVER else None,
                               dt=dt, duration=duration)
        assert traj.completed, (name, traj.message)
        _, run = metrics.evaluate(scene, traj)
        for key in ("max_penetration", "max_signorini", "max_cone_violation", "max_abs_energy_drift",
                    "time_per_step"):
            assert math.isfinite(float(run[key])), (name, key, run[key])
        row, trace = cell.run_cell(scene, cell.Cell(name, name, (), solver, dt, duration), {})
        assert row["status"] == "completed", (name, row.get("error"))
        assert len(trace) == round(duration / dt)
        ran.append(name)
    assert {"gauss", "lcp", "anitescu", "ccp", "regularized", "compliant", "hybrid"} <= set(ran)
