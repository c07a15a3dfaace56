"""The ``contactopt`` command.

Errors caused by the input (a scene with a typo, an unknown solver, a bad option) print one
line ``contactopt: error: ...`` to stderr and exit with status 1, never a traceback. Usage
errors exit with 2. A run that stops early because a step failed (or a comparison with a
failed run) still writes everything it computed and exits with status 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contactopt import solvers
from contactopt._version import __version__
from contactopt.cli.common import (
    _options,
    _Parser,
    add_keyframe_argument,
    add_max_steps_argument,
    formulation_options,
    load_scene_of,
    positive_float,
    with_max_steps,
)
from contactopt.core.errors import ContactoptError, PartialTrajectoryWarning, SimulationError
from contactopt.core.outputs import output_errors, safe_component, write_text
from contactopt.core.run_folders import RUN_OUTPUTS, open_run_folder, removed_if_failed
from contactopt.programs import save_program
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene
from contactopt.simulation import formulate, simulate

EXIT_ERROR = 1
EXIT_STOPPED = 3
#: Methods that take no solver (their own integrator answers): their run folder is SCENE-METHOD.
WITHOUT_SOLVER = ("variational", "compliant", "hybrid", "mujoco")


def _summary_row(scene: Scene, traj: Trajectory) -> dict[str, Any]:
    """The row ``contactopt run`` prints and saves; ``solver`` is what the step records name
    (``qpsolvers:proxqp``; ``mujoco``; a compliant run's integrator), not the scene's default."""
    from contactopt.analysis.compare import solver_used

    summary = traj.summary()
    n = max(1, summary["steps"])
    impulses = [r.impulses[:, 0].max() for r in traj.steps if r.impulses.size and r.status.usable]
    return {
        "scene": scene.name, "formulation": traj.info["formulation"],
        "solver": solver_used(traj) or traj.info["solver"],
        "dt": traj.dt, "steps": summary["steps"], "t_final": summary["t_final"],
        "q_final": traj.q[-1], "min_phi": summary["min_phi"],
        "max_normal_impulse": float(np.nanmax(impulses)) if impulses else 0.0,
        "max_residual": summary["max_residual"],
        "build_ms/step": 1e3 * summary["build_time"] / n,
        "solve_ms/step": 1e3 * summary["solve_time"] / n,
        "status": ",".join(f"{k}:{v}" for k, v in summary["status"].items()),
    }


def _names(text: str | None) -> list[str] | None:
    """``--sensitivities a,b`` as a list (None when not given)."""
    if text is None:
        return None
    return [name.strip() for name in text.split(",") if name.strip()]


def _write_surfaces(scene: Any, traj: Trajectory, path: Path) -> str:
    """A hydroelastic scene's contact surfaces per step (area, force, centre of pressure, moment:
    :mod:`contactopt.systems.hydroelastic.records`) written to ``path`` as CSV; the line that
    says so and states the last step's surfaces, or "" for other scenes (nothing written)."""
    hydro = getattr(scene.system, "hydro", None)
    if hydro is None or not hydro.active or not traj.steps:
        return ""
    import csv
    import io

    from contactopt.systems.hydroelastic.records import SURFACE_COLUMNS, surface_rows

    rows = surface_rows(scene.system, traj)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(SURFACE_COLUMNS)
    writer.writerows(rows)
    write_text(path, text.getvalue(), "contact surfaces file")
    last = [r for r in rows if r[0] == len(traj.steps) - 1]
    said = "; ".join(f"{r[2]}: {r[3] * 1e4:.4g} cm^2, F_z {r[6]:.4g} N, |moment| "
                     f"{float(np.linalg.norm(r[10:13])):.3g} N m" for r in last)
    return f"contact surfaces at the last step ({path.name}): {said or 'none'}"


def _cmd_run(args: argparse.Namespace) -> int:
    scene = with_max_steps(load_scene_of(args.scene, args), args.max_steps)
    options = formulation_options(args.option, scene)
    solver_options = {**scene.solver_options, **_options(args.solver_option)}
    formulation = args.formulation or scene.formulation
    solver = args.solver or scene.solver  # the folder name; simulate may replace a scene default
    name = f"{scene.name}-{formulation}" + ("" if formulation.split(":")[0].strip().lower() in WITHOUT_SOLVER
                                           else f"-{solver.replace(':', '_')}")
    default = Path("runs") / safe_component(name)
    folder = open_run_folder(args.out, default, outputs=RUN_OUTPUTS, force=args.force)
    out = folder.path
    with removed_if_failed(folder), warnings.catch_warnings():  # --out checked before the run
        warnings.simplefilter("once")
        warnings.simplefilter("ignore", PartialTrajectoryWarning)  # reported below, exit 3
        try:
            traj = simulate(scene, formulation=formulation, solver=args.solver, dt=args.dt,
                            duration=args.duration, options=options, solver_options=solver_options,
                            fallback=args.fallback, progress=not args.no_progress,
                            sensitivities=_names(args.sensitivities))
        except SimulationError as exc:
            partial = exc.trajectory
            assert isinstance(partial, Trajectory)
            path = partial.save(out / "trajectory.npz")
            raise SimulationError(f"{exc} (the {len(partial.steps)} finished steps are in {path})",
                                  partial) from exc
    traj_path = traj.save(out / "trajectory.npz")
    row = _summary_row(scene, traj)
    summary_json = {**{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in row.items()},
                    "info": traj.info, "message": traj.message}
    write_text(out / "summary.json", json.dumps(summary_json, indent=2, default=str), "summary file")
    written = [traj_path, out / "summary.json"]
    if not args.no_plot:
        from contactopt.analysis.plotting import plot_trajectory

        plot_trajectory(traj, out / "trajectory.png", system=scene.system)
        written.append(out / "trajectory.png")
    if args.save_programs:
        written.append(_save_programs(scene, traj, out / "programs"))
    surfaces = _write_surfaces(scene, traj, out / "surfaces.csv")
    written += [out / "surfaces.csv"] if surfaces else []
    from contactopt.analysis.legend import fill
    from contactopt.core.tables import terminal_width

    print(fill(folder.describe(), terminal_width()))
    print(f"{scene.name}:")
    _print_run_table(row, traj, args.wide)
    if surfaces:
        print(surfaces)
    if scene.observables:
        from contactopt.analysis.explain import cell_notes
        from contactopt.analysis.legend import wrapped
        from contactopt.analysis.metrics import run_metrics
        from contactopt.analysis.observations import describe, measure_all, metadata
        from contactopt.core.tables import terminal_width

        metrics = run_metrics(scene, traj)
        duration = float(args.duration or scene.duration)
        values, problems = measure_all(scene, traj, metrics, traj.dt, duration)
        print("observables:", *describe(scene.observables, values), *problems, sep="\n  ")
        one = {**row, "method": traj.info["formulation"], "status": "completed" if traj.completed else "stopped",
               "message": "; ".join(filter(None, [traj.message, *problems])), "duration": duration,
               "status_counts": metrics["status_counts"], **values}
        import pandas as pd

        notes = cell_notes(pd.DataFrame([one]), metadata(scene.observables))
        if notes:
            print(wrapped(notes, terminal_width(), title="notes"))
        write_text(out / "summary.json", json.dumps({**summary_json, "observables": values}, indent=2, default=str),
                   "summary file")
    if traj.sensitivities:
        from contactopt.cli.printout import print_sensitivities

        print_sensitivities(scene, traj)
    if traj.info.get("solver_choice"):
        print(f"note: {traj.info['solver_choice']}")
    from contactopt.analysis.legend import wrapped

    print(wrapped([", ".join(p.relative_to(out).as_posix() for p in written)], terminal_width(),
                  title=f"wrote {out}/"))
    if not traj.completed:
        print(f"contactopt: run stopped early: {traj.message}", file=sys.stderr)
        return EXIT_STOPPED
    return 0


#: The quantities ``contactopt run`` prints by default (``--wide``: every one).
RUN_COMPACT = ("formulation", "solver", "dt", "steps", "t_final", "min_phi", "max_normal_impulse", "max_residual",
               "ms/step", "status")


def _print_run_table(row: dict[str, Any], traj: Trajectory, wide: bool) -> None:
    """The summary of the run, one quantity per line (a single run reads down, not across), its
    legend, and why the run stopped or which steps were not optimal
    (:func:`contactopt.analysis.explain.run_notes`)."""
    import pandas as pd

    from contactopt.analysis.explain import run_notes
    from contactopt.cli.printout import print_view

    shown = dict(row)
    if not wide:
        shown["ms/step"] = row["build_ms/step"] + row["solve_ms/step"]
        shown = {key: shown[key] for key in RUN_COMPACT}
    status = "completed" if traj.completed else "stopped"
    notes = run_notes(pd.DataFrame([{**row, "status": status, "status_counts": row["status"], "message": traj.message,
                                     "solver_used": row["solver"]}]))
    rows = pd.DataFrame({"quantity": list(shown), "value": [_value(v) for v in shown.values()]})
    print_view(rows, index=1, legend_of=[k if k != "status" else "status_counts" for k in shown], notes=notes)


def _value(value: Any) -> str:
    from contactopt.core.tables import format_table

    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    if isinstance(value, np.ndarray):  # the array cell of the table printer: first entries
        return format_table([{"v": value}], width=0).splitlines()[-1].strip()
    return str(value)


def _save_programs(scene: Scene, traj: Trajectory, folder: Path) -> Path:
    """The program of every step the trajectory started, rebuilt from its recorded states."""
    with output_errors(folder, "programs folder"):
        folder.mkdir(parents=True, exist_ok=True)
    dt = traj.dt
    options = traj.info["options"]
    for i in range(min(len(traj.steps), traj.q.shape[0])):
        control = traj.steps[i].control
        program = formulate(scene.system, traj.q[i], traj.v[i], dt, traj.info["formulation"],
                            options, t=float(traj.t[i]), control=control if control.size else None,
                            activation=traj.act[i])
        save_program(program, folder / f"step_{i:06d}.npz")
    return folder


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="contactopt", description=(
        "Simulate rigid bodies with contact, one explicit mathematical program per step."))
    parser.add_argument("--version", action="version", version=f"contactopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from contactopt.cli.listing import run_list

    p_list = sub.add_parser("list", help="list problems, formulations, solvers or systems",
                            description="List bundled problems, formulations, solvers or system types.")
    p_list.add_argument("what", nargs="?", default="all",
                        choices=["problems", "formulations", "solvers", "systems", "all"])
    p_list.set_defaults(func=run_list)

    p_run = sub.add_parser("run", help="simulate a scene and write trajectory, summary and plot",
                           description="Simulate SCENE (a .toml file or a bundled problem name); "
                           "print a summary table and write trajectory.npz, summary.json and "
                           "trajectory.png to --out.")
    p_run.add_argument("scene", help="scene file or bundled problem name (see 'contactopt list problems')")
    _add_step_arguments(p_run)
    p_run.add_argument("--duration", type=positive_float, help="simulated time [s] (default: the scene's)")
    p_run.add_argument("--out", help="output folder (default: a new runs/SCENE-FORMULATION-SOLVER, then ...-2, "
                       "...); refused when not empty unless --force")
    p_run.add_argument("--force", action="store_true",
                       help="write into a non-empty --out: first remove an earlier run's files there")
    p_run.add_argument("--wide", action="store_true",
                       help="print every column of the summary (default: a compact set that fits the terminal)")
    p_run.add_argument("--solver-option", action="append", metavar="KEY=VALUE",
                       help="solver option, repeatable (e.g. max_iter=100)")
    p_run.add_argument("--fallback", metavar="SOLVER", help="solver to retry a failed step with")
    p_run.add_argument("--save-programs", action="store_true",
                       help="also write every step's program as .npz under OUT/programs")
    p_run.add_argument("--no-plot", action="store_true", help="skip the plot")
    p_run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_run.add_argument("--sensitivities", metavar="NAMES",
                       help="comma-separated names to record d(q, v)/d name by (q0, v0, u, dt, mu, the system's "
                       "parameters); saved in trajectory.npz, the final state's printed (docs/gradients.md)")
    p_run.set_defaults(func=_cmd_run)

    from contactopt.cli.compare import add_compare_arguments, run_compare

    p_cmp = sub.add_parser("compare", help="run a scene under many formulations, solvers and step sizes",
                           description="Run SCENE for every formulation x solver (that can take its "
                           "program) x step size; print the tables (compact: --wide for every column) with "
                           "a legend and notes on every OFF and n/a cell; write table.csv/.parquet, "
                           "traces.parquet, plots and report.md to a new folder runs/compare-SCENE[-N] or "
                           "--out. --resume reuses the runs an earlier comparison stored there.")
    add_compare_arguments(p_cmp)
    add_max_steps_argument(p_cmp)
    add_keyframe_argument(p_cmp)
    p_cmp.add_argument("--no-plot", action="store_true", help="skip figures and report")
    p_cmp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_cmp.set_defaults(func=run_compare)

    from contactopt.cli.bench import add_bench_parser
    from contactopt.cli.export import add_export_parser
    from contactopt.cli.render import add_compare_render_argument, add_render_parser
    from contactopt.cli.view import add_view_parser

    add_compare_render_argument(p_cmp)
    add_export_parser(sub)
    add_bench_parser(sub)
    add_render_parser(sub)
    add_view_parser(sub)

    from contactopt.cli.program import run_program

    p_prog = sub.add_parser("program", help="show (and save) the program of one step",
                            description="Simulate SCENE up to step N, print the program that "
                            "step poses (its matrices when it has at most 12 variables and rows, else its "
                            "block layout), and optionally save it as .npz.")
    p_prog.add_argument("scene")
    _add_step_arguments(p_prog)
    p_prog.add_argument("--step", type=int, default=0, help="step index (default 0)")
    p_prog.add_argument("--out", help="write the program to this .npz file")
    p_prog.set_defaults(func=run_program)
    return parser


def _add_step_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--formulation", "-f", help="a formulation or method (see 'contactopt list formulations')")
    parser.add_argument("--solver", "-s", help=f"one of {', '.join(solvers.names())} (cvxpy:NAME)")
    parser.add_argument("--dt", type=positive_float, help="time step [s] (default: the scene's)")
    parser.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="formulation option, repeatable (e.g. form=dual)")
    add_max_steps_argument(parser)
    add_keyframe_argument(parser)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    shown = warnings.formatwarning
    warnings.formatwarning = _one_line_warning  # the message, not this package's source line
    try:
        return int(args.func(args))
    except ContactoptError as exc:
        print(f"contactopt: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("contactopt: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = shown


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      line: str | None = None) -> str:
    """A warning as the command line prints it: its kind and message (what it names: the
    scene's contact, limit or option), without the line of contactopt that raised it."""
    return f"contactopt: warning: {category.__name__}: {message}\n"


if __name__ == "__main__":
    sys.exit(main())
