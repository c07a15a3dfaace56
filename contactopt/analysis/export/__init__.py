"""Export every step's program of a run: contactopt ``.npz``, FCLIB local problems (HDF5) and a
qpbenchmark test set.

:func:`export_run` re-forms the program of every step the trajectory started (the failed last
step included) from the recorded states with :func:`contactopt.simulation.formulate`, and writes
under ``folder``:

``npz``
    ``folder/npz/step_%06d.npz``: one :func:`~contactopt.programs.save_program` file per step.

``fclib``
    ``folder/fclib/<scene>/step_%06d.hdf5``: one FCLIB file (``/fclib_local`` at the root) per
    step with an active contact (:mod:`contactopt.analysis.export.fclib`: layout and math); under
    the ``coulomb`` formulation, its own Coulomb problem of each step, unchanged.

``qpbenchmark``
    ``folder/qpbenchmark/contactopt_<scene>.py`` and ``contactopt_<scene>/*.npz``: a qpbenchmark
    test set of the step QPs, one qpsolvers ``Problem`` file each
    (:mod:`contactopt.analysis.export.qpbenchmark`).

Without ``formats`` every format that applies is written: ``npz`` and ``fclib`` always (FCLIB
skipped with a warning where it cannot represent the contacts), ``qpbenchmark`` when the
formulation builds QPs (silently left out for SOCPs and LCPs; asked for by name, it warns).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contactopt.analysis.export.fclib import (
    FCLIB_CONVENTION,
    FclibStep,
    fclib_local_problem,
    write_coulomb_fclib,
    write_fclib,
)
from contactopt.analysis.export.qpbenchmark import qpbenchmark_class_name, slug, write_qpbenchmark
from contactopt.analysis.export.steps import resolve_formulation, step_programs, write_npz
from contactopt.core.errors import OptionError
from contactopt.core.outputs import output_errors, writable_folder
from contactopt.programs import ConicProgram
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene

__all__ = ["FCLIB_CONVENTION", "FORMATS", "FclibStep", "export_run", "fclib_local_problem",
           "parse_formats", "qpbenchmark_class_name", "step_programs", "write_fclib", "write_npz", "write_qpbenchmark"]

FORMATS = ("npz", "fclib", "qpbenchmark")


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """``"npz,fclib"`` or ``["npz", "fclib"]`` -> checked, de-duplicated names in given order."""
    items = [formats] if isinstance(formats, str) else list(formats)
    names: list[str] = []
    for item in items:
        for name in str(item).split(","):
            name = name.strip().lower()
            if not name:  # "npz,,fclib" or a trailing comma: a slip, not a request
                raise OptionError(f"export formats {item!r}: an empty item (expected names separated by commas)")
            if name not in FORMATS:
                raise OptionError(f"unknown export format {name!r}; known: {', '.join(FORMATS)}")
            if name not in names:
                names.append(name)
    if not names:
        raise OptionError(f"no export format given; known: {', '.join(FORMATS)}")
    return tuple(names)


def export_run(scene: Scene, traj: Trajectory, folder: str | Path,
               formats: str | Iterable[str] | None = None, formulation: str | None = None,
               options: Mapping[str, Any] | None = None, *,
               reference_solver: str | None = "clarabel", resume: bool = False) -> dict[str, Path]:
    """Export every step's program of ``traj`` (a run of ``scene``) under ``folder``.

    Each step is re-formed with ``formulate(scene.system, traj.q[i], traj.v[i], dt, formulation,
    options, t)`` with ``dt = traj.info["dt"]``; ``formulation`` and ``options`` default to the
    run's (``traj.info``). Another formulation without ``options`` gets its own defaults; the
    run's drift options (``drift``, ``alpha``, ``beta``) carry over unless ``options`` sets them.
    The FCLIB problems do not depend on the formulation except through its ``epsilon`` option.

    Returns ``{format: path}``: the ``npz`` folder, the FCLIB folder, the qpbenchmark module
    ``.py`` (module docstring for the layouts). A format asked for that does not apply (FCLIB
    with normal-only contacts, qpbenchmark without a QP) is skipped with a warning and left
    out; ``formats=None`` writes every format that applies (module docstring).

    Every file is written atomically (:func:`~contactopt.core.outputs.atomic_path`): after a killed
    export, a file under its final name is complete. ``resume=True`` keeps the step files
    already in ``folder`` (an export of the same run stopped midway) and writes the others;
    without it an earlier export's step files are replaced.
    """
    chosen = parse_formats(FORMATS if formats is None else formats)
    folder = writable_folder(folder, "export folder")  # before the programs are built
    name, resolved = resolve_formulation(traj, formulation, options)
    written: dict[str, Path] = {}
    wanted = {"npz", "qpbenchmark"} | ({"fclib"} if name == "coulomb" else set())
    programs = step_programs(scene, traj, name, resolved) if wanted & set(chosen) else []
    if formats is None and not any(isinstance(p, ConicProgram) and p.kind == "qp" for _, _, p in programs):
        chosen = tuple(fmt for fmt in chosen if fmt != "qpbenchmark")  # the default: QP formulations only
    for fmt in chosen:
        result: Path | None
        with output_errors(folder / fmt, f"{fmt} export folder"):  # one line naming the path
            if fmt == "npz":
                result = write_npz(programs, folder / "npz", resume=resume)
            elif fmt == "fclib" and name == "coulomb":  # the formulation's own Coulomb problems, unchanged
                result = write_coulomb_fclib(programs, folder / "fclib" / slug(scene.name), scene.name,
                                             float(traj.info["dt"]), resume=resume)
            elif fmt == "fclib":
                result = write_fclib(scene, traj, folder / "fclib" / slug(scene.name), resolved, name,
                                     resume=resume)
            else:
                result = write_qpbenchmark(programs, folder / "qpbenchmark", scene.name, name, reference_solver,
                                           resume=resume)
        if result is not None:
            written[fmt] = result
    return written
