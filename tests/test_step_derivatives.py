"""Step and trajectory derivatives against central finite differences of the whole step (issue 26,
"Must show": every time-stepping formulation, every installed solver that takes its program, on
random states of the textbook systems, the box and an MJCF arm).

The reference is the step itself re-solved from scratch at ``x +- t e_j`` by the same solver at
tight tolerances (:data:`TIGHT`), with ``t = 1e-6`` relative to the input block's size. Its error
is the truncation ``O(t^2)`` plus the solver's answer error over ``t``: the exact-by-construction
solvers (lemke, clarabel refined to its active set, osqp polished, newton, pgs at 1e-14) answer to
~1e-13, i.e. ~1e-7 over t = 1e-6 in the worst direction; measured agreement 1e-12 .. 1e-7 (the
issue's 1e-6). A whole run (50 steps) is differenced the same way at ``t = 1e-5`` (its
sensitivities grow over the steps; measured 1e-11 .. 1e-7 against the issue's 1e-5).

States are drawn on smooth segments: each step's program keeps strict complementarity
(``degenerate == 0``, asserted) and no contact appears or leaves within the difference step
(:class:`~contactopt.derivatives.NotDifferentiableError` otherwise). ``coulomb`` (the exact
cone's CoulombProgram, differentiated through the Alart-Curnier function) is checked on a run
by :func:`test_coulomb_run_matches_central_differences` (its programs: tests/test_derivatives_coulomb.py).

The default suite runs each formulation with its default solver on one textbook system, the box
and the arm; the whole grid (every solver that takes the program, every system) is ``slow``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import PROBLEMS

import contactopt as co
from contactopt.derivatives import StepDerivative
from contactopt.derivatives.trajectory import step_derivative
from contactopt.formulations.gauss import FrictionIgnoredWarning
from contactopt.integrators.time_stepping import TimeStepping
from contactopt.model.step import State
from contactopt.solvers.choice import takers
from contactopt.systems.base import System

FORMULATIONS = ("gauss", "anitescu", "ccp", "lcp", "regularized", "sap")
STEP_TOL = 1e-6  # issue 26: one step (program level), relative
TRAJECTORY_TOL = 1e-5  # issue 26: a 50-step trajectory, relative
STEP_FD = 1e-5
TRAJECTORY_FD = 1e-6
TRAJECTORY_STEPS = 50
#: Steps taken before a run (a formulation's own contact state: Anitescu's hover, a soft depth).
SETTLE = 30

#: Tight tolerances per solver (the finite differences see the answer's error over the step t).
TIGHT: dict[str, dict[str, object]] = {
    "clarabel": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12},
    "osqp": {"eps_abs": 1e-12, "eps_rel": 1e-12, "max_iter": 200_000},
    "cvxpy": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "refine": True},
    "qpsolvers": {"eps_abs": 1e-12, "refine": True},
    "pgs": {"tol": 1e-14, "max_iter": 100_000},
    "newton": {"tol": 1e-14},
    "lemke": {},
    "nsgs": {"tol": 1e-14, "max_iterations": 100_000},
}
#: The formulation's default solver: the one the default suite runs.
DEFAULT_SOLVER = {"gauss": "clarabel", "anitescu": "clarabel", "ccp": "clarabel", "lcp": "lemke",
                  "regularized": "clarabel", "sap": "newton"}


#: Depth of the random contact states: ``regularized`` takes the contacts with ``phi <= 0`` (its
#: ``epsilon``), so a contact at exactly ``phi = 0`` would enter or leave within the difference step.
DEPTH = 1e-4


@dataclass(frozen=True)
class Case:
    """A system and a random state on a smooth segment (``state(rng) -> (q, v, u)``); the step is
    differentiated by every parameter the system exposes and ``dt``."""

    scene: str
    state: Callable[[System, np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray | None]]
    dt: float
    #: Where a run starts, before :data:`SETTLE` steps (None: ``state``).
    start: Callable[[System, np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray | None]] | None = None


def _brick(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None]:
    """On the ground (0.1 mm deep, see :data:`DEPTH`), sliding forward (the push u = 8 N exceeds
    mu m g = 4.9 N) and pressed down."""
    return np.array([rng.uniform(-1, 1), -DEPTH]), np.array([rng.uniform(0.2, 2.0), -rng.uniform(0.1, 1.0)]), None


def _pendulum(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rng.uniform(-2, 2, 1), rng.uniform(-2, 2, 1), rng.uniform(-1, 1, 1)


def _cartesian_pendulum(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On the rod's circle above the floor (y > -0.8), moving along it: the bilateral row only."""
    angle = rng.uniform(-0.5, 0.5)  # from the horizontal, the floor meets the circle at -0.93
    speed = rng.uniform(-2, 2)
    q = np.array([np.cos(angle), np.sin(angle)])
    return q, speed * np.array([-q[1], q[0]]), rng.uniform(-1, 1, 2)


def _cartpole(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.array([rng.uniform(-1, 1), rng.uniform(0, 2 * np.pi)]), rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 1)


def _box(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None]:
    """Tilted at random about a horizontal axis (0.1 to 0.4 rad) so that one corner or edge is
    lowest, that corner :data:`DEPTH` into the ground, moving down and sideways: the lowest contacts are active
    with unique multipliers (four coplanar corners would make them non-unique)."""
    axis = np.r_[rng.standard_normal(2), 0.0]
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.1, 0.4)
    q = np.r_[0.0, 0.0, 0.3, np.cos(angle / 2), np.sin(angle / 2) * axis]
    q[2] -= float(system.contacts(q).phi.min()) + DEPTH
    v = np.r_[rng.uniform(-1, 1, 2), -rng.uniform(0.2, 1.0), rng.uniform(-1, 1, 3)]
    return q, v, None


def _brick_resting(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None]:
    """On the ground at rest vertically, sliding forward (a run: no bounce off a penetration)."""
    return np.array([rng.uniform(-1, 1), 0.0]), np.array([rng.uniform(0.2, 2.0), 0.0]), None


def _box_sliding(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None]:
    """Flat on its four lower corners, sliding (and spinning slowly) at 0.5 to 1.5 m/s: with
    mu = 0.5 it stops after at least 0.1 s, beyond the settling and the run."""
    q = np.array([rng.uniform(-1, 1), rng.uniform(-1, 1), 0.1, 1.0, 0.0, 0.0, 0.0])
    return q, np.r_[rng.uniform(0.5, 1.5), rng.uniform(-0.2, 0.2), 0.0, 0.0, 0.0, rng.uniform(-0.5, 0.5)], None


def _arm_swinging(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Near horizontal, swinging with random speeds and inputs, far from the floor for the run
    (the forearm first reaches it after 0.28 s from rest)."""
    return 0.05 * rng.standard_normal(2), rng.uniform(-1, 1, 2), rng.uniform(-0.5, 0.5, 2)


def _arm(system: System, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forearm striking the floor: the state of the scene's default run at its first contact
    (step 285, 2.4 mm deep), moved at random, with random motor inputs."""
    q = np.array([1.00578541, -0.45975622]) + 2e-4 * rng.standard_normal(2)
    v = np.array([5.03172427, 2.4305418]) + 0.1 * rng.standard_normal(2)
    return q, v, rng.uniform(-0.5, 0.5, 2)


CASES: dict[str, Case] = {
    "brick": Case("brick_push", _brick, 1e-3, _brick_resting),
    "pendulum": Case("pendulum", _pendulum, 1e-3),
    "cartesian_pendulum": Case("cartesian_pendulum_floor", _cartesian_pendulum, 1e-3),
    "cartpole": Case("cartpole", _cartpole, 1e-3),
    "box": Case("box_slide", _box, 1e-3, _box_sliding),
    "arm": Case("two_link_arm_mjcf", _arm, 1e-3, _arm_swinging),
}


def _load(case: Case) -> System:
    return co.load_scene(PROBLEMS / f"{case.scene}.toml").system


def _whole_step(system: System, formulation: str, solver: str, dt: float, q: np.ndarray, v: np.ndarray,
                u: np.ndarray | None) -> np.ndarray:
    """``(q', v')`` of one step re-solved from scratch (a new stepper: no warm start)."""
    stepper = TimeStepping(system, formulation, solver, dt, None, TIGHT[solver])
    held = system.control
    try:
        if u is not None:
            system.set_control(u)
        state, record = stepper.step(State(q, v, 0.0))
    finally:
        system.set_control(held)
    assert state is not None and record.status is co.Status.OPTIMAL, record.message
    return np.concatenate([state.q, state.v])


def _extrapolated(evaluate: Callable[[float], np.ndarray], t: float) -> np.ndarray:
    """Richardson's extrapolation of central differences, ``(4 D(t/2) - D(t)) / 3`` with
    ``D(t) = (f(t) - f(-t)) / 2t``: error ``O(t^4)`` (the plain quotient's ``O(t^2)`` at
    ``t = 1e-6`` is 1e-7 on the box, whose quaternion and contact impedance bend on 1e-3)."""
    def central(width: float) -> np.ndarray:
        return (evaluate(width) - evaluate(-width)) / (2 * width)
    return (4 * central(t / 2) - central(t)) / 3


def _central(evaluate: Callable[[float], np.ndarray], t: float) -> np.ndarray:
    """The plain central quotient (a run's: ``O(t^2)`` at ``t = 1e-6`` is far below 1e-5)."""
    return (evaluate(t) - evaluate(-t)) / (2 * t)


def _central_jacobian(system: System, formulation: str, solver: str, dt: float, q: np.ndarray, v: np.ndarray,
                      u: np.ndarray | None, parameters: Sequence[str]) -> dict[str, np.ndarray]:
    """Differences of the whole step re-solved, by input block (as :meth:`StepDerivative.jacobian`),
    each input moved relative to its block's size (a parameter: its own)."""
    inputs = {"q": q, "v": v, "u": np.zeros(0) if u is None else u}
    width = q.size + v.size
    blocks: dict[str, np.ndarray] = {}
    for block, base in inputs.items():
        t = STEP_FD * max(float(np.abs(base).max(initial=0.0)), 1.0)
        columns = []
        for j in range(base.size):
            def moved_step(step: float, block: str = block, j: int = j, base: np.ndarray = base) -> np.ndarray:
                moved = dict(inputs)
                moved[block] = base.copy()
                moved[block][j] += step
                return _whole_step(system, formulation, solver, dt, moved["q"], moved["v"],
                                   moved["u"] if u is not None else None)
            columns.append(_extrapolated(moved_step, t))
        blocks[block] = np.stack(columns, axis=1) if columns else np.zeros((width, 0))
    columns = []
    for name in parameters:
        value = dt if name == "dt" else system.parameter_values([name])[name]

        def moved_parameter(step: float, name: str = name, value: float = value) -> np.ndarray:
            if name == "dt":
                return _whole_step(system, formulation, solver, dt + step, q, v, u)
            return _whole_step(system.with_parameters({name: value + step}), formulation, solver, dt, q, v, u)
        columns.append(_extrapolated(moved_parameter, STEP_FD * (abs(value) or 1.0)))
    blocks["params"] = np.stack(columns, axis=1) if columns else np.zeros((width, 0))
    return blocks


def _strictly_complementary(derivative: StepDerivative) -> bool:
    """``degenerate == 0``, except in the Stewart-Trinkle LCP at the friction rows of a contact
    without normal impulse (``lambda_c = 0`` and a positive gap ``w``): its ``beta_c`` stay 0 on
    both sides of any small change, and its slip speed ``gamma_c`` is not unique (any value from
    ``max_i(-d_ci v')`` up keeps ``d_ci v' + gamma_c >= 0``), so Lemke's vertex answer has a pair
    at ``(0, 0)`` there, ``gamma_c`` with ``mu lambda_c - sum beta_c`` or one ``beta_ci`` with its
    row; ``v'`` does not depend on either, and either branch gives the same derivative of it."""
    program = derivative.program
    if not isinstance(program, co.LCP):
        return derivative.degenerate == 0
    blocks = {block.name: block for block in program.variables}
    normal, directions, slip = blocks["impulse_normal"], blocks["impulse_directions"], blocks["slip_speed"]
    z = derivative.solution.x
    w = program.w(z)
    untouched: set[int] = set()
    for c in range(normal.stop - normal.start):
        if z[normal.start + c] == 0.0 and w[normal.start + c] > 0.0:
            untouched |= set(range(directions.start + c * directions.per, directions.start + (c + 1) * directions.per))
            untouched.add(slip.start + c)
    return set(derivative.program_derivative.degenerate) <= untouched


def _relative(ours: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> float:
    a = np.hstack([ours[k] for k in reference])
    b = np.hstack([reference[k] for k in reference])
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _smooth_parameters(system: System) -> tuple[str, ...]:
    """The parameters the step is smooth in: a geom's own friction is left out (MuJoCo takes
    the larger of two touching geoms', so where they are equal, as in these models, the step has
    a kink there and its right derivative is taken: :func:`test_tied_geom_friction_takes_the_right_derivative`)."""
    return tuple(name for name in system.differentiable_parameters() if not name.endswith(".friction"))


def test_tied_geom_friction_takes_the_right_derivative() -> None:
    """The pushed MJCF box: box and floor both at friction 0.5, so raising the floor's makes it
    the contact's ``mu`` and lowering it changes nothing. The derivative by ``floor.friction`` is
    the right one, equal to that by ``mu`` (1e-6), and the kink is counted as one-sided."""
    # detected from 1 cm (the file's margin 0 finds no contact of a box resting at dist = 0)
    scene = co.load_scene(PROBLEMS / "pushed_box_mjcf.toml", system_options={"detection_margin": 0.01})
    sliding = scene.v0.copy()
    sliding[0] = 1.0  # sliding along x: friction acts
    scene = dataclasses.replace(scene, v0=sliding, control=None)
    values = scene.system.parameter_values(["floor.friction", "box.friction"])
    assert values["floor.friction"] == values["box.friction"]
    trajectory = co.simulate(scene, "ccp", "clarabel", duration=5 * scene.dt, sensitivities=["mu", "floor.friction"])
    by_mu, by_floor = trajectory.sensitivities["mu"], trajectory.sensitivities["floor.friction"]
    assert np.abs(by_mu[-1]).max() > 1e-4  # friction acts
    np.testing.assert_allclose(by_floor, by_mu, rtol=1e-6, atol=1e-9 * np.abs(by_mu).max())
    assert trajectory.info["sensitivities"]["one_sided_steps"] > 0


def _step_case(case_name: str, formulation: str, solver: str | None, seed: int) -> float:
    """The relative error of one step's Jacobian at a random state of ``case_name``."""
    case = CASES[case_name]
    system = _load(case)
    q, v, u = case.state(system, np.random.default_rng(seed))
    if solver is None:
        solver = DEFAULT_SOLVER[formulation]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FrictionIgnoredWarning)
        stepper = TimeStepping(system, formulation, solver, case.dt, None, TIGHT[solver])
        state = State(q, v, 0.0)
        held = system.control
        try:
            if u is not None:
                system.set_control(u)
            next_state, record = stepper.step(state)
        finally:
            system.set_control(held)
        assert next_state is not None and record.status is co.Status.OPTIMAL, record.message
        parameters = (*_smooth_parameters(system), "dt")
        derivative = step_derivative(stepper, state, u, parameters)
        assert _strictly_complementary(derivative), "the state is not on a smooth segment"
        ours = derivative.jacobian()
        reference = _central_jacobian(system, formulation, solver, case.dt, q, v, u, parameters)
    return _relative(ours, reference)


FAST_STEP = [(case, formulation) for formulation in FORMULATIONS for case in ("brick", "box", "arm")]


@pytest.mark.parametrize(("case_name", "formulation"), FAST_STEP)
def test_step_jacobian_matches_central_differences(case_name: str, formulation: str) -> None:
    assert _step_case(case_name, formulation, None, seed=0) <= STEP_TOL


def _solvers(case_name: str, formulation: str) -> list[str]:
    """Every installed solver that takes the formulation's program on this system."""
    case = CASES[case_name]
    system = _load(case)
    q, v, _ = case.state(system, np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FrictionIgnoredWarning)
        program = co.formulate(system, q, v, case.dt, formulation)
    return [solver for solver in takers(program) if solver in TIGHT]


@pytest.mark.slow
@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("case_name", list(CASES))
def test_step_jacobian_every_solver(case_name: str, formulation: str) -> None:
    errors = {(solver, seed): _step_case(case_name, formulation, solver, seed)
              for solver in _solvers(case_name, formulation) for seed in (1, 2)}
    assert len(errors) >= 2 and max(errors.values()) <= STEP_TOL, errors


# -- a 50-step trajectory ------------------------------------------------------------------------


def _run(case: Case, formulation: str, solver: str, q0: np.ndarray, v0: np.ndarray, u: np.ndarray | None,
         perturbation: np.ndarray | None = None, dt: float | None = None, system: System | None = None,
         sensitivities: Sequence[str] | None = None, steps: int = TRAJECTORY_STEPS) -> co.Trajectory:
    """``steps`` steps from ``(q0, v0)`` under the input ``u + perturbation[n]`` at step ``n``."""
    scene = co.load_scene(PROBLEMS / f"{case.scene}.toml")
    step = case.dt if dt is None else dt
    scene = dataclasses.replace(scene, system=system or scene.system, q0=q0, v0=v0, dt=step,
                                duration=steps * step, control=None)
    controller = None
    if u is not None:
        def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
            index = min(round(t / step), steps - 1)
            return u if perturbation is None else u + perturbation[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FrictionIgnoredWarning)
        trajectory = co.simulate(scene, formulation, solver, solver_options=TIGHT[solver], controller=controller,
                                 sensitivities=sensitivities)
    assert trajectory.completed and len(trajectory.steps) == steps, trajectory.message
    return trajectory


def _check_smooth(case: Case, formulation: str, solver: str, trajectory: co.Trajectory,
                  u: np.ndarray | None) -> None:
    """The run lies on a smooth segment: its sensitivities never stopped, the same contacts
    touch at every step, and every step's program is strictly complementary (as in one step)."""
    assert trajectory.info["sensitivities"]["stopped"] == "", trajectory.info["sensitivities"]
    touching = {tuple(np.abs(step.impulses).sum(axis=1) > 0) for step in trajectory.steps}
    assert len(touching) == 1, "contacts make or break along the run"
    system = _load(case)
    stepper = TimeStepping(system, formulation, solver, trajectory.info["dt"], None, TIGHT[solver])
    if u is not None:
        system.set_control(u)
    for index in range(len(trajectory.steps)):
        state = State(trajectory.q[index], trajectory.v[index], trajectory.t[index])
        assert stepper.step(state)[0] is not None
        derivative = step_derivative(stepper, state, u, ())
        assert _strictly_complementary(derivative), f"step {index} is not strictly complementary"


def _trajectory_case(case_name: str, formulation: str, solver: str | None, seed: int) -> float:
    """The relative error of a run's recorded sensitivities (every state, every name)."""
    case = CASES[case_name]
    solver = solver or DEFAULT_SOLVER[formulation]
    system = _load(case)
    rng = np.random.default_rng(seed)
    q0, v0, u = (case.start or case.state)(system, rng)
    settled = _run(case, formulation, solver, q0, v0, u, steps=SETTLE)
    q0, v0 = settled.q[-1], settled.v[-1]
    parameters = (*_smooth_parameters(system), "dt")
    names = ["q0", "v0", *parameters] + (["u"] if u is not None else [])
    trajectory = _run(case, formulation, solver, q0, v0, u, sensitivities=names)
    _check_smooth(case, formulation, solver, trajectory, u)
    # the open-loop input changes along one random direction w: sum_n dx/du_n w_n
    w = rng.standard_normal((TRAJECTORY_STEPS, 0 if u is None else u.size))
    recorded = [trajectory.sensitivities["q0"], trajectory.sensitivities["v0"]]
    recorded += [trajectory.sensitivities[name][:, :, None] for name in parameters]
    if u is not None:
        recorded.append(np.einsum("knmj,mj->kn", trajectory.sensitivities["u"], w)[:, :, None])
    ours = np.concatenate(recorded, axis=2)

    def states(run: co.Trajectory) -> np.ndarray:
        return np.concatenate([run.q, run.v], axis=1)

    columns = []
    for block, base in (("q0", q0), ("v0", v0)):
        t = TRAJECTORY_FD * max(float(np.abs(base).max()), 1.0)
        for j in range(base.size):
            def moved_start(step: float, block: str = block, j: int = j, base: np.ndarray = base) -> np.ndarray:
                moved = base.copy()
                moved[j] += step
                q_start, v_start = (moved, v0) if block == "q0" else (q0, moved)
                return states(_run(case, formulation, solver, q_start, v_start, u))
            columns.append(_central(moved_start, t))
    for name in parameters:
        value = case.dt if name == "dt" else system.parameter_values([name])[name]

        def moved_parameter(step: float, name: str = name, value: float = value) -> np.ndarray:
            if name == "dt":
                return states(_run(case, formulation, solver, q0, v0, u, dt=case.dt + step))
            return states(_run(case, formulation, solver, q0, v0, u,
                               system=system.with_parameters({name: value + step})))
        columns.append(_central(moved_parameter, TRAJECTORY_FD * (abs(value) or 1.0)))
    if u is not None:
        columns.append(_central(
            lambda step: states(_run(case, formulation, solver, q0, v0, u, perturbation=step * w)), TRAJECTORY_FD))
    reference = np.stack(columns, axis=2)
    return float(np.linalg.norm(ours - reference) / np.linalg.norm(reference))


#: Runs on smooth segments. Excluded: a brick or box sliding from rest under ``anitescu``,
#: ``ccp``, ``sap`` and ``regularized`` (their relaxations launch it: a gap of about
#: ``h mu |v_t|`` opens and the contacts break, then land again), and the box under ``lcp``
#: (four coplanar corners: Lemke's vertex answers move the impulses between corners from step
#: to step, each with a pair at ``(0, 0)``).
TRAJECTORY_GRID = [(case, formulation) for case in ("pendulum", "cartpole", "cartesian_pendulum", "arm")
                   for formulation in FORMULATIONS] + [("brick", "gauss"), ("brick", "lcp"), ("box", "gauss")]
FAST_TRAJECTORY = [("brick", "lcp")]


@pytest.mark.parametrize(("case_name", "formulation"), FAST_TRAJECTORY)
def test_trajectory_sensitivities_match_central_differences(case_name: str, formulation: str) -> None:
    assert _trajectory_case(case_name, formulation, None, seed=0) <= TRAJECTORY_TOL


@pytest.mark.slow
@pytest.mark.parametrize(("case_name", "formulation"), [c for c in TRAJECTORY_GRID if c not in FAST_TRAJECTORY])
def test_trajectory_sensitivities_every_formulation(case_name: str, formulation: str) -> None:
    assert _trajectory_case(case_name, formulation, None, seed=1) <= TRAJECTORY_TOL


@pytest.mark.slow
def test_coulomb_run_matches_central_differences() -> None:
    """The brick's run under ``coulomb``/``nsgs``: recorded sensitivities against central
    differences of whole runs, as the other formulations."""
    assert _trajectory_case("brick", "coulomb", "nsgs", seed=0) <= TRAJECTORY_TOL
