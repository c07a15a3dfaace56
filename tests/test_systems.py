"""The simulated systems: rigid3d (free bodies), planar_body / planar_ball, brick.

Every check is a number fixed by physics or geometry: Jacobian rows against finite
differences of the contact points, the frame's orthonormality, inertia formulas, conservation
of angular momentum and energy in torque-free rotation, the reference's spinning-ball matrix.

Finite differences are central with ``EPS = 1e-6`` along the exact flow that ``integrate``
follows for a constant velocity (``integrate(q, v, -h)`` is that flow backwards): truncation
is ``O(EPS^2 |v|^3) ~ 1e-11`` for the O(1) states used, round-off ``~1e-16 / EPS = 1e-10``, so
``FD_TOL = 1e-7`` has three orders of margin and still catches any wrong term (O(1)).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt import systems
from contactopt.core.errors import SceneError
from contactopt.systems import Brick, ParameterError, PlanarBall, PlanarBody, Rigid3D, System
from contactopt.systems.geometry import quat_exp, quat_multiply, quat_to_matrix, rot2, tangent_basis

EPS = 1e-6
FD_TOL = 1e-7

#: A function of the configuration (a point's position, the gaps, ...).
QFunction = Callable[[np.ndarray], np.ndarray]


def _random_quat(rng: np.random.Generator) -> list[float]:
    quat = rng.normal(size=4)
    return list(quat / np.linalg.norm(quat))


def _box(name: str = "box", size: tuple[float, float, float] = (0.3, 0.2, 0.1), mass: float = 2.0,
         **extra: Any) -> dict[str, Any]:
    return {"name": name, "shape": "box", "size": list(size), "mass": mass,
            "position": [0.0, 0.0, 0.5], **extra}


def _sphere(name: str, radius: float, mass: float, position: list[float]) -> dict[str, Any]:
    return {"name": name, "shape": "sphere", "radius": radius, "mass": mass, "position": position}


def _rigid(bodies: list[dict[str, Any]], contact: dict[str, Any] | None = None,
           **table: Any) -> Rigid3D:
    return Rigid3D.from_config({"bodies": bodies, **table}, contact or {"mu": 0.5})


def _random_state(system: Rigid3D, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q = np.concatenate([np.concatenate((rng.normal(size=3), _random_quat(rng)))
                        for _ in system.bodies])
    return q, rng.normal(size=system.nv)


def _material_point(system: Rigid3D, q: np.ndarray, body: int, point: np.ndarray) -> QFunction:
    """World position, as a function of q', of the material point of ``body`` at ``point`` in q."""
    x, quat = q[7 * body:7 * body + 3], q[7 * body + 3:7 * body + 7]
    local = quat_to_matrix(quat).T @ (point - x)
    return lambda qq: qq[7 * body:7 * body + 3] + quat_to_matrix(qq[7 * body + 3:7 * body + 7]) @ local


def _central(f: QFunction, system: System, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Central difference of ``f`` along the flow of ``integrate`` with velocity ``v``."""
    return (f(system.integrate(q, v, EPS)) - f(system.integrate(q, v, -EPS))) / (2 * EPS)


# ---------------------------------------------------------------------------- rigid3d


def test_registry_has_the_new_types() -> None:
    for name, cls in (("rigid3d", Rigid3D), ("planar_body", PlanarBody), ("planar_ball", PlanarBall),
                      ("brick", Brick)):
        assert systems.get(name) is cls


def test_box_corner_rows_are_the_corner_velocities() -> None:
    """n v = d(phi)/dt, and [n; t1; t2] v = the corner's velocity in (z, x, y), by FD."""
    rng = np.random.default_rng(0)
    system = _rigid([_box()])
    for _ in range(5):
        q, v = _random_state(system, rng)
        contacts = system.contacts(q)
        assert contacts.count == 8 and contacts.dim == 3
        np.testing.assert_allclose(contacts.phi, system.contact_points(q)[:, 2], atol=1e-15)
        dphi = _central(lambda qq: system.contacts(qq).phi, system, q, v)
        np.testing.assert_allclose(contacts.J_normal @ v, dphi, atol=FD_TOL)
        # corners are material points: their FD velocity in the ground frame (z, x, y)
        velocity = _central(system.contact_points, system, q, v)
        np.testing.assert_allclose((contacts.J @ v).reshape(8, 3), velocity[:, [2, 0, 1]], atol=FD_TOL)


def test_box_corner_order_and_ground_frame() -> None:
    """Corners follow product((-1, 1), repeat=3); a level box on the ground touches with 0, 2, 4, 6."""
    system = _rigid([_box(position=[1.0, 2.0, 0.1])])
    q, _ = system.default_state()
    contacts = system.contacts(q)
    np.testing.assert_allclose(contacts.phi, [0.0, 0.2] * 4, atol=1e-15)
    np.testing.assert_allclose(system.contact_points(q)[5], [1.3, 1.8, 0.2])  # corner (+, -, +)
    assert system.contact_names()[5] == "box.corner(+,-,+)"
    # the linear part of the rows is the world frame [n, t1, t2] = [z, x, y]
    np.testing.assert_array_equal(contacts.J_dense[:3, :3], [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(contacts.mu, np.full(8, 0.5))


def test_sphere_ground_and_sphere_pair_rows() -> None:
    """Sphere-ground and sphere-sphere rows = FD of phi and of the relative velocity of the
    material points at the contact point, projected on the frame."""
    rng = np.random.default_rng(1)
    # box_pairs off: the analytic contacts only (box pairs: tests/test_rigid3d_collision.py)
    system = _rigid([_sphere("a", 0.2, 1.0, [0, 0, 1]), _box(), _sphere("b", 0.3, 3.0, [1, 0, 1])], box_pairs=False)
    assert system.contact_names() == ["a.ground", *[f"box.corner({s})" for s in (
        "-,-,-", "-,-,+", "-,+,-", "-,+,+", "+,-,-", "+,-,+", "+,+,-", "+,+,+")], "b.ground", "a|b"]
    for _ in range(5):
        q, v = _random_state(system, rng)
        contacts = system.contacts(q)
        points = system.contact_points(q)
        dphi = _central(lambda qq: system.contacts(qq).phi, system, q, v)
        np.testing.assert_allclose(contacts.J_normal @ v, dphi, atol=FD_TOL)
        centres = q.reshape(3, 7)[:, :3]
        radii = {0: 0.2, 2: 0.3}
        for k, body in ((0, 0), (9, 2)):  # the spheres' ground contacts
            assert contacts.phi[k] == pytest.approx(centres[body, 2] - radii[body], abs=1e-15)
            velocity = _central(_material_point(system, q, body, points[k]), system, q, v)
            np.testing.assert_allclose(contacts.J_dense[3 * k:3 * k + 3] @ v, velocity[[2, 0, 1]], atol=FD_TOL)
        # the pair: frame from the linear columns of B's block; J v = v_B(p) - v_A(p) in that frame
        gap = centres[2] - centres[0]
        assert contacts.phi[10] == pytest.approx(np.linalg.norm(gap) - 0.5, abs=1e-14)
        frame = contacts.J_dense[30:33, 12:15]
        np.testing.assert_allclose(frame[0], gap / np.linalg.norm(gap), atol=1e-15)
        np.testing.assert_allclose(contacts.J_dense[30:33, 0:3], -frame, atol=0)
        middle = 0.5 * (centres[0] + 0.2 * frame[0] + centres[2] - 0.3 * frame[0])
        np.testing.assert_allclose(points[10], middle, atol=1e-15)
        vb = _central(_material_point(system, q, 2, points[10]), system, q, v)
        va = _central(_material_point(system, q, 0, points[10]), system, q, v)
        np.testing.assert_allclose(contacts.J_dense[30:33] @ v, frame @ (vb - va), atol=FD_TOL)


def test_sphere_pair_frames_are_orthonormal_and_right_handed() -> None:
    rng = np.random.default_rng(2)
    for trial in range(50):
        a = rng.normal(size=3)
        b = a + rng.normal(size=3) * (1e-3 if trial % 5 == 0 else 1.0)
        if trial == 1:  # exactly along an axis and its negative
            b = a + np.array([0.0, 0.0, -2.0])
        system = _rigid([_sphere("a", 0.1, 1.0, list(a)), _sphere("b", 0.2, 1.0, list(b))], ground=False)
        q, _ = system.default_state()
        contacts = system.contacts(q)
        assert contacts.count == 1
        frame = contacts.J_dense[:, 6:9]
        np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-14)
        np.testing.assert_allclose(np.cross(frame[1], frame[2]), frame[0], atol=1e-14)
        np.testing.assert_allclose(frame[0], (b - a) / np.linalg.norm(b - a), atol=1e-14)
    t1, t2 = tangent_basis([0.0, 0.0, 1.0])  # the ground frame is the special case n = +z
    np.testing.assert_array_equal(t1, [1, 0, 0])
    np.testing.assert_array_equal(t2, [0, 1, 0])


def test_quaternion_stays_unit_and_matches_the_exact_rotation() -> None:
    """10^4 steps of a spinning body: |q| = 1 to 1e-12 every step, and with a constant w the
    result is the exact rotation exp(N h w / 2) * q0 (left multiplication: world-frame w)."""
    rng = np.random.default_rng(3)
    system = _rigid([_box(orientation=_random_quat(rng))], ground=False)
    q0, _ = system.default_state()
    v = np.array([0.1, 0.2, 0.3, 3.0, -5.0, 7.0])
    q = q0
    worst = 0.0
    h, steps = 1e-3, 10_000
    for _ in range(steps):
        q = system.integrate(q, v, h)
        worst = max(worst, abs(np.linalg.norm(q[3:]) - 1.0))
    assert worst < 1e-12
    np.testing.assert_allclose(q[:3], q0[:3] + steps * h * v[:3], atol=1e-10)
    exact = quat_multiply(quat_exp(steps * h * v[3:]), q0[3:])
    np.testing.assert_allclose(quat_to_matrix(q[3:]), quat_to_matrix(exact), atol=1e-9)


def _torque_free_run(system: Rigid3D, q: np.ndarray, v: np.ndarray, h: float,
                     steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Semi-implicit Euler without contact: v' = v + h M^-1 tau, q' = integrate(q, v', h)."""
    for _ in range(steps):
        dyn = system.dynamics(q, v)
        v = v + h * dyn.solve_M(dyn.tau)
        q = system.integrate(q, v, h)
    return q, v


def test_principal_axis_spin_keeps_its_angular_velocity() -> None:
    """w along the body's major principal axis: w x (I w) = 0, so w is constant (to round-off)."""
    rng = np.random.default_rng(4)
    system = _rigid([_box(orientation=_random_quat(rng))], ground=False, gravity=[0, 0, 0])
    q0, _ = system.default_state()
    axis = quat_to_matrix(q0[3:])[:, 2]  # body z: the largest moment for half extents (.3, .2, .1)
    v0 = np.concatenate((np.zeros(3), 6.0 * axis))
    assert np.linalg.norm(system.dynamics(q0, v0).tau) < 1e-13
    q, v = _torque_free_run(system, q0, v0, 1e-3, 2000)
    np.testing.assert_allclose(v, v0, atol=1e-11)
    np.testing.assert_allclose(quat_to_matrix(q[3:])[:, 2], axis, atol=1e-11)


def test_gyroscopic_term_is_minus_the_rate_of_the_inertia() -> None:
    """With vdot = M^-1 tau the world angular momentum L = R I R^T w has zero derivative
    (central FD along the motion, error O(EPS^2)); the opposite sign would give 2 |w x I w|."""
    rng = np.random.default_rng(5)
    system = _rigid([_box(orientation=_random_quat(rng))], ground=False, gravity=[0, 0, 0])
    q, _ = system.default_state()
    v = np.concatenate((np.zeros(3), [2.0, -3.0, 1.5]))
    dyn = system.dynamics(q, v)
    vdot = dyn.solve_M(dyn.tau)

    def momentum(qq: np.ndarray, w: np.ndarray) -> np.ndarray:
        return system.inertia_world(qq)[0] @ w

    rate = (momentum(system.integrate(q, v, EPS), v[3:] + EPS * vdot[3:])
            - momentum(system.integrate(q, v, -EPS), v[3:] - EPS * vdot[3:])) / (2 * EPS)
    assert np.linalg.norm(dyn.tau[3:]) > 0.1  # a genuinely non-principal spin
    np.testing.assert_allclose(rate, 0.0, atol=FD_TOL)


def test_torque_free_non_principal_spin_conserves_momentum_and_energy() -> None:
    """Asymmetric box, generic w: explicit treatment of the gyroscopic term drifts O(h) over a
    fixed horizon. With h = 1e-4 over 0.2 s (|w| ~ 4 rad/s) the measured relative drifts are
    1.7e-5 (kinetic energy) and 4.4e-5 (L), proportional to h (3.3e-5 / 8.8e-5 at 2e-4); the
    tolerance 2e-4 leaves a factor >4 while a wrong sign or frame of the gyroscopic term
    gives O(1) errors (w itself turns by 0.73 rad/s over the run)."""
    orientation = list(np.array([0.9, 0.1, -0.3, 0.2]) / 0.9747)
    system = _rigid([_box(orientation=orientation)], ground=False, gravity=[0, 0, 0])
    q0, _ = system.default_state()
    v0 = np.concatenate((np.zeros(3), [2.0, -3.0, 1.5]))
    q, v = _torque_free_run(system, q0, v0, 1e-4, 2000)
    kinetic0, kinetic = system.energy(q0, v0)[0], system.energy(q, v)[0]
    assert abs(kinetic - kinetic0) / kinetic0 < 2e-4
    L0 = system.inertia_world(q0)[0] @ v0[3:]
    L = system.inertia_world(q)[0] @ v[3:]
    assert np.linalg.norm(L - L0) / np.linalg.norm(L0) < 2e-4
    assert np.linalg.norm(v[3:] - v0[3:]) > 0.5  # w itself changed a lot: the test is not vacuous


def test_mass_matrix_gravity_and_energy() -> None:
    rng = np.random.default_rng(6)
    system = _rigid([_box(mass=2.0, orientation=_random_quat(rng)), _sphere("s", 0.25, 4.0, [0, 1, 2])],
                    gravity=[0.0, 1.0, -9.81])
    q, _ = system.default_state()
    v = rng.normal(size=12)
    v[3:6] = 0.0  # no spin on the box: no gyroscopic torque
    dyn = system.dynamics(q, v)
    a, b, c = 0.3, 0.2, 0.1
    np.testing.assert_array_equal(dyn.M_dense[:3, :3], 2.0 * np.eye(3))
    R = quat_to_matrix(q[3:7])
    np.testing.assert_allclose(R.T @ dyn.M_dense[3:6, 3:6] @ R,
                               np.diag([2 / 3 * (b**2 + c**2), 2 / 3 * (a**2 + c**2), 2 / 3 * (a**2 + b**2)]),
                               atol=1e-15)
    np.testing.assert_allclose(dyn.M_dense[9:12, 9:12], 0.4 * 4.0 * 0.25**2 * np.eye(3), atol=1e-15)
    np.testing.assert_array_equal(dyn.M_dense[:6, 6:], 0.0)
    np.testing.assert_allclose(dyn.tau[:3], [0.0, 2.0, -19.62])
    np.testing.assert_allclose(dyn.tau[3:6], 0.0, atol=1e-15)
    np.testing.assert_allclose(dyn.tau[6:9], [0.0, 4.0, -39.24])
    np.testing.assert_allclose(dyn.tau[9:], 0.0, atol=1e-15)  # sphere: I w parallel to w
    kinetic, potential = system.energy(q, v)
    assert kinetic == pytest.approx(0.5 * v @ dyn.M_dense @ v, rel=1e-14)
    assert potential == pytest.approx(2.0 * 9.81 * 0.5 + 4.0 * (9.81 * 2 - 1.0), rel=1e-14)
    # one free-fall step: v_free = v + h g for every body
    h = 0.01
    v_free = v + h * dyn.solve_M(dyn.tau)
    np.testing.assert_allclose(v_free[:3] - v[:3], h * np.array([0.0, 1.0, -9.81]), atol=1e-15)
    assert system.q_names[:4] == ("box.x", "box.y", "box.z", "box.qw")
    assert system.v_names[9:] == ("s.wx", "s.wy", "s.wz")


def test_ground_can_be_turned_off() -> None:
    system = _rigid([_box()], ground=False)
    contacts = system.contacts(system.default_state()[0])
    assert contacts.count == 0 and contacts.J.shape == (0, 6)


BAD_BODIES = [
    ("negative mass", lambda b: b[1].update(mass=-1.0), "system.bodies[1].mass"),
    ("zero mass", lambda b: b[0].update(mass=0), "system.bodies[0].mass"),
    ("unknown shape", lambda b: b[0].update(shape="cone"), "system.bodies[0].shape"),
    ("unknown key", lambda b: b[1].update(colour="red"), "system.bodies[1].colour"),
    ("position length", lambda b: b[0].update(position=[0.0, 1.0]), "system.bodies[0].position"),
    ("zero quaternion", lambda b: b[0].update(orientation=[0, 0, 0, 0]), "system.bodies[0].orientation"),
    ("non-unit quaternion", lambda b: b[0].update(orientation=[2, 0, 0, 0]), "system.bodies[0].orientation"),
    ("quaternion length", lambda b: b[0].update(orientation=[1, 0, 0]), "system.bodies[0].orientation"),
    ("box size length", lambda b: b[0].update(size=[0.1, 0.1]), "system.bodies[0].size"),
    ("negative half extent", lambda b: b[0].update(size=[0.1, -0.1, 0.1]), "system.bodies[0].size"),
    ("box with radius", lambda b: b[0].update(radius=0.1), "system.bodies[0].radius"),
    ("sphere radius and size", lambda b: b[1].update(size=[0.2]), "system.bodies[1].radius"),
    ("velocity not a list", lambda b: b[1].update(velocity=1.0), "system.bodies[1].velocity"),
    ("duplicate name", lambda b: b[1].update(name="box"), "system.bodies[1].name"),
    ("missing mass", lambda b: b[0].pop("mass"), "system.bodies[0].mass"),
]


@pytest.mark.parametrize(("what", "edit", "key"), BAD_BODIES, ids=[case[0] for case in BAD_BODIES])
def test_bad_bodies_raise_parameter_error_naming_the_key(what: str, edit: Any, key: str) -> None:
    bodies = [_box(), _sphere("ball", 0.1, 1.0, [0, 0, 1])]
    edit(bodies)
    with pytest.raises(ParameterError) as info:
        _rigid(bodies)
    assert info.value.key == key
    assert key in str(info.value)


@pytest.mark.parametrize(("table", "key"), [
    ({"gravity": [0, -9.81]}, "system.gravity"),
    ({"ground": "yes"}, "system.ground"),
    ({"parameters": {"g": 9.81}}, "system.parameters.g"),
    ({"bodies": []}, "system.bodies"),
])
def test_bad_system_tables(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ParameterError) as info:
        Rigid3D.from_config({"bodies": [_box()], **table}, {})
    assert info.value.key == key


RIGID_SCENE = """
[scene]
name = "box_and_ball"
dt = 1e-3
duration = 0.01

[system]
type = "rigid3d"

[[system.bodies]]
name = "box"
shape = "box"
size = [0.1, 0.2, 0.3]
mass = 1.0
position = [0, 0, 0.3]
orientation = [0.7071, 0, 0, 0.7071]
velocity = [1, 0, 0]

[[system.bodies]]
name = "ball"
shape = "sphere"
size = [0.05]
mass = 0.5
position = [1, 0, 0.05]
angular_velocity = [0, 2, 0]

[contact]
mu = 0.3
"""


def test_rigid3d_scene_without_initial_takes_the_bodies_state(tmp_path: Path) -> None:
    path = tmp_path / "box_and_ball.toml"
    path.write_text(RIGID_SCENE)
    scene = co.load_scene(path)
    assert isinstance(scene.system, Rigid3D)
    half = np.sqrt(0.5)
    np.testing.assert_allclose(scene.q0, [0, 0, 0.3, half, 0, 0, half, 1, 0, 0.05, 1, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(scene.v0, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0])
    contacts = scene.system.contacts(scene.q0)
    assert contacts.count == 9
    np.testing.assert_allclose(contacts.mu, 0.3)
    np.testing.assert_allclose(contacts.phi[[0, 2, 4, 6, 8]], 0.0, atol=1e-15)  # bottom corners, ball

    bad = RIGID_SCENE.replace("mass = 0.5", "mass = -0.5")
    path.write_text(bad)
    with pytest.raises(SceneError, match=r"box_and_ball\.toml.*system\.bodies\[1\]\.mass"):
        co.load_scene(path)
    path.write_text(RIGID_SCENE.replace('shape = "sphere"', 'shape = "cone"'))
    with pytest.raises(SceneError, match=r"system\.bodies\[1\]\.shape.*cone"):
        co.load_scene(path)


# ---------------------------------------------------------------------------- planar bodies


def _planar_fd(system: PlanarBody, q: np.ndarray, v: np.ndarray) -> None:
    """n v = d(phi)/dt and t v = x-velocity of the material point at the contact point (FD)."""
    contacts = system.contacts(q)
    offsets = system.contact_points(q) - q[:2]

    def material(k: int) -> QFunction:
        return lambda qq: qq[:2] + rot2(qq[2] - q[2]) @ offsets[k]

    dphi = _central(lambda qq: system.contacts(qq).phi, system, q, v)
    np.testing.assert_allclose(contacts.J_normal @ v, dphi, atol=FD_TOL)
    for k in range(contacts.count):
        velocity = _central(material(k), system, q, v)
        np.testing.assert_allclose(contacts.J[2 * k:2 * k + 2] @ v, velocity[[1, 0]], atol=FD_TOL)


def test_planar_disk_and_box_rows_match_finite_differences() -> None:
    rng = np.random.default_rng(7)
    disk = PlanarBody.from_config({"shape": "disk", "parameters": {"m": 1.0, "radius": 0.3}}, {})
    box = PlanarBody.from_config({"shape": "box", "parameters": {"m": 1.0, "half_width": 0.4,
                                                                 "half_height": 0.1}}, {"mu": 0.2})
    for _ in range(5):
        q, v = rng.normal(size=3), rng.normal(size=3)
        _planar_fd(disk, q, v)
        _planar_fd(box, q, v)
    # box corners: order (-,-), (-,+), (+,-), (+,+); level box at z = 0.1 rests on 0 and 2
    contacts = box.contacts([0.0, 0.1, 0.0])
    np.testing.assert_allclose(contacts.phi, [0.0, 0.2, 0.0, 0.2], atol=1e-15)
    np.testing.assert_allclose(contacts.J[:2], [[0, 1, -0.4], [1, 0, 0.1]], atol=1e-15)
    np.testing.assert_allclose(contacts.mu, 0.2)
    # theta counterclockwise: a quarter turn brings corner (+w, -h) to (+h, +w)
    np.testing.assert_allclose(box.contact_points([0.0, 0.0, np.pi / 2])[2], [0.1, 0.4], atol=1e-15)


def test_planar_disk_tangent_row_vanishes_when_rolling() -> None:
    """t v = vx + r omega: rolling without slip is vx = -r omega (omega counterclockwise)."""
    r = 0.3
    disk = PlanarBody.from_config({"parameters": {"m": 2.0, "radius": r}}, {})
    contacts = disk.contacts([0.5, r, 0.7])
    np.testing.assert_array_equal(contacts.J, [[0, 1, 0], [1, 0, r]])  # Tedrake 2022's J
    for omega in (-4.0, 0.5, 3.0):
        assert contacts.J[1] @ np.array([-r * omega, 0.0, omega]) == pytest.approx(0.0, abs=1e-15)
        assert contacts.J[1] @ np.array([r * omega, 0.0, omega]) == pytest.approx(2 * r * omega)


def test_planar_ball_reproduces_the_spinning_ball_impact_matrix() -> None:
    """Tedrake 2022, "A spinning ball bouncing on the ground": hollow ball, infinite friction,
    v+ = [I - M^-1 J^T diag(1+e, 1) (J M^-1 J^T)^-1 J] v- = [[3/5, 0, -2/5 r], [0, -e, 0],
    [-3/(5 r), 0, 2/5]] v-."""
    r, e = 0.2, 0.6
    ball = PlanarBall.from_config({"parameters": {"m": 1.5, "radius": r}}, {"restitution": e})
    q = np.array([0.0, r, 0.0])
    M = ball.dynamics(q, np.zeros(3)).M
    J = ball.contacts(q).J
    Minv = np.linalg.inv(M)
    reset = np.eye(3) - Minv @ J.T @ np.diag([1 + e, 1]) @ np.linalg.inv(J @ Minv @ J.T) @ J
    expected = np.array([[3 / 5, 0, -2 / 5 * r], [0, -e, 0], [-3 / (5 * r), 0, 2 / 5]])
    np.testing.assert_allclose(reset, expected, atol=1e-14)
    assert ball.restitution == e


def test_planar_inertia_and_dynamics() -> None:
    m, r = 2.0, 0.5
    hollow = PlanarBall.from_config({"parameters": {"m": m, "radius": r}}, {})
    solid = PlanarBall.from_config({"parameters": {"m": m, "radius": r}, "inertia": "solid"}, {})
    body = PlanarBody.from_config({"parameters": {"m": m, "radius": r}}, {})
    box = PlanarBody.from_config({"shape": "box", "parameters": {"m": m, "half_width": 0.3,
                                                                 "half_height": 0.2}}, {})
    assert hollow.inertia == pytest.approx(2 / 3 * m * r**2)
    assert solid.inertia == pytest.approx(2 / 5 * m * r**2)
    assert body.inertia == pytest.approx(2 / 5 * m * r**2)  # planar_body defaults to solid
    assert box.inertia == pytest.approx(m * (0.3**2 + 0.2**2) / 3)
    dyn = box.dynamics([0.0, 1.0, 0.3], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(dyn.M, np.diag([m, m, box.inertia]))
    np.testing.assert_allclose(dyn.tau, [0.0, -m * 9.81, 0.0])
    assert box.energy([0.0, 1.0, 0.3], [1.0, 2.0, 3.0]) == pytest.approx(
        (0.5 * m * 5 + 0.5 * box.inertia * 9, m * 9.81))
    np.testing.assert_allclose(box.integrate([0.0, 1.0, 0.3], [1.0, 2.0, 3.0], 0.1), [0.1, 1.2, 0.6])
    assert box.q_names == ("x", "z", "theta") and box.v_names == ("vx", "vz", "omega")


@pytest.mark.parametrize(("cls", "table", "key"), [
    (PlanarBody, {"shape": "triangle", "parameters": {"m": 1.0}}, "system.shape"),
    (PlanarBody, {"shape": "box", "parameters": {"m": 1.0, "radius": 0.1}}, "system.parameters.radius"),
    (PlanarBody, {"shape": "disk", "parameters": {"m": 1.0, "half_width": 0.1}},
     "system.parameters.half_width"),
    (PlanarBody, {"shape": "box", "inertia": "hollow", "parameters": {"m": 1.0}}, "system.inertia"),
    (PlanarBody, {"parameters": {"m": -1.0}}, "system.parameters.m"),
    (PlanarBall, {"inertia": "ring", "parameters": {"m": 1.0, "radius": 0.1}}, "system.inertia"),
    (PlanarBall, {"shape": "box", "parameters": {"m": 1.0, "radius": 0.1}}, "system.shape"),
    (PlanarBall, {"parameters": {"m": 1.0}}, "system.parameters.radius"),
])
def test_planar_bad_configs(cls: type[PlanarBody], table: dict[str, Any], key: str) -> None:
    with pytest.raises(ParameterError) as info:
        cls.from_config(table, {})
    assert info.value.key == key


# ---------------------------------------------------------------------------- brick


def test_brick_is_the_reference_brick() -> None:
    """tau = [u, -m g], one ground contact [n; t] = [[0, 1], [1, 0]]; from rest on the ground
    the normal impulse that stops the fall in one step is m g h (Tedrake 2022)."""
    m, g, u, h = 2.0, 9.81, 3.0, 0.01
    brick = Brick.from_config({"parameters": {"m": m, "u": u}}, {"mu": 0.4})
    dyn = brick.dynamics([0.0, 0.0], [0.0, 0.0])
    np.testing.assert_allclose(dyn.M, m * np.eye(2))
    np.testing.assert_allclose(dyn.tau, [u, -m * g])
    np.testing.assert_allclose(brick.dynamics([0.0, 0.0], [0.0, 0.0], u=-1.0).tau, [-1.0, -m * g])
    contacts = brick.contacts([0.5, 0.0])
    np.testing.assert_array_equal(contacts.phi, [0.0])
    np.testing.assert_array_equal(contacts.J, [[0, 1], [1, 0]])
    assert contacts.dim == 2 and contacts.mu[0] == 0.4
    v_free = h * dyn.solve_M(dyn.tau)
    normal_impulse = -(contacts.J[0] @ v_free) / (contacts.J[0] @ dyn.solve_M(contacts.J[0]))
    assert normal_impulse == pytest.approx(m * g * h)
    with pytest.raises(ParameterError) as info:
        Brick.from_config({"parameters": {"m": 1.0, "radius": 0.1}}, {})
    assert info.value.key == "system.parameters.radius"
