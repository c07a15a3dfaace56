"""The inputs of :mod:`badinputs.files`, made: compare runs with a damaged cell or index, a
comparison killed with ``kill -9``, malformed program files (npz and FCLIB, HDF5), CLI calls
and API calls whose output path cannot be written."""

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
    ROOT,
    cart_scene,
    cli_call,
    co,
    corrupt_npz,
    edit_header,
)
from contactopt.core.errors import ContactoptError

INDEX = "cells-index.json"

# --- compare cells ---------------------------------------------------------------------------


def short_cart() -> co.Scene:
    return dataclasses.replace(cart_scene(), duration=0.3)


def compare_damage(damage: Callable[[Path], Path]) -> Callable[[Path], Any]:
    """A compare run, then ``damage(out)`` (which returns the file it harmed), then the same
    compare resumed: the harmed cell must be recomputed with a warning naming the file, and
    the tables must hold every cell, computed (raised as one line when all that holds)."""
    def run(tmp: Path) -> Any:
        out = tmp / "cmp"
        first, first_traces = co.compare(short_cart(), ["gauss"], ["clarabel"], executor="serial", out=out,
                                         return_traces=True)
        harmed = damage(out)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table, traces = co.compare(short_cart(), ["gauss"], ["clarabel"], executor="serial", out=out,
                                       return_traces=True)
        named = [str(w.message) for w in caught if harmed.name in str(w.message)]
        if bool(table["cached"].any()) or not named:
            return table  # loaded as it is, or recomputed without a word: silent
        if len(traces) != len(first_traces) or len(table) != len(first):
            return table  # rows lost from the tables: silent
        raise ContactoptError(named[0])
    return run


def row(out: Path) -> Path:
    return next((out / "cells").glob("*.json"))


def trace(out: Path) -> Path:
    return next((out / "cells").glob("*.parquet"))


def deleted(pick: Callable[[Path], Path]) -> Callable[[Path], Path]:
    def damage(out: Path) -> Path:
        path = pick(out)
        path.unlink()
        return path
    return damage


def rewritten(pick: Callable[[Path], Path], new: Callable[[bytes], bytes]) -> Callable[[Path], Path]:
    def damage(out: Path) -> Path:
        path = pick(out)
        path.write_bytes(new(path.read_bytes()))
        return path
    return damage


def metric_edited(data: bytes) -> bytes:
    return json.dumps({**json.loads(data), "max_penetration": -123.0}).encode()


def folder_instead(out: Path) -> Path:
    path = row(out)
    path.unlink()
    path.mkdir()
    return path


def index(out: Path) -> Path:
    return out / INDEX


def hash_edited(data: bytes) -> bytes:
    index = json.loads(data)
    for files in index["cells"].values():
        for name in files:
            files[name] = "0" * 64
    return json.dumps(index).encode()


def time_limited(executor: str) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        slow = dataclasses.replace(cart_scene(), duration=1000.0)
        return co.compare(slow, ["gauss", "lcp"], ["clarabel"], executor=executor, workers=1,
                          cell_time_limit=0.4)
    return run


def time_limit_check(table: Any) -> str | None:
    if list(table["status"]) != ["error", "error"]:
        return f"statuses {list(table['status'])}"
    if set(table["error"]) != {"time limit 0.4 s reached"} or not (table["steps"] > 0).all():
        return f"errors {set(table['error'])}, steps {list(table['steps'])}"
    return None


def generous_limit(tmp: Path) -> Any:
    return co.compare(short_cart(), ["gauss", "lcp"], ["clarabel"], executor="serial", cell_time_limit=60.0)


def all_completed(table: Any) -> str | None:
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


def killed_compare(tmp: Path) -> list[int]:
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


def no_orphans(left: list[int]) -> str | None:
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


def put(name: str, value: Callable[[Any], Any]) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(name, value(data[name]))


def first(value: float) -> Callable[[Any], Any]:
    def change(array: Any) -> Any:
        array = np.array(array, dtype=np.float64 if not np.issubdtype(array.dtype, np.integer) else array.dtype)
        array[0] = value
        return array
    return change


def swap(array: Any) -> Any:
    array = array.copy()
    array[1], array[2] = array[2] + 1, array[1]
    return array


def header(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: edit_header(data, **changes)


def cones_off_by_one(data: dict[str, Any]) -> None:
    header = json.loads(str(data["header"]))
    header["cones"][-1][1] += 1
    data["header"] = np.array(json.dumps(header))


def variables_past_n(data: dict[str, Any]) -> None:
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


def dataset(path: str, change: Callable[[Any], Any]) -> Callable[[Any], None]:
    def edit(root: Any) -> None:
        value = change(np.array(root[path][()]))
        del root[path]
        root.create_dataset(path, data=value)
    return edit


def bump(index: int, by: float) -> Callable[[Any], Any]:
    def change(array: Any) -> Any:
        array = array.copy()
        array[index] = array[index] + by
        return array
    return change


def bench_on(make_bad: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """``contactopt bench`` on a malformed program file: refused in one line, nothing solved."""
    def run(tmp: Path) -> Any:
        with contextlib.suppress(ContactoptError):
            make_bad(tmp)  # writes the file, then fails to load it
        bad = next(p for p in tmp.iterdir() if p.name in ("bad.npz", "problem.hdf5"))
        return cli_call("bench", str(bad), "--out", "{tmp}/bench")(tmp)
    return run


# --- output paths ------------------------------------------------------------------------------


def blocked(*argv: str) -> Callable[[Path], Any]:
    """A CLI call after ``{tmp}/file`` was made a plain file (so a folder there is impossible)."""
    call = cli_call(*argv)

    def run(tmp: Path) -> Any:
        (tmp / "file").write_text("a file in the way")
        (tmp / "folder.npz").mkdir()
        return call(tmp)
    return run


def blocked_api(call: Callable[[Path], Any]) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        (tmp / "file").write_text("a file in the way")
        (tmp / "folder.npz").mkdir()
        return call(tmp)
    return run


LONG = "x" * 300


def export_into(tmp: Path) -> Any:
    from contactopt.analysis.export import export_run

    scene = dataclasses.replace(cart_scene(), duration=0.2)
    return export_run(scene, co.simulate(scene), tmp / "file" / "exports", ["npz"])


def tables_into(tmp: Path) -> Any:
    from contactopt.analysis.compare import write_tables

    table = co.compare(short_cart(), ["gauss"], ["clarabel"], executor="serial")
    return write_tables(table, table.iloc[0:0], tmp / "file")


def escaping_scene_export(tmp: Path) -> Any:
    from contactopt.analysis.export import export_run

    scene = dataclasses.replace(cart_scene(), duration=0.2, name="../../escaped")
    written = export_run(scene, co.simulate(scene), tmp / "inside" / "exports", ["npz", "fclib"])
    return tmp, written


def stays_inside(result: Any) -> str | None:
    tmp, written = result
    outside = [p for p in tmp.rglob("*") if "escaped" in p.name and (tmp / "inside") not in p.parents]
    stray = [p for p in written.values() if (tmp / "inside") not in Path(p).resolve().parents]
    return f"written outside the output folder: {outside + stray}" if outside or stray else None
