"""What every bad-input case shares: the :class:`Case` record, the ways a case is built
(a scene file, a CLI call, an API call, a corrupted file) and :func:`classify`, which runs one
case under a time limit and gives its verdict:

* ``clear``: the expected, loud outcome. For ``expect="error"`` one line naming the culprit
  (a :class:`ContactoptError` whose message is one line, or the CLI exiting non-zero with one
  ``contactopt: error:`` line and no traceback); for ``expect="warning"`` the call completes
  and says what is wrong in a one-line warning; for ``expect="answer"`` the result is right
  (``check`` finds nothing wrong) or the call fails loudly (a one-line error);
* ``traceback``: any other exception, or a traceback printed by the CLI;
* ``silent``: accepted without complaint (``expect="error"`` or ``"warning"``);
* ``wrong``: an answer that ``check`` finds wrong (``expect="answer"``);
* ``hang``: still running after the case's ``timeout``.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the worktree's contactopt, when run as a script
    sys.path.insert(0, str(ROOT))

import contactopt as co  # noqa: E402
from contactopt.core.errors import ContactoptError  # noqa: E402

VERDICTS = ("clear", "traceback", "silent", "wrong", "hang")


@dataclass(frozen=True)
class Case:
    """One bad input.

    Attributes:
        category: the table's group (``scene file``, ``CLI``, ``API``, ``corrupted file``, ...).
        label: what the input is, unique within its category.
        run: the case itself, given a fresh temporary folder; returns what the call returned.
        expect: ``error`` (one clear line), ``warning`` (completes with a one-line warning) or
            ``answer`` (``check`` passes, or a one-line error).
        check: for ``expect="answer"``: what is wrong with the result, or None when it is right.
        timeout: seconds before the case counts as a hang.
    """

    category: str
    label: str
    run: Callable[[Path], Any]
    expect: str = "error"
    check: Callable[[Any], str | None] | None = None
    timeout: float = 60.0


@dataclass(frozen=True)
class Outcome:
    category: str
    label: str
    verdict: str  # one of VERDICTS
    detail: str


@dataclass(frozen=True)
class CliResult:
    code: int
    stderr: str


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


def scene_text(old: str, new: str) -> Callable[[Path], Any]:
    """A scene file: GOOD with ``old`` replaced by ``new``; loading it is the case."""
    def run(tmp: Path) -> Any:
        assert old in GOOD, old
        path = tmp / "scene.toml"
        path.write_text(GOOD.replace(old, new))
        return co.load_scene(path)
    return run


def raw_scene(text: str | bytes) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = tmp / "scene.toml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return co.load_scene(path)
    return run


def cli_call(*argv: str) -> Callable[[Path], Any]:
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


def api_call(call: Callable[[], Any]) -> Callable[[Path], Any]:
    return lambda tmp: call()


def cart_scene() -> co.Scene:
    return co.load_scene(ROOT / "problems" / "cart_wall.toml")


def box_scene() -> co.Scene:
    import dataclasses

    return dataclasses.replace(co.load_scene(ROOT / "problems" / "box_slide.toml"), duration=0.01)


def cart_qp() -> co.ConicProgram:
    scene = cart_scene()
    return co.formulate(scene.system, q=[0.2], v=[-2.0], dt=0.1, formulation="gauss")


def saved_trajectory(tmp: Path) -> Path:
    return co.simulate(cart_scene(), duration=0.3).save(tmp / "traj.npz")


def corrupt_npz(make: Callable[[Path], Path], edit: Callable[[dict[str, Any]], None],
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


def bytes_file(content: bytes, load: Callable[[Path], Any], name: str = "bad.npz") -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = tmp / name
        path.write_bytes(content)
        return load(path)
    return run


def truncated(make: Callable[[Path], Path], load: Callable[[Path], Any]) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = make(tmp)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return load(path)
    return run


def saved_program(tmp: Path) -> Path:
    return co.save_program(cart_qp(), tmp / "prog.npz")


def edit_header(data: dict[str, Any], **changes: Any) -> None:
    header = json.loads(str(data["header"]))
    header.update(changes)
    data["header"] = np.array(json.dumps(header))


def compare_cell(edit: Callable[[Path], None]) -> Callable[[Path], Any]:
    """A compare run, one cell file edited, then the same compare resumed from the folder:
    the corrupted cell must be refused (recomputed with a warning naming it), not loaded."""
    def run(tmp: Path) -> Any:
        import dataclasses

        scene = dataclasses.replace(cart_scene(), duration=0.3)
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


def make_lcp(M: Any, q: Any) -> Callable[[], Any]:
    return lambda: co.LCP(M=M, q=q)


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_Hang` in the main thread after ``seconds`` (SIGALRM); no limit where the
    signal is unavailable (another thread)."""
    def alarm(signum: int, frame: Any) -> None:
        raise _Hang()

    try:
        previous = signal.signal(signal.SIGALRM, alarm)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text.strip()


def classify(case: Case) -> Outcome:
    def outcome(verdict: str, detail: str) -> Outcome:
        return Outcome(case.category, case.label, verdict, detail)

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with _time_limit(case.timeout):
                result = case.run(Path(folder))
        except _Hang:
            return outcome("hang", f"still running after {case.timeout:g} s")
        except ContactoptError as exc:
            text = str(exc)
            if not _one_line(text):
                return outcome("traceback", f"multi-line or empty message: {text!r}")
            return outcome("clear", text)
        except Exception as exc:  # what the table is about
            return outcome("traceback", f"{type(exc).__name__}: {exc}")
    ours = [str(w.message) for w in caught if type(w.message).__module__.startswith("contactopt")
            or "contactopt" in str(w.filename)]
    if isinstance(result, CliResult):
        lines = result.stderr.strip().splitlines()
        if "Traceback" in result.stderr:
            return outcome("traceback", lines[-1] if lines else "")
        if result.code != 0 and len(lines) == 1 and lines[0].startswith("contactopt: error:"):
            return outcome("clear", lines[0])
        if result.code != 0:
            return outcome("traceback", f"exit {result.code}, stderr {lines!r}")
        warned = [line for line in lines if "warning" in line.lower()]
        if case.expect == "warning" and warned:
            return outcome("clear", warned[0])
        return outcome("silent", f"exit 0, stderr {lines!r}")
    if case.expect == "warning":
        if ours and all(_one_line(text) for text in ours):
            return outcome("clear", ours[0])
        return outcome("silent", f"accepted without a one-line warning: {type(result).__name__}")
    if case.expect == "answer":
        assert case.check is not None, case.label
        wrong = case.check(result)
        return outcome("wrong", wrong) if wrong else outcome("clear", "right answer")
    return outcome("silent", f"accepted: {type(result).__name__}")
