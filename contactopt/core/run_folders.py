"""Run folders: every ``contactopt compare`` and ``contactopt run`` writes a new folder, so the
results of an earlier run are never overwritten nor mixed with a later one's.

* Without ``--out``: ``runs/NAME`` the first time, then ``runs/NAME-2``, ``runs/NAME-3``, ...
  (one more than the highest number taken, so the latest run has the highest number;
  ``NAME`` is ``compare-SCENE`` or ``SCENE-FORMULATION-SOLVER``). The folder is claimed with
  an exclusive ``mkdir``, so two commands started together never share one.
* ``--out DIR``: used as it is when missing or empty. A non-empty ``DIR`` is refused unless
  ``--force`` is given, which first removes what an earlier run wrote there (the names in
  :data:`COMPARE_OUTPUTS`, :data:`RUN_OUTPUTS`, the stored cells), so that no stale file
  (a ``convergence.png`` of a sweep with several step sizes) survives; files contactopt does
  not write are kept and named.
* ``compare --resume`` (with ``--out DIR``, or alone: the latest ``runs/compare-SCENE[-N]``
  with stored cells) reuses the cells stored there (:mod:`contactopt.analysis.cells`) and
  computes the others; the earlier tables, figures and report are removed before the new ones
  are written. Resuming is never implicit.
* ``contactopt export`` the same way (:data:`EXPORT_OUTPUTS`; a new ``exports/SCENE-FORMULATION[-N]``
  without ``--out``): ``--force`` removes an earlier export's files, ``--resume`` keeps its
  completed step files and writes the others.
* An empty ``--out ''`` is refused (it would write into the current folder). The temporary
  files of writes a killed command left unfinished (:func:`contactopt.core.outputs.is_partial`) are
  removed by ``--force`` and ``--resume``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contactopt.core.errors import OptionError, OutputError
from contactopt.core.outputs import PARTIAL_PREFIX, is_partial, output_errors, writable_folder

__all__ = ["COMPARE_OUTPUTS", "EXPORT_OUTPUTS", "RUN_OUTPUTS", "RunFolder", "latest_run_folder", "next_run_folder",
           "open_run_folder", "remove_unfinished"]

#: What ``contactopt compare`` writes in its folder (``--render``'s default video included).
COMPARE_OUTPUTS = ("table.csv", "table.parquet", "traces.parquet", "observables.csv", "convergence.csv",
                   "trajectories.png", "time_per_step.png", "metrics.png", "convergence.png", "report.md",
                   "compare.mp4", "compare.gif")
#: The cell store of a resumable comparison (:mod:`contactopt.analysis.cells`).
CELL_STORE = ("cells", "cells-index.json")
#: What ``contactopt run`` writes in its folder (``contactopt render RUN``'s default video included).
RUN_OUTPUTS = ("trajectory.npz", "summary.json", "trajectory.png", "surfaces.csv", "programs", "video.mp4",
               "video.gif")
#: What ``contactopt export`` writes in its folder (export.json: the arguments it was run with).
EXPORT_OUTPUTS = ("npz", "fclib", "qpbenchmark", "export.json")
#: Most folders tried when claiming ``NAME-N`` against concurrent commands.
CLAIM_ATTEMPTS = 1000


@dataclass
class RunFolder:
    """The folder a command writes, and what it found there."""

    path: Path
    made: bool  # created by this command
    resumed: bool = False  # its stored cells are reused
    resumed_what: str = "stored cells"  # what --resume reuses there
    removed: list[str] = field(default_factory=list)  # an earlier run's files removed first
    kept: list[str] = field(default_factory=list)  # files there that contactopt did not write
    unfinished: list[str] = field(default_factory=list)  # temporary files of a killed command's writes, removed

    def describe(self) -> str:
        """One line for the command's output: which folder, and what happened to what was there."""
        if self.made:
            text = f"output folder {self.path} (new)"
        elif self.resumed:
            text = f"output folder {self.path} (resumed: its {self.resumed_what} are reused)"
        else:
            text = f"output folder {self.path}"
        if self.removed:
            text += f"; removed the earlier run's {', '.join(sorted(self.removed))}"
        if self.unfinished:
            text += f"; removed {len(self.unfinished)} unfinished write(s) of a stopped command"
        if self.kept:
            text += f"; kept {', '.join(sorted(self.kept))} (not written by contactopt)"
        return text


def _numbered(base: Path) -> list[tuple[int, Path]]:
    """``base`` (number 1) and ``base-N`` folders that exist, by number."""
    pattern = re.compile(re.escape(base.name) + r"(?:-(\d+))?")
    found = []
    if base.parent.is_dir():
        for path in base.parent.iterdir():
            match = pattern.fullmatch(path.name)
            if match and path.is_dir():
                found.append((int(match.group(1) or 1), path))
    return sorted(found)


def next_run_folder(base: Path) -> Path:
    """Claim (create) ``base``, or ``base-N`` with N one more than the highest taken."""
    with output_errors(base, "output folder"):
        base.parent.mkdir(parents=True, exist_ok=True)
        taken = _numbered(base)
        number = taken[-1][0] + 1 if taken else 1
        for _ in range(CLAIM_ATTEMPTS):
            path = base if number == 1 else base.with_name(f"{base.name}-{number}")
            try:
                path.mkdir()
            except FileExistsError:  # another command claimed it first
                number += 1
                continue
            return path
    raise OutputError(f"cannot write the output folder {base}: no free name {base.name}-N "
                      f"after {CLAIM_ATTEMPTS} tries")


def latest_run_folder(base: Path, kept: Sequence[str] = CELL_STORE) -> Path | None:
    """The highest-numbered ``base[-N]`` folder holding one of ``kept`` (stored cells by
    default; None if there is none)."""
    for _, path in reversed(_numbered(base)):
        if any((path / name).exists() for name in kept):
            return path
    return None


def _remove(folder: Path, names: Sequence[str]) -> list[str]:
    """Remove ``names`` from ``folder`` (a folder among them only holding contactopt's files:
    cell files, programs), returning what was removed."""
    removed = []
    with output_errors(folder, "output folder"):
        for name in names:
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            else:
                continue
            removed.append(name)
    return removed


def remove_unfinished(folder: Path) -> list[str]:
    """The temporary files of unfinished writes in ``folder`` and below, removed."""
    removed = []
    with output_errors(folder, "output folder"):
        for path in sorted(folder.rglob(f"{PARTIAL_PREFIX}*")) + sorted(folder.rglob(".*.partial")):
            if path.is_file() and is_partial(path.name):
                path.unlink()
                removed.append(path.relative_to(folder).as_posix())
    return removed


def open_run_folder(out: str | Path | None, default: Path, *, outputs: Sequence[str], force: bool = False,
                    resume: bool = False, kept_on_resume: Sequence[str] = CELL_STORE,
                    resumed_what: str = "stored cells", command: str = "comparison") -> RunFolder:
    """The folder a command writes (module docstring). ``outputs``: the names the command
    writes (:data:`COMPARE_OUTPUTS` with :data:`CELL_STORE`, :data:`RUN_OUTPUTS` or
    :data:`EXPORT_OUTPUTS`); ``kept_on_resume``: those ``--resume`` keeps (``resumed_what``
    and ``command`` name them and the command in messages)."""
    if out is not None and not str(out).strip():
        raise OptionError(f"--out is empty ({str(out)!r}): give a folder, or leave --out out for a new one "
                          f"({default}[-N])")
    if force and resume:
        raise OptionError(f"--force and --resume exclude each other: --force starts the folder afresh, "
                          f"--resume reuses its {resumed_what}")
    if out is None and resume:
        found = latest_run_folder(default, kept_on_resume)
        if found is None:
            raise OptionError(f"--resume: no earlier {command} to resume ({default}[-N] with {resumed_what}); "
                              "name one with --out DIR --resume")
        out = found
    if out is None:
        return RunFolder(next_run_folder(default), made=True)
    folder = Path(out)
    with output_errors(folder, "output folder"):
        existed = folder.exists()
        entries = sorted(p.name for p in folder.iterdir()) if existed and folder.is_dir() else []
    writable_folder(folder)
    if not entries:
        return RunFolder(folder, made=not existed)
    ours = [name for name in entries if name in outputs]
    others = [name for name in entries if name not in outputs and not name.startswith(".contactopt-probe-")
              and not is_partial(name)]
    if resume:
        stale = [name for name in ours if name not in kept_on_resume]
        return RunFolder(folder, made=False, resumed=True, resumed_what=resumed_what, removed=_remove(folder, stale),
                         kept=others, unfinished=remove_unfinished(folder))
    if not force:
        what = ", ".join(entries[:6]) + (", ..." if len(entries) > 6 else "")
        hint = f", --resume to reuse its {resumed_what}" if set(kept_on_resume) <= set(outputs) else ""
        raise OutputError(f"the output folder {folder} is not empty ({what}): pass --force to replace an "
                          f"earlier run's files{hint}, or leave out --out for a new folder")
    return RunFolder(folder, made=False, removed=_remove(folder, ours), kept=others,
                     unfinished=remove_unfinished(folder))


@contextlib.contextmanager
def removed_if_failed(folder: RunFolder) -> Iterator[RunFolder]:
    """A folder this command made and left empty is removed when the block raises (a refused
    command leaves no trace)."""
    try:
        yield folder
    except BaseException:
        if folder.made:
            with contextlib.suppress(OSError):
                folder.path.rmdir()  # only if still empty
        raise
