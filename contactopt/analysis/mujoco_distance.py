"""The distance of every run of a comparison to MuJoCo's own (the ``mujoco`` row of an MJCF or
URDF scene, ``mj_step`` on the unmodified model): ``dist_mujoco``, the largest ``|q - q_mujoco|``
over the coordinates and the steps both runs recorded, and ``dist_mujoco_t``, the time the
distance first exceeds :data:`TOLERANCE` (NaN where it never does). Runs are compared with the
``mujoco`` run of the same ``dt`` (the same time grid); the ``mujoco`` row itself has 0. A table
without a ``mujoco`` row, or without recorded states, is left as it is."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The distance (in the coordinates' own units: m, rad) past which a run has left MuJoCo's.
TOLERANCE = 1e-3

COLUMNS = ("dist_mujoco", "dist_mujoco_t")


def add_distance_to_mujoco(table: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """``table`` with :data:`COLUMNS` (module docstring) where it has a ``mujoco`` row."""
    if not len(table) or not len(traces) or "formulation" not in table or not (table["formulation"] == "mujoco").any():
        return table
    q_columns = [column for column in traces.columns if str(column).startswith("q[")]
    if not q_columns or "step" not in traces:
        return table
    out = table.copy()
    out["dist_mujoco"] = np.nan
    out["dist_mujoco_t"] = np.nan
    for dt, reference_row in table[table["formulation"] == "mujoco"].groupby("dt").head(1).set_index("dt").iterrows():
        reference = _states(traces, "mujoco", str(reference_row["solver"]), float(dt), q_columns)
        if reference is None:
            continue
        for index, row in table[np.isclose(table["dt"].astype(float), float(dt))].iterrows():
            states = _states(traces, str(row["formulation"]), str(row["solver"]), float(dt), q_columns)
            if states is None:
                continue
            common = states.index.intersection(reference.index)
            if not len(common):
                continue
            gap = np.abs(states.loc[common, q_columns].to_numpy() - reference.loc[common, q_columns].to_numpy())
            per_step = gap.max(axis=1)
            out.loc[index, "dist_mujoco"] = float(per_step.max())
            past = np.flatnonzero(per_step > TOLERANCE)
            if past.size:
                out.loc[index, "dist_mujoco_t"] = float(states.loc[common[past[0]], "t"])
    return out


def _states(traces: pd.DataFrame, formulation: str, solver: str, dt: float,
            q_columns: list[str]) -> pd.DataFrame | None:
    """One run's recorded ``t`` and ``q`` by step (the trace rows of its cell)."""
    mask = (traces["formulation"] == formulation) & (traces["solver"] == solver) & np.isclose(traces["dt"], dt)
    rows = traces.loc[mask, ["step", "t", *q_columns]]
    if not len(rows):
        return None
    return rows.drop_duplicates("step").set_index("step")
