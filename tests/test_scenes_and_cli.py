"""Scene-file validation and the command line.

Every bad scene file gets one error that names the file and the key; the CLI turns it into
one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main

GOOD = """
[scene]
name = "t"
dt = 0.1
duration = 0.5

[system]
type = "cart"

[system.parameters]
m = 1.0

[initial]
q = [1.0]
v = [-2.0]
"""

# (description, edit of GOOD, text that must appear in the error besides the file name)
BAD_SCENES = [
    ("unknown top-level key", GOOD + "\n[extra]\nx = 1\n", "'extra'"),
    ("unknown scene key", GOOD.replace("dt = 0.1", "dt = 0.1\ndtt = 0.2"), "'scene.dtt'"),
    ("unknown system key", GOOD.replace('type = "cart"', 'type = "cart"\nmas = 1'), "'system.mas'"),
    ("unknown parameter", GOOD.replace("m = 1.0", "m = 1.0\nmass = 2.0"), "system.parameters.mass"),
    ("unknown initial key", GOOD.replace("v = [-2.0]", "v = [-2.0]\nqd = [0.0]"), "'initial.qd'"),
    ("unknown contact key", GOOD + "\n[contact]\nfriction = 0.5\n", "contact.friction"),
    ("missing dt", GOOD.replace("dt = 0.1\n", ""), "'scene.dt'"),
    ("missing system type", GOOD.replace('type = "cart"\n', ""), "'system.type'"),
    ("missing mass", GOOD.replace("m = 1.0\n", ""), "system.parameters.m"),
    ("missing initial q", GOOD.replace("q = [1.0]\n", ""), "'initial.q'"),
    ("missing [system]", GOOD.replace('[system]\ntype = "cart"\n', "").replace(
        "[system.parameters]\nm = 1.0\n", ""), "[system]"),
    ("q too long", GOOD.replace("q = [1.0]", "q = [1.0, 2.0]"), "initial.q: expected 1 values"),
    ("v too short", GOOD.replace("v = [-2.0]", "v = []"), "initial.v: expected 1 values"),
    ("q not numbers", GOOD.replace("q = [1.0]", 'q = ["a"]'), "initial.q"),
    ("negative mass", GOOD.replace("m = 1.0", "m = -1.0"), "system.parameters.m: must be > 0"),
    ("zero mass", GOOD.replace("m = 1.0", "m = 0.0"), "system.parameters.m: must be > 0"),
    ("NaN mass", GOOD.replace("m = 1.0", "m = nan"), "system.parameters.m"),
    ("unknown system type", GOOD.replace('type = "cart"', 'type = "kart"'), "unknown system type 'kart'"),
    ("negative dt", GOOD.replace("dt = 0.1", "dt = -0.1"), "scene.dt: must be > 0"),
    ("negative mu", GOOD + "\n[contact]\nmu = -0.5\n", "contact.mu: must be >= 0"),
    ("restitution above 1", GOOD + "\n[contact]\nrestitution = 1.5\n", "contact.restitution"),
    ("unknown formulation", GOOD.replace("duration = 0.5", 'duration = 0.5\nformulation = "gaus"'),
     "scene.formulation"),
    ("unknown solver", GOOD.replace("duration = 0.5", 'duration = 0.5\nsolver = "clarabell"'),
     "scene.solver"),
    ("unknown option", GOOD + '\n[options]\nfrom = "dual"\n', "'from'"),
    ("bad TOML", GOOD.replace("dt = 0.1", "dt = = 0.1"), "invalid TOML"),
]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scene.toml"
    path.write_text(text)
    return path


def test_good_scene_loads(tmp_path: Path) -> None:
    scene = co.load_scene(_write(tmp_path, GOOD))
    assert scene.system.type_name == "cart" and scene.dt == 0.1 and scene.duration == 0.5
    np.testing.assert_array_equal(scene.q0, [1.0])
    assert scene.formulation == "gauss" and scene.solver == "clarabel"


@pytest.mark.parametrize(("what", "text", "needle"), BAD_SCENES, ids=[b[0] for b in BAD_SCENES])
def test_bad_scene_names_file_and_key(tmp_path: Path, what: str, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(co.SceneError) as info:
        co.load_scene(path)
    message = str(info.value)
    assert str(path) in message and needle in message, message
    assert "\n" not in message


def test_missing_scene_file() -> None:
    with pytest.raises(co.SceneError, match="no such scene file"):
        co.load_scene("does/not/exist.toml")


@pytest.mark.parametrize("name", ["cart_wall", "point_mass_drop"])
def test_bundled_problems_load_and_run(name: str) -> None:
    scene = co.load_scene(name)
    traj = co.simulate(scene)
    assert traj.completed and min(r.phi.min() for r in traj.steps) >= -1e-6


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("cart_wall", "point_mass_drop", "gauss", "clarabel", "osqp", "cvxpy", "lemke", "cart"):
        assert word in out
    assert main(["list", "solvers"]) == 0


def test_cli_run_writes_trajectory_plot_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(["run", "cart_wall", "--solver", "lemke", "-o", "form=dual", "--out", str(out),
                 "--no-progress", "--save-programs"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "cart_wall" in printed and "lemke" in printed and "optimal:20" in printed
    traj = co.Trajectory.load(out / "trajectory.npz")
    assert traj.info["solver"] == "lemke" and traj.info["options"]["form"] == "dual"
    assert traj.info["options"]["drift"] == "none"  # every option is recorded, defaults included
    assert abs(traj.q[-1, 0]) <= 1e-12
    assert (out / "trajectory.png").stat().st_size > 10_000
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 20
    program = co.load_program(out / "programs" / "step_000005.npz")
    assert program.metadata["t"] == pytest.approx(0.5)


def test_cli_program_saves_one_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "p.npz"
    # Exact pivoting up to step 5: step 4 lands exactly on the kink q + h v = 0.
    assert main(["program", "cart_wall", "--step", "5", "--solver", "lemke", "--out", str(target)]) == 0
    assert "nonpenetration" in capsys.readouterr().out
    program = co.load_program(target)
    # At step 5 the cart is at q = 0 moving at -2 m/s: c = -M v_free = 2, b = phi/h = 0.
    np.testing.assert_allclose(program.c, [2.0], atol=1e-9)
    np.testing.assert_allclose(program.b, [0.0], atol=1e-9)


@pytest.mark.parametrize("argv", [
    ["run", "{bad}"],
    ["run", "cart_wall", "--solver", "nope"],
    ["run", "cart_wall", "--formulation", "nope"],
    ["run", "cart_wall", "-o", "form=sideways"],
    ["run", "cart_wall", "--dt", "-1"],
    ["run", "missing_scene"],
])
def test_cli_errors_are_one_line_without_traceback(tmp_path: Path, argv: list[str]) -> None:
    bad = _write(tmp_path, GOOD.replace("m = 1.0", "m = -1.0"))
    args = [a.replace("{bad}", str(bad)) for a in argv] + ["--out", str(tmp_path / "o"), "--no-progress"]
    result = subprocess.run([sys.executable, "-m", "contactopt", *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode in (1, 2), result.stderr  # 2: argparse usage errors (--dt -1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("contactopt: error:"), result.stderr
    assert "Traceback" not in result.stderr


def test_cli_usage_error_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "contactopt", "frobnicate"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_failed_run_keeps_what_it_computed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # Lemke capped at one pivot solves free flight (q >= 0: no pivot) and fails at landing.
    code = main(["run", "point_mass_drop", "--solver", "lemke", "--solver-option", "max_iter=1",
                 "--out", str(out), "--no-progress", "--no-plot"])
    assert code == 3
    traj = co.Trajectory.load(out / "trajectory.npz")
    assert not traj.completed and traj.steps[-1].status == co.Status.MAX_ITERATIONS
    assert len(traj.steps) == 45  # the 44 free-flight steps were kept, then the failed landing
    assert traj.q.shape[0] == 45 and traj.steps[-1].t == pytest.approx(0.44)


def test_help_for_every_subcommand() -> None:
    for sub in ([], ["list"], ["run"], ["program"], ["compare"], ["export"], ["bench"]):
        with pytest.raises(SystemExit) as info:
            main([*sub, "--help"])
        assert info.value.code == 0


def test_interrupted_run_writes_the_steps_it_finished(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) during `contactopt run`: the finished steps are saved, exit status 3."""
    import signal
    import time as clock

    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "contactopt", "run", "box_slide", "--duration", "60",
                                "--out", str(out), "--no-plot"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    # interrupt once the loop runs: the progress bar's first counts (a fixed sleep raced the imports
    # on a busy machine, where the signal landed before the run's handler existed)
    seen = ""
    while "step/s]" not in seen and process.poll() is None:
        seen += process.stderr.read(1)
    clock.sleep(0.5)  # a few hundred steps more
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    stderr = seen + rest
    assert process.returncode == 3, stderr
    assert "interrupted by the user" in stderr
    traj = co.Trajectory.load(out / "trajectory.npz")
    assert 0 < len(traj.steps) < 60_000 and not traj.completed
    assert traj.q.shape[0] == len(traj.steps) + 1  # every finished transition, none half-done
