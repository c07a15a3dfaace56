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

from contactopt import solvers, systems
from contactopt._version import __version__
from contactopt.cli.common import (
    _options,
    _Parser,
    add_keyframe_argument,
    add_max_steps_argument,
    positive_float,
    with_max_steps,
)
from contactopt.cli.grid import check_grid, split_list, step_size
from contactopt.control import make_controller
from contactopt.errors import ContactoptError, OptionError, PartialTrajectoryWarning, SimulationError
from contactopt.outputs import output_errors, prepared_folder, safe_component, writable_file
from contactopt.programs import save_program
from contactopt.records import Trajectory
from contactopt.scenes import Scene, load_scene, problems_dir
from contactopt.simulate import formulate, simulate
from contactopt.tables import format_table

EXIT_ERROR = 1
EXIT_STOPPED = 3


def _cmd_list(args: argparse.Namespace) -> int:
    what = args.what
    if what in ("problems", "all"):
        root = problems_dir()
        print(f"problems ({root}):")
        for path in sorted(root.glob("*.toml")):
            try:
                scene = load_scene(path)
                print(f"  {path.stem:24s} {scene.system.type_name:12s} {scene.description}")
            except ContactoptError as exc:
                from contactopt.mujoco.suite import INSTALL_HINT

                if INSTALL_HINT in str(exc):  # a dm-control suite scene without the package
                    print(f"  {path.stem:24s} {'mjcf':12s} (needs dm-control: {INSTALL_HINT})")
                else:
                    print(f"  {path.stem:24s} (invalid: {exc})")
    if what in ("formulations", "all"):
        from contactopt import integrators

        print("formulations and methods:")
        for name in integrators.names():
            description, defaults = integrators.describe(name)
            opts = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "no options"
            print(f"  {name:12s} {description} [{opts}]")
    if what in ("solvers", "all"):
        print("solvers:")
        installed = set(solvers.available())
        for name in solvers.names():
            spec = solvers.spec(name)
            state = "installed" if name in installed else f"missing: {spec.install_hint}"
            kinds = ",".join(sorted(spec.kinds))
            print(f"  {name:10s} {kinds:9s} {state:12s} {spec.description}")
            if spec.variants and name in installed and args.what == "solvers":
                import importlib

                variants = importlib.import_module(spec.module).installed_variants()
                print(f"  {'':10s} variants: {', '.join(f'{name}:{v}' for v in variants)}")
    if what in ("systems", "all"):
        print("systems:")
        for name in systems.names():
            cls = systems.get(name)
            params = ", ".join(p.name if p.default is None else f"{p.name}={p.default:g}"
                               for p in cls.parameters)
            print(f"  {name:12s} {cls.description} [{params}]")
    return 0


def _summary_row(scene: Scene, traj: Trajectory) -> dict[str, Any]:
    summary = traj.summary()
    n = max(1, summary["steps"])
    impulses = [r.impulses[:, 0].max() for r in traj.steps if r.impulses.size and r.status.usable]
    return {
        "scene": scene.name, "formulation": traj.info["formulation"], "solver": traj.info["solver"],
        "dt": traj.dt, "steps": summary["steps"], "t_final": summary["t_final"],
        "q_final": traj.q[-1], "min_phi": summary["min_phi"],
        "max_normal_impulse": float(np.nanmax(impulses)) if impulses else 0.0,
        "max_residual": summary["max_residual"],
        "build_ms/step": 1e3 * summary["build_time"] / n,
        "solve_ms/step": 1e3 * summary["solve_time"] / n,
        "status": ",".join(f"{k}:{v}" for k, v in summary["status"].items()),
    }


def _cmd_run(args: argparse.Namespace) -> int:
    scene = with_max_steps(load_scene(args.scene, keyframe=args.keyframe), args.max_steps)
    options = _options(args.option)
    solver_options = {**scene.solver_options, **_options(args.solver_option)}
    formulation = args.formulation or scene.formulation
    solver = args.solver or scene.solver  # the folder name; simulate may replace a scene default
    out_path = Path(args.out) if args.out else Path("runs") / safe_component(
        f"{scene.name}-{formulation}-{solver.replace(':', '_')}")
    with prepared_folder(out_path) as out, warnings.catch_warnings():  # --out checked before the run
        warnings.simplefilter("once")
        warnings.simplefilter("ignore", PartialTrajectoryWarning)  # reported below, exit 3
        try:
            traj = simulate(scene, formulation=formulation, solver=args.solver, dt=args.dt,
                            duration=args.duration, options=options, solver_options=solver_options,
                            fallback=args.fallback, progress=not args.no_progress)
        except SimulationError as exc:
            partial = exc.trajectory
            assert isinstance(partial, Trajectory)
            path = partial.save(out / "trajectory.npz")
            raise SimulationError(f"{exc} (the {len(partial.steps)} finished steps are in {path})",
                                  partial) from exc
    traj_path = traj.save(out / "trajectory.npz")
    row = _summary_row(scene, traj)
    with output_errors(out / "summary.json", "summary file"):
        (out / "summary.json").write_text(json.dumps(
            {**{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in row.items()},
             "info": traj.info, "message": traj.message}, indent=2, default=str))
    written = [traj_path, out / "summary.json"]
    if not args.no_plot:
        from contactopt.analysis.plotting import plot_trajectory

        plot_trajectory(traj, out / "trajectory.png", system=scene.system)
        written.append(out / "trajectory.png")
    if args.save_programs:
        written.append(_save_programs(scene, traj, out / "programs"))
    print(format_table([row]))
    if scene.observables:
        from contactopt.analysis.metrics import run_metrics
        from contactopt.analysis.observations import describe, measure_all

        values, problems = measure_all(scene, traj, run_metrics(scene, traj), traj.dt,
                                       float(args.duration or scene.duration))
        print("observables:", *describe(scene.observables, values), *problems, sep="\n  ")
        summary = json.loads((out / "summary.json").read_text())
        (out / "summary.json").write_text(json.dumps({**summary, "observables": values}, indent=2, default=str))
    if traj.info.get("solver_choice"):
        print(f"note: {traj.info['solver_choice']}")
    for path in written:
        print(f"wrote {path}")
    if not traj.completed:
        print(f"contactopt: run stopped early: {traj.message}", file=sys.stderr)
        return EXIT_STOPPED
    return 0


def _save_programs(scene: Scene, traj: Trajectory, folder: Path) -> Path:
    """The program of every step the trajectory started, rebuilt from its recorded states."""
    folder.mkdir(parents=True, exist_ok=True)
    dt = traj.dt
    options = traj.info["options"]
    for i in range(min(len(traj.steps), traj.q.shape[0])):
        control = traj.steps[i].control
        program = formulate(scene.system, traj.q[i], traj.v[i], dt, traj.info["formulation"],
                            options, t=float(traj.t[i]), control=control if control.size else None)
        save_program(program, folder / f"step_{i:06d}.npz")
    return folder


def _cmd_program(args: argparse.Namespace) -> int:
    scene = with_max_steps(load_scene(args.scene, keyframe=args.keyframe), args.max_steps)
    options = {**scene.options, **_options(args.option)}
    formulation = args.formulation or scene.formulation
    dt = args.dt or scene.dt
    q, v, t = scene.q0, scene.v0, 0.0
    if args.step < 0:
        raise OptionError(f"--step must be a step index >= 0, got {args.step}")
    if args.out:  # checked before the steps up to --step are simulated
        writable_file(args.out if str(args.out).endswith(".npz") else f"{args.out}.npz", "program file")
    if args.step > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = simulate(scene, formulation=formulation, solver=args.solver, dt=dt,
                            duration=args.step * dt, options=options)
        if traj.q.shape[0] <= args.step:
            raise ContactoptError(f"the run stopped before step {args.step}: {traj.message}")
        q, v, t = traj.q[args.step], traj.v[args.step], float(traj.t[args.step])
    control = make_controller(scene.control, scene.system)  # the scene's input at that step
    u = None if control is None else control(t, np.array(q), np.array(v))
    program = formulate(scene.system, q, v, dt, formulation, options, t=t, control=u)
    print(f"step {args.step} (t = {t:.6g}) of {scene.name}, formulation {formulation}: {program.summary()}")
    for block in program.variables:
        print(f"  variables {block.name}: [{block.start}, {block.stop})")
    for block in getattr(program, "constraints", ()):
        print(f"  rows      {block.name}: [{block.start}, {block.stop})")
    if args.out:
        print(f"wrote {save_program(program, args.out)}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from contactopt.analysis.compare import compare, summary_columns
    from contactopt.analysis.report import write_report

    scene = with_max_steps(load_scene(args.scene, keyframe=args.keyframe), args.max_steps)
    formulations = split_list(args.formulations, "--formulations")
    solver_names = split_list(args.solvers, "--solvers")
    dts = [step_size(item) for item in split_list(args.dt, "--dt") or []] or None
    check_grid(scene, formulations, dts, args.duration)
    out_path = Path(args.out) if args.out else Path("runs") / safe_component(f"compare-{scene.name}")
    with prepared_folder(out_path) as out:  # --out (and --render) checked before the runs
        if args.render:
            writable_file(args.render, "video file")
        table, traces = compare(scene, formulations, solver_names, dts, args.duration,
                                solver_options=_options(args.solver_option), executor=args.executor,
                                address=args.address, workers=args.workers, out=out,
                                progress=not args.no_progress, return_traces=True,
                                cell_time_limit=args.cell_time_limit)
    columns = summary_columns(table)
    shown = table[columns].copy()
    if "time_per_step" in shown:
        shown["time_per_step"] = shown["time_per_step"] * 1e3
        shown = shown.rename(columns={"time_per_step": "ms/step"})
    print(f"{scene.name}: {len(table)} runs ({int(table['cached'].sum())} loaded from {out / 'cells'})")
    print(format_table(shown))
    skipped = table.attrs.get("skipped", [])
    notes = [f"skipped (the solver cannot take the program): {', '.join(skipped)}"] if skipped else []
    for note in notes:
        print(note)
    written_tables = "table.csv, table.parquet, traces.parquet"
    if table.attrs.get("observables"):
        from contactopt.analysis.convergence import orders
        from contactopt.analysis.observations import display_table, long_table

        print(f"\nobservables of {scene.name} (value (error against the reference) ok|OFF: within tolerance or "
              "not):")
        print(format_table(display_table(table)))
        fitted = orders(long_table(table))
        if len(fitted):
            print("\nconvergence (order p of |error| ~ dt^p, least squares over the step sizes):")
            print(format_table(fitted))
            fitted.to_csv(out / "convergence.csv", index=False)
            written_tables += ", convergence.csv"
        written_tables += ", observables.csv"
    if not args.no_plot:
        written = write_report(f"{scene.name}: formulations and solvers compared", table, traces, out,
                               columns, notes, scene=scene)
        print(f"wrote {out}/{written_tables}, " + ", ".join(p.name for p in written))
    else:
        print(f"wrote {out}/{written_tables}")
    if args.render is not None:
        from contactopt.cli.render import render_comparison

        render_comparison(scene, table, args.render, out, args, _options(args.solver_option))
    errors = table["status"].eq("error").sum()
    return EXIT_STOPPED if errors else 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="contactopt", description=(
        "Simulate rigid bodies with contact, one explicit mathematical program per step."))
    parser.add_argument("--version", action="version", version=f"contactopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="list problems, formulations, solvers or systems",
                            description="List bundled problems, formulations, solvers or system types.")
    p_list.add_argument("what", nargs="?", default="all",
                        choices=["problems", "formulations", "solvers", "systems", "all"])
    p_list.set_defaults(func=_cmd_list)

    p_run = sub.add_parser("run", help="simulate a scene and write trajectory, summary and plot",
                           description="Simulate SCENE (a .toml file or a bundled problem name); "
                           "print a summary table and write trajectory.npz, summary.json and "
                           "trajectory.png to --out.")
    p_run.add_argument("scene", help="scene file or bundled problem name (see 'contactopt list problems')")
    _add_step_arguments(p_run)
    p_run.add_argument("--duration", type=positive_float, help="simulated time [s] (default: the scene's)")
    p_run.add_argument("--out", help="output folder (default: runs/SCENE-FORMULATION-SOLVER)")
    p_run.add_argument("--solver-option", action="append", metavar="KEY=VALUE",
                       help="solver option, repeatable (e.g. max_iter=100)")
    p_run.add_argument("--fallback", metavar="SOLVER", help="solver to retry a failed step with")
    p_run.add_argument("--save-programs", action="store_true",
                       help="also write every step's program as .npz under OUT/programs")
    p_run.add_argument("--no-plot", action="store_true", help="skip the plot")
    p_run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_run.set_defaults(func=_cmd_run)

    p_cmp = sub.add_parser("compare", help="run a scene under many formulations, solvers and step sizes",
                           description="Run SCENE for every formulation x solver (that can take its "
                           "program) x step size; print the table; write table.csv/.parquet, "
                           "traces.parquet, plots and report.md to --out. Re-running resumes.")
    p_cmp.add_argument("scene", help="scene file or bundled problem name")
    p_cmp.add_argument("--formulations", help="comma-separated, options as name:key=value "
                       "(default: every time-stepping formulation)")
    p_cmp.add_argument("--solvers", help="comma-separated (default: every installed solver but cvxpy, which re-solves "
                       "the same programs through the solvers it wraps; name it to run it)")
    p_cmp.add_argument("--dt", help="comma-separated step sizes (default: the scene's)")
    p_cmp.add_argument("--duration", type=positive_float, help="simulated time [s] (default: the scene's)")
    p_cmp.add_argument("--out", help="output folder (default: runs/compare-SCENE)")
    p_cmp.add_argument("--executor", choices=["serial", "process", "dask"], default="process",
                       help="where runs execute (default: a local process pool)")
    p_cmp.add_argument("--address", help="address of an existing Dask scheduler (implies --executor dask)")
    p_cmp.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    p_cmp.add_argument("--solver-option", action="append", metavar="KEY=VALUE", help="passed to every solver")
    p_cmp.add_argument("--cell-time-limit", type=positive_float, metavar="S",
                       help="stop a run after S seconds of wall time: it becomes an error row 'time limit S s "
                       "reached' with the metrics of its finished steps; the other runs go on")
    add_max_steps_argument(p_cmp)
    add_keyframe_argument(p_cmp)
    p_cmp.add_argument("--no-plot", action="store_true", help="skip figures and report")
    p_cmp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_cmp.set_defaults(func=_cmd_compare)

    from contactopt.cli.bench import add_bench_parser
    from contactopt.cli.export import add_export_parser
    from contactopt.cli.render import add_compare_render_argument, add_render_parser

    add_compare_render_argument(p_cmp)
    add_export_parser(sub)
    add_bench_parser(sub)
    add_render_parser(sub)

    p_prog = sub.add_parser("program", help="show (and save) the program of one step",
                            description="Simulate SCENE up to step N, print the program that "
                            "step poses, and optionally save it as .npz.")
    p_prog.add_argument("scene")
    _add_step_arguments(p_prog)
    p_prog.add_argument("--step", type=int, default=0, help="step index (default 0)")
    p_prog.add_argument("--out", help="write the program to this .npz file")
    p_prog.set_defaults(func=_cmd_program)
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
    try:
        return int(args.func(args))
    except ContactoptError as exc:
        print(f"contactopt: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("contactopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
