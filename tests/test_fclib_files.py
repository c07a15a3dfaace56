"""Other tools' FCLIB files: every file of the FCLIB data folder (Siconos's test problems and
its text problems converted to FCLIB; see the README there) reads, with what the README says of
it, and the global ones condense to the local problems stored beside them.

The folder is not part of the repository (``tests/fclib_data.py`` says where it is looked for);
without it these tests are skipped, with the reason.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
from fclib_data import FCLIB_DATA, MISSING, require
from test_fclib_read import G_, H_, H_FRAME, M_, MU, _parser, point_on_plane, write_global, write_local

import contactopt as co
from contactopt.analysis.bench import run_benchmark
from contactopt.core.errors import AmbiguousTripletsWarning
from contactopt.programs import fclib_merit, read_fclib
from contactopt.programs.coulomb_error import answer_of
from contactopt.programs.fclib import FclibGlobal, FclibLocal, condense, fclib_program
from contactopt.programs.fclib_io import HDF5_SIGNATURE
from contactopt.programs.fclib_matrix import SYMMETRY_TOLERANCE

DATA = FCLIB_DATA
FILES = sorted(DATA.glob("*/*.hdf5")) if DATA.is_dir() else []
#: The parameters of the per-file test: one skipped case saying why when the folder is missing.
FILE_CASES: list[object] = [*FILES] or [pytest.param(None, id="no-fclib-data", marks=pytest.mark.skip(reason=MISSING))]
#: README: Siconos writes its global problems' triplets CSparse style (i rows, p columns).
SICONOS_GLOBALS = ("Box_Stacks-i0122-82-5", "Spheres-i099-356-679", "spheres-in-a-box-98-i10000-256-10",
                   "CubeH8", "LMGC_GlobalFrictionContactProblem00046")
#: README: genuinely nonsymmetric W, 8e-6 to 2.5e-3 of max|W|. The condensed LMGC problem joins
#: them: its M's asymmetry (1.5e-7 of max|M|, within the stored precision) exceeds M's smallest
#: eigenvalue (1e-7 of max|M|), so H'M^-1 H is far from symmetric (0.16); Siconos's condensed
#: file, written beside it, has the same W (test below).
NONSYMMETRIC = ("Capsules", "OneObject", "RockPile", "Rover", "condensed_LMGC_GlobalFrictionContactProblem00046")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", FILE_CASES, ids=_id)
def test_every_file_reads_with_what_its_readme_says(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", AmbiguousTripletsWarning)  # every file decides its triplets
        problem = read_fclib(path)
    local_velocity = problem.q if isinstance(problem, FclibLocal) else problem.w
    assert local_velocity.shape == (problem.contacts * problem.spacedim,)
    if path.stem in SICONOS_GLOBALS:
        assert isinstance(problem, FclibGlobal)
        assert problem.metadata["triplets"] == {"M": "csparse", "H": "csparse"}
    asymmetry = max(problem.asymmetry.values())
    if path.stem.startswith(NONSYMMETRIC):
        assert not problem.symmetric and asymmetry > 8e-6  # the README's smallest
        with pytest.raises(co.UnsupportedProgramError, match=re.escape(str(path)) + r": W is not symmetric"):
            fclib_program(problem)
    else:
        assert problem.symmetric and asymmetry <= SYMMETRY_TOLERANCE


@pytest.mark.parametrize("name", SICONOS_GLOBALS)
def test_global_problems_condense_to_siconos_condensed_files(name: str) -> None:
    """W = H'M^-1 H and q = w + H'M^-1 f against the condensed file Siconos's problems come with.
    Tolerance 1e-8 of their largest entries: above the rounding of two condensations
    (eps cond(M) = 2e-16 x 1e7 for CubeH8's M, the worst conditioned), and far below what a
    wrong reading makes (M taken transposed or symmetrized: 6e-2 and more in W and q)."""
    require("siconos_original")
    problem = read_fclib(DATA / "siconos_original" / f"{name}.hdf5")
    stored = read_fclib(DATA / "siconos_text_converted" / f"condensed_{name}.hdf5")
    assert isinstance(problem, FclibGlobal) and isinstance(stored, FclibLocal)
    ours = condense(problem)
    assert abs(ours.W - stored.W).max() <= 1e-8 * abs(stored.W).max()
    assert abs(ours.q - stored.q).max() <= 1e-8 * abs(stored.q).max()
    assert (ours.mu == stored.mu).all()


@pytest.mark.parametrize("name", ["CubeH8", "LMGC_GlobalFrictionContactProblem00046"])
def test_mass_matrix_asymmetric_within_the_stored_precision_is_symmetrized_and_said(name: str) -> None:
    require("siconos_original")
    path = DATA / "siconos_original" / f"{name}.hdf5"
    program = co.load_program(path)
    assert isinstance(program, co.ConicProgram)
    assert 1e-7 < program.metadata["asymmetry"]["M"] <= SYMMETRY_TOLERANCE  # README: ~1.5e-7
    assert "within the stored precision" in program.metadata["symmetrized"]["M"]
    assert program.metadata["symmetric"] is True


# --- the same conventions on small files written here (no data folder needed) -------------


def _one_contact_global(path: Path, M: np.ndarray, mass_storage: str, storage: str) -> Path:
    """Two point contacts on one body (H 3 x 6: the column index 5 fits only as a column), the
    mass matrix stored as given: the point on the plane of test_fclib_read, sticking."""
    H = np.hstack([H_FRAME, H_FRAME])
    return write_global(path, M, H, M_ * np.array([0.01, 0, -G_ * H_]), np.zeros(6), [MU, MU], storage=storage,
                        mass_storage=mass_storage)


def test_csparse_triplets_are_read_from_their_index_ranges_and_the_file_follows(tmp_path: Path) -> None:
    """The same problem written in fclib.h's triplet order and in CSparse's: H (3 x 6) decides
    each file's order; M, square and valid both ways, follows its file. With M slightly
    nonsymmetric (2e-7 of max|M|: within the stored precision) the two readings of M differ,
    so reading it in the wrong order would show."""
    M = M_ * np.eye(3)
    M[0, 1] = 2e-7 * M_
    with warnings.catch_warnings():
        warnings.simplefilter("error", AmbiguousTripletsWarning)
        spec = read_fclib(_one_contact_global(tmp_path / "spec.hdf5", M, "triplet", "triplet"))
        siconos = read_fclib(_one_contact_global(tmp_path / "siconos.hdf5", M, "csparse", "csparse"))
    assert isinstance(spec, FclibGlobal) and isinstance(siconos, FclibGlobal)
    assert spec.metadata["triplets"] == {"M": "fclib", "H": "fclib"}
    assert siconos.metadata["triplets"] == {"M": "csparse", "H": "csparse"}
    for problem in (spec, siconos):
        np.testing.assert_array_equal(problem.M.toarray(), M)
        np.testing.assert_array_equal(problem.H.toarray(), np.hstack([H_FRAME, H_FRAME]))
        assert problem.symmetric and problem.asymmetry["M"] == pytest.approx(2e-7)


def test_ambiguous_triplets_warn_naming_file_and_matrix_and_follow_fclib_h(tmp_path: Path) -> None:
    W = np.eye(3) / M_
    W[0, 1] = 0.1 / M_  # valid both ways, and the two readings (W, W^T) differ by 0.2 of max|W|
    path = write_local(tmp_path / "ambiguous.hdf5", W, [-G_ * H_, 0.0, 0.0], [MU], storage="triplet")
    with pytest.warns(AmbiguousTripletsWarning, match=re.escape(str(path)) + r": W \(3 x 3\).*read as fclib.h's"):
        problem = read_fclib(path)
    np.testing.assert_array_equal(problem.W.toarray(), W)
    with warnings.catch_warnings():  # a symmetric W reads the same both ways: nothing to say
        warnings.simplefilter("error", AmbiguousTripletsWarning)
        read_fclib(point_on_plane(tmp_path / "symmetric.hdf5", 0.0, "triplet"))


def test_nonsymmetric_W_is_kept_refused_by_the_convex_program_by_name_and_symmetrized_on_request(
        tmp_path: Path) -> None:
    """W = I/m + a e_t1 e_n^T: kept as stored (asymmetry a m, relative to max|W| = 1/m). The
    convex program refuses it; with symmetrize=True it solves W_s = (W + W^T)/2, where the
    sticking point gives W_s r + q = 0, so r = -W_s^-1 q; FCLIB's error, measured with W as
    stored, is then |û| / (1 + sqrt|q|) with u = (W - W_s) r and De Saxcé's û (r and r - û lie
    inside the cone: the projection of the natural map leaves them)."""
    a = 0.02 / M_
    W = np.eye(3) / M_
    W[1, 0] = a
    q = np.array([-G_ * H_, 0.2 * MU * G_ * H_, 0.0])
    path = write_local(tmp_path / "nonsymmetric.hdf5", W, q, [MU])
    problem = read_fclib(path)
    assert isinstance(problem, FclibLocal) and not problem.symmetric
    assert problem.asymmetry["W"] == pytest.approx(a * M_, rel=1e-12)
    with pytest.raises(co.UnsupportedProgramError, match=re.escape(str(path)) + r": W is not symmetric.*symmetrize"):
        co.load_program(path)
    program = co.load_program(path, symmetrize=True)
    assert isinstance(program, co.ConicProgram)
    assert program.metadata["symmetric"] is False and "symmetrize=True" in program.metadata["symmetrized"]["W"]
    solution = co.solve(program, "clarabel")
    assert solution.status is co.Status.OPTIMAL
    W_s = 0.5 * (W + W.T)
    r = np.linalg.solve(W_s, -q)
    np.testing.assert_allclose(program.variable(solution.x, "impulse"), r, rtol=1e-8, atol=1e-12)
    error = fclib_merit(problem, answer_of(problem, program, solution))
    u = (W - W_s) @ r  # W r + q with W as stored
    u_hat = u + np.array([MU * np.linalg.norm(u[1:]), 0.0, 0.0])  # De Saxcé's
    expected = np.linalg.norm(u_hat) / (1.0 + np.sqrt(np.linalg.norm(q)))
    assert error == pytest.approx(expected, rel=1e-6)


def test_mass_matrix_beyond_the_stored_precision_is_refused_by_name(tmp_path: Path) -> None:
    M = M_ * np.eye(3)
    M[0, 1] = 1e-3 * M_
    path = _one_contact_global(tmp_path / "g.hdf5", M, "csr", "triplet")
    with pytest.raises(co.UnsupportedProgramError, match=r"g.hdf5: M is not symmetric \(max\|M - M\^T\| = 0.001 "):
        co.load_program(path)
    program = co.load_program(path, symmetrize=True)
    assert isinstance(program, co.ConicProgram) and "symmetrize=True" in program.metadata["symmetrized"]["M"]
    M[0, 1] = 1e-7 * M_  # within: symmetrized and said so
    program = co.load_program(_one_contact_global(tmp_path / "g2.hdf5", M, "csr", "triplet"))
    assert isinstance(program, co.ConicProgram)
    assert "within the stored precision" in program.metadata["symmetrized"]["M"]


def test_bench_reports_unreadable_and_refused_files_and_solves_the_others(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "collection"
    folder.mkdir()
    point_on_plane(folder / "stick.hdf5", 0.01)
    (folder / "truncated.hdf5").write_bytes(HDF5_SIGNATURE + b"\0" * 40)  # damaged: kept, reported
    bad = point_on_plane(folder / "bad_index.hdf5", 0.0, "csc")
    with h5py.File(bad, "r+") as handle:
        handle["fclib_local/W/i"][0] = 7  # a row index past m = 3
    W = np.eye(3) / M_
    W[1, 0] = 0.02 / M_
    write_local(folder / "nonsymmetric.hdf5", W, [-G_ * H_, 0.0, 0.0], [MU])
    df = run_benchmark(folder, ["clarabel"], ["default"]).set_index("program")
    assert df.loc["truncated.hdf5", "status"] == "unreadable" and "cannot read" in df.loc["truncated.hdf5", "error"]
    assert df.loc["bad_index.hdf5", "status"] == "unreadable"
    assert "row index 7 out of range" in df.loc["bad_index.hdf5", "error"]
    assert df.loc["nonsymmetric.hdf5", "status"] == "refused" and "W is not symmetric" in df.loc["nonsymmetric.hdf5",
                                                                                                   "error"]
    assert df.loc["stick.hdf5", "success"] and not df.drop("stick.hdf5")["success"].any()
    parser = _parser()
    args = parser.parse_args(["bench", str(folder), "--solvers", "clarabel", "--no-plot", "--symmetrize",
                              "--out", str(tmp_path / "out"), "--no-progress"])
    assert args.func(args) == 0
    captured = capsys.readouterr()
    assert "2/4" in captured.out  # stick and, symmetrized, nonsymmetric
    assert ("skipped 2 of 4 file(s): 2 unreadable (1 a malformed matrix, 1 not a readable program file); the "
            "reasons are in the error column of " + str(tmp_path / "out" / "results.csv")) in captured.err
