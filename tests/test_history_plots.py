"""The history figure and table of :mod:`contactopt.analysis.bench.histories`, on synthetic
histories whose medians and quartiles are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactopt.analysis.bench.histories import history_table, median_curve, plot_histories, write_histories
from contactopt.core.errors import OptionError


def _synthetic() -> dict[str, list[dict[str, np.ndarray]]]:
    """Solver ``a``: five solves with errors ``c 10^-k`` (c = 1..5) at iteration k, solve c
    taking ``c`` ms per iteration; the solve with c = 5 stops after 3 iterations (its last
    value carries on). Solver ``b``: two solves of constant errors 1e-3 and 1e-5."""
    a = []
    for c in range(1, 6):
        k = np.arange(4 if c == 5 else 7, dtype=float)
        a.append({"iteration": k, "time": 1e-3 * c * (k + 1), "fclib": c * 10.0**-k, "relative": 0.1 * c * 10.0**-k})
    b = [{"iteration": np.arange(3.0), "time": 1e-4 * np.arange(1.0, 4.0), "fclib": np.full(3, value),
          "relative": np.full(3, value)} for value in (1e-3, 1e-5)]
    return {"a": a, "b": b}


def test_median_line_is_the_median_over_the_solves() -> None:
    histories = _synthetic()
    fig = plot_histories(histories)
    by_iteration, by_time = fig.axes[:2]
    line = next(line for line in by_iteration.get_lines() if line.get_gid() == "a")
    x, y = line.get_data()
    np.testing.assert_array_equal(x, np.arange(7.0))
    # at k <= 3 the values are c 10^-k, c = 1..5: median 3 10^-k; at k >= 4 solve 5 stays at
    # 5e-3 and the others are c 10^-k (c = 1..4): sorted (1, 2, 3, 4) 10^-k and 5e-3 -> 3 10^-k
    np.testing.assert_allclose(y, 3.0 * 10.0 ** -np.arange(7.0), rtol=1e-12)
    _, _, q25, q75 = median_curve(histories["a"], "fclib")
    np.testing.assert_allclose(q25[:4], 2.0 * 10.0 ** -np.arange(4.0), rtol=1e-12)
    np.testing.assert_allclose(q75[:4], 4.0 * 10.0 ** -np.arange(4.0), rtol=1e-12)
    assert line.get_label() == "a (n = 5)"
    two = next(line for line in by_iteration.get_lines() if line.get_gid() == "b")
    np.testing.assert_allclose(two.get_data()[1], np.full(3, 0.5 * (1e-3 + 1e-5)))  # median of two: mean
    # against time: each solve's latest iterate at every grid time, the median over those
    timed = next(line for line in by_time.get_lines() if line.get_gid() == "a")
    t, y_time = timed.get_data()
    expected = []
    for when in t:
        latest = [h["fclib"][np.searchsorted(h["time"], when, side="right") - 1] for h in histories["a"]
                  if h["time"][0] <= when]
        expected.append(np.median(latest))
    np.testing.assert_allclose(y_time, expected, rtol=1e-12)
    assert by_time.get_xscale() == "log" and by_iteration.get_yscale() == "log"
    assert by_time.get_xlabel() == "time [s]" and "FCLIB error" in by_iteration.get_ylabel()


def test_relative_residual_when_a_history_lacks_fclib(tmp_path: Path) -> None:
    histories = _synthetic()
    del histories["b"][0]["fclib"]
    fig = plot_histories(histories, path=tmp_path / "h.png")
    assert "relative residual" in fig.axes[0].get_ylabel() and (tmp_path / "h.png").stat().st_size > 0
    with pytest.raises(OptionError, match="fclib"):
        plot_histories(histories, criterion="fclib")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_tidy_table_round_trip(tmp_path: Path, suffix: str) -> None:
    histories = _synthetic()
    problems = {"a": [f"p{c}" for c in range(5)], "b": ["p0", "p1"]}
    table = history_table(histories, problems)
    assert list(table.columns[:4]) == ["solver", "problem", "iteration", "time"]
    assert len(table) == 4 * 7 + 4 + 2 * 3
    assert set(table.loc[table.solver == "b", "problem"]) == {"p0", "p1"}
    path = write_histories(histories | {"c": [None]}, tmp_path / f"histories{suffix}")
    read = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert len(read) == len(table) and set(read.columns) == set(table.columns)
    np.testing.assert_allclose(read["fclib"].to_numpy(), table["fclib"].to_numpy(), rtol=1e-15)
    with pytest.raises(OptionError, match="one length"):
        history_table({"x": [{"iteration": np.arange(2.0), "time": np.arange(3.0)}]})
