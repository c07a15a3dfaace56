"""Issue 16: MJCF models as MuJoCo models them (limits, tendons, equality constraints, dry
friction, passive forces, MuJoCo's integrators).

* One step of ``regularized -o params=model`` (MuJoCo's own constraint problem, solved by
  Clarabel and polished) against ``mj_step`` on the same file, from 20 states of each model.
* Joint and tendon limits hold under every time-stepping formulation.
* Dry friction (``frictionloss``): the closed-form stick/slip step.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ContactoptError
from contactopt.formulations import get
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.model.step import to_dense
from contactopt.systems.base import ParameterError

mujoco = pytest.importorskip("mujoco")

from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402

MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"


def suite_model(name: str) -> str:
    """The control-suite file of dm-control (the test skips without it)."""
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("dm-control is not installed (pip install dm-control): the control-suite models are its files")
    path = Path(next(iter(spec.submodule_search_locations))) / "suite" / f"{name}.xml"
    if not path.exists():
        pytest.skip(f"dm-control has no suite model {name!r}")
    return str(path)


def one_step_errors(path: str, cone: str, integrator: str | None = None, states: int = 20) -> list[float]:
    """``|v'_contactopt - v'_mj_step| / |v'_mj_step|`` from ``states`` states along a run of
    MuJoCo started with random velocities (perturbed again at each sample)."""
    system = MjcfSystem(path)
    model = mujoco.MjModel.from_xml_path(path)
    if integrator is not None:
        for each in (model, system.native_model_data()[0]):
            each.opt.integrator = getattr(mujoco.mjtIntegrator, integrator)
    model.opt.cone = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}[cone]
    # the reference solver converged as far as it goes (the program does not depend on these)
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000
    model.opt.ls_tolerance, model.opt.ls_iterations = 1e-15, 1000
    data = mujoco.MjData(model)
    rng = np.random.default_rng(2)
    data.qvel[:] = rng.normal(size=model.nv)
    h = float(model.opt.timestep)
    formulation = get("regularized")
    options = formulation.resolve_options({"params": "model", "cone": cone})
    errors = []
    for _ in range(states):
        for _ in range(20):
            mujoco.mj_step(model, data)
        q, v = data.qpos.copy(), data.qvel + 0.3 * rng.normal(size=model.nv)
        problem = build_step_problem(system, q, v, h, native=formulation.native_request(options))
        program = formulation.build(problem, options)
        solution = co.solve(program, "clarabel")
        assert solution.status.usable, solution.message
        ours = formulation.recover(problem, program, solution).v_next
        reference = mujoco.MjData(model)
        reference.qpos[:], reference.qvel[:] = q, v
        mujoco.mj_step(model, reference)
        errors.append(float(np.linalg.norm(ours - reference.qvel) / np.linalg.norm(reference.qvel)))
    return errors


# MuJoCo's Newton solver stops on the decrease of its cost, which is flat to second order at the
# optimum: its own velocities are exact only to about sqrt(machine epsilon) where an elliptic
# cone's boundary is active (humanoid: one state of 20 at 1.3e-8, where contactopt's answer
# is a KKT point with natural-map residual 1e-17, the Newton matrix's condition number 480).
TOLERANCE = {"pyramidal": 1e-8, "elliptic": 2e-8}


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("integrator", ["mjINT_EULER", "mjINT_IMPLICITFAST"])
def test_params_model_one_step_matches_mj_step_on_every_row_type(cone: str, integrator: str) -> None:
    """limited_arm.xml has joint limits (hinge, slide, margin), a fixed and a spatial tendon
    with ranges, a joint equality, damping, stiffness, armature, dof and tendon frictionloss,
    tendon damping, velocity actuators and contacts of condim 1, 3, 4 and 6; Euler's implicit
    joint damping and implicitfast's velocity derivative (joint and tendon damping,
    actuators) are in the step."""
    errors = one_step_errors(str(MJCF / "limited_arm.xml"), cone, integrator)
    assert max(errors) < TOLERANCE[cone], errors


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("name", ["hopper", "walker", "cheetah", "humanoid", "ball_in_cup"])
def test_params_model_one_step_matches_mj_step_on_control_suite(name: str, cone: str) -> None:
    errors = one_step_errors(suite_model(name), cone)
    assert max(errors) < TOLERANCE[cone], errors


def run(path: str, formulation: str, solver: str, duration: float, margin: float | None = None,
        **options: Any) -> Any:
    scene = co.load_scene(path, system_options=None if margin is None else {"detection_margin": margin})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation=formulation, solver=solver, duration=duration, options=options)
    assert traj.completed, traj.message
    return scene.system, traj


def limit_violation(system: MjcfSystem, q: np.ndarray) -> float:
    """Largest excursion beyond a joint or tendon bound (not its margin) at ``q``."""
    data = system.data_at(q)
    model = system.model
    worst = 0.0
    for j in np.flatnonzero(model.jnt_limited):
        value = float(data.qpos[model.jnt_qposadr[j]])
        lo, hi = model.jnt_range[j]
        worst = max(worst, lo - value, value - hi)
    for t in np.flatnonzero(model.tendon_limited):
        lo, hi = model.tendon_range[t]
        worst = max(worst, lo - float(data.ten_length[t]), float(data.ten_length[t]) - hi)
    return worst


CHAIN = str(MJCF / "limit_chain.xml")


@pytest.mark.parametrize(("formulation", "solver", "options"), [
    ("gauss", "clarabel", {}), ("lcp", "lemke", {}), ("anitescu", "clarabel", {}),
    ("anitescu", "clarabel", {"form": "dual"}), ("ccp", "clarabel", {}), ("ccp", "clarabel", {"form": "dual"}),
    ("sap", "newton", {}),
    # MuJoCo's activation (a row enters at its margin, epsilon = 0) overshoots a limit reached at
    # speed by ~h v + v tc (the tendon here by 0.018 rad; MuJoCo's own mj_step by 0.046 rad):
    # with the rows in the program 0.05 rad early, the reference damping stops the approach.
    # Its soft equality row drifts under load without the driver's Baumgarte target.
    ("regularized", "clarabel", {"epsilon": 0.05, "drift": "baumgarte"}),
])
def test_limits_and_tendon_ranges_hold(formulation: str, solver: str, options: dict[str, Any]) -> None:
    """limit_chain.xml falls into its hinge limits (30 and 20 deg), its fixed tendon's range
    (|shoulder + elbow| <= 0.6 rad, which binds first) and the string's range (0.45 m)."""
    system, traj = run(CHAIN, formulation, solver, 0.4, **options)
    margin = 0.01  # the model's joint margin
    violations = [limit_violation(system, q) for q in traj.q]
    assert max(violations) < margin + 1e-3
    # the joints did reach the limits: the tendon sum at its bound
    data = system.data_at(traj.q[-1])
    assert data.ten_length[0] > 0.6 - margin - 1e-3
    # the joint equality holds at the velocity level (drift O(h^2) per step); the soft
    # formulations' bilateral rows give under the arm's load: SAP's near-rigid compliance
    # (R = beta^2 / (4 pi^2) w) by 2e-3 rad, regularized's impedance (with Baumgarte) similarly
    shoulder, twin = system.model.joint("shoulder").qposadr[0], system.model.joint("twin_shoulder").qposadr[0]
    soft = formulation in ("sap", "regularized")
    assert np.max(np.abs(traj.q[:, shoulder] - traj.q[:, twin])) < (5e-3 if soft else 1e-3)


def test_ball_in_cup_string_stays_within_range() -> None:
    system, traj = run(suite_model("ball_in_cup"), "lcp", "lemke", 0.3)
    lo, hi = system.model.tendon_range[0]
    lengths = [float(system.data_at(q).ten_length[0]) for q in traj.q]
    assert max(lengths) <= hi + 1e-3 and min(lengths) >= lo - 1e-3


FRICTION_XML = """
<mujoco><option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody><body pos="0 0 1">
    <joint name="hinge" type="hinge" axis="0 1 0" frictionloss="{loss}"/>
    <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
  </body></worldbody>
</mujoco>
"""


@pytest.mark.parametrize(("formulation", "options"), [
    ("gauss", {}), ("gauss", {"form": "dual"}), ("lcp", {}), ("anitescu", {}), ("anitescu", {"form": "dual"}),
    ("ccp", {}), ("ccp", {"form": "dual"}),
])
def test_frictionloss_box_rows_stick_and_slip(tmp_path: Path, formulation: str, options: dict[str, Any]) -> None:
    """A horizontal rod (gravity torque m g L/2 = 1.962 N m about its hinge) with dry joint
    friction: one step from rest gives v' = 0 when frictionloss >= 1.962 (stuck), and
    v' = h (tau - frictionloss) / I when below (slipping), I = M from MuJoCo."""
    solver = "lemke" if formulation == "lcp" else "clarabel"
    for loss, stuck in ((2.5, True), (1.0, False)):
        path = tmp_path / f"rod_{loss}.xml"
        path.write_text(FRICTION_XML.format(loss=loss))
        system = MjcfSystem(path)
        q, v = np.zeros(1), np.zeros(1)
        h = 0.01
        program = co.formulate(system, q, v, h, formulation, options)
        solution = co.solve(program, solver)
        problem = build_step_problem(system, q, v, h)
        result = get(formulation).recover(problem, program, solution)
        dynamics = system.dynamics(q, v)
        tau, inertia = float(dynamics.tau[0]), float(to_dense(dynamics.M)[0, 0])
        assert abs(tau) == pytest.approx(9.81 * 0.2, rel=1e-9)
        expected = 0.0 if stuck else h * (tau - np.sign(tau) * loss) / inertia
        assert result.v_next[0] == pytest.approx(expected, abs=1e-9)
        assert abs(result.friction_loss[0]) <= h * loss * (1 + 1e-9)


def test_params_model_refuses_own_parameters_and_non_mjcf_systems() -> None:
    with pytest.raises(co.OptionError, match="params=model takes every constraint parameter"):
        get("regularized").resolve_options({"params": "model", "solref": [0.02, 1]})
    scene = co.load_scene("problems/box_slide.toml")
    with pytest.raises(ContactoptError, match="params=model and sap's rows=model need an mjcf system"):
        co.formulate(scene.system, scene.q0, scene.v0, 0.001, "regularized", {"params": "model"})


@pytest.mark.parametrize("name", ["cheetah", "hopper"])
def test_lemke_runs_past_the_first_contact(name: str) -> None:
    """The issue's failure (ray termination after 1 pivot at step 9): the first contact of a
    planar model, whose out-of-plane friction directions are zero rows (q = -1e-17)."""
    _, traj = run(suite_model(name), "lcp", "lemke", 0.2)
    assert all(step.status.usable for step in traj.steps)


@pytest.mark.slow
@pytest.mark.parametrize(("formulation", "solver"), [("lcp", "lemke"), ("regularized", "clarabel")])
@pytest.mark.parametrize("name", ["hopper", "walker", "cheetah", "humanoid", "ball_in_cup"])
def test_control_suite_runs_one_second(name: str, formulation: str, solver: str) -> None:
    system, traj = run(suite_model(name), formulation, solver, 1.0)
    assert all(step.status.usable for step in traj.steps)
    # limits hold (hopper starts 0.087 rad outside its knee range: qpos0 = 0, range [5, 150] deg)
    start = limit_violation(system, traj.q[0])
    assert max(limit_violation(system, q) for q in traj.q) <= max(start, 0.0) + 0.03


def test_condim_above_three_has_its_rows_or_is_kept_sliding_on_request() -> None:
    """limited_arm's tip (condim 6) touches the floor within 0.2 s of MuJoCo: its torsional and
    rolling rows enter the program (``Contacts.angular``, tests/test_condim.py);
    ``extra_friction = "sliding"`` keeps its sliding friction only (said once); params=model
    takes MuJoCo's own rows."""
    from contactopt.systems.mjcf.candidates import UnmodelledFrictionWarning

    model = mujoco.MjModel.from_xml_path(str(MJCF / "limited_arm.xml"))
    data = mujoco.MjData(model)
    for _ in range(100):
        mujoco.mj_step(model, data)
        if 6 in [int(c.dim) for c in data.contact[: data.ncon]]:
            break
    assert 6 in [int(c.dim) for c in data.contact[: data.ncon]]
    modelled = MjcfSystem(MJCF / "limited_arm.xml")
    contacts = modelled.contacts(data.qpos)
    assert contacts.angular is not None and set(contacts.angular.axis.tolist()) == {0, 1, 2}
    for formulation in ("anitescu", "ccp", "lcp", "sap"):
        assert co.formulate(modelled, data.qpos, data.qvel, model.opt.timestep, formulation).n > 0
    program = co.formulate(modelled, data.qpos, data.qvel, model.opt.timestep, "regularized",
                           options={"params": "model"})
    assert program.m > 0
    sliding = MjcfSystem(MJCF / "limited_arm.xml", extra_friction="sliding")
    with pytest.warns(UnmodelledFrictionWarning, match="condim \\[(4, )?6\\]"):
        co.formulate(sliding, data.qpos, data.qvel, model.opt.timestep, "anitescu")
    assert sliding.contacts(data.qpos).angular is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        co.formulate(sliding, data.qpos + 1e-9, data.qvel, model.opt.timestep, "anitescu")
    with pytest.raises(ParameterError, match=r"system\.extra_friction: one of 'model', 'sliding'"):
        MjcfSystem.from_config({"file": str(MJCF / "limited_arm.xml"), "extra_friction": "torsional"}, {})


def test_clarabel_retries_a_stalled_step_without_equilibration() -> None:
    """hopper under gauss: step 12's primal QP (M of condition 98, every row inactive) stalls
    Clarabel's equilibrated iteration (InsufficientProgress); the retry solves it."""
    # the candidates within 4 cm (the former fixed margin under MuJoCo 4) give that program
    _, traj = run(suite_model("hopper"), "gauss", "clarabel", 0.1, margin=0.04)
    assert "retried: equilibrate_enable=False after InsufficientProgress" in traj.steps[12].message
    assert traj.steps[12].status.usable


def test_clarabel_retries_a_drifting_slack_with_a_shorter_step() -> None:
    """dm-control finger, anitescu primal at t = 1.14 s (saved program, so no dm-control needed):
    the L1 slack of its frictionloss row (cost 1e-3, no curvature) drifts to 2e3 in 200
    iterations, with and without equilibration; step fraction 0.9 solves it. The answer is
    OSQP's optimum of the same program."""
    program = co.load_program(Path(__file__).parent / "data" / "finger_frictionloss_stall.npz")
    solution = co.solve(program, "clarabel")
    assert solution.status is co.Status.OPTIMAL
    assert "max_step_fraction=0.9 after MaxIterations" in solution.message
    reference = co.solve(program, "osqp")
    assert program.objective(solution.x) == pytest.approx(program.objective(reference.x), rel=1e-9)
    capped = co.solve(program, "clarabel", max_iter=50)  # a cap the user set is not retried
    assert capped.status is co.Status.MAX_ITERATIONS and "retried" not in capped.message


def test_fclib_export_refuses_rows_it_cannot_hold() -> None:
    from contactopt.analysis.export.fclib import fclib_local_problem

    scene = co.load_scene(CHAIN)
    with pytest.raises(ContactoptError, match="limit row"):
        fclib_local_problem(scene, scene.q0, scene.v0, scene.dt)


def test_limit_and_friction_impulses_are_recorded_and_saved(tmp_path: Path) -> None:
    """The step records carry the limit impulses (>= 0, nonzero once the arm rests in its
    limits, zero while it falls freely) and the dry-friction impulses, through save/load."""
    _, traj = run(CHAIN, "lcp", "lemke", 0.4)
    limits = np.array([step.limits for step in traj.steps])
    assert limits.min() >= 0 and np.all(limits[0] == 0) and limits[-1].max() > 0
    arm_scene = co.load_scene(MJCF / "limited_arm.xml")
    arm_scene = dataclasses.replace(arm_scene, system=MjcfSystem(MJCF / "limited_arm.xml", extra_friction="sliding"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the condim 4/6 contacts keep their sliding friction only
        arm = co.simulate(arm_scene, formulation="anitescu", solver="clarabel", duration=0.02)
    assert arm.steps[-1].friction_loss.shape == (5,)  # 4 dofs with frictionloss + the tendon
    assert np.all(np.abs(arm.steps[-1].friction_loss) <= 0.002 * np.array([0.05] * 4 + [0.02]) * (1 + 1e-9))
    loaded = co.Trajectory.load(traj.save(tmp_path / "chain.npz"))
    np.testing.assert_array_equal(np.array([step.limits for step in loaded.steps]), limits)
