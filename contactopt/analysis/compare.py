"""Run one scene under many formulations, solvers and step sizes, and measure what differs.

``compare(scene, formulations, solvers, dts)`` builds the grid of *cells* (every formulation
with every solver, or the explicit ``pairs``, at every step size), runs them serially, on a
local process pool or on Dask, and returns a tidy :class:`pandas.DataFrame` with one row per
cell: ``formulation``, ``solver``, ``dt``, ``status`` (``completed`` | ``stopped`` | ``error`` |
``refused``: the solver cannot take the formulation's programs, decided before step 0 by
:func:`refusal`, no step run), the run's metrics (:mod:`contactopt.analysis.metrics`), the
scene's observables (:mod:`contactopt.scenes.observables`: columns ``NAME``, ``NAME_ref`` and ``NAME_err``;
their units and tolerances in ``table.attrs["observables"]``; one row per cell and observable:
:func:`contactopt.analysis.observations.long_table`), the error text if any and wall time.

A formulation is named with its options as ``"name:key=value:key=value"`` (values in TOML
syntax), e.g. ``"anitescu:form=dual"``, ``"lcp:k=8"``. ``ode``, ``variational`` (a default
on the scenes it takes), ``compliant``, ``hybrid`` and ``mujoco`` (MuJoCo's own solver on an MJCF
scene: the reference row) get one cell per step size, with solver ``-``.

Sweeps are resumable: with an output folder every finished cell is stored under
``cells/`` as soon as it completes, and a re-run loads it instead of recomputing it (when its
files are the ones whose hashes ``cells-index.json`` records: :mod:`~contactopt.analysis.cells`). A cell
that raises becomes a row with ``status = "error"`` (not cached, so a re-run retries it); it
never stops the sweep or loses the other rows.
"""

from __future__ import annotations

import math
import tomllib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from contactopt import formulations as formulations_
from contactopt import integrators, solvers
from contactopt.analysis import momentum, observations
from contactopt.analysis.cell import NO_SOLVER, Cell, cell_id, scene_fingerprint, solver_used
from contactopt.analysis.cells import CellStore
from contactopt.analysis.mujoco_distance import add_distance_to_mujoco
from contactopt.analysis.workers import execute
from contactopt.core.arguments import (
    ArgumentTypeError,
    check_mapping,
    check_names,
    check_number,
    check_step_sizes,
    given,
)
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.core.outputs import atomic_path, output_errors, writable_folder
from contactopt.scenes.loading import Scene, as_scene
from contactopt.simulation import formulate

__all__ = ["REFUSED", "Cell", "compare", "default_formulations", "parse_formulation", "plan", "plan_grid", "refusal",
           "solver_used"]

# Methods that get one cell per step size (no solver grid): the continuous-time baselines,
# the variational integrator and MuJoCo (hybrid solves its impact programs with the scene's solver).
CONTINUOUS = ("ode", "variational", "compliant", "hybrid", "mujoco")


def parse_formulation(spec: str) -> tuple[str, dict[str, Any]]:
    """``"anitescu:form=dual:k=8"`` -> ``("anitescu", {"form": "dual", "k": 8})``."""
    name, *parts = spec.strip().split(":")
    options: dict[str, Any] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"formulation {spec!r}: option {part!r} is not KEY=VALUE")
        try:
            options[key.strip()] = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:  # a bare word
            options[key.strip()] = raw
    return name.strip().lower(), options


def default_formulations(scene: Scene | None = None) -> list[str]:
    """The time-stepping formulations (but those that set ``default_comparison = False``, e.g.
    ``sap``) and, on a ``scene`` it takes, ``variational`` (its energy and momentum beside them:
    :func:`contactopt.integrators.variational.refusal`); the other methods are opt-in."""
    from contactopt import formulations
    from contactopt.integrators.variational import refusal as variational_refusal
    names = [name for name in formulations.names() if getattr(formulations.get(name), "default_comparison", True)]
    takes = scene is not None and variational_refusal(scene.system, scene.q0, scene.v0, scene.dt, scene.options) is None
    return names + (["variational"] if takes else [])


#: The status of a row whose solver cannot take the formulation's programs (before step 0; ``message`` says why).
REFUSED = "refused"


def _grid_pairs(formulations: Sequence[str] | None, solvers_: Sequence[str] | None,
                pairs: Sequence[tuple[str, str]] | None, scene: Scene) -> list[tuple[str, str]]:
    """The (formulation, solver) pairs: the ``pairs`` named, or the cross product."""
    if pairs is None:
        solver_names = list(solvers_ or solvers.comparison_defaults())
        return [(spec, solver) for spec in (formulations or default_formulations(scene)) for solver in solver_names]
    if formulations is not None or solvers_ is not None:
        raise OptionError("compare: pairs names the formulation/solver pairs itself; give either pairs or "
                          "formulations and solvers (their cross product), not both")
    if isinstance(pairs, str) or not isinstance(pairs, Sequence) or not pairs:
        raise ArgumentTypeError(f"compare: pairs must be a non-empty list of (formulation, solver) pairs, e.g. "
                                f"[('lcp', 'lemke'), ('ccp', 'clarabel')], got {given(pairs)}")
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for index, pair in enumerate(pairs):
        if (isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(item, str) and item.strip() for item in pair)):
            raise ArgumentTypeError(f"compare: pairs[{index}] must be a (formulation, solver) pair of names, "
                                    f"e.g. ('lcp', 'lemke'), got {given(pair)}")
        key = (pair[0].strip(), pair[1].strip())
        if key in seen:
            raise OptionError(f"compare: pairs names {key[0]}/{key[1]} twice")
        seen.add(key)
        out.append(key)
    return out


def _takers(kind: formulations_.ContactKind | None, probe: Any) -> list[str]:
    """The installed solvers that take both the declared kind and step 0's program."""
    from contactopt.solvers.choice import takers

    able = takers(probe) if probe is not None else solvers.available()
    return [name for name in able if kind is None or solvers.can_take_kind(name, kind.kind, symmetric=kind.symmetric)]


def refusal(scene: Scene, method: str, options: Mapping[str, Any], solver: str, probe: Any) -> str | None:
    """Why ``solver`` can never take the programs of formulation ``method`` on ``scene``
    (None: it can, as far as is known before step 0). Two checks: the kind of program the
    formulation declares for a step with contacts (:func:`contactopt.formulations.contact_kind`:
    the program of step 0 has no contact rows when the bodies start apart, so it would let a
    pair run until the first contact and fail there), then step 0's program itself (``probe``,
    None when it could not be built)."""
    declared = formulations_.contact_kind(method, {**scene.options, **options}, scene.system)
    if declared is not None and not solvers.can_take_kind(solver, declared.kind, symmetric=declared.symmetric):
        able = ", ".join(_takers(declared, probe)) or "none installed"
        return f"{method}: {declared.why}, which solver {solver!r} cannot take (solvers that can: {able})"
    if probe is not None and not solvers.can_take(probe, solver):
        able = ", ".join(_takers(declared, probe)) or "none installed"
        return (f"{method}: solver {solver!r} cannot take its {probe.kind.upper()} program of step 0 "
                f"(solvers that can: {able})")
    return None


def plan_grid(scene: Scene, formulations: Sequence[str] | None = None, solvers_: Sequence[str] | None = None,
              dts: Sequence[float] | None = None, duration: float | None = None,
              pairs: Sequence[tuple[str, str]] | None = None) -> list[tuple[Cell, str | None]]:
    """Every cell of the grid with, for one that cannot run, why (:func:`refusal`; None for a
    cell to run). The grid is the cross product of ``formulations`` and ``solvers_``, or the
    explicit ``pairs`` (then neither may be given), at every step size of ``dts``."""
    grid = _grid_pairs(formulations, solvers_, pairs, scene)
    step_sizes = [float(dt) for dt in (dts or [scene.dt])]
    horizon = float(scene.duration if duration is None else duration)
    for name, value in [*(("dt", dt) for dt in step_sizes), ("duration", horizon)]:
        if not (math.isfinite(value) and value > 0):
            raise OptionError(f"{name} must be a positive number, got {value}")
    for name in dict.fromkeys(solver for _, solver in grid):
        if name != NO_SOLVER:
            solvers.parse_name(name)  # an unknown solver: one error before any cell
    entries: list[tuple[Cell, str | None]] = []
    probes: dict[str, Any] = {}
    for spec, solver in grid:
        method, options = parse_formulation(spec)
        if method not in integrators.names():
            raise OptionError(f"unknown formulation {method!r}; known: {', '.join(integrators.names())}")
        frozen = tuple(sorted(options.items()))
        if method in CONTINUOUS:
            if pairs is not None and solver != NO_SOLVER:
                raise OptionError(f"compare: {method} takes no solver; name its pair as ({spec!r}, '-')")
            if pairs is None and any(cell.formulation == spec for cell, _ in entries):
                continue  # one cell per step size, whatever the solvers
            entries += [(Cell(spec, method, frozen, NO_SOLVER, dt, horizon), None) for dt in step_sizes]
            continue
        if solver == NO_SOLVER:
            raise OptionError(f"compare: {method} needs a solver; '-' is for the methods that take none "
                              f"({', '.join(CONTINUOUS)})")
        if spec not in probes:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    probes[spec] = formulate(scene.system, scene.q0, scene.v0, step_sizes[0], method,
                                             {**scene.options, **options})
            except ContactoptError:
                probes[spec] = None  # bad options: every cell of this formulation becomes an error row
        why = refusal(scene, method, options, solver, probes[spec])
        entries += [(Cell(spec, method, frozen, solver, dt, horizon), why) for dt in step_sizes]
    return entries


def plan(scene: Scene, formulations: Sequence[str] | None = None, solvers_: Sequence[str] | None = None,
         dts: Sequence[float] | None = None, duration: float | None = None,
         pairs: Sequence[tuple[str, str]] | None = None) -> tuple[list[Cell], list[str]]:
    """The cells to run and, for information, the (formulation, solver) pairs refused because
    the solver cannot take the formulation's programs (``"lcp x clarabel"``; why:
    :func:`plan_grid`)."""
    entries = plan_grid(scene, formulations, solvers_, dts, duration, pairs)
    refused = dict.fromkeys(f"{cell.formulation} x {cell.solver}" for cell, why in entries if why is not None)
    return [cell for cell, why in entries if why is None], list(refused)


def refused_row(scene: Scene, cell: Cell, why: str) -> dict[str, Any]:
    """The table row of a cell refused before step 0: no step, no time, ``message`` why; each
    observable not measured (NaN) beside its reference for the cell's step and duration."""
    row: dict[str, Any] = {"scene": scene.name, "formulation": cell.formulation, "method": cell.method,
                           "solver": cell.solver, "dt": cell.dt, "duration": cell.duration, "status": REFUSED,
                           "steps": 0, "message": why, "error": "", "wall_time": 0.0, "cached": False}
    for observable in scene.observables:
        try:
            reference = float(observable.reference_value(cell.dt, cell.duration))
        except (ArithmeticError, ValueError, ContactoptError):
            reference = math.nan
        row.update({observable.name: math.nan, f"{observable.name}_ref": reference,
                    f"{observable.name}_err": math.nan})
    return row


def compare(
    scene: Scene | str | Path,
    formulations: Sequence[str] | str | None = None,
    solvers: Sequence[str] | str | None = None,
    dts: Sequence[float] | float | None = None,
    duration: float | None = None,
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    solver_options: Mapping[str, Any] | None = None,
    executor: str = "serial",
    address: str | None = None,
    workers: int | None = None,
    out: str | Path | None = None,
    progress: bool = False,
    return_traces: bool = False,
    cell_time_limit: float | None = None,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Run the grid and return the table (and the per-step traces if ``return_traces``).

    ``solvers=None`` runs every installed solver whose spec keeps ``default_comparison``
    (all but ``cvxpy``, which re-solves the same programs through the solvers it wraps at
    10-20x their time; name it to run it).

    ``executor``: ``serial``, ``process`` (a local process pool of ``workers``) or ``dask``
    (a LocalCluster, or the scheduler at ``address``). With ``out`` the sweep is resumable
    and writes ``table.csv``, ``table.parquet`` and ``traces.parquet`` there. The table's
    ``cached`` column says which rows were loaded from a previous run; a stored cell whose
    files are not the ones its index records is run again (:mod:`~contactopt.analysis.cells`).

    ``cell_time_limit`` (seconds of wall time per cell): a cell that runs longer is stopped and
    becomes an error row "time limit S s reached" (with the metrics of its finished steps);
    the other cells go on.

    ``pairs`` (``[("lcp", "lemke"), ("ccp", "clarabel")]``) runs exactly those
    formulation/solver pairs at every step size, instead of the cross product of
    ``formulations`` and ``solvers`` (give one or the other); a method that takes no solver is
    named with ``"-"`` (``("ode", "-")``).

    A pair whose solver cannot take the formulation's programs is refused before step 0
    (:func:`refusal`: the kind the formulation declares for a step with contacts, then step
    0's program): its rows have ``status = "refused"``, no step, no time, and ``message``
    says why; ``table.attrs["skipped"]`` lists those pairs (``"lcp x clarabel"``).

    ``scene`` may be a scene file or a bundled problem name; ``formulations`` and ``solvers``
    one comma-separated string (``"gauss,lcp"``, as the CLI's); ``dts`` one step size.
    Arguments of the wrong type are refused by name before any run
    (:class:`~contactopt.core.arguments.ArgumentTypeError`).
    """
    scene = as_scene(scene, "compare")
    formulations = check_names(formulations, "formulations", "compare", "gauss,lcp")
    solvers = check_names(solvers, "solvers", "compare", "clarabel,lemke")
    dts = check_step_sizes(dts, "dts", "compare")
    if duration is not None:
        duration = check_number(duration, "duration", "compare")
    solver_options = check_mapping(solver_options, "solver_options", "compare")
    if out is not None and not isinstance(out, str | Path):
        raise ArgumentTypeError(f"compare: out must be a folder path (str or Path), got {given(out)}")
    if not isinstance(executor, str):
        raise ArgumentTypeError(f"compare: executor must be 'serial', 'process' or 'dask', got {given(executor)}")
    if executor not in ("serial", "process", "dask"):
        raise OptionError(f"executor must be 'serial', 'process' or 'dask', got {executor!r}")
    if address is not None:
        executor = "dask"
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise OptionError(f"workers must be a positive integer, got {workers!r}")
    if cell_time_limit is not None and (isinstance(cell_time_limit, bool) or not isinstance(
            cell_time_limit, (int, float)) or not (math.isfinite(cell_time_limit) and cell_time_limit > 0)):
        raise OptionError(f"cell_time_limit must be a positive number of seconds, got {cell_time_limit!r}")
    entries = plan_grid(scene, formulations, solvers, dts, duration, pairs)
    cells = [cell for cell, why in entries if why is None]
    skipped = list(dict.fromkeys(f"{cell.formulation} x {cell.solver}" for cell, why in entries if why is not None))
    if not cells:
        reasons = dict.fromkeys(f"{cell.formulation} x {cell.solver}: {why}" for cell, why in entries if why)
        raise OptionError(f"nothing to compare: no solver given takes the programs of any formulation given "
                          f"({'; '.join(reasons)})")
    extra = dict(solver_options)
    fingerprint = scene_fingerprint(scene)
    folder = writable_folder(out) if out is not None else None  # before any cell runs
    store = CellStore(folder) if folder is not None else None
    rows: dict[str, dict[str, Any]] = {}
    traces: dict[str, pd.DataFrame] = {}
    todo: list[tuple[str, Cell]] = []
    for cell in cells:
        ident = cell_id(fingerprint, cell, extra)
        cached = store.load(ident, cell) if store is not None else None
        if cached is not None:
            rows[ident], traces[ident] = cached
            rows[ident]["cached"] = True
        else:
            todo.append((ident, cell))

    def finished(ident: str, result: tuple[dict[str, Any], pd.DataFrame]) -> None:
        row, trace = result
        row["cached"] = False
        row["cell"] = ident
        rows[ident], traces[ident] = row, trace
        if store is not None and row["status"] != "error":
            store.store(ident, row, trace)  # a cell it cannot write is said, and stays in the tables

    bar = _bar(len(todo), f"compare {scene.name}", progress)
    try:
        execute(executor, address, workers, scene, todo, extra, cell_time_limit, finished, bar.update)
    finally:
        bar.close()
    for cell, why in entries:
        if why is not None:
            rows[cell_id(fingerprint, cell, extra)] = refused_row(scene, cell, why)
    order = [cell_id(fingerprint, cell, extra) for cell, _ in entries]
    table = _tidy(pd.DataFrame([{**rows[i], "cell": i} for i in dict.fromkeys(order) if i in rows]))
    table.attrs.update(skipped=skipped, observables=observations.metadata(scene.observables))
    recorded = [traces[i] for i in order if i in traces and len(traces[i])]
    trace_table = pd.concat(recorded, ignore_index=True) if recorded else pd.DataFrame()
    table = add_distance_to_mujoco(table, trace_table)  # where the mujoco row is in the table
    if folder is not None:
        write_tables(table, trace_table, folder)
    return (table, trace_table) if return_traces else table


FIRST_COLUMNS = ["scene", "formulation", "solver", "dt", "status", "steps"]


def _tidy(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    first = [c for c in FIRST_COLUMNS if c in table.columns]
    last = [c for c in ("message", "error", "traceback", "cell", "cached") if c in table.columns]
    middle = [c for c in table.columns if c not in first and c not in last]
    return table[first + middle + last].reset_index(drop=True)


def write_tables(table: pd.DataFrame, traces: pd.DataFrame, folder: Path) -> list[Path]:
    """``table.csv``, ``table.parquet``, ``traces.parquet`` and (for a scene with observables)
    ``observables.csv`` (:func:`~contactopt.analysis.observations.long_table`) in ``folder``."""
    writable_folder(folder)
    with output_errors(folder, "output folder"):
        return _write_tables(table, traces, folder)


def _write_tables(table: pd.DataFrame, traces: pd.DataFrame, folder: Path) -> list[Path]:
    written = [folder / "table.csv", folder / "table.parquet"]
    with atomic_path(written[0], "table") as temporary:  # every table complete under its name, or absent
        table.to_csv(temporary, index=False)
    if table.attrs.get("observables"):
        with atomic_path(folder / "observables.csv", "table") as temporary:
            observations.long_table(table).to_csv(temporary, index=False)
        written.append(folder / "observables.csv")
    with atomic_path(written[1], "table") as temporary:
        table.astype({c: str for c in table.columns if table[c].dtype == object}).to_parquet(temporary, index=False)
    if len(traces):
        with atomic_path(folder / "traces.parquet", "table") as temporary:
            traces.to_parquet(temporary, index=False)
        written.append(folder / "traces.parquet")
    return written


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, label: str, enabled: bool) -> Any:
    if not enabled or total == 0:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="run", dynamic_ncols=True)


def summary_columns(table: pd.DataFrame) -> list[str]:
    """The columns printed by ``contactopt compare``."""
    wanted = ["formulation", "solver", "dt", "status", "steps", "max_penetration", "max_cone_violation",
              "max_ncp_desaxce", "max_abs_energy_balance", *momentum.COLUMNS[:2], "max_constraint_error",
              "time_per_step", "status_counts", "error"]
    return [c for c in wanted if c in table.columns]


def iter_labels(table: pd.DataFrame) -> Iterable[str]:
    for _, row in table.iterrows():
        yield f"{row['formulation']} / {row['solver']} / dt={row['dt']:g}"
