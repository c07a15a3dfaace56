"""The MJCF step's sparse pieces (issue 10): the contact Jacobian built for all contacts at once
(:mod:`contactopt.systems.mjcf.contacts`) against MuJoCo's own per-point ``mj_jac`` and against finite
differences of the contact points, ``M`` and its block-diagonal inverse
(:mod:`contactopt.systems.mjcf.mass`), and the sparse Delassus blocks against the dense ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.formulations.common import delassus, delassus_blocks
from contactopt.model.step import Dynamics, to_dense

mujoco = pytest.importorskip("mujoco")
from contactopt.systems.mjcf import compat  # noqa: E402
from contactopt.systems.mjcf.contacts import contact_jacobian  # noqa: E402
from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MJCF = ROOT / "problems" / "mjcf"


def _per_contact_rows(system: MjcfSystem, frames: np.ndarray, points: np.ndarray, bodies: np.ndarray) -> np.ndarray:
    """The construction the batched one replaced: ``frame (J_p(body2, p) - J_p(body1, p))``
    per contact, with MuJoCo's ``mj_jac``."""
    rows = np.zeros((3 * frames.shape[0], system.nv))
    for c in range(frames.shape[0]):
        jacobians = []
        for body in bodies[c]:
            jacp = np.zeros((3, system.nv))
            mujoco.mj_jac(system.model, system.data, jacp, None, points[c], int(body))
            jacobians.append(jacp)
        rows[3 * c:3 * c + 3] = frames[c] @ (jacobians[1] - jacobians[0])
    return rows


def test_pile_contact_jacobian_is_sparse_and_equals_mj_jac() -> None:
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    system = scene.system
    assert isinstance(system, MjcfSystem)
    contacts = system.contacts(scene.q0)
    assert sp.issparse(contacts.J) and contacts.J.format == "csr" and contacts.count > 200
    assert contacts.J.nnz <= 3 * 12 * contacts.count  # two free bodies at most per contact
    data = system.data
    keep = np.flatnonzero(np.asarray(data.contact.exclude)[:data.ncon] <= 1)
    frames = np.asarray(data.contact.frame)[keep].reshape(-1, 3, 3)
    bodies = np.asarray(system.model.geom_bodyid)[np.asarray(data.contact.geom)[keep]]
    expected = _per_contact_rows(system, frames, np.asarray(data.contact.pos)[keep], bodies)
    np.testing.assert_allclose(contacts.J.toarray(), expected, rtol=0, atol=1e-15)


def test_jacobian_of_bodies_on_one_chain_sums_the_shared_dofs() -> None:
    """Contacts between bodies of one kinematic tree (a leg against the torso, two legs): the
    shared ancestors' columns cancel, as in ``J_p(body2) - J_p(body1)``."""
    system = MjcfSystem(MJCF / "quadruped.xml", sparse=True)
    q, v = system.default_state()
    rng = np.random.default_rng(3)
    system.dynamics(q + np.concatenate([np.zeros(7), 0.3 * rng.standard_normal(system.nq - 7)]), v)
    nbody = int(system.model.nbody)
    bodies = np.array([[0, 1], [1, 2], [2, 1], [3, 5], [nbody - 1, 2], [1, 1], [0, nbody - 1]])
    frames = np.linalg.qr(rng.standard_normal((bodies.shape[0], 3, 3)))[0]
    points = rng.standard_normal((bodies.shape[0], 3))
    J = contact_jacobian(system._chains, system.data, system.nv, frames, points, bodies[:, 0], bodies[:, 1])
    expected = _per_contact_rows(system, frames, points, bodies)
    np.testing.assert_allclose(J.toarray(), expected, rtol=0, atol=1e-14)
    assert np.all(J.toarray()[15:18] == 0.0)  # a body against itself: exact cancellation


def test_contact_rows_are_the_velocities_of_the_contact_points() -> None:
    """``J v = frame (d/dt (p on body2) - d/dt (p on body1))``: central differences of the two
    material points at the contact position, moved with MuJoCo's own ``mj_integratePos``."""
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    system = scene.system
    assert isinstance(system, MjcfSystem)
    rng = np.random.default_rng(0)
    q, v = scene.q0, rng.standard_normal(system.nv)
    contacts = system.contacts(q)
    data = system.data
    keep = np.flatnonzero(np.asarray(data.contact.exclude)[:data.ncon] <= 1)[:40]
    frames = np.asarray(data.contact.frame)[keep].reshape(-1, 3, 3)
    points = np.asarray(data.contact.pos)[keep].copy()
    bodies = np.asarray(system.model.geom_bodyid)[np.asarray(data.contact.geom)[keep]]
    local = [np.einsum("cji,cj->ci", data.xmat[b].reshape(-1, 3, 3), points - data.xpos[b]) for b in bodies.T]

    def positions(qq: np.ndarray) -> list[np.ndarray]:
        system.dynamics(qq, np.zeros(system.nv))
        return [data.xpos[b] + np.einsum("cij,cj->ci", data.xmat[b].reshape(-1, 3, 3), x)
                for b, x in zip(bodies.T, local, strict=True)]

    eps = 1e-6
    plus = positions(system.integrate(q, v, eps))
    minus = positions(system.integrate(q, v, -eps))
    velocity = [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]
    expected = np.einsum("cij,cj->ci", frames, velocity[1] - velocity[0])
    rows = (3 * keep[:, None] + np.arange(3)).reshape(-1)
    np.testing.assert_allclose((contacts.J[rows] @ v).reshape(-1, 3), expected, rtol=0, atol=1e-7)


@pytest.mark.parametrize("xml", ["sphere_pile.xml", "quadruped.xml", "limited_arm.xml", "two_link_arm.xml"])
def test_mass_matrix_and_its_sparse_inverse(xml: str) -> None:
    system = MjcfSystem(MJCF / xml, sparse=True)
    q, v = system.default_state()
    dynamics = system.dynamics(q, v)
    M = compat.full_mass_matrix(system.mujoco, system.model, system.data)
    assert dynamics.is_sparse
    np.testing.assert_array_equal(dynamics.M.toarray(), M)
    assert dynamics.inverse_matrix is not None
    inverse = dynamics.inverse_matrix.toarray()
    np.testing.assert_array_equal(inverse, inverse.T)
    np.testing.assert_allclose(inverse @ M, np.eye(system.nv), rtol=0, atol=1e-12)
    damped = system.step_dynamics(dynamics, 0.01)
    assert damped.inverse_matrix is not None
    np.testing.assert_allclose(damped.inverse_matrix.toarray() @ damped.M.toarray(), np.eye(system.nv), atol=1e-12)


def test_sparse_delassus_equals_the_dense_one() -> None:
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    system = scene.system
    dynamics = system.dynamics(scene.q0, scene.v0)
    J = system.contacts(scene.q0).J
    dense = Dynamics(dynamics.M.toarray(), dynamics.tau)  # dense Cholesky of M, dense J
    W_dense = to_dense(delassus(dense, J.toarray()))
    W = delassus(dynamics, J)
    assert sp.issparse(W)
    np.testing.assert_allclose(W.toarray(), W_dense, rtol=0, atol=1e-12 * np.abs(W_dense).max())
    blocks = delassus_blocks(dynamics, J, 3)
    dense_blocks = delassus_blocks(dense, J.toarray(), 3)
    np.testing.assert_allclose(blocks, dense_blocks, rtol=0, atol=1e-12 * np.abs(dense_blocks).max())
    no_inverse = Dynamics(dynamics.M, dynamics.tau, inverse=dynamics.inverse)  # sparse J, solves only
    np.testing.assert_allclose(delassus_blocks(no_inverse, J, 3), dense_blocks, rtol=0,
                               atol=1e-12 * np.abs(dense_blocks).max())


def test_small_models_are_dense_and_equal_the_sparse_assembly() -> None:
    """Below nv = 60 (MuJoCo's own threshold) M, M^-1 and J are dense arrays, equal entry for
    entry to the sparse assembly of the same state (candidates within 1 cm: the feet's)."""
    dense_system = MjcfSystem(MJCF / "quadruped.xml", detection_margin=0.01)
    sparse_system = MjcfSystem(MJCF / "quadruped.xml", detection_margin=0.01, sparse=True)
    assert dense_system.nv < 60 and not dense_system.sparse
    q, v = dense_system.default_state()
    dense, sparse = dense_system.dynamics(q, v), sparse_system.dynamics(q, v)
    assert not dense.is_sparse and sparse.is_sparse
    np.testing.assert_array_equal(dense.M, sparse.M.toarray())
    np.testing.assert_array_equal(dense.inverse_matrix, sparse.inverse_matrix.toarray())
    dense_contacts, sparse_contacts = dense_system.contacts(q), sparse_system.contacts(q)
    assert not dense_contacts.is_sparse
    np.testing.assert_array_equal(dense_contacts.J, sparse_contacts.J.toarray())


def _random_block_inverse(rng: np.random.Generator, sizes: list[int]) -> sp.csc_matrix:
    blocks = []
    for size in sizes:
        root = rng.normal(size=(size, size))
        blocks.append(np.linalg.inv(root @ root.T + size * np.eye(size)))
    return sp.block_diag(blocks, format="csc")


@pytest.mark.parametrize("case", ["diagonal", "body_blocks", "mixed_patterns", "tree"])
def test_delassus_blocks_fast_path_and_fallback_equal_the_dense_products(case: str) -> None:
    """``delassus_blocks`` on sparse rows equals ``J_i M^-1 J_i^T`` computed densely, on the
    batched path (one column pattern per contact: diagonal or body-block ``M^-1``) and on the
    fallback (rows of a contact on different columns; ``M^-1`` coupling columns a row misses)."""
    from contactopt.formulations.common import _local_products

    rng = np.random.default_rng(7)
    n, bodies = 40, 12
    nv = 6 * bodies
    sizes = {"tree": [nv // 2, nv // 2]}.get(case, [6] * bodies)
    inverse = (sp.diags(rng.uniform(0.5, 2.0, nv), format="csc") if case == "diagonal"
               else _random_block_inverse(rng, sizes))
    J = np.zeros((3 * n, nv))
    for contact in range(n):
        pair = rng.choice(bodies, size=2, replace=False)
        for body in pair[: 1 + contact % 2]:  # ground contacts (one body) and pairs
            J[3 * contact:3 * contact + 3, 6 * body:6 * body + 6] = rng.normal(size=(3, 6))
        if case == "mixed_patterns" and contact % 3 == 0:
            J[3 * contact + 1, 6 * pair[0]] = 0.0  # this row misses a column its neighbours have
    J_sparse = sp.csr_matrix(J)
    dynamics = Dynamics(np.linalg.inv(inverse.toarray()), np.zeros(nv), inverse_matrix=inverse)
    W = J @ inverse.toarray() @ J.T
    expected = np.stack([W[3 * i:3 * i + 3, 3 * i:3 * i + 3] for i in range(n)])
    blocks = delassus_blocks(dynamics, J_sparse, 3)
    np.testing.assert_allclose(blocks, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    Y = sp.csr_matrix(J @ inverse.toarray())
    batched = _local_products(J_sparse, Y, n, 3) is not None
    assert batched == (case in ("diagonal", "body_blocks"))


@pytest.mark.parametrize("xml", ["sphere_pile.xml", "quadruped.xml", "limited_arm.xml"])
def test_compiled_contact_rows_equal_the_numpy_rows_bit_for_bit(xml: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled assembly of the sparse contact rows (numba) is the NumPy path's arithmetic
    in loops: the same CSR arrays bit for bit, for body pairs on separate trees, on the world,
    and on one tree (shared ancestors: a dof met twice, its two terms summed)."""
    import contactopt.systems.mjcf.contacts as contacts_module

    if not contacts_module.COMPILED or contacts_module._compiled() is None:
        pytest.skip("numba is not installed: only the NumPy path exists")
    system = MjcfSystem(MJCF / xml, sparse=True)
    q, v = system.default_state()
    data = system._evaluate(q, v)
    rng = np.random.default_rng(3)
    nbody = system.model.nbody
    body1, body2 = rng.integers(0, nbody, 60), rng.integers(0, nbody, 60)
    body1[:5] = 0  # on the world
    frames = np.linalg.qr(rng.normal(size=(60, 3, 3)))[0]
    points = rng.normal(size=(60, 3))
    args = (system._chains, data, system.nv, frames, points, body1, body2)
    compiled = contact_jacobian(*args)
    monkeypatch.setattr(contacts_module, "COMPILED", False)
    plain = contact_jacobian(*args)
    assert compiled.shape == plain.shape
    for name in ("indptr", "indices"):
        np.testing.assert_array_equal(getattr(compiled, name), getattr(plain, name))
    np.testing.assert_array_equal(compiled.data.view(np.int64), plain.data.view(np.int64))
    dense = contact_jacobian(*args, dense=True)
    np.testing.assert_allclose(compiled.toarray(), dense, rtol=0, atol=1e-15 * np.abs(dense).max())


def test_pile_programs_do_not_depend_on_the_blas_kernel(tmp_path: Path) -> None:
    """The pile's contact rows, Delassus product and regularized program are the same bit for
    bit under OpenBLAS's Haswell (AVX2, FMA) and Prescott (SSE, no FMA) kernels: no BLAS call
    on that path (its reference trajectories then hold on every CPU)."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, sys, numpy as np, contactopt as co\n"
        "from contactopt.integrators.time_stepping import build_step_problem\n"
        f"scene = co.load_scene({str(ROOT / 'problems' / 'sphere_pile_mjcf.toml')!r})\n"
        "problem = build_step_problem(scene.system, scene.q0, scene.v0, scene.dt)\n"
        "program = co.formulations.get('regularized').build(problem, "
        "co.formulations.get('regularized').resolve_options({'cone': 'elliptic'}))\n"
        "digest = hashlib.sha256()\n"
        "for array in (problem.contacts.J.data, program.P.data, program.c, program.A.data, program.b):\n"
        "    digest.update(np.ascontiguousarray(array).tobytes())\n"
        "print(digest.hexdigest())\n")
    digests = []
    for kernel in ("Haswell", "Prescott"):
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "OPENBLAS_NUM_THREADS": "2", "PYTHONPATH": str(ROOT)}
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        digests.append(run.stdout.strip())
    assert digests[0] == digests[1]
