"""Command-line messages name what the user wrote: a ``[system]`` key given as a formulation
option points to ``--system-option``, and a warning is one line naming the scene's contact,
not the line of contactopt that raised it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contactopt.cli import main

pytest.importorskip("mujoco")

#: A cube whose model starts it 10 mm into the floor.
SUNK = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="box" pos="0 0 0.09"><freejoint/><geom name="cube" type="box" size="0.1 0.1 0.1" mass="1"/></body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def sunk(tmp_path: Path) -> Path:
    path = tmp_path / "sunk.xml"
    path.write_text(SUNK)
    return path


@pytest.mark.parametrize("command", ["run", "program"])
def test_a_system_key_given_with_o_names_system_option(sunk: Path, tmp_path: Path, command: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, str(sunk), "-o", "extra_friction=sliding"]
    argv += ["--out", str(tmp_path / "run"), "--no-plot", "--no-progress"] if command == "run" else []
    assert main(argv) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "--system-option extra_friction=" in error
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_penetration_warning_is_one_line_naming_the_contact(sunk: Path, tmp_path: Path) -> None:
    # a process of its own: pytest records warnings instead of printing them
    argv = ["run", str(sunk), "-f", "ccp", "--duration", "0.004", "--out", str(tmp_path / "run"), "--no-plot",
            "--no-progress", "--system-option", "extra_friction=\"sliding\""]
    done = subprocess.run([sys.executable, "-m", "contactopt", *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "InitialPenetrationWarning" in line]
    assert len(lines) == 1
    assert lines[0].startswith("contactopt: warning: InitialPenetrationWarning:")
    assert "'floor|cube' is 0.01 m deep" in lines[0] and ".py:" not in lines[0]
