"""Issue 10: the fast pipeline's pieces against independent answers: vectorized rigid3d
contacts (documented order, rows = finite differences of contact points), sparse core
types, OSQP workspace reuse against fresh workspaces."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import ShapeError
from contactopt.model.step import Contacts, Dynamics

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _spheres_and_boxes(rng: np.random.Generator, count: int, pair_margin: float = np.inf,
                       sparse: bool | None = None) -> Any:
    bodies = []
    for i in range(count):
        quat = rng.normal(size=4)
        body: dict[str, Any] = {"name": f"b{i}", "shape": "box" if i % 3 == 0 else "sphere",
                                "mass": float(rng.uniform(0.5, 2.0)),
                                "position": rng.uniform(-0.5, 0.5, size=3).tolist(),
                                "orientation": (quat / np.linalg.norm(quat)).tolist()}
        body["size"] = rng.uniform(0.05, 0.2, size=3).tolist() if i % 3 == 0 else [float(rng.uniform(0.05, 0.3))]
        bodies.append(co.systems.rigid3d_bodies.parse_body(body, f"b{i}", i))
    # box_pairs off: the analytic kernels (box pairs: tests/test_rigid3d_collision.py)
    return co.systems.Rigid3D(bodies, {"mu": 0.3}, pair_margin=pair_margin, sparse=sparse, box_pairs=False)


def test_vectorized_contacts_follow_the_documented_order_and_rows_are_point_velocities() -> None:
    """Order: per body, box corners in itertools.product order or the sphere's lowest point,
    then sphere pairs (A before B). Each row set [n, t1, t2] times v equals the frame
    applied to the relative velocity of the contact point's material points, by central
    differences of the points moved with the bodies (FD error O(eps^2) ~ 1e-10)."""
    rng = np.random.default_rng(7)
    system = _spheres_and_boxes(rng, 7, sparse=True)
    q, _ = system.default_state()
    v = rng.normal(size=system.nv)
    contacts = system.contacts(q)
    assert sp.issparse(contacts.J)
    J = contacts.J_dense
    # the dense assembly (small systems) holds the same numbers
    dense = co.systems.Rigid3D(system.bodies, {"mu": 0.3}, sparse=False, box_pairs=False)
    assert not dense.contacts(q).is_sparse and not dense.dynamics(q, v).is_sparse
    np.testing.assert_array_equal(dense.contacts(q).J, J)
    np.testing.assert_array_equal(dense.dynamics(q, v).M, system.dynamics(q, v).M_dense)
    positions = q.reshape(-1, 7)[:, :3]
    spheres = [i for i, b in enumerate(system.bodies) if b.shape == "sphere"]
    expected = []
    for i, body in enumerate(system.bodies):
        if body.shape == "box":
            R = co.systems.geometry.quat_to_matrix(q[7 * i + 3:7 * i + 7])
            expected += [("ground", i, positions[i] + R @ (np.array(s) * body.size))
                         for s in itertools.product((-1.0, 1.0), repeat=3)]
        else:
            expected.append(("ground", i, positions[i] - np.array([0.0, 0.0, body.radius])))
    expected += [("pair", (a, b), None) for a, b in itertools.combinations(spheres, 2)]
    assert contacts.count == len(expected)
    points = system.contact_points(q)
    eps = 1e-6

    def moved(body: int, point: np.ndarray, sign: float) -> np.ndarray:
        """The material point of ``body`` at ``point`` after moving the bodies by sign*eps*v."""
        q2 = system.integrate(q, sign * v, eps)
        R1 = co.systems.geometry.quat_to_matrix(q[7 * body + 3:7 * body + 7])
        R2 = co.systems.geometry.quat_to_matrix(q2[7 * body + 3:7 * body + 7])
        local = R1.T @ (point - q[7 * body:7 * body + 3])
        return q2[7 * body:7 * body + 3] + R2 @ local

    def velocity(body: int, point: np.ndarray) -> np.ndarray:
        return (moved(body, point, 1.0) - moved(body, point, -1.0)) / (2 * eps)

    for c, (kind, which, point) in enumerate(expected):
        rows = J[3 * c:3 * c + 3]
        if kind == "ground":
            np.testing.assert_allclose(points[c], point, atol=1e-14)
            assert contacts.phi[c] == pytest.approx(point[2], abs=1e-14)
            frame = np.array([[0, 0, 1.0], [1, 0, 0], [0, 1, 0]])
            np.testing.assert_allclose(rows @ v, frame @ velocity(which, point), atol=1e-8)
        else:
            a, b = which
            gap = positions[b] - positions[a]
            radius_a, radius_b = system.bodies[a].radius, system.bodies[b].radius
            assert contacts.phi[c] == pytest.approx(np.linalg.norm(gap) - radius_a - radius_b, abs=1e-14)
            n = gap / np.linalg.norm(gap)
            t1, t2 = co.systems.geometry.tangent_basis(n)
            relative = velocity(b, points[c]) - velocity(a, points[c])
            np.testing.assert_allclose(rows @ v, np.array([n, t1, t2]) @ relative, atol=1e-8)


def test_pair_margin_keeps_exactly_the_close_pairs_in_order() -> None:
    """The k-d tree broad phase returns the all-pairs list restricted to gaps <= margin."""
    rng = np.random.default_rng(3)
    full = _spheres_and_boxes(rng, 40)
    q, _ = full.default_state()
    margin = 0.05
    pruned = co.systems.Rigid3D(full.bodies, {"mu": 0.3}, pair_margin=margin, box_pairs=False)
    all_contacts, some = full.contacts(q), pruned.contacts(q)
    names = full.contact_names()
    keep = [i for i, name in enumerate(names) if "|" not in name or all_contacts.phi[i] <= margin]
    assert pruned.contact_names(q) == [names[i] for i in keep]
    np.testing.assert_array_equal(some.phi, all_contacts.phi[keep])
    rows = np.concatenate([[3 * i, 3 * i + 1, 3 * i + 2] for i in keep]).astype(int)
    np.testing.assert_array_equal(some.J_dense, all_contacts.J_dense[rows])


def test_sparse_mass_matrix_is_checked_and_factored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sparse M is factored (sparse LU) and, under CONTACTOPT_DEBUG, checked for symmetry."""
    monkeypatch.setenv("CONTACTOPT_DEBUG", "1")
    rng = np.random.default_rng(0)
    B = rng.normal(size=(5, 5))
    M = B @ B.T + 5 * np.eye(5)
    rhs = rng.normal(size=(5, 2))
    sparse = Dynamics(M=sp.csc_matrix(M), tau=np.zeros(5))
    np.testing.assert_allclose(sparse.solve_M(rhs), np.linalg.solve(M, rhs), rtol=1e-12)
    skewed = M.copy()
    skewed[0, 1] += 1e-3
    with pytest.raises(ShapeError, match="not symmetric"):
        Dynamics(M=sp.csc_matrix(skewed), tau=np.zeros(5))
    with pytest.raises(ShapeError, match="NaN"):
        Contacts(phi=np.zeros(1), J=sp.csr_matrix(np.full((3, 5), np.nan)), mu=np.zeros(1),
                 restitution=np.zeros(1), dim=3)


@pytest.mark.parametrize("scene_name", ["box_slide", "sphere_stack"])
def test_osqp_reused_workspace_gives_the_answers_of_fresh_ones(scene_name: str) -> None:
    """The programs of 60 consecutive steps, solved by OSQP with its workspace updated in
    place and warm-started, and set up afresh for each. Both stop at eps_abs = eps_rel = 1e-7
    on the KKT residuals, so their v' may differ by about eps / lambda_min(P) (P = M, whose
    smallest eigenvalue is a body's smallest moment of inertia); both must reach
    contactopt's own residual check, and reuse must not cost more iterations."""
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    traj = co.simulate(scene, "anitescu", "clarabel", duration=60 * scene.dt, on_failure="raise")
    programs = [co.formulate(scene.system, q, v, scene.dt, "anitescu") for q, v in zip(traj.q, traj.v, strict=True)]
    fresh = [co.solve(program, "osqp", reuse=False) for program in programs]
    reused = [co.solve(program, "osqp") for program in programs]
    for a, b, program in zip(reused, fresh, programs, strict=True):
        assert a.status == b.status == co.Status.OPTIMAL
        smallest = float(np.linalg.eigvalsh(program.P.toarray()).min())
        bound = 2e-7 * max(1.0, float(np.abs(program.c).max())) / smallest
        np.testing.assert_allclose(a.x, b.x, rtol=0, atol=bound)
        assert max(a.residuals.primal, a.residuals.dual) <= 1e-5
    assert sum(s.iterations for s in reused) <= sum(s.iterations for s in fresh)


@pytest.mark.parametrize(("scene_name", "formulation", "options"), [
    ("sphere_pile_mjcf", "regularized", {}), ("sphere_stack", "regularized", {"cone": "elliptic"}),
    ("box_slide", "ccp", {"form": "dual"})], ids=["pile-pyramidal", "stack-elliptic", "box-ccp"])
def test_pgs_compiled_and_numpy_sweeps_agree(monkeypatch: pytest.MonkeyPatch, scene_name: str,
                                             formulation: str, options: dict[str, Any]) -> None:
    """The numba kernel and the NumPy sweep perform the same floating-point operations in the
    same order (the compiled one skips only exact-zero terms of H), so their answers agree to
    1e-12 (in practice bit for bit), Nonneg rows and SOC blocks alike."""
    from contactopt.solvers.pgs import kernel as pgs_kernel

    if not pgs_kernel.COMPILED:
        pytest.skip("numba is not installed")
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation, options)
    compiled = co.solve(program, "pgs")
    monkeypatch.setattr(pgs_kernel, "COMPILED", False)
    plain = co.solve(program, "pgs")
    assert compiled.status == plain.status == co.Status.OPTIMAL
    assert compiled.iterations == plain.iterations
    np.testing.assert_allclose(compiled.x, plain.x, rtol=0, atol=1e-12)


def test_compiled_pgs_converges_on_the_pile() -> None:
    """The elliptic (SOC) regularized program of the 100-sphere pile (about 250 contacts)
    converges within the default 1000 sweeps to contactopt's residual tolerance."""
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "regularized", {"cone": "elliptic"})
    solution = co.solve(program, "pgs")
    assert solution.status == co.Status.OPTIMAL and solution.iterations <= 1000
    reference = co.solve(program, "clarabel")
    # both solve the same strongly convex program (R > 0): impulses agree to the tolerances
    np.testing.assert_allclose(solution.x, reference.x, rtol=0, atol=1e-6 * max(1.0, np.abs(reference.x).max()))


@pytest.mark.parametrize("scene_name", ["sphere_pile_mjcf", "box_stack_mjcf"])
def test_mjcf_contacts_equal_mujocos_per_contact_jacobians(scene_name: str) -> None:
    """The vectorized MJCF rows equal, bit for bit, MuJoCo's own per-contact computation:
    contacts in MuJoCo's order (exclude > 1 dropped), rows frame (mj_jac(body2, p) -
    mj_jac(body1, p)), phi = dist, mu = friction[0]. The frame product is written out as the
    pipeline writes it, ``(f_0 J_x + f_1 J_y) + f_2 J_z`` (a BLAS product would round with or
    without FMA depending on the CPU)."""
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    system = scene.system
    contacts = system.contacts(scene.q0)
    model, data, mujoco = system.model, system.data, system.mujoco
    jacp = np.zeros((3, system.nv))
    rows, phi, mu = [], [], []
    for contact in data.contact[: data.ncon]:
        if contact.exclude > 1:
            continue
        J = np.zeros((3, system.nv))
        for body, sign in ((model.geom_bodyid[contact.geom2], 1.0), (model.geom_bodyid[contact.geom1], -1.0)):
            mujoco.mj_jac(model, data, jacp, None, contact.pos, body)
            J += sign * jacp
        frame = np.asarray(contact.frame).reshape(3, 3)
        rows.append(frame[:, 0, None] * J[0] + frame[:, 1, None] * J[1] + frame[:, 2, None] * J[2])
        phi.append(contact.dist)
        mu.append(contact.friction[0] if contact.dim > 1 else 0.0)
    assert contacts.count == len(rows) > 0
    np.testing.assert_array_equal(contacts.J_dense, np.vstack(rows))
    np.testing.assert_array_equal(contacts.phi, phi)
    np.testing.assert_array_equal(contacts.mu, mu)


@pytest.mark.parametrize(("scene_name", "formulation", "options"), [
    ("sphere_pile_mjcf", "regularized", {"cone": "elliptic"}), ("box_slide", "anitescu", {}),
    ("cart_wall", "ccp", {"form": "dual"})])
def test_clarabel_takes_list_views_with_the_same_result(scene_name: str, formulation: str,
                                                        options: dict[str, Any]) -> None:
    """Clarabel given the program's matrices and vectors as lists (``clarabel_._ListCsc``, the
    faster conversion) returns exactly what it returns from the scipy matrices; a Clarabel that
    reads more than the list view gives falls back to the scipy matrices."""
    clarabel = pytest.importorskip("clarabel")
    from contactopt.solvers.backends import clarabel as clarabel_

    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation, options=options)
    settings = {**clarabel_.DEFAULTS}
    via_lists = clarabel_._setup(clarabel, program, program.P_upper, settings).solve()
    direct = clarabel.DefaultSolver(program.P_upper, program.c, program.A, program.b,
                                    [_cone(clarabel, cone) for cone in program.cones],
                                    _settings(clarabel, settings)).solve()
    assert str(via_lists.status) == str(direct.status) and via_lists.iterations == direct.iterations
    np.testing.assert_array_equal(np.array(via_lists.x), np.array(direct.x))
    np.testing.assert_array_equal(np.array(via_lists.z), np.array(direct.z))


def test_clarabel_falls_back_to_scipy_matrices(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("clarabel")
    from contactopt.solvers.backends import clarabel as clarabel_

    class Incomplete:  # lacks what Clarabel reads: the constructor raises, the scipy matrices are used
        @classmethod
        def of(cls, matrix: sp.csc_matrix) -> object:
            return object()

    monkeypatch.setattr(clarabel_, "_ListCsc", Incomplete)
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "anitescu")
    assert co.solve(program, "clarabel").status is co.Status.OPTIMAL


def _cone(clarabel: Any, cone: co.programs.Cone) -> Any:
    kinds = {"zero": clarabel.ZeroConeT, "nonneg": clarabel.NonnegativeConeT, "soc": clarabel.SecondOrderConeT}
    return kinds[cone.kind](cone.dim)


def _settings(clarabel: Any, options: dict[str, Any]) -> Any:
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for key, value in options.items():
        setattr(settings, key, value)
    return settings


def test_kernels_compile_once_under_concurrent_first_calls() -> None:
    """Eight threads make the first call of every lazily compiled kernel at once (in a fresh
    interpreter): each kernel is wrapped by numba once (wrapping a dispatcher again raises), and
    every thread gets the same dispatcher."""
    import subprocess
    import sys

    code = """
import threading
from contactopt.systems.mjcf import contacts
from contactopt.formulations import combine_kernel
from contactopt.programs import delassus_kernel
from contactopt.solvers.newton import kernels as newton_kernels
from contactopt.solvers.newton import sparse as newton_sparse
barrier, found, errors = threading.Barrier(8), [], []
def first_calls():
    barrier.wait()
    try:
        newton_sparse.ensure_compiled()
        found.append((contacts._compiled(), combine_kernel._compiled(), delassus_kernel._compiled(),
                      newton_sparse.evaluate_and_assemble, newton_kernels.line_search))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=first_calls) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
assert not errors, errors
assert len(found) == 8 and all(entry == found[0] for entry in found), found
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
