"""Frictional contact on whole scenes (issue "Frictional contact as explicit programs").

Closed forms used: Coulomb sliding decelerates at mu g, so a box launched at v0 stops after
v0 / (mu g) at v0^2 / (2 mu g); semi-implicit Euler shortens the distance by h v0 / 2 (0.5 %
at h = 1e-3), inside the 1 % asked. A brick pushed with u below mu m g sticks (friction = -u);
above, it slides with friction exactly mu m g. Anitescu-type relaxations keep
phi(q') >= h mu |v_t| while sliding (Tedrake 2022, "Anitescu's convex formulation").
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import contactopt as co

G = 9.81


def stop_time_and_distance(traj: co.Trajectory, speed_tol: float = 1e-3) -> tuple[float, float]:
    speed = np.linalg.norm(traj.v[:, :2], axis=1)
    t_stop = float(traj.t[np.flatnonzero(speed < speed_tol)[0]])
    return t_stop, float(np.linalg.norm(traj.q[-1, :2] - traj.q[0, :2]))


@pytest.mark.parametrize(("formulation", "solver", "options"), [
    ("lcp", "lemke", {}),
    ("anitescu", "clarabel", {}),  # k = 4: the slide is along a cone direction (+x)
    ("ccp", "clarabel", {}),
    ("regularized", "clarabel", {}),
    ("regularized", "clarabel", {"cone": "elliptic"}),
])
def test_box_slide_stops_where_coulomb_says(formulation: str, solver: str, options: dict) -> None:
    scene = co.load_scene("box_slide")
    traj = co.simulate(scene, formulation=formulation, solver=solver, options=options)
    assert traj.completed and set(traj.status_counts()) == {"optimal"}
    mu, v0 = 0.5, 1.0
    t_stop, distance = stop_time_and_distance(traj)
    assert distance == pytest.approx(v0**2 / (2 * mu * G), rel=0.01)
    assert t_stop == pytest.approx(v0 / (mu * G), rel=0.02)


def test_hydroplaning_gap_for_relaxations_and_none_for_the_lcp() -> None:
    scene = co.load_scene("box_slide")
    h, mu, half = scene.dt, 0.5, 0.1
    lcp = co.simulate(scene, formulation="lcp", solver="lemke")
    np.testing.assert_allclose(lcp.q[:, 2] - half, 0.0, atol=1e-9)
    for formulation in ("anitescu", "ccp"):
        traj = co.simulate(scene, formulation=formulation, solver="clarabel")
        gap = traj.q[:, 2] - half
        slip = np.linalg.norm(traj.v[:, :2], axis=1)
        # Starting at phi = 0 the first step projects v onto n v' >= mu |v_t'| and the box
        # flies (about 80 ms); once it is back on the boundary layer it hovers at the gap.
        landed = np.flatnonzero((traj.t > 0.1) & (slip > 0.05))
        assert landed.size > 50
        np.testing.assert_allclose(gap[landed], h * mu * slip[landed], rtol=1e-4, atol=1e-9)
        assert gap[landed[-1]] < gap[landed[0]]  # shrinking as it slows
        assert gap.max() > 1e-3  # the launch off the ground is visible, not hidden


def test_four_legged_table_has_non_unique_impulses_but_unique_velocity() -> None:
    scene = co.load_scene("table_four_legs")
    form = co.formulations.get("anitescu")
    options = form.resolve_options({"form": "dual"})
    from contactopt.integrators import build_step_problem

    problem = build_step_problem(scene.system, scene.q0, scene.v0, scene.dt)
    program = form.build(problem, options)
    solvers = [s for s in ("clarabel", "osqp", "cvxpy") if s in co.solvers.available()]
    results = []
    for solver in solvers:
        solution = co.solve(program, solver)
        assert solution.status == co.Status.OPTIMAL and solution.residuals.worst < 1e-6
        results.append((solution, form.recover(problem, program, solution)))
    for _, result in results[1:]:
        np.testing.assert_allclose(result.v_next, results[0][1].v_next, atol=1e-7)
    # Non-uniqueness is real: the Delassus matrix of the loaded edges has a null space, and
    # moving their impulses along it (staying >= 0) keeps every optimality condition.
    P = program.P.toarray()
    beta = results[0][0].x
    loaded = np.flatnonzero(beta > 1e-6)
    block = P[:, loaded]
    null_space = np.linalg.svd(block)[2][np.linalg.matrix_rank(block):]
    assert null_space.shape[0] > 0
    direction = np.zeros_like(beta)
    direction[loaded] = null_space[0]
    step = 0.5 * beta[loaded].min() / np.abs(direction).max()
    other = beta + step * direction
    # >= 0 up to roundoff: the active-set refinement's KKT solve leaves unloaded impulses at
    # +-1e-25 instead of exact zeros
    assert other.min() >= -1e-15 and np.abs(other - beta).max() > 1e-4
    y = P @ other + program.c  # dual of beta >= 0 from stationarity
    assert co.programs.conic_residuals(program, other, y).worst < 1e-8
    normal = lambda b: b.reshape(-1, 4).sum(axis=1)  # noqa: E731
    assert not np.allclose(normal(other), normal(beta), atol=1e-6)  # a different load split


@pytest.mark.parametrize(("u", "sticks"), [(3.0, True), (4.9, True), (5.0, False), (8.0, False)])
def test_brick_sticks_below_mu_m_g_and_slides_with_exact_friction_above(u: float, sticks: bool) -> None:
    scene = co.load_scene("brick_push")
    m, mu, h = 1.0, 0.5, scene.dt
    system = co.systems.get("brick").from_config({"parameters": {"m": m, "u": u}}, {"mu": mu})
    traj = co.simulate(dataclasses.replace(scene, system=system), formulation="lcp", solver="lemke")
    friction = traj.impulses()[:, 0, 1] / h
    normal = traj.impulses()[:, 0, 0] / h
    np.testing.assert_allclose(normal, m * G, rtol=1e-12)
    if sticks:
        np.testing.assert_allclose(traj.q[:, 0], 0.0, atol=1e-12)
        np.testing.assert_allclose(friction, -u, rtol=1e-12)
    else:
        np.testing.assert_allclose(friction, -mu * m * G, rtol=1e-12)
        np.testing.assert_allclose(np.diff(traj.v[:, 0]) / h, (u - mu * m * G) / m, rtol=1e-9)


def test_brick_lcp_is_the_reference_lcp() -> None:
    """Tedrake 2022's brick LCP in (v_abs, f+, f-), with v' = v + h/m (u + f+ - f-):
         0 <= v_abs + v'  ⟂ f+ >= 0,   0 <= v_abs - v' ⟂ f- >= 0,
         0 <= mu m g - f+ - f- ⟂ v_abs >= 0,
    is our lcp formulation with k = 2, lambda_n = m g h, f+- = beta+- / h, v_abs = gamma."""
    m, mu, h = 1.0, 0.5, 0.01
    rng = np.random.default_rng(3)
    for u, v in zip(rng.uniform(-10, 10, 12), rng.uniform(-1, 1, 12), strict=True):
        system = co.systems.get("brick").from_config({"parameters": {"m": m, "u": float(u)}}, {"mu": mu})
        program = co.formulate(system, [0.0, 0.0], [float(v), 0.0], h, "lcp")
        ours = co.solve(program, "lemke")
        lam_n, beta_plus, beta_minus, gamma = ours.x
        # The textbook LCP with z = [f+, f-, v_abs] and w = M z + q:
        # rows v_abs + v' (with f+), v_abs - v' (with f-), mu m g - f+ - f- (with v_abs).
        M_lcp = np.array([[h / m, -h / m, 1.0], [-h / m, h / m, 1.0], [-1.0, -1.0, 0.0]])
        q_lcp = np.array([v + h * u / m, -(v + h * u / m), mu * m * G])
        reference = co.solve(co.LCP(M_lcp, q_lcp), "lemke")
        f_plus, f_minus, v_abs = reference.x
        assert lam_n == pytest.approx(m * G * h, rel=1e-12)
        assert beta_plus / h == pytest.approx(f_plus, abs=1e-9)
        assert beta_minus / h == pytest.approx(f_minus, abs=1e-9)
        assert gamma == pytest.approx(v_abs, abs=1e-12)


def test_polyhedral_cone_curves_the_path_and_the_exact_cone_does_not() -> None:
    scene = co.load_scene("box_slide")
    angle = np.radians(22.5)
    v0 = np.array(scene.v0, dtype=float)
    v0[:2] = [np.cos(angle), np.sin(angle)]
    launched = dataclasses.replace(scene, v0=v0)

    def direction(traj: co.Trajectory) -> float:
        d = traj.q[-1, :2] - traj.q[0, :2]
        return float(np.degrees(np.arctan2(d[1], d[0])))

    square = co.simulate(launched, formulation="lcp", solver="lemke", options={"k": 4})
    exact = co.simulate(launched, formulation="ccp", solver="clarabel")
    assert abs(direction(square) - 22.5) > 5.0
    assert abs(direction(exact) - 22.5) < 1e-2


@pytest.mark.parametrize("seed", range(3))
def test_frictionless_formulations_agree_on_random_rigid_scenes(seed: int) -> None:
    """Random boxes and spheres, penetrating the ground or each other, mu = 0."""
    rng = np.random.default_rng(seed)
    bodies = []
    for i in range(3):
        shape = "box" if i % 2 == 0 else "sphere"
        quat = rng.normal(size=4)
        bodies.append({"name": f"b{i}", "shape": shape, "mass": float(rng.uniform(0.5, 2.0)),
                       "size": [0.1, 0.15, 0.08] if shape == "box" else [0.1],
                       "position": [0.25 * i, 0.0, float(rng.uniform(0.05, 0.15))],
                       "orientation": (quat / np.linalg.norm(quat)).tolist(),
                       "velocity": rng.normal(size=3).tolist(),
                       "angular_velocity": rng.normal(size=3).tolist()})
    system = co.systems.get("rigid3d").from_config({"bodies": bodies}, {"mu": 0.0})
    q0, v0 = system.default_state()
    answers = []
    for formulation, solver in (("gauss", "clarabel"), ("lcp", "lemke"), ("anitescu", "clarabel"),
                                ("ccp", "clarabel")):
        program = co.formulate(system, q0, v0, 1e-3, formulation)
        solution = co.solve(program, solver)
        assert solution.status == co.Status.OPTIMAL
        form = co.formulations.get(formulation)
        from contactopt.integrators import build_step_problem

        answers.append(form.recover(build_step_problem(system, q0, v0, 1e-3), program, solution).v_next)
    assert max(np.abs(a - answers[0]).max() for a in answers[1:]) < 1e-6
