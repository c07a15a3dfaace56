"""Coordinates grouped into figure panels by the kind of quantity they are: one panel per unit
(positions in m, angles in rad, quaternion components, velocities in m/s, angular velocities
in rad/s), never two units on one axis, and at most :data:`MAX_SERIES` curves per panel (more
become small multiples: panels of the same kind, split between bodies where names say which
body a coordinate belongs to, ``box.x`` -> ``box``).

Velocity curves follow the integrator: a time-stepping scheme's velocity ``v_{i+1}`` is the one
held over the step ``[t_i, t_{i+1}]`` (semi-implicit Euler, ``q_{i+1} = q_i + h v_{i+1}``;
Tedrake 2022, "Time-stepping LCP"), so it is drawn as a staircase whose risers are the jumps
(``drawstyle="steps-pre"``); a continuous-time method's samples are joined by lines, broken at
each recorded impact (``StepRecord.impacts``) so that the jump from ``v-`` to ``v+`` is
vertical, never a ramp across the impact time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import Trajectory
from contactopt.systems.units import unit_of_name

FloatArray = NDArray[np.float64]

__all__ = ["CONTINUOUS_METHODS", "MAX_SERIES", "Panel", "coordinate_panels", "units_of", "velocity_curve"]

#: Most curves drawn in one panel; more become small multiples.
MAX_SERIES = 6
#: Methods whose states are samples of a continuous-time solution (not a time-stepping scheme).
CONTINUOUS_METHODS = ("ode", "variational", "compliant", "hybrid")
_KINDS = {"m": "position", "rad": "angle", "1": "quaternion component", "m/s": "velocity",
          "rad/s": "angular velocity"}


@dataclass(frozen=True)
class Panel:
    """One panel: its y label (kind and unit) and the coordinates it shows."""

    label: str
    unit: str
    indices: tuple[int, ...]


def units_of(traj: Trajectory, velocities: bool) -> tuple[list[str], list[str]]:
    """(names, units) of ``traj``'s coordinates (``velocities``: of ``v``) from the run's
    ``info`` (``q_units``, written by :func:`contactopt.simulation.simulate` from the system's
    :meth:`~contactopt.systems.base.System.coordinate_units`), else read from the names."""
    values = traj.v if velocities else traj.q
    prefix = "v" if velocities else "q"
    names = list(traj.info.get(f"{prefix}_names") or [f"{prefix}[{i}]" for i in range(values.shape[1])])
    units = list(traj.info.get(f"{prefix}_units") or [unit_of_name(n) for n in names])
    if len(units) != len(names):
        units = [unit_of_name(n) for n in names]
    return names, units


def _label(unit: str) -> str:
    if not unit:
        return "coordinate [unit not stated]"
    return f"{_KINDS.get(unit, 'coordinate')} [{unit}]"


def coordinate_panels(names: Sequence[str], units: Sequence[str], max_series: int = MAX_SERIES) -> list[Panel]:
    """Panels of the coordinates ``names`` with ``units``: one kind (unit) per panel in the order
    kinds first appear, each with at most ``max_series`` coordinates; a kind with more is split
    between panels by body (the name before the last ``.``), whole bodies kept together where
    they fit."""
    by_unit: dict[str, list[int]] = {}
    for i, unit in enumerate(units):
        by_unit.setdefault(unit, []).append(i)
    panels: list[Panel] = []
    for unit, indices in by_unit.items():
        blocks: dict[str, list[int]] = {}
        for i in indices:
            body = names[i].rsplit(".", 1)[0] if "." in names[i] else names[i]
            blocks.setdefault(body, []).append(i)
        current: list[int] = []
        for block in blocks.values():
            if current and len(current) + len(block) > max_series:
                panels.append(Panel(_label(unit), unit, tuple(current)))
                current = []
            for start in range(0, len(block), max_series):
                piece = block[start:start + max_series]
                if len(current) + len(piece) > max_series:
                    panels.append(Panel(_label(unit), unit, tuple(current)))
                    current = []
                current += piece
        if current:
            panels.append(Panel(_label(unit), unit, tuple(current)))
    return panels


def velocity_curve(traj: Trajectory, index: int) -> tuple[FloatArray, FloatArray, str]:
    """(t, v, drawstyle) of velocity ``index`` as drawn (module docstring): the samples with
    ``steps-pre`` for a time-stepping run; for a continuous-time one the samples plus, at each
    recorded impact, the points ``(t_impact, v-)``, a NaN break and ``(t_impact, v+)``."""
    t = np.asarray(traj.t, dtype=np.float64)
    v = np.asarray(traj.v[:, index], dtype=np.float64)
    if str(traj.info.get("formulation", "")) not in CONTINUOUS_METHODS:
        return t, v, "steps-pre"
    impacts = [impact for impact in traj.all_impacts() if index < impact.v_pre.shape[0]]
    if not impacts:
        return t, v, "default"
    times, values = list(t), list(v)
    extra_t = [x for impact in impacts for x in (impact.t, impact.t, impact.t)]
    extra_v = [x for impact in impacts for x in (impact.v_pre[index], np.nan, impact.v_post[index])]
    # order by time; at one instant keep (v-, NaN, v+) in that order, after a sample at the same time
    keys = [(x, 0, 0) for x in times] + [(x, 1, k) for k, x in enumerate(extra_t)]
    order = sorted(range(len(keys)), key=lambda j: keys[j])
    all_t, all_v = np.array(times + extra_t), np.array(values + extra_v)
    return all_t[order], all_v[order], "default"
