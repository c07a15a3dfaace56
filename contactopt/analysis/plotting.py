"""The figure of one trajectory (a :class:`matplotlib.figure.Figure` built without pyplot: the
backend of a running notebook is never switched; a file is written only when asked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from contactopt.analysis.style import new_figure, save
from contactopt.observable_kinds import coordinate_unit
from contactopt.records import Trajectory


def _with_unit(name: str) -> str:
    unit = coordinate_unit(name)
    return f"{name} [{unit}]" if unit else name


def plot_trajectory(traj: Trajectory, path: str | Path | None = None, title: str | None = None) -> Figure:
    """Position, velocity and normal contact impulse against time; failed steps marked.
    Written to ``path`` if one is given."""
    q_names = traj.info.get("q_names") or [f"q{i}" for i in range(traj.q.shape[1])]
    v_names = traj.info.get("v_names") or [f"v{i}" for i in range(traj.v.shape[1])]
    fig = new_figure(8, 8)
    axes = fig.subplots(3, 1, sharex=True)
    for i, name in enumerate(q_names):
        axes[0].plot(traj.t, traj.q[:, i], label=_with_unit(name))
    axes[0].set_ylabel("position q")
    for i, name in enumerate(v_names):
        axes[1].plot(traj.t, traj.v[:, i], label=_with_unit(name))
    axes[1].set_ylabel("velocity v")
    step_t = np.array([record.t for record in traj.steps])
    counts = {record.impulses.shape[0] for record in traj.steps}
    if len(counts) == 1 and counts.pop() > 0:
        normal = np.stack([record.impulses[:, 0] for record in traj.steps])
        for k in range(normal.shape[1]):
            axes[2].step(step_t, normal[:, k], where="post", label=f"contact {k}")
    elif traj.steps:
        total = [np.nansum(record.impulses[:, 0]) if record.impulses.size else 0.0 for record in traj.steps]
        axes[2].step(step_t, total, where="post", label="sum over contacts")
    failed = [record.t for record in traj.steps if not record.status.usable]
    for t_fail in failed:
        for ax in axes:
            ax.axvline(t_fail, color="red", linestyle="--", linewidth=1)
    axes[2].set_ylabel("normal impulse [N·s]")
    axes[2].set_xlabel("time t [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize="small")
    info = traj.info
    fig.suptitle(title or f"{info.get('scene', '')}: {info.get('formulation', '')} / "
                 f"{info.get('solver', '')}, dt = {info.get('dt', float('nan')):g}")
    save(fig, path, dpi=120)
    return fig
