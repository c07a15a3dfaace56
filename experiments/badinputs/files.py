"""Files in and out (issue "verdicts that units cannot fool"): damaged compare cells and their
index, a cell time limit, a killed comparison's workers, malformed program files (npz and
FCLIB), unwritable output paths of every subcommand and API call, scene names that would
leave the output folder. Each gives one clear line, a one-line warning or a right answer.
The inputs are made in :mod:`badinputs.file_inputs`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import GOOD, ROOT, Case, api_call, cli_call, co, raw_scene, saved_trajectory, scene_text
from badinputs.file_inputs import (
    LONG,
    all_completed,
    bench_on,
    blocked,
    blocked_api,
    bump,
    compare_damage,
    cones_off_by_one,
    dataset,
    deleted,
    escaping_scene_export,
    export_into,
    fclib_file,
    first,
    folder_instead,
    generous_limit,
    hash_edited,
    header,
    index,
    killed_compare,
    lcp_program,
    metric_edited,
    no_orphans,
    npz,
    put,
    rewritten,
    row,
    short_cart,
    stays_inside,
    swap,
    tables_into,
    time_limit_check,
    time_limited,
    trace,
    variables_past_n,
)


def _name(value: str) -> Callable[[Path], Any]:
    return scene_text('name = "bad"', f'name = {json.dumps(value)}')


def cases() -> list[Case]:
    cells, limit, files, fs, scene, cli, api = ("compare cells", "cell time limit", "corrupted file", "file system",
                                                "scene file", "CLI", "API")
    row_json, row_parquet = row, trace
    out: list[Case] = [
        # --- compare cells and their index --------------------------------------------------
        Case(cells, "row file deleted", compare_damage(deleted(row_json))),
        Case(cells, "trace file deleted", compare_damage(deleted(row_parquet))),
        Case(cells, "row edited (a metric changed)", compare_damage(rewritten(row_json, metric_edited))),
        Case(cells, "row emptied", compare_damage(rewritten(row_json, lambda d: b""))),
        Case(cells, "row not JSON", compare_damage(rewritten(row_json, lambda d: b"{oops"))),
        Case(cells, "trace truncated", compare_damage(rewritten(row_parquet, lambda d: d[: len(d) // 2]))),
        Case(cells, "trace bytes flipped", compare_damage(rewritten(row_parquet, lambda d: d[:-9] + b"X" + d[-8:]))),
        Case(cells, "row replaced by a folder", compare_damage(folder_instead)),
        Case(cells, "index truncated", compare_damage(rewritten(index, lambda d: d[: len(d) // 2]))),
        Case(cells, "index a JSON list", compare_damage(rewritten(index, lambda d: b"[1, 2]"))),
        Case(cells, "index hashes edited", compare_damage(rewritten(index, hash_edited))),
        Case(cells, "index deleted", compare_damage(deleted(index))),
        Case(cells, "killed compare leaves no pool worker", killed_compare, expect="answer", check=no_orphans,
             timeout=60),
        # --- cell time limit ----------------------------------------------------------------------
        Case(limit, "serial cells past 0.4 s", time_limited("serial"), expect="answer", check=time_limit_check),
        Case(limit, "process-pool cells past 0.4 s", time_limited("process"), expect="answer",
             check=time_limit_check),
        Case(limit, "a generous limit changes nothing", generous_limit, expect="answer", check=all_completed),
        Case(limit, "API limit 0", api_call(lambda: co.compare(short_cart(), ["gauss"], ["clarabel"],
                                                               cell_time_limit=0))),
        Case(limit, "API limit negative", api_call(lambda: co.compare(short_cart(), ["gauss"], ["clarabel"],
                                                                      cell_time_limit=-2.0))),
        Case(limit, "API limit nan", api_call(lambda: co.compare(short_cart(), ["gauss"], ["clarabel"],
                                                                 cell_time_limit=float("nan")))),
        Case(limit, "API limit a string", api_call(lambda: co.compare(short_cart(), ["gauss"], ["clarabel"],
                                                                      cell_time_limit="5"))),
        Case(limit, "CLI --cell-time-limit 0", cli_call("compare", "cart_wall", "--cell-time-limit", "0")),
        Case(limit, "CLI --cell-time-limit -1", cli_call("compare", "cart_wall", "--cell-time-limit=-1")),
        Case(limit, "CLI --cell-time-limit abc", cli_call("compare", "cart_wall", "--cell-time-limit", "abc")),
        Case(limit, "CLI --cell-time-limit inf", cli_call("compare", "cart_wall", "--cell-time-limit", "inf")),
        # --- program files (npz) ------------------------------------------------------------------
        Case(files, "program: A row index out of range", npz(put("A_indices", lambda i: i + 10_000))),
        Case(files, "program: A negative row index", npz(put("A_indices", first(-1)))),
        Case(files, "program: P row index out of range", npz(put("P_indices", lambda i: i + 10_000))),
        Case(files, "program: A indptr not monotone", npz(put("A_indptr", swap))),
        Case(files, "program: P indptr not monotone", npz(put("P_indptr", swap))),
        Case(files, "program: A indptr one entry short", npz(put("A_indptr", lambda p: p[:-1]))),
        Case(files, "program: A indptr not from 0", npz(put("A_indptr", lambda p: p + 1))),
        Case(files, "program: A indptr past nnz", npz(put("A_indptr", bump(-1, 3)))),
        Case(files, "program: A data shorter than indices", npz(put("A_data", lambda d: d[:-1]))),
        Case(files, "program: A indices fractional", npz(put("A_indices", lambda i: i + 0.5))),
        Case(files, "program: A data inf", npz(put("A_data", first(np.inf)))),
        Case(files, "program: P data NaN", npz(put("P_data", first(np.nan)))),
        Case(files, "program: b -inf", npz(put("b", first(-np.inf)))),
        Case(files, "program: A data strings", npz(put("A_data", lambda d: d.astype(str)))),
        Case(files, "program: A shape one row more than the layout", npz(put("A_shape", bump(0, 1)))),
        Case(files, "program: A shape negative", npz(put("A_shape", lambda s: -s))),
        Case(files, "program: cones not summing to m", npz(cones_off_by_one)),
        Case(files, "program: variables past n", npz(variables_past_n)),
        Case(files, "program: A indices missing", npz(lambda data: data.pop("A_indices"))),
        Case(files, "program: unknown cone kind", npz(header(cones=[["psd", 3]]))),
        Case(files, "LCP program: M NaN", npz(put("M", lambda m: m * np.nan), make=lcp_program)),
        Case(files, "LCP program: M not square", npz(put("M", lambda m: m[:, :2]), make=lcp_program)),
        Case(files, "LCP program: q a matrix", npz(put("q", lambda q: np.ones((3, 3))), make=lcp_program)),
        # --- program files (FCLIB, HDF5) -----------------------------------------------------------
        Case(files, "FCLIB: W row index out of range", fclib_file(dataset("W/i", bump(0, 100)))),
        Case(files, "FCLIB: W negative row index", fclib_file(dataset("W/i", bump(0, -100)))),
        Case(files, "FCLIB: W pointers not monotone", fclib_file(dataset("W/p", swap))),
        Case(files, "FCLIB: W pointers wrong length", fclib_file(dataset("W/p", lambda p: p[:-2]))),
        Case(files, "FCLIB: W values NaN", fclib_file(dataset("W/x", lambda x: x * np.nan))),
        Case(files, "FCLIB: W triplet index out of range", fclib_file(dataset("W/i", bump(0, 100)), triplets=True)),
        Case(files, "FCLIB: W triplets count past the arrays", fclib_file(dataset("W/nz", lambda n: n + 5),
                                                                          triplets=True)),
        Case(files, "FCLIB: q wrong length", fclib_file(dataset("vectors/q", lambda q: q[:-1]))),
        Case(files, "FCLIB: mu inf", fclib_file(dataset("vectors/mu", lambda m: m * np.inf))),
        Case(files, "FCLIB: spacedim 2 for a 9 x 9 W", fclib_file(dataset("spacedim", lambda d: d * 0 + 2))),
        Case(cli, "bench on an npz with an out-of-range index", bench_on(npz(put("A_indices", lambda i: i + 99)))),
        Case(cli, "bench on an FCLIB file with non-monotone pointers", bench_on(fclib_file(dataset("W/p", swap)))),
        # --- unwritable outputs: CLI -----------------------------------------------------------------
        Case(fs, "run --out a file", blocked("run", "cart_wall", "--no-plot", "--out", "{tmp}/file")),
        Case(fs, "run --out under a file", blocked("run", "cart_wall", "--no-plot", "--out", "{tmp}/file/run")),
        Case(fs, "run --out in /sys", blocked("run", "cart_wall", "--no-plot", "--out", "/sys/contactopt-run")),
        Case(fs, "run --out name too long", blocked("run", "cart_wall", "--no-plot", "--out", f"{{tmp}}/{LONG}")),
        Case(fs, "run --save-programs under a file", blocked("run", "cart_wall", "--no-plot", "--save-programs",
                                                              "--out", "{tmp}/file/x")),
        Case(fs, "compare --out a file", blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                  "{tmp}/file")),
        Case(fs, "compare --out under a file", blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                        "{tmp}/file/cmp")),
        Case(fs, "compare --out in /sys", blocked("compare", "cart_wall", "--executor", "serial", "--out",
                                                   "/sys/contactopt-compare")),
        Case(fs, "compare --render under a file", blocked("compare", "cart_wall", "--executor", "serial",
                                                           "--render", "{tmp}/file/video.mp4")),
        Case(fs, "export --out a file", blocked("export", "cart_wall", "--out", "{tmp}/file")),
        Case(fs, "export --out under a file", blocked("export", "cart_wall", "--out", "{tmp}/file/exp")),
        Case(fs, "export --out in /sys", blocked("export", "cart_wall", "--out", "/sys/contactopt-export")),
        Case(fs, "bench --out a file", blocked("bench", str(ROOT / "problems"), "--out", "{tmp}/file")),
        Case(fs, "bench --out under a file", blocked("bench", str(ROOT / "problems"), "--out", "{tmp}/file/b")),
        Case(fs, "render --out a folder", blocked("render", "cart_wall", "--out", "{tmp}/folder.npz")),
        Case(fs, "render --out under a file", blocked("render", "cart_wall", "--out", "{tmp}/file/v.gif")),
        Case(fs, "program --out under a file", blocked("program", "cart_wall", "--out", "{tmp}/file/p.npz")),
        Case(fs, "program --out a folder", blocked("program", "cart_wall", "--out", "{tmp}/folder.npz")),
        Case(fs, "program --out name too long", blocked("program", "cart_wall", "--out", f"{{tmp}}/{LONG}.npz")),
        # --- unwritable outputs: API -------------------------------------------------------------------
        Case(fs, "traj.save under a file", blocked_api(
            lambda tmp: co.simulate(short_cart()).save(tmp / "file" / "t.npz"))),
        Case(fs, "traj.save onto a folder", blocked_api(lambda tmp: co.simulate(short_cart()).save(
            tmp / "folder.npz"))),
        Case(fs, "traj.save in /sys", api_call(lambda: co.simulate(short_cart()).save("/sys/contactopt/t.npz"))),
        Case(fs, "save_program under a file", blocked_api(
            lambda tmp: co.save_program(co.LCP(M=np.eye(2), q=-np.ones(2)), tmp / "file" / "p.npz"))),
        Case(fs, "save_program onto a folder", blocked_api(
            lambda tmp: co.save_program(co.LCP(M=np.eye(2), q=-np.ones(2)), tmp / "folder.npz"))),
        Case(fs, "compare(out=a file)", blocked_api(
            lambda tmp: co.compare(short_cart(), ["gauss"], ["clarabel"], executor="serial", out=tmp / "file"))),
        Case(fs, "export_run under a file", blocked_api(export_into)),
        Case(fs, "write_tables onto a file", blocked_api(tables_into)),
        Case(fs, "Trajectory re-saved onto its folder", blocked_api(
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
        Case(api, "Scene object named ../../escaped exports inside its folder", escaping_scene_export,
             expect="answer", check=stays_inside),
        Case(cli, "compare --cell-time-limit with no value", cli_call("compare", "cart_wall", "--cell-time-limit")),
    ]
    return out
