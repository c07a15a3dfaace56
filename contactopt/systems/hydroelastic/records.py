"""Per contact surface, per step of a run: its area, total force, centre of pressure and
moment, from the recorded states and row impulses (Elandt et al. 2019, "A pressure field model
for fast, robust approximation of net contact force and moment between nominally rigid
objects", section III.C: the net force and moment are integrals over the surface, here sums
over its quadrature points).

For a step that starts at ``q`` the rows are those of ``system.contacts(q)``; the surface's
rows are its quadrature points ``c_i`` with frame ``F_i = [n_i; t1_i; t2_i]`` (``n_i = n``
on a plane section) and impulse ``lambda_i``, so the force on the soft body is
``f_i = F_i^T lambda_i / h`` and

* ``force = sum f_i`` (N, world frame);
* ``centre_of_pressure = sum (f_i . n_i) c_i / sum (f_i . n_i)`` (the point of the surface
  where the normal forces' resultant acts);
* ``moment = sum (c_i - cop) x f_i`` (N m, about the centre of pressure: the normal forces
  give none there, so it is the friction's; its ``n`` component is the torsional moment
  that point contact cannot carry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import Trajectory

FloatArray = NDArray[np.float64]

__all__ = ["SURFACE_COLUMNS", "SurfaceRecord", "surface_records", "surface_rows"]


@dataclass(frozen=True)
class SurfaceRecord:
    """One surface at one step (module docstring): ``body`` the soft body's name (``soft|rigid``
    against a rigid box's face), ``t`` the
    step's start, ``area`` (m^2), ``force`` (3,) N, ``centre_of_pressure`` (3,) m, ``moment``
    (3,) N m about it, ``normal`` (3,) the surface's normal, ``rows`` its quadrature points."""

    body: str
    t: float
    area: float
    force: FloatArray
    centre_of_pressure: FloatArray
    moment: FloatArray
    normal: FloatArray
    rows: int


def surface_records(system: Any, trajectory: Trajectory) -> list[list[SurfaceRecord]]:
    """Per step of ``trajectory`` (a run of ``system``, a hydroelastic ``rigid3d``), the
    records of its surfaces in body order; a failed step (NaN impulses) gives NaN forces."""
    hydro = getattr(system, "hydro", None)
    if hydro is None or not hydro.active:
        raise ValueError("surface_records: the system has no hydroelastic contact surfaces "
                         "(a rigid3d scene with [contact] model = \"hydroelastic\")")
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"surface_records: expected a Trajectory, got {type(trajectory).__name__}")
    dt = float(trajectory.info.get("dt", np.nan)) if trajectory.info else np.nan
    out: list[list[SurfaceRecord]] = []
    for k, step in enumerate(trajectory.steps):
        q = trajectory.q[k]
        h = dt if np.isfinite(dt) else float(trajectory.t[k + 1] - trajectory.t[k])
        positions, rotations = system._split(q)
        patch = hydro.rows(positions, rotations, system.plane)
        count = sum(rows.count for _, rows in patch)
        impulses = np.asarray(step.impulses, dtype=np.float64)
        start = impulses.shape[0] - count
        if start < 0:
            raise ValueError(f"surface_records: step {k} has {impulses.shape[0]} impulses, fewer than its "
                             f"{count} patch rows; is this a run of this system?")
        records = []
        for surface, rows in patch:
            lam = impulses[start:start + rows.count]
            forces = np.einsum("kj,kjd->kd", lam, rows.frames) / h  # F_i^T lambda_i per row
            start += rows.count
            normal = lam[:, 0] / h  # along each row's own normal n_i
            total = float(normal.sum())
            cop = (normal @ rows.points / total) if total != 0 else surface.centre_of_pressure
            moment = np.cross(rows.points - cop, forces).sum(axis=0)
            rigid = "" if surface.rigid < 0 else f"|{system.bodies[surface.rigid].name}"
            name = system.bodies[surface.soft].name + rigid
            records.append(SurfaceRecord(body=name, t=float(step.t), area=surface.area,
                                         force=forces.sum(axis=0), centre_of_pressure=np.asarray(cop),
                                         moment=moment, normal=surface.normal, rows=rows.count))
        out.append(records)
    return out


#: The columns of :func:`surface_rows` (``contactopt run`` writes them to ``surfaces.csv``).
SURFACE_COLUMNS: tuple[str, ...] = ("step", "t", "body", "area", "force_x", "force_y", "force_z", "centre_x",
                                    "centre_y", "centre_z", "moment_x", "moment_y", "moment_z", "rows")


def surface_rows(system: Any, trajectory: Trajectory) -> list[tuple[Any, ...]]:
    """:func:`surface_records` flattened, one tuple per surface per step, in
    :data:`SURFACE_COLUMNS` order (SI units: m^2, N, m, N m)."""
    out: list[tuple[Any, ...]] = []
    for k, records in enumerate(surface_records(system, trajectory)):
        for r in records:
            out.append((k, r.t, r.body, r.area, *map(float, r.force), *map(float, r.centre_of_pressure),
                        *map(float, r.moment), r.rows))
    return out
