"""FCLIB problems written by another tool: the files here are written with h5py directly,
following the FCLIB specification (``fclib.h``: ``/fclib_local`` = spacedim, W, vectors/q, mu,
[V, R, vectors/s]; ``/fclib_global`` = spacedim, M, H, [G], vectors/f, w, mu, [b]; a matrix is
nzmax, m, n, nz, p, i, x with nz = -1 compressed columns, -2 compressed rows, >= 0 triplets
with p the row and i the column indices), never with contactopt's writer. They are read by
``co.load_program`` and solved by clarabel and pgs against answers known in closed form.

Closed forms (a point mass m on the plane z = 0, step h, gravity g, friction mu, local frame
[n, t1, t2] = [z, x, y], W = I/m, q = [-g h, v_t, 0]):

* sticking (|v_t| <= mu g h): r = [m g h, -m v_t, 0], u = 0: FCLIB's (Coulomb) problem and its
  convex relaxation agree;
* sliding (v_t > mu g h): Coulomb gives r = [m g h, -mu m g h, 0], u_T = v_t - mu g h, u_N = 0;
  the cone complementarity program (De Saxcé's term dropped, what the solvers solve) gives
  u_N = mu u_T, hence r_N = m (g h + mu v_t) / (1 + mu^2), r_T = -mu r_N.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.analysis.bench import run_benchmark
from contactopt.cli.bench import add_bench_parser
from contactopt.cli.common import _Parser
from contactopt.programs import fclib_merit, read_fclib
from contactopt.programs.coulomb_error import answer_of
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb

M_, G_, H_, MU = 2.0, 9.81, 0.01, 0.3


# --- a writer that follows the FCLIB specification (not contactopt's) ----------------------


def _ints(group: h5py.Group, **values: int) -> None:
    for key, value in values.items():
        group.create_dataset(key, data=np.array([value], dtype=np.int32))


def spec_matrix(group: h5py.Group, matrix: Any, storage: str) -> None:
    A = sp.coo_matrix(np.asarray(matrix, dtype=float))
    m, n = A.shape
    if storage == "triplet":  # fclib.h: p row indices, i column indices, nz entries
        _ints(group, nzmax=A.nnz, m=m, n=n, nz=A.nnz)
        p, i, x = A.row, A.col, A.data
    elif storage == "csparse":  # CSparse's and Siconos's triplets: i row indices, p column indices
        _ints(group, nzmax=A.nnz, m=m, n=n, nz=A.nnz)
        p, i, x = A.col, A.row, A.data
    elif storage == "csc":
        C = sp.csc_matrix(A)
        _ints(group, nzmax=C.nnz, m=m, n=n, nz=-1)
        p, i, x = C.indptr, C.indices, C.data
    else:  # csr: p row pointers (m + 1), i column indices
        R = sp.csr_matrix(A)
        _ints(group, nzmax=R.nnz, m=m, n=n, nz=-2)
        p, i, x = R.indptr, R.indices, R.data
    group.create_dataset("p", data=np.asarray(p, dtype=np.int32))
    group.create_dataset("i", data=np.asarray(i, dtype=np.int32))
    group.create_dataset("x", data=np.asarray(x, dtype=np.float64))


def write_local(path: Path, W: Any, q: Any, mu: Any, dim: int = 3, storage: str = "csc",
                V: Any = None, R: Any = None, s: Any = None) -> Path:
    with h5py.File(path, "w") as handle:
        root = handle.create_group("fclib_local")
        _ints(root, spacedim=dim)
        spec_matrix(root.create_group("W"), W, storage)
        vectors = root.create_group("vectors")
        vectors.create_dataset("q", data=np.asarray(q, dtype=float))
        vectors.create_dataset("mu", data=np.asarray(mu, dtype=float))
        if R is not None:
            spec_matrix(root.create_group("V"), V, storage)
            spec_matrix(root.create_group("R"), R, storage)
            vectors.create_dataset("s", data=np.asarray(s, dtype=float))
        info = root.create_group("info")
        info.create_dataset("title", data=np.bytes_(b"written by the test"))
    return path


def write_global(path: Path, M: Any, H: Any, f: Any, w: Any, mu: Any, G: Any = None, b: Any = None,
                 storage: str = "triplet", mass_storage: str = "csr") -> Path:
    with h5py.File(path, "w") as handle:
        root = handle.create_group("fclib_global")
        _ints(root, spacedim=3)
        spec_matrix(root.create_group("M"), M, mass_storage)
        spec_matrix(root.create_group("H"), H, storage)
        if G is not None:
            spec_matrix(root.create_group("G"), G, storage)
        vectors = root.create_group("vectors")
        for key, value in (("f", f), ("w", w), ("mu", mu), ("b", b)):
            if value is not None:
                vectors.create_dataset(key, data=np.asarray(value, dtype=float))
    return path


def point_on_plane(path: Path, v_t: float, storage: str = "csc") -> Path:
    return write_local(path, np.eye(3) / M_, [-G_ * H_, v_t, 0.0], [MU], storage=storage)


def load(path: Path, form: str | None = None) -> co.ConicProgram:
    program = co.load_program(path, form=form)
    assert isinstance(program, co.ConicProgram)
    return program


def _impulses(program: co.ConicProgram, solution: co.Solution) -> np.ndarray:
    assert solution.status is co.Status.OPTIMAL, solution.message
    return program.variable(solution.x, "impulse")


# --- local problems -----------------------------------------------------------------------


@pytest.mark.parametrize("storage", ["csc", "csr", "triplet"])
@pytest.mark.parametrize("solver", ["clarabel", "pgs"])
def test_sticking_point_on_a_plane(tmp_path: Path, storage: str, solver: str) -> None:
    v_t = 0.5 * MU * G_ * H_  # inside the cone: sticks
    path = point_on_plane(tmp_path / "stick.hdf5", v_t, storage)
    program = load(path)
    assert isinstance(program, co.ConicProgram) and program.kind == "socp"
    assert program.metadata["format"] == "fclib" and program.metadata["problem"] == "local"
    solution = co.solve(program, solver)
    r = _impulses(program, solution)
    np.testing.assert_allclose(r, [M_ * G_ * H_, -M_ * v_t, 0.0], atol=1e-8)  # normal impulse m g h
    problem = read_fclib(path)
    assert fclib_merit(problem, answer_of(problem, program, solution)) < 1e-8


@pytest.mark.parametrize("solver", ["clarabel", "pgs"])
def test_sliding_point_convex_program_and_coulomb(tmp_path: Path, solver: str) -> None:
    v_t = 1.0  # far outside the cone: slides
    path = point_on_plane(tmp_path / "slide.hdf5", v_t, "triplet")
    program = load(path)
    solution = co.solve(program, solver)
    r = _impulses(program, solution)
    rn = M_ * (G_ * H_ + MU * v_t) / (1 + MU**2)  # the convex program's closed form
    np.testing.assert_allclose(r, [rn, -MU * rn, 0.0], rtol=1e-8, atol=1e-10)
    problem = read_fclib(path)
    # ... which is not Coulomb's answer: FCLIB's own error sees De Saxcé's term
    assert fclib_merit(problem, answer_of(problem, program, solution)) > 1e-2
    result = solve_coulomb(problem, solver, tol=1e-9)
    assert result.converged and result.error <= 1e-9
    np.testing.assert_allclose(result.answer.r, [M_ * G_ * H_, -MU * M_ * G_ * H_, 0.0], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(result.answer.u, [0.0, v_t - MU * G_ * H_, 0.0], atol=1e-7)


@pytest.mark.parametrize("solver", ["clarabel", "pgs"])
def test_two_dimensional_rod_on_two_supports(tmp_path: Path, solver: str) -> None:
    """A planar rod (q = x, z, theta; mass m, inertia I) at rest on supports at x = -L and
    x = +L, spacedim 2 with frames [n, t] = [z, x]: W = J M^-1 J^T couples the contacts. The
    normal impulses are m g h / 2 each (force and moment balance); the tangential ones only
    sum to zero (W is singular there), so only that sum is checked."""
    L, inertia = 0.4, 0.05
    J = np.array([[0, 1, -L], [1, 0, 0], [0, 1, L], [1, 0, 0]], dtype=float)
    Minv = np.diag([1 / M_, 1 / M_, 1 / inertia])
    q = J @ np.array([0.0, -G_ * H_, 0.0])
    path = write_local(tmp_path / "rod.hdf5", J @ Minv @ J.T, q, [0.5, 0.5], dim=2, storage="csr")
    program = load(path)
    r = _impulses(program, co.solve(program, solver)).reshape(2, 2)
    np.testing.assert_allclose(r[:, 0], [M_ * G_ * H_ / 2] * 2, rtol=1e-7)
    assert abs(r[:, 1].sum()) < 1e-8 and np.all(np.abs(r[:, 1]) <= 0.5 * r[:, 0] + 1e-9)


def test_mixed_local_problem_with_an_equality(tmp_path: Path) -> None:
    """The point on the plane held in y by a bilateral row (V, R, s): V^T r + R lambda + s = 0
    with R = 1/m, V = e_t2 / m and s = v_y free: lambda = -m v_y, r = [m g h, 0, 0]."""
    v_y = 0.7
    V = np.array([[0.0], [0.0], [1 / M_]])
    path = write_local(tmp_path / "mixed.hdf5", np.eye(3) / M_, [-G_ * H_, 0.0, v_y], [MU],
                       V=V, R=[[1 / M_]], s=[v_y])
    program = load(path)
    solution = co.solve(program, "clarabel")
    np.testing.assert_allclose(program.variable(solution.x, "impulse"), [M_ * G_ * H_, 0, 0], atol=1e-8)
    np.testing.assert_allclose(program.variable(solution.x, "bilateral"), [-M_ * v_y], rtol=1e-8)
    problem = read_fclib(path)
    assert fclib_merit(problem, answer_of(problem, program, solution)) < 1e-8
    with pytest.raises(co.UnsupportedProgramError, match="solvers that can: clarabel"):
        co.solve(program, "pgs")  # free multipliers: pgs has no free variables


# --- global problems ----------------------------------------------------------------------

# world (x, y, z); contact frame [n, t1, t2] = [z, x, y]: H^T v = [v_z, v_x, v_y]
H_FRAME = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


# a 3 x 3 permutation H in triplets reads validly both ways (test_fclib_files: the warning)
@pytest.mark.filterwarnings("ignore::contactopt.core.errors.AmbiguousTripletsWarning")
@pytest.mark.parametrize(("form", "solver"), [("primal", "clarabel"), ("dual", "clarabel"), ("dual", "pgs")])
def test_global_point_sliding(tmp_path: Path, form: str, solver: str) -> None:
    """M v = H r + f with f = m (v0 + h g): Coulomb's answer v = (v0 - mu g h, 0, 0),
    r = [m g h, -mu m g h, 0] (by the fixed point); the convex program alone gives
    r_N = m (g h + mu v0) / (1 + mu^2)."""
    v0 = 1.0
    path = write_global(tmp_path / "global.hdf5", M_ * np.eye(3), H_FRAME, M_ * np.array([v0, 0, -G_ * H_]),
                        np.zeros(3), [MU])
    program = load(path, form=form)
    problem = read_fclib(path)
    solution = co.solve(program, solver)
    assert solution.status is co.Status.OPTIMAL
    rn = M_ * (G_ * H_ + MU * v0) / (1 + MU**2)
    np.testing.assert_allclose(answer_of(problem, program, solution).r, np.array([rn, -MU * rn, 0]),
                               rtol=1e-7, atol=1e-9)
    result = solve_coulomb(problem, solver, form=form, tol=1e-9)
    assert result.converged
    np.testing.assert_allclose(result.answer.r, [M_ * G_ * H_, -MU * M_ * G_ * H_, 0], rtol=1e-7, atol=1e-12)
    assert result.answer.v is not None
    np.testing.assert_allclose(result.answer.v, [v0 - MU * G_ * H_, 0, 0], atol=1e-8)


def test_global_with_equality_constraint(tmp_path: Path) -> None:
    """G = e_y, b = 0 (v_y held at 0) against a push f_y = 0.3 m: lambda = -0.3 m, resting r."""
    path = write_global(tmp_path / "g.hdf5", M_ * np.eye(3), H_FRAME, M_ * np.array([0, 0.3, -G_ * H_]),
                        np.zeros(3), [MU], G=[[0.0], [1.0], [0.0]], b=[0.0])
    problem = read_fclib(path)
    for form in ("primal", "dual"):
        program = load(path, form=form)
        solution = co.solve(program, "clarabel")
        answer = answer_of(problem, program, solution)
        np.testing.assert_allclose(answer.r, [M_ * G_ * H_, 0, 0], atol=1e-8)
        np.testing.assert_allclose(answer.lam, [-0.3 * M_], rtol=1e-8)
        assert fclib_merit(problem, answer) < 1e-8
    with pytest.raises(co.UnsupportedProgramError, match="solvers that can"):
        co.solve(load(path), "pgs")


# --- bad files ----------------------------------------------------------------------------


def test_bad_fclib_files_give_one_clear_error(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "empty.hdf5", "w") as handle:
        handle.create_group("step_000001")
    with pytest.raises(co.ContactoptError, match=r"no /fclib_local or /fclib_global.*step_NNNNNN"):
        load(tmp_path / "empty.hdf5")
    path = point_on_plane(tmp_path / "bad.hdf5", 0.0, "triplet")
    with h5py.File(path, "r+") as handle:
        handle["fclib_local/W/p"][0] = 7  # a row index past m = 3
    with pytest.raises(co.ContactoptError, match="fclib_local/W: malformed matrix"):
        load(path)
    write_local(tmp_path / "dim.hdf5", np.eye(4), np.zeros(4), [0.1, 0.1], dim=4)
    with pytest.raises(co.ContactoptError, match="spacedim must be 2 or 3"):
        load(tmp_path / "dim.hdf5")
    with pytest.raises(co.ContactoptError, match="no primal"):
        load(point_on_plane(tmp_path / "ok.hdf5", 0.0), form="primal")


# --- the benchmark on FCLIB files ---------------------------------------------------------


def _parser() -> _Parser:
    parser = _Parser(prog="contactopt")
    add_bench_parser(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    return parser


@pytest.mark.filterwarnings("ignore::contactopt.core.errors.AmbiguousTripletsWarning")  # H_FRAME, as above
def test_bench_reads_fclib_files_and_refuses_idle_solvers(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "collection"
    folder.mkdir()
    point_on_plane(folder / "stick.hdf5", 0.01)
    point_on_plane(folder / "slide.hdf5", 1.0)
    df = run_benchmark(folder, ["clarabel", "pgs"], ["default"])
    assert len(df) == 4 and df["success"].all()
    errors = df.set_index(["program", "solver"])["fclib_error"]
    assert errors[("stick.hdf5", "clarabel")] < 1e-9 and errors[("stick.hdf5", "pgs")] < 1e-9
    assert errors[("slide.hdf5", "clarabel")] > 1e-2  # the convex program is not Coulomb's law there
    # a global problem: primal (velocities) by default, which pgs cannot take; --fclib-form dual
    globals_ = tmp_path / "global"
    globals_.mkdir()
    write_global(globals_ / "g.hdf5", M_ * np.eye(3), H_FRAME, M_ * np.array([0.01, 0, -G_ * H_]), np.zeros(3), [MU])
    with pytest.raises(co.UnsupportedProgramError, match=r"pgs can take none"):
        run_benchmark(globals_, ["clarabel", "pgs"], ["default"])
    df = run_benchmark(globals_, ["clarabel", "pgs"], ["default"], fclib_form="dual")
    assert df["success"].all() and (df["fclib_error"] < 1e-9).all()  # sticks: v0 = 0.01 < mu g h
    parser = _parser()
    args: argparse.Namespace = parser.parse_args(["bench", str(folder), "--solvers", "clarabel,osqp",
                                                  "--out", str(tmp_path / "out"), "--no-progress"])
    with pytest.raises(co.UnsupportedProgramError, match=r"osqp can take none of the 2 program\(s\) \(SOCP\)"):
        args.func(args)
    assert not (tmp_path / "out").exists()
    args = parser.parse_args(["bench", str(folder), "--solvers", "clarabel,pgs", "--no-plot",
                              "--out", str(tmp_path / "out"), "--no-progress"])
    assert args.func(args) == 0
    assert "2/2" in capsys.readouterr().out


@pytest.mark.parametrize("dim", [2, 3])
def test_cone_projection_is_the_moreau_decomposition(dim: int) -> None:
    """FCLIB's error projects onto the Coulomb cones: x = P(x) + d with P(x) in the cone, d in
    its polar cone {mu ||d_T|| <= -d_N} and P(x) . d = 0 (Moreau), mu = 0 (a ray) included."""
    from contactopt.programs.coulomb_error import project_cones

    rng = np.random.default_rng(7)
    X = rng.normal(size=(4000, dim))
    mu = np.concatenate([np.zeros(100), rng.uniform(0.0, 2.0, 3900)])
    P = project_cones(X, mu)
    D = X - P
    assert np.all(np.linalg.norm(P[:, 1:], axis=1) <= mu * P[:, 0] + 1e-12)
    assert np.all(mu * np.linalg.norm(D[:, 1:], axis=1) <= -D[:, 0] + 1e-12)
    assert np.abs(np.sum(P * D, axis=1)).max() < 1e-12
    assert np.any(np.all(P == X, axis=1)) and np.any(np.all(P == 0, axis=1))  # both easy cases occur
