"""compare(): the grid, executors, resumption, failing cells, and the CLI main job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import contactopt as co
from contactopt.analysis.compare import compare, plan
from contactopt.core.run_folders import CELL_STORE, COMPARE_OUTPUTS

# Columns that depend on the machine's timing, not on the physics or the solver's answer.
TIMING = {"wall_time", "build_time_total", "solve_time_total", "time_per_step", "cached", "traceback"}


def _short_box() -> co.Scene:
    import dataclasses

    return dataclasses.replace(co.load_scene("box_slide"), duration=0.03)


def _deterministic(table: pd.DataFrame) -> pd.DataFrame:
    columns = [c for c in table.columns if c not in TIMING]
    return table[columns].sort_values(["formulation", "solver", "dt"]).reset_index(drop=True)


def test_grid_has_every_formulation_with_every_capable_solver() -> None:
    scene = _short_box()
    cells, skipped = plan(scene, ["lcp", "anitescu", "ccp", "ode"], ["clarabel", "osqp", "lemke"], [1e-3, 2e-3])
    pairs = {(c.formulation, c.solver) for c in cells}
    # lcp only with lemke; the QP with all three (lemke through qp->lcp); the SOCP with clarabel;
    # ode takes no solver.
    assert pairs == {("lcp", "lemke"), ("anitescu", "clarabel"), ("anitescu", "osqp"), ("anitescu", "lemke"),
                     ("ccp", "clarabel"), ("ode", "-")}
    assert len(cells) == 2 * len(pairs)
    assert "lcp x clarabel" in skipped and "ccp x osqp" in skipped


def test_serial_table_has_a_row_per_cell_with_metrics() -> None:
    scene = _short_box()
    table = compare(scene, ["lcp", "anitescu:form=dual"], ["lemke", "clarabel"])
    assert list(table[["formulation", "solver"]].itertuples(index=False, name=None)) == [
        ("lcp", "lemke"), ("lcp", "clarabel"), ("anitescu:form=dual", "lemke"), ("anitescu:form=dual", "clarabel")]
    # lcp x clarabel is a refused row (the solver cannot take the LCP), the others ran
    assert list(table["status"]) == ["completed", "refused", "completed", "completed"]
    table = table[table["status"] == "completed"]
    for column in ("formulation", "solver", "dt", "status", "max_penetration", "max_cone_violation",
                   "max_ncp_desaxce", "time_per_step", "steps"):
        assert column in table.columns
    assert (table["steps"] == 30).all()


def test_dask_local_cluster_gives_the_serial_table(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    scene = _short_box()
    grid = (["lcp", "anitescu", "ccp"], ["lemke", "clarabel"])
    serial = compare(scene, *grid)
    distributed = compare(scene, *grid, executor="dask", workers=2)
    pd.testing.assert_frame_equal(_deterministic(serial), _deterministic(distributed))
    process = compare(scene, *grid, executor="process", workers=2)
    pd.testing.assert_frame_equal(_deterministic(serial), _deterministic(process))


def test_sweep_resumes_without_recomputing_finished_cells(tmp_path: Path) -> None:
    scene = _short_box()
    grid = (["lcp", "anitescu", "ccp"], ["lemke", "clarabel"])
    first = compare(scene, *grid, out=tmp_path)
    assert not first["cached"].any()
    # An interrupted sweep: one cell never finished (its files are missing).
    lost = first["cell"].iloc[1]
    for path in (tmp_path / "cells").glob(f"{lost}.*"):
        path.unlink()
    second = compare(scene, *grid, out=tmp_path)
    ran = first["status"] != "refused"  # lcp x clarabel and ccp x lemke: refused rows, never stored
    assert list(second["cached"]) == [c != lost and r for c, r in zip(first["cell"], ran, strict=True)]
    pd.testing.assert_frame_equal(_deterministic(first), _deterministic(second))
    assert (tmp_path / "table.csv").exists() and (tmp_path / "table.parquet").exists()
    assert len(pd.read_parquet(tmp_path / "traces.parquet")) == 30 * int(ran.sum())


def test_a_failing_cell_is_an_error_row_and_keeps_every_other_row(tmp_path: Path) -> None:
    scene = _short_box()
    table = compare(scene, ["lcp", "regularized:solref=[0.02]"], ["lemke", "clarabel"], out=tmp_path)
    errors = table[table["status"] == "error"]
    assert len(errors) >= 1 and errors["error"].str.contains("solref").all()
    assert list(table[table["formulation"] == "lcp"]["status"]) == ["completed", "refused"]
    # Errors (and refused rows) are not cached: a re-run retries them (and reloads the rest).
    again = compare(scene, ["lcp", "regularized:solref=[0.02]"], ["lemke", "clarabel"], out=tmp_path)
    assert list(again["cached"]) == list(~again["status"].isin(["error", "refused"]))


def test_stopped_run_is_reported_with_its_status() -> None:
    scene = _short_box()
    table = compare(scene, ["anitescu"], ["clarabel"], solver_options={"max_iter": 1})
    row = table.iloc[0]
    assert row["status"] == "stopped" and row["n_failed"] == 1 and "max_iterations" in row["status_counts"]


def test_compare_cli_prints_the_table_and_writes_plots_and_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The main job's outputs on a short box slide (the full default sweep is the slow test
    below): a row per formulation and capable solver, the printed table, plots and report."""
    from contactopt.cli import main

    scene_file = tmp_path / "box.toml"
    scene_file.write_text((Path(__file__).resolve().parent.parent / "problems" / "box_slide.toml").read_text()
                          .replace("duration = ", "duration = 0.05 #"))
    formulations, solvers = ["gauss", "lcp", "ccp"], ["clarabel", "lemke"]
    code = main(["compare", str(scene_file), "--formulations", ",".join(formulations), "--solvers",
                 ",".join(solvers), "--executor", "serial", "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "out" / "table.csv")
    cells, skipped = plan(co.load_scene(scene_file), formulations, solvers)
    ran = table[table["status"] != "refused"]
    assert sorted(zip(ran["formulation"], ran["solver"], strict=True)) == sorted(
        (c.formulation, c.solver) for c in cells)
    assert sorted(f"{f} x {s}" for f, s in table[table["status"] == "refused"][["formulation", "solver"]]
                  .itertuples(index=False)) == sorted(skipped) == ["ccp x lemke", "lcp x clarabel"]
    assert (ran["status"] == "completed").all() and np.isfinite(ran["max_penetration"]).all()
    for name in ("trajectories.png", "metrics.png", "time_per_step.png", "report.md", "traces.parquet"):
        assert (tmp_path / "out" / name).exists(), name
    # every file it wrote is one `compare --force` removes (so none can survive a later run as stale)
    assert {p.name for p in (tmp_path / "out").iterdir()} <= {*COMPARE_OUTPUTS, *CELL_STORE}
    # the compact table: metrics under short headers, each named in the legend with its table.csv column
    assert "penetration" in printed and "(max_ncp_desaxce)" in printed and "lemke" in printed
    assert "2 refused before step 0" in printed
    assert "refused before step 0, no step run (2 formulation/solver" in printed
    # the scene's observables: printed with their references, one row per cell and observable on disk
    assert "observables of box_slide" in printed and "[m] vs 0.1019" in printed
    observed = pd.read_csv(tmp_path / "out" / "observables.csv")
    assert len(observed) == 4 * len(table) and set(observed["observable"]) >= {"stop_distance", "energy_balance"}
    report = (tmp_path / "out" / "report.md").read_text().splitlines()
    assert report[2].split("|")[1].strip() == "formulation" and set(report[3]) <= {"|", "-"}  # a Markdown table


@pytest.mark.slow  # the default sweep of every formulation and solver; the test above covers the outputs
def test_compare_cli_is_the_main_job(tmp_path: Path) -> None:
    """`contactopt compare problems/box_slide.toml` prints the table and writes a row per
    formulation and solver, the plots and the report. (Its speed is measured by
    experiments/bench_step.py, not asserted here: a wall-clock limit fails on a loaded machine.)"""
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-m", "contactopt", "compare", str(root / "problems" / "box_slide.toml"),
                             "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    table = pd.read_csv(tmp_path / "table.csv")
    cells, skipped = plan(co.load_scene(root / "problems" / "box_slide.toml"))
    ran = table[table["status"] != "refused"]  # the pairs refused before step 0 are rows too
    assert sorted(zip(ran["formulation"], ran["solver"], strict=True)) == sorted(
        (c.formulation, c.solver) for c in cells)
    assert len(table) - len(ran) == len(skipped)
    assert set(table["formulation"]) == {"gauss", "lcp", "anitescu", "ccp", "regularized", "coulomb", "variational"}
    for name in ("trajectories.png", "metrics.png", "time_per_step.png", "report.md", "traces.parquet"):
        assert (tmp_path / name).exists(), name
    assert "penetration" in result.stdout and "lemke" in result.stdout
    assert np.isfinite(ran["max_penetration"]).all()


def test_default_comparison_leaves_out_cvxpy_unless_named() -> None:
    """cvxpy re-solves the same programs through the solvers it wraps: opt-in in a comparison."""
    from contactopt import solvers

    scene = co.load_scene("box_slide")
    default = {cell.solver for cell in plan(scene, ["anitescu"])[0]}
    assert "cvxpy" not in default and "clarabel" in default and "osqp" in default
    assert set(solvers.comparison_defaults()) == set(solvers.available()) - {"cvxpy"}
    if "cvxpy" in solvers.available():
        assert {cell.solver for cell in plan(scene, ["anitescu"], ["cvxpy"])[0]} == {"cvxpy"}


def test_warm_up_runs_each_distinct_cell_once_in_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Numba kernels compile on their first call: ``compare`` runs each distinct (method,
    solver, options) for two steps before any cell is timed (issue 27: timings without
    compilation), and forked workers inherit the compiled kernels."""
    from contactopt.analysis import workers
    from contactopt.analysis.compare import Cell

    calls: list[tuple[str, str, float]] = []

    def counting(scene: Any, **kwargs: Any) -> None:
        calls.append((kwargs["formulation"], kwargs["solver"], kwargs["duration"]))

    monkeypatch.setattr(sys.modules["contactopt.simulation"], "simulate", counting)  # the module, not co.simulate
    scene = co.load_scene("box_slide")
    cells = [Cell("lcp", "lcp", (), "lemke", dt, 1.0) for dt in (1e-3, 2e-3)]
    cells += [Cell("ccp", "ccp", (), "pgs", 1e-3, 1.0)]
    workers.warm_up(scene, [(str(i), cell) for i, cell in enumerate(cells)], {})
    assert calls == [("lcp", "lemke", 2e-3), ("ccp", "pgs", 2e-3)]
