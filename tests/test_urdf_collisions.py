"""Collisions of the pinocchio URDF backend (:mod:`contactopt.systems.urdf_pinocchio.collision`):
convex meshes against the ground, self-collisions by coal, their rows against closed forms,
finite differences and the ``mujoco`` backend, and solo12 standing under both backends.

Tolerances: quantities both backends compute from the same double-precision numbers agree to
rounding (observed 1e-15); 1e-10 leaves orders of magnitude and still catches a wrong point,
frame or sign (errors of 1e-3 and more). Mesh vertices are float32 in STL files and in MuJoCo
(``mesh_vert``); the test meshes have float32-exact vertices and are centred on their principal
axes, so MuJoCo's re-centring moves nothing and both backends see the same vertices.
"""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")
pytest.importorskip("pinocchio")

from contactopt.systems.base import ParameterError
from contactopt.systems.mjcf.urdf import UrdfSystem
from contactopt.systems.urdf_file import example_robot_data, srdf_state
from contactopt.systems.urdf_pinocchio import collision
from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

MARGIN = 1e-8
FORMULATIONS = ("gauss", "lcp", "anitescu", "ccp", "regularized", "sap", "coulomb")
BLOCK = (0.25, 0.5, 0.125)  # float32-exact sides, distinct: principal axes are the mesh's own


def box_stl(sx: float, sy: float, sz: float) -> bytes:
    """A binary STL box of sides ``sx, sy, sz`` centred at the origin (12 triangles)."""
    corners = np.array([[x, y, z] for x in (-sx / 2, sx / 2) for y in (-sy / 2, sy / 2) for z in (-sz / 2, sz / 2)],
                       dtype=np.float32)
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
             (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    out = bytearray(b"box".ljust(80, b" ")) + struct.pack("<I", len(faces))
    for face in faces:
        a, b, c = corners[list(face)]
        out += struct.pack("<12fH", *np.cross(b - a, c - a), *a, *b, *c, 0)
    return bytes(out)


MESH_BLOCK = """<robot name="block"><link name="block"><inertial><mass value="1.5"/>
<inertia ixx="0.004" iyy="0.002" izz="0.006" ixy="0" ixz="0" iyz="0"/></inertial>
<collision><geometry><mesh filename="package://blocks/meshes/block.stl"/></geometry></collision></link></robot>"""


def block(tmp_path: Path) -> tuple[Path, Path]:
    """The floating mesh block's URDF and the package folder its ``package://`` mesh is under."""
    packages = tmp_path / "pkgs"
    (packages / "blocks" / "meshes").mkdir(parents=True)
    (packages / "blocks" / "meshes" / "block.stl").write_bytes(box_stl(*BLOCK))
    urdf = tmp_path / "robot" / "block.urdf"
    urdf.parent.mkdir()
    urdf.write_text(MESH_BLOCK)
    return urdf, packages


def random_quaternion(rng: np.random.Generator) -> np.ndarray:
    quat = rng.normal(size=4)
    return quat / np.linalg.norm(quat)


def test_a_mesh_block_on_the_ground_agrees_with_mujoco(tmp_path: Path) -> None:
    """The package:// mesh resolves through package_dirs; its convex hull against the ground:
    where one vertex is within the margin, phi and J equal the mujoco backend's (MuJoCo's plane-convex
    support point); resting on a face, the same four corners."""
    urdf, packages = block(tmp_path)
    mj = UrdfSystem(urdf, True, True, package_dirs=[packages], detection_margin=MARGIN)
    pn = PinocchioUrdfSystem(urdf, True, True, package_dirs=[packages], detection_margin=MARGIN)
    assert [s.kind for s in pn._shapes] == ["convex"] and pn._shapes[0].points.shape == (8, 3)
    rng = np.random.default_rng(0)
    single = 0
    for _ in range(150):
        q = np.concatenate([rng.uniform(-0.1, 0.1, 2), rng.uniform(0.0, 0.3, 1), random_quaternion(rng)])
        v = rng.normal(size=6)
        a, b = mj.dynamics(q, v), pn.dynamics(q, v)
        np.testing.assert_allclose(b.M, np.asarray(a.M), rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.tau, a.tau, rtol=0, atol=1e-10)
        ca, cb = mj.contacts(q), pn.contacts(q)
        if cb.phi.size <= 1:  # several vertices within the margin: MuJoCo may choose others
            assert cb.phi.size == ca.phi.size
            np.testing.assert_allclose(cb.phi, ca.phi, rtol=0, atol=1e-10)
            np.testing.assert_allclose(cb.J, np.asarray(ca.J), rtol=0, atol=1e-10)
            single += ca.phi.size
    assert single >= 20
    q = np.array([0.0, 0.0, BLOCK[2] / 2 - 0.001, 1.0, 0.0, 0.0, 0.0])  # on its large face, 1 mm deep
    ca, cb = mj.contacts(q), pn.contacts(q)
    np.testing.assert_allclose(cb.phi, [-0.001] * 4, rtol=0, atol=1e-12)
    points = sorted(tuple(np.round(c.pos, 12)) for c in pn.contact_list(q))
    theirs = sorted(tuple(np.round(p, 12)) for p in np.asarray(mj.data.contact.pos)[:mj.data.ncon])
    np.testing.assert_allclose(points, theirs, rtol=0, atol=1e-12)


def test_the_deepest_vertex_is_coals_halfspace_distance(tmp_path: Path) -> None:
    """The first ground contact of a hull: coal's signed distance to the half-space z <= 0 and its
    witness point (to 1e-12: the same vertex, the same arithmetic up to rounding)."""
    import coal

    urdf, packages = block(tmp_path)
    pn = PinocchioUrdfSystem(urdf, True, True, package_dirs=[packages], detection_margin=0.05)
    shape = pn._shapes[0]
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = np.concatenate([[0.0, 0.0], rng.uniform(0.0, 0.2, 1), random_quaternion(rng)])
        (_, (centre, rotation)), = pn._placed(q)
        result = coal.DistanceResult()
        dist = coal.distance(coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), coal.Transform3s(),
                             shape.coal_shape, coal.Transform3s(rotation, centre), coal.DistanceRequest(), result)
        touches = collision.ground_contacts(shape, 0, centre, rotation, 0.05)
        if dist > 0.05:
            assert not touches
            continue
        assert touches[0].dist == pytest.approx(dist, abs=1e-12)
        vertex = touches[0].pos + np.array([0.0, 0.0, touches[0].dist / 2])
        np.testing.assert_allclose(vertex, result.getNearestPoint2(), rtol=0, atol=1e-12)


def scene(tmp_path: Path, urdf: Path, backend: str, extra: str, q: np.ndarray, v: np.ndarray) -> co.Scene:
    path = tmp_path / f"{urdf.stem}-{backend}.toml"
    path.write_text(f'[scene]\nname = "x"\ndt = 0.002\nduration = 0.002\n\n[system]\ntype = "urdf"\n'
                    f'file = "{urdf}"\nbackend = "{backend}"\ndetection_margin = {MARGIN}\nfloating_base = true\n'
                    f'ground = true\n{extra}\n\n[initial]\nq = {[float(x) for x in q]}\nv = {[float(x) for x in v]}\n')
    return co.load_scene(path)


def one_step(tmp_path: Path, urdf: Path, extra: str, q: np.ndarray, v: np.ndarray,
             formulation: str) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for backend in ("mujoco", "pinocchio"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gauss: friction ignored
            trajectory = co.simulate(scene(tmp_path, urdf, backend, extra, q, v), formulation=formulation,
                                     max_steps=1)
        assert trajectory.completed
        out.append((trajectory.q[-1], trajectory.v[-1]))
    return out


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_one_step_of_the_mesh_block_on_a_corner_agrees(tmp_path: Path, formulation: str) -> None:
    """A corner down, moving into the ground: one step of every formulation, both backends
    (1e-9: a program solved to its solver's tolerance from identical inputs)."""
    urdf, packages = block(tmp_path)
    quat = np.array([0.9, 0.3, -0.2, 0.1])
    quat /= np.linalg.norm(quat)
    pn = PinocchioUrdfSystem(urdf, True, True, package_dirs=[packages])
    q = np.concatenate([[0.0, 0.0, 0.0], quat])
    q[2] = -collision.lowest_point(pn._shapes[0], *pn._placed(q)[0][1]) - 0.0005
    assert pn.contacts(q).phi.size == 1
    v = np.array([0.3, -0.2, -0.5, 0.4, 0.2, -0.3])
    (qa, va), (qb, vb) = one_step(tmp_path, urdf, f'package_dirs = ["{packages}"]', q, v, formulation)
    assert np.abs(va - v).max() > 0.1
    np.testing.assert_allclose(qb, qa, rtol=0, atol=1e-9)
    np.testing.assert_allclose(vb, va, rtol=0, atol=1e-9)


# a fixed base holding a sphere, a two-joint arm whose second link holds a sphere (the pair tested)
# and whose first link holds one (adjacent to both: never tested)
ARM = """<robot name="arm">
 <link name="base"><collision><origin xyz="0.35 0.05 0.0"/><geometry><sphere radius="0.05"/></geometry>
  </collision></link>
 <link name="upper"><inertial><origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0.001" iyy="0.01" izz="0.01"
  ixy="0" ixz="0" iyz="0"/></inertial><collision><origin xyz="0.1 0 0.2"/><geometry><sphere radius="0.02"/></geometry>
  </collision></link>
 <link name="fore"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/><inertia ixx="0.001" iyy="0.005" izz="0.005"
  ixy="0" ixz="0" iyz="0"/></inertial><collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.04"/></geometry>
  </collision></link>
 <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
  <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
 <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0.2 0 0"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""
SRDF = """<robot name="arm"><disable_collisions link1="fore" link2="base" reason="Never"/></robot>"""


def arm(tmp_path: Path, **options: object) -> PinocchioUrdfSystem:
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    return PinocchioUrdfSystem(path, detection_margin=0.5, **options)  # type: ignore[arg-type]


def test_self_collision_pairs_follow_the_documented_rule(tmp_path: Path) -> None:
    """Shapes on one joint or on parent and child joints (the world a joint) are never tested;
    the SRDF's disabled pairs and ``self_collisions = false`` leave the rest out."""
    system = arm(tmp_path)
    assert [s.link for s in system._shapes] == ["base", "upper", "fore"]
    assert system._pairs == [(0, 2)]  # base-fore; base-upper and upper-fore are adjacent
    srdf = tmp_path / "arm.srdf"
    srdf.write_text(SRDF)
    assert arm(tmp_path, srdf=srdf)._pairs == []
    assert arm(tmp_path, self_collisions=False)._pairs == []
    assert arm(tmp_path, self_collisions=False).contacts(np.zeros(2)).phi.size == 0


def test_a_sphere_pair_is_the_closed_form_and_its_rows_are_phi_rate(tmp_path: Path) -> None:
    """Two spheres: phi = |c2 - c1| - r1 - r2, the normal from the base's sphere to the forearm's,
    the point half-way between the surfaces; the rows are frame @ (velocity of the forearm's
    point), and the normal row is d phi / dt (central differences, error O(eps^2) ~ 1e-10)."""
    system = arm(tmp_path)
    rng = np.random.default_rng(2)
    for _ in range(10):
        q, v = rng.uniform(-1.5, 1.5, 2), rng.normal(size=2)
        (contact,) = system.contact_list(q)
        c1 = np.array([0.35, 0.05, 0.0])
        elbow = 0.2 * np.array([np.cos(q[0]), np.sin(q[0]), 0.0])
        c2 = elbow + 0.2 * np.array([np.cos(q[0] + q[1]), np.sin(q[0] + q[1]), 0.0])
        gap = np.linalg.norm(c2 - c1)
        normal = (c2 - c1) / gap
        assert contact.dist == pytest.approx(gap - 0.09, abs=1e-12)
        np.testing.assert_allclose(contact.normal, normal, rtol=0, atol=1e-10)
        np.testing.assert_allclose(contact.pos, (c1 + 0.05 * normal + c2 - 0.04 * normal) / 2, rtol=0, atol=1e-10)
        rows = system.contacts(q)
        w1, w12 = v[0], v[0] + v[1]
        velocity = (np.cross([0, 0, w1], elbow) + np.cross([0, 0, w12], contact.pos - elbow))
        frame = collision.ground.contact_frame(normal)
        np.testing.assert_allclose(rows.J @ v, frame @ velocity, rtol=0, atol=1e-10)
        eps = 1e-5
        rate = (system.contact_list(q + eps * v)[0].dist - system.contact_list(q - eps * v)[0].dist) / (2 * eps)
        assert (rows.J @ v)[0] == pytest.approx(rate, abs=1e-8)


def test_mesh_pairs_rows_are_phi_rate(tmp_path: Path) -> None:
    """Two mesh blocks (convex hulls, coal's GJK/EPA) on the base and the forearm, apart and
    overlapping: the normal row times v is d phi / dt (central differences at eps = 1e-6: error
    O(eps^2) plus GJK/EPA's 1e-9 tolerance over eps, 1e-3 relative at worst: 1e-5 absolute
    catches a wrong point or sign, errors of O(0.1))."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "small.stl").write_bytes(box_stl(0.125, 0.0625, 0.25))
    text = (ARM.replace('<sphere radius="0.05"/>', '<mesh filename="m/small.stl"/>')
            .replace('<sphere radius="0.04"/>', '<mesh filename="m/small.stl"/>'))
    path = tmp_path / "meshed_arm.urdf"
    path.write_text(text)
    system = PinocchioUrdfSystem(path, detection_margin=0.5)
    rng = np.random.default_rng(3)
    seen = {"apart": 0, "overlapping": 0}
    for _ in range(40):
        q, v = rng.uniform(-2.0, 2.0, 2), rng.normal(size=2)
        found = system.contact_list(q)
        if not found:
            continue
        seen["apart" if found[0].dist > 0 else "overlapping"] += 1
        eps = 1e-6
        ahead, behind = system.contact_list(q + eps * v), system.contact_list(q - eps * v)
        rate = (ahead[0].dist - behind[0].dist) / (2 * eps)
        assert (system.contacts(q).J @ v)[0] == pytest.approx(rate, abs=1e-5)
    assert seen["apart"] >= 5 and seen["overlapping"] >= 3


def test_an_arm_striking_its_base_completes_under_sap_and_ccp(tmp_path: Path) -> None:
    """A self-collision through the formulations: the forearm swung into the base's sphere is
    pushed aside by it (the elbow folds) instead of passing through."""
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    for formulation, solver in (("sap", "newton"), ("ccp", "clarabel")):
        toml = tmp_path / f"arm-{formulation}.toml"
        toml.write_text(f'[scene]\nname = "x"\ndt = 0.002\nduration = 0.3\n\n[system]\ntype = "urdf"\n'
                        f'file = "{path}"\nbackend = "pinocchio"\n\n[initial]\nq = [-0.8, 0.0]\nv = [4.0, 0.0]\n')
        traj = co.simulate(co.load_scene(toml), formulation=formulation, solver=solver)
        assert traj.completed
        phis = [float(np.min(s.phi)) for s in traj.steps if len(s.phi)]
        # detected one step late at the default margin (1e-8 of the extent): at most one step of
        # travel deep, 4 rad/s x 0.4 m x 2 ms = 3.2 mm; the impact folds the free elbow
        assert phis and min(phis) > -3.5e-3
        assert abs(traj.q[-1, 1]) > 0.1


def requires_example_robot_data() -> None:
    """Skip, naming the package, where example-robot-data is not installed."""
    from contactopt.systems.urdf_file import example_robot_data_share

    try:
        example_robot_data_share()
    except ParameterError as exc:
        pytest.skip(str(exc))


def solo12() -> tuple[object, np.ndarray]:
    try:
        files = example_robot_data("solo12")
    except ParameterError as exc:  # not installed: skipped, naming the package
        pytest.skip(str(exc))
    probe = PinocchioUrdfSystem(files.urdf, True, True, package_dirs=[files.package_dir], self_collisions=False)
    name, q = srdf_state(files.srdf, probe.q_names, probe.default_state()[0])
    assert name == "standing"
    q = np.array(q)
    q[2] -= min(collision.lowest_point(probe._shapes[k], c, R) for k, (c, R) in probe._placed(q))
    return files, q


def test_solo12_standing_agrees_under_both_backends(tmp_path: Path) -> None:
    """example-robot-data's solo12 (meshes only) on its SRDF's standing state, its feet touching
    the ground, ground contacts only on both backends (MuJoCo reads no SRDF):

    * M and the bias forces to 1e-10 (observed 2e-16, 7e-15; the mujoco backend's six-digit
      MJCF numbers are restored to the URDF's, :func:`~contactopt.systems.mjcf.urdf.restore_precision`);
    * the contacts' rows at MuJoCo's own contact points to 1e-10 (the Jacobians proper);
    * phi and J as built to 2e-9: MuJoCo keeps mesh vertices as float32 about the mesh's
      inertial frame (``mesh_vert``), so its foot vertices are 1e-9 m from the STL's (observed
      phi 8.7e-10, J 4.4e-10);
    * one step of every formulation with the feet 1e-6 m deep, to 2e-5 in v: the phi difference
      over the step (9e-10 / 2 ms = 4e-7 m/s at the feet) through the lower legs' 0.16 m (3e-6
      rad/s at the knees, observed 4e-6), 1e-8 in q (h times that)."""
    files, q = solo12()
    q_deep = q.copy()
    q_deep[2] -= 1e-6  # in contact for every formulation (regularized: phi < 0), still the two feet
    v0 = np.zeros(18)
    extra = f'self_collisions = false\npackage_dirs = ["{files.package_dir}"]'
    scenes = [scene(tmp_path, files.urdf, backend, extra, q_deep, v0) for backend in ("mujoco", "pinocchio")]
    mj, pn = (s.system for s in scenes)
    assert pn.q_names == mj.q_names and pn.nv == 18
    rng = np.random.default_rng(4)
    for _ in range(5):
        v = rng.normal(size=18)
        a, b = mj.dynamics(q, v), pn.dynamics(q, v)
        np.testing.assert_allclose(b.M, np.asarray(a.M), rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.tau, a.tau, rtol=0, atol=1e-10)
    ca, cb = mj.contacts(q), pn.contacts(q)
    assert ca.phi.size == cb.phi.size == 2  # the two lowest feet (the STL feet are not quite symmetric)
    np.testing.assert_allclose(cb.phi, ca.phi, rtol=0, atol=2e-9)
    np.testing.assert_allclose(cb.J, np.asarray(ca.J), rtol=0, atol=2e-9)
    import pinocchio as pin

    from contactopt.systems.urdf_pinocchio.tree import skew

    pin.computeJointJacobians(pn.model, pn.data, pn.pin_q(q))
    for k, touch in enumerate(pn.contact_list(q)):
        joint = pn._shapes[touch.second].joint
        jacobian = np.array(pin.getJointJacobian(pn.model, pn.data, joint, pin.LOCAL_WORLD_ALIGNED))[:, pn._dofs]
        point = np.asarray(mj.data.contact.pos)[k]
        rows = collision.ground.contact_frame(touch.normal) @ (
            jacobian[:3] - skew(point - np.array(pn.data.oMi[joint].translation)) @ jacobian[3:])
        np.testing.assert_allclose(rows, np.asarray(ca.J)[3 * k:3 * k + 3], rtol=0, atol=1e-10)
    steps_agree(scenes, 1e-8, 2e-5)


def steps_agree(scenes: list[co.Scene], q_tol: float, v_tol: float) -> None:
    """One step of every formulation from each backend's scene: the same q and v to the bounds,
    and a step that moves (the contacts push the feet out: the legs are unactuated)."""
    for formulation in FORMULATIONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gauss: friction ignored
            runs = [co.simulate(s, formulation=formulation, max_steps=1) for s in scenes]
        assert all(run.completed for run in runs)
        (qa, va), (qb, vb) = ((run.q[-1], run.v[-1]) for run in runs)
        assert np.abs(va).max() > 0.1
        np.testing.assert_allclose(qb, qa, rtol=0, atol=q_tol)
        np.testing.assert_allclose(vb, va, rtol=0, atol=v_tol)


def test_solo12_steps_alike_when_both_backends_see_the_same_vertices(tmp_path: Path) -> None:
    """The step difference of the test above is MuJoCo's float32 vertices and nothing else: with
    the pinocchio backend's two foot hulls given MuJoCo's own vertices (``mesh_vert`` placed by
    the geom's pose, expressed in Pinocchio's geometry frame), phi and J agree to 1e-10 and one
    step of every formulation to 1e-9 in q and v (observed 0 for phi, 1e-17 for J, 2e-16 in v):
    M, the bias forces, the contact frames and each formulation's program are then the same."""
    import dataclasses

    files, q = solo12()
    q_deep = q.copy()
    q_deep[2] -= 1e-6
    extra = f'self_collisions = false\npackage_dirs = ["{files.package_dir}"]'
    scenes = [scene(tmp_path, files.urdf, backend, extra, q_deep, np.zeros(18)) for backend in ("mujoco", "pinocchio")]
    mj, pn = (s.system for s in scenes)
    before = mj.contacts(q_deep)
    model, data = mj.model, mj.data
    placed = dict(pn._placed(q_deep))
    touches = pn.contact_list(q_deep)
    assert before.phi.size == len(touches) == 2
    for k, touch in enumerate(touches):
        geom = int(np.asarray(data.contact.geom2)[k])  # geom1 is the floor
        mesh = int(model.geom_dataid[geom])
        start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        vertices = np.asarray(model.mesh_vert[start:start + count], dtype=np.float64)
        world = np.asarray(data.geom_xpos[geom]) + vertices @ np.asarray(data.geom_xmat[geom]).reshape(3, 3).T
        centre, rotation = placed[touch.second]
        shape = pn._shapes[touch.second]
        assert shape.kind == "convex" and "FOOT" in shape.name
        pn._shapes[touch.second] = dataclasses.replace(shape, points=(world - centre) @ rotation)
    pn._at = None  # the contacts cached at q_deep were the STL vertices'
    ca, cb = mj.contacts(q_deep), pn.contacts(q_deep)
    np.testing.assert_allclose(cb.phi, ca.phi, rtol=0, atol=1e-10)
    np.testing.assert_allclose(cb.J, np.asarray(ca.J), rtol=0, atol=1e-10)
    steps_agree(scenes, 1e-9, 1e-9)


def test_example_robot_data_files_and_their_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper finds a robot's URDF, package folder and SRDF; an unknown robot and a missing
    package are one line each."""
    import importlib.metadata

    try:
        files = example_robot_data("solo12")
    except ParameterError as exc:  # not installed: skipped, naming the package
        pytest.skip(str(exc))
    assert files.urdf.name == "solo12.urdf" and files.srdf is not None and files.srdf.name == "solo.srdf"
    assert (files.package_dir / "example-robot-data" / "robots").is_dir()
    with pytest.raises(ParameterError, match=r"'no_such_robot' is not one of its URDFs \(known: .*solo12"):
        example_robot_data("no_such_robot")

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ParameterError, match=r"example-robot-data is not installed: pip install example-robot-data"):
        example_robot_data("solo12")


MIMIC = """<robot name="gripper">
 <link name="base"/>
 <link name="finger1"><inertial><mass value="0.3"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0"
  iyz="0"/></inertial></link>
 <link name="finger2"><inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0"
  iyz="0"/></inertial><collision><geometry><sphere radius="0.01"/></geometry></collision></link>
 <joint name="joint1" type="prismatic"><parent link="base"/><child link="finger1"/><origin xyz="0 0 0.5"/>
  <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
 <joint name="joint2" type="prismatic"><parent link="base"/><child link="finger2"/><origin xyz="0.1 0 0.5"/>
  <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/>
  <mimic joint="joint1" multiplier="-2" offset="0.05"/></joint>
</robot>"""


def test_a_mimic_joint_follows_its_leader(tmp_path: Path) -> None:
    """``<mimic joint multiplier="-2" offset="0.05">``: the follower has no coordinate; with both
    fingers sliding along z, in closed form (q2 = k q1 + c, k = -2: kinetic energy
    (m1 + k^2 m2) qdot^2 / 2, so M = m1 + k^2 m2; potential g (m1 q1 + m2 q2), so
    tau = -g (m1 + k m2));
    the follower's sphere touches the ground at z = 0.5 + k q1 + c - r with the normal row k."""
    path = tmp_path / "gripper.urdf"
    path.write_text(MIMIC)
    system = PinocchioUrdfSystem(path, ground=True, detection_margin=1.0)
    assert system.q_names == ("joint1",) and system.mimic_joints == ("joint2",)
    k, c, g = -2.0, 0.05, 9.81
    for q1 in (-0.1, 0.0, 0.2):
        dynamics = system.dynamics(np.array([q1]), np.zeros(1))
        np.testing.assert_allclose(np.asarray(dynamics.M), [[0.3 + k**2 * 0.2]], rtol=0, atol=1e-12)
        np.testing.assert_allclose(dynamics.tau, [-g * (0.3 + k * 0.2)], rtol=0, atol=1e-12)
        contacts = system.contacts(np.array([q1]))
        np.testing.assert_allclose(contacts.phi, [0.5 + k * q1 + c - 0.01], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(contacts.J)[0], [k], rtol=0, atol=1e-12)
    assert [row for row in system.limits(np.zeros(1)).labels] == ["joint1 lower"]
    with pytest.raises(ParameterError, match=r"joint 'joint2' mimics another joint; the mujoco backend"):
        UrdfSystem(path, ground=True)


# Pinocchio's URDF extension: <collision_checking><capsule name=.../> makes that cylinder a capsule
CAPSULE = """<robot name="rod"><link name="rod"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01"
 izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial><collision name="shaft"><geometry><cylinder radius="0.02"
 length="0.3"/></geometry></collision><collision_checking><capsule name="shaft"/></collision_checking></link>
</robot>"""


def test_a_capsule_touches_the_ground_with_its_end_spheres(tmp_path: Path) -> None:
    """A capsule (radius r, half-length h) tilted by angle a about x: the end spheres at
    z0 +- h cos a, each a contact when within the margin, phi = z_end - r (MuJoCo's
    plane-capsule collision, the +h end first); the normal rows are d phi / dt."""
    path = tmp_path / "rod.urdf"
    path.write_text(CAPSULE)
    system = PinocchioUrdfSystem(path, True, True, detection_margin=1.0)
    assert [shape.kind for shape in system._shapes] == ["capsule"]
    r, h, a, z0 = 0.02, 0.15, 0.4, 0.1
    q = np.array([0.0, 0.0, z0, np.cos(a / 2), np.sin(a / 2), 0.0, 0.0])
    contacts = system.contacts(q)
    np.testing.assert_allclose(contacts.phi, [z0 + h * np.cos(a) - r, z0 - h * np.cos(a) - r], rtol=0, atol=1e-12)
    v = np.array([0.1, -0.2, 0.3, 0.7, -0.4, 0.2])  # world linear velocity, body angular velocity
    rates = np.asarray(contacts.J).reshape(2, 3, 6)[:, 0] @ v
    # the ends at c +- h R e_z, R e_z = (0, -sin a, cos a): their z rate vz -+ h sin a wx
    np.testing.assert_allclose(rates, [v[2] - h * np.sin(a) * v[3], v[2] + h * np.sin(a) * v[3]], rtol=0, atol=1e-12)


def test_the_mujoco_backend_keeps_the_urdfs_numbers() -> None:
    """problems/urdf/box.urdf's ``ixx = 0.004166667`` (nine digits) is M's rotational entry to
    double precision on the mujoco backend, not MjSpec.to_xml's six-digit ``0.00416667``; the
    floating base's M is diag(m, m, m, ixx, iyy, izz) at the identity (1e-15: rounding)."""
    box = Path(__file__).resolve().parent.parent / "problems" / "urdf" / "box.urdf"
    system = UrdfSystem(box, True, True)
    M = np.asarray(system.dynamics(np.array([0, 0, 0.05, 1, 0, 0, 0.0]), np.zeros(6)).M)
    np.testing.assert_allclose(M, np.diag([1.0, 1.0, 1.0, 0.004166667, 0.004166667, 0.006666667]), rtol=0, atol=1e-15)


def run_collection(tmp_path: Path, models: str, steps: int) -> list[dict]:
    """``experiments/robots.py --collection example-robot-data`` on ``models``: its rows."""
    import json
    import os
    import subprocess
    import sys

    requires_example_robot_data()
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "experiments" / "robots.py"), "--collection",
                           "example-robot-data", "--models", models, "--steps", str(steps), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((tmp_path / "summary.json").read_text())["rows"]


def test_the_example_robot_data_collection_rows(tmp_path: Path) -> None:
    """A completed row (a double pendulum, with its distance to the mujoco backend's run: the
    same M, bias and contacts, so rounding, 1e-12) and a refusal before step 0 in one line (a
    URDF with no joint), per formulation."""
    import importlib
    import sys

    requires_example_robot_data()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))
    try:
        robot_urdfs = importlib.import_module("robot_urdfs")
    finally:
        sys.path.pop(0)
    rows = [row for model in robot_urdfs.collection_rows(5, 60.0, True, ["double_pendulum_simple", "quadrotor_base"])
            for row in model]
    assert sorted((row["model"].split("/")[-1], row["method"]) for row in rows) == [
        ("double_pendulum_simple.urdf", "ccp/clarabel"), ("double_pendulum_simple.urdf", "sap/newton"),
        ("quadrotor_base.urdf", "ccp/clarabel"), ("quadrotor_base.urdf", "sap/newton")]
    for row in rows:
        if "quadrotor" in row["model"]:
            assert row["status"].startswith("refused: ") and "no degree of freedom" in row["status"]
            assert row["steps"] == 0 and "\n" not in row["status"]
        else:
            assert row["status"] == "completed" and row["steps"] == 5 and row["dist_mujoco"] < 1e-12


@pytest.mark.slow
def test_example_robot_data_robots_complete_100_steps(tmp_path: Path) -> None:
    """Quadrupeds, arms, a humanoid with mimic grippers: 100 steps of sap/newton and ccp/clarabel
    from their standing or default configurations on the pinocchio backend. Where the contacts
    are primitives' or none (a1, the double pendulum, ur5 without a ground: its base is at
    z = 0), within 1e-6 of the mujoco backend's run (observed 1e-12); meshes on the ground (solo12,
    go2) part from it once several hull vertices touch (MuJoCo picks other ones: up to 1e-2)."""
    rows = run_collection(tmp_path, "solo12,a1,go2,ur5_robot,panda,talos_reduced,double_pendulum", 100)
    assert len(rows) == 14
    for row in rows:
        assert row["status"] == "completed", (row["model"], row["status"])
        if row["model"].split("/")[-1] in ("a1.urdf", "ur5_robot.urdf", "double_pendulum.urdf"):
            assert row["dist_mujoco"] < 1e-6, (row["model"], row["dist_mujoco"])
