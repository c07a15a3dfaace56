"""Files in and out, part two (issue 35, item 6): scene inputs that are not scene files (TOML
nested 5000 deep, a FIFO, a device, a folder), MJCF models with nothing to move or with an
equality violated at the start, a bench over a folder holding a truncated ``.npz``, a disk that
fills during ``run --save-programs``, an empty ``--out``, an export over an earlier one, a
``.json`` given as a program, ``save("noext")`` / ``load("noext")``, and ``kill -9`` at random
times of ``export``, ``run --save-programs``, ``compare`` and ``bench``: after it, every file
under a final name loads completely (:func:`incomplete_files`) and ``--resume`` / ``--force``
complete the folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import ROOT, Case, api_call, cart_scene, cli_call, co, raw_scene
from contactopt.core.outputs import is_partial

# --- files that load completely ---------------------------------------------------------------


def _read_fully(path: Path) -> None:
    """Read ``path`` completely as its suffix says (raises when it is half-written)."""
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=True) as archive:  # qpbenchmark's files hold None as objects
            for key in archive.files:
                _ = archive[key]  # each member read: its CRC is checked
    elif suffix in (".hdf5", ".h5"):
        import h5py

        with h5py.File(path, "r") as handle:
            handle.visititems(lambda _, item: item[()] if isinstance(item, h5py.Dataset) else None)
    elif suffix == ".csv":
        import pandas as pd

        pd.read_csv(path)
    elif suffix == ".parquet":
        import pandas as pd

        pd.read_parquet(path)
    elif suffix == ".png":
        from PIL import Image

        with Image.open(path) as image:
            image.load()
    elif suffix == ".json":
        json.loads(path.read_text())
    elif suffix == ".py":
        compile(path.read_text(), str(path), "exec")
    else:
        path.read_text()  # report.md: decodes


def incomplete_files(folder: Path) -> list[str]:
    """The files under ``folder`` with a final name that do not load completely, with why; a
    temporary name of an unfinished write (:func:`contactopt.core.outputs.is_partial`) is allowed."""
    bad = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if not path.is_file() or is_partial(path.name) or path.name.startswith(".contactopt-probe-"):
            continue
        try:
            _read_fully(path)
        except Exception as exc:  # what this check is about
            bad.append(f"{path.relative_to(folder)} ({type(exc).__name__}: {str(exc)[:80]})")
    return bad


# --- kill -9 at random times ------------------------------------------------------------------

BOX = ["box_drop", "-f", "anitescu", "--duration", "0.03"]
#: The commands killed, each writing into OUT (``{out}``) and the inputs of bench (``{inputs}``).
COMMANDS: dict[str, list[str]] = {
    "export": ["export", *BOX, "--out", "{out}"],
    "run --save-programs": ["run", *BOX, "-s", "clarabel", "--save-programs", "--out", "{out}"],
    "compare": ["compare", "cart_wall", "--formulations", "gauss,lcp", "--solvers", "clarabel", "--dt", "0.1,0.05",
                "--executor", "serial", "--out", "{out}"],
    "bench": ["bench", "{inputs}", "--solvers", "clarabel,osqp", "--out", "{out}"],
}
#: How each command finishes a killed folder: export and compare resume it, run and bench start it afresh.
FINISH = {"export": "--resume", "run --save-programs": "--force", "compare": "--resume", "bench": "--force"}


#: About how many files each command writes (the kill points are drawn among them).
WRITES = {"export": 90, "run --save-programs": 33, "compare": 19, "bench": 5}


def _written_since(folder: Path, wall: float) -> int:
    """Files under ``folder`` (temporary ones included) modified since ``wall`` (time.time())."""
    count = 0
    for path in folder.rglob("*") if folder.is_dir() else []:
        with contextlib.suppress(OSError):  # renamed or removed meanwhile
            count += path.is_file() and path.stat().st_mtime >= wall - 0.05
    return count


def _command(args: Sequence[str], out: Path, inputs: Path | None) -> list[str]:
    return [sys.executable, "-m", "contactopt", *(a.replace("{out}", str(out)).replace("{inputs}", str(inputs))
                                                  for a in args), "--no-progress"]


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}


def bench_inputs(folder: Path) -> Path:
    """A few step programs for the bench to solve (written by an export of box_drop)."""
    out = folder / "inputs"
    if not (out / "npz").is_dir():
        subprocess.run(_command(["export", *BOX, "--format", "npz", "--out", "{out}"], out, None), check=True,
                       env=_environment(), capture_output=True, timeout=120)
    return out / "npz"


@dataclasses.dataclass
class KillReport:
    """What :func:`kill_and_finish` saw: per kill, the time and the incomplete files left; then
    the finishing command's exit code and the incomplete files after it, and the final files."""

    command: str
    kills: list[tuple[float, list[str]]]
    unfinished: list[int]  # per kill: temporary files of writes it interrupted
    finish_code: int
    finish_stderr: str
    after_finish: list[str]
    files: list[str]

    def problems(self) -> str | None:
        half = [f"killed at {t:.2f} s: {bad}" for t, bad in self.kills if bad]
        if half:
            return f"{self.command}: half-written files under final names: {'; '.join(half)}"
        if self.finish_code != 0:
            return f"{self.command} {FINISH[self.command]} exited {self.finish_code}: {self.finish_stderr[-300:]}"
        if self.after_finish:
            return f"{self.command} {FINISH[self.command]} left incomplete files: {self.after_finish}"
        if not self.files or any(is_partial(Path(name).name) for name in self.files):
            return f"{self.command} {FINISH[self.command]}: files {self.files[:5]}"
        return None


def kill_and_finish(command: str, folder: Path, kills: int = 2, seed: int = 0, span: float = 60.0) -> KillReport:
    """Start ``command`` (a key of :data:`COMMANDS`) into ``folder/out`` ``kills`` times, each
    killed with SIGKILL at a random point of its writes (once a random number of files, 1 to
    :data:`WRITES`, were written under ``out``, polled every millisecond; at ``span`` s at the
    latest), checking
    the folder after each kill; then run it once more with :data:`FINISH` and check again."""
    rng = random.Random(f"{command}-{seed}")
    out = folder / "out"
    inputs = bench_inputs(folder) if command == "bench" else None
    seen: list[tuple[float, list[str]]] = []
    unfinished: list[int] = []
    for k in range(kills):
        args = list(COMMANDS[command])
        if k and out.exists() and any(out.iterdir()):
            args.append(FINISH[command])  # a second kill interrupts a resumed (or forced) run
        files = rng.randint(1, WRITES[command])  # killed once this many files were written: amid the writes
        wall = time.time()
        process = subprocess.Popen(_command(args, out, inputs), env=_environment(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        started = time.monotonic()
        while process.poll() is None and time.monotonic() - started < span:
            if _written_since(out, wall) >= files:
                break
            time.sleep(0.001)
        at = time.monotonic() - started
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait()
        seen.append((at, incomplete_files(out)))
        unfinished.append(sum(is_partial(p.name) for p in out.rglob("*")) if out.is_dir() else 0)
    args = list(COMMANDS[command]) + ([FINISH[command]] if out.exists() and any(out.iterdir()) else [])
    done = subprocess.run(_command(args, out, inputs), env=_environment(), capture_output=True, text=True,
                          timeout=300)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    return KillReport(command, seen, unfinished, done.returncode, done.stderr, incomplete_files(out), files)


def killed(command: str) -> Callable[[Path], Any]:
    return lambda tmp: kill_and_finish(command, tmp, kills=2, seed=1)


def kill_check(report: KillReport) -> str | None:
    return report.problems()


# --- scene inputs that are not scene files ----------------------------------------------------------


def fifo_scene(suffix: str) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        path = tmp / f"scene{suffix}"
        os.mkfifo(path)
        return co.load_scene(path)
    return run


def fifo_file(name: str, load: Callable[[Path], Any]) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        os.mkfifo(tmp / name)
        return load(tmp / name)
    return run


def bench_beside_fifo(tmp: Path) -> Any:
    """``bench`` on a folder of 3 programs (one truncated) and a FIFO named ``pipe.npz``."""
    truncated_in_bench(tmp)
    os.mkfifo(tmp / "programs" / "pipe.npz")
    result = cli_call("bench", "{tmp}/programs", "--solvers", "clarabel", "--out", "{tmp}/b")(tmp)
    import pandas as pd

    rows = pd.read_csv(tmp / "b" / "results.csv") if (tmp / "b" / "results.csv").is_file() else None
    return result.code, result.stderr, None if rows is None else sorted(rows["program"])


def fifo_left_out(result: Any) -> str | None:
    code, stderr, programs = result
    if code != 0 or "Traceback" in stderr:
        return f"exit {code}: {stderr[-300:]}"
    return None if programs == ["step_0.npz", "step_1.npz", "step_2.npz"] else f"rows for {programs}"


def fifo_in_scene(tmp: Path) -> Any:
    """A scene whose ``[system] file`` is a FIFO."""
    os.mkfifo(tmp / "model.xml")
    (tmp / "scene.toml").write_text('[scene]\nname = "f"\ndt = 0.01\nduration = 0.1\n[system]\ntype = "mjcf"\n'
                                    'file = "model.xml"\n')
    return co.load_scene(tmp / "scene.toml")


STATIC = '<mujoco><worldbody><geom type="plane" size="1 1 0.1"/>{body}</worldbody></mujoco>'


def mjcf(text: str, name: str = "model.xml") -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        (tmp / name).write_text(text)
        return co.load_scene(tmp / name)
    return run


#: Two free spheres joined by an equality, their keyframe 1 m apart along x.
JOINED = """<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
    <body name="b" pos="0.2 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody>
  <equality>{equality}</equality>
  <keyframe><key qpos="0 0 1 1 0 0 0  {x} 0 1 1 0 0 0"/></keyframe>
</mujoco>"""
CONNECT = '<connect name="link" body1="a" body2="b" anchor="0.1 0 0"/>'
WELD = '<weld name="glue" body1="a" body2="b"/>'


def joined(equality: str, x: float) -> Callable[[Path], Any]:
    """A short run of :data:`JOINED` (the warning is the case's outcome)."""
    def run(tmp: Path) -> Any:
        (tmp / "joined.xml").write_text(JOINED.format(equality=equality, x=x))
        scene = dataclasses.replace(co.load_scene(tmp / "joined.xml"), duration=0.004)
        return co.simulate(scene, formulation="regularized", solver="clarabel")
    return run


def equality_warning(expected: str) -> Callable[[Any], str | None]:
    def check(result: Any) -> str | None:
        words = [str(w.message) for w in result]
        if any(expected in text and "\n" not in text for text in words):
            return None
        return f"no one-line warning naming {expected!r}: {words}"
    return check


def warned_run(equality: str, x: float) -> Callable[[Path], Any]:
    """The warnings of :func:`joined`'s run."""
    def run(tmp: Path) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            joined(equality, x)(tmp)
        return [w for w in caught if "equality" in str(w.message)]
    return run


# --- bench over a truncated file ------------------------------------------------------------------


def truncated_in_bench(tmp: Path) -> Any:
    from contactopt.analysis.bench import run_benchmark

    folder = tmp / "programs"
    folder.mkdir()
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    for i, v in enumerate((0.0, 0.5, 1.0)):
        program = co.formulate(scene.system, scene.q0, scene.v0 + v, scene.dt, formulation="anitescu")
        co.save_program(program, folder / f"step_{i}.npz")
    whole = (folder / "step_1.npz").read_bytes()
    (folder / "step_1.npz").write_bytes(whole[: len(whole) // 3])
    return run_benchmark([folder], ["clarabel"], ["default"], progress=False)


def one_failed_row(df: Any) -> str | None:
    rows = {str(label): (status, error) for label, status, error in zip(df["program"], df["status"], df["error"],
                                                                            strict=True)}
    if set(rows) != {"step_0.npz", "step_1.npz", "step_2.npz"}:
        return f"rows {sorted(rows)}"
    status, error = rows["step_1.npz"]
    if status != "unreadable" or "step_1.npz" not in error:
        return f"truncated file: status {status!r}, error {error!r}"
    solved = [label for label, (s, _) in rows.items() if s == "optimal"]
    return None if solved == ["step_0.npz", "step_2.npz"] else f"the others not solved: {rows}"


# --- a disk that fills --------------------------------------------------------------------------------


def full_disk(limit_bytes: int) -> Callable[[Path], Any]:
    """``contactopt run --save-programs`` with files limited to ``limit_bytes`` (``ulimit -f``:
    a write past it fails with EFBIG, as a full disk fails with ENOSPC): one error line naming
    the file, exit 1, and every file left under a final name complete."""
    def run(tmp: Path) -> Any:
        out = tmp / "out"

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

        done = subprocess.run(_command(["run", *BOX, "-s", "clarabel", "--save-programs", "--out", "{out}"], out,
                                       None), env=_environment(), capture_output=True, text=True, timeout=120,
                              preexec_fn=limit)
        return done.returncode, done.stderr.strip().splitlines(), incomplete_files(out), sorted(
            p.name for p in out.iterdir()) if out.is_dir() else []
    return run


def full_disk_check(result: Any) -> str | None:
    code, lines, bad, _ = result
    if code != 1 or len(lines) != 1 or not lines[0].startswith("contactopt: error: cannot write"):
        return f"exit {code}, stderr {lines[-3:]}"
    if bad:
        return f"half-written files: {bad}"
    named = [name for name in ("trajectory.npz", "trajectory.png", "summary.json") if name in lines[0]]
    return None if named or "step_" in lines[0] else f"the line names no file: {lines[0]}"


# --- files of the API ---------------------------------------------------------------------------------


def json_program(tmp: Path) -> Any:
    (tmp / "program.json").write_text(json.dumps({"P": [[1.0]], "c": [0.0]}))
    return co.load_program(tmp / "program.json")


def noext_round_trip(tmp: Path) -> Any:
    traj = co.simulate(dataclasses.replace(cart_scene(), duration=0.3))
    written = traj.save(tmp / "noext")
    return traj, written, co.Trajectory.load(tmp / "noext")


def same_trajectory(result: Any) -> str | None:
    traj, written, back = result
    if Path(written).name != "noext.npz":
        return f"saved as {written}"
    return None if np.array_equal(traj.q, back.q) and len(back.steps) == len(traj.steps) else "loaded another one"


def noext_program(tmp: Path) -> Any:
    program = co.LCP(M=np.eye(2), q=-np.ones(2))
    co.save_program(program, tmp / "step")
    return program, co.load_program(tmp / "step")


def same_program(result: Any) -> str | None:
    program, back = result
    return None if np.array_equal(program.M, back.M) and np.array_equal(program.q, back.q) else "another program"


def export_twice(*extra: str) -> Callable[[Path], Any]:
    """``export`` into a folder an earlier export filled (``extra``: the second call's flags)."""
    def run(tmp: Path) -> Any:
        first = cli_call("export", "cart_wall", "--duration", "0.2", "--format", "npz", "--out", "{tmp}/e")(tmp)
        assert first.code == 0, first.stderr
        again = cli_call("export", "cart_wall", "--duration", "0.2", "--format", "npz", "--out", "{tmp}/e",
                         *extra)(tmp)
        return again if not extra or "--dt" in extra else (again.code, again.stderr, incomplete_files(tmp / "e"),
                                                            sorted(p.name for p in (tmp / "e" / "npz").iterdir()))
    return run


def exported_again(result: Any) -> str | None:
    code, stderr, bad, steps = result
    if code != 0 or "Traceback" in stderr or bad:
        return f"exit {code}: {stderr[-300:]}; incomplete {bad}"
    return None if steps == ["step_000000.npz", "step_000001.npz"] else f"step files {steps}"


def cases() -> list[Case]:
    scene, mj, files, cli, kill = "scene file", "MJCF", "corrupted file", "CLI", "kill -9"
    return [
        Case(scene, "TOML arrays nested 5000 deep", raw_scene("a = " + "[" * 5000 + "]" * 5000)),
        Case(scene, "TOML inline tables nested 5000 deep", raw_scene("a = " + "{b = " * 5000 + "1" + "}" * 5000)),
        Case(scene, "a FIFO named scene.toml", fifo_scene(".toml"), timeout=10),
        Case(scene, "a FIFO named scene.xml", fifo_scene(".xml"), timeout=10),
        Case(scene, "a FIFO as [system] file", fifo_in_scene, timeout=10),
        Case(scene, "/dev/zero as the scene", api_call(lambda: co.load_scene("/dev/zero")), timeout=10),
        Case(scene, "a folder as the scene", lambda tmp: co.load_scene(tmp), timeout=10),
        Case(mj, "nv = 0: only static geoms", mjcf(STATIC.format(body=""))),
        Case(mj, "nv = 0: a body without a joint", mjcf(STATIC.format(body='<body pos="0 0 1"><geom type="sphere" '
                                                                       'size="0.1"/></body>'))),
        Case(mj, "nv = 0 through the CLI", lambda tmp: (tmp / "m.xml").write_text(STATIC.format(body=""))
             and cli_call("run", "{tmp}/m.xml", "--no-plot")(tmp)),
        Case(mj, "connect violated by 1 m at the start", warned_run(CONNECT, 1.2), expect="answer",
             check=equality_warning("connect 'link' is violated by 1 ")),
        Case(mj, "weld violated by 1 m at the start", warned_run(WELD, 1.2), expect="answer",
             check=equality_warning("weld 'glue' is violated by 1 ")),
        Case(mj, "connect satisfied at the start: no warning", warned_run(CONNECT, 0.2), expect="answer",
             check=lambda found: f"warned: {[str(w.message) for w in found]}" if found else None),
        Case(files, "bench over a folder with a truncated npz", truncated_in_bench, expect="answer",
             check=one_failed_row),
        Case(files, "a .json given to load_program", json_program),
        Case(files, "a .json given to Trajectory.load", lambda tmp: (tmp / "t.json").write_text("{}")
             and co.Trajectory.load(tmp / "t.json")),
        Case(files, "an empty file given to load_program", lambda tmp: (tmp / "e.npz").write_bytes(b"")
             or co.load_program(tmp / "e.npz")),
        Case(files, "a FIFO given to load_program", fifo_file("p.npz", co.load_program), timeout=10),
        Case(files, "a FIFO given to Trajectory.load", fifo_file("t.npz", co.Trajectory.load), timeout=10),
        Case(cli, "bench on a FIFO", fifo_file("p.npz", lambda path: cli_call("bench", str(path), "--out",
                                                                              f"{path.parent}/b")(path.parent)),
             timeout=10),
        Case(cli, "bench on a folder holding a FIFO", bench_beside_fifo, expect="answer", check=fifo_left_out,
             timeout=30),
        Case(files, "Trajectory save('noext') then load('noext')", noext_round_trip, expect="answer",
             check=same_trajectory),
        Case(files, "save_program('step') then load_program('step')", noext_program, expect="answer",
             check=same_program),
        Case(cli, "run --out ''", cli_call("run", "cart_wall", "--no-plot", "--out", "")),
        Case(cli, "export --out ''", cli_call("export", "cart_wall", "--out", "")),
        Case(cli, "compare --out ''", cli_call("compare", "cart_wall", "--executor", "serial", "--out", "")),
        Case(cli, "bench --out ''", lambda tmp: cli_call("bench", str(bench_inputs(tmp)), "--out", "")(tmp)),
        Case(cli, "export over an earlier export", export_twice()),
        Case(cli, "export over an earlier export --force", export_twice("--force"), expect="answer",
             check=exported_again),
        Case(cli, "export over an earlier export --resume", export_twice("--resume"), expect="answer",
             check=exported_again),
        Case(cli, "export --resume of other arguments", lambda tmp: export_twice("--resume", "--dt", "0.05")(tmp)),
        Case(cli, "run --save-programs on a full disk (64 KiB files)", full_disk(64 * 1024), expect="answer",
             check=full_disk_check, timeout=120),
        Case(cli, "run --save-programs on a full disk (4 KiB files)", full_disk(4 * 1024), expect="answer",
             check=full_disk_check, timeout=120),
        *(Case(kill, f"{command} killed twice, then {FINISH[command]}", killed(command), expect="answer",
               check=kill_check, timeout=300) for command in COMMANDS),
    ]

