"""Hydroelastic contact surfaces (contactopt.systems.hydroelastic): the pressure fields' closed
forms, the rows' statics under sap and regularized, the torsional friction of a patch, and the
scene keys' one-line errors (docs/hydroelastic.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

import contactopt as co
from contactopt.core.errors import OptionError, SceneError
from contactopt.systems.hydroelastic.fields import PressureField
from contactopt.systems.hydroelastic.pair import Solid, pair_surface
from contactopt.systems.hydroelastic.records import surface_records
from contactopt.systems.hydroelastic.surface import ContactSurface, plane_surface

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"
E, G, M, MU = 1e6, 9.81, 1.0, 0.5
A = B = C = 0.05  # the cube's half extents


def box_force(delta: float) -> float:
    """Closed form of the cube's field on its bottom face at penetration ``delta``:
    ``(E / c) int min(delta, d_side) dA = (E / c) 4 (a b delta - (a + b) delta^2 / 2 + delta^3 / 3)``
    (the layer-cake integral ``int_0^delta (2a - 2s)(2b - 2s) ds``)."""
    return E / min(A, B, C) * 4.0 * (A * B * delta - (A + B) * delta**2 / 2.0 + delta**3 / 3.0)


def sphere_force(R: float, delta: float) -> float:
    """``int E (1 - |x| / R) dA`` over the disk ``rho <= a`` of the plane at ``h = R - delta``
    from the centre: ``2 pi E (a^2 / 2 - (R^3 - h^3) / (3 R))``, ``a^2 = R^2 - h^2``."""
    h = R - delta
    return 2.0 * math.pi * E * ((R * R - h * h) / 2.0 - (R**3 - h**3) / (3.0 * R))


def level(field: PressureField, height: float) -> ContactSurface:
    surface = plane_surface(field, np.array([0.0, 0.0, height]), np.eye(3), np.array([0.0, 0.0, 1.0]), 0.0)
    assert surface is not None
    return surface


@pytest.mark.parametrize("delta", [1e-3, 5e-3])
def test_sphere_surface_radius_and_force_match_the_field(delta: float) -> None:
    R = 0.05
    surface = level(PressureField("sphere", (R,), E), R - delta)
    a = math.sqrt(R * R - (R - delta) ** 2)
    # the boundary vertices lie on the circle (the sphere's ray exits are exact)
    boundary = np.linalg.norm(surface.vertices[-44:, :2], axis=1)
    assert np.allclose(boundary, a, rtol=1e-12)
    # area radius and force to 1 % (the inscribed 44-gon is 0.34 % short in area; the
    # centroid rule over 8 rings 0.4 % long in force)
    assert math.sqrt(surface.area / math.pi) == pytest.approx(a, rel=1e-2)
    assert surface.normal_force == pytest.approx(sphere_force(R, delta), rel=1e-2)
    assert np.allclose(surface.centre_of_pressure[:2], 0.0, atol=1e-12)


def test_box_cylinder_capsule_surfaces_match_their_fields() -> None:
    delta = 2e-4
    box = level(PressureField("box", (A, B, C), E), C - delta)
    assert box.area == pytest.approx(4 * A * B, rel=1e-12)  # a level face: the square itself
    # uniform E delta / c inside; the rim strip (a side face nearer) is 0.4 % of the force here
    assert box.normal_force == pytest.approx(box_force(delta), rel=1e-2)
    R, L = 0.04, 0.1
    cylinder = level(PressureField("cylinder", (R, L), E), L - delta)  # standing on its cap
    rim = 2 * math.pi * ((R**3 / 2 - R**3 / 3) - (R * (R - delta) ** 2 / 2 - (R - delta) ** 3 / 3))
    closed = E / min(R, L) * (delta * math.pi * (R - delta) ** 2 + rim)
    assert cylinder.normal_force == pytest.approx(closed, rel=1e-2)
    # a capsule lying along x: a stadium 12 times longer than wide; the straight part's field
    # E (R - sqrt(y^2 + h^2)) / R. Its rays follow the fitted ellipse and its rings crowd the rim
    # (surface.spread_rays): 0.55 % long at the default (44, 8) (equal rays: 6.6 %)
    rotation = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # body z -> world x
    capsule = plane_surface(PressureField("capsule", (R, L), E), np.array([0.0, 0.0, R - 1e-3]), rotation,
                            np.array([0.0, 0.0, 1.0]), 0.0)
    assert capsule is not None
    h = R - 1e-3
    w = math.sqrt(R * R - h * h)
    root = math.sqrt(w * w + h * h)
    straight = 2 * L * E / R * (2 * R * w - (w * root + h * h * math.log((w + root) / h)))
    assert capsule.normal_force == pytest.approx(straight + sphere_force(R, 1e-3), rel=1e-2)


def test_four_ray_mesh_is_drakes_four_triangle_box_face() -> None:
    """``patch_resolution = (4, 1)``: a level square face as 4 triangles (centre, corner,
    corner), one point at each centroid, 2a/3 from the centre: the quadrature Drake's box mesh
    gives (its torsional friction is mu m g (2a/3), experiments/hydroelastic.py)."""
    surface = plane_surface(PressureField("box", (A, B, C), E), np.array([0.0, 0.0, C - 1e-4]), np.eye(3),
                            np.array([0.0, 0.0, 1.0]), 0.0, resolution=(4, 1))
    assert surface is not None
    assert np.allclose(surface.areas, A * B, rtol=1e-12)
    assert np.allclose(np.linalg.norm(surface.centroids[:, :2], axis=1), 2 * A / 3, rtol=1e-12)


@pytest.mark.parametrize("formulation, options", [
    ("sap", {}), pytest.param("regularized", {"form": "primal", "cone": "elliptic"}, marks=pytest.mark.slow)])
def test_soft_box_rests_on_the_field_closed_form(formulation: str, options: dict[str, str]) -> None:
    scene = co.load_scene(PROBLEMS / "hydroelastic_box.toml")
    if True:
        trajectory = co.simulate(scene, formulation=formulation, solver="newton", options=options, duration=0.1)
        assert trajectory.completed, formulation
        record = surface_records(scene.system, trajectory)[-1][0]
        # at rest the rows carry the weight: m g to 1e-6 (settled to ~1e-13 m/s after 0.2 s)
        assert record.force[2] == pytest.approx(M * G, rel=1e-6), formulation
        delta = brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)
        assert C - trajectory.q[-1, 2] == pytest.approx(delta, rel=1e-2), formulation  # 0.1 %: the rim
        assert np.allclose(record.centre_of_pressure[:2], trajectory.q[-1, :2], atol=1e-9), formulation
        assert record.area == pytest.approx(4 * A * B, rel=1e-9)


def test_every_compliant_program_holds_the_same_rest() -> None:
    """On a coarse mesh (16 rows) sap and regularized, dual (elliptic and pyramid) and primal,
    clarabel and newton, rest where the rows carry the weight: ``sum k_i delta = m g``, i.e.
    ``delta = m g c / (E A_mesh)`` (every centroid is nearest the bottom face: ``g = E / c``)."""
    import dataclasses

    from contactopt.systems.rigid3d import Rigid3D

    scene = co.load_scene(PROBLEMS / "hydroelastic_box.toml")
    assert isinstance(scene.system, Rigid3D)
    system = Rigid3D(scene.system.bodies, {"mu": MU}, contact_model="hydroelastic", patch_resolution=(8, 2))
    scene = dataclasses.replace(scene, system=system)
    area = system.contact_surfaces(scene.q0)[0].area
    expected = M * G * C / (E * area)
    for formulation, solver, options in (("sap", "clarabel", {}), ("regularized", "clarabel", {"cone": "elliptic"}),
                                         ("regularized", "clarabel", {"cone": "pyramidal"}),
                                         ("regularized", "newton", {"form": "primal", "cone": "pyramidal"})):
        trajectory = co.simulate(scene, formulation=formulation, solver=solver, options=options, duration=0.04)
        # 1e-5: still settling after 40 ms (its 0.8 um start offset down to 1e-10 m); not a model error
        assert C - trajectory.q[-1, 2] == pytest.approx(expected, rel=1e-5), (formulation, options)


def test_soft_box_rests_on_a_rigid_box_table() -> None:
    """The surface against a rigid box is the box's top face inside the soft cube: the same
    square, force and rest penetration as on the ground, while the table's own corner point
    contacts carry both weights."""
    scene = co.load_scene(PROBLEMS / "hydroelastic_table.toml")
    trajectory = co.simulate(scene, duration=0.1)
    assert trajectory.completed
    record = surface_records(scene.system, trajectory)[-1][0]
    assert record.body == "box|table" and record.area == pytest.approx(4 * A * B, rel=1e-9)
    assert record.force[2] == pytest.approx(M * G, rel=1e-6)
    table_top = trajectory.q[-1, 2] + 0.05
    delta = brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)
    assert table_top - (trajectory.q[-1, 9] - C) == pytest.approx(delta, rel=1e-2)
    assert np.allclose(record.centre_of_pressure[:2], trajectory.q[-1, 7:9], atol=1e-9)
    ground = trajectory.steps[-1].impulses[:8, 0].sum() / scene.dt  # the table's corners
    assert ground == pytest.approx(11.0 * G, rel=1e-6)


def test_soft_cylinder_and_capsule_rest_on_their_fields() -> None:
    """A cylinder on its cap (a disk of pressure E min(delta, R - rho) / R) and a capsule on its
    hemispherical end (the sphere's field there): rest penetrations to 1 % of the closed forms;
    the drawing shows them as tubes with their quadrature points."""
    from contactopt.systems.drawings import drawing_of
    from contactopt.systems.rigid3d import Rigid3D, RigidBody

    R, L = 0.04, 0.1
    scene = co.load_scene(PROBLEMS / "hydroelastic_cylinder.toml")
    trajectory = co.simulate(scene, duration=0.1)

    def cylinder_force(d: float) -> float:
        rim = 2 * math.pi * ((R**3 / 2 - R**3 / 3) - (R * (R - d) ** 2 / 2 - (R - d) ** 3 / 3))
        return E / min(R, L) * (d * math.pi * (R - d) ** 2 + rim)

    delta = brentq(lambda d: cylinder_force(d) - M * G, 0.0, 1e-3)
    assert L - trajectory.q[-1, 2] == pytest.approx(delta, rel=1e-2)  # 0.14 %
    capsule = RigidBody(name="pill", shape="capsule", size=np.array([R, L]), mass=M,
                        position=np.array([0.0, 0.0, R + L - 1.8e-3]), orientation=np.array([1.0, 0, 0, 0]),
                        velocity=np.zeros(3), angular_velocity=np.zeros(3), compliance="soft",
                        hydroelastic_modulus=E, hunt_crossley_dissipation=20.0)
    system = Rigid3D([capsule], {"mu": MU}, contact_model="hydroelastic")
    q0, v0 = system.default_state()
    trajectory = co.simulate(co.Scene(system, q0, v0, 1e-3, 0.1), formulation="sap", solver="newton")
    R_sphere = R
    h = lambda d: R_sphere - d  # noqa: E731
    sphere = lambda d: 2 * math.pi * E * ((R * R - h(d) ** 2) / 2 - (R**3 - h(d) ** 3) / (3 * R))  # noqa: E731
    delta = brentq(lambda d: sphere(d) - M * G, 0.0, 1e-2)
    assert R + L - trajectory.q[-1, 2] == pytest.approx(delta, rel=1e-2)  # 0.2 %
    picture = drawing_of(system, trajectory.q[-1])
    assert picture is not None and type(picture.shapes[-1]).__name__ == "Tube"
    assert picture.contacts is not None and len(picture.contacts.points) == system.contacts(trajectory.q[-1]).count


@pytest.mark.parametrize("shape", ["cylinder", "capsule"])
def test_tube_inertia_matches_a_numerical_integral(shape: str) -> None:
    from contactopt.systems.rigid3d_bodies import tube_inertia

    R, L, n = 0.04, 0.1, 60
    field = PressureField(shape, (R, L), E)
    half = np.array([R, R, L + (R if shape == "capsule" else 0.0)])
    axes = [(np.arange(n) + 0.5) / n * 2 * h - h for h in half]
    X, Y, Z = (a.reshape(-1) for a in np.meshgrid(*axes, indexing="ij"))
    inside = field.depth(np.column_stack([X, Y, Z])) >= 0
    x, y, z = X[inside], Y[inside], Z[inside]
    numeric = M * np.array([np.mean(y * y + z * z), np.mean(x * x + z * z), np.mean(x * x + y * y)])
    # midpoint rule over 60^3 cells of a curved body: the boundary cells give up to 0.08 %
    assert tube_inertia(shape, M, R, L) == pytest.approx(numeric, rel=3e-3)


def test_every_pair_with_a_soft_body_gets_a_surface() -> None:
    """Soft boxes, spheres, cylinders and capsules meet each other (their equal-pressure
    surface), rigid boxes (the face inside) and rigid spheres (the sphere inside): every pair is
    taken, none left to point contact (:mod:`contactopt.systems.hydroelastic.pair`)."""
    from contactopt.systems.rigid3d import Rigid3D, RigidBody

    def body(name: str, shape: str, x: float, soft: bool) -> RigidBody:
        size = np.full(3, 0.05) if shape == "box" else np.array([0.05] if shape == "sphere" else [0.05, 0.1])
        return RigidBody(name=name, shape=shape, size=size, mass=1.0, position=np.array([x, 0.0, 0.05]),
                         orientation=np.array([1.0, 0, 0, 0]), velocity=np.zeros(3), angular_velocity=np.zeros(3),
                         compliance="soft" if soft else "rigid", hydroelastic_modulus=E if soft else None)

    for shape in ("box", "sphere", "cylinder", "capsule"):
        for other, soft in (("box", True), ("sphere", True), ("cylinder", True), ("capsule", True),
                            ("box", False), ("sphere", False)):
            system = Rigid3D([body("a", shape, 0.0, True), body("b", other, 0.3, soft)], {"mu": MU},
                             contact_model="hydroelastic")
            setup = system.hydro
            assert len(setup.box_pairs) + len(setup.solid_pairs) == 1, (shape, other, soft)


def solid(shape: str, z: float, modulus: float | None, half: float = A) -> Solid:
    size = (half, half, half) if shape == "box" else (half,)
    field = None if modulus is None else PressureField(shape, size, modulus)
    return Solid(shape, size, np.array([0.0, 0.0, z]), np.eye(3), field)


def test_two_equal_soft_boxes_meet_halfway_at_the_field_closed_form() -> None:
    """Two equal soft cubes face to face, overlapping by delta: by symmetry the equal-pressure
    surface is the square halfway, the pressure E min(delta / 2, d_side) / c (force
    ``box_force(delta / 2)``), and every row's gradient the two in series, ``E / (2 c)``."""
    delta = 2e-4
    surface = pair_surface(solid("box", C - delta / 2, E), solid("box", -C + delta / 2, E), 0, 1, (44, 8))
    assert surface is not None
    assert np.allclose(surface.vertices[:, 2], 0.0, atol=1e-15)  # the plane halfway
    assert surface.normals is not None and np.allclose(surface.normals, [0.0, 0.0, 1.0], atol=1e-12)
    assert surface.area == pytest.approx(4 * A * B, rel=1e-12)
    # 1 %: the centroids miss the rim strip of width delta / 2 (0.2 % of the force here)
    assert surface.normal_force == pytest.approx(box_force(delta / 2), rel=1e-2)
    assert np.allclose(surface.gradients, E / (2 * C), rtol=1e-12)
    # stiffer below: the surface moves towards the softer body's side by the ratio of the gradients
    stiff = pair_surface(solid("box", C - delta / 2, E), solid("box", -C + delta / 2, 3 * E), 0, 1, (44, 8))
    assert stiff is not None
    # p_A = E x / c = 3 E (delta - x) / c on the axis: x = 3 delta / 4 into the upper cube
    assert stiff.vertices[0, 2] == pytest.approx(-delta / 2 + 3 * delta / 4, rel=1e-9)
    # the inner ring's (g_A g_B / (g_A + g_B), 3 E / (4 c)); the outer ring's polygons tilt where the
    # rims' fields bend the surface
    assert np.allclose(stiff.gradients[:44], 3 * E / (4 * C), rtol=1e-12)


def test_soft_spheres_and_a_rigid_sphere_match_their_closed_forms() -> None:
    """Two equal soft balls meet on their bisecting plane (``sphere_force`` at half the
    overlap); a soft ball on a soft box and on a rigid ball: the vertical force against the
    axisymmetric integrals of the fields, computed apart from the mesh (1-D roots and quadrature)."""
    from scipy.integrate import quad

    R, delta = 0.05, 2e-3
    equal = pair_surface(solid("sphere", R - delta / 2, E), solid("sphere", -R + delta / 2, E), 0, 1, (44, 8))
    assert equal is not None
    a = math.sqrt(R * R - (R - delta / 2) ** 2)
    assert np.allclose(np.linalg.norm(equal.vertices[-44:, :2], axis=1), a, rtol=1e-9)
    assert np.allclose(equal.vertices[:, 2], 0.0, atol=1e-12)
    # as the plane's disk: 1 % (the centroid rule over 8 rings is 0.4 % long)
    assert equal.normal_force == pytest.approx(sphere_force(R, delta / 2), rel=1e-2)

    def vertical(surface: ContactSurface) -> float:
        assert surface.normals is not None
        return float(surface.areas * surface.pressures @ surface.normals[:, 2])

    # a ball (E) on a soft cube (2 E, top face z = 0), its centre at H = R - delta: for each radius
    # rho the surface height z solves 2 E (-z) / c = E (1 - |(rho, z - H)| / R); F_z = int p 2 pi rho drho
    H = R - delta
    disk = math.sqrt(R * R - H * H)

    def level(rho: float) -> float:
        z = brentq(lambda z: 2 * E * (-z) / C - E * (1 - math.hypot(rho, z - H) / R), H - math.sqrt(R * R - rho * rho),
                   0.0)
        return 2 * E * (-z) / C

    on_box = pair_surface(solid("sphere", H, E), solid("box", -C, 2 * E), 0, 1, (44, 8))
    assert on_box is not None
    assert np.allclose(np.linalg.norm(on_box.vertices[-44:, :2], axis=1), disk, rtol=1e-9)
    closed = quad(lambda rho: level(rho) * 2 * math.pi * rho, 0.0, disk, epsabs=0, epsrel=1e-10)[0]
    assert vertical(on_box) == pytest.approx(closed, rel=1e-2)  # 0.4 %, as the disk above
    # a soft ball on a rigid ball of radius Rb, centres D apart: the surface is the rigid ball's
    # cap inside, F = int E (1 - dist / R) cos(t) 2 pi Rb^2 sin(t) dt, dist^2 = Rb^2 + D^2 - 2 Rb D cos t
    Rb = 0.03
    D = R + Rb - delta
    on_ball = pair_surface(solid("sphere", D, E), solid("sphere", 0.0, None, Rb), 0, 1, (44, 8))
    assert on_ball is not None
    assert np.allclose(np.linalg.norm(on_ball.vertices, axis=1), Rb, rtol=1e-12)  # on the rigid ball
    top = math.acos((Rb * Rb + D * D - R * R) / (2 * Rb * D))
    closed = quad(lambda t: E * (1 - math.sqrt(Rb * Rb + D * D - 2 * Rb * D * math.cos(t)) / R) * math.cos(t)
                  * 2 * math.pi * Rb * Rb * math.sin(t), 0.0, top, epsabs=0, epsrel=1e-10)[0]
    assert vertical(on_ball) == pytest.approx(closed, rel=1e-2)
    assert np.all(on_ball.gradients > 0)  # g = g_A against a rigid body


def test_soft_cylinders_and_capsules_meet_halfway_at_their_closed_forms() -> None:
    """Two equal soft cylinders end to end and two equal soft capsules side by side, each pair
    overlapping by delta: by symmetry the surface is the plane halfway. The cylinders' is the
    disk with pressure ``E min(delta / 2, R - rho) / min(R, L)``; the capsules' the stadium of
    half width ``w = sqrt(R^2 - c^2)``, ``c = R - delta / 2``, with pressure
    ``E (R - dist) / R``, ``dist`` the distance to the upper capsule's axis segment: integrated
    apart from the mesh (1-D quadrature of the straight part and of the two half disks)."""
    from scipy.integrate import quad

    R, L, delta = 0.05, 0.1, 2e-4
    cylinder = PressureField("cylinder", (R, L), E)
    upper = Solid("cylinder", (R, L), np.array([0.0, 0.0, L - delta / 2]), np.eye(3), cylinder)
    lower = Solid("cylinder", (R, L), np.array([0.0, 0.0, -L + delta / 2]), np.eye(3), cylinder)
    disk = pair_surface(upper, lower, 0, 1, (44, 8))
    assert disk is not None and np.allclose(disk.vertices[:, 2], 0.0, atol=1e-15)
    half = delta / 2
    rim = quad(lambda r: (R - r) * r, R - half, R)[0]
    closed = E / min(R, L) * (math.pi * (R - half) ** 2 * half + 2 * math.pi * rim)
    assert disk.area == pytest.approx(math.pi * R * R, rel=1e-2)  # 44 chords of the circle: 0.34 % short
    assert disk.normal_force == pytest.approx(closed, rel=1e-2)  # 0.14 %
    assert np.allclose(disk.gradients, E / (2 * min(R, L)), rtol=1e-12)  # two equal fields in series
    along_x = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # body z -> world x
    capsule = PressureField("capsule", (R, L), E)
    upper = Solid("capsule", (R, L), np.array([0.0, 0.0, R - delta / 2]), along_x, capsule)
    lower = Solid("capsule", (R, L), np.array([0.0, 0.0, -R + delta / 2]), along_x, capsule)
    stadium = pair_surface(upper, lower, 0, 1, (44, 8))
    assert stadium is not None and np.allclose(stadium.vertices[:, 2], 0.0, atol=1e-15)
    assert np.allclose(stadium.normal, [0.0, 0.0, 1.0], atol=1e-12)
    c = R - delta / 2
    w = math.sqrt(R * R - c * c)
    pressure = lambda r: E * (R - math.hypot(r, c)) / R  # noqa: E731
    closed = (2 * L * quad(pressure, -w, w, epsabs=0, epsrel=1e-12)[0]
              + 2 * math.pi * quad(lambda r: pressure(r) * r, 0.0, w, epsabs=0, epsrel=1e-12)[0])
    # a stadium 23 times longer than wide: 44 rays on its fitted ellipse leave 1.4 % of the area at
    # its rounded ends, where the pressure is least; the force is 0.43 % long
    assert stadium.area == pytest.approx(4 * L * w + math.pi * w * w, rel=2e-2)
    assert stadium.normal_force == pytest.approx(closed, rel=1e-2)
    assert np.abs(np.linalg.norm(stadium.vertices[-44:, 1:], axis=1).max() - w) <= 1e-9  # its rim


# slow (2.6 s, the default suite's budget): the cylinder and capsule pairs' closed forms run by default
@pytest.mark.slow
def test_a_soft_capsule_rests_across_a_soft_box() -> None:
    """A soft capsule lying across a soft cube on the ground, under sap: at rest the
    equal-pressure surface carries the capsule's weight and the ground the weight of both
    (statics, to 1e-6 of the weight), with the patch centred under the capsule."""
    from contactopt.systems.hydroelastic.records import surface_records
    from contactopt.systems.rigid3d import Rigid3D, RigidBody

    R, L = 0.02, 0.08
    cube = RigidBody(name="cube", shape="box", size=np.full(3, A), mass=M, position=np.array([0.0, 0.0, A - 7.4e-5]),
                     orientation=np.array([1.0, 0, 0, 0]), velocity=np.zeros(3), angular_velocity=np.zeros(3),
                     compliance="soft", hydroelastic_modulus=E, hunt_crossley_dissipation=20.0)
    tilt = math.sqrt(0.5)
    pill = RigidBody(name="pill", shape="capsule", size=np.array([R, L]), mass=0.5 * M,
                     position=np.array([0.0, 0.0, 2 * A + R - 2e-4]), orientation=np.array([tilt, 0.0, tilt, 0.0]),
                     velocity=np.zeros(3), angular_velocity=np.zeros(3), compliance="soft",
                     hydroelastic_modulus=E, hunt_crossley_dissipation=20.0)
    system = Rigid3D([cube, pill], {"mu": MU}, contact_model="hydroelastic", patch_resolution=(24, 6))
    q0, v0 = system.default_state()
    trajectory = co.simulate(co.Scene(system, q0, v0, 2e-3, 0.2), formulation="sap", solver="newton")
    assert trajectory.completed
    assert np.abs(trajectory.v[-1]).max() < 1e-5  # at rest
    last = surface_records(system, trajectory)[-1]
    between = [r for r in last if r.body == "cube|pill"]
    ground = [r for r in last if r.body == "cube"]
    assert len(between) == 1 and len(ground) == 1 and len(last) == 2
    # the force on the soft body of the pair (the cube), from the capsule above it
    assert -between[0].force[2] == pytest.approx(0.5 * M * G, rel=1e-6)
    assert ground[0].force[2] == pytest.approx(1.5 * M * G, rel=1e-6)
    assert np.allclose(between[0].centre_of_pressure[:2], 0.0, atol=1e-6)


def test_stacked_soft_boxes_rest_on_the_combined_field() -> None:
    """Two soft cubes stacked on the ground, on a coarse mesh (16 rows a surface): at rest the
    rows carry m g and 2 m g, every row with the gradient in series E / (2 c) between the cubes and
    E / c on the ground, so the overlaps are ``2 m g c / (E A_mesh)`` both (twice the weight
    on the ground, half the gradient between the cubes)."""
    import dataclasses

    from contactopt.systems.rigid3d import Rigid3D

    scene = co.load_scene(PROBLEMS / "hydroelastic_stack.toml")
    assert isinstance(scene.system, Rigid3D)
    system = Rigid3D(scene.system.bodies, {"mu": MU}, contact_model="hydroelastic", patch_resolution=(8, 2))
    ground, between = system.contact_surfaces(scene.q0)
    assert (ground.soft, ground.rigid, between.soft, between.rigid) == (0, -1, 0, 1)
    delta = 2 * M * G * C / (E * ground.area)  # both overlaps (the two meshes' areas are equal)
    assert between.area == pytest.approx(ground.area, rel=1e-12)
    q0 = scene.q0.copy()
    q0[2] = C - 1.01 * delta  # 1 % deeper than the rest, both
    q0[9] = q0[2] + 2 * C - 1.01 * delta
    scene = dataclasses.replace(scene, system=system, q0=q0)
    trajectory = co.simulate(scene, duration=0.05)
    assert trajectory.completed
    q = trajectory.q[-1]
    # 1e-4: settled from its 1 % start to 5e-5 after 50 ms; not a model error
    assert C - q[2] == pytest.approx(delta, rel=1e-4)
    assert q[2] + 2 * C - q[9] == pytest.approx(delta, rel=1e-4)
    records = surface_records(system, trajectory)[-1]
    assert records[1].body == "lower|upper"
    assert records[1].force[2] == pytest.approx(-M * G, rel=1e-4)  # on the lower cube, from the upper
    # 1e-7 m: the cubes still rock by a few 1e-9 rad after the settle, and a tilt theta moves the centre
    # of pressure by a^2 theta / (3 delta), about 1e-8 m here
    assert np.allclose(records[1].centre_of_pressure[:2], q[7:9], atol=1e-7)
    # unequal cubes: the rows between them take Drake's combined dissipation (E_B d_A + E_A d_B) / (E_A + E_B)
    lower, upper = system.bodies
    mixed = Rigid3D([lower, dataclasses.replace(upper, hydroelastic_modulus=3 * E, hunt_crossley_dissipation=10.0)],
                    {"mu": MU}, contact_model="hydroelastic", patch_resolution=(8, 2))
    rows = mixed.contacts(scene.q0)
    assert rows.dissipation is not None
    assert np.allclose(rows.dissipation[:16], 90.0) and np.allclose(rows.dissipation[16:], (3 * 90.0 + 10.0) / 4)


@pytest.mark.slow
def test_stacked_soft_boxes_rest_at_the_closed_form() -> None:
    """The default mesh: the lower cube at ``F(delta_g) = 2 m g``, the cubes' overlap at
    ``F(delta / 2) = m g`` (the equal-pressure surface halfway), both to 1 % (0.2 %: the rim)."""
    scene = co.load_scene(PROBLEMS / "hydroelastic_stack.toml")
    trajectory = co.simulate(scene, duration=0.1)
    assert trajectory.completed
    q = trajectory.q[-1]
    assert C - q[2] == pytest.approx(brentq(lambda d: box_force(d) - 2 * M * G, 0.0, 1e-3), rel=1e-2)
    assert q[2] + 2 * C - q[9] == pytest.approx(2 * brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3), rel=1e-2)
    record = surface_records(scene.system, trajectory)[-1][1]
    assert record.force[2] == pytest.approx(-M * G, rel=1e-6)
    assert record.area == pytest.approx(4 * A * B, rel=1e-9)  # the square halfway, level at rest


def effective_radius(delta: float, n: int = 1200) -> float:
    """``int |r| p dA / int p dA`` over the bottom face, computed apart from the mesh: the exact
    field ``min(delta, d_side)`` on a midpoint grid of n x n cells."""
    x = (np.arange(n) + 0.5) / n * 2 * A - A
    X, Y = np.meshgrid(x, x)
    p = np.minimum(delta, np.minimum(A - np.abs(X), B - np.abs(Y)))
    return float((np.hypot(X, Y) * p).sum() / p.sum())


@pytest.mark.slow
def test_spinning_box_slows_by_the_surface_torsional_friction() -> None:
    """Under the compliant ODE (its friction is Coulomb's, regularized below slip_velocity);
    sap and regularized lift a sliding soft patch instead (docs/hydroelastic.md, "Gliding")."""
    scene = co.load_scene(PROBLEMS / "hydroelastic_spin.toml")
    trajectory = co.simulate(scene, formulation="compliant", duration=0.02,
                             options={"method": "Radau", "slip_velocity": 1e-3})
    assert trajectory.completed
    delta = brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)
    inertia = M * (A * A + B * B) / 3.0
    expected = MU * M * G * effective_radius(delta) / inertia
    t, w = trajectory.t, trajectory.v[:, 5]
    window = t > 0.002  # after the first 2 ms, in which the box settles from its start
    slope = np.polyfit(t[window], w[window], 1)[0]
    # 2 %: the mesh's centroids give r_eff to 0.3 %; the regularized friction is below
    # mu f_n only where |v| < 3 slip_velocity, within 4 mm of the axis (0.1 % of the torque)
    assert -slope == pytest.approx(expected, rel=2e-2)
    record = surface_records(scene.system, trajectory)[10][0]
    # the record's moment about the centre of pressure: the torsional friction, I times the slope
    assert -record.moment[2] == pytest.approx(inertia * expected, rel=2e-2)
    assert abs(trajectory.v[-1, 3:5]).max() < 1e-6  # no tilt


def test_scene_keys_are_checked_in_one_line(tmp_path: Path) -> None:
    base = (PROBLEMS / "hydroelastic_box.toml").read_text()
    cases = {
        'compliance = "soft"': ('compliance = "squishy"', "system.bodies[0].compliance"),
        "hydroelastic_modulus = 1e6": ("hydroelastic_modulus = -1.0", "system.bodies[0].hydroelastic_modulus"),
        'model = "hydroelastic"': ('model = "patch"', "contact.model"),
        "hunt_crossley_dissipation = 90.0": ("hunt_crossley_dissipation = -1.0",
                                             "system.bodies[0].hunt_crossley_dissipation"),
    }
    for old, (new, key) in cases.items():
        path = tmp_path / "scene.toml"
        path.write_text(base.replace(old, new))
        with pytest.raises(SceneError) as error:
            co.load_scene(path)
        assert key in str(error.value) and "\n" not in str(error.value)
    path.write_text(base.replace('model = "hydroelastic"', 'model = "point"'))
    with pytest.raises(SceneError, match="needs \\[contact\\] model"):
        co.load_scene(path)
    path.write_text(base.replace('compliance = "soft"\nhydroelastic_modulus = 1e6\nhunt_crossley_dissipation = 90.0\n',
                                 ""))
    with pytest.raises(SceneError, match="at least one body"):
        co.load_scene(path)
    path.write_text(base.replace('model = "hydroelastic"', 'model = "hydroelastic"\npatch_resolution = [2, 1]'))
    with pytest.raises(SceneError, match="patch_resolution"):
        co.load_scene(path)


def test_rigid_formulations_are_refused_before_step_0() -> None:
    scene = co.load_scene(PROBLEMS / "hydroelastic_box.toml")
    for formulation in ("anitescu", "lcp", "ccp", "gauss", "hybrid"):
        with pytest.raises(OptionError, match="cannot take hydroelastic"):
            co.simulate(scene, formulation=formulation, duration=scene.dt)


@pytest.mark.slow
def test_compliant_ode_holds_the_box_at_the_field_rest() -> None:
    scene = co.load_scene(PROBLEMS / "hydroelastic_box.toml")
    trajectory = co.simulate(scene, formulation="compliant", duration=0.05, options={"method": "Radau"})
    assert trajectory.completed
    delta = brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)
    # Hunt-Crossley about critically damped: settled to 1 % of delta within 50 ms
    assert C - trajectory.q[-1, 2] == pytest.approx(delta, rel=1e-2)


def test_sap_glides_on_the_sliding_branch_of_its_cone() -> None:
    """Why sap lifts a sliding soft surface (docs/hydroelastic.md, "Gliding"): on the sliding
    branch the projection onto its friction cone (in the ``R``-norm) gives each row
    ``gamma_n = (v_hat - v_n + mu |v_t|) / (R_n + mu^2 R_t)``, a spring that sees the gap rate
    along ``n - mu d`` (``d`` the slip direction) instead of ``n``. Solved apart, that linear
    system is sap's first step of the cube sliding at 1 m/s; with the spring along ``n`` alone
    (Coulomb friction beside it) the rows carry the weight and nothing lifts."""
    scene = co.load_scene(PROBLEMS / "hydroelastic_slide.toml")
    system, q, v, h = scene.system, scene.q0, scene.v0, scene.dt
    contacts, dynamics = system.contacts(q), system.dynamics(q, v)
    assert contacts.stiffness is not None and contacts.dissipation is not None
    J = contacts.J.toarray() if hasattr(contacts.J, "toarray") else np.asarray(contacts.J)
    Jn, Jt = J[0::3], np.stack([J[1::3], J[2::3]], axis=1)
    x = -contacts.phi
    tau = contacts.dissipation * x  # sap's dissipation time scale d x
    gain = h * contacts.stiffness * (h + tau)  # 1 / R_n
    v_hat = x / (h + tau)
    v_free = v + h * np.linalg.solve(dynamics.M, dynamics.tau)
    d = np.array([1.0, 0.0])  # the slip stays along +x (checked below)
    dilated = Jn - MU * np.einsum("k,ikn->in", d, Jt)

    def solve(seen: np.ndarray) -> tuple[np.ndarray, float]:
        v_next = np.linalg.solve(dynamics.M + dilated.T @ (gain[:, None] * seen),
                                 dynamics.M @ v_free + dilated.T @ (gain * v_hat))
        return v_next, float((gain * (v_hat - seen @ v_next)).sum())

    trajectory = co.simulate(scene, duration=h)
    coupled, impulse = solve(dilated)
    slip = np.einsum("ikn,n->ik", Jt, coupled)
    assert np.all(slip[:, 0] > 0) and np.allclose(slip[:, 1], 0.0, atol=1e-12)
    # 1e-5: sap's friction regularization R_t (near-rigid, 1e-3 of the Delassus diagonal) is left
    # out of the denominator here, mu^2 R_t / R_n ~ 1e-6
    assert trajectory.steps[0].impulses[:, 0].sum() == pytest.approx(impulse, rel=1e-5)
    np.testing.assert_allclose(trajectory.v[1], coupled, rtol=1e-5, atol=1e-9)
    assert impulse / h > 20 * M * G and coupled[2] > 0.2  # 215 N: launched at 0.205 m/s
    plain, weight = solve(Jn)
    # the weight to 1e-3 (5e-4: the scene starts at the field's rest, 0.1 % deeper than the rows'),
    # and v_z below 1e-5 m/s
    assert weight / h == pytest.approx(M * G, rel=1e-3) and abs(plain[2]) < 1e-5


@pytest.mark.slow
def test_rigid_ball_rests_on_a_soft_box_at_the_field_closed_form() -> None:
    """A rigid ball (radius R, 0.5 kg) on the soft cube: the surface is the ball's cap inside the
    cube, with the cube's pressure E (depth below its top) / c, so the vertical force at an overlap
    delta is ``int_0^a (E / c) (delta - R + sqrt(R^2 - rho^2)) 2 pi rho drho``,
    ``a^2 = R^2 - (R - delta)^2``; the ball rests where that is its weight, to 1 %. Frictionless:
    with mu = 0.5 friction on the cap's tilted rows holds the ball where it started, 5 % deeper,
    while the normal forces exceed its weight by 9 %, and sap's regularized friction lets it creep
    back only at 2.6e-7 m/s (still 5 % deep after 0.15 s)."""
    from scipy.integrate import quad

    from contactopt.systems.rigid3d import Rigid3D, RigidBody

    R, m_ball = 0.03, 0.5

    def force(delta: float) -> float:
        a = math.sqrt(R * R - (R - delta) ** 2)
        return quad(lambda rho: E / C * (delta - R + math.sqrt(R * R - rho * rho)) * 2 * math.pi * rho, 0.0, a,
                    epsabs=0, epsrel=1e-12)[0]

    delta = brentq(lambda d: force(d) - m_ball * G, 1e-7, 1e-2)
    box_delta = brentq(lambda d: box_force(d) - (M + m_ball) * G, 0.0, 1e-3)
    cube = RigidBody(name="cube", shape="box", size=np.full(3, C), mass=M, position=np.array([0, 0, C - box_delta]),
                     orientation=np.array([1.0, 0, 0, 0]), velocity=np.zeros(3), angular_velocity=np.zeros(3),
                     compliance="soft", hydroelastic_modulus=E, hunt_crossley_dissipation=90.0)
    ball = RigidBody(name="ball", shape="sphere", size=np.array([R]), mass=m_ball,
                     position=np.array([0, 0, 2 * C - box_delta + R - 1.05 * delta]),
                     orientation=np.array([1.0, 0, 0, 0]), velocity=np.zeros(3), angular_velocity=np.zeros(3))
    system = Rigid3D([cube, ball], {"mu": 0.0}, contact_model="hydroelastic")
    q0, v0 = system.default_state()
    trajectory = co.simulate(co.Scene(system, q0, v0, 1e-3, 0.15), formulation="sap", solver="newton")
    assert trajectory.completed
    q = trajectory.q[-1]
    overlap = (q[2] + C) - (q[9] - R)
    assert overlap == pytest.approx(delta, rel=1e-2)
    record = surface_records(system, trajectory)[-1][1]
    # 1e-3: the ball still rings by 2e-4 of its weight after 0.15 s (the cube's d = 90 s/m damps it)
    assert record.body == "cube|ball" and -record.force[2] == pytest.approx(m_ball * G, rel=1e-3)


def test_run_writes_the_surfaces_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``contactopt run`` on a hydroelastic scene writes surfaces.csv, one row per surface per
    step with its area, force, centre of pressure and moment, the same numbers as
    :func:`surface_records` of the saved trajectory, and says the last step's surfaces."""
    import csv

    from contactopt.cli import main

    out = tmp_path / "run"
    assert main(["run", str(PROBLEMS / "hydroelastic_box.toml"), "--out", str(out), "--no-plot", "--no-progress",
                 "--duration", "0.01"]) == 0
    assert "contact surfaces at the last step (surfaces.csv): box: 100 cm^2" in capsys.readouterr().out
    with open(out / "surfaces.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    scene = co.load_scene(PROBLEMS / "hydroelastic_box.toml")
    records = surface_records(scene.system, co.Trajectory.load(out / "trajectory.npz"))
    assert len(table) == sum(len(step) for step in records) == 10
    for row, step in zip(table, records, strict=True):
        assert row["body"] == step[0].body and int(row["rows"]) == step[0].rows
        assert float(row["area"]) == step[0].area
        assert [float(row[f"force_{a}"]) for a in "xyz"] == list(step[0].force)
        assert [float(row[f"moment_{a}"]) for a in "xyz"] == list(step[0].moment)
