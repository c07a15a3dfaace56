"""The compiled per-contact row combinations (:mod:`contactopt.formulations.combine_kernel`) equal
scipy's ``S @ J`` (the product :meth:`ActiveContacts.combine` forms) to rounding, as canonical CSR
(rows sorted, no duplicates, no exact zeros): on the MJCF pile's pyramid edges and tangent
directions, on the sphere grid's Anitescu edges, and on random rows stored out of order with
duplicates, explicit zeros and zero coefficients.

Tolerance: each entry is one sum of ``dim`` (plus duplicates) products, summed in another order
than scipy's; the difference of two such sums is at most ``2 n u sum |C_j J_j|`` (Higham,
"Accuracy and Stability of Numerical Algorithms", sec. 3.1, ``n`` terms, ``u = 2^-53``): checked
entry by entry against ``|S| |J|`` with ``n = 8``.

Timing (best of 20, this 2-core machine; the Anitescu edges of k = 4): the grid's 1000 contacts
0.36 ms through scipy, 0.15 ms compiled; the MJCF pile's 486 candidates 0.28 ms and 0.13 ms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import contactopt as co
from contactopt.formulations import combine_kernel, common
from contactopt.formulations.anitescu import edge_rows
from contactopt.formulations.regularized_rows import pyramid_edges

pytestmark = pytest.mark.skipif(not combine_kernel.COMPILED, reason="numba not installed")
PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
TERMS = 8  # the bound's n (module docstring): dim <= 3 terms, and the fuzz's duplicates


def selection(coefficients: np.ndarray) -> sp.csr_matrix:
    """The block-diagonal S of ActiveContacts.combine (its scipy product, written out)."""
    na, per, dim = coefficients.shape
    rows = np.repeat(np.arange(na * per), dim)
    cols = (np.arange(na)[:, None, None] * dim + np.arange(dim)[None, None, :]).repeat(per, axis=1)
    return sp.csr_matrix((coefficients.reshape(-1), (rows, cols.reshape(-1))), shape=(na * per, na * dim))


def assert_canonical_and_close(ours: sp.csr_matrix, S: sp.csr_matrix, J: sp.csr_matrix) -> None:
    theirs = (S @ J).toarray()
    bound = (abs(S) @ abs(J)).toarray()
    assert ours.shape == theirs.shape
    for row in range(ours.shape[0]):
        cols = ours.indices[ours.indptr[row]:ours.indptr[row + 1]]
        assert np.all(np.diff(cols) > 0)  # sorted, no duplicates
    assert ours.has_sorted_indices and np.all(ours.data != 0)
    error = np.abs(ours.toarray() - theirs)
    assert np.all(error <= 2 * TERMS * 2.0**-53 * bound), float(error.max())
    # an entry is stored exactly where its sum is not zero (a product scipy rounds to a
    # cancellation may differ only inside the bound)
    stored = ours.toarray() != 0
    assert np.all(stored | (np.abs(theirs) <= 2 * TERMS * 2.0**-53 * bound))


def test_pile_edges_and_directions_equal_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    contacts = scene.system.contacts(scene.q0)
    active = common.active_contacts(contacts, np.inf)
    assert active.is_sparse and active.count > 100
    compiled = [pyramid_edges(active)[0], edge_rows(active, 4)[0], active.directions(4)]
    monkeypatch.setattr(combine_kernel, "COMPILED", False)
    reference = [pyramid_edges(active)[0], edge_rows(active, 4)[0], active.directions(4)]
    for ours, theirs in zip(compiled, reference, strict=True):
        assert isinstance(ours, sp.csr_matrix) and ours.has_sorted_indices
        scale = abs(theirs).max()
        np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=0, atol=2 * TERMS * 2.0**-53 * scale)


def test_grid_edges_equal_scipy() -> None:
    spheres = [co.systems.RigidBody(name=f"s{i}", shape="sphere", size=np.array([0.05]), mass=0.1,
                                    position=np.array([0.2 * (i % 10), 0.2 * (i // 10), 0.05]),
                                    orientation=np.array([1.0, 0, 0, 0]), velocity=np.zeros(3),
                                    angular_velocity=np.zeros(3)) for i in range(100)]
    system = co.systems.Rigid3D(spheres, {"mu": 0.5}, pair_margin=0.01)
    q0, _ = system.default_state()
    active = common.active_contacts(system.contacts(q0), np.inf)
    coefficients = np.zeros((active.count, 4, 3))
    coefficients[:, :, 0] = 1.0
    coefficients[:, :, 1:] = active.mu[:, None, None] * common.tangent_directions(3, 4)[None]
    found = combine_kernel.combine(coefficients, active.J)
    assert found is not None
    assert_canonical_and_close(found, selection(coefficients), active.J)


@given(seed=st.integers(0, 2**31 - 1), na=st.integers(1, 8), per=st.integers(1, 5), dim=st.integers(1, 3),
       nv=st.integers(1, 12), density=st.floats(0.05, 0.9), duplicates=st.booleans())
def test_fuzz_equals_scipy(seed: int, na: int, per: int, dim: int, nv: int, density: float, duplicates: bool) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for _ in range(na * dim):
        cols = np.flatnonzero(rng.random(nv) < density)
        if duplicates and cols.size:
            cols = np.concatenate([cols, rng.choice(cols, size=1)])
        rng.shuffle(cols)
        values = rng.choice([1.0, -1.0, 0.0, 0.5, 1e8, -1e8], size=cols.size)
        indices += cols.tolist()
        data += values.tolist()
        indptr.append(len(indices))
    J = sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32), np.array(indptr, dtype=np.int32)),
                      shape=(na * dim, nv))
    coefficients = rng.choice([0.0, 1.0, -1.0, 0.3, 1e-8], size=(na, per, dim))
    found = combine_kernel.combine(coefficients, J)
    assert found is not None
    assert_canonical_and_close(found, selection(coefficients), J)


def test_declines_what_it_does_not_take() -> None:
    J = sp.csr_matrix(np.eye(3))
    assert combine_kernel.combine(np.ones((1, 2, 3)), J.tocsc()) is None
    assert combine_kernel.combine(np.ones((1, 0, 3)), J) is None
    assert combine_kernel.combine(np.ones((2, 2, 3)), J) is None  # rows do not match na * dim
