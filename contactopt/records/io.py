"""``.npz`` storage of :class:`~contactopt.records.trajectory.Trajectory`: the flat arrays of the
per-step records (varying-length parts saved with their counts) and their reading back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.records.step import Impact, StepRecord

FloatArray = NDArray[np.float64]


def check_shapes(path: Path, traj: Any) -> None:
    """The arrays of a loaded trajectory fit together (a damaged file is refused, not half-read)."""
    n = traj.t.shape[0]
    problems = []
    if traj.t.ndim != 1:
        problems.append(f"t has shape {traj.t.shape}")
    for name, arr in (("q", traj.q), ("v", traj.v), ("act", traj.act)):
        if arr.ndim != 2 or arr.shape[0] != n:
            problems.append(f"{name} has shape {arr.shape} for {n} times")
    if len(traj.steps) not in (n - 1, n):
        problems.append(f"{len(traj.steps)} step records for {n} times")
    if problems:
        raise ContactoptError(f"{path}: cannot read trajectory: {'; '.join(problems)}")


def record_arrays(steps: Sequence[StepRecord], dim: int) -> dict[str, Any]:
    """The per-step members of a trajectory file (impacts apart: :func:`impact_arrays`), from the
    records (:meth:`~contactopt.records.columns.StepColumns.npz_arrays` reads the same from columns)."""
    return {
        "step_t": np.array([r.t for r in steps]),
        "contact_counts": np.array([r.phi.shape[0] for r in steps], dtype=np.int64),
        "impulses": (np.concatenate([r.impulses.reshape(-1, dim) for r in steps])
                     if steps else np.zeros((0, dim))),
        "phi": np.concatenate([r.phi for r in steps]) if steps else np.zeros(0),
        "status": np.array([str(r.status) for r in steps], dtype=str),
        "solver": np.array([r.solver for r in steps], dtype=str),
        "conversion": np.array([r.conversion or "" for r in steps], dtype=str),
        "message": np.array([r.message for r in steps], dtype=str),
        "build_time": np.array([r.build_time for r in steps]),
        "setup_time": np.array([r.setup_time for r in steps]),
        "solve_time": np.array([r.solve_time for r in steps]),
        "iterations": np.array([r.iterations for r in steps], dtype=np.int64),
        "residuals": np.array([[r.residuals.primal, r.residuals.dual, r.residuals.gap,
                                r.residuals.complementarity, r.residuals.relative, r.residuals.fclib]
                               for r in steps]).reshape(-1, 6),
        "bilateral_counts": np.array([r.bilateral.shape[0] for r in steps], dtype=np.int64),
        "bilateral": (np.concatenate([r.bilateral for r in steps]) if steps else np.zeros(0)),
        "constraint_error": np.array([r.constraint_error for r in steps]),
        "substeps": np.array([r.substeps for r in steps], dtype=np.int64),
        "refined": np.array([r.refined for r in steps], dtype=bool),
        **{name: np.array([getattr(r, name) for r in steps], dtype=np.int64) for name in COUNTS},
        **{f"{name}_counts": np.array([getattr(r, name).shape[0] for r in steps], dtype=np.int64)
           for name in ROW_ARRAYS},
        **{name: (np.concatenate([getattr(r, name) for r in steps]) if steps else np.zeros(0))
           for name in ROW_ARRAYS},
    }


def impact_arrays(per_step: Sequence[tuple[Impact, ...]], nv: int) -> dict[str, Any]:
    """The impacts of every step as flat arrays (``impact_*``), counts per step and per impact."""
    impacts = [impact for step in per_step for impact in step]
    dims = {impact.impulses.shape[1] for impact in impacts if impact.impulses.size}
    dim = dims.pop() if len(dims) == 1 else 1
    return {
        "impact_counts": np.array([len(step) for step in per_step], dtype=np.int64),
        "impact_t": np.array([i.t for i in impacts], dtype=np.float64),
        "impact_v_pre": np.array([i.v_pre for i in impacts], dtype=np.float64).reshape(len(impacts), nv),
        "impact_v_post": np.array([i.v_post for i in impacts], dtype=np.float64).reshape(len(impacts), nv),
        "impact_contact_counts": np.array([i.contacts.shape[0] for i in impacts], dtype=np.int64),
        "impact_contacts": (np.concatenate([i.contacts for i in impacts]) if impacts
                            else np.zeros(0, dtype=np.int64)),
        "impact_impulses": (np.concatenate([i.impulses.reshape(-1, dim) for i in impacts]) if impacts
                            else np.zeros((0, dim))),
    }


def read_impacts(a: Any, n_steps: int) -> list[tuple[Impact, ...]]:
    """The per-step impacts written by :func:`impact_arrays`; none for files without them."""
    if "impact_counts" not in a.files:
        return [() for _ in range(n_steps)]
    counts = a["impact_counts"]
    per_impact = np.concatenate([[0], np.cumsum(a["impact_contact_counts"])])
    out: list[tuple[Impact, ...]] = []
    k = 0
    for i in range(n_steps):
        items = []
        for _ in range(int(counts[i])):
            lo, hi = int(per_impact[k]), int(per_impact[k + 1])
            items.append(Impact(t=float(a["impact_t"][k]), contacts=a["impact_contacts"][lo:hi],
                                v_pre=a["impact_v_pre"][k], v_post=a["impact_v_post"][k],
                                impulses=a["impact_impulses"][lo:hi]))
            k += 1
        out.append(tuple(items))
    return out


def json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


class Arrays(dict):
    """The members of a loaded ``.npz`` archive, with the archive's ``files``."""

    @property
    def files(self) -> list[str]:
        return list(self)


#: Per-step arrays of varying length, saved flat with their counts: the control held over the
#: step and the impulses of the limit and dry-friction rows.
ROW_ARRAYS = ("control", "limits", "friction_loss", "angular_friction")


def row_slices(a: Any, name: str, n_steps: int) -> list[FloatArray]:
    """Per step, the entries of ``name`` (empty for files written before it existed)."""
    if f"{name}_counts" not in a.files:
        return [np.zeros(0) for _ in range(n_steps)]
    offsets = np.concatenate([[0], np.cumsum(a[f"{name}_counts"])]).astype(np.int64)
    return [a[name][offsets[i]:offsets[i + 1]] for i in range(n_steps)]


#: Per-step counts (one integer a step): the contact candidates and MuJoCo's own contacts.
COUNTS = ("candidates", "mujoco_contacts")


def counts(a: Any, name: str, n_steps: int) -> NDArray[np.int64]:
    """Per step, the count ``name`` (-1, "not recorded", for files written before it existed)."""
    if name not in a.files:
        return np.full(n_steps, -1, dtype=np.int64)
    return np.asarray(a[name], dtype=np.int64)
