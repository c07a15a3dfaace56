"""The programs a benchmark solves: files found in folders, each read into its program or into
the reason it cannot be (:mod:`contactopt.analysis.bench`).

A benchmark over a folder of other tools' files (the FCLIB files of Siconos's own test
problems) meets files it cannot use. Each becomes a *skipped* input, with a status and the
reason, and the benchmark goes on with the others (:func:`load_inputs`):

* ``unreadable``: the file cannot be read (not HDF5 or ``.npz``, a malformed matrix, a
  missing dataset, ...; the message of :func:`~contactopt.programs.fclib.read_fclib` or
  :func:`~contactopt.programs.load_program`);
* ``refused``: the file reads, but contactopt's convex program of it cannot be built: a ``W``
  (``M``) not symmetric at the stored precision without ``symmetrize``, a ``W`` not positive
  semidefinite, a singular ``M`` (:func:`~contactopt.programs.fclib.fclib_program`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contactopt.core.errors import ContactoptError
from contactopt.core.outputs import is_partial
from contactopt.programs import load_program
from contactopt.programs.fclib import FclibProblem, fclib_program, read_fclib
from contactopt.programs.fclib_io import HDF5_SIGNATURE

__all__ = ["SKIPPED", "Input", "collect_programs", "load_inputs", "skipped_summary"]

#: The statuses of a results row whose program was never solved (module docstring).
SKIPPED = ("unreadable", "refused")
_HDF5_SUFFIXES = (".hdf5", ".h5")


@dataclass(frozen=True)
class Input:
    """One file of a benchmark: its ``label`` in the results, and either its ``program`` (and
    the FCLIB ``problem`` it came from) or ``skipped`` (a status of :data:`SKIPPED`) with ``reason``."""

    label: str
    path: Path
    program: Any = None
    problem: FclibProblem | None = None
    skipped: str = ""
    reason: str = ""


def _kind_of_file(path: Path) -> str:
    """``"program"`` (a contactopt program or an FCLIB problem), ``"other"`` (a readable file of
    that format holding something else: left out of a folder) or ``"damaged"`` (not readable
    as its format at all: kept, to be reported unreadable)."""
    if path.suffix.lower() in _HDF5_SUFFIXES:
        try:
            with path.open("rb") as handle:
                if handle.read(8) != HDF5_SIGNATURE:
                    return "damaged"
            import h5py

            with h5py.File(path, "r") as handle:
                return "program" if "fclib_local" in handle or "fclib_global" in handle else "other"
        except OSError:
            return "damaged"
    try:
        with np.load(path, allow_pickle=False) as arrays:
            header = "header" in arrays and '"contactopt-program"' in str(arrays["header"])
            return "program" if header else "other"
    except Exception:  # truncated (BadZipFile), not a zip, a damaged member: reported unreadable
        return "damaged"


def collect_programs(programs: str | Path | Iterable[str | Path]) -> list[Path]:
    """Program files from a folder (every ``*.npz``, ``*.hdf5``, ``*.h5`` below it, sorted), a
    file, or a list of both.

    Files found in folders that are readable but hold something else (a qpbenchmark problem
    file, another HDF5 file) are left out; damaged ones are kept (the benchmark reports them
    unreadable); a file named explicitly is always kept.
    """
    items = [programs] if isinstance(programs, str | Path) else list(programs)
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            candidates = [c for pattern in ("*.npz", "*.hdf5", "*.h5") for c in path.rglob(pattern)
                          if not is_partial(c) and c.is_file()]  # not a killed command's unfinished write, nor a FIFO
            found += [candidate for candidate in sorted(candidates) if _kind_of_file(candidate) != "other"]
        elif path.is_file():
            found.append(path)
        elif path.exists():
            raise ContactoptError(f"{path}: not a program file nor a folder (a FIFO or a device; expected .npz or "
                                  "FCLIB .hdf5 files)")
        else:
            raise ContactoptError(f"{path}: no such program file or folder")
    if not found:
        raise ContactoptError(f"no program files (.npz written by contactopt, or FCLIB .hdf5) in "
                              f"{', '.join(map(str, items))}")
    return found


def _label(path: Path, roots: list[Path]) -> str:
    for root in roots:
        if root.is_dir():
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def _load(label: str, path: Path, fclib_form: str | None, symmetrize: bool) -> Input:
    try:
        with path.open("rb") as handle:
            fclib = path.suffix.lower() in _HDF5_SUFFIXES or handle.read(8) == HDF5_SIGNATURE
    except OSError as exc:
        return Input(label, path, skipped="unreadable", reason=f"{path}: cannot read: {exc}")
    try:
        if not fclib:
            return Input(label, path, program=load_program(path))
        problem = read_fclib(path)
    except ContactoptError as exc:
        return Input(label, path, skipped="unreadable", reason=str(exc))
    try:
        program = fclib_program(problem, fclib_form, source=str(path),  # type: ignore[arg-type]
                                symmetrize=symmetrize)
    except ContactoptError as exc:
        return Input(label, path, problem=problem, skipped="refused", reason=str(exc))
    return Input(label, path, program=program, problem=problem)


def load_inputs(programs: str | Path | Iterable[str | Path], fclib_form: str | None = None,
                symmetrize: bool = False) -> list[Input]:
    """Every file of ``programs`` (:func:`collect_programs`) read, or skipped with the reason
    (module docstring); ``fclib_form`` and ``symmetrize`` as in :func:`~contactopt.programs.load_program`."""
    items = [programs] if isinstance(programs, str | Path) else list(programs)
    roots = [Path(p) for p in items]
    paths = collect_programs(items)
    labels = [_label(path, roots) for path in paths]
    labels = [label if labels.count(label) == 1 else path.as_posix() for label, path in zip(labels, paths, strict=True)]
    return [_load(label, path, fclib_form, symmetrize) for label, path in zip(labels, paths, strict=True)]


def _why(reason: str) -> str:
    """A few words for a skip reason, to group them in one line."""
    if "is not symmetric" in reason:
        return "a nonsymmetric matrix (--symmetrize solves its symmetric part)"
    if "not positive semidefinite" in reason or "nonconvex" in reason.lower():
        return "not positive semidefinite"
    if "malformed" in reason or "out of range" in reason or ": array " in reason:
        return "a malformed matrix"
    if "cannot read" in reason or "not an FCLIB problem" in reason:
        return "not a readable program file"
    return "see results.csv"


def skipped_summary(inputs: Sequence[Input]) -> str | None:
    """One line: how many files were skipped and why (None if none was)."""
    skipped = [item for item in inputs if item.skipped]
    if not skipped:
        return None
    parts = []
    for status in SKIPPED:
        whys = Counter(_why(item.reason) for item in skipped if item.skipped == status)
        if whys:
            listed = ", ".join(f"{count} {why}" for why, count in sorted(whys.items()))
            parts.append(f"{sum(whys.values())} {status} ({listed})")
    return f"skipped {len(skipped)} of {len(inputs)} file(s): {'; '.join(parts)}; the reasons are in the error column"
