"""compare() with observables: the box slide's stop against Coulomb's closed form, the order
of convergence of a step-size sweep, figures, report findings and notebook display."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import contactopt as co
from contactopt.analysis.convergence import fit_order, orders, plot_convergence
from contactopt.analysis.figures import plot_metrics, plot_time_per_step, plot_trajectories
from contactopt.analysis.observations import display_table, long_table
from contactopt.analysis.plotting import plot_trajectory
from contactopt.analysis.report import write_report

DTS = [1e-3, 2e-3, 4e-3]
V0, MU, G = 1.0, 0.5, 9.81
D = V0**2 / (2 * MU * G)


@pytest.fixture(scope="module")
def sweep() -> tuple[co.Scene, pd.DataFrame, pd.DataFrame]:
    """The box slide (0.22 s: it stops at 0.204 s) under lcp/lemke at three step sizes and
    anitescu/clarabel at two."""
    scene = dataclasses.replace(co.load_scene("box_slide"), duration=0.22)
    lcp, lcp_traces = co.compare(scene, ["lcp"], ["lemke"], DTS, return_traces=True)
    anitescu, anitescu_traces = co.compare(scene, ["anitescu"], ["clarabel"], DTS[1:], return_traces=True)
    table = pd.concat([lcp, anitescu], ignore_index=True)
    table.attrs = lcp.attrs
    return scene, table, pd.concat([lcp_traces, anitescu_traces], ignore_index=True)


def _cell(table: pd.DataFrame, formulation: str, solver: str, dt: float) -> pd.Series:
    rows = table[(table["formulation"] == formulation) & (table["solver"] == solver) & (table["dt"] == dt)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_compare_reports_stop_distance_with_reference_and_relative_error(sweep) -> None:  # type: ignore[no-untyped-def]
    """Semi-implicit Euler slides d_h = d - h v0 / 2 + O(h^2): the relative error of lcp/lemke
    at h = 1e-3 is within 1 % of -h v0 / (2 d)."""
    _, table, _ = sweep
    assert {"stop_distance", "stop_distance_ref", "stop_distance_err"} <= set(table.columns)
    assert np.allclose(table["stop_distance_ref"], D, rtol=1e-12)
    row = _cell(table, "lcp", "lemke", 1e-3)
    predicted = -1e-3 * V0 / (2 * D)
    assert row["stop_distance_err"] == pytest.approx((row["stop_distance"] - D) / D, rel=1e-12)
    assert abs(row["stop_distance_err"] - predicted) <= 0.01 * abs(predicted)
    long = long_table(table)
    assert len(table) == 5 and len(long) == len(table) * 4 and set(long["observable"]) == {
        "stop_distance", "stop_time", "hover_height", "energy_balance"}
    shown = display_table(table)
    assert any(column.startswith("stop_distance [m] ref 0.1019") for column in shown.columns)


def test_dt_sweep_reports_first_order_for_the_lcp_stop_distance(sweep) -> None:  # type: ignore[no-untyped-def]
    """Order 1.0 +- 0.1 for lcp/lemke's stop distance; Anitescu's hop does not shrink with dt
    (order ~ 0), as the issue observed; the balance of lcp/lemke is round-off (no order)."""
    _, table, _ = sweep
    fitted = orders(long_table(table)).set_index(["formulation", "solver", "observable"])
    assert fitted.loc[("lcp", "lemke", "stop_distance"), "order"] == pytest.approx(1.0, abs=0.1)
    assert fitted.loc[("lcp", "lemke", "stop_distance"), "points"] == 3
    assert abs(fitted.loc[("anitescu", "clarabel", "hover_height"), "order"]) < 0.1
    assert np.isnan(fitted.loc[("lcp", "lemke", "energy_balance"), "order"])
    order, n = fit_order(np.array([1e-3, 2e-3, 4e-3]), 3.0 * np.array([1e-3, 2e-3, 4e-3]) ** 2)
    assert order == pytest.approx(2.0, abs=1e-12) and n == 3


def test_energy_balance_in_the_table(sweep) -> None:  # type: ignore[no-untyped-def]
    _, table, _ = sweep
    for dt in DTS:
        assert _cell(table, "lcp", "lemke", dt)["max_abs_energy_balance"] < 1e-6
    for dt in DTS[1:]:
        assert _cell(table, "anitescu", "clarabel", dt)["energy_balance"] > 0.05


def test_figures_are_returned_saved_only_when_asked_and_keep_the_backend(sweep, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    scene, table, traces = sweep
    backend, open_figures = matplotlib.get_backend(), plt.get_fignums()
    figures = [plot_trajectories(table, traces, names=scene.system.q_names, observables=scene.observables,
                                 q0=scene.q0),
               plot_metrics(table), plot_time_per_step(traces), plot_convergence(long_table(table))]
    traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.01)
    figures.append(plot_trajectory(traj))
    assert all(isinstance(fig, Figure) for fig in figures)
    assert matplotlib.get_backend() == backend and plt.get_fignums() == open_figures
    assert list(tmp_path.iterdir()) == []
    trajectories = figures[0]
    labels = [ax.get_ylabel() for ax in trajectories.axes]
    assert labels[:2] == ["box.x [m]", "box.z [m]"]  # the observables' coordinates, named, with units
    assert trajectories.legends and not any(ax.get_legend() for ax in trajectories.axes)  # legend outside
    lines = {line.get_label(): line for line in trajectories.axes[0].get_lines()}
    lcp, anitescu = lines["lcp / lemke, dt = 2e-3 s"], lines["anitescu / clarabel, dt = 2e-3 s"]
    assert lcp.get_color() != anitescu.get_color() and lcp.get_linestyle() != anitescu.get_linestyle()
    assert lines["lcp / lemke, dt = 4e-3 s"].get_color() == lcp.get_color()
    reference = lines["reference stop_distance"]
    assert np.asarray(reference.get_ydata())[0] == pytest.approx(D)  # x0 = 0: the stop at v0^2 / (2 mu g)


def test_report_states_findings_computed_from_the_table(sweep, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    scene, table, traces = sweep
    written = write_report("box", table, traces, tmp_path / "out", ["formulation", "solver", "dt"], scene=scene)
    assert {p.name for p in written} >= {"report.md", "convergence.png", "trajectories.png", "time_per_step.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written if p.suffix == ".png")
    tmp_path = tmp_path / "out"
    report = (tmp_path / "report.md").read_text()
    findings = report[report.index("## Findings"):]
    lcp = _cell(table, "lcp", "lemke", 1e-3)
    assert f"lcp/lemke ({100 * lcp['stop_distance_err']:+.3g} %)" in findings
    hover = _cell(table, "anitescu", "clarabel", 2e-3)["hover_height"]
    assert f"anitescu/clarabel ({hover:+.3g} m, {hover / 1e-4:.3g} x the tolerance)" in findings
    assert "fastest per accuracy level" in findings and "Within the tolerance of every observable (fastest " \
        "first): lcp/lemke" in findings
    assert "stop_distance: lcp/lemke p = 1.00" in findings or "stop_distance: lcp/lemke p = 0.99" in findings


def test_trajectory_has_short_repr_html_and_dataframe() -> None:
    scene = co.load_scene("box_slide")
    traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.005)
    text = repr(traj)
    assert "\n" not in text and len(text) < 200 and "lcp / lemke" in text and "5 steps" in text
    assert "<table>" in traj._repr_html_() and "box_slide" in traj._repr_html_()
    frame = traj.to_dataframe()
    assert len(frame) == 6 and list(frame.columns[:3]) == ["t", "box.x", "box.y"]
    np.testing.assert_array_equal(frame["box.vx"], traj.v[:, 0])
    assert frame["n_contacts"].iloc[0] == 8 and frame["normal_impulse"].iloc[0] == pytest.approx(9.81e-3)
    assert frame["status"].iloc[-1] == "" and np.isnan(frame["build_time"].iloc[-1])


def test_cli_run_prints_the_scenes_observables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cart of cart_wall (h = 0.1) rests against the wall from t = x0 / |v0| = 0.5 exactly."""
    import json

    from contactopt.cli import main

    assert main(["run", "cart_wall", "--out", str(tmp_path), "--no-plot", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "stop_time = 0.5 s, reference 0.5 s, error +0% (tolerance 1%): ok" in printed
    summary = json.loads((tmp_path / "summary.json").read_text())
    observed = summary["observables"]
    assert observed["stop_time"] == pytest.approx(0.5) and observed["final_position_ref"] == 0
