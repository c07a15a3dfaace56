"""One cell of a comparison (:func:`contactopt.analysis.compare.compare`): what it runs (a
formulation with its options, a solver, a step size, a duration), the identifier its stored
result is filed under, and its run, which never raises: a failure is a row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import traceback
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from contactopt._version import __version__
from contactopt.analysis import metrics, observations
from contactopt.analysis.cell_limits import CellTimeLimitReached, Deadline, cell_deadline
from contactopt.scenes.loading import Scene
from contactopt.simulation import simulate

__all__ = ["NO_SOLVER", "Cell", "cell_id", "run_cell", "scene_fingerprint", "solver_used"]

#: The solver column of a method that takes none (ode, compliant, mujoco, ...).
NO_SOLVER = "-"


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


def scene_fingerprint(scene: Scene) -> str:
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
                                solver=cell.solver if cell.solver != NO_SOLVER else None,
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
