"""The step derivative of a floating-base URDF robot through Pinocchio's analytic derivatives
(issue 36: the step derivative uses them instead of central differences of the smooth maps).

The pinocchio backend's floating base is a composite joint (translation, spherical) whose
derivative algorithms disagree with central differences in Pinocchio 4.1, so its kinematic
tangents go through the same tree with a free-flyer root
(:mod:`contactopt.systems.urdf_pinocchio.free_flyer`), and the public quaternion coordinates map to
the tangent by ``G(q)`` and back by ``integrate``'s derivatives.

Tolerances, as tests/test_urdf_derivatives.py's: the whole step's central differences (``t =
1e-6``, solvers at 1e-13/1e-14) carry truncation ``O(t^2)`` and solver noise ``tol / t ~ 1e-7``
at most; observed against the analytic Jacobian 8e-10 (box), 8e-9 (leg, entries up to 5),
1.4e-8 (floating two-link arm, entries up to 10). The kinematic tangents against central
differences along ``integrate`` (``t = 1e-6``: truncation ~1e-12, round-off ``eps / t ~ 1e-10``)
to 1e-8 absolute on entries ~1 (observed 1e-9). A wrong piece fails them: at the first test's
configuration, the composite joint's own Coriolis matrix is off by 0.73 on ``dM`` entries up to
0.84, and its own Jacobian time variation by 1.02 on entries up to 1.22 (the free_flyer module's
docstring).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from contactopt.core import errors as co_errors
from contactopt.derivatives.linearized_step import LinearizedStepDerivative
from contactopt.derivatives.trajectory import step_derivative
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.model.step import State
from contactopt.systems.urdf_pinocchio.free_flyer import Kinematics, integration_map, tangent_map
from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

ROOT = Path(__file__).resolve().parent.parent
DT = 2e-3
TIGHT: dict[str, dict] = {"newton": {"tol": 1e-14}, "lemke": {},
                          "clarabel": {"tol_feas": 1e-13, "tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13}}
#: a floating body with one hip and a sphere foot (no dry friction: the analytic path of sap and ccp)
LEG = ('<robot name="leg"><link name="body"><inertial><mass value="2.0"/><inertia ixx="0.02" iyy="0.03" '
       'izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry><box size="0.3 0.2 0.1"/></geometry>'
       '</collision></link><link name="leg"><inertial><origin xyz="0 0 -0.1"/><mass value="0.4"/><inertia '
       'ixx="0.002" iyy="0.002" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial><collision><origin '
       'xyz="0 0 -0.2"/><geometry><sphere radius="0.03"/></geometry></collision></link><joint name="hip" '
       'type="revolute"><parent link="body"/><child link="leg"/><origin xyz="0.1 0 -0.05"/><axis xyz="0 1 0"/>'
       '<limit lower="-1.5" upper="1.5" effort="10" velocity="5"/></joint></robot>')


def _quaternion(angle: float, axis: list[float]) -> np.ndarray:
    unit = np.asarray(axis) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * unit])


def _pressed(system: PinocchioUrdfSystem, q: np.ndarray, depth: float = 1e-3) -> np.ndarray:
    """``q`` with the base lowered until its deepest contact is ``depth`` in (bisection on the height)."""
    low, high = q[2] - 1.0, q[2] + 1.0
    for _ in range(60):
        q[2] = 0.5 * (low + high)
        contacts = system.contacts(q)
        low, high = (q[2], high) if contacts.count and contacts.phi.min() < -depth else (low, q[2])
    q[2] = low
    return q


def robot(name: str, tmp_path: Path) -> tuple[PinocchioUrdfSystem, np.ndarray, np.ndarray]:
    """A floating robot in contact, moving: the box of problems/urdf/box.urdf tilted on two
    corners, the leg on its foot, the two-link arm lying on its side (cylinder rims and its base
    box's corners; the elbow's dry friction: box rows, whose build is differenced)."""
    if name == "box":
        system = PinocchioUrdfSystem(ROOT / "problems" / "urdf" / "box.urdf", True, True, ground_friction=0.5)
        q = system.default_state()[0]
        q[3:7] = _quaternion(0.1, [0.6, 0.8, 0.0])
        return system, _pressed(system, q, 0.0137), np.array([0.3, 0.1, -0.5, 0.5, -0.3, 0.2])
    if name == "leg":
        path = tmp_path / "leg.urdf"
        path.write_text(LEG)
        system = PinocchioUrdfSystem(path, True, True, ground_friction=0.05, self_collisions=False)
        q = system.default_state()[0]
        q[3:7], q[7] = _quaternion(0.05, [0.2, 0.98, 0.0]), 0.3
        return system, _pressed(system, q), np.array([0.4, 0.1, -0.3, 0.3, -0.5, 0.2, 0.7])
    system = PinocchioUrdfSystem(ROOT / "problems" / "urdf" / "two_link_arm.urdf", True, True, ground_friction=0.5,
                                 self_collisions=False)
    q = system.default_state()[0]
    q[3:7], q[7:] = _quaternion(1.5, [0.0, 1.0, 0.0]), [0.2, -0.3]
    return system, _pressed(system, q), np.array([0.3, 0.1, -0.5, 0.5, -0.3, 0.2, 0.4, -0.2])


def one_step(system: PinocchioUrdfSystem, formulation: str, solver: str, q: np.ndarray,
             v: np.ndarray) -> tuple[TimeStepping, State, np.ndarray]:
    stepper = TimeStepping(system, formulation, solver, DT, solver_options=TIGHT[solver])
    state = State(q, v, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the states start in contact (initial penetration)
        following, record = stepper.step(state)
    assert following is not None, record.message
    return stepper, state, np.concatenate([following.q, following.v])


def whole_step_differences(system: PinocchioUrdfSystem, formulation: str, solver: str, q: np.ndarray,
                           v: np.ndarray, t: float = 1e-6) -> np.ndarray:
    """d(q', v') / d(q, v) by one step from each side of every public coordinate ((nq + nv, nq + nv))."""
    nq, nv = system.nq, system.nv
    columns = []
    for k in range(nq + nv):
        e = np.zeros(nq + nv)
        e[k] = t
        sides = [one_step(system, formulation, solver, q + s * e[:nq], v + s * e[nq:])[2] for s in (1, -1)]
        columns.append((sides[0] - sides[1]) / (2 * t))
    return np.stack(columns, axis=1)


def test_the_free_flyer_tangents_equal_central_differences(tmp_path: Path) -> None:
    """dM and each joint's dJ along a tangent direction against central differences of M and the
    Jacobians along ``integrate`` (a random configuration of the floating two-link arm)."""
    system = robot("arm", tmp_path)[0]
    pin, model, data = system.pin, system.model, system.data
    rng = np.random.default_rng(0)
    q = system.default_state()[0]
    q[3:7], q[7:] = _quaternion(1.1, list(rng.normal(size=3))), rng.normal(size=2)
    direction, t = rng.normal(size=system.nv), 1e-6
    kinematics = Kinematics(system, system.pin_q(q))

    def mass(point: np.ndarray) -> np.ndarray:
        return np.asarray(system.dynamics(point, np.zeros(system.nv)).M)

    def jacobian(point: np.ndarray, joint: int) -> np.ndarray:
        pin.computeJointJacobians(model, data, system.pin_q(point))
        return np.array(pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED))[:, system._dofs]

    ahead, behind = system.integrate(q, direction, t), system.integrate(q, direction, -t)
    expected = (mass(ahead) - mass(behind)) / (2 * t)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(kinematics.mass_variation(direction), expected, rtol=0, atol=1e-8)
    joints = list(range(1, model.njoints))
    variations = kinematics.jacobian_variations(joints, direction)
    for joint in joints:
        expected = (jacobian(ahead, joint) - jacobian(behind, joint)) / (2 * t)
        assert np.abs(expected).max() > 0.1
        np.testing.assert_allclose(variations[joint], expected, rtol=0, atol=1e-8)


def test_the_coordinate_maps_equal_central_differences_of_integrate(tmp_path: Path) -> None:
    """``q' = integrate(q, v', h)`` differentiated in the public coordinates (the quaternion's four
    numbers, a non-unit one among them: the system reads it normalized, so its radial part moves
    nothing) against central differences; ``G`` takes a tangent's raw image back to the tangent."""
    system = robot("leg", tmp_path)[0]
    rng = np.random.default_rng(1)
    q = system.default_state()[0]
    q[3:7] = 1.3 * _quaternion(0.7, list(rng.normal(size=3)))
    q[7] = 0.4
    v_next, h, t = rng.normal(size=system.nv), 0.01, 1e-6
    q_of_q, q_of_v = integration_map(system, q, v_next, h)
    by_q = np.stack([(system.integrate(q + t * e, v_next, h) - system.integrate(q - t * e, v_next, h)) / (2 * t)
                     for e in np.eye(system.nq)], axis=1)
    by_v = np.stack([(system.integrate(q, v_next + t * e, h) - system.integrate(q, v_next - t * e, h)) / (2 * t)
                     for e in np.eye(system.nv)], axis=1)
    np.testing.assert_allclose(q_of_q, by_q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(q_of_v, by_v, rtol=0, atol=1e-9)
    radial = np.zeros(system.nq)
    radial[3:7] = q[3:7]
    assert np.abs(q_of_q @ radial).max() < 1e-12 and np.abs(by_q @ radial).max() < 1e-8  # moves nothing
    q[3:7] /= np.linalg.norm(q[3:7])  # a tangent's raw image at a unit quaternion, back to the tangent
    G = tangent_map(system, q)
    assert G is not None
    tangent = rng.normal(size=system.nv)
    raw = (system.integrate(q, tangent, t) - system.integrate(q, tangent, -t)) / (2 * t)
    np.testing.assert_allclose(G @ raw, tangent, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", ["box", "leg", "arm"])
def test_the_problem_tangents_equal_the_systems_central_differences(name: str, tmp_path: Path) -> None:
    """The problem moved along a raw direction (with a radial quaternion part) by the analytic
    tangents against the system's own problems on both sides."""
    system, q, v = robot(name, tmp_path)
    problem = build_step_problem(system, q, v, DT)
    linear = system.linearize_step_problem(problem, ("mu",))
    assert linear is not None and problem.contacts.count > 0
    rng = np.random.default_rng(3)
    dq, dv, t = rng.normal(size=system.nq), rng.normal(size=system.nv), 1e-6
    plus, minus = (build_step_problem(system, q + s * dq, v + s * dv, DT) for s in (t, -t))
    assert plus.contacts.count == minus.contacts.count == problem.contacts.count
    moved = linear.problem_at(1.0, dq, dv, np.zeros(0), 0.0)
    for field in ("dynamics.M", "dynamics.tau", "contacts.J", "contacts.phi"):
        group, key = field.split(".")
        base, high, low, analytic = (np.asarray(getattr(getattr(p, group), key)) for p in (problem, plus, minus, moved))
        difference = (high - low) / (2 * t)
        assert np.abs(difference).max() > 1e-4 or (name, field) == ("box", "dynamics.M"), field  # a body's M is fixed
        scale = max(float(np.abs(difference).max()), 1e-2)  # the fixed M's differences: round-off ~1e-10
        np.testing.assert_allclose(analytic - base, difference, rtol=0, atol=1e-7 * scale, err_msg=field)


CASES = [("sap", "newton"), ("ccp", "clarabel"), ("anitescu", "clarabel"), ("lcp", "lemke")]


@pytest.mark.parametrize("formulation,solver", CASES)
@pytest.mark.parametrize("name", ["box", "leg", "arm"])
def test_the_floating_step_derivative_equals_central_differences(name: str, formulation: str, solver: str,
                                                                 tmp_path: Path) -> None:
    """d(q', v') / d(q, v, mu) on the analytic path (no difference at all for sap and ccp on the
    box and the leg; the arm's dry friction and anitescu/lcp difference their build along the
    linearized problem) against one step from each side of every public coordinate."""
    system, q, v = robot(name, tmp_path)
    stepper, state, _ = one_step(system, formulation, solver, q, v)
    derivative = step_derivative(stepper, state, None, ("mu",))
    assert isinstance(derivative, LinearizedStepDerivative) and derivative._linearization() is not None
    assert (derivative._analytic() is not None) == (formulation in ("sap", "ccp") and name != "arm")
    blocks = derivative.jacobian()
    analytic = np.hstack([blocks["q"], blocks["v"], blocks["params"]])
    nq, nv, t = system.nq, system.nv, 1e-6
    sides = [one_step(system.with_parameters({"mu": system.mu + s * t}), formulation, solver, q, v)[2]
             for s in (1, -1)]
    expected = np.hstack([whole_step_differences(system, formulation, solver, q, v, t),
                          ((sides[0] - sides[1]) / (2 * t))[:, None]])
    assert np.abs(expected[:, nq + nv]).max() > 1e-3  # friction acts: mu moves the step
    np.testing.assert_allclose(analytic, expected, rtol=1e-8, atol=1e-7)


@pytest.mark.parametrize("formulation,solver", [("sap", "newton"), ("ccp", "clarabel")])
def test_the_floating_reverse_and_forward_products_are_the_jacobians(formulation: str, solver: str,
                                                                     tmp_path: Path) -> None:
    """One reverse product (no Jacobian) equals the Jacobian's transpose applied to the seed, and
    one forward product along a raw direction its product (rounding: entries up to 7)."""
    system, q, v = robot("box", tmp_path)
    stepper, state, _ = one_step(system, formulation, solver, q, v)
    reverse = step_derivative(stepper, state, None, ("mu",))
    seed = np.random.default_rng(7).normal(size=system.nq + system.nv)
    cotangent = reverse.vjp(seed[:system.nq], seed[system.nq:])
    forward = step_derivative(stepper, state, None, ("mu",))
    direction = np.random.default_rng(8).normal(size=system.nq + system.nv + 1)
    tangent = forward.jvp(dq=direction[:system.nq], dv=direction[system.nq:-1], dparams={"mu": direction[-1]})
    blocks = step_derivative(stepper, state, None, ("mu",)).jacobian()
    full = np.hstack([blocks["q"], blocks["v"], blocks["params"]])
    np.testing.assert_allclose(np.concatenate([cotangent.q, cotangent.v, [cotangent.params["mu"]]]), seed @ full,
                               rtol=0, atol=1e-10 * np.abs(seed @ full).max())
    np.testing.assert_allclose(np.concatenate([tangent.q, tangent.v]), full @ direction, rtol=0,
                               atol=1e-10 * np.abs(full @ direction).max())


@pytest.mark.parametrize("formulation,solver", [("sap", "newton"), ("ccp", "clarabel")])
def test_a1_standing_takes_no_difference_and_equals_central_differences(formulation: str, solver: str) -> None:
    """example-robot-data's a1 (a floating base, 12 revolute joints, sphere feet) standing on its
    four feet 1 mm in, its joints moving: the step's Jacobian by the analytic path alone against
    one step from each side of every public coordinate (entries up to 1; observed 5e-10 on four
    sampled columns for sap, 2e-9 for ccp)."""
    from contactopt.systems.urdf_file import example_robot_data

    try:
        files = example_robot_data("a1")
    except Exception as exc:  # example-robot-data is the [urdf] extra
        pytest.skip(f"example-robot-data: {exc}")
    system = PinocchioUrdfSystem(files.urdf, True, True, package_dirs=[files.package_dir], ground_friction=0.8)
    q = _pressed(system, system.default_state()[0])
    v = 0.3 * np.random.default_rng(0).normal(size=system.nv)
    stepper, state, _ = one_step(system, formulation, solver, q, v)
    assert stepper.last_problem.contacts.count == 4
    derivative = step_derivative(stepper, state, None, ("mu",))
    assert derivative._analytic() is not None
    blocks = derivative.jacobian()
    analytic = np.hstack([blocks["q"], blocks["v"]])
    np.testing.assert_allclose(analytic, whole_step_differences(system, formulation, solver, q, v), rtol=1e-8,
                               atol=1e-7)


#: the leg with a second hip that mimics the first (Pinocchio's mimic joint: no coordinate of its own)
MIMIC_LEG = LEG.replace("</robot>", (
    '<link name="leg2"><inertial><origin xyz="0 0 -0.1"/><mass value="0.4"/><inertia ixx="0.002" iyy="0.002" '
    'izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial><collision><origin xyz="0 0 -0.2"/><geometry><sphere '
    'radius="0.03"/></geometry></collision></link><joint name="hip2" type="revolute"><parent link="body"/><child '
    'link="leg2"/><origin xyz="-0.1 0 -0.05"/><axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" effort="10" '
    'velocity="5"/><mimic joint="hip" multiplier="-0.5" offset="0.1"/></joint></robot>'))


@pytest.mark.parametrize("floating", [True, False])
def test_a_mimic_robot_keeps_the_systems_differences_and_they_equal_the_steps(floating: bool,
                                                                             tmp_path: Path) -> None:
    """Pinocchio 4.1's derivative algorithms refuse mimic joints, so a mimic robot's step
    derivative is the system's central differences (no linearization), floating or not; they
    equal one step from each side of every public coordinate (tolerance as the module's)."""
    path = tmp_path / "mimic_leg.urdf"
    path.write_text(MIMIC_LEG)
    system = PinocchioUrdfSystem(path, floating, True, ground_friction=0.05, self_collisions=False)
    assert system.mimic_joints == ("hip2",)
    q = system.default_state()[0]
    if floating:
        q[3:7], q[7] = _quaternion(0.05, [0.2, 0.98, 0.0]), 0.3
        q, v = _pressed(system, q), np.array([0.4, 0.1, -0.3, 0.3, -0.5, 0.2, 0.7])
    else:
        q, v = np.array([0.3]), np.array([0.7])
    with pytest.raises(ValueError, match=r"mimic_leg.urdf has mimic joints \(hip2\)") as error:
        system.inverse_dynamics_derivatives(q, v, np.zeros(system.nv))
    assert "\n" not in str(error.value)
    stepper, state, _ = one_step(system, "sap", "newton", q, v)
    assert stepper.last_problem.contacts.count >= floating  # the floating leg stands on a foot
    derivative = step_derivative(stepper, state, None, ("mu",))
    assert derivative._linearization() is None
    blocks = derivative.jacobian()
    analytic = np.hstack([blocks["q"], blocks["v"]])
    assert np.isfinite(analytic).all()
    np.testing.assert_allclose(analytic, whole_step_differences(system, "sap", "newton", q, v), rtol=1e-8, atol=1e-7)


def test_a_zero_base_quaternion_is_one_clear_error() -> None:
    """The quaternion is read normalized; a zero one names its coordinates (not NaN downstream)."""
    system = PinocchioUrdfSystem(ROOT / "problems" / "urdf" / "box.urdf", True, True)
    q = system.default_state()[0]
    q[3:7] = 0.0
    with pytest.raises(co_errors.ShapeError, match=r"q\[3:7\]: the floating base's quaternion must be nonzero"):
        system.dynamics(q, np.zeros(system.nv))
    q[3:7] = [2.0, 0.0, 0.0, 0.0]  # a non-unit one is its direction
    np.testing.assert_array_equal(system.pin_q(q)[3:7], [0.0, 0.0, 0.0, 1.0])
