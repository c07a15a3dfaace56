"""The compiled dual-program ``P`` (:mod:`contactopt.programs.delassus_kernel`) equals scipy's
``symmetric_part(add_diagonal((rows @ Minv @ rows.T).tocsc(), R))`` bit for bit: on the MJCF
pile's programs, on random rows stored out of order with a diagonal and a block-diagonal
``Minv`` (CSC and CSR), on a pattern that is asymmetric after an exact cancellation (scipy's
``0.5 * (W + W.T)`` path), and it declines (scipy's path runs) where a diagonal entry is not
stored. Equality, not a tolerance: the pile's trajectories amplify one-ulp differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import contactopt as co
from contactopt.formulations import constraint_rows
from contactopt.programs import csc, delassus_kernel

pytestmark = pytest.mark.skipif(not delassus_kernel.COMPILED, reason="numba not installed")
PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def scipy_P(rows: sp.csr_matrix, inverse: sp.spmatrix, diagonal: np.ndarray | None) -> sp.csc_matrix:
    W = (rows @ inverse @ rows.T).tocsc()
    if diagonal is not None:
        W = csc.add_diagonal(W, diagonal)
    return csc.symmetric_part(W)


def assert_same(rows: sp.csr_matrix, inverse: sp.spmatrix, diagonal: np.ndarray | None) -> None:
    found = delassus_kernel.delassus_symmetric(rows, inverse, diagonal)
    assert found is not None
    expected = scipy_P(rows, inverse, diagonal)
    upper = csc.upper_triangle(expected)
    for ours, theirs in zip((*found[0], *found[1]), (expected.indptr, expected.indices, expected.data,
                                                     upper.indptr, upper.indices, upper.data), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def shuffled_rows(rng: np.random.Generator, m: int, nv: int, per_row: int) -> sp.csr_matrix:
    """CSR rows whose entries are stored in random column order (as MuJoCo's chains give them)."""
    indptr, indices, data = [0], [], []
    for _ in range(m):
        cols = rng.choice(nv, size=per_row, replace=False)
        indices += cols.tolist()
        data += rng.standard_normal(per_row).tolist()
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32), np.array(indptr, dtype=np.int32)),
                         shape=(m, nv))


def block_inverse(rng: np.random.Generator, bodies: int) -> sp.csc_matrix:
    blocks = []
    for _ in range(bodies):
        a = rng.standard_normal((6, 6))
        blocks.append(np.linalg.inv(a @ a.T + 6 * np.eye(6)))
    return sp.block_diag(blocks, format="csc")


@pytest.mark.parametrize("seed", range(4))
def test_random_rows_with_block_inverse(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = shuffled_rows(rng, 60, 48, 9)
    inverse = block_inverse(rng, 8)
    assert not rows.has_sorted_indices
    assert_same(rows, inverse, rng.uniform(0.1, 1.0, 60))
    assert_same(rows, inverse.tocsr(), None)
    assert_same(rows, sp.diags(rng.uniform(0.5, 2.0, 48), format="csc"), rng.uniform(0.1, 1.0, 60))


def test_exact_cancellation_in_one_order_only() -> None:
    """w_ij sums 1 + 1e16 - 1e16 in one order (0) and another (1): W's pattern is asymmetric,
    scipy's union-merge path (0.5 * (W + W.T)) gives P, and so must the kernel."""
    rows = sp.csr_matrix((np.array([1.0, 1e16, -1e16, 1.0, 1.0, 1.0]), np.array([0, 1, 2, 2, 1, 0], dtype=np.int32),
                          np.array([0, 3, 6], dtype=np.int32)), shape=(2, 3))
    W = (rows @ sp.identity(3, format="csc") @ rows.T).toarray()
    assert (W[0, 1] == 0) != (W[1, 0] == 0)  # the case this test is about
    assert_same(rows, sp.identity(3, format="csc"), np.array([1.0, 2.0]))
    assert_same(rows, sp.identity(3, format="csc"), None)


def test_int64_index_inverse_equals_scipy() -> None:
    """An inverse whose index arrays are int64 (as from COO triplets of NumPy integers)."""
    rng = np.random.default_rng(7)
    rows = shuffled_rows(rng, 20, 12, 5)
    inverse = sp.csc_matrix(sp.coo_array((rng.uniform(0.5, 2.0, 12), (np.arange(12), np.arange(12)))))
    inverse.indices, inverse.indptr = inverse.indices.astype(np.int64), inverse.indptr.astype(np.int64)
    assert_same(rows, inverse, rng.uniform(0.1, 1.0, 20))
    assert_same(rows, inverse.tocsr(), None)


def test_declines_a_wrong_shaped_inverse() -> None:
    """Declined (the kernel would read outside the arrays); Dynamics refuses it anyway."""
    rows = sp.csr_matrix(np.arange(12.0).reshape(3, 4))
    for inverse in (sp.identity(6, format="csc"), sp.identity(3, format="csc"), sp.csc_matrix(np.ones((4, 6)))):
        assert delassus_kernel.delassus_symmetric(rows, inverse, None) is None
        with pytest.raises(co.errors.ShapeError, match=r"Dynamics\.inverse_matrix"):  # refused where it is given
            co.Dynamics(M=np.eye(4), tau=np.zeros(4), inverse_matrix=inverse)


def test_declines_without_a_stored_diagonal_entry() -> None:
    rows = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 3.0]]))
    assert delassus_kernel.delassus_symmetric(rows, sp.identity(3, format="csc"), np.ones(3)) is None
    assert delassus_kernel.delassus_symmetric(rows, sp.identity(3, format="csc"), None) is not None


def test_pile_programs_equal_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every P the pile's regularized and CCP dual programs give over a few steps, compiled and
    through scipy (the kernel switched off), the same arrays."""
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    traj = co.simulate(scene, formulation="regularized", solver="clarabel", options={"cone": "elliptic"},
                       duration=3 * scene.dt)
    def build(k: int, formulation: str, options: dict[str, str]) -> co.programs.ConicProgram:
        return co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, formulation, options=options,
                            t=float(traj.t[k]))

    for k in range(3):
        for formulation, options in (("regularized", {"cone": "elliptic"}), ("regularized", {}),
                                     ("ccp", {"form": "dual"})):
            compiled = build(k, formulation, options)
            with monkeypatch.context() as patch:
                patch.setattr(delassus_kernel, "COMPILED", False)
                reference = build(k, formulation, options)
            assert csc.attached_upper(reference.P) is None
            for ours, theirs in zip((compiled.P.indptr, compiled.P.indices, compiled.P.data, compiled.P_upper.indptr,
                                     compiled.P_upper.indices, compiled.P_upper.data),
                                    (reference.P.indptr, reference.P.indices, reference.P.data,
                                     reference.P_upper.indptr, reference.P_upper.indices, reference.P_upper.data),
                                    strict=True):
                np.testing.assert_array_equal(ours, theirs)
            assert csc.symmetric_by_construction(compiled.P)
            assert csc.attached_upper(compiled.P) is compiled.P_upper


def test_dual_program_uses_the_kernel_for_sparse_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = delassus_kernel.delassus_symmetric

    def counted(*args: object) -> object:
        calls.append(1)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(delassus_kernel, "delassus_symmetric", counted)
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "regularized")
    assert calls and constraint_rows.delassus_kernel is delassus_kernel


@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 12), nv=st.integers(1, 10),
       density=st.floats(0.05, 0.9), duplicates=st.booleans(), zeros=st.booleans(),
       inverse_kind=st.sampled_from(["diag", "block", "dense_sparse"]), add=st.booleans())
def test_fuzz_equals_scipy(seed: int, m: int, nv: int, density: float, duplicates: bool, zeros: bool,
                           inverse_kind: str, add: bool) -> None:
    """Random rows (stored out of order, with duplicate entries and explicit zeros, values
    from a few magnitudes so that sums cancel exactly now and then) against scipy: equal
    arrays, or a declined call where a diagonal entry is missing."""
    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for _ in range(m):
        cols = np.flatnonzero(rng.random(nv) < density)
        if duplicates and cols.size:
            cols = np.concatenate([cols, rng.choice(cols, size=1)])
        rng.shuffle(cols)
        values = rng.choice([1.0, -1.0, 0.5, 3.0, 1e8, -1e8], size=cols.size) * rng.integers(1, 4, cols.size)
        if zeros and cols.size:
            values[0] = 0.0
        indices += cols.tolist()
        data += values.tolist()
        indptr.append(len(indices))
    rows = sp.csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=np.int32),
                          np.array(indptr, dtype=np.int32)), shape=(m, nv))
    if inverse_kind == "diag":
        inverse = sp.diags(rng.choice([0.5, 1.0, 2.0, 1 / 3], nv), format="csc")
    else:
        a = rng.standard_normal((nv, nv))
        full = np.linalg.inv(a @ a.T + nv * np.eye(nv))
        banded = sp.csc_matrix(np.triu(np.tril(full, 1), -1))  # a sparse, non-diagonal inverse
        inverse = sp.csr_matrix(full) if inverse_kind == "dense_sparse" else banded
    diagonal = rng.uniform(0.1, 1.0, m) if add else None
    found = delassus_kernel.delassus_symmetric(rows, inverse, diagonal)
    W = (rows @ inverse @ rows.T).tocsc()
    if diagonal is not None:
        columns = np.repeat(np.arange(m), np.diff(W.indptr))
        if np.count_nonzero(W.indices == columns) != m:  # add_diagonal's other path: the kernel declines
            assert found is None
            return
        W = csc.add_diagonal(W, diagonal)
    expected = csc.symmetric_part(W)
    assert found is not None
    upper = csc.upper_triangle(expected)
    for ours, theirs in zip((*found[0], *found[1]), (expected.indptr, expected.indices, expected.data,
                                                     upper.indptr, upper.indices, upper.data), strict=True):
        np.testing.assert_array_equal(ours, theirs)
