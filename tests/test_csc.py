"""The direct CSC assembly of contactopt.programs.csc equals scipy.sparse's own construction
(values, canonical format, scipy's full format check) on random matrices, zero-row and
zero-column shapes and matrices with explicit zeros included."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from contactopt.programs import csc
from contactopt.programs.csc import csr_to_csc, dense_to_csc, dense_to_csr, empty_csc, to_csc, to_csr, vstack_csc


def _random(rng: np.random.Generator, rows: int, cols: int, density: float) -> np.ndarray:
    dense = rng.standard_normal((rows, cols))
    dense[rng.random((rows, cols)) > density] = 0.0
    return dense


def _same(ours: sp.csc_matrix, dense: np.ndarray) -> None:
    assert isinstance(ours, sp.csc_matrix) and ours.shape == dense.shape
    ours.check_format(full_check=True)
    reference = sp.csc_matrix(dense)
    np.testing.assert_array_equal(ours.indptr, reference.indptr)
    np.testing.assert_array_equal(ours.indices, reference.indices)
    np.testing.assert_array_equal(ours.data, reference.data)
    np.testing.assert_array_equal(ours.toarray(), dense)


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (4, 0), (1, 1), (7, 3), (32, 6), (20, 40)])
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_dense_to_csc_equals_scipy(shape: tuple[int, int], density: float) -> None:
    dense = _random(np.random.default_rng(sum(shape)), *shape, density)
    _same(dense_to_csc(dense), dense)
    _same(to_csc(dense), dense)


def test_vstack_equals_scipy_vstack() -> None:
    rng = np.random.default_rng(0)
    blocks = [_random(rng, rows, 5, 0.4) for rows in (3, 0, 6, 1, 4)]
    mixed = [blocks[0], sp.csr_matrix(blocks[1]), sp.coo_matrix(blocks[2]), blocks[3], sp.csc_matrix(blocks[4])]
    _same(vstack_csc(mixed), np.vstack(blocks))
    _same(vstack_csc([blocks[2]]), blocks[2])


def test_to_csc_sums_duplicates_and_keeps_canonical_input() -> None:
    duplicated = sp.csc_matrix((np.array([1.0, 2.0, 3.0]), np.array([1, 1, 0]), np.array([0, 2, 3])), shape=(2, 2))
    out = to_csc(duplicated)
    assert out.has_canonical_format
    np.testing.assert_array_equal(out.toarray(), [[0.0, 3.0], [3.0, 0.0]])
    canonical = sp.csc_matrix(np.eye(3))
    assert to_csc(canonical) is canonical


def test_empty_csc_multiplies_like_a_zero_matrix() -> None:
    for rows, cols in ((0, 4), (3, 0), (2, 2)):
        zero = empty_csc(rows, cols)
        zero.check_format(full_check=True)
        np.testing.assert_array_equal(zero @ np.ones(cols), np.zeros(rows))
        np.testing.assert_array_equal(zero.T @ np.ones(rows), np.zeros(cols))


@pytest.mark.parametrize("shape", [(0, 4), (5, 0), (7, 3), (24, 30), (120, 90)])
def test_csr_helpers_equal_scipy(shape: tuple[int, int]) -> None:
    dense = _random(np.random.default_rng(shape[0] + 7 * shape[1]), *shape, 0.4)
    for ours in (dense_to_csr(dense), to_csr(dense), to_csr(sp.coo_matrix(dense))):
        assert isinstance(ours, sp.csr_matrix)
        ours.check_format(full_check=True)
        reference = sp.csr_matrix(dense)
        np.testing.assert_array_equal(ours.indptr, reference.indptr)
        np.testing.assert_array_equal(ours.indices, reference.indices)
        np.testing.assert_array_equal(ours.toarray(), dense)
    _same(csr_to_csc(dense_to_csr(dense)), dense)



@pytest.mark.parametrize(("formulation", "options"), [
    ("gauss", {}), ("gauss", {"form": "dual"}), ("anitescu", {}), ("anitescu", {"form": "dual"}), ("ccp", {}),
    ("ccp", {"form": "dual"}), ("regularized", {}), ("regularized", {"cone": "elliptic"}),
    ("regularized", {"form": "primal"}), ("sap", {}),
])
def test_every_formulation_builds_canonical_programs(monkeypatch: pytest.MonkeyPatch, formulation: str,
                                                     options: dict[str, object]) -> None:
    """Under CONTACTOPT_DEBUG=1 every matrix assembled directly runs scipy's full format check;
    the programs' P and A equal scipy's own construction of the same dense matrices."""
    import warnings

    import contactopt as co

    monkeypatch.setenv("CONTACTOPT_DEBUG", "1")
    scene = co.load_scene("box_slide")
    q = scene.q0.copy()
    q[2] -= 1e-4  # penetrating corners: every formulation has active rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = co.formulate(scene.system, q, scene.v0, scene.dt, formulation, options=options)
    assert program.m > 0
    for matrix in (program.P, program.A, program.P_upper):
        matrix.check_format(full_check=True)
        _same(matrix, matrix.toarray())


def test_fallback_to_scipy_constructors_gives_the_same_matrices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where this scipy's matrices cannot be built by attribute assignment (checked at import),
    the checked constructors give the same matrices."""
    import contactopt.programs.csc as module

    assert module._DIRECT  # this scipy passes the import-time check
    dense = _random(np.random.default_rng(3), 9, 4, 0.5)
    monkeypatch.setattr(module, "_DIRECT", False)
    _same(dense_to_csc(dense), dense)
    _same(csr_to_csc(dense_to_csr(dense)), dense)


def test_add_diagonal_and_symmetric_part_equal_scipy_expressions() -> None:
    """The same numbers and pattern as ``W + diags(d)`` and ``0.5 * (W + W.T)``, bit for bit:
    nearly symmetric matrices (a Delassus product's rounding), explicit zeros, a missing
    diagonal entry and an unsymmetric pattern (the fallbacks)."""
    from contactopt.programs.csc import add_diagonal, symmetric_part

    rng = np.random.default_rng(11)
    base = _random(rng, 12, 12, 0.4)
    nearly = base + base.T + 1e-17 * rng.standard_normal((12, 12)) * (base + base.T != 0)
    np.fill_diagonal(nearly, 1.0 + rng.random(12))
    with_zero = sp.csc_matrix(nearly)
    with_zero.data[3] = 0.0  # an explicit zero, as a sparse product can leave
    no_diagonal = sp.csc_matrix(nearly - np.diag(np.diag(nearly)) * (np.arange(12) == 4)[:, None])
    unsymmetric = sp.csc_matrix(np.triu(nearly))
    diagonal = rng.random(12)
    for W in (sp.csc_matrix(nearly), with_zero, no_diagonal, unsymmetric):
        expected = sp.csc_matrix(W + sp.diags(diagonal))
        ours = add_diagonal(W, diagonal)
        np.testing.assert_array_equal(ours.toarray(), expected.toarray())
        symmetric = symmetric_part(ours)
        reference = sp.csc_matrix(0.5 * (expected + expected.T))
        symmetric.check_format(full_check=True)
        np.testing.assert_array_equal(symmetric.toarray(), reference.toarray())
        np.testing.assert_array_equal(symmetric.indices, reference.indices)
        np.testing.assert_array_equal(symmetric.indptr, reference.indptr)


def test_symmetric_part_is_trusted_by_programs_until_its_arrays_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """``symmetric_part``'s output is symmetric by construction, so a program takes it without
    the O(nnz) symmetry check; a matrix whose arrays were replaced loses the mark, and a
    non-symmetric P is still refused (always, and under CONTACTOPT_DEBUG=1 for marked ones)."""
    from contactopt.core.errors import ShapeError
    from contactopt.programs import ConicProgram, Nonneg
    from contactopt.programs import conic as conic_module
    from contactopt.programs.csc import symmetric_by_construction, symmetric_part

    rng = np.random.default_rng(5)
    base = _random(rng, 40, 40, 0.3)
    checks: list[int] = []
    original = conic_module._symmetric

    def counted(*args: object) -> bool:
        checks.append(1)
        return bool(original(*args))  # type: ignore[arg-type]

    skew = np.triu(base) - np.triu(base).T  # a nonsymmetric W whose symmetric part is positive definite
    for W in (sp.csc_matrix(base @ base.T + np.eye(40)), sp.csc_matrix(base @ base.T + np.eye(40) + skew)):
        P = symmetric_part(W)
        assert symmetric_by_construction(P)
        np.testing.assert_array_equal(P.toarray(), P.toarray().T)
        checks.clear()
        monkeypatch.setattr(conic_module, "_symmetric", counted)
        program = ConicProgram(P=P, c=np.zeros(40), A=sp.identity(40, format="csc"), b=np.ones(40),
                               cones=(Nonneg(40),))
        assert checks == [] and symmetric_by_construction(program.P)
        monkeypatch.setenv("CONTACTOPT_DEBUG", "1")
        ConicProgram(P=P, c=np.zeros(40), A=sp.identity(40, format="csc"), b=np.ones(40), cones=(Nonneg(40),))
        assert checks == [1]
        monkeypatch.delenv("CONTACTOPT_DEBUG")
        tampered = P.copy()
        assert not symmetric_by_construction(tampered)
        tampered.data = tampered.data.copy()
        tampered.data[np.flatnonzero(tampered.indices != np.repeat(np.arange(40), np.diff(tampered.indptr)))[0]] += 1.0
        with pytest.raises(ShapeError, match="not symmetric"):
            ConicProgram(P=tampered, c=np.zeros(40), A=sp.identity(40, format="csc"), b=np.ones(40),
                         cones=(Nonneg(40),))
        monkeypatch.setattr(conic_module, "_symmetric", original)


def test_rows_of_equals_scipy_row_indexing() -> None:
    """Rows gathered from a CSR matrix's arrays: scipy's ``J[rows]`` entry for entry (repeated,
    reordered and empty selections, empty rows), dense arrays indexed as they are."""
    from contactopt.programs.csc import rows_of

    dense = _random(np.random.default_rng(5), 15, 8, 0.35)
    dense[4] = 0.0
    J = sp.csr_matrix(dense)
    for rows in ([], [3], [0, 4, 4, 14, 2], np.arange(0, 15, 3), np.arange(15)[::-1]):
        ours, expected = rows_of(J, rows), J[np.asarray(rows, dtype=int)]
        assert isinstance(ours, sp.csr_matrix)
        ours.check_format(full_check=True)
        np.testing.assert_array_equal(ours.indptr, expected.indptr)
        np.testing.assert_array_equal(ours.indices, expected.indices)
        np.testing.assert_array_equal(ours.data, expected.data)
        np.testing.assert_array_equal(rows_of(dense, rows), dense[np.asarray(rows, dtype=int)])


def test_block_diagonal_inertia_is_marked_symmetric_only_when_its_blocks_are() -> None:
    """rigid3d's sparse M (blockdiag(m I3, R I R^T)) is symmetric by construction and marked
    so; a block that is not symmetric leaves the matrix unmarked (a program then checks it)."""
    from contactopt.programs.csc import symmetric_by_construction
    from contactopt.systems import rigid3d_contacts as kernels

    rng = np.random.default_rng(2)
    rotations = np.linalg.qr(rng.normal(size=(70, 3, 3)))[0]
    inertia = kernels.world_inertia(rotations, rng.uniform(0.1, 1.0, (70, 3)))
    masses = rng.uniform(0.5, 2.0, 70)
    M = kernels.block_diagonal(masses, inertia)
    assert symmetric_by_construction(M)
    dense = M.toarray()
    np.testing.assert_array_equal(dense, dense.T)
    np.testing.assert_array_equal(dense, kernels.block_diagonal_dense(masses, inertia))
    skewed = inertia.copy()
    skewed[3, 0, 1] += 1e-3
    assert not symmetric_by_construction(kernels.block_diagonal(masses, skewed))
    assert kernels.block_diagonal(masses, inertia).indices is M.indices  # the pattern is made once per size


def test_attached_upper_follows_the_arrays() -> None:
    """A recorded upper triangle is used only while P keeps the arrays it was recorded with."""
    P = csc.dense_to_csc(np.array([[2.0, 1.0], [1.0, 3.0]]))
    upper = csc.upper_triangle(P)
    csc.attach_upper(P, upper)
    assert csc.attached_upper(P) is upper
    P.data = P.data.copy()
    assert csc.attached_upper(P) is None
