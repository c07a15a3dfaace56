"""The step as arrays: ``regularized -o params=model,form=primal`` / ``newton``
(:mod:`contactopt.integrators.native_step`, :mod:`contactopt.formulations.model_primal`).

* One step from random states equals a converged ``mj_step`` (the program is MuJoCo's own:
  Todorov 2014), pyramidal and elliptic, Euler and implicitfast, on every row type of
  ``limited_arm.xml`` and on control-suite models.
* The compiled step and the program object are one build: the object's conic arrays equal the
  compiled assembly's entry for entry, the compiled verdict equals ``conic_check``'s, and the
  compiled step's next velocity equals ``co.solve`` of the object plus ``recover``.
* The record's contact impulses are MuJoCo's own contact forces times ``h``.
* A step Newton cannot finish is recorded with its status and ends the run loudly.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import OptionError
from contactopt.formulations import get, model_primal
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.model.step import State
from contactopt.programs import Status, primal_arrays, relative_kernel
from contactopt.programs.relative import conic_data_violation
from contactopt.programs.residuals import conic_check

mujoco = pytest.importorskip("mujoco")

from contactopt.integrators.native_step import NativeStepping  # noqa: E402
from contactopt.systems.mjcf.native_arrays import native_arrays  # noqa: E402
from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402
from tests.test_mjcf_rows import TOLERANCE, suite_model  # noqa: E402

MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"
OPTIONS = {"params": "model", "form": "primal"}


def sampled_states(model: object, count: int, seed: int = 2) -> list[tuple[np.ndarray, np.ndarray]]:
    """States along a run of MuJoCo started with random velocities, perturbed at each sample."""
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed)
    data.qvel[:] = rng.normal(size=model.nv)  # type: ignore[attr-defined]
    states = []
    for _ in range(count):
        for _ in range(20):
            mujoco.mj_step(model, data)
        states.append((data.qpos.copy(), data.qvel + 0.3 * rng.normal(size=model.nv)))  # type: ignore[attr-defined]
    return states


def one_step_errors(path: str, cone: str, integrator: str | None = None, states: int = 12) -> list[float]:
    """``|v'_array step - v'_mj_step| / |v'_mj_step|`` from sampled states, MuJoCo converged."""
    system = MjcfSystem(path)
    model = mujoco.MjModel.from_xml_path(path)
    for each in (model, system.native_model_data()[0], system.model):
        if integrator is not None:
            each.opt.integrator = getattr(mujoco.mjtIntegrator, integrator)
        each.opt.cone = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}[cone]
    system.native_cone = int(system.native_model_data()[0].opt.cone)
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000
    model.opt.ls_tolerance, model.opt.ls_iterations = 1e-15, 1000
    stepper = NativeStepping(system, "regularized", "newton", float(model.opt.timestep), OPTIONS)
    errors = []
    for q, v in sampled_states(model, states):
        next_state, record = stepper.step(State(q, v, 0.0, np.zeros(system.na)))
        assert next_state is not None, record.message
        reference = mujoco.MjData(model)
        reference.qpos[:], reference.qvel[:] = q, v
        mujoco.mj_step(model, reference)
        errors.append(float(np.linalg.norm(next_state.v - reference.qvel) / np.linalg.norm(reference.qvel)))
    return errors


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("integrator", ["mjINT_EULER", "mjINT_IMPLICITFAST", "mjINT_RK4"])
def test_array_step_matches_mj_step_on_every_row_type(cone: str, integrator: str) -> None:
    """Joint and tendon limits, a joint equality, dof and tendon frictionloss (box rows),
    damping, actuators, contacts of condim 1, 3, 4 and 6 (the elliptic cones of condim 4 and 6
    are MuJoCo's scaled cones: the compiled step's GENERAL blocks); RK4's four stage problems; tolerance
    as for params=model's dual (tests/test_mjcf_rows.py: MuJoCo's own Newton stops on its flat cost)."""
    errors = one_step_errors(str(MJCF / "limited_arm.xml"), cone, integrator)
    assert max(errors) < TOLERANCE[cone], errors


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("name", ["walker", "humanoid"])
def test_array_step_matches_mj_step_on_control_suite(name: str, cone: str) -> None:
    errors = one_step_errors(suite_model(name), cone, states=8)
    assert max(errors) < TOLERANCE[cone], errors


def assert_compiled_assembly_is_the_object(native: object, rows: model_primal.PrimalRows, program: object,
                                           solution: object) -> tuple[np.ndarray, np.ndarray]:
    """The compiled step's conic arrays of ``native``'s ordered ``rows`` at ``solution`` equal the
    program object's entry for entry; returns the assembly's ``(x, y)``."""
    primal_arrays.ensure_compiled()
    v_sol, gamma = program.variable(solution.x, "v_next"), program.variable(solution.x, "sigma")
    Pp, Pi, Px, Ap, Ai, Ax, b, c, x, y = primal_arrays.conic_arrays(
        native.M, np.ascontiguousarray(native.J[rows.order]), rows.R, rows.scale, rows.v_hat,
        program.c[:native.nv], rows.box_bound, v_sol, gamma)
    for ours_part, theirs in ((Pp, program.P.indptr), (Pi, program.P.indices), (Px, program.P.data),
                              (Ap, program.A.indptr), (Ai, program.A.indices), (Ax, program.A.data),
                              (b, program.b), (c, program.c)):
        np.testing.assert_array_equal(ours_part, theirs)
    return x, y


@pytest.mark.parametrize("path", [str(MJCF / "limited_arm.xml"), str(MJCF / "box_stack.xml"),
                                  str(MJCF / "tendon_gripper.xml"), "walker"])
def test_compiled_step_and_program_object_are_one_build(path: str) -> None:
    """The object (co.formulate) and the compiled step read the same arrays: its conic arrays
    equal the compiled assembly's exactly, the compiled verdict equals conic_check's to 1e-12
    relative (sums in another order), and the compiled step's v' equals co.solve + recover to
    1e-12 of |v'| (two runs of the same Newton iteration from the same start; the dense product
    of the compiled step and the sparse one of the object round differently)."""
    system = MjcfSystem(suite_model(path) if path == "walker" else path)
    model = system.native_model_data()[0]
    h = float(model.opt.timestep)
    formulation = get("regularized")
    options = formulation.resolve_options(OPTIONS)
    stepper = NativeStepping(system, "regularized", "newton", h, OPTIONS)
    for q, v in sampled_states(mujoco.MjModel.from_xml_path(str(system.path)), 4, seed=5):
        problem = build_step_problem(system, q, v, h, native=formulation.native_request(options))
        program = formulation.build(problem, options)
        solution = co.solve(program, "newton")
        assert solution.status.usable, solution.message
        ours = formulation.recover(problem, program, solution).v_next
        next_state, record = stepper.step(State(q, v, 0.0, np.zeros(system.na)))
        assert next_state is not None, record.message
        assert np.abs(next_state.v - ours).max() <= 1e-12 * max(1.0, np.abs(ours).max())
        native = native_arrays(system, q, v, h)
        x, y = assert_compiled_assembly_is_the_object(native, model_primal.primal_rows(native), program, solution)
        np.testing.assert_allclose(x, solution.x, rtol=0, atol=1e-15 * max(1.0, np.abs(solution.x).max()))
        np.testing.assert_array_equal(y, solution.y)
        expected, slack = conic_check(program, solution.x, solution.y)
        residuals, data = relative_kernel.conic_verdict(program, solution.x, solution.y)
        # at an optimum the relative residual is itself rounding (~1e-15): two summation orders agree
        # to that, not to 1e-12 of it (tests/test_relative_kernel.py holds the kernel to 1e-12 off optimum)
        assert residuals.relative == pytest.approx(expected.relative, rel=1e-12, abs=1e-13)
        # a slack at 0 is +-1e-17 of its row after products summed in another order: the data
        # violation is a ratio to the row's scale, so rounding reads as up to ~n eps there
        assert data == pytest.approx(conic_data_violation(program, solution.x, slack), rel=1e-12, abs=1e-14)


def test_record_impulses_are_mujocos_contact_forces() -> None:
    """A box settled on the plane: each record's frame impulses are MuJoCo's own contact force
    (``mj_contactForce``, in the contact frame) times ``h`` at the same state, to 1e-9 of m g h."""
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=0.3)
    assert traj.completed, traj.message
    model = mujoco.MjModel.from_xml_path(str(scene.system.path))
    model.opt.timestep = scene.dt
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000
    data = mujoco.MjData(model)
    weight = float(np.sum(model.body_mass)) * 9.81 * scene.dt
    k = len(traj.steps) - 1
    data.qpos[:], data.qvel[:] = traj.q[k], traj.v[k]
    mujoco.mj_forward(model, data)
    record = traj.steps[k]
    assert record.candidates == data.ncon and record.impulses.shape == (data.ncon, 3)
    force = np.zeros(6)
    for c in range(data.ncon):
        mujoco.mj_contactForce(model, data, c, force)
        np.testing.assert_allclose(record.impulses[c], scene.dt * force[:3], rtol=0, atol=1e-9 * weight)
    assert record.impulses[:, 0].sum() == pytest.approx(weight, rel=1e-6)  # at rest: the weight


def test_a_step_newton_cannot_finish_is_recorded_and_stops_the_run() -> None:
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=0.1,
                           solver_options={"max_iter": 0})
    assert not traj.completed and "failed: max_iterations" in traj.message
    assert traj.steps[-1].status is Status.MAX_ITERATIONS and np.isnan(traj.steps[-1].impulses).all()
    assert len(traj.q) == len(traj.steps)  # the failed step has no next state


def test_what_the_array_step_does_not_take_is_refused_in_one_line() -> None:
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    with pytest.raises(OptionError, match="unknown option"):
        co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=0.01,
                    solver_options={"tolerance": 1e-9})
    with pytest.raises(OptionError, match="history is recorded on the program object"):
        co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=0.01,
                    solver_options={"history": True})
    with pytest.raises(OptionError, match="params=model takes every constraint parameter"):
        co.simulate(scene, formulation="regularized", solver="newton", options={**OPTIONS, "solref": [0.02, 1]},
                    duration=0.01)


def test_a_batch_of_array_steps_equals_its_single_runs() -> None:
    """co.simulate_batch of three boxes launched at 0, 0.5 and 1 m/s under the array step: each
    world equals its own simulate() to 1e-12, and the worlds differ."""
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    V0 = np.zeros((3, scene.system.nv))
    V0[:, 0] = [0.0, 0.5, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = co.simulate_batch(scene, v0=V0, formulation="regularized", solver="newton", options=OPTIONS,
                                  duration=0.05)
        for i in range(3):
            single = co.simulate(dataclasses.replace(scene, v0=V0[i]), formulation="regularized",
                                 solver="newton", options=OPTIONS, duration=0.05)
            np.testing.assert_allclose(batch.q[i], single.q, rtol=0, atol=1e-12)
            np.testing.assert_allclose(batch.v[i], single.v, rtol=0, atol=1e-12)
    assert batch.completed.all() and np.abs(batch.q[2, -1, 0] - batch.q[0, -1, 0]) > 1e-3


def test_a_controlled_run_takes_the_array_loop_and_equals_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """dm-control's walker under its scene's controller: simulate's array loop (each step's ``u``
    set on the system and held) equals the steps taken one by one with the same controls, bit for
    bit (the same arithmetic), and records each step's ``u``; a controller that raises keeps the
    finished steps in its error."""
    scene = co.load_scene("dm_walker")
    assert scene.control is not None
    duration = 40 * scene.dt
    loops: list[int] = []
    run_steps = NativeStepping.run_steps

    def counted(self: NativeStepping, *args: object) -> str:
        loops.append(1)
        return run_steps(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(NativeStepping, "run_steps", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=duration)
    assert traj.completed and len(traj.steps) == 40 and loops == [1]
    from contactopt.scenes.control import ControlError, make_controller

    controller = make_controller(scene.control, scene.system)
    stepper = NativeStepping(scene.system, "regularized", "newton", scene.dt, OPTIONS)
    state = State(scene.q0, scene.v0, 0.0, scene.system.initial_activation())
    try:
        for k in range(40):
            u = np.asarray(controller(state.t, state.q.copy(), state.v.copy()), dtype=np.float64)
            scene.system.set_control(u)
            following, record = stepper.step(state)
            assert following is not None, record.message
            state = following
            np.testing.assert_array_equal(traj.steps[k].control, u)
            np.testing.assert_array_equal(traj.q[k + 1], state.q)
            np.testing.assert_array_equal(traj.v[k + 1], state.v)
    finally:
        scene.system.set_control(None)
    assert np.abs(np.array([step.control for step in traj.steps])).max() > 1e-3  # the controller acts

    def failing(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        if t > 10.5 * scene.dt:
            raise RuntimeError("sensor lost")
        return np.zeros(scene.system.model.nu)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ControlError, match="sensor lost") as info:
            co.simulate(scene, formulation="regularized", solver="newton", options=OPTIONS, duration=duration,
                        controller=failing)
    assert len(info.value.trajectory.steps) == 11
