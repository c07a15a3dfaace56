"""Running the benchmark: every program with every solver at every tolerance profile, one
row each, success judged on contactopt's own residuals (:mod:`contactopt.analysis.bench`).

Programs are contactopt ``.npz`` files or FCLIB problem files (``.hdf5``/``.h5`` with
``/fclib_local`` or ``/fclib_global`` at the root, written by contactopt or any other tool),
read by :func:`contactopt.programs.load_program` as their convex (cone complementarity)
program, :mod:`contactopt.programs.fclib`, and as their own Coulomb problem (``form="coulomb"``)
for the solvers that take the kind ``coulomb``. For those, the row also gives ``fclib_error``:
FCLIB's own error measure of the answer (:func:`contactopt.programs.fclib_merit`, De Saxcé's
natural map), which is 0 only where the answer also obeys Coulomb's law exactly (the convex
program drops De Saxcé's term: a sliding contact keeps an error of order ``mu ||u_T||``).

A solver that can take none of the programs is refused before any solve, in one line naming
it, the program kinds and the solvers that could (a benchmark of it would only be failures).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contactopt.analysis.bench.inputs import Input, load_inputs, skipped_summary
from contactopt.analysis.bench.profiles import Profile, get_profile, solver_options
from contactopt.core.errors import ContactoptError, OptionError, SolverUnavailableError, UnsupportedProgramError
from contactopt.programs.coulomb import coulomb_from_fclib
from contactopt.programs.coulomb_error import answer_of, fclib_merit
from contactopt.programs.fclib import FclibProblem
from contactopt.solvers import available, can_take, parse_name, spec
from contactopt.solvers import solve as solve_program

__all__ = ["run_benchmark"]


def _row(program: str, solver: str, prof: Profile, kind: str) -> dict[str, Any]:
    nan = float("nan")
    return {"program": program, "solver": solver, "profile": prof.name, "kind": kind, "status": "error",
            "success": False, "solve_time": nan, "setup_time": nan, "runtime": nan, "residual": nan,
            "primal": nan, "dual": nan, "gap": nan, "complementarity": nan, "iterations": 0,
            "tolerance": prof.tolerance, "time_limit": prof.time_limit, "fclib_error": nan, "error": "",
            "options": ""}


def run_benchmark(programs: str | Path | Iterable[str | Path], solvers: Sequence[str],
                  profiles: Sequence[str | Profile] = ("default",), *, warmup: bool = True,
                  progress: bool = False, fclib_form: str | None = None, symmetrize: bool = False,
                  inputs: list[Input] | None = None) -> Any:
    """Solve every program with every solver at every profile; one row each (pandas DataFrame).

    Columns: program, solver, profile, kind, status, success, solve_time, setup_time, runtime
    (seconds), residual (``residuals.worst``), primal, dual, gap, complementarity, iterations,
    tolerance, time_limit, fclib_error (FCLIB files only; module docstring), error. ``success``
    is defined in :mod:`contactopt.analysis.bench`. With ``warmup`` each (solver, profile) first
    solves the first program once, untimed (imports, first-call costs). ``fclib_form`` and
    ``symmetrize`` as in :func:`~contactopt.programs.load_program`. A file that cannot be read
    or whose program cannot be built gives failed rows with status ``unreadable`` or
    ``refused`` and the reason in ``error`` (:mod:`contactopt.analysis.bench.inputs`), and the
    others are solved; ``inputs`` (from :func:`~contactopt.analysis.bench.inputs.load_inputs`)
    replaces reading ``programs`` again. If no file can be solved, that is one error.
    """
    import pandas as pd

    if isinstance(solvers, str):
        solvers = [solvers]
    if not solvers:
        raise OptionError("no solver given")
    for solver in solvers:
        _check_solver(solver)
    chosen = [get_profile(p) for p in profiles]
    if inputs is None:
        inputs = load_inputs(programs, fclib_form, symmetrize)
    loaded = [item for item in inputs if not item.skipped]
    if not loaded:  # nothing to benchmark: one error, not a table of failures
        first = inputs[0].reason if inputs else "no input"
        raise ContactoptError(first if len(inputs) == 1 else f"none of the {len(inputs)} files can be solved "
                              f"({skipped_summary(inputs)}); the first: {first}")
    coulomb = _coulomb_programs(inputs, solvers)
    _refuse_idle_solvers(solvers, [item.program for item in loaded],
                         [own for item, own in zip(inputs, coulomb, strict=True) if not item.skipped])
    rows: list[dict[str, Any]] = []
    bar = _bar(len(inputs) * len(solvers) * len(chosen), progress)
    try:
        for solver in solvers:
            for prof in chosen:
                options = solver_options(solver, prof)
                if warmup and loaded:
                    head = inputs.index(loaded[0])
                    _solve_quietly(_for_solver(loaded[0].program, coulomb[head], solver), solver, options)
                for item, own in zip(inputs, coulomb, strict=True):
                    if item.skipped:
                        rows.append({**_row(item.label, solver, prof, ""), "status": item.skipped,
                                     "error": item.reason})
                    else:
                        rows.append(_run_one(item.label, _for_solver(item.program, own, solver), solver, prof,
                                             options, item.problem))
                    bar.update(1)
    finally:
        bar.close()
    return pd.DataFrame(rows, columns=list(_row("", "", chosen[0], "")))


def _for_solver(program: Any, coulomb: Any, solver: str) -> Any:
    """The program ``solver`` gets: an FCLIB file's own Coulomb problem (``coulomb``, from
    :func:`~contactopt.programs.coulomb.coulomb_from_fclib`) for a solver that takes the kind
    ``coulomb``; the file's convex program (or the ``.npz`` program) otherwise."""
    return coulomb if coulomb is not None and "coulomb" in spec(solver).kinds else program


def _coulomb_programs(inputs: Sequence[Input], solvers: Sequence[str]) -> list[Any]:
    """Per input, its FCLIB problem as a Coulomb program when a solver takes that kind."""
    wanted = any("coulomb" in spec(solver).kinds for solver in solvers)
    return [coulomb_from_fclib(item.problem, source=str(item.program.metadata.get("source", "")))
            if wanted and not item.skipped and item.problem is not None else None for item in inputs]


def _refuse_idle_solvers(solvers: Sequence[str], programs: Sequence[Any], coulomb: Sequence[Any] = ()) -> None:
    """One error line for the solvers that can take none of ``programs`` (module docstring);
    ``coulomb``: the same files' Coulomb problems, offered to the solvers of that kind."""
    coulomb = list(coulomb) or [None] * len(programs)

    def offered(solver: str) -> list[Any]:
        return [_for_solver(program, own, solver) for program, own in zip(programs, coulomb, strict=True)]

    idle = [solver for solver in solvers if not any(can_take(program, solver) for program in offered(solver))]
    if not idle:
        return
    kinds = sorted({program.kind.upper() for program in programs})
    able = [name for name in available() if any(can_take(program, name) for program in offered(name))]
    raise UnsupportedProgramError(
        f"solver(s) {', '.join(idle)} can take none of the {len(programs)} program(s) ({', '.join(kinds)}); "
        f"solvers that can: {', '.join(able) or 'none'}")


def _check_solver(solver: str) -> None:
    """Unknown names, missing packages and unknown variants fail before any solve."""
    base, variant = parse_name(solver)
    spec_ = spec(solver)
    if not spec_.is_available():
        raise SolverUnavailableError(f"solver {base!r} is not installed: {spec_.install_hint}")
    if variant is not None:
        listing = getattr(importlib.import_module(spec_.module), "installed_variants", None)
        installed = list(listing()) if listing is not None else []
        if listing is not None and variant.lower() not in {v.lower() for v in installed}:
            raise SolverUnavailableError(f"{base} has no solver {variant!r} installed; installed: "
                                         f"{', '.join(installed) or 'none'}")


def _solve_quietly(program: Any, solver: str, options: Mapping[str, Any]) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solve_program(program, solver, options)
    except Exception:  # reported by the timed solves
        return


def _run_one(label: str, program: Any, solver: str, prof: Profile, options: Mapping[str, Any],
             problem: FclibProblem | None = None) -> dict[str, Any]:
    row = _row(label, solver, prof, program.kind)
    row["options"] = json.dumps(dict(options), default=str, sort_keys=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solution = solve_program(program, solver, options)
    except UnsupportedProgramError as exc:
        row.update(status="unsupported", error=str(exc))
        return row
    except Exception as exc:  # a benchmark reports a broken solve, it does not stop
        row.update(error=f"{type(exc).__name__}: {exc}")
        return row
    res = solution.residuals
    runtime = solution.setup_time + solution.solve_time
    worst = res.worst
    row.update(status=str(solution.status), solve_time=solution.solve_time, setup_time=solution.setup_time,
               runtime=runtime, residual=worst, primal=res.primal, dual=res.dual, gap=res.gap,
               complementarity=res.complementarity, iterations=solution.iterations)
    row["success"] = bool(solution.status.usable and math.isfinite(worst) and worst <= prof.tolerance
                          and runtime <= prof.time_limit)
    if not row["success"]:
        row["error"] = _why_failed(solution, worst, runtime, prof)
    if problem is not None and solution.status.usable and program.kind == "coulomb":
        row["fclib_error"] = res.fclib  # FCLIB's error, computed by contactopt on the file's own problem
    elif problem is not None and solution.status.usable:
        with contextlib.suppress(ContactoptError):  # no finite iterate: left NaN
            row["fclib_error"] = fclib_merit(problem, answer_of(problem, program, solution))
    return row


def _why_failed(solution: Any, worst: float, runtime: float, prof: Profile) -> str:
    """Why a solve is not a success (:mod:`contactopt.analysis.bench`), in one line."""
    if not solution.status.usable:
        return f"status {solution.status}: {solution.message}"
    reasons = []
    if not (math.isfinite(worst) and worst <= prof.tolerance):
        res = solution.residuals
        parts = {"primal": res.primal, "dual": res.dual, "gap": res.gap, "complementarity": res.complementarity}
        over = ", ".join(f"{name} {value:.2g}" for name, value in parts.items()
                         if not (math.isfinite(value) and value <= prof.tolerance))
        reasons.append(f"residual {worst:.3g} > tolerance {prof.tolerance:g} ({over})")
    if runtime > prof.time_limit:
        reasons.append(f"runtime {runtime:.3g} s > time limit {prof.time_limit:g} s")
    return f"status {solution.status} but " + "; ".join(reasons)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc="bench", unit="solve", leave=False, dynamic_ncols=True)


def record_histories(inputs: Sequence[Input], solvers: Sequence[str], profile: str | Profile = "default",
                     ) -> tuple[dict[str, list[Mapping[str, Any] | None]], dict[str, list[str]]]:
    """Convergence histories of every solver that records one (its spec declares
    ``history``: pgs, newton, and the Coulomb solvers nsgs, nsn, admm, fixed_point,
    staggered), one untimed solve per readable input at ``profile``'s tolerances:
    ``(histories, problems)`` keyed by solver, for
    :func:`contactopt.analysis.bench.histories.plot_histories` and
    :func:`~contactopt.analysis.bench.histories.history_table`. A solver without histories
    is left out, never handed the option (a backend passing options through, as cvxpy to its
    inner solver, would refuse it); a solve that fails gives None (left out of the medians)."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    loaded = [item for item in inputs if not item.skipped]
    coulomb = _coulomb_programs(loaded, solvers)
    histories: dict[str, list[Mapping[str, Any] | None]] = {}
    problems: dict[str, list[str]] = {}
    for solver in solvers:
        if not spec(solver).history:
            continue
        options = {**solver_options(solver, prof), "history": True}
        runs: list[Mapping[str, Any] | None] = []
        for item, own in zip(loaded, coulomb, strict=True):
            program = _for_solver(item.program, own, solver)
            if not can_take(program, solver):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    history = solve_program(program, solver, options).history
            except OptionError:  # the solver records no history
                break
            except ContactoptError:
                history = None
            runs.append(history)
        if any(run is not None for run in runs):
            histories[solver] = runs
            problems[solver] = [item.label for item, own in zip(loaded, coulomb, strict=True)
                                if can_take(_for_solver(item.program, own, solver), solver)][:len(runs)]
    return histories, problems
