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
``cells/`` as soon as it completes, and a re-run loads it instead of recomputing it. A cell
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactopt import integrators, solvers
from contactopt._version import __version__
from contactopt.analysis import metrics, observations
from contactopt.errors import ContactoptError, ContactoptWarning, OptionError
from contactopt.scenes import Scene
from contactopt.simulate import formulate, simulate

__all__ = ["Cell", "compare", "default_formulations", "parse_formulation", "plan"]

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


def run_cell(scene: Scene, cell: Cell, solver_options: Mapping[str, Any]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run one cell; never raises: an exception becomes a row with ``status = "error"``."""
    row: dict[str, Any] = {"scene": scene.name, "formulation": cell.formulation, "method": cell.method,
                           "solver": cell.solver, "dt": cell.dt, "duration": cell.duration}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = simulate(scene, formulation=cell.method,
                            solver=cell.solver if cell.solver != NO_SOLVER else scene.solver,
                            dt=cell.dt, duration=cell.duration, options=dict(cell.options),
                            solver_options={**scene.solver_options, **solver_options})
        trace, aggregated = metrics.evaluate(scene, traj)
        row.update(aggregated)
        observed, problems = observations.measure_all(scene, traj, aggregated, cell.dt, cell.duration)
        row.update(observed)
        row["status"] = "completed" if traj.completed else "stopped"
        row["message"] = "; ".join(filter(None, [traj.message, *problems]))
        row["error"] = ""
        states = pd.DataFrame(traj.q[: len(trace)], columns=[f"q[{i}]" for i in range(traj.q.shape[1])])
        trace = pd.concat([trace.reset_index(drop=True), states], axis=1)
    except Exception as exc:  # a failing cell is a row, never a dead sweep
        row.update(status="error", message="", error=f"{type(exc).__name__}: {exc}",
                   traceback="".join(traceback.format_exception(exc))[-4000:])
        trace = pd.DataFrame()
    row["wall_time"] = time.perf_counter() - start
    if len(trace):
        for position, (name, value) in enumerate((("formulation", cell.formulation), ("solver", cell.solver),
                                                  ("dt", cell.dt))):
            trace.insert(position, name, value)
    return row, trace


def _task(args: tuple[Scene, Cell, Mapping[str, Any]]) -> tuple[dict[str, Any], pd.DataFrame]:
    return run_cell(*args)


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
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Run the grid and return the table (and the per-step traces if ``return_traces``).

    ``solvers=None`` runs every installed solver whose spec keeps ``default_comparison``
    (all but ``cvxpy``, which re-solves the same programs through the solvers it wraps at
    10-20x their time; name it to run it).

    ``executor``: ``serial``, ``process`` (a local process pool of ``workers``) or ``dask``
    (a LocalCluster, or the scheduler at ``address``). With ``out`` the sweep is resumable
    and writes ``table.csv``, ``table.parquet`` and ``traces.parquet`` there. The table's
    ``cached`` column says which rows were loaded from a previous run.
    """
    if executor not in ("serial", "process", "dask"):
        raise OptionError(f"executor must be 'serial', 'process' or 'dask', got {executor!r}")
    if address is not None:
        executor = "dask"
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise OptionError(f"workers must be a positive integer, got {workers!r}")
    cells, skipped = plan(scene, formulations, solvers, dts, duration)
    if not cells:
        raise OptionError(f"nothing to compare: no solver given takes the program of any formulation given "
                          f"(skipped: {', '.join(skipped)})")
    extra = dict(solver_options or {})
    fingerprint = _scene_fingerprint(scene)
    folder = Path(out) if out is not None else None
    cache = folder / "cells" if folder is not None else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    traces: dict[str, pd.DataFrame] = {}
    todo: list[tuple[str, Cell]] = []
    for cell in cells:
        ident = cell_id(fingerprint, cell, extra)
        cached = _load_cell(cache, ident, cell)
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
        if cache is not None and row["status"] != "error":
            _store_cell(cache, ident, row, trace)

    bar = _bar(len(todo), f"compare {scene.name}", progress)
    try:
        _execute(executor, address, workers, scene, todo, extra, finished, bar.update)
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


def _execute(executor: str, address: str | None, workers: int | None, scene: Scene,
             todo: list[tuple[str, Cell]], extra: Mapping[str, Any],
             finished: Callable[[str, tuple[dict[str, Any], pd.DataFrame]], None],
             advance: Callable[[int], Any]) -> None:
    if not todo:
        return
    if executor == "serial":
        for ident, cell in todo:
            finished(ident, run_cell(scene, cell, extra))
            advance(1)
        return
    if executor == "process":
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_task, (scene, cell, extra)): ident for ident, cell in todo}
            for future in as_completed(futures):
                finished(futures[future], future.result())
                advance(1)
        return
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        raise ContactoptError("executor 'dask' needs dask.distributed: pip install 'contactopt[dask]'") from exc
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except OSError as exc:
            raise ContactoptError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        scene_future = client.scatter(scene, broadcast=True)
        pending = {client.submit(run_cell, scene_future, cell, dict(extra), pure=False): ident
                   for ident, cell in todo}
        for done in dask_completed(list(pending)):
            finished(pending[done], done.result())
            advance(1)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _store_cell(cache: Path, ident: str, row: Mapping[str, Any], trace: pd.DataFrame) -> None:
    (cache / f"{ident}.json").write_text(json.dumps(row, default=_json_default))
    if len(trace):
        trace.to_parquet(cache / f"{ident}.parquet")


def _load_cell(cache: Path | None, ident: str, cell: Cell) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """A stored cell, or None (recompute it): absent, or unreadable or not this cell's row (a
    half-written cell from an interrupted run, an edited file), which a warning names."""
    if cache is None or not (cache / f"{ident}.json").exists():
        return None
    path = cache / f"{ident}.json"
    try:
        row = json.loads(path.read_text())
        trace_path = cache / f"{ident}.parquet"
        trace = pd.read_parquet(trace_path) if trace_path.exists() else pd.DataFrame()
        expected = {"formulation": cell.formulation, "solver": cell.solver, "dt": cell.dt}
        if not isinstance(row, dict) or row.get("status") not in ("completed", "stopped") or any(
                row.get(key) != value for key, value in expected.items()):
            raise ValueError(f"not the row of {cell.formulation} x {cell.solver}, dt={cell.dt:g}")
    except Exception as exc:  # whatever is wrong with the file, recompute the cell
        warnings.warn(f"compare: ignoring the stored cell {path.name} ({type(exc).__name__}: {exc}); recomputing it",
                      ContactoptWarning, stacklevel=3)
        return None
    row["cell"] = ident
    return row, trace


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


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
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "table.csv", folder / "table.parquet"]
    table.to_csv(written[0], index=False)
    if table.attrs.get("observables"):
        observations.long_table(table).to_csv(folder / "observables.csv", index=False)
        written.append(folder / "observables.csv")
    table.astype({c: str for c in table.columns if table[c].dtype == object}).to_parquet(written[1], index=False)
    if len(traces):
        traces.to_parquet(folder / "traces.parquet", index=False)
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
