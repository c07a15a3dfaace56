"""Bad inputs, tried the way a user would: scene files, CLI arguments, API calls and corrupted
trajectory / program / compare-cell files. Each case is classified:

* ``clear``: one line naming the culprit (a :class:`ContactoptError` whose message is one
  line, or the CLI exiting non-zero with one ``contactopt: error:`` line and no traceback);
* ``traceback``: any other exception, or a traceback printed by the CLI;
* ``silent``: accepted without complaint.

``python experiments/bad_inputs.py`` writes ``experiments/out/bad_inputs/table.{md,csv}``;
``tests/test_bad_inputs.py`` runs every case and asserts 0 tracebacks and 0 silent.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out" / "bad_inputs"
if str(ROOT) not in sys.path:  # the worktree's contactopt, when run as a script
    sys.path.insert(0, str(ROOT))

import contactopt as co  # noqa: E402
from contactopt.errors import ContactoptError  # noqa: E402

GOOD = """[scene]
name = "bad"
dt = 0.1
duration = 0.3
formulation = "gauss"
solver = "clarabel"

[system]
type = "cart"

[system.parameters]
m = 1.0
u = 0.0

[initial]
q = [1.0]
v = [-2.0]
"""


@dataclass(frozen=True)
class Case:
    category: str
    label: str
    run: Callable[[Path], Any]


@dataclass(frozen=True)
class Outcome:
    category: str
    label: str
    verdict: str  # clear | traceback | silent
    detail: str


def _scene_text(old: str, new: str) -> Callable[[Path], Any]:
    """A scene file: GOOD with ``old`` replaced by ``new``; loading it is the case."""
    def run(tmp: Path) -> Any:
        assert old in GOOD, old
        path = tmp / "scene.toml"
        path.write_text(GOOD.replace(old, new))
        return co.load_scene(path)
    return run


def _raw_scene(text: str | bytes) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = tmp / "scene.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return co.load_scene(path)
    return run


def _cli(*argv: str) -> Callable[[Path], Any]:
    """The CLI in-process; ``{tmp}`` in an argument is the case's folder."""
    def run(tmp: Path) -> Any:
        from contactopt.cli import main

        args = [a.replace("{tmp}", str(tmp)) for a in argv]
        if "--out" not in args and args and args[0] in ("run", "compare", "export"):
            args += ["--out", str(tmp / "out")]
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        return CliResult(int(code or 0), stderr.getvalue())
    return run


@dataclass(frozen=True)
class CliResult:
    code: int
    stderr: str


def _api(call: Callable[[], Any]) -> Callable[[Path], Any]:
    return lambda tmp: call()


def _cart() -> co.Scene:
    return co.load_scene(ROOT / "problems" / "cart_wall.toml")


def _box() -> co.Scene:
    import dataclasses

    return dataclasses.replace(co.load_scene(ROOT / "problems" / "box_slide.toml"), duration=0.01)


def _qp() -> co.ConicProgram:
    scene = _cart()
    return co.formulate(scene.system, q=[0.2], v=[-2.0], dt=0.1, formulation="gauss")


def _saved_trajectory(tmp: Path) -> Path:
    return co.simulate(_cart(), duration=0.3).save(tmp / "traj.npz")


def _corrupt_npz(make: Callable[[Path], Path], edit: Callable[[dict[str, Any]], None],
                 load: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """A saved file with its arrays edited (``edit`` mutates the dict of arrays)."""
    def run(tmp: Path) -> Any:
        path = make(tmp)
        with np.load(path, allow_pickle=False) as arrays:
            data = {key: arrays[key] for key in arrays.files}
        edit(data)
        bad = tmp / "bad.npz"
        np.savez(bad, **data)
        return load(bad)
    return run


def _bytes_file(content: bytes, load: Callable[[Path], Any], name: str = "bad.npz") -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = tmp / name
        path.write_bytes(content)
        return load(path)
    return run


def _truncated(make: Callable[[Path], Path], load: Callable[[Path], Any]) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = make(tmp)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return load(path)
    return run


def _saved_program(tmp: Path) -> Path:
    return co.save_program(_qp(), tmp / "prog.npz")


def _header(data: dict[str, Any], **changes: Any) -> None:
    header = json.loads(str(data["header"]))
    header.update(changes)
    data["header"] = np.array(json.dumps(header))


def _compare_cell(edit: Callable[[Path], None]) -> Callable[[Path], Any]:
    """A compare run, one cell file edited, then the same compare resumed from the folder:
    the corrupted cell must be refused (recomputed with a warning naming it), not loaded."""
    def run(tmp: Path) -> Any:
        import dataclasses

        scene = dataclasses.replace(_cart(), duration=0.3)
        out = tmp / "cmp"
        co.compare(scene, ["gauss"], ["clarabel"], executor="serial", out=out)
        cell = next((out / "cells").glob("*.json"))
        edit(cell)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = co.compare(scene, ["gauss"], ["clarabel"], executor="serial", out=out)
        named = [w for w in caught if cell.name in str(w.message)]
        if bool(table["cached"].any()):
            return table  # loaded: silently accepted
        if named:
            raise ContactoptError(str(named[0].message))  # recomputed, and said so in one line
        return table
    return run


def _lcp(M: Any, q: Any) -> Callable[[], Any]:
    return lambda: co.LCP(M=M, q=q)


def cases() -> list[Case]:
    scene, cli, api, files = "scene file", "CLI", "API", "corrupted file"
    out: list[Case] = [
        # --- scene files --------------------------------------------------------------------
        Case(scene, "not TOML", _raw_scene("[scene\nname = ")),
        Case(scene, "empty file", _raw_scene("")),
        Case(scene, "binary garbage", _raw_scene(bytes(range(256)))),
        Case(scene, "no [scene] table", _scene_text('[scene]\nname = "bad"\n', '[other]\nname = "bad"\n')),
        Case(scene, "dt missing", _scene_text("dt = 0.1\n", "")),
        Case(scene, "dt = 0", _scene_text("dt = 0.1", "dt = 0")),
        Case(scene, "dt negative", _scene_text("dt = 0.1", "dt = -0.1")),
        Case(scene, "dt = nan", _scene_text("dt = 0.1", "dt = nan")),
        Case(scene, "dt a string", _scene_text("dt = 0.1", 'dt = "0.1"')),
        Case(scene, "duration = inf", _scene_text("duration = 0.3", "duration = inf")),
        Case(scene, "duration = 0", _scene_text("duration = 0.3", "duration = 0")),
        Case(scene, "duration a bool", _scene_text("duration = 0.3", "duration = true")),
        Case(scene, "unknown key in [scene]", _scene_text('name = "bad"', 'name = "bad"\nstep = 3')),
        Case(scene, "unknown table", _scene_text("[initial]", "[extras]\nx = 1\n\n[initial]")),
        Case(scene, "unknown formulation", _scene_text('formulation = "gauss"', 'formulation = "gaus"')),
        Case(scene, "unknown solver", _scene_text('solver = "clarabel"', 'solver = "clarabell"')),
        Case(scene, "unknown cvxpy solver", _scene_text('solver = "clarabel"', 'solver = "cvxpy:NOSUCH"')),
        Case(scene, "solver variant on lemke", _scene_text('solver = "clarabel"', 'solver = "lemke:fast"')),
        Case(scene, "system type unknown", _scene_text('type = "cart"', 'type = "carts"')),
        Case(scene, "system type missing", _scene_text('type = "cart"\n', "")),
        Case(scene, "system type a number", _scene_text('type = "cart"', "type = 3")),
        Case(scene, "mass negative", _scene_text("m = 1.0", "m = -1.0")),
        Case(scene, "mass nan", _scene_text("m = 1.0", "m = nan")),
        Case(scene, "unknown parameter", _scene_text("u = 0.0", "u = 0.0\nk = 3.0")),
        Case(scene, "q too long", _scene_text("q = [1.0]", "q = [1.0, 2.0]")),
        Case(scene, "q with nan", _scene_text("q = [1.0]", "q = [nan]")),
        Case(scene, "q a string", _scene_text("q = [1.0]", 'q = "one"')),
        Case(scene, "v of strings", _scene_text("v = [-2.0]", 'v = ["fast"]')),
        Case(scene, "mu negative", _scene_text("[initial]", "[contact]\nmu = -0.5\n\n[initial]")),
        Case(scene, "restitution 2", _scene_text("[initial]", "[contact]\nrestitution = 2.0\n\n[initial]")),
        Case(scene, "unknown option", _scene_text("[initial]", "[options]\nfrom = 'dual'\n\n[initial]")),
        Case(scene, "bad option value", _scene_text("[initial]", "[options]\nform = 'both'\n\n[initial]")),
        Case(scene, "solver_options not a table", _raw_scene(GOOD.replace("[scene]", "solver_options = 3\n[scene]"))),
        Case(scene, "mjcf file missing", _raw_scene(GOOD.replace('type = "cart"', 'type = "mjcf"\nfile = "nope.xml"')
                                                     .replace("[system.parameters]\nm = 1.0\nu = 0.0\n", ""))),
        Case(scene, "mjcf negative margin", _raw_scene(
            GOOD.replace('type = "cart"', f'type = "mjcf"\nfile = "{ROOT}/problems/mjcf/box_plane.xml"\n'
                         "detection_margin = -1").replace("[system.parameters]\nm = 1.0\nu = 0.0\n", "")
            .replace("q = [1.0]\nv = [-2.0]", "q = [0, 0, 0.1, 1, 0, 0, 0]"))),
        Case(scene, "path does not exist", lambda tmp: co.load_scene(tmp / "nothing.toml")),
        Case(scene, "path is a folder", lambda tmp: co.load_scene(tmp)),
        # --- CLI ----------------------------------------------------------------------------
        Case(cli, "run: unknown scene", _cli("run", "no_such_problem")),
        Case(cli, "run: --dt 0", _cli("run", "cart_wall", "--dt", "0")),
        Case(cli, "run: --dt nan", _cli("run", "cart_wall", "--dt", "nan")),
        Case(cli, "run: --duration -1", _cli("run", "cart_wall", "--duration=-1")),
        Case(cli, "run: --duration 0", _cli("run", "cart_wall", "--duration", "0")),
        Case(cli, "run: --dt abc", _cli("run", "cart_wall", "--dt", "abc")),
        Case(cli, "run: unknown formulation", _cli("run", "cart_wall", "-f", "nosuch")),
        Case(cli, "run: unknown solver", _cli("run", "cart_wall", "-s", "nosuch")),
        Case(cli, "run: -s cvxpy:NOSUCH", _cli("run", "cart_wall", "-s", "cvxpy:NOSUCH")),
        Case(cli, "run: -s qpsolvers:nosuch", _cli("run", "cart_wall", "-s", "qpsolvers:nosuch")),
        Case(cli, "run: -o without =", _cli("run", "cart_wall", "-o", "form")),
        Case(cli, "run: -o unknown key", _cli("run", "cart_wall", "-o", "nosuch=1")),
        Case(cli, "run: -o bad value", _cli("run", "cart_wall", "-o", "form=both")),
        Case(cli, "run: lcp k=0", _cli("run", "box_slide", "-f", "lcp", "-s", "lemke", "-o", "k=0")),
        Case(cli, "run: drift=magic", _cli("run", "cart_wall", "-o", "drift=magic")),
        Case(cli, "run: unknown solver option", _cli("run", "cart_wall", "--solver-option", "bogus=1")),
        Case(cli, "run: -f lcp -s clarabel", _cli("run", "box_slide", "-f", "lcp", "-s", "clarabel")),
        Case(cli, "run: --fallback nosuch", _cli("run", "cart_wall", "--fallback", "nosuch")),
        Case(cli, "run: variational with a floor", _cli("run", "cartesian_pendulum_floor", "-f", "variational")),
        Case(cli, "run: ode on 3-D bodies", _cli("run", "box_drop", "-f", "ode")),
        Case(cli, "run: mujoco on a TOML system", _cli("run", "cart_wall", "-f", "mujoco")),
        Case(cli, "compare: nothing runnable", _cli("compare", "box_slide", "--solvers", "lemke",
                                                    "--formulations", "ccp", "--executor", "serial")),
        Case(cli, "compare: --dt abc", _cli("compare", "cart_wall", "--dt", "abc")),
        Case(cli, "compare: --dt 0", _cli("compare", "cart_wall", "--dt", "0", "--executor", "serial")),
        Case(cli, "compare: --dt=-1e-3", _cli("compare", "cart_wall", "--dt=-1e-3", "--executor", "serial")),
        Case(cli, "compare: --duration 0", _cli("compare", "cart_wall", "--duration", "0")),
        Case(cli, "compare: unknown formulation", _cli("compare", "cart_wall", "--formulations", "nosuch",
                                                       "--executor", "serial")),
        Case(cli, "compare: unknown solver", _cli("compare", "cart_wall", "--solvers", "nosuch",
                                                  "--executor", "serial")),
        Case(cli, "compare: --workers 0", _cli("compare", "cart_wall", "--workers", "0")),
        Case(cli, "compare: unknown executor", _cli("compare", "cart_wall", "--executor", "mpi")),
        Case(cli, "program: --step -1", _cli("program", "cart_wall", "--step", "-1")),
        Case(cli, "program: step past a failure", _cli("program", "box_slide", "-f", "lcp", "-s", "clarabel",
                                                       "--step", "3")),
        Case(cli, "list: unknown topic", _cli("list", "nosuch")),
        Case(cli, "export: unknown format", _cli("export", "cart_wall", "--format", "xml")),
        Case(cli, "bench: missing folder", _cli("bench", "{tmp}/nothing")),
        Case(cli, "unknown subcommand", _cli("simulate", "cart_wall")),
        # --- API ----------------------------------------------------------------------------
        Case(api, "simulate dt=0", _api(lambda: co.simulate(_cart(), dt=0))),
        Case(api, "simulate duration=nan", _api(lambda: co.simulate(_cart(), duration=math.nan))),
        Case(api, "simulate on_failure='ignore'", _api(lambda: co.simulate(_cart(), on_failure="ignore"))),  # type: ignore[arg-type]
        Case(api, "simulate unknown formulation", _api(lambda: co.simulate(_cart(), formulation="nosuch"))),
        Case(api, "simulate lcp with clarabel", _api(lambda: co.simulate(_box(), formulation="lcp",
                                                                         solver="clarabel"))),
        Case(api, "simulate fallback that cannot take it", _api(lambda: co.simulate(
            _box(), formulation="lcp", solver="lemke", fallback="osqp"))),
        Case(api, "simulate unknown solver option", _api(lambda: co.simulate(_cart(), solver_options={"bogus": 1}))),
        Case(api, "solve unknown solver", _api(lambda: co.solve(_qp(), "nosuch"))),
        Case(api, "solve a string", _api(lambda: co.solve("program", "clarabel"))),  # type: ignore[arg-type]
        Case(api, "solve refine='yes'", _api(lambda: co.solve(_qp(), "clarabel", refine="yes"))),
        Case(api, "solve unknown option", _api(lambda: co.solve(_qp(), "clarabel", bogus=1))),
        Case(api, "solve non-symmetric LCP with clarabel", _api(lambda: co.solve(
            co.LCP(M=np.array([[1.0, 2.0], [0.0, 1.0]]), q=np.array([-1.0, -1.0])), "clarabel"))),
        Case(api, "LCP M not square", _api(_lcp(np.ones((2, 3)), np.ones(2)))),
        Case(api, "LCP q with nan", _api(_lcp(np.eye(2), np.array([1.0, math.nan])))),
        Case(api, "ConicProgram P wrong shape", _api(lambda: co.ConicProgram(
            P=sp.eye(3, format="csc"), c=np.zeros(2), A=sp.csc_matrix((0, 2)), b=np.zeros(0), cones=()))),
        Case(api, "ConicProgram cones do not cover A", _api(lambda: co.ConicProgram(
            P=sp.eye(2, format="csc"), c=np.zeros(2), A=sp.eye(2, format="csc"), b=np.zeros(2),
            cones=(co.Nonneg(1),)))),
        Case(api, "ConicProgram b with inf", _api(lambda: co.ConicProgram(
            P=sp.eye(1, format="csc"), c=np.zeros(1), A=sp.eye(1, format="csc"), b=np.array([math.inf]),
            cones=(co.Nonneg(1),)))),
        Case(api, "ConicProgram P not symmetric", _api(lambda: co.ConicProgram(
            P=sp.csc_matrix(np.array([[1.0, 1.0], [0.0, 1.0]])), c=np.zeros(2), A=sp.csc_matrix((0, 2)),
            b=np.zeros(0), cones=()))),
        Case(api, "Cone of unknown kind", _api(lambda: co.programs.Cone("psd", 3))),  # type: ignore[arg-type]
        Case(api, "formulate with q of wrong length", _api(lambda: co.formulate(_cart().system, q=[0.1, 0.2],
                                                                                v=[0.0], dt=0.1))),
        Case(api, "formulate dt=0", _api(lambda: co.formulate(_cart().system, q=[0.1], v=[0.0], dt=0.0))),
        Case(api, "formulate q with nan", _api(lambda: co.formulate(_cart().system, q=[math.nan], v=[0.0],
                                                                    dt=0.1))),
        Case(api, "compare unknown formulation", _api(lambda: co.compare(_cart(), ["nosuch"], executor="serial"))),
        Case(api, "compare dt=0", _api(lambda: co.compare(_cart(), ["gauss"], ["clarabel"], [0.0],
                                                          executor="serial"))),
        # --- corrupted files ----------------------------------------------------------------
        Case(files, "trajectory: a text file", _bytes_file(b"hello", co.Trajectory.load)),
        Case(files, "trajectory: truncated", _truncated(_saved_trajectory, co.Trajectory.load)),
        Case(files, "trajectory: no header", _corrupt_npz(_saved_trajectory, lambda d: d.pop("header"),
                                                          co.Trajectory.load)),
        Case(files, "trajectory: header not JSON", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("header", np.array("{oops")), co.Trajectory.load)),
        Case(files, "trajectory: wrong format tag", _corrupt_npz(
            _saved_trajectory, lambda d: _header(d, format="something"), co.Trajectory.load)),
        Case(files, "trajectory: q array missing", _corrupt_npz(_saved_trajectory, lambda d: d.pop("q"),
                                                                co.Trajectory.load)),
        Case(files, "trajectory: status array short", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("status", d["status"][:1]), co.Trajectory.load)),
        Case(files, "trajectory: unknown status", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("status", np.array(["great"] * len(d["status"]))),
            co.Trajectory.load)),
        Case(files, "trajectory: contact counts too large", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("contact_counts", d["contact_counts"] + 5),
            co.Trajectory.load)),
        Case(files, "trajectory: q rows do not match t", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("q", d["q"][:-1]), co.Trajectory.load)),
        Case(files, "trajectory: header a list", _corrupt_npz(
            _saved_trajectory, lambda d: d.__setitem__("header", np.array("[1, 2]")), co.Trajectory.load)),
        Case(files, "trajectory: a zip that is not npz", _bytes_file(_zip_bytes(), co.Trajectory.load)),
        Case(files, "program: a text file", _bytes_file(b"hello", co.load_program)),
        Case(files, "program: truncated", _truncated(_saved_program, co.load_program)),
        Case(files, "program: a trajectory file", lambda tmp: co.load_program(_saved_trajectory(tmp))),
        Case(files, "program: c array missing", _corrupt_npz(_saved_program, lambda d: d.pop("c"), co.load_program)),
        Case(files, "program: unknown cone", _corrupt_npz(
            _saved_program, lambda d: _header(d, cones=[["psd", 1]]), co.load_program)),
        Case(files, "program: unknown kind", _corrupt_npz(_saved_program, lambda d: _header(d, kind="sdp"),
                                                          co.load_program)),
        Case(files, "program: b with nan", _corrupt_npz(
            _saved_program, lambda d: d.__setitem__("b", np.full_like(d["b"], np.nan)), co.load_program)),
        Case(files, "program: header cones not a list", _corrupt_npz(
            _saved_program, lambda d: _header(d, cones=5), co.load_program)),
        Case(files, "compare cell: not JSON", _compare_cell(lambda p: p.write_text("{oops"))),
        Case(files, "compare cell: another cell's row", _compare_cell(
            lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "formulation": "lcp"})))),
        Case(files, "compare cell: a JSON list", _compare_cell(lambda p: p.write_text("[1, 2, 3]"))),
        Case(files, "compare cell: status missing", _compare_cell(
            lambda p: p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "status"})))),
    ]
    return out


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "not arrays")
    return buffer.getvalue()


def classify(case: Case) -> Outcome:
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = case.run(Path(folder))
        except ContactoptError as exc:
            text = str(exc)
            if "\n" in text.strip() or not text.strip():
                return Outcome(case.category, case.label, "traceback", f"multi-line or empty message: {text!r}")
            return Outcome(case.category, case.label, "clear", text)
        except Exception as exc:  # what the table is about
            return Outcome(case.category, case.label, "traceback", f"{type(exc).__name__}: {exc}")
    if isinstance(result, CliResult):
        lines = result.stderr.strip().splitlines()
        if "Traceback" in result.stderr:
            return Outcome(case.category, case.label, "traceback", lines[-1] if lines else "")
        if result.code != 0 and len(lines) == 1 and lines[0].startswith("contactopt: error:"):
            return Outcome(case.category, case.label, "clear", lines[0])
        if result.code != 0:
            return Outcome(case.category, case.label, "traceback", f"exit {result.code}, stderr {lines!r}")
        return Outcome(case.category, case.label, "silent", f"exit 0, stderr {lines!r}")
    return Outcome(case.category, case.label, "silent", f"accepted: {type(result).__name__}")


def run_all(selected: list[Case] | None = None) -> list[Outcome]:
    return [classify(case) for case in (selected if selected is not None else cases())]


def write_table(outcomes: list[Outcome], folder: Path = OUT) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = folder / "table.csv", folder / "table.md"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["category", "input", "verdict", "message"])
        writer.writerows([o.category, o.label, o.verdict, o.detail] for o in outcomes)
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("clear", "traceback", "silent")}
    lines = [f"{len(outcomes)} bad inputs: {counts['clear']} clear one-line errors, "
             f"{counts['traceback']} tracebacks, {counts['silent']} silently accepted", "",
             "| category | input | verdict | message |", "|---|---|---|---|"]
    lines += [f"| {o.category} | {o.label} | {o.verdict} | {o.detail.replace('|', '/')[:160]} |" for o in outcomes]
    md_path.write_text("\n".join(lines) + "\n")
    return md_path, csv_path


if __name__ == "__main__":
    results = run_all()
    md, csv_file = write_table(results)
    for outcome in results:
        if outcome.verdict != "clear":
            print(f"{outcome.verdict:9s} {outcome.category} / {outcome.label}: {outcome.detail}")
    print(md.read_text().splitlines()[0])
    print(f"wrote {md} and {csv_file}")
