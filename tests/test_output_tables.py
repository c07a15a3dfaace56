"""What the CLI prints: tables that fit the terminal (100 columns without one), a legend of every
column, a note for every OFF and n/a cell and every run that did not complete, the solver that
really answered, `list` without MuJoCo's log file, and `program --step` as matrices."""

from __future__ import annotations

import importlib
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import contactopt as co
from contactopt.analysis.explain import cell_notes, shown_solver
from contactopt.analysis.observations import metadata
from contactopt.cli import main
from contactopt.core.tables import DEFAULT_WIDTH, MIN_WIDTH, format_table, terminal_width

ROOT = Path(__file__).resolve().parents[1]


def _short_box(tmp_path: Path, duration: float = 0.25) -> Path:
    """box_slide with a shorter run (gauss never stops; the others stop at 0.204 s)."""
    path = tmp_path / "box.toml"
    text = (ROOT / "problems" / "box_slide.toml").read_text()
    path.write_text(text.replace("duration = ", f"duration = {duration} #"))
    return path


def _lines(text: str) -> list[str]:
    return text.splitlines()


# --- the table printer ----------------------------------------------------------------------

def test_terminal_width_is_columns_else_100_never_below_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == DEFAULT_WIDTH == 100  # captured stdout: no terminal
    monkeypatch.setenv("COLUMNS", "160")
    assert terminal_width() == 160
    monkeypatch.setenv("COLUMNS", "20")
    assert terminal_width() == MIN_WIDTH


def test_a_wide_table_becomes_panels_that_repeat_the_labels_and_lose_no_column() -> None:
    rows = [{"formulation": f"f{i}", "solver": "qpsolvers:proxqp", **{f"metric_{k}": 1e-3 * (i + k) for k in range(12)},
             "error": "x" * 300 if i == 1 else ""} for i in range(3)]
    text = format_table(rows, width=80, index=2)
    assert max(len(line) for line in _lines(text)) <= 80
    panels = text.split("\n\n")
    assert len(panels) > 1 and all(panel.split()[:2] == ["formulation", "solver"] for panel in panels)
    for k in range(12):  # every column is in exactly one panel
        assert sum(re.search(rf"\bmetric_{k}\b", panel) is not None for panel in panels) == 1
    assert "…" in text and "x" * 40 in text  # the long error cut to the room a panel has, not dropped
    assert format_table(rows, width=0).count("\n") == 4  # width 0: one table, however wide


# --- compare: width, legend, notes ------------------------------------------------------------

@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One short sweep printed compact, then its stored runs printed --wide (nothing recomputed)."""
    tmp_path = tmp_path_factory.mktemp("compare")
    scene = _short_box(tmp_path)
    solvers = ["clarabel", *(["qpsolvers"] if "qpsolvers" in co.solvers.available() else [])]
    argv = ["compare", str(scene), "--formulations", "gauss,anitescu,regularized", "--solvers",
            ",".join(solvers), "--dt", "0.005", "--executor", "serial", "--no-progress", "--no-plot",
            "--out", str(tmp_path / "out")]
    saved = os.environ.pop("COLUMNS", None)
    try:
        compact = _run(argv)
        wide = _run([*argv, "--resume", "--wide"])
    finally:
        if saved is not None:
            os.environ["COLUMNS"] = saved
    return tmp_path / "out", compact, wide


def _run(argv: list[str]) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_compare_fits_100_columns_with_a_legend_and_wide_shows_more(compared: tuple[Path, str, str]) -> None:
    _, compact, wide = compared
    assert max(len(line) for line in _lines(compact)) <= 100
    assert max(len(line) for line in _lines(wide)) <= 100  # --wide: more columns, in panels
    for column in ("status_counts", "max_signorini", "iterations_total", "wall_time"):
        assert column in wide and column not in compact.split("columns:")[0]
    # every metric of the compact table is explained under it, with its table.csv name
    legend = compact.split("columns:")[1]
    for name in ("(max_ncp_desaxce)", "(max_abs_energy_balance)", "ms/step", "not optimal", "solver:"):
        assert name in legend, name
    assert "De Saxcé" in legend and "Coulomb" in legend


def test_every_off_and_na_cell_is_explained(compared: tuple[Path, str, str]) -> None:
    folder, compact, _ = compared
    table = pd.read_csv(folder / "table.csv")
    table.attrs["observables"] = metadata(co.load_scene("box_slide").observables)
    notes = cell_notes(table)
    unexplained = []
    for _, row in table.iterrows():
        for meta in table.attrs["observables"]:
            name, value, error = meta["name"], float(row[meta["name"]]), float(row[f"{meta['name']}_err"])
            off = math.isfinite(error) and abs(error) > meta["tolerance"]
            if math.isfinite(value) and not off:
                continue
            mark = "OFF" if off else "n/a"
            if not any(line.startswith(mark) and name in line and str(row["formulation"]) in line for line in notes):
                unexplained.append((row["formulation"], row["solver"], name, mark))
    assert not unexplained
    printed = " ".join(compact.split())  # the notes as printed, wrapped
    assert "gauss is frictionless" in printed and "never came to rest" in printed  # the n/a stop of gauss
    assert "hydroplaning" in printed  # Anitescu's OFF hover height
    assert "regularized (every solver)" in printed


def test_qpsolvers_rows_name_the_inner_solver(compared: tuple[Path, str, str]) -> None:
    folder, compact, _ = compared
    table = pd.read_csv(folder / "table.csv")
    if "qpsolvers" not in set(table["solver"]):
        pytest.skip("qpsolvers is not installed")
    shown = {shown_solver(row) for row in table.to_dict("records") if row["solver"] == "qpsolvers"}
    assert len(shown) == 1
    inner = next(iter(shown))
    assert inner.startswith("qpsolvers:") and inner in compact
    assert inner.split(":")[1] in importlib.import_module("contactopt.solvers.backends.qpsolvers").installed_variants()


def test_compliant_and_mujoco_runs_do_not_name_the_scenes_solver(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert co.load_scene("box_drop").solver == "clarabel"
    assert main(["run", "box_drop", "-f", "compliant", "--duration", "0.01", "--no-plot", "--no-progress",
                 "--out", str(tmp_path / "c")]) == 0
    solver = json.loads((tmp_path / "c" / "summary.json").read_text())["solver"]
    assert solver != "clarabel" and solver == co.simulate(co.load_scene("box_drop"), "compliant",
                                                          duration=0.002).steps[0].solver
    assert "clarabel" not in capsys.readouterr().out.split("columns:")[0]
    if "mujoco" not in sys.modules and not _has("mujoco"):
        return
    assert main(["run", "box_slide_mjcf", "-f", "mujoco", "--duration", "0.01", "--no-plot", "--no-progress",
                 "--out", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["solver"] == "mujoco"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# --- list ---------------------------------------------------------------------------------------

def test_list_fits_the_width_and_leaves_no_mujoco_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """MuJoCo 4 warns about dm-control cheetah's settotalmass on the C side (file descriptor 2)
    and writes MUJOCO_LOG.TXT into the current folder; list loads every bundled scene."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["list"]) == 0
    printed = capfd.readouterr()
    assert list(tmp_path.iterdir()) == []  # no MUJOCO_LOG.TXT (nor anything else) in the current folder
    assert "deprecated" not in printed.err and "WARNING" not in printed.err
    assert max(len(line) for line in _lines(printed.out)) <= 100
    assert "dm_cheetah" in printed.out


def test_settotalmass_applied_by_scaling_gives_the_total_mass(tmp_path: Path) -> None:
    """dm-control's cheetah sets <compiler settotalmass="14"/>: the model compiled without the
    deprecated attribute has the same total mass (the attribute's definition), inertias scaled alike."""
    mujoco = pytest.importorskip("mujoco")
    from contactopt.systems.mjcf.compat import model_from_file

    xml = tmp_path / "two.xml"
    xml.write_text('<mujoco><compiler settotalmass="3"/><worldbody><body><freejoint/>'
                   '<geom type="box" size="0.1 0.2 0.3" density="1000"/></body>'
                   '<body pos="1 0 0"><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    model = model_from_file(mujoco, xml)
    assert list(tmp_path.iterdir()) == [xml]
    assert model.body_mass.sum() == pytest.approx(3.0, rel=1e-12)
    # the box's inertia keeps its closed form m/3 (b^2 + c^2) with the scaled mass
    box = model.body_mass[1]
    assert model.body_inertia[1, 0] == pytest.approx(box / 3 * (0.2**2 + 0.3**2), rel=1e-9)
    # the ratio of the two bodies is the unscaled one: density * volume
    ratio = (1000 * 0.2 * 0.4 * 0.6) / (1000 * 4 / 3 * np.pi * 0.1**3)
    assert model.body_mass[1] / model.body_mass[2] == pytest.approx(ratio, rel=1e-9)


# --- program --step -----------------------------------------------------------------------------

def test_program_prints_the_matrices_of_a_small_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["program", "cart_wall", "--step", "5", "--solver", "lemke", "--out", str(tmp_path / "p.npz")]) == 0
    printed = _lines(capsys.readouterr().out)
    program = co.load_program(tmp_path / "p.npz")  # the program printed
    # cart_wall at step 5 (m = 1, at the wall moving at -2 m/s): P = M = 1 and c = -M v_free = 2
    assert next(line for line in printed if line.startswith("x0 v_next[0]")).split()[-1] == "1"
    assert next(line for line in printed if line.startswith("c ")).split()[-1] == "2"
    a_row = next(line for line in printed if line.startswith("row0 nonpenetration[0]")).split()
    assert a_row[-3:] == [f"{program.A.toarray()[0, 0]:.4g}", f"{program.b[0]:.4g}", "nonneg"]


def test_program_prints_an_lcp_as_m_and_q(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["program", "brick_push", "-f", "lcp"]) == 0
    printed = _lines(capsys.readouterr().out)
    scene = co.load_scene("brick_push")
    lcp = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "lcp", scene.options)
    start = printed.index("[M | q]:") + 3  # the title, the header and its rule
    rows = [line.split()[2:] for line in printed[start:start + lcp.n]]  # after the label "wI name[i]"
    expected = [[f"{x:.4g}" if x != 0 else "0" for x in [*lcp.M[i], lcp.q[i]]] for i in range(lcp.n)]
    assert rows == expected


def test_program_of_a_large_step_prints_its_layout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["program", "box_slide", "-f", "ccp"]) == 0
    printed = capsys.readouterr().out
    assert "variables" in printed and "matrices printed for programs of at most 12" in printed
    assert "\nP:\n" not in printed
