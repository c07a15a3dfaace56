"""Peers in one run (issue 25, item 5): the same FCLIB problems solved by our Coulomb solvers and by
Siconos's fc3d solvers, judged by one error measure.

Problems: the steps of our scenes exported to FCLIB (``contactopt export SCENE -f ccp --format
fclib``: box slide, four-legged table, sphere stack, 100-sphere pile, quadruped trot, dm-control
walker) and other tools' files (Siconos's FCLIB tests, ``--problems``); a scene that does not export or
a file that does not load is a row saying why (``peers_problems``). Ours: ``co.solve(program,
solver=NAME, options={"tol": TOL})`` on ``co.load_program(file, form="coulomb")``, or
``legacy_fixed_point`` (``solve_coulomb``, the De Saxcé fixed point over CCP programs;
``peers_ours``). Siconos: Debian's ``python3-siconos`` under ``/usr/bin/python3`` in a
subprocess (``experiments/peers/siconos_fc3d.py``; never a dependency), fed ``W, q, mu`` through
HDF5, with its tolerance set to the target converted to Siconos's own error measure (``||e|| /
||q||`` against FCLIB's ``||e|| / (1 + sqrt ||q||)``), so that both sides stop on the same FCLIB
error (``--siconos-tol target`` gives it the target as is; ``peers_siconos``). One BLAS thread on
both sides, best of up to 3 timings (fewer when a solve takes over ``--repeat-budget`` seconds), every
answer's FCLIB error computed here from ``r`` (``peers_report``). Success: FCLIB error <= the
tolerance asked.

Writes ``OUT/summary.json`` (rows, per-problem ratios, per-family and per-group summaries, the
versions and the command), ``OUT/summary.csv`` (one row per problem, solver and tolerance),
``OUT/ratios.csv`` and ``OUT/coulomb_peers.png``.

    python experiments/coulomb_peers.py [--problems PATH ...] [--scenes box_slide,...]
        [--ours nsgs,nsn,...|legacy_fixed_point] [--siconos NSGS,NSN-AC] [--tol 1e-6,1e-8]
        [--max-problems N] [--fixed-point-iterations N] [--out DIR] [--siconos-python /usr/bin/python3]

At most ``--max-problems`` (default 3) problems per scene or folder, spread evenly over its steps:
the README's ``--scenes sphere_pile_mjcf:0.02`` is 3 pile steps, about a minute on 2 cores without
Siconos (its expected time is printed before the solves). ``fixed_point`` is opt-in (``--ours
nsgs,...,fixed_point``): one CCP solve an iteration, it does not converge on the pile in its
default 100 (150 s a problem), and runs under ``--fixed-point-iterations`` (default 10).
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import OUT, ROOT, print_table, write_results
from peers_ours import COULOMB_SOLVERS, FAMILY, LEGACY, OPT_IN, default_ours, expected_seconds, solve_ours
from peers_problems import PeerProblem, collect
from peers_report import (
    Row,
    failed_row,
    family_summary,
    fclib_error,
    figure,
    group_summary,
    ratio_rows,
    run_row,
    table_rows,
)
from peers_siconos import (
    DEFAULT_PYTHON,
    INSTALL_HINT,
    ONE_THREAD,
    SiconosPeer,
    siconos_tolerance,
    siconos_version,
)
from tqdm import tqdm

SCENES = ("box_slide", "table_four_legs", "sphere_stack", "sphere_pile_mjcf:0.02", "quadruped_trot:0.1",
          "dm_walker:0.1")
SHARED = ROOT.parent / "shared" / "data" / "fclib"
#: Problems per scene or folder by default (``--max-problems``).
MAX_PROBLEMS = 3
#: The fixed points' iteration budget (``--fixed-point-iterations``).
FIXED_POINT_ITERATIONS = 10


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="*", type=Path, default=None,
                        help=f"FCLIB files or folders (default: {SHARED}); with --scenes '' only these")
    parser.add_argument("--scenes", default=",".join(SCENES),
                        help="scenes to export, NAME or NAME:DURATION, comma separated ('' for none)")
    parser.add_argument("--export-formulation", default="ccp", help="formulation simulated for the export")
    parser.add_argument("--fresh-export", action="store_true", help="export again even if OUT/exports has it")
    parser.add_argument("--ours", default=None,
                        help="our solvers, comma separated: co.solve's names or legacy_fixed_point (default: "
                             f"those of {', '.join(COULOMB_SOLVERS)} that are registered)")
    parser.add_argument("--ours-option", action="append", default=[], metavar="KEY=VALUE",
                        help="option of our solvers (e.g. max_iterations=50), repeatable")
    parser.add_argument("--siconos", default="NSGS,NSN-AC", help="Siconos fc3d solvers, comma separated")
    parser.add_argument("--siconos-python", default=DEFAULT_PYTHON)
    parser.add_argument("--siconos-max-iterations", type=int, default=None,
                        help="Siconos's iteration budget (default: each solver's own)")
    parser.add_argument("--siconos-tol", choices=("fclib", "target"), default="fclib",
                        help="Siconos's tolerance: the target converted to its own measure so that its stop "
                             "means FCLIB's error reached (fclib), or the target as is (target)")
    parser.add_argument("--siconos-timeout", type=float, default=600.0, help="seconds per problem for Siconos")
    parser.add_argument("--tol", default="1e-6,1e-8", help="FCLIB errors to reach, comma separated")
    parser.add_argument("--max-problems", type=int, default=MAX_PROBLEMS,
                        help=f"at most N problems per scene or folder, spread evenly (default {MAX_PROBLEMS}; "
                             "0: all)")
    parser.add_argument("--fixed-point-iterations", type=int, default=FIXED_POINT_ITERATIONS,
                        help="the fixed points' iteration budget (one CCP solve each; default "
                             f"{FIXED_POINT_ITERATIONS}); fixed_point runs only when named in --ours")
    parser.add_argument("--rounds", type=int, default=3, help="timings per solve (the best is kept)")
    parser.add_argument("--repeat-budget", type=float, default=2.0,
                        help="no further timing round once the rounds so far took this many seconds")
    parser.add_argument("--out", type=Path, default=OUT / "coulomb_peers")
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def _option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def peer_pairs(ours: Sequence[str], siconos: Sequence[str]) -> list[tuple[str, str]]:
    """Every (our solver, Siconos solver) pair, those of one family first (``FAMILY``)."""
    pairs = [(name, peer) for name in ours for peer in siconos]
    return sorted(pairs, key=lambda pair: FAMILY.get(pair[0]) != pair[1])


def solve_problem(item: PeerProblem, ours: Sequence[str], siconos: Sequence[str], tols: Sequence[float],
                  peer: SiconosPeer | None, options: dict[str, Any], rounds: int = 3, budget: float = 2.0,
                  siconos_max_iterations: int | None = None, tol_scale: str = "fclib",
                  own_options: dict[str, dict[str, Any]] | None = None) -> list[Row]:
    """Every solver of both sides at every tolerance on one problem: its rows (``rounds`` and
    ``budget``: the timing rule of both sides, see the module docstring; ``tol_scale``: how the
    target reaches Siconos, :func:`peers_siconos.siconos_tolerance`; ``own_options``: a solver's
    options instead of ``options``, the fixed points' iteration budget)."""
    rows: list[Row] = []
    sides = [("ours", name, FAMILY.get(name, "")) for name in ours]
    sides += [("siconos", name, name) for name in siconos]
    problem = item.problem
    if problem is None or problem.equalities:
        why = item.error or "a local problem with equality rows (V, R, s): not compared"
        return [failed_row(item.label, item.group, item.contacts, side, name, family, tol, why)
                for side, name, family in sides for tol in tols]
    for name in ours:
        for tol in tols:
            run = solve_ours(name, problem, item.path, tol, (own_options or {}).get(name, options), rounds, budget)
            rows.append(run_row(item.label, item.group, item.contacts, "ours", name, FAMILY.get(name, ""), tol,
                                error=fclib_error(problem, run.r), iterations=run.iterations, seconds=run.seconds,
                                rounds=run.rounds, own_error=run.own_error, status=run.status,
                                message=run.error or item.warning))
    if not siconos:
        return rows
    if peer is None or problem.spacedim != 3:
        why = "Siconos not installed" if peer is None else "2-D problem: only Siconos's fc3d solvers are run"
        return rows + [failed_row(item.label, item.group, item.contacts, "siconos", name, name, tol, why)
                       for name in siconos for tol in tols]
    asked = [siconos_tolerance(tol, problem.q, tol_scale) for tol in tols]
    runs = peer.solve(problem.W, problem.q, problem.mu, siconos, asked, rounds, budget, siconos_max_iterations)
    for peer_run, tol in zip(runs, [tol for _ in siconos for tol in tols], strict=True):
        rows.append(run_row(item.label, item.group, item.contacts, "siconos", peer_run.solver, peer_run.solver, tol,
                            error=fclib_error(problem, peer_run.r), iterations=peer_run.iterations,
                            seconds=peer_run.seconds, rounds=peer_run.rounds, own_error=peer_run.own_error,
                            status=f"info {peer_run.info}", message=peer_run.error, solver_tol=peer_run.tol))
    return rows


def _write_csv(path: Path, rows: Sequence[Row]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    siconos, tols = _split(args.siconos), [float(t) for t in _split(args.tol)]
    if args.ours is None:
        ours, missing = default_ours()
        if missing:
            print(f"coulomb_peers: not registered yet, left out: {', '.join(missing)}", file=sys.stderr)
    else:
        ours = _split(args.ours)
    options = dict(_option(text) for text in args.ours_option)
    version = siconos_version(args.siconos_python) if siconos else None
    if siconos and version is None:
        print(f"coulomb_peers: {INSTALL_HINT}; running our side only", file=sys.stderr)
    folders = list(args.problems) if args.problems is not None else [SHARED]
    problems = collect(_split(args.scenes), folders, args.out / "exports", args.max_problems or None,
                       args.export_formulation, args.fresh_export)
    budgeted = {name: {"max_iterations": args.fixed_point_iterations, **options}
                for name in ours if name in OPT_IN or name == LEGACY}
    expected = expected_seconds([item.contacts for item in problems], ours, len(tols), args.fixed_point_iterations,
                                args.rounds, args.repeat_budget)
    print(f"coulomb_peers: {len(problems)} problems, ours {', '.join(ours)} at {len(tols)} tolerances: expected "
          f"at most ~{expected:.0f} s on 2 cores" + (f", plus Siconos (up to {args.siconos_timeout:g} s a problem)"
                                                     if version is not None else ""), flush=True)
    rows: list[Row] = []
    peer = SiconosPeer(args.siconos_python, args.siconos_timeout) if version is not None else None
    try:
        if peer is not None:
            peer.__enter__()
        for item in tqdm(problems, desc="coulomb peers", unit="problem", disable=args.no_progress):
            rows += solve_problem(item, ours, siconos, tols, peer, options, args.rounds, args.repeat_budget,
                                  args.siconos_max_iterations, args.siconos_tol, budgeted)
    finally:
        if peer is not None:
            peer.close()
    pairs = peer_pairs(ours, siconos)
    ratios = ratio_rows(rows, pairs, FAMILY)
    families, groups = family_summary(ratios), group_summary(rows)
    print_table(table_rows(groups))
    # the console shows the pairs of one family (every pair when none met); summary.json has all
    print_table(table_rows([row for row in families if row["same_family"]] or families))
    command = "python experiments/coulomb_peers.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    title = (f"contactopt vs Siconos {(version.get('package') or version['siconos']) if version else '(missing)'}: "
             f"{len(problems)} problems, one BLAS thread")
    write_results(args.out, rows, {"command": command, "siconos": version, "families": families, "groups": groups,
                                   "ratios": ratios, "tolerances": tols})
    _write_csv(args.out / "ratios.csv", ratios)
    figure(rows, ratios, args.out / "coulomb_peers.png", title)
    print(f"wrote {args.out / 'summary.json'}, summary.csv, ratios.csv, coulomb_peers.png")
    return 0


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in ONE_THREAD.items()):
        # one BLAS thread on our side too: the variables count only before numpy loads, so start again
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ONE_THREAD})
    sys.exit(main())
