"""``contactopt export``: simulate a scene and write every step's program."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from contactopt.analysis.export import FORMATS, export_run, parse_formats
from contactopt.cli.common import (
    _options,
    add_keyframe_argument,
    add_max_steps_argument,
    formulation_options,
    load_scene_of,
    positive_float,
    with_max_steps,
)
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.core.outputs import output_errors, safe_component, write_text
from contactopt.core.run_folders import EXPORT_OUTPUTS, open_run_folder, removed_if_failed

#: The arguments that decide what an export writes: a resumed export must have the same ones.
DECIDING = ("formulation", "solver", "dt", "duration", "max_steps", "keyframe", "option", "format",
            "program_formulation", "program_option")


def _arguments(args: argparse.Namespace, scene: str) -> dict[str, Any]:
    return {"format": "contactopt-export", "scene": scene, "source": str(args.scene),
            **{name: getattr(args, name, None) for name in DECIDING}}


def _check_resumed(path: Path, arguments: dict[str, Any], resumed: bool) -> None:
    """A resumed export must have the arguments recorded in ``path`` (export.json, written by
    the export it resumes), else its kept step files would be another run's: refused, naming them."""
    if resumed and path.exists():
        try:
            with output_errors(path, "export record"):
                recorded = json.loads(path.read_text())
        except (ValueError, ContactoptError):
            recorded = None
        if recorded != arguments:
            differ = sorted(k for k in arguments if not isinstance(recorded, dict) or recorded.get(k) != arguments[k])
            raise OptionError(f"--resume: {path.parent} holds an export of other arguments (differing: "
                              f"{', '.join(differ) or 'the record ' + path.name + ' is unreadable'}); pass --force "
                              "to replace it, or give the same arguments")

# --- command line ---------------------------------------------------------------------------


def add_export_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contactopt export SCENE --format ... --out DIR`` to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export", help="simulate a scene and export every step's program (npz, FCLIB, qpbenchmark)",
        description="Simulate SCENE, then write every step's program: contactopt .npz files "
        "(OUT/npz/step_NNNNNN.npz), FCLIB local problems, one FCLIB file per step "
        "(OUT/fclib/SCENE/step_NNNNNN.hdf5, /fclib_local at the root), and for QP formulations a "
        "qpbenchmark test set (OUT/qpbenchmark/contactopt_SCENE.py + one qpsolvers Problem .npz per "
        "step in OUT/qpbenchmark/contactopt_SCENE/).")
    parser.add_argument("scene", help="scene file or bundled problem name (see 'contactopt list problems')")
    parser.add_argument("--format", action="append", metavar="FORMAT",
                        help=f"export format, repeatable or comma separated: {', '.join(FORMATS)} "
                        "(default: npz and fclib, and qpbenchmark for a QP formulation)")
    parser.add_argument("--out", help="output folder (default: a new exports/SCENE-FORMULATION, then ...-2, ...); "
                        "refused when not empty unless --force or --resume")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty --out: first remove an earlier export's files there")
    parser.add_argument("--resume", action="store_true",
                        help="finish an earlier export of the same arguments (--out DIR, or the latest "
                        "exports/SCENE-FORMULATION[-N]): keep its completed step files, write the others")
    parser.add_argument("--formulation", "-f", help="formulation to simulate (default: the scene's)")
    parser.add_argument("--solver", "-s", help="solver to simulate with (default: the scene's)")
    parser.add_argument("--dt", type=positive_float, help="time step [s] (default: the scene's)")
    parser.add_argument("--duration", type=positive_float, help="simulated time [s] (default: the scene's)")
    add_max_steps_argument(parser)
    add_keyframe_argument(parser)
    parser.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="formulation option, repeatable (e.g. form=dual)")
    parser.add_argument("--program-formulation", metavar="F",
                        help="re-form the exported programs with this formulation (default: the "
                        "simulated one), e.g. simulate with ccp and export anitescu QPs")
    parser.add_argument("--program-option", action="append", metavar="KEY=VALUE",
                        help="option of --program-formulation, repeatable (e.g. form=dual)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run_export)
    return parser


def run_export(args: argparse.Namespace) -> int:
    """Handler of ``contactopt export``: simulate, export, print what was written."""
    from contactopt.simulation import simulate

    scene = with_max_steps(load_scene_of(args.scene, args), args.max_steps)
    formats = parse_formats(args.format) if args.format else None
    options = formulation_options(args.option, scene)
    formulation = args.formulation or scene.formulation
    default = Path("exports") / safe_component(f"{scene.name}-{formulation}")
    folder = open_run_folder(args.out, default, outputs=EXPORT_OUTPUTS, force=args.force, resume=args.resume,
                             kept_on_resume=EXPORT_OUTPUTS, resumed_what="completed step files", command="export")
    out = folder.path
    with removed_if_failed(folder), warnings.catch_warnings():  # --out checked before the run
        _check_resumed(out / "export.json", _arguments(args, scene.name), folder.resumed)
        warnings.simplefilter("once")
        traj = simulate(scene, formulation=formulation, solver=args.solver, dt=args.dt,
                        duration=args.duration, options=options, progress=not args.no_progress)
    print(folder.describe())
    write_text(out / "export.json", json.dumps(_arguments(args, scene.name), indent=1, sort_keys=True) + "\n",
               "export record")
    program_options = _options(args.program_option) if args.program_option else None
    if program_options is not None and not args.program_formulation:
        program_options = {**dict(traj.info.get("options") or {}), **program_options}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = export_run(scene, traj, out, formats, formulation=args.program_formulation,
                             options=program_options, resume=folder.resumed)
    for warning in caught:
        print(f"contactopt: warning: {warning.message}", file=sys.stderr)
    if not traj.completed:
        print(f"contactopt: the run stopped early ({traj.message}); exported its "
              f"{len(traj.steps)} started steps", file=sys.stderr)
    if not written:
        raise ContactoptError(f"nothing exported: none of the formats {', '.join(formats or FORMATS)} applies "
                              f"to {scene.name!r}")
    for fmt, path in written.items():
        print(f"wrote {fmt}: {path}")
    return 0
