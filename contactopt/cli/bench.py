"""``contactopt bench``: benchmark solvers on exported programs."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contactopt.analysis.bench import (
    PROFILES,
    display_summary,
    get_profile,
    load_inputs,
    performance_profile,
    run_benchmark,
    skipped_summary,
    summarize,
)
from contactopt.analysis.bench.folder import bench_folder
from contactopt.analysis.bench.inputs import SKIPPED
from contactopt.analysis.legend import legend
from contactopt.core.outputs import atomic_path
from contactopt.core.tables import format_table, terminal_width

# --- command line ------------------------------------------------------------------------


def _split(values: Sequence[str] | None, default: str, option: str) -> list[str]:
    """Repeated or comma-separated names; an empty item is an error naming ``option``."""
    from contactopt.cli.grid import split_list

    return [part for item in values or [default] for part in split_list(item, option) or []]


def add_bench_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contactopt bench PROGRAMS... --solvers S1,S2 --profiles P1,P2 --out DIR``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="benchmark solvers on exported programs",
        description="Solve programs (contactopt .npz files, FCLIB problem files .hdf5 written by "
        "contactopt or any other tool, or folders of them, e.g. the npz or fclib folder written by "
        "'contactopt export') with each solver at each tolerance profile; print the summary "
        "(solved, shifted geometric means of time over the solved programs and of residuals, shift "
        "10; a failure is shown as failed, never as a time) and write results.csv, summary.csv and "
        "performance_profile.png to --out. FCLIB problems are solved as their cone complementarity "
        "program; results.csv gives FCLIB's own error of each answer (fclib_error). A file that "
        "cannot be read (status unreadable) or whose program cannot be built (status refused, e.g. a "
        "nonsymmetric W without --symmetrize) is a failed row with the reason, and the others are "
        "solved. A solver that can take none of the programs is refused. Profiles: "
        + "; ".join(f"{p.name}: {p.description}" for p in PROFILES.values()) + ".")
    parser.add_argument("programs", nargs="+", help="program files (.npz, FCLIB .hdf5) or folders of them")
    parser.add_argument("--solvers", action="append", metavar="S1,S2",
                        help="solvers, comma separated or repeated (default: clarabel,osqp); e.g. "
                        "qpsolvers:proxqp")
    parser.add_argument("--profiles", action="append", metavar="P1,P2",
                        help=f"tolerance profiles (default: default); known: {', '.join(PROFILES)}")
    parser.add_argument("--fclib-form", choices=("primal", "dual"),
                        help="program of a global FCLIB problem: primal (velocities, default) or dual "
                        "(condensed to impulses, e.g. for pgs)")
    parser.add_argument("--symmetrize", action="store_true",
                        help="solve an FCLIB problem whose W (M) is not symmetric with its symmetric part "
                        "(W + W^T)/2, said in the results' metadata; without it such files are refused, "
                        "reported as failed rows")
    parser.add_argument("--out", help="output folder, used when missing or empty (default: a new folder "
                        "bench-NAME, bench-NAME-2, ... next to the first input: a bench never replaces "
                        "an earlier one)")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty --out, removing the earlier bench's results there")
    parser.add_argument("--no-plot", action="store_true", help="skip the performance profile plot")
    parser.add_argument("--no-histories", action="store_true",
                        help="skip the convergence histories (by default every solver that records one, "
                        "pgs, newton and the Coulomb solvers, solves each input once more, untimed, and "
                        "histories.csv and histories.png show its error against iterations and time)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=run_bench)
    return parser


def _histories(inputs: Any, solvers: list[str], profile: str, out: Path, plot: bool) -> list[Path]:
    """histories.csv (and .png) of the solvers that record convergence histories; none: []."""
    from contactopt.analysis.bench.histories import history_table, plot_histories, write_histories
    from contactopt.analysis.bench.run import record_histories

    histories, problems = record_histories(inputs, solvers, profile)
    if not histories:
        return []
    written = [write_histories(history_table(histories, problems), out / "histories.csv")]
    if plot:
        plot_histories(histories, path=out / "histories.png", title=f"convergence ({profile} profile)")
        written.append(out / "histories.png")
    return written


def run_bench(args: argparse.Namespace) -> int:
    """Handler of ``contactopt bench``."""
    import pandas as pd

    solvers = _split(args.solvers, "clarabel,osqp", "--solvers")
    profiles = _split(args.profiles, "default", "--profiles")
    for name in profiles:
        get_profile(name)
    start = time.perf_counter()
    out, where = bench_folder(args.out, args.programs, args.force)  # before the solves: none of them is lost
    try:
        inputs = load_inputs(args.programs, args.fclib_form, args.symmetrize)
        df = run_benchmark(args.programs, solvers, profiles, progress=not args.no_progress, inputs=inputs)
    except BaseException:
        if where.endswith("(new)"):
            with contextlib.suppress(OSError):
                out.rmdir()  # a refused bench leaves no trace (only if still empty)
        raise
    print(where)
    summary = summarize(df)
    written = [out / "results.csv", out / "summary.csv"]
    for frame, path in ((df, written[0]), (summary, written[1])):
        with atomic_path(path, "results table") as temporary:
            frame.to_csv(temporary, index=False)
    if not args.no_plot:
        written.append(performance_profile(df, out / "performance_profile.png"))
    if not args.no_histories:
        written += _histories(inputs, solvers, profiles[0], out, plot=not args.no_plot)
    rows = display_summary(summary)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(format_table(rows))
    if rows:
        print(legend(rows[0], terminal_width()))
    skipped = skipped_summary(inputs)
    if skipped:
        print(f"contactopt: {skipped} of {written[0]}", file=sys.stderr)
    errors = df[(df["error"] != "") & ~df["status"].isin(SKIPPED)]
    if len(errors):
        print(f"contactopt: {len(errors)} solve(s) failed or were refused; see the error column of "
              f"{written[0]}", file=sys.stderr)
    print(f"{len(df)} solves in {time.perf_counter() - start:.1f} s")
    for path in written:
        print(f"wrote {path}")
    return 0
