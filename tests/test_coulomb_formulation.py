"""The ``coulomb`` formulation (the exact Coulomb problem of a step), the ``fixed_point``
solver and the pyramidal LCP conversion (issue 25).

Closed forms: a box sliding at v0 with Coulomb friction decelerates at mu g and stops after
v0^2 / (2 mu g), shortened by semi-implicit Euler by h v0 / 2 (0.5 % at h = 1e-3, inside the 1 %
the other formulations' tests ask), and stays on the ground (``u_N = 0`` while sliding, where
the ``ccp`` relaxation hovers at ``h mu |v_t|``). A brick pushed with u < mu m g sticks (friction
-u); above, it slides with friction mu m g and accelerates at (u - mu m g) / m. One contact
of a point of mass m (``W = I / m``): it sticks with ``r = -m q`` when that impulse is in the
cone, else ``r_N = -m q_N`` and ``r_T = -mu r_N q_T / |q_T|`` (the slip keeps its direction).
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.analysis.bench.run import run_benchmark
from contactopt.analysis.export import export_run
from contactopt.core.errors import ContactoptError, UnsupportedProgramError
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.coulomb_lcp import CoulombToLCP

G = 9.81
MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"


def _point(q: list[float], mu: float = 0.5, mass: float = 2.0) -> CoulombProgram:
    return CoulombProgram(W=sp.eye(3, format="csc") / mass, q=np.array(q), mu=np.array([mu]))


def test_box_slide_stops_at_the_coulomb_distance_without_hover() -> None:
    scene = co.load_scene("box_slide")
    traj = co.simulate(scene, formulation="coulomb")  # the scene's clarabel cannot take it: the default
    assert traj.info["solver"] in ("nsgs", "fixed_point") and traj.info["solver_choice"]
    assert traj.completed and set(traj.status_counts()) == {"optimal"}
    h, mu, v0, half = scene.dt, 0.5, 1.0, 0.1
    speed = np.linalg.norm(traj.v[:, :2], axis=1)
    t_stop = float(traj.t[np.flatnonzero(speed < 1e-5)[0]])
    distance = float(traj.q[-1, 0] - traj.q[0, 0])
    assert distance == pytest.approx(v0**2 / (2 * mu * G), rel=0.01)
    assert t_stop == pytest.approx(v0 / (mu * G), rel=0.02)
    # no hover: the gap while sliding is the inner solver's rounding, not ccp's h mu |v_t| (5e-4 at 1 m/s)
    gap, sliding = traj.q[:, 2] - half, speed > 0.05
    assert np.all(np.abs(gap[sliding]) <= 1e-5 * h * mu * speed[sliding])


@pytest.mark.parametrize(("u", "sticks"), [(4.8, True), (8.0, False)])
def test_brick_sticks_below_mu_m_g_and_accelerates_above(u: float, sticks: bool) -> None:
    scene = co.load_scene("brick_push")
    m, mu, h = 1.0, 0.5, scene.dt
    system = co.systems.get("brick").from_config({"parameters": {"m": m, "u": u}}, {"mu": mu})
    traj = co.simulate(dataclasses.replace(scene, system=system), formulation="coulomb", solver="fixed_point")
    assert traj.completed and set(traj.status_counts()) == {"optimal"}
    # impulses to the fixed point's tolerance, FCLIB's error 1e-8 (about 1e-8 N s here): forces
    # to 1e-6 N, velocity changes to 2e-8 m/s per step (accelerations to 2e-6 m/s^2)
    friction, normal = traj.impulses()[:, 0, 1] / h, traj.impulses()[:, 0, 0] / h
    np.testing.assert_allclose(normal, m * G, atol=2e-6)
    if sticks:
        np.testing.assert_allclose(traj.q[:, 0], 0.0, atol=1e-12)
        np.testing.assert_allclose(friction, -u, atol=2e-6)
    else:
        np.testing.assert_allclose(friction, -mu * m * G, atol=2e-6)
        np.testing.assert_allclose(np.diff(traj.v[:, 0]) / h, (u - mu * m * G) / m, atol=4e-6)


def test_sticking_and_sliding_points_are_exact_with_every_route() -> None:
    sticking = _point([-1.0, 0.1, -0.2])  # |m q_T| = 0.45 <= mu m |q_N| = 1
    angle = 0.3
    sliding = _point([-1.0, np.cos(angle), np.sin(angle)])  # |m q_T| = 2 > 1
    exact_slide = np.array([2.0, -np.cos(angle), -np.sin(angle)])  # r_N = 2, |r_T| = mu r_N against the slip
    for program, exact in ((sticking, -2.0 * sticking.q), (sliding, exact_slide)):
        solution = co.solve(program, "fixed_point", history=True)
        assert solution.status == co.Status.OPTIMAL
        np.testing.assert_allclose(solution.x, exact, atol=1e-8)
        assert solution.residuals.fclib <= 1e-8
        # the history ends at the reported answer; for one contact the iteration is a contraction
        assert solution.history["fclib"][-1] == solution.residuals.fclib
        assert np.all(np.diff(solution.history["fclib"]) <= 0)
        pgs = co.solve(program, "fixed_point", inner="pgs")
        np.testing.assert_allclose(pgs.x, exact, atol=1e-8)
    assert sliding.velocity(exact_slide)[0] == 0.0  # no lift while sliding
    # Lemke through the pyramid: exact for a slide along a direction, judged on the Coulomb problem
    along = _point([-1.0, 1.0, 0.0])
    pivoted = co.solve(along, "lemke")
    assert pivoted.conversion == "coulomb->lcp" and pivoted.status == co.Status.OPTIMAL
    np.testing.assert_allclose(pivoted.x, [2.0, -1.0, 0.0], atol=1e-12)
    between = co.solve(sliding, "lemke")  # k = 4: the impulse on an edge, 0.3 rad off the slip
    assert between.status != co.Status.OPTIMAL and between.residuals.relative > 1e-3


def test_pyramid_approaches_the_cone_as_k_grows() -> None:
    """The pyramid's friction impulse lies within the angle pi / k of Coulomb's: its error is
    at most ``mu r_N 2 sin(pi / (2 k))``, and falls with k."""
    program = _point([-1.0, np.cos(0.3), np.sin(0.3)])
    exact = co.solve(program, "fixed_point").x
    errors = []
    for k in (4, 16, 64):
        conversion = CoulombToLCP(k)
        lcp, data = conversion.apply(program)
        back = conversion.invert(co.solve(lcp, "lemke"), data)
        errors.append(float(np.linalg.norm(back.x - exact)))
        assert back.x[0] == pytest.approx(2.0, abs=1e-12)
        assert errors[-1] <= 0.5 * 2.0 * 2 * np.sin(np.pi / (2 * k)) + 1e-12
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-2


def test_lcp_formulation_is_the_pyramid_of_the_coulomb_program_and_approaches_it() -> None:
    """One step of the box launched at 22.5 deg: the ``lcp`` formulation with k directions and
    the pyramidal LCP of the ``coulomb`` program give the same velocity (the same LCP), which
    approaches the ``coulomb`` step's as k grows."""
    scene = co.load_scene("box_slide")
    v0 = np.array(scene.v0, dtype=float)
    v0[:2] = [np.cos(np.radians(22.5)), np.sin(np.radians(22.5))]
    problem = build_step_problem(scene.system, scene.q0, v0, scene.dt)
    coulomb = co.formulations.get("coulomb")
    program = coulomb.build(problem, coulomb.resolve_options({}))
    exact = coulomb.recover(problem, program, co.solve(program, "fixed_point", tol=1e-12)).v_next
    lcp = co.formulations.get("lcp")
    errors = []
    for k in (4, 16):
        stewart = lcp.build(problem, lcp.resolve_options({"k": k}))
        v_lcp = lcp.recover(problem, stewart, co.solve(stewart, "lemke")).v_next
        converted, data = CoulombToLCP(k).apply(program)
        back = CoulombToLCP(k).invert(co.solve(converted, "lemke"), data)
        solution = dataclasses.replace(back, status=co.Status.OPTIMAL)
        np.testing.assert_allclose(coulomb.recover(problem, program, solution).v_next, v_lcp, atol=1e-12)
        errors.append(float(np.abs(v_lcp - exact).max()))
    assert errors[1] < 0.3 * errors[0]


def test_export_writes_the_coulomb_program_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    scene = co.load_scene("box_slide")
    traj = co.simulate(scene, formulation="coulomb", solver="fixed_point", duration=0.004)
    written = export_run(scene, traj, tmp_path, formats="fclib")
    files = sorted(Path(written["fclib"]).glob("step_*.hdf5"))
    assert len(files) == 4
    for i, path in enumerate(files):
        loaded = co.load_program(path, form="coulomb")
        built = co.formulate(scene.system, traj.q[i], traj.v[i], scene.dt, "coulomb")
        assert isinstance(loaded, CoulombProgram) and loaded.dim == 3
        assert abs(loaded.W - built.W).max() == 0.0
        np.testing.assert_array_equal(loaded.q, built.q)
        np.testing.assert_array_equal(loaded.mu, built.mu)
    # bench reads the files as Coulomb problems for a Coulomb solver, as CCPs for the others
    table = run_benchmark(files[:2], ["fixed_point", "clarabel"], warmup=False)
    ours, relaxed = table[table.solver == "fixed_point"], table[table.solver == "clarabel"]
    assert set(ours.kind) == {"coulomb"} and ours.success.all() and (ours.fclib_error <= 1e-8).all()
    # the CCP's sliding corners lift off at u_N = mu |u_T| (0.49 m/s): FCLIB's error ~ 0.49 / 21
    assert set(relaxed.kind) == {"socp"} and (relaxed.fclib_error > 1e-3).all()
    # the four corners' load split is not unique (W is singular), their velocities are: both
    # answers meet FCLIB's error 1e-8, whose scale 1 + sqrt(||q||) is 21 here (u to ~2e-7 m/s)
    again = co.solve(loaded, "fixed_point")
    assert again.status == co.Status.OPTIMAL
    np.testing.assert_allclose(loaded.velocity(again.x), loaded.velocity(traj.steps[3].impulses.reshape(-1)),
                               atol=1e-6)


def test_bilateral_row_held_with_a_contact() -> None:
    """The Cartesian pendulum (x^2 + y^2 = l^2) reaching its floor: the rod's row is
    eliminated from the Coulomb problem and held at the velocity level every step
    (``q_n . v_{n+1} = 0``), the floor is not crossed."""
    scene = co.load_scene("cartesian_pendulum_floor")
    angle = np.arccos(0.79)  # just above the floor at y = -0.8, swinging down
    start = dataclasses.replace(scene, q0=np.array([np.sin(angle), -np.cos(angle)]),
                                v0=2.0 * np.array([-np.cos(angle), -np.sin(angle)]))
    traj = co.simulate(start, formulation="coulomb", solver="fixed_point", duration=0.05)
    assert traj.completed and set(traj.status_counts()) == {"optimal"}
    radial = np.einsum("ij,ij->i", traj.q[:-1], traj.v[1:])
    np.testing.assert_allclose(radial, 0.0, atol=1e-9)
    assert traj.q[:, 1].min() >= -0.8 - 1e-9
    tension = np.array([step.bilateral[0] for step in traj.steps])
    assert np.all(np.isfinite(tension)) and np.abs(tension).max() > 0


def test_limit_rows_are_frictionless_contacts_and_frictionloss_is_refused() -> None:
    """limit_chain.xml: joint and tendon limits plus a joint equality, no contacts. Limits are
    contacts with mu = 0 and there is no friction: the same problem as ``ccp``'s, whose unique
    velocities the run must reproduce."""
    pytest.importorskip("mujoco")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = co.load_scene(str(MJCF / "limit_chain.xml"))
        ours = co.simulate(scene, formulation="coulomb", solver="fixed_point", duration=0.1)
        ccp = co.simulate(scene, formulation="ccp", solver="clarabel", duration=0.1, options={"form": "dual"})
        assert ours.completed and set(ours.status_counts()) == {"optimal"}
        np.testing.assert_allclose(ours.v, ccp.v, atol=1e-8)
        limits = np.array([step.limits for step in ours.steps])
        np.testing.assert_allclose(limits, np.array([step.limits for step in ccp.steps]), atol=1e-9)
        assert limits.max() > 0  # the arm reached its limits
        arm = co.load_scene(str(MJCF / "limited_arm.xml"))
        with pytest.raises(ContactoptError, match="frictionloss"):
            co.simulate(arm, formulation="coulomb", solver="fixed_point", duration=0.01)


def test_fixed_point_refusals() -> None:
    nonsymmetric = CoulombProgram(W=sp.csc_matrix(np.array([[1.0, 0, 0.3], [0, 1.0, 0], [0, 0, 1.0]])),
                                  q=np.array([-1.0, 1.0, 0.0]), mu=np.array([0.5]))
    with pytest.raises(UnsupportedProgramError, match="symmetrize"):
        co.solve(nonsymmetric, "fixed_point")
    symmetrized = co.solve(nonsymmetric, "fixed_point", symmetrize=True)
    assert "(W + W^T)/2" in symmetrized.message
    with pytest.raises(UnsupportedProgramError, match="inner solver 'newton'"):
        co.solve(_point([-1.0, 1.0, 0.0]), "fixed_point", inner="newton")
    assert not co.solvers.can_take(_point([-1.0, 1.0, 0.0]), "pgs")  # its LCP has a zero diagonal block
