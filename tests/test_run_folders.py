"""Results are never overwritten: each `compare` and `run` writes a new folder, a non-empty
--out is refused without --force, --force removes the earlier run's files (no stale figure),
and resuming a comparison's stored cells is explicit (--resume) and says what it reused."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import pandas as pd
import pytest

from contactopt.cli import main
from contactopt.core.errors import StoredCellWarning
from contactopt.core.run_folders import RUN_OUTPUTS, next_run_folder

ROOT = Path(__file__).resolve().parents[1]
#: A comparison of four cells of 10 steps each (cart_wall: h = 0.1, 1 s).
COMPARE = ["compare", "cart_wall", "--formulations", "gauss,lcp", "--solvers", "clarabel,lemke", "--executor",
           "serial", "--no-progress"]


def _cli(*argv: str) -> tuple[int, str, str]:
    """Exit status, stdout with its wrapped lines joined, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore", StoredCellWarning)  # the lost cell of the resume test
        code = main(list(argv))
    return code, " ".join(out.getvalue().split()), err.getvalue()  # printed text unwrapped


def test_numbered_folders_follow_the_highest_taken(tmp_path: Path) -> None:
    base = tmp_path / "runs" / "compare-x"
    assert next_run_folder(base) == base and base.is_dir()
    assert next_run_folder(base) == tmp_path / "runs" / "compare-x-2"
    (tmp_path / "runs" / "compare-x-7").mkdir()
    (tmp_path / "runs" / "compare-xy").mkdir()  # another scene's folder is not a number of this one
    assert next_run_folder(base) == tmp_path / "runs" / "compare-x-8"


def test_a_second_run_and_compare_write_new_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    code, printed, _ = _cli("run", "cart_wall", "--no-plot", "--no-progress")
    assert code == 0 and "runs/cart_wall-gauss-clarabel (new)" in printed
    first = (runs / "cart_wall-gauss-clarabel" / "trajectory.npz").read_bytes()
    code, printed, _ = _cli("run", "cart_wall", "--no-plot", "--no-progress", "--duration", "0.5")
    assert code == 0 and "runs/cart_wall-gauss-clarabel-2 (new)" in printed
    assert (runs / "cart_wall-gauss-clarabel" / "trajectory.npz").read_bytes() == first  # untouched
    assert (runs / "cart_wall-gauss-clarabel-2" / "trajectory.npz").stat().st_size != len(first)

    code, printed, _ = _cli(*COMPARE, "--no-plot")
    assert code == 0 and "runs/compare-cart_wall (new)" in printed and "4 computed" in printed
    report = (runs / "compare-cart_wall" / "table.csv").read_bytes()
    code, printed, _ = _cli(*COMPARE, "--no-plot", "--executor", "serial")
    assert code == 0 and "runs/compare-cart_wall-2 (new)" in printed
    assert "4 computed" in printed and "reused" not in printed  # a new folder: nothing silently reused
    assert (runs / "compare-cart_wall" / "table.csv").read_bytes() == report


def test_a_non_empty_out_is_refused_and_force_removes_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _cli(*COMPARE, "--dt", "0.1,0.05", "--no-plot", "--out", str(out))[0] == 0
    assert (out / "convergence.csv").exists()  # orders fitted over the two step sizes
    (out / "notes.txt").write_text("mine")
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    code, printed, err = _cli(*COMPARE, "--out", str(out))
    assert code == 1 and err.count("\n") == 1 and "not empty" in err and "--force" in err and "--resume" in err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before  # nothing touched

    code, printed, _ = _cli(*COMPARE, "--no-plot", "--out", str(out), "--force")
    assert code == 0 and "removed the earlier run's" in printed and "kept notes.txt" in printed
    assert not (out / "convergence.csv").exists()  # one step size: no orders, and no stale file of the last run
    assert (out / "notes.txt").read_text() == "mine"
    table = pd.read_csv(out / "table.csv")
    assert set(table["dt"]) == {0.1} and not table["cached"].any()  # computed afresh, not the stale cells

    run = tmp_path / "run"
    assert _cli("run", "cart_wall", "--no-progress", "--no-plot", "--save-programs", "--out", str(run))[0] == 0
    assert _cli("run", "cart_wall", "--no-progress", "--no-plot", "--out", str(run))[0] == 1
    code, _, _ = _cli("run", "cart_wall", "--no-progress", "--no-plot", "--out", str(run), "--force")
    assert code == 0 and not (run / "programs").exists()  # the earlier run's programs are gone
    assert {p.name for p in run.iterdir()} == {"trajectory.npz", "summary.json"} <= set(RUN_OUTPUTS)


def test_resume_is_explicit_and_says_what_it_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _cli(*COMPARE, "--no-plot")[0] == 0
    folder = tmp_path / "runs" / "compare-cart_wall"
    lost = sorted((folder / "cells").glob("*.json"))[0]
    lost.unlink()
    # --resume alone: the latest comparison of the scene; the lost cell is computed, the others reused
    code, printed, _ = _cli(*COMPARE, "--no-plot", "--resume")
    assert code == 0 and "runs/compare-cart_wall (resumed" in printed
    assert "1 computed" in printed and "3 reused" in printed
    table = pd.read_csv(folder / "table.csv")
    assert table["cached"].sum() == 3 and len(table) == 4
    # Dask right after: every cell stored, and it says so instead of computing nothing silently
    code, printed, _ = _cli(*COMPARE, "--no-plot", "--out", str(folder), "--resume", "--executor", "dask")
    assert code == 0 and "0 computed (dask), 4 reused" in printed and "nothing computed" in printed
    assert not (tmp_path / "runs" / "compare-cart_wall-2").exists()


def test_resume_without_an_earlier_comparison_and_force_with_resume_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(*COMPARE, "--resume")
    assert code == 1 and "no earlier comparison" in err and not (tmp_path / "runs").exists()
    code, _, err = _cli(*COMPARE, "--out", str(tmp_path / "o"), "--resume", "--force")
    assert code == 1 and "exclude each other" in err
