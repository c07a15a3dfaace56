"""rigid3d contacts between bodies (box-box, box-sphere through MuJoCo's narrow phase; sphere-
sphere analytic), the ground plane of any orientation, and the initial-penetration warning of
every run (contactopt.integrators.initial_penetration), against numbers the physics fixes.

Tolerances:
* closed-form geometry (phi, normals, points): MuJoCo's box routines are exact in double
  precision up to a few ulps of the sizes (0.1 m): 1e-9;
* rows against finite differences of the material points' velocities: O(eps^2) = 1e-10;
* a stack that starts at rest stays there: each step's program enforces phi' >= 0 on the
  4-8 face points with the bodies at rest, so the only motion is the solvers' residual
  (Clarabel 1e-8 relative, Lemke exact pivoting): 1e-6 m and 1e-6 m/s over 1 s;
* the slide down the incline: semi-implicit Euler integrates a constant acceleration exactly
  in velocity (v_k = k h a), so the fitted slope of v(t) equals a up to the solvers'
  tolerance; 1e-2 relative leaves room for the first steps' settling on the plane.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import InitialPenetrationWarning, OptionError, SceneError
from contactopt.systems import Rigid3D
from contactopt.systems.geometry import quat_to_matrix, tangent_basis

ROOT = Path(__file__).resolve().parent.parent
G = 9.81
needs_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None,
                                  reason="box pairs and MJCF scenes need mujoco")


def _body(name: str, shape: str, position: list[float], size: list[float] | None = None,
          orientation: list[float] | None = None, mass: float = 1.0) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "shape": shape, "mass": mass, "position": position,
                            "size": size or ([0.1, 0.1, 0.1] if shape == "box" else [0.1])}
    if orientation is not None:
        body["orientation"] = orientation
    return body


def _quat_y(angle: float) -> list[float]:
    return [math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0]


# ------------------------------------------------------------------ geometry against closed forms

@needs_mujoco
@pytest.mark.parametrize("sphere_first", [False, True], ids=["box-sphere", "sphere-box"])
def test_box_sphere_phi_normal_and_point_against_closed_forms(sphere_first: bool) -> None:
    """Box (half extents 0.2, 0.1, 0.15) turned 0.4 rad about y, collision margin 0.1 m; a
    sphere (r = 0.05) beside a face (closest point on the face: phi = d - r, n = the face normal), beside an edge
    (phi = |(dx, dy)| - r, n along (dx, dy) in the box frame) and penetrating the face."""
    R = quat_to_matrix(np.array(_quat_y(0.4)))
    half, r = np.array([0.2, 0.1, 0.15]), 0.05
    cases = [(np.array([0.2 + 0.08, 0.03, -0.05]), 0.08 - r, np.array([1.0, 0.0, 0.0])),
             (np.array([0.2 + 0.03, 0.1 + 0.04, 0.02]), 0.05 - r, np.array([0.6, 0.8, 0.0])),
             (np.array([0.02, 0.1 + 0.02, 0.0]), 0.02 - r, np.array([0.0, 1.0, 0.0]))]
    for local, phi, local_normal in cases:
        box = _body("box", "box", [0.0, 0.0, 1.0], half.tolist(), _quat_y(0.4))
        ball = _body("ball", "sphere", (np.array([0.0, 0.0, 1.0]) + R @ local).tolist(), [r])
        system = Rigid3D.from_config({"bodies": [ball, box] if sphere_first else [box, ball], "ground": False,
                                      "collision_margin": 0.1}, {"mu": 0.5})
        q, _ = system.default_state()
        contacts = system.contacts(q)
        names = system.contact_names(q)
        assert names == (["ball|box[0]"] if sphere_first else ["box|ball[0]"])
        assert contacts.phi[0] == pytest.approx(phi, abs=1e-9)
        outward = R @ local_normal  # from the box to the sphere
        normal = -outward if sphere_first else outward  # rows act on B minus A: n from A to B
        J = contacts.J_dense
        np.testing.assert_allclose(J[0, 6:9], normal, atol=1e-9)  # B, the second body: sign +1
        np.testing.assert_allclose(system.contact_points(q)[0],
                                   np.array(ball["position"]) - outward * (r + phi / 2), atol=1e-9)


@needs_mujoco
def test_sphere_pair_and_tilted_plane_against_closed_forms() -> None:
    """Sphere-sphere: phi = |c_B - c_A| - r_A - r_B, n from A to B; spheres and box corners on
    the plane n . (p - p0) = 0 with n = (-sin 0.3, 0, cos 0.3), p0 = (0, 0, -0.2):
    phi = n . (c - p0) - r and n . (corner - p0), frame [n; tangent_basis(n)]."""
    normal = np.array([-math.sin(0.3), 0.0, math.cos(0.3)])
    p0 = np.array([0.0, 0.0, -0.2])
    bodies = [_body("a", "sphere", [0.1, 0.2, 0.3], [0.1]), _body("b", "sphere", [0.25, 0.1, 0.55], [0.15]),
              _body("box", "box", [2.0, 0.0, 0.5], [0.1, 0.2, 0.3], [0.9, 0.1, 0.3, 0.3])]
    system = Rigid3D.from_config({"bodies": bodies, "ground_normal": (3 * normal).tolist(),
                                  "ground_point": p0.tolist()}, {"mu": 0.5})
    q, _ = system.default_state()
    contacts, names = system.contacts(q), system.contact_names(q)
    assert names[:2] == ["a.ground", "b.ground"] and names[2:10] == [n for n in names if ".corner" in n]
    assert names[10:] == ["a|b"]  # the box is 1.7 m away: beyond every pair margin
    frame = np.array([normal, *tangent_basis(normal)])
    for k, (centre, radius) in enumerate(((np.array([0.1, 0.2, 0.3]), 0.1), (np.array([0.25, 0.1, 0.55]), 0.15))):
        assert contacts.phi[k] == pytest.approx(normal @ (centre - p0) - radius, abs=1e-14)
        np.testing.assert_allclose(contacts.J_dense[3 * k:3 * k + 3, 6 * k:6 * k + 3], frame, atol=1e-15)
    corners = system.contact_points(q)[2:10]
    np.testing.assert_allclose(contacts.phi[2:10], (corners - p0) @ normal, atol=1e-14)
    gap = np.array([0.15, -0.1, 0.25])
    assert contacts.phi[10] == pytest.approx(np.linalg.norm(gap) - 0.25, abs=1e-14)
    np.testing.assert_allclose(contacts.J_dense[30, 6:9], gap / np.linalg.norm(gap), atol=1e-14)


@needs_mujoco
def test_box_box_contacts_are_material_point_velocities() -> None:
    """Two boxes 1 mm apart, the upper one offset and turned: 4 to 8 face points, phi = 1 mm,
    n = +z; each row set [n, t1, t2] v is the frame applied to v_B(p) - v_A(p) (central
    differences of the material points, O(eps^2))."""
    top_quat = [math.cos(0.15), 0.0, 0.0, math.sin(0.15)]
    bodies = [_body("low", "box", [0.0, 0.0, 0.1]), _body("up", "box", [0.03, -0.02, 0.301], None, top_quat)]
    system = Rigid3D.from_config({"bodies": bodies}, {"mu": 0.5})
    q, _ = system.default_state()
    names = system.contact_names(q)
    pair = [i for i, name in enumerate(names) if name.startswith("low|up[")]
    assert 4 <= len(pair) <= 8 and pair == list(range(16, 16 + len(pair)))
    contacts = system.contacts(q)
    np.testing.assert_allclose(contacts.phi[pair], 1e-3, atol=1e-9)
    rng = np.random.default_rng(0)
    v = rng.normal(size=system.nv)
    points, eps = system.contact_points(q), 1e-6

    def material(body: int, point: np.ndarray, sign: float) -> np.ndarray:
        q2 = system.integrate(q, sign * v, eps)
        R1, R2 = (quat_to_matrix(x[7 * body + 3:7 * body + 7]) for x in (q, q2))
        return q2[7 * body:7 * body + 3] + R2 @ (R1.T @ (point - q[7 * body:7 * body + 3]))

    for c in pair:
        rows = contacts.J_dense[3 * c:3 * c + 3]
        np.testing.assert_allclose(rows[0, 6:9], [0.0, 0.0, 1.0], atol=1e-12)
        relative = [(material(1, points[c], s) - material(0, points[c], s)) for s in (1.0, -1.0)]
        np.testing.assert_allclose(rows @ v, rows[:, 6:9] @ ((relative[0] - relative[1]) / (2 * eps)), atol=1e-8)


# ------------------------------------------------------------------ dynamics

@needs_mujoco
@pytest.mark.parametrize(("formulation", "solver"), [
    ("anitescu", "clarabel"), pytest.param("lcp", "lemke", marks=pytest.mark.slow), ("ccp", "clarabel")])
def test_stacked_boxes_rest(formulation: str, solver: str) -> None:
    """problems/box_stack.toml (the top cube offset and turned 15 degrees): over 1 s at
    dt = 1e-2 the top cube stays at z = 0.3 and both stay at rest."""
    scene = co.load_scene(ROOT / "problems" / "box_stack.toml")
    assert sum(name.startswith("bottom|top[") for name in scene.system.contact_names(scene.q0)) >= 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitialPenetrationWarning)
        traj = co.simulate(scene, formulation, solver, dt=1e-2, duration=1.0)
    assert traj.completed
    np.testing.assert_allclose(traj.q[:, [2, 9]], [[0.1, 0.3]] * traj.q.shape[0], atol=1e-6)
    np.testing.assert_allclose(traj.q[-1, [7, 8]], [0.03, 0.02], atol=1e-6)
    assert np.abs(traj.v).max() < 1e-6


def _incline(tmp_path: Path, theta: float, mu: float) -> co.Scene:
    normal = [-math.sin(theta), 0.0, math.cos(theta)]
    centre = (0.1 * np.array(normal)).tolist()
    text = f"""[scene]
name = "incline"
dt = 2e-3
duration = 0.3
formulation = "anitescu"
solver = "clarabel"

[system]
type = "rigid3d"
ground_normal = {normal}

[[system.bodies]]
name = "box"
shape = "box"
size = [0.1, 0.1, 0.1]
mass = 1.0
position = {centre}
orientation = {_quat_y(-theta)}

[contact]
mu = {mu}
"""
    path = tmp_path / "incline.toml"
    path.write_text(text)
    return co.load_scene(path)


@pytest.mark.parametrize(("formulation", "solver"), [("anitescu", "clarabel"), ("lcp", "lemke")])
def test_box_on_incline_sticks_below_and_slides_above_the_friction_angle(tmp_path: Path, formulation: str,
                                                                        solver: str) -> None:
    """mu = 0.5: at 20 degrees (tan = 0.36 < mu) the box stays put; at 35 degrees (tan = 0.70)
    it slides with a = g (sin - mu cos) = 1.609 m/s^2, fitted from the velocity along the slope."""
    stuck = co.simulate(_incline(tmp_path, math.radians(20), 0.5), formulation, solver)
    assert stuck.completed and np.abs(stuck.q[-1, :3] - stuck.q[0, :3]).max() < 1e-6
    theta = math.radians(35)
    slide = co.simulate(_incline(tmp_path, theta, 0.5), formulation, solver)
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    speed = slide.v[:, :3] @ downhill
    fitted = np.polyfit(slide.t[5:], speed[5:], 1)[0]
    expected = G * (math.sin(theta) - 0.5 * math.cos(theta))
    assert fitted == pytest.approx(expected, rel=1e-2)
    assert np.abs(slide.v[:, 1]).max() < 1e-9  # no sideways drift


def test_sphere_rolls_down_the_tilted_plane_at_five_sevenths_g_sin_theta() -> None:
    """A solid sphere rolling without slipping (mu = 0.5 > 2/7 tan 20 deg) on the plane tilted
    20 degrees accelerates at a = 5/7 g sin(theta) (I = 2/5 m r^2); sticking contact makes the
    step's answer exact up to the solver's tolerance: 1e-6 relative."""
    theta = math.radians(20)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    system = Rigid3D.from_config({"ground_normal": normal.tolist(),
                                  "bodies": [_body("ball", "sphere", (0.1 * normal).tolist())]}, {"mu": 0.5})
    q0, v0 = system.default_state()
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    scene = scene.__class__(**{**scene.__dict__, "system": system, "q0": q0, "v0": v0, "name": "roll"})
    traj = co.simulate(scene, "anitescu", "clarabel", dt=2e-3, duration=0.2)
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    fitted = np.polyfit(traj.t, traj.v[:, :3] @ downhill, 1)[0]
    assert fitted == pytest.approx(5 / 7 * G * math.sin(theta), rel=1e-6)
    assert np.abs(traj.q[:, :3] @ normal - 0.1).max() < 1e-9  # it stays on the plane


# ------------------------------------------------------------------ initial penetration

def test_box_under_the_ground_warns_once_naming_it_and_the_depth() -> None:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    q0 = scene.q0.copy()
    q0[2] -= 1.0  # every corner under the ground, the lowest four at z = -1
    with pytest.warns(InitialPenetrationWarning) as caught:
        co.simulate(scene.__class__(**{**scene.__dict__, "q0": q0}), duration=2e-3)
    ours = [w for w in caught if issubclass(w.category, InitialPenetrationWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert "\n" not in message and "box.corner(" in message and "1 m deep" in message and "7 other" in message


@needs_mujoco
def test_mjcf_scene_that_starts_penetrating_warns() -> None:
    scene = co.load_scene(ROOT / "problems" / "mjcf" / "box_plane.xml")
    q0 = scene.q0.copy()
    q0[2] = 0.05  # the 0.1 m half-size box 5 cm into the floor
    with pytest.warns(InitialPenetrationWarning, match=r"'floor\|box' is 0.05 m deep"):
        co.simulate(scene.__class__(**{**scene.__dict__, "q0": q0}), duration=2e-3)


@needs_mujoco
def test_scenes_at_rest_do_not_warn_and_the_tolerance_is_an_option() -> None:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitialPenetrationWarning)
        co.simulate(scene, duration=2e-3)
        co.simulate(co.load_scene(ROOT / "problems" / "mjcf" / "box_plane.xml"), duration=2e-3)
        q0 = scene.q0.copy()
        q0[2] -= 0.01
        co.simulate(scene.__class__(**{**scene.__dict__, "q0": q0}), duration=2e-3, penetration_tolerance=0.02)
    with pytest.raises(OptionError, match="penetration_tolerance"):
        co.simulate(scene, duration=2e-3, penetration_tolerance=-1.0)


# ------------------------------------------------------------------ refusals

def test_box_pair_without_mujoco_is_one_line_naming_the_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    with pytest.raises(SceneError) as info:
        co.load_scene(ROOT / "problems" / "box_stack.toml")
    message = str(info.value)
    assert "\n" not in message and "'bottom'" in message and "'top'" in message and "pip install" in message
    co.load_scene(ROOT / "problems" / "box_incline.toml")  # one box on a plane: analytic, no MuJoCo


@pytest.mark.parametrize(("value", "fragment"), [("[0.0, 0.0, 0.0]", "has no direction"),
                                                 ("[nan, 0.0, 1.0]", "finite"),
                                                 ("[0.0, 1.0]", "expected 3 values")])
def test_malformed_ground_normal_is_one_line(tmp_path: Path, value: str, fragment: str) -> None:
    text = (ROOT / "problems" / "box_incline.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text.replace("ground_normal = [-0.49999999999999994, 0.0, 0.8660254037844387]",
                                 f"ground_normal = {value}"))
    with pytest.raises(SceneError, match=r"system\.ground_normal") as info:
        co.load_scene(path)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@needs_mujoco
def test_a_system_with_box_pairs_pickles_for_process_pools() -> None:
    """The collider's MuJoCo model is rebuilt on unpickling (compare's process pool, Dask)."""
    import pickle

    scene = co.load_scene(ROOT / "problems" / "box_stack.toml")
    copy = pickle.loads(pickle.dumps(scene))
    np.testing.assert_array_equal(copy.system.contacts(copy.q0).J_dense, scene.system.contacts(scene.q0).J_dense)
    assert copy.system.contact_names(copy.q0) == scene.system.contact_names(scene.q0)
