"""The compiled dual-program ``P`` (:mod:`contactopt.programs.delassus_kernel`) equals
``rows Minv rows^T + diag(R)`` to rounding, symmetric by construction, with its upper triangle
as Clarabel and OSQP take it: on the MJCF pile's programs (against the scipy expressions the
kernel replaces), on random rows stored out of order with a diagonal and a block-diagonal
``Minv`` (CSC and CSR), on exact cancellations, and on rows that move nothing.

Tolerance: each entry of ``W = K Minv K^T`` is one sum of products ``K_ik Minv_kl K_jl``, summed
in another order than scipy's (and the kernel reads ``W_ij`` for ``i <= j`` where scipy averaged
``(w_ij + w_ji) / 2``, equal for a symmetric ``Minv``); two orders of one sum of ``n`` products
differ by at most ``2 n u sum |terms|`` (Higham, "Accuracy and Stability of Numerical
Algorithms", sec. 3.1, ``u = 2^-53``): checked entry by entry against ``|K| |Minv| |K|^T + |R|``,
with ``n`` the largest number of products an entry sums (plus ``Minv``'s own asymmetry where it is
not exactly symmetric)."""

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
U = 2.0**-53


def assert_close(rows: sp.csr_matrix, inverse: sp.spmatrix, diagonal: np.ndarray | None) -> sp.csc_matrix:
    """The kernel's P against the dense product (module docstring); returns it."""
    found = delassus_kernel.delassus_symmetric(rows, inverse, diagonal)
    assert found is not None
    m = rows.shape[0]
    (Pp, Pi, Px), (Up, Ui, Ux) = found
    assert Pp.dtype == Pi.dtype == Up.dtype == Ui.dtype == np.int32
    P = sp.csc_matrix((Px, Pi, Pp), shape=(m, m))
    K, Minv = rows.toarray(), inverse.toarray()
    extra = np.zeros(m) if diagonal is None else diagonal
    W = K @ Minv @ K.T
    expected = 0.5 * (W + W.T) + np.diag(extra)
    bound = abs(rows) @ abs(sp.csr_matrix(Minv)) @ abs(rows).T + sp.diags(np.abs(extra))
    terms = max(1, int((abs(rows) @ (abs(sp.csr_matrix(Minv)) != 0) @ (abs(rows).T != 0)).max())) + 1
    asymmetry = float(np.abs(Minv - Minv.T).max())
    limit = 2 * terms * U * bound.toarray() + 0.5 * asymmetry * (abs(rows) @ abs(rows).T).toarray()
    dense = P.toarray()
    assert np.all(np.abs(dense - expected) <= limit), float(np.abs(dense - expected).max())
    np.testing.assert_array_equal(dense, dense.T)  # symmetric by construction
    for j in range(m):  # CSC columns sorted, no duplicates, no exact zeros
        assert np.all(np.diff(Pi[Pp[j]:Pp[j + 1]]) > 0)
    assert np.all(Px != 0)
    upper = sp.csc_matrix((Ux, Ui, Up), shape=(m, m))
    np.testing.assert_array_equal(upper.toarray(), np.triu(dense))
    reference = csc.upper_triangle(P)
    for ours, theirs in zip((Up, Ui, Ux), (reference.indptr, reference.indices, reference.data), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    return P


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
    assert_close(rows, inverse, rng.uniform(0.1, 1.0, 60))
    assert_close(rows, inverse.tocsr(), None)
    assert_close(rows, sp.diags(rng.uniform(0.5, 2.0, 48), format="csc"), rng.uniform(0.1, 1.0, 60))


def test_exact_cancellation() -> None:
    """w_01 sums 1 + 1e16 - 1e16 (0 or 1 by the order of the sum): the kernel's entry lies within
    the rounding bound of the exact 1 (the bound scales with the 1e16 terms) and P stays symmetric."""
    rows = sp.csr_matrix((np.array([1.0, 1e16, -1e16, 1.0, 1.0, 1.0]), np.array([0, 1, 2, 2, 1, 0], dtype=np.int32),
                          np.array([0, 3, 6], dtype=np.int32)), shape=(2, 3))
    assert_close(rows, sp.identity(3, format="csc"), np.array([1.0, 2.0]))
    assert_close(rows, sp.identity(3, format="csc"), None)


def test_int64_index_inverse() -> None:
    """An inverse whose index arrays are int64 (as from COO triplets of NumPy integers)."""
    rng = np.random.default_rng(7)
    rows = shuffled_rows(rng, 20, 12, 5)
    inverse = sp.csc_matrix(sp.coo_array((rng.uniform(0.5, 2.0, 12), (np.arange(12), np.arange(12)))))
    inverse.indices, inverse.indptr = inverse.indices.astype(np.int64), inverse.indptr.astype(np.int64)
    assert_close(rows, inverse, rng.uniform(0.1, 1.0, 20))
    assert_close(rows, inverse.tocsr(), None)


def test_declines_a_wrong_shaped_inverse() -> None:
    """Declined (the kernel would read outside the arrays); Dynamics refuses it anyway."""
    rows = sp.csr_matrix(np.arange(12.0).reshape(3, 4))
    for inverse in (sp.identity(6, format="csc"), sp.identity(3, format="csc"), sp.csc_matrix(np.ones((4, 6)))):
        assert delassus_kernel.delassus_symmetric(rows, inverse, None) is None
        with pytest.raises(co.errors.ShapeError, match=r"Dynamics\.inverse_matrix"):  # refused where it is given
            co.Dynamics(M=np.eye(4), tau=np.zeros(4), inverse_matrix=inverse)


def test_a_row_that_moves_nothing_keeps_its_diagonal() -> None:
    """A zero row (a contact whose Jacobian vanishes) has W_ii = 0: P_ii = R_i is stored; without
    a diagonal the row is empty."""
    rows = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 3.0]]))
    P = assert_close(rows, sp.identity(3, format="csc"), np.array([1.0, 0.5, 2.0]))
    assert P[1, 1] == 0.5 and P.getcol(1).nnz == 1
    P = assert_close(rows, sp.identity(3, format="csc"), None)
    assert P.getcol(1).nnz == 0


def test_pile_programs_equal_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every P the pile's regularized and CCP dual programs give over a few steps, compiled and
    through scipy (the kernel switched off): the same pattern, and entries within 1e-15 of the
    largest (a pile entry sums a few dozen products of unit-scale terms: the module docstring's
    bound is below 1e-14 of it)."""
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
            scale = float(abs(reference.P).max())
            np.testing.assert_allclose(compiled.P.toarray(), reference.P.toarray(), rtol=0, atol=1e-15 * scale)
            np.testing.assert_allclose(compiled.P_upper.toarray(), reference.P_upper.toarray(), rtol=0,
                                       atol=1e-15 * scale)
            np.testing.assert_array_equal(compiled.c, reference.c)
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
def test_fuzz_within_rounding(seed: int, m: int, nv: int, density: float, duplicates: bool, zeros: bool,
                              inverse_kind: str, add: bool) -> None:
    """Random rows (stored out of order, with duplicate entries and explicit zeros, values
    from a few magnitudes so that sums cancel exactly now and then) against the dense product,
    within the module docstring's bound."""
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
    assert_close(rows, inverse, diagonal)
