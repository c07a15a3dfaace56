"""The gauss formulation's identities, the simulation loop, trajectories and the core types.

Identities (Tedrake 2022, "Time-stepping LCP: Normal force"): the frictionless Gauss QP in
v', its dual in the impulses, and the LCP of the primal's KKT conditions have the same
solution; checked on random multi-contact step problems, not only on the 1-contact scenes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.formulations import FrictionIgnoredWarning
from contactopt.model.step import Bilateral, Contacts, Dynamics, State, StepProblem

# Interior point at tolerance 1e-10 vs exact pivoting, on well-scaled random problems.
IDENTITY_TOL = 1e-6


def random_step_problem(seed: int, nv: int = 6, nc: int = 5, dim: int = 2) -> StepProblem:
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nv, nv))
    M = B @ B.T + nv * np.eye(nv)
    contacts = Contacts(phi=rng.uniform(-0.01, 0.05, nc), J=rng.normal(size=(nc * dim, nv)),
                        mu=np.zeros(nc), restitution=np.zeros(nc), dim=dim)
    return StepProblem(state=State(rng.normal(size=nv), rng.normal(size=nv)), dt=0.01,
                       dynamics=Dynamics(M, rng.normal(size=nv) * 10), contacts=contacts,
                       bilateral=Bilateral.empty(nv))


@pytest.mark.parametrize("seed", range(6))
def test_primal_dual_and_kkt_lcp_agree(seed: int) -> None:
    problem = random_step_problem(seed)
    gauss = co.formulations.get("gauss")
    primal = gauss.build(problem, gauss.resolve_options({"form": "primal"}))
    dual = gauss.build(problem, gauss.resolve_options({"form": "dual"}))
    results = [gauss.recover(problem, primal, co.solve(primal, "clarabel")),
               gauss.recover(problem, dual, co.solve(dual, "clarabel")),
               gauss.recover(problem, primal, co.solve(primal, "lemke")),  # via the KKT LCP
               gauss.recover(problem, dual, co.solve(dual, "osqp"))]
    for other in results[1:]:
        np.testing.assert_allclose(other.v_next, results[0].v_next, atol=IDENTITY_TOL)
        np.testing.assert_allclose(other.impulses, results[0].impulses, atol=IDENTITY_TOL)
    # The dual's Hessian is the Delassus matrix n M^-1 n^T.
    n = problem.contacts.J_normal
    np.testing.assert_allclose(dual.P.toarray(), n @ np.linalg.solve(problem.dynamics.M, n.T),
                               rtol=1e-12, atol=1e-12)
    # Physics of the answer: M (v' - v_free) = n^T lambda, lambda >= 0, complementarity.
    r = results[2]
    lam = r.impulses[:, 0]
    gap = problem.contacts.phi / problem.dt + n @ r.v_next
    np.testing.assert_allclose(problem.dynamics.M @ (r.v_next - problem.v_free), n.T @ lam, atol=1e-9)
    assert lam.min() >= 0 and gap.min() >= -1e-9 and abs(lam @ gap) <= 1e-9


def test_program_layout_names_variables_and_rows() -> None:
    scene = co.load_scene("point_mass_drop")
    primal = co.formulate(scene.system, [0.0, 0.001], [0.0, -1.0], 0.01, "gauss")
    assert [b.name for b in primal.variables] == ["v_next"]
    # Zero-row blocks rather than special cases: no bilateral rows here.
    assert [(b.name, b.size) for b in primal.constraints] == [("bilateral", 0), ("nonpenetration", 1)]
    assert primal.metadata["form"] == "primal" and primal.kind == "qp"
    dual = co.formulate(scene.system, [0.0, 0.001], [0.0, -1.0], 0.01, "gauss", {"form": "dual"})
    assert [b.name for b in dual.variables] == ["impulse_normal"]


def test_point_mass_lands_and_rests_with_the_weight_impulse() -> None:
    """Dropped from z0 = 1 m. Step k from state k has v_free = -(k+1) g h. The landing step
    (L-1, first predicted height below 0) stops exactly on the ground: v' = -z_{L-1}/h,
    impulse m ((L) g h - z_{L-1}/h). The next step cancels that velocity (impulse
    m (z_{L-1}/h + g h)); from then on it rests with impulse m g h per step. vx unchanged."""
    scene = co.load_scene("point_mass_drop")
    m, g, h = 1.0, 9.81, scene.dt
    traj = co.simulate(scene, solver="osqp")
    assert traj.completed and set(traj.status_counts()) == {"optimal"}
    # Free flight in closed form for semi-implicit Euler: v_k = -k g h, z_k = z0 - g h^2 k(k+1)/2.
    k = np.arange(traj.t.shape[0])
    z_free = 1.0 - g * h**2 * k * (k + 1) / 2
    landing = int(np.argmax(z_free < 0))
    np.testing.assert_allclose(traj.q[:landing, 1], z_free[:landing], atol=1e-9)
    np.testing.assert_allclose(traj.q[landing:, 1], 0.0, atol=1e-9)
    impulses = traj.impulses()[:, 0, 0]
    z_last = z_free[landing - 1]
    np.testing.assert_allclose(impulses[: landing - 1], 0.0, atol=1e-9)
    assert impulses[landing - 1] == pytest.approx(m * (g * h * landing - z_last / h), rel=1e-6)
    assert impulses[landing] == pytest.approx(m * (z_last / h + g * h), rel=1e-6)
    np.testing.assert_allclose(impulses[landing + 1 :], m * g * h, rtol=1e-6)
    assert traj.v[landing, 1] == pytest.approx(-z_last / h, rel=1e-9)
    np.testing.assert_allclose(traj.v[landing + 1 :, 1], 0.0, atol=1e-9)
    np.testing.assert_allclose(traj.v[:, 0], 0.5, atol=1e-9)  # frictionless: vx constant


def test_friction_is_ignored_with_a_warning() -> None:
    scene = co.load_scene("point_mass_drop")
    system = co.systems.get("point_mass").from_config({"parameters": {"m": 1.0}}, {"mu": 0.5})
    with pytest.warns(FrictionIgnoredWarning, match="mu > 0 is ignored"):
        traj = co.simulate(dataclasses.replace(scene, system=system), duration=0.6)
    np.testing.assert_allclose(traj.v[:, 0], 0.5, atol=1e-9)


def test_trajectory_save_load_round_trip(tmp_path) -> None:
    traj = co.simulate(co.load_scene("point_mass_drop"), solver="clarabel", duration=0.6)
    path = traj.save(tmp_path / "traj.npz")
    with np.load(path, allow_pickle=False) as raw:  # plain arrays, no pickle
        assert raw["q"].shape == traj.q.shape
    loaded = co.Trajectory.load(path)
    np.testing.assert_array_equal(loaded.t, traj.t)
    np.testing.assert_array_equal(loaded.q, traj.q)
    np.testing.assert_array_equal(loaded.v, traj.v)
    assert loaded.info == traj.info and loaded.message == traj.message
    assert len(loaded.steps) == len(traj.steps)
    for a, b in zip(loaded.steps, traj.steps, strict=True):
        np.testing.assert_array_equal(a.impulses, b.impulses)
        np.testing.assert_array_equal(a.phi, b.phi)
        assert (a.status, a.iterations, a.residuals) == (b.status, b.iterations, b.residuals)
        assert a.solver == b.solver


def test_failed_step_stops_the_run_and_keeps_finished_steps() -> None:
    scene = co.load_scene("point_mass_drop")
    # One interior-point iteration cannot solve a step whose constraint is active.
    traj = co.simulate(scene, solver="clarabel", solver_options={"max_iter": 1})
    assert not traj.completed and "failed" in traj.message
    assert traj.steps[-1].status == co.Status.MAX_ITERATIONS
    assert np.all(np.isnan(traj.steps[-1].impulses))
    assert traj.q.shape[0] == len(traj.steps)  # every finished transition kept, plus the failure
    with pytest.raises(co.ContactoptError, match="max_iterations"):
        co.simulate(scene, solver="clarabel", solver_options={"max_iter": 1}, on_failure="raise")


def test_fallback_solver_takes_over_a_failed_step() -> None:
    scene = co.load_scene("point_mass_drop")
    traj = co.simulate(scene, solver="clarabel", solver_options={"max_iter": 1}, fallback="lemke")
    assert traj.completed
    assert {record.solver for record in traj.steps} == {"lemke"}


def test_bad_names_and_options_fail_before_any_step() -> None:
    scene = co.load_scene("cart_wall")
    with pytest.raises(co.UnknownNameError, match="known formulations: gauss"):
        co.simulate(scene, formulation="nope")
    with pytest.raises(co.UnknownNameError, match="known solvers"):
        co.simulate(scene, solver="nope")
    with pytest.raises(co.OptionError, match="'form' must be one of"):
        co.simulate(scene, options={"form": "sideways"})
    with pytest.raises(co.OptionError, match="dt must be a positive"):
        co.simulate(scene, dt=-0.1)


def test_scene_replace_gives_a_new_scene() -> None:
    scene = co.load_scene("cart_wall")
    moved = dataclasses.replace(scene, q0=[0.5], v0=[1.0])
    assert moved.q0[0] == 0.5 and scene.q0[0] == 1.0
    with pytest.raises(co.SceneError, match="length 2"):
        dataclasses.replace(scene, q0=[0.5, 1.0])
    with pytest.raises(co.SceneError, match="NaN"):
        dataclasses.replace(scene, v0=[float("nan")])


def test_core_types_check_shapes_and_values() -> None:
    with pytest.raises(co.ContactoptError, match="NaN"):
        State([0.0, np.nan], [0.0, 0.0])
    with pytest.raises(co.ContactoptError, match="not symmetric"):
        Dynamics([[1.0, 2.0], [0.0, 1.0]], [0.0, 0.0])
    with pytest.raises(co.ContactoptError, match="expected shape"):
        Dynamics(np.eye(3), [0.0, 0.0])
    with pytest.raises(co.ContactoptError, match="expected 6 rows"):
        Contacts(np.zeros(2), np.zeros((4, 3)), np.zeros(2), np.zeros(2), dim=3)
    with pytest.raises(co.ContactoptError, match="restitution"):
        Contacts(np.zeros(1), np.zeros((2, 3)), np.zeros(1), [1.5], dim=2)
    with pytest.raises(co.ContactoptError, match="not positive definite"):
        Dynamics(-np.eye(2), [0.0, 0.0]).solve_M([1.0, 0.0])
    empty = Contacts.empty(nv=3, dim=3)
    assert empty.count == 0 and empty.J_normal.shape == (0, 3)
    contacts = Contacts(np.zeros(2), np.arange(18.0).reshape(6, 3), np.zeros(2), np.zeros(2), dim=3)
    np.testing.assert_array_equal(contacts.J_normal, np.arange(18.0).reshape(6, 3)[[0, 3]])
    with pytest.raises(co.ContactoptError, match="dt"):
        StepProblem(State([0.0], [0.0]), 0.0, Dynamics([[1.0]], [0.0]), Contacts.empty(1, 1),
                    Bilateral.empty(1))


def test_step_zero_program_is_built_once_and_equals_a_fresh_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """``simulate`` checks the solver against step 0's program and then steps with that same
    program (one build, not two), unless a controller acts on step 0 (its program depends on
    the control): the trajectory equals one whose every program is built fresh."""
    from contactopt.integrators.time_stepping import TimeStepping

    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "box_slide.toml")
    formulation = co.formulations.get("anitescu")
    builds: list[float] = []
    original = type(formulation).build

    def counted(self: object, problem: StepProblem, options: dict[str, object]) -> object:
        builds.append(problem.state.t)
        return original(self, problem, options)  # type: ignore[arg-type]

    monkeypatch.setattr(type(formulation), "build", counted)
    traj = co.simulate(scene, formulation="anitescu", solver="clarabel", duration=5 * scene.dt)
    assert builds == [0.0, *traj.t[1:-1]]  # step 0's program once
    builds.clear()
    monkeypatch.setattr(TimeStepping, "first_program", lambda self, state: self.program(state)[1])
    fresh = co.simulate(scene, formulation="anitescu", solver="clarabel", duration=5 * scene.dt)
    assert builds == [0.0, 0.0, *fresh.t[1:-1]]
    np.testing.assert_array_equal(traj.q, fresh.q)
    np.testing.assert_array_equal(traj.v, fresh.v)
    builds.clear()
    driven = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cartesian_pendulum_floor.toml")
    co.simulate(driven, formulation="anitescu", solver="clarabel", duration=3 * driven.dt,
                controller=lambda t, q, v: np.ones(driven.system.control_size))
    assert builds[:2] == [0.0, 0.0]  # with a controller step 0 is built again, after its control
