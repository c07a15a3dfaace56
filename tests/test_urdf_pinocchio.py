"""The ``pinocchio`` URDF backend against the ``mujoco`` one (issue 36, "Must show"): the same
URDF, the same coordinates; M, the bias forces, the ground contacts (phi and Jacobians) at
random states, and one step of every time-stepping formulation.

Tolerances: both backends evaluate the same rigid-body quantities in double precision by
different recursions (Featherstone's CRBA/RNEA in Pinocchio, MuJoCo's composite inertia and
RNE), so they agree to rounding (observed 1e-15 .. 1e-14); 1e-10 for the quantities and 1e-9 for
a step (a program solved to its solver's tolerance from identical inputs: observed <= 4e-14) leave
orders of magnitude of margin while catching any modelling difference (a frame, a sign, a
contact point off by dist/2 changes the rows by ~1e-3). The ``mujoco`` backend's MJCF
(``MjSpec.to_xml``) has six significant digits; its numbers are restored to the URDF's
(:func:`contactopt.systems.mjcf.urdf.restore_precision`): without that, problems/urdf/box.urdf's
``0.004166667`` became ``0.00416667`` (M off by 3e-9), a non-diagonal inertia's principal axes
(M off by 2e-8) and a rotated collision origin (phi off by 4e-9) likewise.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")
pytest.importorskip("pinocchio")

from contactopt.systems.mjcf.urdf import UrdfSystem
from contactopt.systems.urdf_pinocchio import ground
from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

ROOT = Path(__file__).resolve().parent.parent
ARM = ROOT / "problems" / "urdf" / "two_link_arm.urdf"
MARGIN = 1e-8  # the same detection margin for both backends (their default extents differ)
FORMULATIONS = ("gauss", "lcp", "anitescu", "ccp", "regularized", "sap", "coulomb")

BOX = """<robot name="box"><link name="box"><inertial><mass value="1.2"/>
<inertia ixx="0.005" iyy="0.005" izz="0.008" ixy="0" ixz="0" iyz="0"/></inertial>
<collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link></robot>"""

# a floating trunk (box) with two legs: a revolute hip with limits and damping, a continuous
# (unlimited) knee, a prismatic ankle, a sphere foot and a cylinder shin; round inertias
WALKER = """<robot name="walker">
 <link name="trunk"><inertial><mass value="2"/><inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0"
  iyz="0"/></inertial><collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision></link>
 {legs}
</robot>"""
LEG = """
 <link name="thigh_{s}"><inertial><origin xyz="0 0 -0.1"/><mass value="0.5"/><inertia ixx="0.002" iyy="0.002"
  izz="0.0002" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <link name="shin_{s}"><inertial><origin xyz="0 0 -0.1"/><mass value="0.3"/><inertia ixx="0.001" iyy="0.001"
  izz="0.0001" ixy="0" ixz="0" iyz="0"/></inertial><collision><origin xyz="0 0 -0.1"/>
  <geometry><cylinder radius="0.02" length="0.2"/></geometry></collision></link>
 <link name="foot_{s}"><inertial><mass value="0.1"/><inertia ixx="0.0001" iyy="0.0001" izz="0.0001" ixy="0"
  ixz="0" iyz="0"/></inertial><collision><geometry><sphere radius="0.03"/></geometry></collision></link>
 <joint name="hip_{s}" type="revolute"><parent link="trunk"/><child link="thigh_{s}"/>
  <origin xyz="0 {y} -0.05"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="9"/>
  <dynamics damping="0.1"/></joint>
 <joint name="knee_{s}" type="continuous"><parent link="thigh_{s}"/><child link="shin_{s}"/>
  <origin xyz="0 0 -0.2"/><axis xyz="0.6 0.8 0"/></joint>
 <joint name="ankle_{s}" type="prismatic"><parent link="shin_{s}"/><child link="foot_{s}"/>
  <origin xyz="0 0 -0.2"/><axis xyz="0 0 1"/><limit lower="-0.05" upper="0.05" effort="5" velocity="1"/>
  <dynamics friction="0.02"/></joint>"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    return path


def walker(tmp_path: Path) -> Path:
    return write(tmp_path, "walker", WALKER.format(legs=LEG.format(s="l", y=0.1) + LEG.format(s="r", y=-0.1)))


def pair(path: Path, floating: bool) -> tuple[UrdfSystem, PinocchioUrdfSystem]:
    return (UrdfSystem(path, floating, True, detection_margin=MARGIN),
            PinocchioUrdfSystem(path, floating, True, detection_margin=MARGIN))


def random_quaternion(rng: np.random.Generator) -> np.ndarray:
    quat = rng.normal(size=4)
    return quat / np.linalg.norm(quat)


def only_ground_contacts(system: UrdfSystem) -> bool:
    """Whether every MuJoCo contact involves the ground plane (geom 0 is the world's first geom,
    the base's box fused into the world is not): the pinocchio backend detects no others."""
    data = system.data
    ground_geom = system.model.geom("ground").id
    return bool(np.all(np.any(np.asarray(data.contact.geom)[:data.ncon] == ground_geom, axis=1)))


def compare_at(mj: UrdfSystem, pn: PinocchioUrdfSystem, q: np.ndarray, v: np.ndarray) -> int:
    """Assert M, tau, the limit and friction rows and the contacts agree at ``(q, v)``; the
    number of contacts."""
    a, b = mj.dynamics(q, v), pn.dynamics(q, v)
    np.testing.assert_allclose(b.M, np.asarray(a.M), rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.tau, a.tau, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(pn.step_dynamics(b, 0.002).M),
                               np.asarray(mj.step_dynamics(a, 0.002).M), rtol=0, atol=1e-10)
    la, lb = mj.limits(q), pn.limits(q)
    np.testing.assert_allclose(lb.phi, la.phi, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(lb.G, la.G)
    fa, fb = mj.friction_loss(q), pn.friction_loss(q)
    np.testing.assert_array_equal(fb.F, fa.F)
    np.testing.assert_array_equal(fb.bound, fa.bound)
    ca, cb = mj.contacts(q), pn.contacts(q)
    assert cb.phi.size == ca.phi.size
    np.testing.assert_allclose(cb.phi, ca.phi, rtol=0, atol=1e-10)
    np.testing.assert_allclose(cb.J, np.asarray(ca.J), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(cb.mu, ca.mu)
    np.testing.assert_allclose(pn.integrate(q, v, 0.01), mj.integrate(q, v, 0.01), rtol=0, atol=1e-12)
    np.testing.assert_allclose(pn.energy(q, v), mj.energy(q, v), rtol=0, atol=1e-10)
    return int(ca.phi.size)


def test_the_ground_frame_is_mujocos() -> None:
    """``mju_makeFrame`` of the plane's normal: [e_z, e_y, -e_x], read from MuJoCo's contact.frame."""
    mj = UrdfSystem(ROOT / "problems" / "urdf" / "box.urdf", True, True)
    q, _ = mj.default_state()
    mj.contacts(q)
    frames = np.asarray(mj.data.contact.frame)[:mj.data.ncon].reshape(-1, 3, 3)
    assert frames.shape[0] == 4
    for frame in frames:
        np.testing.assert_array_equal(frame, ground.contact_frame(ground.NORMAL))
    np.testing.assert_array_equal(ground.contact_frame(ground.NORMAL), [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])


def test_the_arm_agrees_at_random_states() -> None:
    mj, pn = pair(ARM, False)
    assert pn.q_names == mj.q_names and pn.nq == 2
    rng = np.random.default_rng(0)
    touching = 0
    for _ in range(400):
        q, v = rng.uniform([-2.5, -2.0], [2.5, 2.0]), rng.uniform(-3, 3, 2)
        mj.contacts(q)
        if not only_ground_contacts(mj):  # the links against the base's box: not detected here
            continue
        touching += compare_at(mj, pn, q, v) > 0
    assert touching >= 20  # the cylinders' one-, two- and more-point contacts were compared


def test_a_floating_box_agrees_at_random_states(tmp_path: Path) -> None:
    mj, pn = pair(write(tmp_path, "box", BOX), True)
    assert pn.q_names == mj.q_names and pn.v_names == mj.v_names
    np.testing.assert_allclose(pn.default_state()[0], mj.default_state()[0], rtol=0, atol=1e-12)
    rng = np.random.default_rng(1)
    counts = set()
    for _ in range(100):
        q = np.concatenate([rng.uniform(-0.1, 0.1, 2), rng.uniform(0.0, 0.12, 1), random_quaternion(rng)])
        counts.add(compare_at(mj, pn, q, rng.normal(size=6)))
    assert {0, 1, 2, 3, 4} <= counts


def test_a_floating_walker_agrees_at_random_states(tmp_path: Path) -> None:
    """A branching tree: revolute (limited, damped), continuous, prismatic (limited, dry friction)
    joints under a free base; sphere feet, cylinder shins, a box trunk."""
    mj, pn = pair(walker(tmp_path), True)
    assert pn.q_names == mj.q_names and pn.nq == 13 and pn.nv == 12
    np.testing.assert_allclose(pn.default_state()[0], mj.default_state()[0], rtol=0, atol=1e-12)
    rng = np.random.default_rng(2)
    touching = 0
    for _ in range(100):
        q = np.concatenate([rng.uniform(-0.1, 0.1, 2), rng.uniform(0.2, 0.5, 1), random_quaternion(rng),
                            rng.uniform(-1.2, 1.2, 6)])
        mj.contacts(q)
        if not only_ground_contacts(mj):
            continue
        touching += compare_at(mj, pn, q, rng.normal(size=12)) > 0
    assert touching >= 20


def scene(tmp_path: Path, urdf: Path, backend: str, extra: str, q: np.ndarray, v: np.ndarray) -> co.Scene:
    path = tmp_path / f"{urdf.stem}-{backend}.toml"
    path.write_text(f'[scene]\nname = "x"\ndt = 0.002\nduration = 0.002\n\n[system]\ntype = "urdf"\n'
                    f'file = "{urdf}"\nbackend = "{backend}"\ndetection_margin = {MARGIN}\n{extra}\n\n'
                    f"[initial]\nq = {[float(x) for x in q]}\nv = {[float(x) for x in v]}\n")
    return co.load_scene(path)


def one_step(tmp_path: Path, urdf: Path, extra: str, q: np.ndarray, v: np.ndarray, formulation: str) -> list:
    out = []
    for backend in ("mujoco", "pinocchio"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gauss: friction ignored; the states start in contact
            trajectory = co.simulate(scene(tmp_path, urdf, backend, extra, q, v), formulation=formulation,
                                     max_steps=1)
        assert trajectory.completed
        out.append((trajectory.q[-1], trajectory.v[-1]))
    return out


STATES = {  # contact, moving into the ground (several contacts under the box and the walker)
    "arm": (np.array([1.758, -0.184]), np.array([1.0, -0.5])),
    "box": (np.array([0.01, 0.02, 0.045, 0.9937, 0.0479, 0.0303, 0.0946]), np.array([0.3, -0.2, -0.5, 0.4, 0.2, -0.3])),
}


@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("robot", ["arm", "box"])
def test_one_step_of_every_formulation_agrees(tmp_path: Path, robot: str, formulation: str) -> None:
    q, v = STATES[robot]
    urdf, extra = ((ARM, "ground = true") if robot == "arm" else
                   (write(tmp_path, "box", BOX), "ground = true\nfloating_base = true"))
    q = q if robot == "arm" else np.concatenate([q[:3], q[3:] / np.linalg.norm(q[3:])])
    if robot == "arm" and formulation == "coulomb":  # both refuse the elbow's dry friction, in one line
        for backend in ("mujoco", "pinocchio"):
            with pytest.raises(co.ContactoptError, match="cannot take the dry-friction"):
                co.simulate(scene(tmp_path, urdf, backend, extra, q, v), formulation=formulation, max_steps=1)
        return
    (qa, va), (qb, vb) = one_step(tmp_path, urdf, extra, q, v, formulation)
    assert np.abs(va - v).max() > 0.1  # the step did something: contact and gravity changed v
    np.testing.assert_allclose(qb, qa, rtol=0, atol=1e-9)
    np.testing.assert_allclose(vb, va, rtol=0, atol=1e-9)


@pytest.mark.parametrize("formulation", [f for f in FORMULATIONS if f != "coulomb"])  # coulomb: dry friction
def test_one_step_of_the_walker_agrees(tmp_path: Path, formulation: str) -> None:
    urdf = walker(tmp_path)
    mj = UrdfSystem(urdf, True, True)
    q, v = mj.default_state()
    q[2] -= 0.002
    v = np.random.default_rng(4).normal(size=12) * 0.3
    (qa, va), (qb, vb) = one_step(tmp_path, urdf, "ground = true\nfloating_base = true", q, v, formulation)
    np.testing.assert_allclose(qb, qa, rtol=0, atol=1e-9)
    np.testing.assert_allclose(vb, va, rtol=0, atol=1e-9)


def test_a_missing_collision_mesh_is_refused_in_one_line(tmp_path: Path) -> None:
    """Meshes are carried (tests/test_urdf_collisions.py); a missing one is one line naming it."""
    meshed = write(tmp_path, "meshed", BOX.replace('<box size="0.2 0.2 0.1"/>', '<mesh filename="cube.stl"/>'))
    with pytest.raises(co.SceneError, match=r"mesh 'cube.stl' not found \(looked for: .*cube.stl") as info:
        co.load_scene(meshed, system_options={"backend": "pinocchio"})
    assert "\n" not in str(info.value)


def example_robot_data() -> Path:
    """The folder holding example-robot-data's packages (its pip wheel installs the URDFs under
    ``cmeel.prefix/share``; the wheel has no importable ``example_robot_data`` module)."""
    import importlib.metadata

    try:
        share = Path(str(importlib.metadata.distribution("example-robot-data").locate_file("cmeel.prefix/share")))
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    if not (share / "example-robot-data" / "robots").is_dir():
        pytest.skip("example-robot-data's robots are not where its wheel puts them")
    return share


@pytest.mark.parametrize("robot", ["a1_description/urdf/a1.urdf", "laikago_description/urdf/laikago.urdf"])
def test_an_example_robot_data_quadruped_agrees(tmp_path: Path, robot: str) -> None:
    """A quadruped whose collision geometry is primitives (boxes, cylinders, sphere feet; 12
    revolute joints). M and the bias against MuJoCo compiling the URDF straight from its
    ``MjSpec`` (1e-10: both exact to rounding, observed 1e-15); the ground contacts against the
    ``mujoco`` backend (1e-10, observed 1e-16); five steps of each formulation within 1e-9 of the
    ``mujoco`` backend (observed 3e-12), whose six-digit MJCF (``MjSpec.to_xml``) has its
    numbers restored to the URDF's (:func:`contactopt.systems.mjcf.urdf.restore_precision`;
    without it M differed by 2e-7 and v by 9e-8)."""
    import xml.etree.ElementTree as ET

    import mujoco

    from contactopt.systems.mjcf import compat
    from contactopt.systems.mjcf.urdf import resolve_meshes

    share = example_robot_data()
    urdf = share / "example-robot-data" / "robots" / robot
    pn = PinocchioUrdfSystem(urdf, True, True, package_dirs=[share], detection_margin=MARGIN)
    root = ET.parse(urdf).getroot()
    resolve_meshes(root, urdf, [share])
    spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    spec.body(spec.worldbody.first_body().name).add_freejoint()
    model = spec.compile()
    data = mujoco.MjData(model)
    mj = UrdfSystem(urdf, True, True, package_dirs=[share], detection_margin=MARGIN)
    assert pn.q_names == mj.q_names and pn.nq == 19
    rng = np.random.default_rng(5)
    q0 = mj.default_state()[0]
    touching = 0
    for _ in range(80):
        q, v = q0.copy(), rng.normal(size=18)
        q[3:7] = random_quaternion(rng) if rng.uniform() < 0.3 else q[3:7]
        q[2] -= rng.uniform(0.0, 0.02)
        q[7:] += rng.uniform(-0.4, 0.4, 12)
        data.qpos[:], data.qvel[:] = q, v
        mujoco.mj_forward(model, data)
        b = pn.dynamics(q, v)
        M = compat.sparse_mass_matrix(mujoco, model, data)
        np.testing.assert_allclose(b.M, M.toarray() if hasattr(M, "toarray") else M, rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.tau, -data.qfrc_bias + data.qfrc_passive, rtol=0, atol=1e-10)
        ca = mj.contacts(q)
        if not only_ground_contacts(mj):
            continue
        cb = pn.contacts(q)
        assert cb.phi.size == ca.phi.size
        np.testing.assert_allclose(cb.phi, ca.phi, rtol=0, atol=1e-10)
        np.testing.assert_allclose(cb.J, np.asarray(ca.J), rtol=0, atol=1e-10)
        touching += ca.phi.size > 0
    assert touching >= 10
    extra = f'floating_base = true\nground = true\npackage_dirs = ["{share}"]'
    for formulation in FORMULATIONS:
        states = []
        for backend in ("mujoco", "pinocchio"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trajectory = co.simulate(scene(tmp_path, urdf, backend, extra, q0, np.zeros(18)),
                                         formulation=formulation, duration=0.01)
            assert trajectory.completed
            states.append((trajectory.q, trajectory.v))
        (qa, va), (qb, vb) = states
        assert np.abs(va[-1]).max() > 0.01  # it falls onto its feet
        np.testing.assert_allclose(qb, qa, rtol=0, atol=1e-9)
        np.testing.assert_allclose(vb, va, rtol=0, atol=1e-9)


def residual(system: PinocchioUrdfSystem, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``M(q) a - tau(q, v)``."""
    dynamics = system.dynamics(q, v)
    return np.asarray(dynamics.M) @ a - dynamics.tau


def test_the_analytic_inverse_dynamics_derivatives_equal_central_differences(tmp_path: Path) -> None:
    """``d/dq`` and ``d/dv`` of ``M(q) a - tau(q, v)`` (Pinocchio's RNEA derivatives) against
    central differences along :meth:`integrate`'s tangent, on the arm and the walker (free base,
    continuous and prismatic joints). The differences' error is O(eps^2 |d3|) + O(1e-16 / eps):
    about 1e-9 at eps = 1e-5 for these O(1) quantities; 1e-7 leaves a margin and still catches a
    wrong derivative (errors of O(1)). The walker with its free base (through the free-flyer
    model and the change of coordinates) and welded."""
    rng = np.random.default_rng(6)
    path = walker(tmp_path)
    for system in (PinocchioUrdfSystem(ARM), PinocchioUrdfSystem(path, True), PinocchioUrdfSystem(path, False)):
        for _ in range(3):
            q = system.default_state()[0]
            q = system.integrate(q, rng.normal(size=system.nv), 0.5)
            v, a = rng.normal(size=system.nv), rng.normal(size=system.nv)
            dq, dv = system.inverse_dynamics_derivatives(q, v, a)

            eps = 1e-5
            for k in range(system.nv):
                e = np.zeros(system.nv)
                e[k] = 1.0
                ahead, behind = system.integrate(q, e, eps), system.integrate(q, e, -eps)
                column_q = (residual(system, ahead, v, a) - residual(system, behind, v, a)) / (2 * eps)
                column_v = (residual(system, q, v + eps * e, a) - residual(system, q, v - eps * e, a)) / (2 * eps)
                np.testing.assert_allclose(dq[:, k], column_q, rtol=0, atol=1e-7)
                np.testing.assert_allclose(dv[:, k], column_v, rtol=0, atol=1e-7)


def test_copies_pickles_and_mu_changes(tmp_path: Path) -> None:
    """A pickled copy (process pools, batches) builds the same rows; ``with_parameters(mu=...)``
    changes the contacts' mu and leaves the original's."""
    import pickle

    system = PinocchioUrdfSystem(write(tmp_path, "box", BOX), True, True, ground_friction=0.7)
    q = system.default_state()[0]
    q[2] -= 0.001
    copy = pickle.loads(pickle.dumps(system))
    np.testing.assert_array_equal(copy.contacts(q).J, system.contacts(q).J)
    np.testing.assert_array_equal(system.contacts(q).mu, [0.7] * 4)
    assert system.differentiable_parameters() == ("mu",)
    other = system.with_parameters({"mu": 0.3})
    np.testing.assert_array_equal(other.contacts(q).mu, [0.3] * 4)
    np.testing.assert_array_equal(system.contacts(q).mu, [0.7] * 4)


def test_contactopt_run_takes_the_pinocchio_backend(tmp_path: Path) -> None:
    """`contactopt run robot.urdf --system-option backend=pinocchio`: the scene of the URDF file
    itself (MuJoCo's default 2 ms step), the same run as the TOML scene's."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-m", "contactopt", "run", str(root / "problems" / "urdf" /
                             "two_link_arm.urdf"), "--system-option", "backend=pinocchio", "--duration", "0.02",
                             "--out", str(tmp_path / "run"), "--no-plot", "--no-progress"],
                            capture_output=True, text=True, timeout=300, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    traj = co.Trajectory.load(tmp_path / "run" / "trajectory.npz")
    assert traj.completed and len(traj.steps) == 10 and traj.info["dt"] == 0.002
