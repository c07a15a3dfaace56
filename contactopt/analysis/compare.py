"""Run one scene under many formulations, solvers and step sizes, and measure what differs.

``compare(scene, formulations, solvers, dts)`` builds the grid of *cells* (every
formulation with every solver that can take its program, at every step size), runs them
serially, on a local process pool or on Dask, and returns a tidy :class:`pandas.DataFrame`
with one row per cell: ``formulation``, ``solver``, ``dt``, ``status``
(``completed`` | ``stopped`` | ``error``), the run's metrics (:mod:`contactopt.analysis.metrics`), the
scene's observables (:mod:`contactopt.observables`: columns ``NAME``, ``NAME_ref`` and ``NAME_err``;
their units and tolerances in ``table.attrs["observables"]``; one row per cell and observable:
:func:`contactopt.analysis.observations.long_table`), the error text if any and wall time.

A formulation is named with its options as ``"name:key=value:key=value"`` (values in TOML
syntax), e.g. ``"anitescu:form=dual"``, ``"lcp:k=8"``. ``ode``, ``variational``,
``compliant``, ``hybrid`` and ``mujoco`` (MuJoCo's own solver on an MJCF scene: the reference
row) get one cell per step size, with solver ``-``.

Sweeps are resumable: with an output folder every finished cell is stored under
``cells/`` as soon as it completes, and a re-run loads it instead of recomputing it (when its
files are the ones whose hashes ``cells-index.json`` records: :mod:`~contactopt.analysis.cells`). A cell
that raises becomes a row with ``status = "error"`` (not cached, so a re-run retries it); it
never stops the sweep or loses the other rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
import tomllib
import traceback
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from contactopt import integrators, solvers
from contactopt._version import __version__
from contactopt.analysis import metrics, observations
from contactopt.analysis.cell_limits import CellTimeLimitReached, Deadline, cell_deadline
from contactopt.analysis.cells import CellStore
from contactopt.analysis.workers import execute
from contactopt.errors import ContactoptError, OptionError
from contactopt.outputs import atomic_path, output_errors, writable_folder
from contactopt.scenes import Scene
from contactopt.simulate import formulate, simulate

__all__ = ["Cell", "compare", "default_formulations", "parse_formulation", "plan", "solver_used"]

NO_SOLVER = "-"
# Methods that get one cell per step size (no solver grid): the continuous-time baselines,
# the variational integrator and MuJoCo (hybrid solves its impact programs with the scene's solver).
CONTINUOUS = ("ode", "variational", "compliant", "hybrid", "mujoco")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run of the sweep."""

    formulation: str  # the label as given, options included
    method: str  # the formulation or method name
    options: tuple[tuple[str, Any], ...]
    solver: str
    dt: float
    duration: float

    @property
    def key(self) -> str:
        return f"{self.formulation} | {self.solver} | dt={self.dt:g}"


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
        except tomllib.TOMLDecodeError:
            options[key.strip()] = raw
    return name.strip().lower(), options


def default_formulations() -> list[str]:
    """The time-stepping formulations (the other methods are opt-in, and so is a formulation
    that sets ``default_comparison = False``, e.g. ``sap``)."""
    from contactopt import formulations

    return [name for name in formulations.names()
            if getattr(formulations.get(name), "default_comparison", True)]


def plan(scene: Scene, formulations: Sequence[str] | None = None, solvers_: Sequence[str] | None = None,
         dts: Sequence[float] | None = None, duration: float | None = None) -> tuple[list[Cell], list[str]]:
    """The cells to run and, for information, the (formulation, solver) pairs skipped because
    the solver cannot take the formulation's program."""
    formulations = list(formulations or default_formulations())
    solver_names = list(solvers_ or solvers.comparison_defaults())
    step_sizes = [float(dt) for dt in (dts or [scene.dt])]
    horizon = float(scene.duration if duration is None else duration)
    for name, value in [*(("dt", dt) for dt in step_sizes), ("duration", horizon)]:
        if not (math.isfinite(value) and value > 0):
            raise OptionError(f"{name} must be a positive number, got {value}")
    cells: list[Cell] = []
    skipped: list[str] = []
    for spec in formulations:
        method, options = parse_formulation(spec)
        if method not in integrators.names():
            raise OptionError(f"unknown formulation {method!r}; known: {', '.join(integrators.names())}")
        frozen = tuple(sorted(options.items()))
        if method in CONTINUOUS:
            cells += [Cell(spec, method, frozen, NO_SOLVER, dt, horizon) for dt in step_sizes]
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                probe = formulate(scene.system, scene.q0, scene.v0, step_sizes[0], method,
                                  {**scene.options, **options})
        except ContactoptError:
            probe = None  # bad options: every cell of this formulation becomes an error row
        for solver in solver_names:
            if probe is not None and not solvers.can_take(probe, solver):
                skipped.append(f"{spec} x {solver}")
                continue
            cells += [Cell(spec, method, frozen, solver, dt, horizon) for dt in step_sizes]
    return cells, skipped


def _scene_fingerprint(scene: Scene) -> str:
    source = scene.source.read_bytes() if scene.source is not None and scene.source.exists() else b""
    description = json.dumps({"q0": scene.q0.tolist(), "v0": scene.v0.tolist(), "system": scene.system.describe(),
                              "options": dict(scene.options), "solver_options": dict(scene.solver_options)},
                             sort_keys=True, default=str).encode()
    return hashlib.sha256(source + description).hexdigest()[:16]


def cell_id(scene_fingerprint: str, cell: Cell, solver_options: Mapping[str, Any]) -> str:
    """Stable identifier of a cell's inputs (scene, method, options, solver, dt, duration)."""
    payload = json.dumps({"scene": scene_fingerprint, "cell": dataclasses.asdict(cell),
                          "solver_options": dict(solver_options), "version": __version__},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def solver_used(traj: Any) -> str:
    """The solvers a run's step records name, in order of first use (``qpsolvers:proxqp``,
    ``mujoco``, a compliant run's integrator, ``lemke+pgs`` with a fallback); empty without steps."""
    return "+".join(dict.fromkeys(str(record.solver) for record in traj.steps if record.solver))


def run_cell(scene: Scene, cell: Cell, solver_options: Mapping[str, Any],
             time_limit: float | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run one cell; never raises: an exception becomes a row with ``status = "error"``, and
    so does a run stopped by ``time_limit`` (seconds; :mod:`~contactopt.analysis.cell_limits`),
    whose row keeps the metrics and trace of its finished steps."""
    row: dict[str, Any] = {"scene": scene.name, "formulation": cell.formulation, "method": cell.method,
                           "solver": cell.solver, "dt": cell.dt, "duration": cell.duration}
    start = time.perf_counter()
    deadline = Deadline(time_limit)
    try:
        try:
            with warnings.catch_warnings(), cell_deadline(time_limit) as deadline:
                warnings.simplefilter("ignore")
                traj = simulate(scene, formulation=cell.method,
                                solver=cell.solver if cell.solver != NO_SOLVER else scene.solver,
                                dt=cell.dt, duration=cell.duration, options=dict(cell.options),
                                solver_options={**scene.solver_options, **solver_options})
        except CellTimeLimitReached:  # reached before simulate's loop (or as it returned)
            raise TimeoutError(Deadline(time_limit).reason) from None
        trace, aggregated = metrics.evaluate(scene, traj)
        row.update(aggregated)
        row["solver_used"] = solver_used(traj)
        observed, problems = observations.measure_all(scene, traj, aggregated, cell.dt, cell.duration)
        row.update(observed)
        row["status"] = "completed" if traj.completed else "stopped"
        row["message"] = "; ".join(filter(None, [traj.message, *problems]))
        row["error"] = ""
        if deadline.reached:  # a failed row, with what it computed before the limit
            row.update(status="error", message=deadline.reason, error=deadline.reason)
        states = pd.DataFrame(traj.q[: len(trace)], columns=[f"q[{i}]" for i in range(traj.q.shape[1])])
        trace = pd.concat([trace.reset_index(drop=True), states], axis=1)
    except Exception as exc:  # a failing cell is a row, never a dead sweep
        error = str(exc) if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        row.update(status="error", message="", error=error,
                   traceback="".join(traceback.format_exception(exc))[-4000:])
        trace = pd.DataFrame()
    row["wall_time"] = time.perf_counter() - start
    if len(trace):
        for position, (name, value) in enumerate((("formulation", cell.formulation), ("solver", cell.solver),
                                                  ("dt", cell.dt))):
            trace.insert(position, name, value)
    return row, trace


def compare(
    scene: Scene,
    formulations: Sequence[str] | None = None,
    solvers: Sequence[str] | None = None,
    dts: Sequence[float] | None = None,
    duration: float | None = None,
    *,
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
    """
    if executor not in ("serial", "process", "dask"):
        raise OptionError(f"executor must be 'serial', 'process' or 'dask', got {executor!r}")
    if address is not None:
        executor = "dask"
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise OptionError(f"workers must be a positive integer, got {workers!r}")
    if cell_time_limit is not None and (isinstance(cell_time_limit, bool) or not isinstance(
            cell_time_limit, (int, float)) or not (math.isfinite(cell_time_limit) and cell_time_limit > 0)):
        raise OptionError(f"cell_time_limit must be a positive number of seconds, got {cell_time_limit!r}")
    cells, skipped = plan(scene, formulations, solvers, dts, duration)
    if not cells:
        raise OptionError(f"nothing to compare: no solver given takes the program of any formulation given "
                          f"(skipped: {', '.join(skipped)})")
    extra = dict(solver_options or {})
    fingerprint = _scene_fingerprint(scene)
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
    order = [cell_id(fingerprint, cell, extra) for cell in cells]
    table = pd.DataFrame([{**rows[i], "cell": i} for i in order if i in rows])
    table = _tidy(table)
    table.attrs["skipped"] = skipped
    table.attrs["observables"] = observations.metadata(scene.observables)
    trace_table = pd.concat([traces[i] for i in order if i in traces and len(traces[i])], ignore_index=True) \
        if any(len(traces.get(i, ())) for i in order) else pd.DataFrame()
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
              "max_ncp_desaxce", "max_abs_energy_balance", "max_constraint_error", "time_per_step",
              "status_counts", "error"]
    return [c for c in wanted if c in table.columns]


def iter_labels(table: pd.DataFrame) -> Iterable[str]:
    for _, row in table.iterrows():
        yield f"{row['formulation']} / {row['solver']} / dt={row['dt']:g}"
