"""``contactopt bench`` records convergence histories beside its timings (issue 25 item 3):
histories.csv ends, per solve, at the FCLIB error results.csv reports for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core.errors import OptionError
from contactopt.solvers import spec


def test_bench_writes_histories_that_end_at_the_reported_error(tmp_path: Path) -> None:
    assert main(["export", "box_slide", "-f", "coulomb", "--format", "fclib", "--duration", "0.004",
                 "--out", str(tmp_path / "x"), "--no-progress"]) == 0
    out = tmp_path / "bench"
    assert main(["bench", str(tmp_path / "x" / "fclib"), "--solvers", "nsgs,staggered,clarabel", "--out", str(out),
                 "--no-progress"]) == 0
    results = pd.read_csv(out / "results.csv")
    histories = pd.read_csv(out / "histories.csv")
    assert set(histories["solver"]) == {"nsgs", "staggered"}  # clarabel records none
    assert (out / "histories.png").is_file()
    for solver in ("nsgs", "staggered"):
        last = histories[histories["solver"] == solver].groupby("problem")["fclib"].last()
        reported = results[results["solver"] == solver].set_index("program")["fclib_error"]
        assert len(last) == len(reported) == 4  # 0.004 s at dt = 1e-3
        np.testing.assert_allclose(last.sort_index().to_numpy(), reported.sort_index().to_numpy(), rtol=1e-9,
                                   atol=1e-15)


def test_bench_with_cvxpy_asks_only_the_solvers_that_record_histories(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35 item 4: the README's bench with cvxpy handed cvxpy's Clarabel ``history`` and exited 1
    after writing its CSVs. Histories are contactopt's own: only solvers whose spec declares
    ``history`` are asked, and the bench ends with its summary."""
    pytest.importorskip("cvxpy")
    assert main(["export", "table_four_legs", "-f", "ccp", "--duration", "0.002", "--out", str(tmp_path / "x"),
                 "--no-progress"]) == 0
    out = tmp_path / "bench"
    capsys.readouterr()
    assert main(["bench", str(tmp_path / "x" / "fclib"), "--solvers", "clarabel,pgs,cvxpy", "--profiles",
                 "default,high_accuracy", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    results = pd.read_csv(out / "results.csv")
    assert set(results["solver"]) == {"clarabel", "pgs", "cvxpy"}
    assert set(pd.read_csv(out / "histories.csv")["solver"]) == {"pgs"}
    assert "cvxpy" in printed and str(out) in printed


def test_the_history_flag_is_what_the_backends_do() -> None:
    """A spec declaring ``history`` records one; cvxpy, which passes options to its inner solver,
    refuses the option in one OptionError naming it (no TypeError)."""
    scene = co.load_scene("box_slide")
    prog = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "ccp", options={"form": "dual"})
    assert spec("pgs").history and not spec("clarabel").history and not spec("cvxpy").history
    history = co.solve(prog, "pgs", {"history": True}).history
    assert history is not None and len(history["iteration"]) > 0
    if spec("cvxpy").is_available():
        with pytest.raises(OptionError, match=r"'cvxpy'.*history"):
            co.solve(prog, "cvxpy", {"history": True})
