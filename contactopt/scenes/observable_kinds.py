"""What each observable kind measures on a trajectory (the scene-file side, references and
tolerances, is :mod:`contactopt.analysis.observables`).

Every kind is a function ``(traj, settings, run) -> float`` where ``settings`` holds the
observable's keys (coordinate index, index, offset, threshold, window, expression) already
resolved to numbers, and ``run`` the run's metrics (:func:`contactopt.analysis.metrics.run_metrics`).
A quantity that the run does not show (no apex, a body that never stops) is NaN, never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import Trajectory
from contactopt.systems.units import coordinate_unit

FloatArray = NDArray[np.float64]
Measure = Callable[[Trajectory, Mapping[str, Any], Mapping[str, Any]], float]

__all__ = ["KINDS", "Kind", "coordinate_unit", "local_maxima"]


class Kind:
    """An observable kind: its measurement, the keys it takes and the unit of its value."""

    def __init__(self, measure: Measure, description: str, coordinate: str | None = None,
                 keys: frozenset[str] = frozenset(), unit: str | None = None) -> None:
        self.measure = measure
        self.description = description
        self.coordinate = coordinate  # "q", "v" or None: what ``coordinate`` names
        self.keys = keys  # optional keys besides the common ones
        self.unit = unit  # None: the coordinate's unit


def local_maxima(t: FloatArray, x: FloatArray, resolution: float | None = None) -> tuple[FloatArray, FloatArray]:
    """Times and values of the interior local maxima of a uniformly sampled ``x(t)``, each
    refined by the parabola through its sample and the two neighbours (exact for a parabolic
    flight). A maximum counts only if it rises more than ``resolution`` (default
    ``1e-9 + 1e-6 * range(x)``) above the lowest value since the previous one, so round-off
    jitter of a body at rest is not an apex."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 3:
        return np.zeros(0), np.zeros(0)
    floor = 1e-9 + 1e-6 * float(np.ptp(x)) if resolution is None else resolution
    times: list[float] = []
    values: list[float] = []
    lowest = x[0]
    for i in range(1, x.size - 1):
        lowest = min(lowest, x[i])
        if x[i] > x[i - 1] and x[i] >= x[i + 1] and x[i] - lowest > floor:
            curvature = x[i - 1] - 2.0 * x[i] + x[i + 1]
            shift = 0.5 * (x[i - 1] - x[i + 1]) / curvature if curvature < 0 else 0.0
            step = t[i + 1] - t[i]
            times.append(float(t[i] + shift * step))
            values.append(float(x[i] - 0.25 * (x[i - 1] - x[i + 1]) * shift))
            lowest = x[i]
    return np.array(times), np.array(values)


def _column(traj: Trajectory, settings: Mapping[str, Any]) -> FloatArray:
    array = traj.q if settings["space"] == "q" else traj.v
    return np.asarray(array[:, settings["index_of_coordinate"]], dtype=np.float64)


def _final(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    return float(_column(traj, settings)[-1])


def _stop_index(traj: Trajectory, settings: Mapping[str, Any]) -> int | None:
    """The state from which the body rests: ``k`` such that every velocity after it,
    ``v[k+1], v[k+2], ...``, is within ``threshold`` (semi-implicit Euler moves by ``h v[k+1]``
    over the step from ``t[k]``, so the position is constant from ``t[k]`` on; the cart of
    ``cart_wall`` that reaches the wall at t = 0.5 rests from 0.5). None if the run ends moving."""
    v = traj.v if settings.get("velocity_index") is None else traj.v[:, [settings["velocity_index"]]]
    speed = np.abs(v).max(axis=1) if v.size else np.zeros(traj.t.shape[0])
    moving = np.flatnonzero(~(speed <= settings["threshold"]))
    if moving.size == 0:
        return 0
    last = int(moving[-1])
    return last if last + 1 < speed.shape[0] else None


def _stop_time(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    stop = _stop_index(traj, settings)
    return math.nan if stop is None else float(traj.t[stop] - traj.t[0])


def _stop_distance(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    stop = _stop_index(traj, settings)
    x = _column(traj, settings)
    return math.nan if stop is None else float(x[stop] - x[0])


def _apexes(traj: Trajectory, settings: Mapping[str, Any]) -> FloatArray:
    return local_maxima(traj.t, _column(traj, settings))[1] - settings["offset"]


def _apex_height(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    apexes = _apexes(traj, settings)
    k = settings["index"]
    return float(apexes[k - 1]) if apexes.size >= k else math.nan


def _apex_ratio(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    apexes = _apexes(traj, settings)
    k = settings["index"]
    return float(apexes[k - 1] / apexes[k - 2]) if apexes.size >= k and apexes[k - 2] != 0 else math.nan


def _period(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    times = local_maxima(traj.t, _column(traj, settings))[0]
    return float(np.mean(np.diff(times))) if times.size >= 2 else math.nan


def _hover_height(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    x = _column(traj, settings)
    return float(np.max(x) - x[0])


def _contact_time(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    for record in traj.steps:
        if record.impacts:
            return float(record.impacts[0].t)
        normal = record.impulses[:, 0] if record.impulses.size else np.zeros(0)
        if normal.size and np.nanmax(normal) > settings["threshold"]:
            return float(record.t)
    return math.nan


def _steady_penetration(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    if not traj.steps:
        return math.nan
    start = traj.t[0] + (1.0 - settings["window"]) * (traj.t[-1] - traj.t[0])
    depths = [max(0.0, -float(r.phi.min())) if r.phi.size else 0.0 for r in traj.steps if r.t >= start - 1e-12]
    return float(np.mean(depths)) if depths else math.nan


def _from_run(column: str) -> Measure:
    def measure(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
        value = run.get(column, math.nan)
        return float(value) if isinstance(value, int | float) else math.nan
    return measure


def _drift(traj: Trajectory, settings: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    values = np.array([settings["function"](traj.q[k], traj.v[k], float(traj.t[k]))
                       for k in range(min(traj.q.shape[0], traj.v.shape[0]))], dtype=np.float64)
    return float(np.max(np.abs(values - values[0]))) if values.size else math.nan


_STOP = frozenset({"threshold", "velocity"})
_APEX = frozenset({"index", "offset"})

#: The observable kinds a scene may declare.
KINDS: dict[str, Kind] = {
    "final_position": Kind(_final, "the coordinate at the end of the run", "q"),
    "final_velocity": Kind(_final, "the velocity coordinate at the end of the run", "v"),
    "stop_time": Kind(_stop_time, "time from which the body rests: every later velocity (or `velocity`) "
                      "within `threshold` (default 1e-3)", None, _STOP, "s"),
    "stop_distance": Kind(_stop_distance, "the coordinate's change from the start to the stop time", "q", _STOP),
    "apex_height": Kind(_apex_height, "the `index`-th local maximum of the coordinate (parabola-refined) "
                        "minus `offset`", "q", _APEX),
    "apex_ratio": Kind(_apex_ratio, "apex `index` over apex `index - 1` (heights minus `offset`)", "q", _APEX, ""),
    "period": Kind(_period, "mean time between successive local maxima of the coordinate", "q", frozenset(), "s"),
    "hover_height": Kind(_hover_height, "highest value of the coordinate above its initial value", "q"),
    "contact_time": Kind(_contact_time, "time of the first impact, or the start of the first step with a "
                         "normal impulse above `threshold` (default 1e-12 N·s)", None,
                         frozenset({"threshold"}), "s"),
    "steady_penetration": Kind(_steady_penetration, "mean penetration over the last `window` (default 0.2) "
                               "of the run", None, frozenset({"window"}), "m"),
    "max_penetration": Kind(_from_run("max_penetration"), "largest penetration of the run", None, frozenset(), "m"),
    "constraint_error": Kind(_from_run("max_constraint_error"), "largest bilateral-constraint violation",
                             None, frozenset(), ""),
    "energy_balance": Kind(_from_run("max_abs_energy_balance"), "largest |energy balance| "
                           "(contactopt.analysis.energy)", None, frozenset(), "J"),
    "drift": Kind(_drift, "largest |f(q, v, t) - f(q0, v0, 0)| of `expression` over the run", None,
                  frozenset({"expression"}), ""),
}
