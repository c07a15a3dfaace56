"""Program export (npz, qpbenchmark test set), the solver benchmark and the qpsolvers
backend (the FCLIB export: tests/test_export_fclib.py).

The exported files are read back by other code than the writer: the qpbenchmark test set
through qpbenchmark's own loader and runner, and each of its problems with qpsolvers'
Problem.load.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import BOX_RUN_STEPS

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

STEPS = BOX_RUN_STEPS  # the box_run fixture's steps (tests/conftest.py)
INNER = [name for name in ("proxqp", "piqp", "daqp") if name in qpsolvers.available_solvers]


@pytest.fixture(scope="module")
def qp_export(box_run: tuple[co.Scene, co.Trajectory], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    scene, traj = box_run
    folder = tmp_path_factory.mktemp("qp_export")
    return export_run(scene, traj, folder, formats=("npz", "qpbenchmark"), formulation="anitescu",
                      options={"form": "dual"})


@pytest.fixture(scope="module")
def bench_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 step programs of a table resting on four legs (anitescu dual: 32 edge impulses, P
    only semidefinite, every step with real contact forces)."""
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "table_four_legs.toml")
    traj = co.simulate(scene, formulation="anitescu", duration=STEPS * scene.dt)
    folder = tmp_path_factory.mktemp("bench_programs")
    return export_run(scene, traj, folder, formats="npz", formulation="anitescu", options={"form": "dual"})["npz"]


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
        from contactopt.solvers.backends import qpsolvers as qpsolvers_

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
                                     "time_sgm_ratio", "time_sgm_solved", "time_median_solved", "time_iqr_solved",
                                     "residual_sgm", "residual_sgm_ratio", "unsupported"]
    assert len(summary) == 4 and (summary["problems"] == STEPS).all()
    png = performance_profile(df, tmp_path / "profile.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_success_needs_residuals_not_just_status(bench_programs: Path) -> None:
    """pgs answers with a usable status (asked for 1e-2, it keeps its own 1e-10: never looser);
    a 1e-17 check, below double precision's reach, refuses every answer, and says why."""
    strict = Profile("strict_check", eps=1e-2, tolerance=1e-17, time_limit=10.0, description="")
    df = run_benchmark(bench_programs, ["pgs"], [strict])
    usable = df["status"].isin(["optimal", "inaccurate"])
    assert usable.any() and not df.loc[usable, "success"].any()
    assert (df.loc[usable, "residual"] > 1e-17).all()
    assert df.loc[usable, "error"].str.contains(r"but residual .* > tolerance 1e-17 \(").all()  # says why


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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.json", "fclib", "npz"]
    assert not [w for w in recwarn if "qpbenchmark" in str(w.message)]


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


# --- profiles per solver, failures with their reason, one folder per bench (issue 27) -------


def test_pgs_at_high_accuracy_succeeds_where_its_residuals_meet_the_profile(bench_programs: Path) -> None:
    """high_accuracy asks pgs for min(1e-9, its default 1e-10) = its default: every program
    where pgs's own answer meets the profile's 1e-9 is a success, every other one says why."""
    df = run_benchmark(bench_programs, ["pgs"], ["high_accuracy"]).set_index("program")
    assert (df["options"].map(json.loads) == {"tol": 1e-10}).all()
    for path in sorted(bench_programs.glob("*.npz")):
        solution = co.solve(co.load_program(path), "pgs")  # pgs's defaults
        meets = solution.status.usable and solution.residuals.worst <= 1e-9
        assert df.loc[path.name, "success"] == meets, (path.name, solution.residuals.worst)
        if not meets:
            assert df.loc[path.name, "error"].startswith("status ")
    assert df["success"].any()


def test_profiles_never_ask_a_solver_for_less_than_its_default() -> None:
    from contactopt.analysis.bench import solver_options
    from contactopt.analysis.bench.profiles import INNER_TOLERANCES, declared
    from contactopt.solvers.backends import clarabel as clarabel_
    from contactopt.solvers.backends import osqp as osqp_
    from contactopt.solvers.pgs import solver as pgs

    names = [*co.solvers.available(), *(f"cvxpy:{inner}" for inner in INNER_TOLERANCES)]
    for solver in names:
        tolerances, _ = declared(solver)
        for profile in ("default", "high_accuracy", "mid_accuracy", "low_accuracy"):
            options = solver_options(solver, profile)
            for tolerance in tolerances:
                if profile != "default":
                    assert options[tolerance.option] <= tolerance.default, (solver, profile, tolerance)
    # the declarations are the backends' own defaults
    assert {t.option: t.default for t in clarabel_.SPEC.tolerances} == clarabel_.DEFAULTS
    assert {t.option: t.default for t in osqp_.SPEC.tolerances} == {k: osqp_.DEFAULTS[k] for k in ("eps_abs",
                                                                                                   "eps_rel")}
    assert [(t.option, t.default) for t in pgs.SPEC.tolerances] == [("tol", pgs.DEFAULT_TOL)]
    assert solver_options("cvxpy:SCS", "high_accuracy") == {"eps_abs": 1e-9, "eps_rel": 0.0, "time_limit_secs": 10.0}
    assert solver_options("cvxpy:ECOS", "low_accuracy") == {"feastol": 1e-8, "abstol": 1e-8, "reltol": 1e-8}


@pytest.mark.parametrize("inner", ["SCS", "ECOS"])
def test_cvxpy_inner_solvers_take_the_profile_tolerances(bench_programs: Path, inner: str) -> None:
    """The options reach the inner solver: asked for 1e-9, SCS and ECOS answer the first
    step at least as well as at their defaults, and an unknown name would have raised."""
    pytest.importorskip("cvxpy")
    from contactopt.analysis.bench import solver_options

    if inner not in __import__("cvxpy").installed_solvers():
        pytest.skip(f"cvxpy has no {inner}")
    program = co.load_program(sorted(bench_programs.glob("*.npz"))[0])
    tight = co.solve(program, f"cvxpy:{inner}", solver_options(f"cvxpy:{inner}", "high_accuracy"))
    loose = co.solve(program, f"cvxpy:{inner}")
    assert tight.status.usable and tight.residuals.worst <= loose.residuals.worst * 1.01


def test_a_plugin_declares_how_it_takes_tolerances(monkeypatch: pytest.MonkeyPatch) -> None:
    from contactopt import solvers
    from contactopt.analysis.bench import solver_options
    from contactopt.solvers.base import SolverSpec, Tolerance

    registry = dict(solvers._BACKENDS.items())
    registry["precise"] = SolverSpec(name="precise", kinds=frozenset({"qp"}), module="contactopt.solvers.pgs.solver",
                                     requires=None, install_hint="", description="a plugin",
                                     tolerances=(Tolerance("precision", 1e-5),), time_limit="seconds")
    monkeypatch.setattr(solvers, "_BACKENDS", registry)
    assert solver_options("precise", "mid_accuracy") == {"precision": 1e-6, "seconds": 10.0}
    assert solver_options("precise", "low_accuracy") == {"precision": 1e-5, "seconds": 10.0}  # never looser


def test_a_second_bench_does_not_overwrite_the_first(bench_programs: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "programs"
    inputs.mkdir()
    for path in sorted(bench_programs.glob("*.npz"))[:2]:
        (inputs / path.name).write_bytes(path.read_bytes())
    parser = _cli()
    command = ["bench", str(inputs), "--solvers", "clarabel", "--no-plot", "--no-progress"]
    assert parser.parse_args(command).func(parser.parse_args(command)) == 0
    first = (tmp_path / "bench-programs" / "results.csv").read_bytes()
    assert parser.parse_args(command).func(parser.parse_args(command)) == 0
    assert (tmp_path / "bench-programs" / "results.csv").read_bytes() == first  # untouched
    assert (tmp_path / "bench-programs-2" / "results.csv").exists()
    assert f"output folder {tmp_path / 'bench-programs-2'} (new)" in capsys.readouterr().out
    out = [*command, "--out", str(tmp_path / "bench-programs")]
    with pytest.raises(co.ContactoptError, match=r"is not empty.*--force"):
        parser.parse_args(out).func(parser.parse_args(out))
    (tmp_path / "bench-programs" / "notes.txt").write_text("mine")
    assert parser.parse_args([*out, "--force"]).func(parser.parse_args([*out, "--force"])) == 0
    printed = capsys.readouterr().out
    assert "removed the earlier bench's results.csv, summary.csv" in printed and "kept notes.txt" in printed
    assert (tmp_path / "bench-programs" / "notes.txt").read_text() == "mine"
