"""``contactopt bench`` records convergence histories beside its timings (issue 25 item 3):
histories.csv ends, per solve, at the FCLIB error results.csv reports for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from contactopt.cli import main


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
