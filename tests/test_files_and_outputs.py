"""Files in and out: compare cells vouched for by their index, workers that die with their
parent, a time limit per cell, program files checked before any solver sees them, output
paths that fail in one line before the work, and scene names that stay in their folder."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis.cells import INDEX_NAME
from contactopt.cli import main
from contactopt.core.errors import ContactoptError, OutputError, SceneError, StoredCellWarning

ROOT = Path(__file__).resolve().parents[1]
CART = ROOT / "problems" / "cart_wall.toml"


def _cart(duration: float = 0.3) -> co.Scene:
    return dataclasses.replace(co.load_scene(CART), duration=duration)


def _compare(out: Path) -> tuple[Any, Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table, traces = co.compare(_cart(), ["gauss", "lcp"], ["clarabel"], executor="serial", out=out,
                                   return_traces=True)
    return table, traces, [str(w.message) for w in caught if issubclass(w.category, StoredCellWarning)]


# --- compare cells and their index --------------------------------------------------------


@pytest.mark.parametrize("damage", ["delete trace", "delete row", "edit row", "corrupt trace", "truncate index"])
def test_a_damaged_cell_is_recomputed_with_one_warning_and_the_tables_stay_complete(tmp_path: Path,
                                                                                    damage: str) -> None:
    out = tmp_path / "cmp"
    _, first_traces, first_warnings = _compare(out)
    assert first_warnings == [] and len(first_traces)
    cells = out / "cells"
    trace, row = sorted(cells.glob("*.parquet"))[0], sorted(cells.glob("*.json"))[0]
    named = {"delete trace": trace, "delete row": row, "edit row": row, "corrupt trace": trace,
             "truncate index": out / INDEX_NAME}[damage]
    if damage.startswith("delete"):
        named.unlink()
    elif damage == "edit row":
        row.write_text(json.dumps({**json.loads(row.read_text()), "max_penetration": 12345.0}))
    elif damage == "corrupt trace":
        trace.write_bytes(trace.read_bytes()[:100])
    else:
        named.write_text(named.read_text()[:20])
    table, traces, said = _compare(out)
    assert len(said) == 1 and named.name in said[0] and "\n" not in said[0], said
    assert len(traces) == len(first_traces)
    assert set(traces["formulation"]) == {"gauss", "lcp"}
    assert (table["status"] == "completed").all()
    assert (~table["cached"]).sum() == (2 if damage == "truncate index" else 1)
    _, _, again = _compare(out)  # recomputed cells are stored and recorded again
    assert again == []


# --- pool workers die with their parent ----------------------------------------------------


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (psutil if installed, else /proc)."""
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:
        return [int(entry.name) for entry in Path("/proc").iterdir()
                if entry.name.isdigit() and _parent_in_proc(entry) == pid]
    try:
        return [child.pid for child in psutil.Process(pid).children()]
    except psutil.NoSuchProcess:
        return []


def _parent_in_proc(entry: Path) -> int | None:
    try:
        return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited (only its parent has not reaped it)


@pytest.mark.skipif(not Path("/proc").exists(), reason="reads /proc")
def test_killing_compare_leaves_no_orphaned_pool_worker(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import dataclasses, contactopt as co
        scene = dataclasses.replace(co.load_scene({str(CART)!r}), duration=1000.0)
        co.compare(scene, ["gauss", "lcp"], ["clarabel"], executor="process", workers=2)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = _children(parent.pid)
        assert len(workers) >= 2, "the pool's workers never started"
        time.sleep(0.5)  # the workers are now inside their cells
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)]
    finally:
        for pid in [parent.pid, *workers]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# --- time limit per cell -------------------------------------------------------------------


def test_a_cell_past_its_time_limit_is_an_error_row_and_the_others_go_on() -> None:
    scene = _cart(duration=0.3)
    slow = dataclasses.replace(scene, duration=1000.0)
    start = time.perf_counter()
    table = co.compare(slow, ["gauss"], ["clarabel"], executor="serial", cell_time_limit=0.5)
    assert time.perf_counter() - start < 10
    row = table.iloc[0]
    assert row["status"] == "error" and row["error"] == "time limit 0.5 s reached"
    assert row["steps"] > 0  # the finished steps are kept
    fine = co.compare(scene, ["gauss", "lcp"], ["clarabel"], executor="serial", cell_time_limit=30)
    assert (fine["status"] == "completed").all()
    with pytest.raises(ContactoptError, match="cell_time_limit"):
        co.compare(scene, ["gauss"], ["clarabel"], cell_time_limit=-1)


def test_cli_cell_time_limit_is_documented() -> None:
    from contactopt.cli import build_parser

    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--help"])
    assert "--cell-time-limit" in help_text.getvalue() and "time limit" in help_text.getvalue()


# --- program files checked on load ---------------------------------------------------------


def _edited_program(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation="anitescu")
    path = co.save_program(program, tmp / "prog.npz")
    with np.load(path) as arrays:
        data = {key: arrays[key] for key in arrays.files}
    edit(data)
    np.savez(tmp / "bad.npz", **data)
    return tmp / "bad.npz"


def _set(name: str, value: Callable[[Any], Any]) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(name, value(data[name]))


def _swap_indptr(p: Any) -> Any:
    p = p.copy()
    p[1], p[2] = p[2] + 1, p[1]
    return p


@pytest.mark.parametrize(("edit", "array"), [
    (_set("A_indices", lambda i: i + 1000), "A_indices"),
    (_set("A_indices", lambda i: i - 1000), "A_indices"),
    (_set("P_indptr", _swap_indptr), "P_indptr"),
    (_set("A_data", lambda d: np.where(np.arange(d.size) == 0, np.nan, d)), "A_data"),
    (_set("c", lambda c: np.full_like(c, np.inf)), "c"),
])
def test_a_malformed_program_file_is_refused_before_any_solver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               edit: Callable[[dict[str, Any]], None],
                                                               array: str) -> None:
    from contactopt import solvers

    calls: list[str] = []
    monkeypatch.setattr(solvers, "solve", lambda *a, **k: calls.append("solve"))
    path = _edited_program(tmp_path, edit)
    with pytest.raises(ContactoptError) as caught:
        co.load_program(path)
    message = str(caught.value)
    assert str(path) in message and array in message and "\n" not in message
    assert calls == []


# --- unwritable outputs ----------------------------------------------------------------------


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.mark.parametrize("argv", [
    ["run", "cart_wall", "--no-plot", "--no-progress", "--out", "{file}"],
    ["run", "cart_wall", "--no-plot", "--no-progress", "--out", "{file}/sub"],
    ["compare", "cart_wall", "--executor", "serial", "--no-plot", "--no-progress", "--out", "{file}"],
    ["export", "cart_wall", "--no-progress", "--out", "{file}/sub"],
    ["bench", str(ROOT / "problems"), "--no-progress", "--out", "{file}"],
    ["render", "cart_wall", "--no-progress", "--out", "{folder}"],
    ["view", "cart_wall", "--no-progress", "--out", "{folder}"],
    ["program", "cart_wall", "--out", "{file}/prog.npz"],
])
def test_an_unwritable_out_is_one_line_naming_it(tmp_path: Path, argv: list[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    args = [a.replace("{file}", str(blocker)).replace("{folder}", str(tmp_path)) for a in argv]
    start = time.perf_counter()
    code, err = _cli(*args)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("contactopt: error: cannot write"), err
    assert str(blocker if "{file}" in " ".join(argv) else tmp_path) in lines[0]
    assert time.perf_counter() - start < 5  # refused before the work


def test_unwritable_api_outputs_raise_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    folder = tmp_path / "a-folder.npz"
    folder.mkdir()
    traj = co.simulate(_cart(duration=0.1))
    program = co.formulate(_cart().system, q=[0.2], v=[-2.0], dt=0.1, formulation="gauss")
    for call in (lambda: traj.save(blocker / "traj.npz"), lambda: traj.save(folder),
                 lambda: co.save_program(program, blocker / "p.npz"),
                 lambda: co.compare(_cart(), ["gauss"], ["clarabel"], executor="serial", out=blocker)):
        with pytest.raises(OutputError) as caught:
            call()
        assert "\n" not in str(caught.value) and str(tmp_path) in str(caught.value)


# --- scene names ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../x", "..", "a/b", "/etc/passwd", "a\\u0000b", ""])
def test_a_scene_name_that_could_escape_its_folder_is_refused(tmp_path: Path, name: str) -> None:
    text = CART.read_text()
    assert 'name = "cart_wall"' in text
    path = tmp_path / "scene.toml"
    path.write_text(text.replace('name = "cart_wall"', f'name = "{name}"'))
    with pytest.raises(SceneError) as caught:
        co.load_scene(path)
    assert str(path) in str(caught.value) and "scene.name" in str(caught.value)


def test_a_scene_object_with_an_escaping_name_still_writes_inside_runs(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from contactopt.core.outputs import safe_component

    assert "/" not in safe_component("../../x") and not safe_component("..").startswith(".")
    monkeypatch.chdir(tmp_path)
    scene = dataclasses.replace(_cart(duration=0.1), name="../../escaped")
    monkeypatch.setattr("contactopt.cli.common.load_scene", lambda *_, **__: scene)
    code, err = _cli("run", "cart_wall", "--no-plot", "--no-progress")
    assert code == 0, err
    assert not list(tmp_path.parent.parent.glob("escaped*"))
    assert next(p.name for p in (tmp_path / "runs").iterdir()).endswith("escaped-gauss-clarabel")
