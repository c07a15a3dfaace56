"""Program export (npz, FCLIB HDF5, qpbenchmark test set), the solver benchmark and the
qpsolvers backend.

The exported files are read back by other code than the writer: the FCLIB files with h5py
directly (a reader written here from FCLIB's specification), against the local problem
computed here from the system's own dynamics and contacts; the qpbenchmark test set through
qpbenchmark's own loader and runner, and each of its problems with qpsolvers' Problem.load.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt import solvers
from contactopt.analysis.bench import (
    PROFILES,
    Profile,
    display_summary,
    performance_profile,
    performance_ratios,
    run_benchmark,
    shifted_geometric_mean,
    summarize,
)
from contactopt.analysis.export import export_run, qpbenchmark_class_name
from contactopt.cli.bench import add_bench_parser
from contactopt.cli.common import _Parser
from contactopt.cli.export import add_export_parser

qpsolvers = pytest.importorskip("qpsolvers")
pytestmark = pytest.mark.filterwarnings("ignore:formulation 'gauss' is frictionless")

STEPS = 10
INNER = [name for name in ("proxqp", "piqp", "daqp") if name in qpsolvers.available_solvers]


@pytest.fixture(scope="module")
def box_run() -> tuple[co.Scene, co.Trajectory]:
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "box_slide.toml")
    traj = co.simulate(scene, formulation="anitescu", solver="clarabel", duration=STEPS * scene.dt)
    assert traj.completed and len(traj.steps) == STEPS
    return scene, traj


@pytest.fixture(scope="module")
def qp_export(box_run: tuple[co.Scene, co.Trajectory], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    scene, traj = box_run
    folder = tmp_path_factory.mktemp("qp_export")
    return export_run(scene, traj, folder, formats=("npz", "qpbenchmark"), formulation="anitescu",
                      options={"form": "dual"})


@pytest.fixture(scope="module")
def fclib_export(box_run: tuple[co.Scene, co.Trajectory], tmp_path_factory: pytest.TempPathFactory) -> Path:
    scene, traj = box_run
    written = export_run(scene, traj, tmp_path_factory.mktemp("fclib_export"), formats="fclib",
                         formulation="ccp")
    return written["fclib"]


@pytest.fixture(scope="module")
def bench_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 step programs of a table resting on four legs (anitescu dual: 32 edge impulses, P
    only semidefinite, every step with real contact forces)."""
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "table_four_legs.toml")
    traj = co.simulate(scene, formulation="anitescu", duration=STEPS * scene.dt)
    folder = tmp_path_factory.mktemp("bench_programs")
    return export_run(scene, traj, folder, formats="npz", formulation="anitescu", options={"form": "dual"})["npz"]


def _independent_local(system: Any, q: np.ndarray, v: np.ndarray, h: float) -> dict[str, np.ndarray]:
    """FCLIB's W, q, mu computed here from the system: W = J M^-1 J^T, q = J v_free + [phi/h, 0..]."""
    dyn = system.dynamics(q, v)
    contacts = system.contacts(q)
    M, J = dyn.M_dense, contacts.J_dense
    v_free = v + h * np.linalg.solve(M, dyn.tau)
    local_q = J @ v_free
    local_q[:: contacts.dim] += contacts.phi / h
    return {"W": J @ np.linalg.solve(M, J.T), "q": local_q, "mu": contacts.mu, "dim": contacts.dim,
            "J": J, "M": M, "v_free": v_free}


def _read_fclib_matrix(group: h5py.Group) -> np.ndarray:
    """FCLIB's matrix (fclib.h): nz = -1 compressed columns, -2 compressed rows, >= 0 triplets
    (p rows, i columns); sizes as fclib_read_local allocates them."""
    m, n, nz, nzmax = (int(group[key][0]) for key in ("m", "n", "nz", "nzmax"))
    for key in ("m", "n", "nz", "nzmax", "p", "i"):
        assert group[key].dtype == np.int32
    p, i, x = group["p"][:], group["i"][:], group["x"][:]
    assert x.shape == (nzmax,)
    if nz >= 0:
        return sp.coo_matrix((x[:nz], (p[:nz], i[:nz])), shape=(m, n)).toarray()
    assert i.shape == (nzmax,)
    if nz == -1:
        assert p.shape == (n + 1,)
        return sp.csc_matrix((x, i, p), shape=(m, n)).toarray()
    assert nz == -2 and p.shape == (m + 1,)
    return sp.csr_matrix((x, i, p), shape=(m, n)).toarray()


# --- FCLIB --------------------------------------------------------------------------------


def test_fclib_files_read_back_to_the_local_problems(box_run: tuple[co.Scene, co.Trajectory],
                                                     fclib_export: Path) -> None:
    """One FCLIB file per step, the problem at the root as fclib_read_local expects it."""
    scene, traj = box_run
    h = traj.dt
    files = sorted(fclib_export.glob("*.hdf5"))
    assert fclib_export.name == "box_slide" and [f.name for f in files] == [f"step_{i:06d}.hdf5" for i in range(STEPS)]
    for i, path in enumerate(files):
        with h5py.File(path, "r") as handle:
            assert set(handle) == {"fclib_local", "contactopt"}  # the extra group FCLIB readers skip
            local = handle["fclib_local"]
            assert local["spacedim"].dtype == np.int32 and local["spacedim"][:].tolist() == [3]
            W = _read_fclib_matrix(local["W"])
            q, mu = local["vectors/q"][:], local["vectors/mu"][:]
            assert "V" not in local and "R" not in local  # no bilateral rows in this scene
            assert {"title", "description", "math_info"} <= set(local["info"])
            assert handle["contactopt"].attrs["step"] == i
        ref = _independent_local(scene.system, traj.q[i], traj.v[i], h)
        assert W.shape == (3 * mu.size, 3 * mu.size)
        np.testing.assert_allclose(W, ref["W"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(q, ref["q"], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(mu, ref["mu"])
        assert np.allclose(W, W.T) and np.linalg.eigvalsh(W).min() > -1e-12
        # the ccp dual program of the step is min 1/2 r'Wr + q'r over the friction cones, and
        # that is what co.load_program makes of the file
        dual = co.formulate(scene.system, traj.q[i], traj.v[i], h, "ccp", {"form": "dual"})
        np.testing.assert_allclose(dual.P.toarray(), W, atol=1e-12)
        np.testing.assert_allclose(dual.c, q, atol=1e-12)
        loaded = co.load_program(path)
        assert isinstance(loaded, co.ConicProgram) and loaded.cones == dual.cones
        np.testing.assert_allclose(loaded.P.toarray(), W, atol=1e-15)
        np.testing.assert_array_equal(loaded.c, q)
        np.testing.assert_array_equal(loaded.A.toarray(), dual.A.toarray())


@pytest.mark.parametrize("solver", ["clarabel", "pgs"])
def test_exported_fclib_step_solved_for_coulomb(fclib_export: Path, solver: str) -> None:
    """Step 0 of the box slide (1 kg, v0 = 1 m/s along x, mu = 0.5, on the ground): 8 corner
    contacts, W of rank 6. Coulomb's law: the box keeps sliding on the ground, so the impulses
    sum to m g h up and mu m g h back, and every touching corner slides at v0 - mu g h. The
    convex program alone hydroplanes: sum r_N = m (g h + mu v0) / (1 + mu^2)."""
    m, g, h, mu, v0 = 1.0, 9.81, 1e-3, 0.5, 1.0
    path = fclib_export / "step_000000.hdf5"
    problem = co.programs.read_fclib(path)
    program = co.load_program(path)
    solution = co.solve(program, solver)
    ccp = program.variable(solution.x, "impulse").reshape(-1, 3).sum(axis=0)
    assert ccp[0] == pytest.approx(m * (g * h + mu * v0) / (1 + mu**2), rel=1e-6)
    result = co.programs.solve_coulomb(problem, solver, tol=1e-9)
    assert result.converged and result.error <= 1e-9
    total = result.answer.r.reshape(-1, 3).sum(axis=0)
    np.testing.assert_allclose(total, [m * g * h, -mu * m * g * h, 0.0], rtol=1e-6, atol=1e-10)
    u = result.answer.u.reshape(-1, 3)
    touching = problem.q[::3] < 0  # the 4 bottom corners (phi = 0); the top ones are 0.2 m up
    assert touching.sum() == 4
    np.testing.assert_allclose(u[touching], [[0.0, v0 - mu * g * h, 0.0]] * 4, atol=1e-7)
    # the same problem with every right-hand side 1e-6 times smaller has the answer 1e-6 times
    # smaller (homogeneity); solve_coulomb normalises the data so the solver's absolute
    # tolerance floors do not swamp it
    small = dataclasses.replace(problem, q=1e-6 * problem.q)
    tiny = co.programs.solve_coulomb(small, solver, tol=1e-15, max_iter=20)
    np.testing.assert_allclose(tiny.answer.r.reshape(-1, 3).sum(axis=0), 1e-6 * total, rtol=1e-6, atol=1e-16)


def test_fclib_mixed_problem_with_bilateral_rows(tmp_path: Path) -> None:
    """A planar pendulum on a rod (one bilateral row) above a floor: FCLIB's V, R, s."""
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cartesian_pendulum_floor.toml")
    traj = co.simulate(scene, duration=3 * scene.dt)
    folder = export_run(scene, traj, tmp_path, formats=["fclib"])["fclib"]
    i, h = 2, traj.dt
    ref = _independent_local(scene.system, traj.q[i], traj.v[i], h)
    H = scene.system.constraints(traj.q[i], traj.v[i], traj.t[i]).H
    with h5py.File(folder / f"step_{i:06d}.hdf5", "r") as handle:
        local = handle["fclib_local"]
        assert local["spacedim"][0] == 2
        np.testing.assert_allclose(_read_fclib_matrix(local["W"]), ref["W"], atol=1e-12)
        np.testing.assert_allclose(_read_fclib_matrix(local["R"]), H @ np.linalg.solve(ref["M"], H.T), atol=1e-12)
        np.testing.assert_allclose(_read_fclib_matrix(local["V"]), ref["J"] @ np.linalg.solve(ref["M"], H.T),
                                   atol=1e-12)
        np.testing.assert_allclose(local["vectors/s"][:], H @ ref["v_free"], atol=1e-12)  # drift "none"


def test_fclib_skips_normal_only_contacts(tmp_path: Path) -> None:
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cart_wall.toml")
    traj = co.simulate(scene, duration=3 * scene.dt)
    with pytest.warns(UserWarning, match="spacedim 2 or 3"):
        written = export_run(scene, traj, tmp_path, formats=["npz", "fclib"])
    assert set(written) == {"npz"}


# --- npz ----------------------------------------------------------------------------------


def test_npz_export_round_trips(box_run: tuple[co.Scene, co.Trajectory], qp_export: dict[str, Path]) -> None:
    scene, traj = box_run
    files = sorted(qp_export["npz"].glob("step_*.npz"))
    assert [f.name for f in files] == [f"step_{i:06d}.npz" for i in range(STEPS)]
    for i, path in enumerate(files):
        loaded = co.load_program(path)
        built = co.formulate(scene.system, traj.q[i], traj.v[i], traj.dt, "anitescu", {"form": "dual"},
                             t=float(traj.t[i]))
        assert isinstance(loaded, co.ConicProgram) and isinstance(built, co.ConicProgram)
        assert (loaded.P != built.P).nnz == 0 and (loaded.A != built.A).nnz == 0
        np.testing.assert_array_equal(loaded.c, built.c)
        np.testing.assert_array_equal(loaded.b, built.b)
        assert loaded.cones == built.cones and loaded.variables == built.variables
        assert loaded.metadata["t"] == pytest.approx(traj.t[i]) and loaded.metadata["form"] == "dual"


# --- qpbenchmark --------------------------------------------------------------------------


def _load_with_qpbenchmark(module_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from qpsolvers_benchmark.benchmark import load_test_set

    monkeypatch.setattr(sys, "path", list(sys.path))  # load_test_set appends the folder
    monkeypatch.delitem(sys.modules, module_path.stem, raising=False)
    test_set = load_test_set(str(module_path.resolve()))
    monkeypatch.delitem(sys.modules, module_path.stem, raising=False)
    return test_set


def test_qpbenchmark_test_set_loads_and_equals_the_programs(
        box_run: tuple[co.Scene, co.Trajectory], qp_export: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    scene, traj = box_run
    module = qp_export["qpbenchmark"]
    assert module.name == "contactopt_box_slide.py"
    files = sorted((module.parent / "contactopt_box_slide").glob("*.npz"))
    assert [f.stem for f in files] == [f"contactopt_box_slide_step_{i:06d}" for i in range(STEPS)]
    test_set = _load_with_qpbenchmark(module, monkeypatch)
    assert type(test_set).__name__ == qpbenchmark_class_name("contactopt_box_slide") == "ContactoptBoxSlide"
    assert set(test_set.tolerances) == set(test_set.solver_settings) == set(PROFILES)
    problems = list(test_set)
    assert len(problems) == test_set.count_problems() == STEPS
    for i, problem in enumerate(problems):
        program = co.formulate(scene.system, traj.q[i], traj.v[i], traj.dt, "anitescu", {"form": "dual"})
        assert isinstance(program, co.ConicProgram)
        A, b = program.A.toarray(), program.b
        ineq, eq = program.cone_rows("nonneg"), program.cone_rows("zero")
        assert problem.name == f"contactopt_box_slide_step_{i:06d}"
        np.testing.assert_array_equal(np.asarray(problem.P), program.P.toarray())
        np.testing.assert_array_equal(problem.q, program.c)
        np.testing.assert_array_equal(np.asarray(problem.G), A[ineq])
        np.testing.assert_array_equal(problem.h, b[ineq])
        assert not eq.any() and problem.A is None and problem.b is None
        assert problem.lb is None and problem.ub is None
        reference = co.solve(program, "clarabel")
        assert problem.optimal_cost == pytest.approx(program.objective(reference.x), abs=1e-9)
        alone = qpsolvers.Problem.load(str(files[i]))  # qpsolvers' own loader, one file
        np.testing.assert_array_equal(np.asarray(alone.P), program.P.toarray())
        np.testing.assert_array_equal(np.asarray(alone.G), A[ineq])
        assert alone.A is None and alone.lb is None and alone.ub is None
    # and qpbenchmark's own runner solves it, with a small cost error against the reference
    if "daqp" in test_set.solvers:
        from qpsolvers_benchmark.results import Results
        from qpsolvers_benchmark.run import run

        results = Results(str(tmp_path / "results.csv"), test_set)
        run(test_set, results, only_solver="daqp", only_settings="high_accuracy")
        assert len(results.df) == STEPS and results.df["found"].all()
        assert results.df["cost_error"].abs().max() < 1e-8


def test_qpbenchmark_skips_socps_with_a_warning(box_run: tuple[co.Scene, co.Trajectory], tmp_path: Path) -> None:
    scene, traj = box_run
    with pytest.warns(UserWarning, match="qpbenchmark export") as caught:
        written = export_run(scene, traj, tmp_path, formats="qpbenchmark", formulation="ccp")
    assert "qpbenchmark" not in written
    assert any("QPs only" in str(w.message) for w in caught)


# --- qpsolvers backend --------------------------------------------------------------------


def _step_programs(name: str, formulation: str, options: dict[str, Any], steps: list[int]) -> list[Any]:
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / f"{name}.toml")
    traj = co.simulate(scene, duration=(max(steps) + 1) * scene.dt)
    return [co.formulate(scene.system, traj.q[i], traj.v[i], scene.dt, formulation, options) for i in steps]


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize(("scene", "formulation", "options", "steps"), [
    ("cart_wall", "gauss", {}, [0, 4, 5, 8]),                    # the impact step 5 and resting after
    ("cart_wall", "anitescu", {"form": "dual"}, [5, 8]),
    ("box_slide", "anitescu", {"form": "primal"}, [0, 3]),
    ("box_slide", "anitescu", {"form": "dual"}, [0, 3]),         # P only semidefinite (32 edges, nv = 6)
    ("cartesian_pendulum_floor", "gauss", {}, [2]),              # an equality row and a contact row
])
def test_qpsolvers_backend_matches_clarabel(inner: str, scene: str, formulation: str,
                                             options: dict[str, Any], steps: list[int]) -> None:
    for program in _step_programs(scene, formulation, options, steps):
        reference = co.solve(program, "clarabel")
        solution = co.solve(program, f"qpsolvers:{inner}")
        assert solution.solver == f"qpsolvers:{inner}"
        assert solution.status is co.Status.OPTIMAL, solution.message
        assert solution.residuals.primal < 1e-6 and solution.residuals.dual < 1e-6
        assert solution.residuals.gap < 1e-6
        # P x and the objective are unique even where x is not (semidefinite dual programs)
        np.testing.assert_allclose(program.P @ solution.x, program.P @ reference.x, atol=1e-5)
        assert program.objective(solution.x) == pytest.approx(program.objective(reference.x), abs=1e-7)
        if program.cone_rows("zero").any():  # equality duals: same sign convention as clarabel
            rows = program.cone_rows("zero")
            np.testing.assert_allclose(solution.y[rows], reference.y[rows], atol=1e-6)
        assert np.all(solution.y[program.cone_rows("nonneg")] >= -1e-8)


def test_qpsolvers_registry_and_errors() -> None:
    assert "qpsolvers" in solvers.names() and "qpsolvers" in solvers.available()
    assert solvers.kinds("qpsolvers") == frozenset({"qp"})
    assert solvers.kinds(f"qpsolvers:{INNER[0]}") == frozenset({"qp"})
    with pytest.raises(co.UnknownNameError, match="nosuchsolver"):  # refused by name (issue 12)
        solvers.kinds("qpsolvers:nosuchsolver")
    program = _step_programs("cart_wall", "gauss", {}, [0])[0]
    with pytest.raises(co.SolverUnavailableError, match="installed:.*" + INNER[0]):
        from contactopt.solvers import qpsolvers_

        qpsolvers_.solve(program, "nosuchsolver", {})
    with pytest.raises(co.UnsupportedProgramError):
        co.solve(_step_programs("box_slide", "ccp", {"form": "dual"}, [0])[0], "qpsolvers")
    with pytest.raises(co.OptionError):
        co.solve(program, "qpsolvers:osqp", {"no_such_setting": 1})


def test_simulation_with_qpsolvers_matches_clarabel() -> None:
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cart_wall.toml")
    reference = co.simulate(scene, solver="clarabel")
    traj = co.simulate(scene, solver="qpsolvers")
    assert traj.completed
    # clarabel's interior point lets the resting cart creep by ~1e-5 (see clarabel_.py); the
    # textbook answer is x = 0 from step 5 on
    np.testing.assert_allclose(traj.q, reference.q, atol=1e-4)
    np.testing.assert_allclose(traj.q[5:, 0], 0.0, atol=1e-8)


# --- benchmark ----------------------------------------------------------------------------


def test_shifted_geometric_mean_by_hand() -> None:
    assert shifted_geometric_mean([1.0, 2.0, 4.0]) == pytest.approx((11 * 12 * 14) ** (1 / 3) - 10, rel=1e-14)
    assert shifted_geometric_mean([0.0, 0.0], shift=1.0) == 0.0
    assert shifted_geometric_mean([3.0], shift=1.0) == pytest.approx(3.0)


def _tiny_table() -> pd.DataFrame:
    """Two programs; solver A solves both (0.5 s, 1 s); B solves one (2 s) and fails one."""
    rows = []
    for program, solver, success, status, runtime, residual in [
        ("p1", "A", True, "optimal", 0.5, 1e-9), ("p2", "A", True, "optimal", 1.0, 3e-9),
        ("p1", "B", True, "optimal", 2.0, 1e-7), ("p2", "B", False, "max_iterations", 9.0, np.inf),
    ]:
        rows.append({"program": program, "solver": solver, "profile": "default", "status": status,
                     "success": success, "runtime": runtime, "residual": residual, "tolerance": 1e-6,
                     "time_limit": 10.0})
    return pd.DataFrame(rows)


def test_summary_of_a_tiny_table_by_hand() -> None:
    summary = summarize(_tiny_table()).set_index("solver")
    assert summary.loc["A", "success_rate"] == 1.0 and summary.loc["B", "success_rate"] == 0.5
    time_a = math.sqrt(10.5 * 11.0) - 10.0
    time_b = math.sqrt(12.0 * 20.0) - 10.0  # the failure counts at the 10 s time limit
    assert summary.loc["A", "time_sgm"] == pytest.approx(time_a, rel=1e-12)
    assert summary.loc["B", "time_sgm"] == pytest.approx(time_b, rel=1e-12)
    assert summary.loc["B", "time_sgm_ratio"] == pytest.approx(time_b / time_a, rel=1e-12)
    assert summary.loc["A", "time_sgm_ratio"] == 1.0
    residual_b = math.sqrt((10 + 1e-7) * (10 + 1e-6)) - 10  # no iterate: counted at the tolerance
    assert summary.loc["B", "residual_sgm"] == pytest.approx(residual_b, rel=1e-6)
    ratios = performance_ratios(_tiny_table(), "default")
    assert ratios.loc["p1"].tolist() == [1.0, 4.0] and ratios.loc["p2"].tolist() == [1.0, math.inf]


def test_benchmark_on_exported_programs(bench_programs: Path, tmp_path: Path) -> None:
    inner = f"qpsolvers:{INNER[0]}"
    df = run_benchmark(bench_programs, ["clarabel", inner], ["default", "low_accuracy"])
    assert len(df) == STEPS * 2 * 2
    for column in ("program", "solver", "profile", "status", "success", "solve_time", "setup_time", "residual",
                   "iterations", "error"):
        assert column in df.columns
    assert df["success"].all(), df[~df["success"]].to_string()
    summary = summarize(df)
    assert list(summary.columns) == ["solver", "profile", "problems", "solved", "success_rate", "time_sgm",
                                     "time_sgm_ratio", "time_sgm_solved", "residual_sgm", "residual_sgm_ratio",
                                     "unsupported"]
    assert len(summary) == 4 and (summary["problems"] == STEPS).all()
    png = performance_profile(df, tmp_path / "profile.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_success_needs_residuals_not_just_status(bench_programs: Path) -> None:
    """pgs asked for 1e-2 stops early with a usable status; a 1e-12 check refuses it."""
    strict = Profile("loose_solve_strict_check", eps=1e-2, tolerance=1e-12, time_limit=10.0, description="")
    df = run_benchmark(bench_programs, ["pgs"], [strict])
    usable = df["status"].isin(["optimal", "inaccurate"])
    assert usable.any() and not df.loc[usable, "success"].any()
    assert (df.loc[usable, "residual"] > 1e-12).all()


def _cli() -> _Parser:
    parser = _Parser(prog="contactopt")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_export_parser(sub)
    add_bench_parser(sub)
    return parser


def test_export_and_bench_subcommands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = _cli()
    out = tmp_path / "exported"
    # no --format: npz, fclib and (anitescu dual builds QPs) the qpbenchmark test set
    args: argparse.Namespace = parser.parse_args(
        ["export", "box_slide", "--duration", "0.005", "-f", "anitescu", "-o", "form=dual", "--out", str(out),
         "--no-progress"])
    assert args.func(args) == 0
    assert len(list((out / "npz").glob("*.npz"))) == 5
    assert len(list((out / "fclib" / "box_slide").glob("step_*.hdf5"))) == 5
    assert (out / "qpbenchmark" / "contactopt_box_slide.py").exists()
    args = parser.parse_args(["bench", str(out / "npz"), "--solvers", "clarabel,osqp", "--profiles",
                              "default,high_accuracy", "--out", str(tmp_path / "bench"), "--no-progress"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "success_rate" in printed and "time_sgm_solved [s]" in printed and "5/5" in printed
    for name in ("results.csv", "summary.csv", "performance_profile.png"):
        assert (tmp_path / "bench" / name).exists()
    assert len(pd.read_csv(tmp_path / "bench" / "results.csv")) == 5 * 2 * 2
    # the whole export folder: 5 QPs (npz) and 5 FCLIB SOCPs; qpbenchmark's problem files are
    # not contactopt programs and are left out. osqp takes the QPs only: run, not refused.
    df = run_benchmark(out, ["clarabel", "osqp"], ["default"])
    assert len(df) == 10 * 2
    assert (df[df["solver"] == "osqp"]["status"] == "unsupported").sum() == 5
    assert df[df["solver"] == "clarabel"]["success"].all()
    with pytest.raises(co.ContactoptError, match="unknown export format"):
        parser.parse_args(["export", "box_slide", "--format", "xml"]).func(
            parser.parse_args(["export", "box_slide", "--format", "xml"]))


def test_export_default_leaves_qpbenchmark_out_for_socps(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    parser = _cli()
    args = parser.parse_args(["export", "box_slide", "--duration", "0.003", "-f", "ccp", "--out", str(tmp_path),
                              "--no-progress"])
    assert args.func(args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fclib", "npz"]
    assert not [w for w in recwarn if "qpbenchmark" in str(w.message)]


def test_bench_refuses_a_set_where_a_solver_can_take_nothing(fclib_export: Path, tmp_path: Path) -> None:
    """The README's old example: SOCPs with QP-only solvers gave 600 of 800 'unsupported' rows."""
    args = _cli().parse_args(["bench", str(fclib_export), "--solvers", f"clarabel,osqp,qpsolvers:{INNER[0]}",
                              "--out", str(tmp_path / "b"), "--no-progress"])
    with pytest.raises(co.UnsupportedProgramError,
                       match=rf"^solver\(s\) osqp, qpsolvers:{INNER[0]} can take none of the 10 program\(s\) "
                       r"\(SOCP\); solvers that can: clarabel.*pgs"):
        args.func(args)
    assert not (tmp_path / "b").exists()


def test_failures_are_shown_as_failed_not_as_times(tmp_path: Path) -> None:
    table = _tiny_table()
    failing = table[table["solver"] == "B"].assign(solver="C", success=False, status="max_iterations",
                                                   residual=np.inf)
    summary = summarize(pd.concat([table, failing], ignore_index=True))
    rows = {row["solver"]: row for row in display_summary(summary)}
    assert rows["A"]["time_sgm_solved [s]"] == f"{math.sqrt(10.5 * 11.0) - 10.0:.4g}"
    assert rows["B"]["time_sgm_solved [s]"] == "2 (1/2)"  # the solved 2 s solve, not the 10 s penalty
    assert rows["C"]["time_sgm_solved [s]"] == rows["C"]["time_score"] == rows["C"]["residual_sgm"] == "failed"
    assert summary.set_index("solver").loc["C", "time_sgm"] == pytest.approx(10.0)  # the penalty, in the stats
    assert math.isnan(summary.set_index("solver").loc["C", "time_sgm_solved"])
    png = performance_profile(pd.concat([table, failing], ignore_index=True), tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
