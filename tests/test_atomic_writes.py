"""Every write is atomic (a temporary name in the same folder, then ``os.replace``:
:func:`contactopt.core.outputs.atomic_path`): a process killed in the middle of a write, or a write
that fails on a full disk, leaves the earlier file or none under the final name, never half of
one; ``export`` refuses a non-empty folder unless ``--force`` (replace) or ``--resume`` (keep
the completed step files); ``save("noext")`` and ``load("noext")`` agree.

The ``kill -9`` runs of ``experiments/badinputs/writes.py`` (export, run --save-programs,
compare, bench, each killed at random times) run here once fast (export, one kill) and fully
under ``slow``."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core.errors import OutputError
from contactopt.core.outputs import atomic_path, is_partial, write_text
from contactopt.core.run_folders import EXPORT_OUTPUTS, open_run_folder

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "experiments") not in sys.path:
    sys.path.insert(0, str(ROOT / "experiments"))

from badinputs.writes import incomplete_files, kill_and_finish  # noqa: E402


def _cart(duration: float = 0.3) -> co.Scene:
    return dataclasses.replace(co.load_scene(ROOT / "problems" / "cart_wall.toml"), duration=duration)


def test_a_failed_write_keeps_the_earlier_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = write_text(tmp_path / "summary.json", '{"earlier": 1}')
    with pytest.raises(OutputError, match=r"summary.json: no space left on the device"), \
            atomic_path(target, "summary file") as temporary:
        temporary.write_text('{"lat')  # half of the new file, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")
    assert json.loads(target.read_text()) == {"earlier": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_the_temporary_name_keeps_the_suffix_so_numpy_and_matplotlib_write_the_named_format(tmp_path: Path) -> None:
    with atomic_path(tmp_path / "a.npz") as temporary:
        assert is_partial(temporary.name) and temporary.name.endswith("-a.npz") and temporary.parent == tmp_path
        np.savez(temporary, x=np.arange(3))  # no second .npz appended
    with np.load(tmp_path / "a.npz") as archive:
        assert archive["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]


KILLED_IN_A_WRITE = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    import numpy.lib.format as fmt
    import contactopt as co
    program = co.LCP(M=np.eye(400), q=-np.ones(400))
    original = fmt.write_array
    def dying(fp, array, *args, **kwargs):  # a kill -9 once some bytes of a big member are out
        if array.size > 1000:
            fp.write(b"x" * 4096)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(fp, array, *args, **kwargs)
    fmt.write_array = dying
    import numpy.lib._npyio_impl as npyio
    npyio.format.write_array = dying
    co.save_program(program, sys.argv[1])
""")


def test_kill_9_in_the_middle_of_save_program_leaves_the_earlier_file(tmp_path: Path) -> None:
    """Without the rename the killed write leaves a half archive under the name (np.load fails)."""
    target = tmp_path / "step_000050.npz"
    earlier = co.LCP(M=2.0 * np.eye(2), q=-np.ones(2))
    co.save_program(earlier, target)
    done = subprocess.run([sys.executable, "-c", KILLED_IN_A_WRITE, str(target)], env={**os.environ,
                          "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    again = co.load_program(target)
    assert isinstance(again, co.LCP) and np.array_equal(again.M, earlier.M)
    assert [p.name for p in tmp_path.iterdir() if not is_partial(p.name)] == [target.name]


def test_save_and_load_agree_on_a_name_without_npz(tmp_path: Path) -> None:
    traj = co.simulate(_cart())
    assert traj.save(tmp_path / "noext") == tmp_path / "noext.npz"
    back = co.Trajectory.load(tmp_path / "noext")
    assert np.array_equal(back.q, traj.q) and len(back.steps) == len(traj.steps)
    program = co.LCP(M=np.eye(2), q=np.array([-1.0, 2.0]))
    assert co.save_program(program, tmp_path / "step.b") == tmp_path / "step.b.npz"
    assert np.array_equal(co.load_program(tmp_path / "step.b").q, program.q)


def test_a_json_is_not_a_program_file(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text("{}")
    with pytest.raises(co.ContactoptError, match=r"p.json: not a program file .*expected .npz") as caught:
        co.load_program(tmp_path / "p.json")
    assert "pickle" not in str(caught.value)


def test_a_disk_that_fills_in_the_plot_is_one_line_and_the_files_written_stay_complete(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    def full(self: Figure, fname: object, **kwargs: object) -> None:
        Path(str(fname)).write_bytes(b"\x89PNG\r\n\x1a\n half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    out = tmp_path / "run"
    code = main(["run", "cart_wall", "--duration", "0.3", "--save-programs", "--no-progress", "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    png = out / "trajectory.png"
    assert lines == [f"contactopt: error: cannot write the figure {png}: no space left on the device"]
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "trajectory.npz"]  # no half png, no temporary
    assert incomplete_files(out) == []
    assert len(co.Trajectory.load(out / "trajectory.npz").steps) == 3


def _export(out: Path, *flags: str, duration: str = "0.3") -> int:
    return main(["export", "cart_wall", "--duration", duration, "--format", "npz", "--no-progress", "--out", str(out),
                 *flags])


def test_export_refuses_an_earlier_export_then_force_replaces_and_resume_keeps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "e"
    assert _export(out, duration="0.5") == 0  # 5 steps
    assert sorted(p.name for p in (out / "npz").iterdir())[-1] == "step_000004.npz"
    capsys.readouterr()
    assert _export(out) == 1
    err = capsys.readouterr().err
    assert "is not empty" in err and "--force" in err and "--resume" in err
    assert _export(out, "--force", "--resume") == 1
    assert "exclude each other" in capsys.readouterr().err
    assert _export(out, "--force") == 0  # 3 steps: the 2 later step files of the earlier export are gone
    assert sorted(p.name for p in (out / "npz").iterdir()) == [f"step_00000{i}.npz" for i in range(3)]
    kept = out / "npz" / "step_000001.npz"
    os.utime(kept, (1.0, 1.0))
    (out / "npz" / "step_000002.npz").unlink()
    (out / "npz" / ".contactopt-partial-0000abcd-step_000002.npz").write_bytes(b"PK\x03\x04 half")  # a killed write
    assert _export(out, "--resume") == 0
    assert "unfinished write" in capsys.readouterr().out
    assert kept.stat().st_mtime == 1.0  # completed step files are kept as they are
    assert sorted(p.name for p in (out / "npz").iterdir()) == [f"step_00000{i}.npz" for i in range(3)]
    assert incomplete_files(out) == []
    assert _export(out, "--resume", "--dt", "0.05") == 1  # the kept files would be another run's
    assert "other arguments (differing: dt)" in capsys.readouterr().err


def test_open_run_folder_refuses_an_empty_out_and_resume_without_an_export(tmp_path: Path) -> None:
    with pytest.raises(co.ContactoptError, match=r"--out is empty"):
        open_run_folder("", tmp_path / "x", outputs=EXPORT_OUTPUTS)
    with pytest.raises(co.ContactoptError, match=r"no earlier export to resume"):
        open_run_folder(None, tmp_path / "x", outputs=EXPORT_OUTPUTS, resume=True, kept_on_resume=EXPORT_OUTPUTS,
                        resumed_what="completed step files", command="export")


@pytest.mark.slow  # the deterministic kill above checks the rename by default; this one, a random moment
def test_kill_9_of_export_at_a_random_time_then_resume(tmp_path: Path) -> None:
    report = kill_and_finish("export", tmp_path, kills=1, seed=3)
    assert report.problems() is None
    assert sum(name.startswith("npz/step_") for name in report.files) == 30


@pytest.mark.slow
@pytest.mark.parametrize("command", ["export", "run --save-programs", "compare", "bench"])
def test_kill_9_at_random_times_leaves_only_complete_files(tmp_path: Path, command: str) -> None:
    report = kill_and_finish(command, tmp_path, kills=4, seed=11)
    assert report.problems() is None, report
