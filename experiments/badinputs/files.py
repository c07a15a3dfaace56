"""Files in and out (issue "verdicts that units cannot fool"): damaged compare cells and their
index, a cell time limit, a killed comparison's workers, malformed program files (npz and
FCLIB), unwritable output paths of every subcommand and API call, scene names that would
leave the output folder. Each gives one clear line, a one-line warning or a right answer."""

from __future__ import annotations

import contextlib
import dataclasses
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

from badinputs.base import (
    GOOD,
    ROOT,
    Case,
    api_call,
    cart_scene,
    cli_call,
    co,
    corrupt_npz,
    edit_header,
    raw_scene,
    saved_trajectory,
    scene_text,
)
from contactopt.errors import ContactoptError

INDEX = "cells-index.json"

# --- compare cells ---------------------------------------------------------------------------


def _short_cart() -> co.Scene:
    return dataclasses.replace(cart_scene(), duration=0.3)


def compare_damage(damage: Callable[[Path], Path]) -> Callable[[Path], Any]:
    """A compare run, then ``damage(out)`` (which returns the file it harmed), then the same
    compare resumed: the harmed cell must be recomputed with a warning naming the file, and
    the tables must hold every cell, computed (raised as one line when all that holds)."""
    def run(tmp: Path) -> Any:
        out = tmp / "cmp"
        first, first_traces = co.compare(_short_cart(), ["gauss"], ["clarabel"], executor="serial", out=out,
                                         return_traces=True)
        harmed = damage(out)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table, traces = co.compare(_short_cart(), ["gauss"], ["clarabel"], executor="serial", out=out,
                                       return_traces=True)
        named = [str(w.message) for w in caught if harmed.name in str(w.message)]
        if bool(table["cached"].any()) or not named:
            return table  # loaded as it is, or recomputed without a word: silent
        if len(traces) != len(first_traces) or len(table) != len(first):
            return table  # rows lost from the tables: silent
        raise ContactoptError(named[0])
    return run


def _row(out: Path) -> Path:
    return next((out / "cells").glob("*.json"))


def _trace(out: Path) -> Path:
    return next((out / "cells").glob("*.parquet"))


def _deleted(pick: Callable[[Path], Path]) -> Callable[[Path], Path]:
    def damage(out: Path) -> Path:
        path = pick(out)
        path.unlink()
        return path
    return damage


def _rewritten(pick: Callable[[Path], Path], new: Callable[[bytes], bytes]) -> Callable[[Path], Path]:
    def damage(out: Path) -> Path:
        path = pick(out)
        path.write_bytes(new(path.read_bytes()))
        return path
    return damage


def _metric_edited(data: bytes) -> bytes:
    return json.dumps({**json.loads(data), "max_penetration": -123.0}).encode()


def _folder_instead(out: Path) -> Path:
    path = _row(out)
    path.unlink()
    path.mkdir()
    return path


def _index(out: Path) -> Path:
    return out / INDEX


def _hash_edited(data: bytes) -> bytes:
    index = json.loads(data)
    for files in index["cells"].values():
        for name in files:
            files[name] = "0" * 64
    return json.dumps(index).encode()


def _time_limited(executor: str) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        slow = dataclasses.replace(cart_scene(), duration=1000.0)
        return co.compare(slow, ["gauss", "lcp"], ["clarabel"], executor=executor, workers=1,
                          cell_time_limit=0.4)
    return run


def _time_limit_check(table: Any) -> str | None:
    if list(table["status"]) != ["error", "error"]:
        return f"statuses {list(table['status'])}"
    if set(table["error"]) != {"time limit 0.4 s reached"} or not (table["steps"] > 0).all():
        return f"errors {set(table['error'])}, steps {list(table['steps'])}"
    return None


def _generous_limit(tmp: Path) -> Any:
    return co.compare(_short_cart(), ["gauss", "lcp"], ["clarabel"], executor="serial", cell_time_limit=60.0)


def _all_completed(table: Any) -> str | None:
    return None if (table["status"] == "completed").all() else f"statuses {list(table['status'])}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _killed_compare(tmp: Path) -> list[int]:
    """The pool workers still running 5 s after ``kill -9`` of their comparison."""
    script = textwrap.dedent(f"""
        import dataclasses, contactopt as co
        scene = dataclasses.replace(co.load_scene({str(ROOT / 'problems' / 'cart_wall.toml')!r}), duration=1e3)
        co.compare(scene, ["gauss", "lcp"], ["clarabel"], executor="process", workers=2, out={str(tmp / 'c')!r})
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)})
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = _children(parent.pid)
        time.sleep(0.5)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        return [pid for pid in workers if _alive(pid)] if workers else [-1]
    finally:
        for pid in [parent.pid, *workers]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _no_orphans(left: list[int]) -> str | None:
    if left == [-1]:
        return "the pool's workers never started"
    return f"orphaned workers still running: {left}" if left else None


# --- program files ------------------------------------------------------------------------------


def box_program(tmp: Path) -> Path:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation="anitescu")
    return co.save_program(program, tmp / "prog.npz")


def lcp_program(tmp: Path) -> Path:
    return co.save_program(co.LCP(M=np.eye(3), q=-np.ones(3)), tmp / "lcp.npz")


def _put(name: str, value: Callable[[Any], Any]) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(name, value(data[name]))


def _first(value: float) -> Callable[[Any], Any]:
    def change(array: Any) -> Any:
        array = np.array(array, dtype=np.float64 if not np.issubdtype(array.dtype, np.integer) else array.dtype)
        array[0] = value
        return array
    return change


def _swap(array: Any) -> Any:
    array = array.copy()
    array[1], array[2] = array[2] + 1, array[1]
    return array


def _header(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: edit_header(data, **changes)


def _cones_off_by_one(data: dict[str, Any]) -> None:
    header = json.loads(str(data["header"]))
    header["cones"][-1][1] += 1
    data["header"] = np.array(json.dumps(header))


def _variables_past_n(data: dict[str, Any]) -> None:
    header = json.loads(str(data["header"]))
    header["variables"][-1]["stop"] += 5
    data["header"] = np.array(json.dumps(header))


def npz(edit: Callable[[dict[str, Any]], None], make: Callable[[Path], Path] = box_program) -> Callable[[Path], Any]:
    return corrupt_npz(make, edit, co.load_program)


def fclib_file(edit: Callable[[Any], None], triplets: bool = False) -> Callable[[Path], Any]:
    """A valid FCLIB local problem (3 contacts) with one of its datasets edited in place."""
    def run(tmp: Path) -> Any:
        import h5py
        import scipy.sparse as sp

        from contactopt.programs.fclib_io import FclibLocal, write_fclib_problem

        W = sp.csc_matrix(np.eye(9) * 2.0 + np.diag(np.full(8, 0.1), 1) + np.diag(np.full(8, 0.1), -1))
        problem = FclibLocal(W=W, q=-np.ones(9), mu=np.full(3, 0.5), spacedim=3)
        path = tmp / "problem.hdf5"
        with h5py.File(path, "w") as handle:
            write_fclib_problem(handle, problem)
            root = handle["fclib_local"]
            if triplets:
                coo = W.tocoo()
                group = root["W"]
                for name, value in (("p", coo.row), ("i", coo.col), ("x", coo.data)):
                    del group[name]
                    group.create_dataset(name, data=value)
                group["nz"][...] = coo.nnz
            edit(root)
        return co.load_program(path)
    return run


def _dataset(path: str, change: Callable[[Any], Any]) -> Callable[[Any], None]:
    def edit(root: Any) -> None:
        value = change(np.array(root[path][()]))
        del root[path]
        root.create_dataset(path, data=value)
    return edit


def _bump(index: int, by: float) -> Callable[[Any], Any]:
    def change(array: Any) -> Any:
        array = array.copy()
        array[index] = array[index] + by
        return array
    return change


# --- output paths ------------------------------------------------------------------------------


def _blocked(*argv: str) -> Callable[[Path], Any]:
    """A CLI call after ``{tmp}/file`` was made a plain file (so a folder there is impossible)."""
    call = cli_call(*argv)

    def run(tmp: Path) -> Any:
        (tmp / "file").write_text("a file in the way")
        (tmp / "folder.npz").mkdir()
        return call(tmp)
    return run


def _blocked_api(call: Callable[[Path], Any]) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        (tmp / "file").write_text("a file in the way")
        (tmp / "folder.npz").mkdir()
        return call(tmp)
    return run


LONG = "x" * 300


def _export_into(tmp: Path) -> Any:
    from contactopt.analysis.export import export_run

    scene = dataclasses.replace(cart_scene(), duration=0.2)
    return export_run(scene, co.simulate(scene), tmp / "file" / "exports", ["npz"])


def _tables_into(tmp: Path) -> Any:
    from contactopt.analysis.compare import write_tables

    table = co.compare(_short_cart(), ["gauss"], ["clarabel"], executor="serial")
    return write_tables(table, table.iloc[0:0], tmp / "file")


def _escaping_scene_export(tmp: Path) -> Any:
    from contactopt.analysis.export import export_run

    scene = dataclasses.replace(cart_scene(), duration=0.2, name="../../escaped")
    written = export_run(scene, co.simulate(scene), tmp / "inside" / "exports", ["npz", "fclib"])
    return tmp, written


def _stays_inside(result: Any) -> str | None:
    tmp, written = result
    outside = [p for p in tmp.rglob("*") if "escaped" in p.name and (tmp / "inside") not in p.parents]
    stray = [p for p in written.values() if (tmp / "inside") not in Path(p).resolve().parents]
    return f"written outside the output folder: {outside + stray}" if outside or stray else None


def _name(value: str) -> Callable[[Path], Any]:
    return scene_text('name = "bad"', f'name = {json.dumps(value)}')


def cases() -> list[Case]:
    cells, limit, files, fs, scene, cli, api = ("compare cells", "cell time limit", "corrupted file", "file system",
                                                "scene file", "CLI", "API")
    row_json, row_parquet = _row, _trace
    out: list[Case] = [
        # --- compare cells and their index --------------------------------------------------
        Case(cells, "row file deleted", compare_damage(_deleted(row_json))),
        Case(cells, "trace file deleted", compare_damage(_deleted(row_parquet))),
        Case(cells, "row edited (a metric changed)", compare_damage(_rewritten(row_json, _metric_edited))),
        Case(cells, "row emptied", compare_damage(_rewritten(row_json, lambda d: b""))),
        Case(cells, "row not JSON", compare_damage(_rewritten(row_json, lambda d: b"{oops"))),
        Case(cells, "trace truncated", compare_damage(_rewritten(row_parquet, lambda d: d[: len(d) // 2]))),
        Case(cells, "trace bytes flipped", compare_damage(_rewritten(row_parquet, lambda d: d[:-9] + b"X" + d[-8:]))),
        Case(cells, "row replaced by a folder", compare_damage(_folder_instead)),
        Case(cells, "index truncated", compare_damage(_rewritten(_index, lambda d: d[: len(d) // 2]))),
        Case(cells, "index a JSON list", compare_damage(_rewritten(_index, lambda d: b"[1, 2]"))),
        Case(cells, "index hashes edited", compare_damage(_rewritten(_index, _hash_edited))),
        Case(cells, "index deleted", compare_damage(_deleted(_index))),
        Case(cells, "killed compare leaves no pool worker", _killed_compare, expect="answer", check=_no_orphans,
             timeout=60),
        # --- cell time limit ----------------------------------------------------------------------
        Case(limit, "serial cells past 0.4 s", _time_limited("serial"), expect="answer", check=_time_limit_check),
        Case(limit, "process-pool cells past 0.4 s", _time_limited("process"), expect="answer",
             check=_time_limit_check),
        Case(limit, "a generous limit changes nothing", _generous_limit, expect="answer", check=_all_completed),
        Case(limit, "API limit 0", api_call(lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"],
                                                               cell_time_limit=0))),
        Case(limit, "API limit negative", api_call(lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"],
                                                                      cell_time_limit=-2.0))),
        Case(limit, "API limit nan", api_call(lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"],
                                                                 cell_time_limit=float("nan")))),
        Case(limit, "API limit a string", api_call(lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"],
                                                                      cell_time_limit="5"))),  # type: ignore[arg-type]
        Case(limit, "CLI --cell-time-limit 0", cli_call("compare", "cart_wall", "--cell-time-limit", "0")),
        Case(limit, "CLI --cell-time-limit -1", cli_call("compare", "cart_wall", "--cell-time-limit=-1")),
        Case(limit, "CLI --cell-time-limit abc", cli_call("compare", "cart_wall", "--cell-time-limit", "abc")),
        Case(limit, "CLI --cell-time-limit inf", cli_call("compare", "cart_wall", "--cell-time-limit", "inf")),
        # --- program files (npz) ------------------------------------------------------------------
        Case(files, "program: A row index out of range", npz(_put("A_indices", lambda i: i + 10_000))),
        Case(files, "program: A negative row index", npz(_put("A_indices", _first(-1)))),
        Case(files, "program: P row index out of range", npz(_put("P_indices", lambda i: i + 10_000))),
        Case(files, "program: A indptr not monotone", npz(_put("A_indptr", _swap))),
        Case(files, "program: P indptr not monotone", npz(_put("P_indptr", _swap))),
        Case(files, "program: A indptr one entry short", npz(_put("A_indptr", lambda p: p[:-1]))),
        Case(files, "program: A indptr not from 0", npz(_put("A_indptr", lambda p: p + 1))),
        Case(files, "program: A indptr past nnz", npz(_put("A_indptr", _bump(-1, 3)))),
        Case(files, "program: A data shorter than indices", npz(_put("A_data", lambda d: d[:-1]))),
        Case(files, "program: A indices fractional", npz(_put("A_indices", lambda i: i + 0.5))),
        Case(files, "program: A data inf", npz(_put("A_data", _first(np.inf)))),
        Case(files, "program: P data NaN", npz(_put("P_data", _first(np.nan)))),
        Case(files, "program: b -inf", npz(_put("b", _first(-np.inf)))),
        Case(files, "program: A data strings", npz(_put("A_data", lambda d: d.astype(str)))),
        Case(files, "program: A shape one row more than the layout", npz(_put("A_shape", _bump(0, 1)))),
        Case(files, "program: A shape negative", npz(_put("A_shape", lambda s: -s))),
        Case(files, "program: cones not summing to m", npz(_cones_off_by_one)),
        Case(files, "program: variables past n", npz(_variables_past_n)),
        Case(files, "program: A indices missing", npz(lambda data: data.pop("A_indices"))),
        Case(files, "program: unknown cone kind", npz(_header(cones=[["psd", 3]]))),
        Case(files, "LCP program: M NaN", npz(_put("M", lambda m: m * np.nan), make=lcp_program)),
        Case(files, "LCP program: M not square", npz(_put("M", lambda m: m[:, :2]), make=lcp_program)),
        Case(files, "LCP program: q a matrix", npz(_put("q", lambda q: np.ones((3, 3))), make=lcp_program)),
        # --- program files (FCLIB, HDF5) -----------------------------------------------------------
        Case(files, "FCLIB: W row index out of range", fclib_file(_dataset("W/i", _bump(0, 100)))),
        Case(files, "FCLIB: W negative row index", fclib_file(_dataset("W/i", _bump(0, -100)))),
        Case(files, "FCLIB: W pointers not monotone", fclib_file(_dataset("W/p", _swap))),
        Case(files, "FCLIB: W pointers wrong length", fclib_file(_dataset("W/p", lambda p: p[:-2]))),
        Case(files, "FCLIB: W values NaN", fclib_file(_dataset("W/x", lambda x: x * np.nan))),
        Case(files, "FCLIB: W triplet index out of range", fclib_file(_dataset("W/i", _bump(0, 100)), triplets=True)),
        Case(files, "FCLIB: W triplets count past the arrays", fclib_file(_dataset("W/nz", lambda n: n + 5),
                                                                          triplets=True)),
        Case(files, "FCLIB: q wrong length", fclib_file(_dataset("vectors/q", lambda q: q[:-1]))),
        Case(files, "FCLIB: mu inf", fclib_file(_dataset("vectors/mu", lambda m: m * np.inf))),
        Case(files, "FCLIB: spacedim 2 for a 9 x 9 W", fclib_file(_dataset("spacedim", lambda d: d * 0 + 2))),
        # --- unwritable outputs: CLI -----------------------------------------------------------------
        Case(fs, "run --out a file", _blocked("run", "cart_wall", "--no-plot", "--out", "{tmp}/file")),
        Case(fs, "run --out under a file", _blocked("run", "cart_wall", "--no-plot", "--out", "{tmp}/file/run")),
        Case(fs, "run --out in /sys", _blocked("run", "cart_wall", "--no-plot", "--out", "/sys/contactopt-run")),
        Case(fs, "run --out name too long", _blocked("run", "cart_wall", "--no-plot", "--out", f"{{tmp}}/{LONG}")),
        Case(fs, "run --save-programs under a file", _blocked("run", "cart_wall", "--no-plot", "--save-programs",
                                                              "--out", "{tmp}/file/x")),
        Case(fs, "compare --out a file", _blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                  "{tmp}/file")),
        Case(fs, "compare --out under a file", _blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                        "{tmp}/file/cmp")),
        Case(fs, "compare --out in /sys", _blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                   "/sys/contactopt-compare")),
        Case(fs, "compare --render under a file", _blocked("compare", "cart_wall", "--executor", "serial",
                                                           "--render", "{tmp}/file/video.mp4")),
        Case(fs, "export --out a file", _blocked("export", "cart_wall", "--out", "{tmp}/file")),
        Case(fs, "export --out under a file", _blocked("export", "cart_wall", "--out", "{tmp}/file/exp")),
        Case(fs, "export --out in /sys", _blocked("export", "cart_wall", "--out", "/sys/contactopt-export")),
        Case(fs, "bench --out a file", _blocked("bench", str(ROOT / "problems"), "--out", "{tmp}/file")),
        Case(fs, "bench --out under a file", _blocked("bench", str(ROOT / "problems"), "--out", "{tmp}/file/b")),
        Case(fs, "render --out a folder", _blocked("render", "cart_wall", "--out", "{tmp}/folder.npz")),
        Case(fs, "render --out under a file", _blocked("render", "cart_wall", "--out", "{tmp}/file/v.gif")),
        Case(fs, "program --out under a file", _blocked("program", "cart_wall", "--out", "{tmp}/file/p.npz")),
        Case(fs, "program --out a folder", _blocked("program", "cart_wall", "--out", "{tmp}/folder.npz")),
        Case(fs, "program --out name too long", _blocked("program", "cart_wall", "--out", f"{{tmp}}/{LONG}.npz")),
        # --- unwritable outputs: API -------------------------------------------------------------------
        Case(fs, "traj.save under a file", _blocked_api(
            lambda tmp: co.simulate(_short_cart()).save(tmp / "file" / "t.npz"))),
        Case(fs, "traj.save onto a folder", _blocked_api(lambda tmp: co.simulate(_short_cart()).save(
            tmp / "folder.npz"))),
        Case(fs, "traj.save in /sys", api_call(lambda: co.simulate(_short_cart()).save("/sys/contactopt/t.npz"))),
        Case(fs, "save_program under a file", _blocked_api(
            lambda tmp: co.save_program(co.LCP(M=np.eye(2), q=-np.ones(2)), tmp / "file" / "p.npz"))),
        Case(fs, "save_program onto a folder", _blocked_api(
            lambda tmp: co.save_program(co.LCP(M=np.eye(2), q=-np.ones(2)), tmp / "folder.npz"))),
        Case(fs, "compare(out=a file)", _blocked_api(
            lambda tmp: co.compare(_short_cart(), ["gauss"], ["clarabel"], executor="serial", out=tmp / "file"))),
        Case(fs, "export_run under a file", _blocked_api(_export_into)),
        Case(fs, "write_tables onto a file", _blocked_api(_tables_into)),
        Case(fs, "Trajectory re-saved onto its folder", _blocked_api(
            lambda tmp: co.Trajectory.load(saved_trajectory(tmp)).save(tmp / "folder.npz"))),
        # --- scene names that would leave the output folder -------------------------------------------
        Case(scene, "name ..", _name("..")),
        Case(scene, "name .", _name(".")),
        Case(scene, "name ../../x", _name("../../x")),
        Case(scene, "name a/b", _name("a/b")),
        Case(scene, "name an absolute path", _name("/tmp/contactopt-escape")),
        Case(scene, "name with a backslash", _name("a\\..\\b")),
        Case(scene, "name with NUL", _name("a\x00b")),
        Case(scene, "name with a newline", _name("a\nb")),
        Case(scene, "name empty", _name("")),
        Case(scene, "name 300 characters", _name("n" * 300)),
        Case(scene, "name a number", raw_scene(GOOD.replace('name = "bad"', "name = 7"))),
        Case(api, "Scene object named ../../escaped exports inside its folder", _escaping_scene_export,
             expect="answer", check=_stays_inside),
        Case(cli, "compare --cell-time-limit with no value", cli_call("compare", "cart_wall", "--cell-time-limit")),
    ]
    return out
