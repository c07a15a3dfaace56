"""The figure of one trajectory (a :class:`matplotlib.figure.Figure` built without pyplot: the
backend of a running notebook is never switched; a file is written only when asked).

Layout, as a paper's figure: configuration panels on the left and velocity panels on the
right, one per kind of quantity with its unit (:mod:`contactopt.analysis.quantities`), then
full-width panels over the same time axis: the normal contact force [N] (the step's impulse
over ``dt``; the impulse [N·s] on the right-hand axis), the mechanical energy [J] (given the
system) and the bilateral constraint error (systems with bilateral constraints). Every curve
of a panel has its own (colour, line style) pair (:func:`contactopt.analysis.style.series_style`)
and the legend sits outside the panel. Failed steps are red dashed lines in every panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from contactopt.analysis.quantities import MAX_SERIES, coordinate_panels, units_of, velocity_curve
from contactopt.analysis.style import dt_text, new_figure, save, series_style
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System

__all__ = ["plot_trajectory"]

#: Most states whose energy is evaluated (evenly spaced, first and last included).
ENERGY_SAMPLES = 2000


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        right = 1.09 if ax.child_axes else 1.01  # clear of a secondary axis' labels
        ax.legend(loc="upper left", bbox_to_anchor=(right, 1.0), fontsize="x-small", frameon=False,
                  handlelength=2.6, borderaxespad=0.0)


def _contact(ax: Any, traj: Trajectory) -> None:
    """Normal force of each contact per step (their sum beyond MAX_SERIES or when the contact
    count changes), drawn over the step it acts on (``steps-post``)."""
    step_t = np.array([record.t for record in traj.steps])
    dt = traj.dt
    scale = 1.0 / dt if np.isfinite(dt) and dt > 0 else 1.0
    counts = {record.impulses.shape[0] for record in traj.steps}
    count = counts.pop() if len(counts) == 1 else -1
    if 0 < count <= MAX_SERIES:
        normal = np.stack([record.impulses[:, 0] for record in traj.steps])
        labels = [f"contact {k}" for k in range(count)]
    else:
        normal = np.array([[np.nansum(record.impulses[:, 0]) if record.impulses.size else 0.0]
                           for record in traj.steps])
        labels = ["sum over contacts"]
    end = step_t[-1] + (dt if np.isfinite(dt) and dt > 0 else 0.0)  # the last step is held to its end
    for k, label in enumerate(labels):
        ax.step(np.append(step_t, end), scale * np.append(normal[:, k], normal[-1, k]), where="post", label=label,
                **series_style(k))
    if scale != 1.0:
        ax.set_ylabel("normal force\nimpulse / dt [N]")
        impulse = ax.secondary_yaxis("right", functions=(lambda f: f * dt, lambda p: p / dt))
        impulse.set_ylabel("impulse per step [N·s]", fontsize="small")
    else:
        ax.set_ylabel("normal impulse [N·s]")


def _energy(ax: Any, traj: Trajectory, system: System) -> None:
    n = traj.q.shape[0]
    shown = np.unique(np.linspace(0, n - 1, min(n, ENERGY_SAMPLES)).round().astype(int))
    parts = np.array([system.energy(traj.q[i], traj.v[i]) for i in shown], dtype=np.float64).reshape(-1, 2)
    for k, (values, label) in enumerate(((parts[:, 0], "kinetic"), (parts[:, 1], "potential"),
                                         (parts.sum(axis=1), "total"))):
        ax.plot(traj.t[shown], values, label=label, **series_style(k))
    ax.set_ylabel("energy [J]")


def _constraints(ax: Any, traj: Trajectory) -> None:
    errors = np.abs(traj.constraint_errors())
    step_t = np.array([record.t for record in traj.steps])
    ax.step(step_t, np.maximum(errors, 1e-300), where="post", label="max |h(q)|", **series_style(0))
    ax.set_yscale("log")
    ax.set_ylabel("bilateral error\n|h(q)| [m or rad]")


def _has_bilateral(traj: Trajectory) -> bool:
    return any(record.bilateral.size for record in traj.steps) or bool(np.any(traj.constraint_errors() > 0))


def plot_trajectory(traj: Trajectory, path: str | Path | None = None, title: str | None = None, *,
                    system: System | None = None) -> Figure:
    """The figure of ``traj`` (module docstring); the energy panel needs the ``system`` the run
    was made with. Written to ``path`` if one is given."""
    q_names, q_units = units_of(traj, velocities=False)
    v_names, v_units = units_of(traj, velocities=True)
    q_panels, v_panels = coordinate_panels(q_names, q_units), coordinate_panels(v_names, v_units)
    extras = ["contact"] if any(record.impulses.size for record in traj.steps) else []
    extras += ["energy"] if system is not None and traj.q.shape[0] else []
    extras += ["constraints"] if traj.steps and _has_bilateral(traj) else []
    rows = max(len(q_panels), len(v_panels), 1)
    fig = new_figure(11, 1.9 * (rows + len(extras)) + 0.8)
    grid = fig.add_gridspec(rows + len(extras), 2)
    first: Any = None

    def axes_at(row: int, column: slice | int) -> Any:
        nonlocal first
        ax = fig.add_subplot(grid[row, column], sharex=first)
        first = first or ax
        ax.grid(True, alpha=0.3)
        return ax

    columns: list[list[Any]] = [[], []]
    for column, (group, names, values) in enumerate(((q_panels, q_names, traj.q), (v_panels, v_names, traj.v))):
        for row, panel in enumerate(group):
            ax = axes_at(row, column)
            for k, i in enumerate(panel.indices):
                if column == 0:
                    ax.plot(traj.t, values[:, i], label=names[i], **series_style(k))
                else:
                    t, v, drawstyle = velocity_curve(traj, i)
                    ax.plot(t, v, label=names[i], drawstyle=drawstyle, **series_style(k))
            ax.set_ylabel(panel.label)
            columns[column].append(ax)
    panels = columns[0] + columns[1]
    for row, extra in enumerate(extras, start=rows):
        ax = axes_at(row, slice(None))
        if extra == "contact":
            _contact(ax, traj)
        elif extra == "energy":
            assert system is not None
            _energy(ax, traj, system)
        else:
            _constraints(ax, traj)
        panels.append(ax)
    for t_fail in (record.t for record in traj.steps if not record.status.usable):
        for ax in panels:
            ax.axvline(t_fail, color="red", linestyle="--", linewidth=1, label="failed step")
    for ax in panels:
        _legend(ax)
    for ax in panels[-1:] if extras else [axes[-1] for axes in columns if axes]:
        ax.set_xlabel("time t [s]")
    info = traj.info
    fig.suptitle(title or f"{info.get('scene', '')}: {info.get('formulation', '')} / "
                 f"{info.get('solver', '')}, {dt_text(traj.dt)}")
    save(fig, path, dpi=120)
    return fig
