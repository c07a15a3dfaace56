"""The UR5-like arm pushing a box (problems/ur5_like_arm_push.toml, issue 36 "Must reach": the
gradient of a 100-step run of a URDF arm pushing a box on the pinocchio backend,
experiments/gradient_cost.py ``--scenes push``): the push happens, and the step derivative takes
the analytic path (:mod:`contactopt.systems.urdf_pinocchio.pair_tangents` for the tool-box pair)
and equals central differences.

Tolerances. The sphere-box closed form against coal: the same formula (coal's sphere-box
distance), observed 4e-15; 1e-12. The closed form's tangents against its central differences
at ``t = 1e-7``: truncation ``t^2`` times curvatures that grow as ``1 / rho^2`` near the box
(observed 5.6e-7 at ``t = 1e-6``, 5.7e-9 at ``1e-7``), round-off ``eps / t ~ 1e-9``: 1e-7 of
their size. The step problem's tangents against the system's own central differences at
``t = 1e-6`` (the contact 0.1-2 mm deep, curvatures ~1): 1e-7 of their size, as
tests/test_urdf_derivatives.py. The whole step: ``d(q', v')/d(q, v, mu)`` reaches 5e3 here (the
tool's penetration over ``h`` moves ``v'``, through the arm's light wrist), and its central
differences carry a truncation error that shrinks as ``t^2`` (observed at step 75: 3.7e-3 at
``t = 1e-6``, 3.4e-4 at ``3e-7``, 3.9e-5 at ``1e-7``); Richardson's extrapolation of ``t = 1e-7``
and ``2e-7`` cancels that term, leaving the solvers' noise (``tol / t``, tol 1e-13..1e-14) and the
next term: 1e-8 of the largest entry and 1e-7 absolute, as the issue's 1e-7.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("pinocchio")

from contactopt.derivatives.linearized_step import LinearizedStepDerivative
from contactopt.derivatives.trajectory import step_derivative
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.model.step import State
from contactopt.systems.urdf_pinocchio import pair_tangents
from contactopt.systems.urdf_pinocchio.ground import contact_frame
from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "problems" / "ur5_like_arm_push.toml"
TIGHT: dict[str, dict] = {"newton": {"tol": 1e-14},
                          "clarabel": {"tol_feas": 1e-13, "tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13}}


@pytest.fixture(scope="module")
def run() -> tuple[co.Scene, co.Trajectory]:
    scene = co.load_scene(SCENE)
    return scene, co.simulate(scene)


def pair_steps(system: PinocchioUrdfSystem, trajectory: co.Trajectory) -> list[int]:
    return [k for k, q in enumerate(trajectory.q[:-1]) if any(c.first >= 0 for c in system.contact_list(q))]


def test_the_arm_pushes_the_box_and_the_left_out_pairs_stay_apart(run: tuple) -> None:
    """The tool strikes the box and pushes it again later; the box slides and turns. The SRDF's
    left-out box pairs (base, upper arm, forearm, wrist_2) never come within reach: with every
    pair tested, none of them is ever a contact."""
    scene, trajectory = run
    assert trajectory.completed
    system = scene.system
    touching = pair_steps(system, trajectory)
    assert len(touching) >= 8 and touching[0] <= 3 and touching[-1] >= 50  # the strike, then later pushes
    moved = trajectory.q[-1, 6:] - trajectory.q[0, 6:]
    assert moved[1] > 0.05 and abs(moved[3]) > 0.1  # pushed along y by more than 5 cm, turned by more than 0.1 rad
    every = PinocchioUrdfSystem(system.urdf, ground=True, ground_friction=system.mu)
    box = next(k for k, item in enumerate(every._shapes) if item.link == "box_link")
    for q in trajectory.q:
        met = {every._shapes[c.first if c.second == box else c.second].link
               for c in every.contact_list(q) if c.first >= 0 and box in (c.first, c.second)}
        assert met <= {"wrist_1_link", "wrist_3_link"}, met


def close(difference: np.ndarray | float, analytic: np.ndarray | float) -> None:
    """1e-7 of the tangent's size (at least 1): the normal turns fast (``1 / rho``) near the box."""
    np.testing.assert_allclose(analytic, difference, rtol=0, atol=1e-7 * max(1.0, float(np.abs(difference).max())))


def test_the_sphere_box_contact_is_coals_and_its_tangents_its_differences() -> None:
    """:func:`pair_tangents.sphere_box` against coal's signed distance (both orders, separated and
    penetrating, face, edge and corner regions) and its motion against central differences of
    the closed form along random rigid motions of both shapes; the frame's motion against
    differences of :func:`contact_frame`."""
    import coal
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(4)
    half, radius, t = np.array([0.06, 0.05, 0.08]), 0.03, 1e-7
    box_shape, ball_shape = coal.Box(*(2 * half)), coal.Sphere(radius)
    checked = 0
    for trial in range(60):
        R = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
        c = rng.normal(size=3) * 0.1
        local = rng.uniform(-1.0, 1.0, size=3) * (half + 0.02)
        local[trial % 3] = np.sign(local[trial % 3] or 1.0) * (half[trial % 3] + rng.uniform(-0.02, 0.02))
        s = c + R @ local
        if np.all(np.abs(local) < half):
            continue  # the centre inside the box: not covered (None), checked below
        dsphere, dcentre, spin = rng.normal(size=(3, 3, 4))
        for sphere_first in (True, False):
            found = pair_tangents.sphere_box(s, radius, dsphere, c, R, half, dcentre, spin, sphere_first)
            assert found is not None
            shapes = [(ball_shape, s, np.eye(3)), (box_shape, c, R)][:: 1 if sphere_first else -1]
            request, result = coal.DistanceRequest(), coal.DistanceResult()
            request.enable_signed_distance = True
            dist = coal.distance(shapes[0][0], coal.Transform3s(shapes[0][2], shapes[0][1]), shapes[1][0],
                                 coal.Transform3s(shapes[1][2], shapes[1][1]), request, result)
            midpoint = (np.array(result.getNearestPoint1()) + np.array(result.getNearestPoint2())) / 2
            assert abs(found.dist - dist) < 1e-12
            np.testing.assert_allclose(found.pos, midpoint, rtol=0, atol=1e-12)
            np.testing.assert_allclose(found.normal, np.array(result.normal), rtol=0, atol=1e-12)
            for k in range(4):
                sides = [pair_tangents.sphere_box(s + e * t * dsphere[:, k], radius, dsphere, c + e * t * dcentre[:, k],
                                                  Rotation.from_rotvec(e * t * spin[:, k]).as_matrix() @ R, half,
                                                  dcentre, spin, sphere_first) for e in (1, -1)]
                up, down = sides
                assert up is not None and down is not None
                close((up.dist - down.dist) / (2 * t), found.ddist[k])
                close((up.pos - down.pos) / (2 * t), found.dpos[:, k])
                close((up.normal - down.normal) / (2 * t), found.dnormal[:, k])
                frame, dframe = pair_tangents.frame_tangent(found.normal, found.dnormal)
                np.testing.assert_allclose(frame, contact_frame(found.normal), rtol=0, atol=1e-15)
                close((contact_frame(up.normal) - contact_frame(down.normal)) / (2 * t), dframe[:, :, k])
            checked += 1
    assert checked > 60
    inside = pair_tangents.sphere_box(np.zeros(3), radius, np.zeros((3, 1)), np.zeros(3), np.eye(3), half,
                                      np.zeros((3, 1)), np.zeros((3, 1)), True)
    assert inside is None


def tangents_check(system: PinocchioUrdfSystem, q: np.ndarray, v: np.ndarray) -> None:
    problem = build_step_problem(system, q, v, 2e-3)
    linear = system.linearize_step_problem(problem, ("mu",))
    assert linear is not None
    rng = np.random.default_rng(3)
    dq, dv, t = rng.normal(size=system.nv), rng.normal(size=system.nv), 1e-6
    plus, minus = (build_step_problem(system, q + s * dq, v + s * dv, 2e-3) for s in (t, -t))
    moved = linear.problem_at(1.0, dq, dv, np.zeros(0), 0.0)
    for name in ("J", "phi"):
        analytic, high, low, base = (np.asarray(getattr(p.contacts, name)) for p in (moved, plus, minus, problem))
        difference = (high - low) / (2 * t)
        np.testing.assert_allclose(analytic - base, difference, rtol=0, atol=1e-7 * np.abs(difference).max())


def one_step(system: co.System, formulation: str, solver: str, q: np.ndarray, v: np.ndarray) -> tuple:
    stepper = TimeStepping(system, formulation, solver, 2e-3, solver_options=TIGHT[solver])
    state = State(q, v, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the states are in contact
        following, record = stepper.step(state)
    assert following is not None, record.message
    return stepper, state, record, np.concatenate([following.q, following.v])


#: Steps of the scene's sap run, their contact count and whether friction slides (mu moves the
#: step): 3, the tool in the box, sticking (the box lifted off the floor by the strike); 75, the
#: tool pushing the box while the wrist's sphere and box slide on the floor.
STEPS = {3: (1, False), 75: (3, True)}


@pytest.mark.parametrize("formulation,solver", [("sap", "newton"), ("ccp", "clarabel")])
@pytest.mark.parametrize("index", list(STEPS))
def test_the_push_steps_analytic_derivative_equals_central_differences(run: tuple, index: int, formulation: str,
                                                                      solver: str) -> None:
    scene, trajectory = run
    system = scene.system
    q, v = trajectory.q[index], trajectory.v[index]
    kinds = [c.first >= 0 for c in system.contact_list(q)]
    count, sliding = STEPS[index]
    assert len(kinds) == count and kinds[-1]  # the tool-box pair among the contacts
    tangents_check(system, q, v)
    stepper, state, record, _ = one_step(system, formulation, solver, q, v)
    assert record.impulses[-1, 0] > 0.02  # the tool pushes the box (0.04 N s at step 75: 20 N over the step)
    derivative = step_derivative(stepper, state, None, ("mu",))
    assert isinstance(derivative, LinearizedStepDerivative)
    assert derivative._analytic() is not None  # no difference at all (contactopt.derivatives.analytic_step)
    blocks = derivative.jacobian()
    analytic = np.hstack([blocks["q"], blocks["v"], blocks["params"]])
    nv = system.nv

    def difference(t: float) -> np.ndarray:
        columns = []
        for k in range(2 * nv):
            e = np.zeros(2 * nv)
            e[k] = t
            sides = [one_step(system, formulation, solver, q + s * e[:nv], v + s * e[nv:])[3] for s in (1, -1)]
            columns.append((sides[0] - sides[1]) / (2 * t))
        sides = [one_step(system.with_parameters({"mu": system.mu + s * t}), formulation, solver, q, v)[3]
                 for s in (1, -1)]
        columns.append((sides[0] - sides[1]) / (2 * t))
        return np.stack(columns, axis=1)

    richardson = (4 * difference(1e-7) - difference(2e-7)) / 3
    assert (np.abs(richardson[:, -1]).max() > 1e-3) == sliding  # mu moves the step where friction slides
    np.testing.assert_allclose(analytic, richardson, rtol=0, atol=1e-7 + 1e-8 * np.abs(richardson).max())


def test_every_step_of_the_push_takes_the_analytic_path() -> None:
    """Over the scene's 100 steps under sap and ccp, every step derivative is the analytic one
    (no central differences of the system, none of the build): what experiments/gradient_cost.py
    times."""

    class Paths:
        def __init__(self) -> None:
            self.analytic: list[bool] = []

        def advance(self, stepper: TimeStepping, state: State, u: np.ndarray | None, index: int) -> None:
            self.analytic.append(step_derivative(stepper, state, u, ("mu",))._analytic() is not None)

    scene = co.load_scene(SCENE)
    for formulation, solver in (("sap", "newton"), ("ccp", "clarabel")):
        paths = Paths()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert co.simulate(scene, formulation=formulation, solver=solver, _observer=paths).completed
        assert len(paths.analytic) == 100 and all(paths.analytic)


def test_a_pair_the_tangents_do_not_cover_keeps_differences(run: tuple) -> None:
    """A sphere centre inside the box (the deepest-face case) is not derived: the linearization
    is None and the step derivative is the system's central differences."""
    scene, _ = run
    system = scene.system
    q = np.array(scene.q0, dtype=np.float64)
    placed = dict(system._placed(q))
    tool = next(k for k, item in enumerate(system._shapes) if item.link == "wrist_3_link")
    q[6:8] = placed[tool][0][:2]  # the box's centre under the tool's, its top above the tool
    problem = build_step_problem(system, q, np.zeros(system.nv), 2e-3)
    assert any(c.first >= 0 for c in system.contact_list(q))
    assert system.linearize_step_problem(problem, ("mu",)) is None


def test_forward_sensitivities_equal_the_reverse_gradient_over_the_push() -> None:
    """The forward product built along its one direction (contactopt.derivatives.analytic_step's
    ``directions``, ``dM`` through the Coriolis matrix) and the reverse product built on every
    input column are the same linear recursion over 80 steps of the push (strike and a later
    push): equal to rounding (the run is chaotic: dL/dmu is about -4.9e3; observed 2e-10 apart,
    4e-14 of it), 1e-10 of it."""
    scene = co.load_scene(SCENE)
    scene = dataclasses.replace(scene, duration=80 * scene.dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trajectory = co.simulate(scene, sensitivities=["mu"])
        assert trajectory.completed
        loss = co.derivatives.final_state_loss(q_target=trajectory.q[-1] + 0.01, v_target=np.zeros(scene.system.nv))
        gradient = co.gradient(scene, loss, wrt=["mu"])
    sensitivity = trajectory.sensitivities["mu"][-1]
    nq = scene.system.nq
    forward = float(-0.01 * sensitivity[:nq].sum() + trajectory.v[-1] @ sensitivity[nq:])
    assert abs(forward) > 1e-4  # friction acts over the run
    assert abs(gradient.gradients["mu"] - forward) <= 1e-10 * abs(forward)
