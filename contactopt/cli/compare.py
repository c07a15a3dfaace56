"""``contactopt compare``: one scene under many formulations, solvers and step sizes.

Each comparison writes a new run folder (:mod:`contactopt.core.run_folders`): ``runs/compare-SCENE``,
then ``-2``, ``-3``, ...; ``--out DIR`` names one (refused when not empty unless ``--force``);
``--resume`` reuses the cells an earlier comparison stored there. The command says which folder
it wrote and how many runs it computed and reused, prints the compact tables
(:mod:`contactopt.cli.printout`) and writes the tables, figures and report.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contactopt.analysis.legend import fill, wrapped
from contactopt.cli.common import _options, load_scene_of, positive_float, with_max_steps
from contactopt.cli.grid import check_grid, split_list, step_size
from contactopt.core.errors import OptionError
from contactopt.core.outputs import atomic_path, safe_component, writable_file
from contactopt.core.run_folders import CELL_STORE, COMPARE_OUTPUTS, open_run_folder, removed_if_failed
from contactopt.core.tables import format_table, terminal_width

if TYPE_CHECKING:
    import pandas as pd

EXIT_STOPPED = 3

__all__ = ["add_compare_arguments", "run_compare"]


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``contactopt compare`` (besides --max-steps, --keyframe and --render)."""
    parser.add_argument("scene", help="scene file or bundled problem name")
    parser.add_argument("--formulations", help="comma-separated, options as name:key=value "
                        "(default: every time-stepping formulation but the opt-in sap, as the notes say)")
    parser.add_argument("--solvers", help="comma-separated (default: every installed solver but cvxpy, which "
                        "re-solves the same programs through the solvers it wraps; name it to run it); a solver "
                        "that cannot take a formulation's programs gives a 'refused' row, no step run")
    parser.add_argument("--pairs", metavar="F/S,...",
                        help="run exactly these formulation/solver pairs, comma-separated (e.g. "
                        "lcp/lemke,ccp/clarabel,ode/-; options as name:key=value/solver), instead of the cross "
                        "product of --formulations and --solvers (not with them)")
    parser.add_argument("--dt", help="comma-separated step sizes (default: the scene's)")
    parser.add_argument("--duration", type=positive_float, help="simulated time [s] (default: the scene's)")
    parser.add_argument("--out", help="output folder (default: a new runs/compare-SCENE, then runs/compare-SCENE-2, "
                        "...); refused when not empty unless --force or --resume")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty --out: first remove an earlier run's files there")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the runs stored by an earlier comparison in --out (without --out: the latest "
                        "runs/compare-SCENE[-N]) and compute only the others")
    parser.add_argument("--executor", choices=["serial", "process", "dask"], default="process",
                        help="where runs execute (default: a local process pool)")
    parser.add_argument("--address", help="address of an existing Dask scheduler (implies --executor dask)")
    parser.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    parser.add_argument("--solver-option", action="append", metavar="KEY=VALUE", help="passed to every solver")
    parser.add_argument("--cell-time-limit", type=positive_float, metavar="S",
                        help="stop a run after S seconds of wall time: it becomes an error row 'time limit S s "
                        "reached' with the metrics of its finished steps; the other runs go on (--resume "
                        "retries it)")
    parser.add_argument("--wide", action="store_true",
                        help="print every column of the table (default: a compact set that fits the terminal)")


def run_compare(args: argparse.Namespace) -> int:
    """Handler of ``contactopt compare``."""
    from contactopt.analysis.compare import compare, summary_columns
    from contactopt.analysis.report import write_report

    scene = with_max_steps(load_scene_of(args.scene, args), args.max_steps)
    formulations = split_list(args.formulations, "--formulations")
    solver_names = split_list(args.solvers, "--solvers")
    pairs = _pairs(args.pairs, formulations, solver_names)
    dts = [step_size(item) for item in split_list(args.dt, "--dt") or []] or None
    check_grid(scene, formulations or (None if pairs is None else [f for f, _ in pairs]), dts, args.duration)
    default = Path("runs") / safe_component(f"compare-{scene.name}")
    folder = open_run_folder(args.out, default, outputs=(*COMPARE_OUTPUTS, *CELL_STORE), force=args.force,
                             resume=args.resume)
    with removed_if_failed(folder):  # --render checked before the runs
        if args.render:
            writable_file(args.render, "video file")
        table, traces = compare(scene, formulations, solver_names, dts, args.duration, pairs=pairs,
                                solver_options=_options(args.solver_option, "--solver-option"), executor=args.executor,
                                address=args.address, workers=args.workers, out=folder.path,
                                progress=not args.no_progress, return_traces=True,
                                cell_time_limit=args.cell_time_limit)
    out = folder.path
    width = terminal_width()
    print(fill(folder.describe(), width))
    print(fill(_what_ran(scene.name, table, args.executor if args.address is None else "dask", out), width))
    _print_tables(table, args.wide, out, _left_out() if formulations is None and pairs is None else [])
    written = ["table.csv", "table.parquet", *(["traces.parquet"] if len(traces) else []),
               *(["observables.csv"] if table.attrs.get("observables") else []),
               *(["convergence.csv"] if (out / "convergence.csv").exists() else [])]
    if not args.no_plot:
        notes = [_refused_note(table)] if table.attrs.get("skipped") else []
        written += [p.name for p in write_report(f"{scene.name}: formulations and solvers compared", table, traces,
                                                 out, summary_columns(table), notes, scene=scene)]
    print(wrapped([", ".join(written)], width, title=f"wrote {out}/"))
    if args.render is not None:
        from contactopt.cli.render import render_comparison

        render_comparison(scene, table, args.render, out, args, _options(args.solver_option, "--solver-option"))
    return EXIT_STOPPED if table["status"].eq("error").sum() else 0


def _pairs(text: str | None, formulations: list[str] | None,
           solver_names: list[str] | None) -> list[tuple[str, str]] | None:
    """``--pairs lcp/lemke,ccp/clarabel`` -> ``[("lcp", "lemke"), ("ccp", "clarabel")]``; None
    when not given. Refused with --formulations or --solvers, and an item without ``/``."""
    items = split_list(text, "--pairs")
    if items is None:
        return None
    if formulations is not None or solver_names is not None:
        raise OptionError("--pairs names the formulation/solver pairs itself: give either --pairs or "
                          "--formulations/--solvers (their cross product), not both")
    pairs = []
    for item in items:
        formulation, sep, solver = item.rpartition("/")
        if not sep or not formulation.strip() or not solver.strip():
            raise OptionError(f"--pairs: item {item!r} is not FORMULATION/SOLVER (e.g. lcp/lemke, ode/-)")
        pairs.append((formulation.strip(), solver.strip()))
    return pairs


def _refused_note(table: pd.DataFrame) -> str:
    """The one line under the tables and in the report about the pairs refused before step 0."""
    skipped = table.attrs.get("skipped", [])
    return (f"refused before step 0, no step run ({len(skipped)} formulation/solver pair(s): the solver cannot "
            "take the formulation's programs; left out of the printed tables, kept in table.csv with status "
            "refused; which and why: below)")


def _what_ran(name: str, table: pd.DataFrame, executor: str, out: Path) -> str:
    """``box_slide: 17 runs: 15 computed (process), 0 reused, 2 refused``, saying so when
    nothing was computed."""
    from contactopt.analysis.compare import REFUSED

    reused = int(table["cached"].sum())
    refused = int(table["status"].eq(REFUSED).sum())
    computed = len(table) - reused - refused
    text = f"{name}: {len(table)} runs: {computed} computed ({executor})"
    if reused:
        text += f", {reused} reused from {out / 'cells'} (stored by an earlier comparison)"
    if refused:
        text += (f", {refused} refused before step 0 (the solver cannot take the formulation's programs: "
                 "status refused, why in the notes)")
    if not computed:
        text += "; nothing computed: every run was stored already (leave out --resume to run them again)"
    return text


def _left_out() -> list[str]:
    """A note per formulation a default comparison leaves out (``default_comparison = False``),
    with the formulation's own ``comparison_note``: why, and how to run it."""
    from contactopt import formulations

    notes = []
    for name in formulations.names():
        form = formulations.get(name)
        if not getattr(form, "default_comparison", True):
            why = getattr(form, "comparison_note", "")
            notes.append(f"{name} is not in the default formulations (opt-in: --formulations ...,{name})"
                         + (f": {why}" if why else ""))
    return notes


def _print_tables(table: pd.DataFrame, wide: bool, out: Path, left_out: Sequence[str] = ()) -> None:
    """The metrics table, the observables table and the convergence orders, each with its
    legend and notes (``left_out``: notes on formulations a default comparison leaves out);
    ``convergence.csv`` written when orders were fitted."""
    from contactopt.analysis.compare import REFUSED
    from contactopt.cli.printout import compare_notes, metrics_view, observables_legend, observables_view, print_view

    width = terminal_width()
    ran = table["status"].ne(REFUSED)
    shown = table[ran] if ran.any() else table  # the refused pairs: a note each (below), not rows of nan
    view, same, explained = metrics_view(shown, wide)
    run_lines = compare_notes(table)[0]  # the refused pairs' notes among them
    cell_lines = compare_notes(shown)[1]
    if table.attrs.get("skipped"):
        run_lines.insert(0, _refused_note(table))
    run_lines.extend(left_out)
    print_view(view, width=width, same=same, legend_of=explained, notes=run_lines, digits=4 if wide else 3)
    if table.attrs.get("observables"):
        from contactopt.analysis.convergence import orders
        from contactopt.analysis.observations import long_table

        print(f"\nobservables of {table['scene'].iloc[0]}:")
        print_view(observables_view(shown, wide), width=width, legend_text=observables_legend(shown, width, wide),
                   notes=cell_lines)
        fitted = orders(long_table(table))
        if len(fitted):
            print("\nconvergence (order p of |error| ~ dt^p, least squares over the step sizes):")
            print(format_table(fitted, width=width))
            with atomic_path(out / "convergence.csv", "table") as temporary:
                fitted.to_csv(temporary, index=False)
