"""Metrics: each is 0 on a hand-made exact solution and equals the hand-computed value on a
hand-made violation; plus the box slide run with the LCP (exact) and Anitescu (hydroplaning)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest
from numpy.typing import ArrayLike

import contactopt as co
from contactopt.analysis import metrics
from contactopt.model.step import Contacts, Dynamics
from contactopt.programs import Residuals, Status
from contactopt.records.trajectory import StepRecord, Trajectory
from contactopt.systems.base import System

H = 0.1  # step of the hand-made trajectories
M, G, MU = 2.0, 10.0, 0.5
ZERO_METRICS = ("penetration", "signorini", "cone_violation", "dissipation_violation", "ncp_desaxce",
                "fclib_natural_map")


def record(impulses: ArrayLike, phi: ArrayLike, t: float = 0.0, status: Status = Status.OPTIMAL,
           build_time: float = 0.0, setup_time: float = 0.0, solve_time: float = 0.0, iterations: int = 0,
           constraint_error: float = 0.0) -> StepRecord:
    return StepRecord(t=t, impulses=np.array(impulses, dtype=float), phi=np.array(phi, dtype=float),
                      status=status, build_time=build_time, setup_time=setup_time, solve_time=solve_time,
                      iterations=iterations, residuals=Residuals(0.0, 0.0, 0.0, 0.0),
                      constraint_error=constraint_error)


def trajectory(qs: ArrayLike, vs: ArrayLike, records: list[StepRecord], message: str = "") -> Trajectory:
    q = np.array(qs, dtype=float)
    return Trajectory(t=np.arange(q.shape[0], dtype=np.float64) * H, q=q, v=np.array(vs, dtype=float), steps=records,
                      info={"dt": H}, message=message)


def point_mass(mu: float = MU) -> co.Scene:
    """2-D point mass (x, z): phi = z, frame rows n = [0, 1], t = [1, 0]; m = 2, g = 10."""
    system = co.systems.get("point_mass").from_config({"parameters": {"m": M, "g": G}}, {"mu": mu})
    return co.Scene(system=system, q0=np.zeros(2), v0=np.zeros(2), dt=H, duration=H)


def one_step(scene: co.Scene, impulses: ArrayLike, v_next: ArrayLike, q0: ArrayLike = (0.0, 0.0),
             v0: ArrayLike = (1.0, 0.0), phi: ArrayLike | None = None) -> dict[str, float]:
    """Metrics of the single step from (q0, v0) with the given impulses and next velocity."""
    q0 = np.asarray(q0, dtype=float)
    q1 = q0 + H * np.asarray(v_next, dtype=float)
    phi = scene.system.contacts(q0).phi if phi is None else np.asarray(phi, dtype=float)
    traj = trajectory(np.array([q0, q1]), np.array([v0, v_next], dtype=float),
                      [record(np.atleast_2d(impulses), phi)])
    row = metrics.step_metrics(scene, traj).iloc[0]
    return {name: float(row[name]) for name in ZERO_METRICS}


def expect(values: dict[str, float], **nonzero: float) -> None:
    for name in ZERO_METRICS:
        assert values[name] == pytest.approx(nonzero.get(name, 0.0), abs=1e-12), name


# --- planar contact: the point mass sliding along +x at 1 m/s, m g h = 2 N·s -----------------
# v_free = (1, -1); the exact Coulomb answer is r = (2, -1) (full friction mu r_n against the
# slip), v' = v_free + r_frame / m = (0.5, 0). Local velocity u = (phi/h + vz', vx').
# FCLIB's q = J v_free + (phi/h, 0) = (-1, 1): ||q|| = sqrt(2).

FCLIB_SCALE = 1.0 + 2.0**0.25


def test_exact_sliding_step_has_zero_metrics() -> None:
    expect(one_step(point_mass(), [2.0, -1.0], [0.5, 0.0]))


def test_penetration_is_minus_the_smallest_gap() -> None:
    # 3 cm deep with the sliding impulse and v' = (0.5, 0): u = (-0.3, 0.5), so r_n u_n = -0.6;
    # û = (-0.05, 0.5), r - û = (2.05, -1.5) projects to (2.24, -1.12): residual (-0.24, 0.12).
    # FCLIB's q = (-0.3 - 1, 1).
    scene = point_mass()
    expect(one_step(scene, [2.0, -1.0], [0.5, 0.0], q0=(0.0, -0.03), phi=[-0.03]),
           penetration=0.03, signorini=2.0 * 0.3, ncp_desaxce=math.sqrt(0.072),
           fclib_natural_map=math.sqrt(0.072) / (1.0 + math.hypot(-1.3, 1.0) ** 0.5))


def test_hydroplaning_step_violates_signorini_only() -> None:
    # Anitescu's answer: same impulse, but the body lifts off at u_n = mu |u_t| = 0.25.
    # û = (0.25 + 0.25, 0.5); r - û = (1.5, -1.5) projects to (1.8, -0.9); residual (0.2, -0.1).
    values = one_step(point_mass(), [2.0, -1.0], [0.5, 0.25])
    expect(values, signorini=2.0 * 0.25, ncp_desaxce=math.sqrt(0.05),
           fclib_natural_map=math.sqrt(0.05) / FCLIB_SCALE)


def test_cone_violation_is_excess_tangential_impulse() -> None:
    # r_t = -1.6 > mu r_n = 1: v' = (1 - 0.8, 0). û = (0.1, 0.2), r - û = (1.9, -1.8) projects to
    # (2.24, -1.12); residual (-0.24, -0.48). Dissipation r_t u_t + mu r_n |u_t| = -0.12 < 0: clipped.
    values = one_step(point_mass(), [2.0, -1.6], [0.2, 0.0])
    expect(values, cone_violation=0.6, ncp_desaxce=math.sqrt(0.288),
           fclib_natural_map=math.sqrt(0.288) / FCLIB_SCALE)


def test_dissipation_violation_is_friction_work_short_of_maximal() -> None:
    # Weak friction while sliding: r_t = -0.4, v' = (0.8, 0): -0.4 * 0.8 + 0.5 * 2 * 0.8 = 0.48 J.
    # û = (0.4, 0.8), r - û = (1.6, -1.2) projects to (1.76, -0.88); residual (0.24, 0.48).
    values = one_step(point_mass(), [2.0, -0.4], [0.8, 0.0])
    expect(values, dissipation_violation=0.48, ncp_desaxce=math.sqrt(0.288),
           fclib_natural_map=math.sqrt(0.288) / FCLIB_SCALE)


def test_pulling_normal_impulse_is_a_cone_violation() -> None:
    # r = (-0.5, 0): the cone term ||r_t|| - mu r_n = 0.25 and -r_n = 0.5; the larger counts.
    values = one_step(point_mass(), [-0.5, 0.0], [1.0, -1.25])
    assert values["cone_violation"] == pytest.approx(0.5)


def test_separated_contact_without_impulse_is_exact() -> None:
    # Free flight 1 m above the ground: r = 0, u_n = 1/h - 1 > 0.
    expect(one_step(point_mass(), [0.0, 0.0], [1.0, -1.0], q0=(0.0, 1.0)))


def test_infinite_friction() -> None:
    scene = point_mass(mu=math.inf)
    # Sticking with any tangential impulse is exact.
    expect(one_step(scene, [2.0, -2.0], [0.0, 0.0]))
    # Slipping under infinite friction: cone and dissipation are 0 by definition; the natural
    # map on the half-space cone gives ||(min(r_n, u_n), u_t)|| = 0.1.
    expect(one_step(scene, [2.0, -1.8], [0.1, 0.0]), ncp_desaxce=0.1,
           fclib_natural_map=0.1 / (1.0 + math.hypot(-1.0, 1.0) ** 0.5))


def test_normal_only_contact() -> None:
    # The cart (dim 1, m = 1) at the wall moving in at 2 m/s: q = J v_free + phi/h = -2.
    cart = co.systems.get("cart").from_config({"parameters": {"m": 1.0}}, {})
    scene = co.Scene(system=cart, q0=np.zeros(1), v0=np.array([-2.0]), dt=H, duration=H)
    expect(one_step(scene, [[2.0]], [0.0], q0=[0.0], v0=[-2.0]))  # perfectly inelastic stop
    # Bouncing off at 0.5 m/s (r_n = 2.5): r_n u_n = 1.25, natural map |min(2.5, 0.5)| = 0.5.
    expect(one_step(scene, [[2.5]], [0.5], q0=[0.0], v0=[-2.0]), signorini=1.25, ncp_desaxce=0.5,
           fclib_natural_map=0.5 / (1.0 + math.sqrt(2.0)))


# --- spatial contacts -------------------------------------------------------------------------


class PointMass3D(System):
    """Point mass (x, y, z) over the ground with ``len(mus)`` coincident contacts, phi = z,
    frame rows n = e_z, t1 = e_x, t2 = e_y."""

    type_name: ClassVar[str] = "test_point_mass_3d"
    description: ClassVar[str] = "test system"
    nq = 3
    nv = 3
    contact_dim = 3
    q_names = ("x", "y", "z")
    v_names = ("vx", "vy", "vz")

    def __init__(self, mus: tuple[float, ...]) -> None:
        super().__init__({}, {"mu": mus[0]})
        self.mus = np.array(mus)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        return Dynamics(M=M * np.eye(3), tau=np.array([0.0, 0.0, -M * G]))

    def contacts(self, q: ArrayLike) -> Contacts:
        n = self.mus.shape[0]
        frame = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        return Contacts(phi=np.full(n, float(np.asarray(q)[2])), J=np.tile(frame, (n, 1)), mu=self.mus,
                        restitution=np.zeros(n), dim=3)

    def potential_energy(self, q: ArrayLike) -> float:
        return M * G * float(np.asarray(q)[2])


def spatial(mus: tuple[float, ...]) -> co.Scene:
    return co.Scene(system=PointMass3D(mus), q0=np.zeros(3), v0=np.zeros(3), dt=H, duration=H)


def test_project_cone_hand_values_and_properties() -> None:
    # Outside both cones: a = (1 + 0.5 * 5) / 1.25 = 2.8, tangent 0.5 * 2.8 * (3, 4) / 5.
    np.testing.assert_allclose(metrics.project_cone([[1.0, 3.0, 4.0]], 0.5), [[2.8, 0.84, 1.12]])
    np.testing.assert_allclose(metrics.project_cone([[2.0, 0.3, 0.4]], 0.5), [[2.0, 0.3, 0.4]])  # inside
    np.testing.assert_allclose(metrics.project_cone([[-3.0, 0.3, 0.4]], 0.5), [[0.0, 0.0, 0.0]])  # polar
    np.testing.assert_allclose(metrics.project_cone([[1.0, -2.0]], 0.5), [[1.6, -0.8]])  # planar: a = 2 / 1.25
    np.testing.assert_allclose(metrics.project_cone([[-1.0], [2.0]], 0.3), [[0.0], [2.0]])  # normal only
    np.testing.assert_allclose(metrics.project_cone([[1.0, 3.0, 4.0]], 0.0), [[1.0, 0.0, 0.0]])  # ray
    np.testing.assert_allclose(metrics.project_cone([[-1.0, 3.0, 4.0]], math.inf), [[0.0, 3.0, 4.0]])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    mu = rng.uniform(0.05, 2.0, size=200)
    p = metrics.project_cone(x, mu)
    rest = x - p
    assert np.all(np.linalg.norm(p[:, 1:], axis=1) <= mu * p[:, 0] + 1e-12)  # in K
    assert np.all(mu * np.linalg.norm(rest[:, 1:], axis=1) <= -rest[:, 0] + 1e-12)  # x - P(x) in polar
    np.testing.assert_allclose(np.einsum("ij,ij->i", p, rest), 0.0, atol=1e-12)  # orthogonal
    np.testing.assert_allclose(metrics.project_cone(p, mu), p, atol=1e-12)


def test_spatial_diagonal_slide() -> None:
    scene = spatial((MU,))
    s = math.sqrt(0.5)
    # From v = (1, 1, 0) (speed sqrt 2): exact friction -mu r_n (s, s) = (-s, -s) with r_n = 2
    # gives v' = (1 - s/2, 1 - s/2, 0), still sliding diagonally.
    slide = 1.0 - s / 2.0
    expect(one_step(scene, [[2.0, -s, -s]], [slide, slide, 0.0], q0=np.zeros(3), v0=[1.0, 1.0, 0.0]))
    # A k = 4 polyhedral cone (diamond |r_t1| + |r_t2| <= mu r_n) opposing the diagonal slip at
    # full strength: r_t = (-0.5, -0.5), ||r_t|| = sqrt(0.5) < 1. v' = (0.75, 0.75, 0), ||u_t|| = 0.75 sqrt 2.
    # Dissipation: -0.5 * 0.75 * 2 + 0.5 * 2 * 0.75 sqrt 2 = 0.75 (sqrt 2 - 1).
    values = one_step(scene, [[2.0, -0.5, -0.5]], [0.75, 0.75, 0.0], q0=np.zeros(3), v0=[1.0, 1.0, 0.0])
    # Natural map: û = (0.375 sqrt 2, 0.75, 0.75); r - û = (2 - 0.375 sqrt 2, -1.25, -1.25).
    x = np.array([[2.0 - 0.375 * math.sqrt(2.0), -1.25, -1.25]])
    residual = float(np.linalg.norm(np.array([2.0, -0.5, -0.5]) - metrics.project_cone(x, MU)[0]))
    a = (x[0, 0] + MU * 1.25 * math.sqrt(2.0)) / (1.0 + MU**2)  # the projection, by hand
    by_hand = math.hypot(2.0 - a, math.sqrt(2.0) * (0.5 - MU * a * math.sqrt(0.5)))
    assert residual == pytest.approx(by_hand)
    expect(values, dissipation_violation=0.75 * (math.sqrt(2.0) - 1.0), ncp_desaxce=residual,
           fclib_natural_map=residual / (1.0 + math.sqrt(math.sqrt(3.0))))  # q = (-1, 1, 1)


def test_several_contacts_take_the_max_and_fclib_sums() -> None:
    # Two coincident contacts sharing the load: one exact, one with a cone violation of 0.3.
    scene = spatial((MU, MU))
    impulses = [[1.0, -0.5, 0.0], [1.0, -0.8, 0.0]]  # v' = (1 - 1.3 / 2, 0, 0)
    values = one_step(scene, impulses, [0.35, 0.0, 0.0], q0=np.zeros(3), v0=[1.0, 0.0, 0.0])
    u = np.array([[0.0, 0.35, 0.0], [0.0, 0.35, 0.0]])
    per_contact = np.linalg.norm(metrics.desaxce_residual(np.array(impulses), u, MU), axis=1)
    assert per_contact[0] == pytest.approx(0.0, abs=1e-12)
    q_norm = math.sqrt(2.0 * (1.0 + 1.0))  # q = (-1, 1, 0) per contact
    expect(values, cone_violation=0.3, dissipation_violation=0.0, ncp_desaxce=per_contact[1],
           fclib_natural_map=float(np.linalg.norm(per_contact)) / (1.0 + math.sqrt(q_norm)))
    assert per_contact[1] > 0.1


# --- run aggregates ----------------------------------------------------------------------------


def test_energy_timing_status_and_failed_last_step() -> None:
    scene = point_mass()
    # Falling from z = 1: E = m g z + m v^2 / 2 = 20, then 19 (z = 0.9, vz = -1), then 18.
    qs = [[0.0, 1.0], [0.0, 0.9], [0.0, 0.7]]
    vs = [[0.0, 0.0], [0.0, -1.0], [0.0, -2.0]]
    records = [
        record([[0.0, 0.0]], [1.0], t=0.0, build_time=0.1, setup_time=0.2, solve_time=0.3, iterations=5),
        record([[0.0, 0.0]], [0.9], t=H, status=Status.INACCURATE, build_time=0.1, setup_time=0.0,
               solve_time=0.4, iterations=7, constraint_error=0.003),
        record(np.full((1, 2), np.nan), [0.7], t=2 * H, status=Status.MAX_ITERATIONS, build_time=0.1,
               solve_time=0.5, iterations=100),
    ]
    traj = trajectory(qs, vs, records, message="step 2 failed")
    table, run = metrics.evaluate(scene, traj)
    assert list(table.columns) == list(metrics.STEP_COLUMNS)
    np.testing.assert_allclose(table["energy"], [20.0, 19.0, 18.0])
    np.testing.assert_allclose(table["energy_drift"], [0.0, -1.0, -2.0])
    np.testing.assert_allclose(table["solve_time"], [0.5, 0.4, 0.5])
    assert list(table["status"]) == ["optimal", "inaccurate", "max_iterations"]
    for name in ZERO_METRICS[1:]:  # need v': undefined for the failed record
        assert table[name].iloc[0] == 0.0 and table[name].iloc[1] == 0.0
        assert math.isnan(table[name].iloc[2])
    assert run == metrics.run_metrics(scene, traj)
    assert run["max_penetration"] == 0.0 and run["max_ncp_desaxce"] == 0.0
    assert run["max_abs_energy_drift"] == pytest.approx(2.0)
    assert run["final_energy_drift"] == pytest.approx(-2.0)
    assert run["max_constraint_error"] == pytest.approx(0.003)
    assert run["build_time_total"] == pytest.approx(0.3)
    assert run["solve_time_total"] == pytest.approx(1.4)
    assert run["time_per_step"] == pytest.approx(1.7 / 3)
    assert run["iterations_total"] == 112 and run["iterations_mean"] == pytest.approx(112 / 3)
    assert run["steps"] == 3 and run["n_failed"] == 1 and run["completed"] is False
    assert run["status_counts"] == "optimal:1,inaccurate:1,max_iterations:1"


def test_run_maxima_and_final_penetration() -> None:
    scene = point_mass()
    # Two steps: exact sliding, then the hydroplaning step; the final state is 1 cm deep.
    qs = [[0.0, 0.0], [0.05, 0.0], [0.1, -0.01]]
    vs = [[1.0, 0.0], [0.5, 0.0], [0.5, 0.25]]
    traj = trajectory(qs, vs, [record([[2.0, -1.0]], [0.0]), record([[2.0, -1.0]], [0.0], t=H)])
    run = metrics.run_metrics(scene, traj)
    assert run["max_penetration"] == pytest.approx(0.01)  # from the final state
    assert run["max_signorini"] == pytest.approx(0.5)
    assert run["max_cone_violation"] == 0.0 and run["max_dissipation_violation"] == pytest.approx(0.0)
    assert run["max_ncp_desaxce"] == pytest.approx(math.sqrt(0.05))
    assert run["completed"] is True and run["n_failed"] == 0 and run["status_counts"] == "optimal:2"


# --- integration: the box slide -------------------------------------------------------------


def test_box_slide_lcp_is_exact() -> None:
    scene = co.load_scene("box_slide")
    traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.1)
    run = metrics.run_metrics(scene, traj)
    assert run["completed"] is True and run["steps"] == 100 and run["status_counts"] == "optimal:100"
    for name in ("max_penetration", "max_signorini", "max_cone_violation", "max_dissipation_violation",
                 "max_ncp_desaxce", "max_fclib_natural_map"):
        value = run[name]
        assert isinstance(value, float) and value < 1e-9, (name, value)
    assert float(run["final_energy_drift"]) < 0  # friction dissipates


def test_box_slide_anitescu_hydroplanes() -> None:
    scene = co.load_scene("box_slide")
    h, mu = scene.dt, 0.5
    traj = co.simulate(scene, formulation="anitescu", solver="clarabel", duration=0.1)
    table = metrics.step_metrics(scene, traj)
    # The first step pushes the four bottom corners with lambda_n > 0 and opens a gap: the
    # active edge n - mu t of each keeps u_n = phi/h + n v' = mu |v_t'| > 0, i.e. the box
    # starts the next step h mu |v_t'| above the ground (it translates: v' has no rotation).
    lam = traj.steps[0].impulses[:, 0]
    pushed = lam > 1e-6
    assert pushed.sum() == 4
    slip = traj.v[1][0]
    assert slip > 0 and np.allclose(traj.v[1][3:], 0.0, atol=1e-9)
    gap = traj.steps[1].phi[pushed]
    np.testing.assert_allclose(gap, h * mu * slip, rtol=1e-6)
    # Signorini: max_c lambda_n,c u_n,c with u_n = mu |v_t'| (the relaxation's prediction).
    assert table["signorini"].iloc[0] == pytest.approx(lam.max() * mu * slip, rel=1e-6)
    assert table["signorini"].iloc[0] > 1e-2
    # It keeps the friction cone and maximum dissipation (slip along a cone direction); the
    # De Saxcé-corrected natural map sees the violation, the LCP's is ~0.
    assert table["cone_violation"].iloc[0] < 1e-9 and table["dissipation_violation"].iloc[0] < 1e-9
    assert table["ncp_desaxce"].iloc[0] > 0.1
    assert table["fclib_natural_map"].iloc[0] > 1e-3
