"""URDF robots through MuJoCo's URDF compiler (:mod:`contactopt.systems.mjcf.urdf`): the mass matrix
and gravity of a two-link arm equal the closed forms of its URDF inertias, joint limits, damping,
dry friction and effort limits are carried, a floating box rests on the ground with the normal
impulse ``m g h``, ``package://`` meshes resolve through ``package_dirs`` and a missing one is one
line naming it, what MuJoCo's importer drops is refused, and ``contactopt run robot.urdf`` runs."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")
ROOT = Path(__file__).resolve().parent.parent
ARM = ROOT / "problems" / "urdf" / "two_link_arm.urdf"
BOX = ROOT / "problems" / "urdf" / "box.urdf"
#: MuJoCo's URDF compiler: these tests read the compiled model's fields (the default backend is
#: pinocchio where Pinocchio is installed)
MUJOCO = {"backend": "mujoco"}
G = 9.81
# the arm's URDF: link masses, COM distances from their joints, lengths, inertias about the COM (y axis)
M1, M2, LC1, LC2, L1, I1, I2 = 1.0, 0.5, 0.2, 0.15, 0.4, 0.0135, 0.00385


def arm_closed_form(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """M(q) and the gravity generalized force of the planar two-link arm (Spong, Hutchinson &
    Vidyasagar, "Robot Modeling and Control", sec. 7.4.1), links along +z at q = 0, rotating
    about +y, angles relative, gravity along -z."""
    c2 = math.cos(q[1])
    coupling = I2 + M2 * (LC2**2 + L1 * LC2 * c2)
    M = np.array([[I1 + I2 + M1 * LC1**2 + M2 * (L1**2 + LC2**2 + 2 * L1 * LC2 * c2), coupling],
                  [coupling, I2 + M2 * LC2**2]])
    # heights of the COMs: z1 = lc1 cos q1, z2 = l1 cos q1 + lc2 cos(q1 + q2); tau_g = -dU/dq
    s1, s12 = math.sin(q[0]), math.sin(q[0] + q[1])
    tau_g = np.array([G * (M1 * LC1 * s1 + M2 * (L1 * s1 + LC2 * s12)), G * M2 * LC2 * s12])
    return M, tau_g


def test_arm_mass_matrix_and_gravity_equal_the_closed_form() -> None:
    system = co.load_scene(ARM).system
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, 2)
        dynamics = system.dynamics(q, np.zeros(2))
        M, tau_g = arm_closed_form(q)
        np.testing.assert_allclose(np.asarray(dynamics.M), M, rtol=0, atol=1e-12)
        # at v = 0 with no control, tau is gravity alone (damping and Coriolis vanish with v)
        np.testing.assert_allclose(dynamics.tau, tau_g, rtol=0, atol=1e-10)


def test_joint_limits_damping_friction_and_effort_are_carried() -> None:
    model = co.load_scene(ARM, system_options=MUJOCO).system.model
    np.testing.assert_array_equal(model.jnt_range, [[-2.5, 2.5], [-2.0, 2.0]])
    np.testing.assert_array_equal(model.dof_damping, [0.05, 0.02])
    np.testing.assert_array_equal(model.dof_frictionloss, [0.0, 0.01])
    np.testing.assert_array_equal(model.jnt_actfrcrange, [[-20.0, 20.0], [-10.0, 10.0]])
    assert model.nbody == 3  # the base is welded to the world (fixed base): world, upper, fore


def test_a_floating_box_rests_on_the_ground_with_m_g_h() -> None:
    scene = co.load_scene(BOX, system_options={"floating_base": True, "ground": True})
    assert scene.system.nq == 7 and scene.system.nv == 6
    assert scene.q0[2] == pytest.approx(0.05, abs=1e-12)  # raised by half its height: standing on z = 0
    traj = co.simulate(scene, formulation="ccp", solver="clarabel", duration=0.1)
    assert traj.completed
    normal = traj.impulses()[:, :, 0].sum(axis=1)
    np.testing.assert_allclose(normal, 1.0 * G * scene.dt, rtol=1e-6)  # every step carries the weight
    assert abs(traj.q[-1, 2] - 0.05) < 1e-6
    # copies (a batch's worlds, process pools) compile the URDF again with its settings
    V0 = np.zeros((2, 6))
    V0[1, 0] = 0.5  # world 1 slides
    batch = co.simulate_batch(scene, v0=V0, formulation="ccp", solver="clarabel", duration=0.02)
    np.testing.assert_allclose(batch.q[0], traj.q[:batch.q.shape[1]], rtol=0, atol=1e-12)
    assert batch.q[1, -1, 0] > 0.004  # 0.5 m/s less mu g t over 0.02 s: about 0.0048 m


def cube_stl(size: float) -> bytes:
    """A binary STL cube of edge ``size`` centred at the origin (12 triangles; MuJoCo reads binary STL)."""
    h = size / 2
    corners = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)], dtype=np.float32)
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
             (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    out = bytearray(b"cube".ljust(80, b" ")) + struct.pack("<I", len(faces))
    for face in faces:
        a, b, c = corners[list(face)]
        out += struct.pack("<12fH", *np.cross(b - a, c - a), *a, *b, *c, 0)
    return bytes(out)


MESH_URDF = """<robot name="meshed">
  <link name="block"><inertial><mass value="1"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0"
    iyz="0"/></inertial><collision><geometry><mesh filename="{name}"/></geometry></collision></link>
</robot>"""


def test_package_meshes_resolve_through_package_dirs_and_a_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkgs" / "mypkg" / "meshes").mkdir(parents=True)
    (tmp_path / "pkgs" / "mypkg" / "meshes" / "cube.stl").write_bytes(cube_stl(0.1))
    urdf = tmp_path / "robot" / "meshed.urdf"
    urdf.parent.mkdir()
    urdf.write_text(MESH_URDF.format(name="package://mypkg/meshes/cube.stl"))
    scene = co.load_scene(urdf, system_options={"floating_base": True, "package_dirs": str(tmp_path / "pkgs"),
                                                **MUJOCO})
    model = scene.system.model
    assert model.nmesh == 1
    # the mesh's bounding box is the cube's (MuJoCo centres a mesh at its own centre of mass)
    np.testing.assert_allclose(model.geom_aabb[0, 3:], [0.05, 0.05, 0.05], rtol=1e-7)  # STL: float32
    with pytest.raises(co.SceneError, match=r"mesh 'package://mypkg/meshes/cube.stl' not found") as error:
        co.load_scene(urdf, system_options={"floating_base": True, "package_dirs": str(tmp_path)})
    assert str(tmp_path / "mypkg" / "meshes" / "cube.stl") in str(error.value) and "\n" not in str(error.value)
    urdf.write_text(MESH_URDF.format(name="meshes/none.stl"))  # relative: next to the URDF
    with pytest.raises(co.SceneError, match=r"mesh 'meshes/none.stl' not found .*robot/meshes/none.stl"):
        co.load_scene(urdf)


@pytest.mark.parametrize(("change", "match"), [
    (lambda text: text.replace('type="revolute"', 'type="floating"', 1), r"joint 'shoulder' is 'floating'"),
    (lambda text: text.replace('<dynamics damping="0.02" friction="0.01"/>',
                               '<mimic joint="shoulder"/>'), r"joint 'elbow' mimics another joint"),
    (lambda text: text.replace("<robot", "<mujoco", 1).replace("</robot>", "</mujoco>"), r"not a URDF file"),
    (lambda text: text[:200], r"cannot read .* as URDF"),
])
def test_what_the_importer_drops_is_refused_in_one_line(tmp_path: Path, change: object, match: str) -> None:
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(change(ARM.read_text()))  # type: ignore[operator]
    with pytest.raises(co.SceneError, match=match) as error:
        co.load_scene(urdf, system_options=MUJOCO)  # MuJoCo's importer (the pinocchio backend maps <mimic>)
    assert "\n" not in str(error.value)


def scene_with_backend(tmp_path: Path, backend: str) -> Path:
    path = tmp_path / f"arm-{backend}.toml"
    path.write_text(f'[scene]\nname = "arm"\ndt = 0.002\nduration = 0.002\n\n[system]\ntype = "urdf"\n'
                    f'file = "{ARM}"\nbackend = "{backend}"\n\n[initial]\nq = [0.3, -0.2]\nv = [0.0, 0.0]\n')
    return path


def test_backend_and_flags_are_checked(tmp_path: Path) -> None:
    try:  # the pinocchio backend is its own system (tests/test_urdf_pinocchio.py), or names its package
        import pinocchio  # noqa: F401
    except ImportError:
        with pytest.raises(co.SceneError, match=r"'pinocchio' needs the pin package"):
            co.load_scene(scene_with_backend(tmp_path, "pinocchio"))
    else:
        assert "Pinocchio" in co.load_scene(scene_with_backend(tmp_path, "pinocchio")).system.describe()
    with pytest.raises(co.SceneError, match=r"system.backend: one of 'mujoco', 'pinocchio', got 'drake'"):
        co.load_scene(ARM, system_options={"backend": "drake"})
    with pytest.raises(co.SceneError, match=r"system.ground: true or false, got 'maybe'"):
        co.load_scene(ARM, system_options={"ground": "maybe"})
    scene_file = tmp_path / "scene.toml"  # a TOML scene naming the URDF, relative to the scene
    (tmp_path / "arm.urdf").write_text(ARM.read_text())
    scene_file.write_text('[scene]\nname = "arm"\ndt = 0.002\nduration = 0.01\nformulation = "sap"\n'
                          'solver = "newton"\n\n[system]\ntype = "urdf"\nfile = "arm.urdf"\nbackend = "mujoco"\n'
                          'ground = true\n\n'
                          '[initial]\nq = [0.3, -0.2]\nv = [0.0, 0.0]\n')
    scene = co.load_scene(scene_file)
    assert scene.system.type_name == "urdf" and scene.system.model.ngeom == 4  # base, two links, the ground
    assert co.simulate(scene).completed


def test_contactopt_run_takes_a_urdf(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "contactopt", "run", str(ARM), "--duration", "0.02",
                             "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "two_link_arm" in result.stdout and (tmp_path / "run").is_dir()


def test_the_default_backend_is_pinocchio_and_mujoco_only_methods_name_the_switch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``backend``, a URDF runs on pinocchio where Pinocchio is installed; what needs
    MuJoCo's model (the ``mujoco`` method, ``regularized -o params=model``) is refused before
    step 0 in one line naming ``backend=mujoco``; without Pinocchio the mujoco backend runs,
    with a warning naming the install."""
    import importlib.util

    from contactopt.systems.mjcf.urdf import UrdfBackendWarning

    if importlib.util.find_spec("pinocchio") is not None:
        scene = co.load_scene(ARM)
        assert "Pinocchio" in scene.system.describe()
        for formulation, options in (("mujoco", {}), ("regularized", {"params": "model"})):
            with pytest.raises(co.errors.ContactoptError, match=r"--system-option backend=mujoco") as error:
                co.simulate(scene, formulation=formulation, solver="clarabel", options=options, duration=0.004,
                            on_failure="raise")
            assert "\n" not in str(error.value)
        assert co.simulate(co.load_scene(ARM, system_options=MUJOCO), formulation="mujoco", duration=0.004).completed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = co.compare(scene, formulations=["mujoco", "sap"], solvers=["newton"], duration=0.004,
                               executor="serial").set_index("formulation")
        assert "backend=mujoco" in table.loc["mujoco", "error"]  # the row kept, its reason shown
        assert table.loc["sap", "status"] == "completed"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pinocchio" else real(name, *a))
    with pytest.warns(UrdfBackendWarning, match=r"pip install contactopt\[urdf\]"):
        scene = co.load_scene(ARM)
    assert "MuJoCo" in scene.system.describe()
