"""The problem set of ``experiments/coulomb_peers.py``: FCLIB files exported from our scenes
(``contactopt export SCENE -f ccp --format fclib``, one local problem per step) and the files of
other tools (Siconos's FCLIB test problems), each loaded as FCLIB's local problem ``FC(W, q, mu)``
(Acary, Brémond, Huber, Pérignon et al., "FCLIB", JOTA 2014): a global problem is condensed to it
(``W = H'M^-1 H``, ``q = w + H'M^-1 f``; :func:`contactopt.programs.fclib.condense`). A file
that does not load, or a scene that does not export, is a problem with the reason instead of the
data: it becomes a row of the report, never the end of the run.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactopt.programs.fclib import FclibGlobal, FclibLocal, condense, read_fclib

SUFFIXES = (".hdf5", ".h5")


@dataclass(frozen=True)
class PeerProblem:
    """One problem: a label (``GROUP/NAME``), its group (scene or folder), its file, the local
    problem (None when it did not load, with the reason in ``error``), whether it was condensed
    from a global problem, and what the loader warned about."""

    label: str
    group: str
    path: Path | None
    problem: FclibLocal | None
    condensed: bool = False
    error: str = ""
    warning: str = ""

    @property
    def contacts(self) -> int:
        return self.problem.contacts if self.problem is not None else 0


def parse_scene(spec: str) -> tuple[str, float | None]:
    """``NAME`` or ``NAME:DURATION`` (seconds simulated, else the scene's own duration)."""
    name, _, duration = spec.partition(":")
    return name.strip(), float(duration) if duration else None


def export_scene(scene: str, folder: Path, duration: float | None, formulation: str = "ccp",
                 fresh: bool = False) -> tuple[Path | None, str]:
    """``contactopt export SCENE -f FORMULATION --format fclib`` into ``folder/SCENE`` (kept and
    reused unless ``fresh``): the folder of step files, or None and the exporter's last words."""
    out = folder / scene
    steps = out / "fclib" / scene
    if not fresh and steps.is_dir() and any(steps.glob("*.hdf5")):
        return steps, ""
    command = [sys.executable, "-m", "contactopt", "export", scene, "-f", formulation, "--format", "fclib",
               "--out", str(out), "--no-progress"]
    if duration is not None:
        command += ["--duration", repr(duration)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not steps.is_dir():
        lines = [line for line in done.stderr.splitlines() if line.strip() and "WARNING" not in line]
        return None, (lines[-1] if lines else f"exit code {done.returncode}")
    return steps, ""


def problem_files(path: Path) -> list[Path]:
    """The FCLIB files of a file or a folder (recursively), sorted."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def evenly(items: Sequence[Path], count: int | None) -> list[Path]:
    """At most ``count`` items spread evenly over ``items`` (first and last kept)."""
    if count is None or len(items) <= count:
        return list(items)
    if count <= 1:
        return list(items[:count])
    picks = np.unique(np.round(np.linspace(0, len(items) - 1, count)).astype(int))
    return [items[i] for i in picks]


def load_problem(path: Path, group: str) -> PeerProblem:
    """The local problem of ``path`` (condensed when global) or the reason it did not load."""
    label = f"{group}/{path.stem}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            problem = read_fclib(path)
            condensed = isinstance(problem, FclibGlobal)
            local = condense(problem) if isinstance(problem, FclibGlobal) else problem
        except Exception as exc:  # any reader failure is this file's row
            return PeerProblem(label, group, path, None, error=f"{type(exc).__name__}: {exc}")
    said = "; ".join(sorted({str(w.message) for w in caught}))
    return PeerProblem(label, group, path, local, condensed=condensed, warning=said)


def collect(scenes: Sequence[str], folders: Sequence[Path], export_folder: Path, max_per_group: int | None,
            formulation: str = "ccp", fresh: bool = False) -> list[PeerProblem]:
    """Exported steps of ``scenes`` then the files under ``folders`` (grouped by the folder that
    holds them), at most ``max_per_group`` per group."""
    found: list[PeerProblem] = []
    for spec in scenes:
        name, duration = parse_scene(spec)
        steps, why = export_scene(name, export_folder, duration, formulation, fresh)
        if steps is None:
            found.append(PeerProblem(f"{name}/export", name, None, None, error=f"export failed: {why}"))
            continue
        found += [load_problem(p, name) for p in evenly(problem_files(steps), max_per_group)]
    for folder in folders:
        if not folder.exists():
            found.append(PeerProblem(f"{folder.name}/missing", folder.name, folder, None,
                                     error=f"no such file or folder: {folder}"))
            continue
        groups: dict[str, list[Path]] = {}
        for path in problem_files(folder):
            groups.setdefault(path.parent.name, []).append(path)
        for group, paths in groups.items():
            found += [load_problem(p, group) for p in evenly(paths, max_per_group)]
    return found
