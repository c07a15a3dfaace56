"""Per-step records and the trajectory, with ``.npz`` save/load (no pickle)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.errors import ContactoptError
from contactopt.programs import Residuals, Status

FloatArray = NDArray[np.float64]

__all__ = ["StepRecord", "Trajectory"]


@dataclass(frozen=True)
class StepRecord:
    """What happened in one step.

    Attributes:
        t: time at the start of the step.
        impulses: (nc, dim) contact impulses [N·s], normal first (NaN if the step failed).
        phi: (nc,) contact separations at the start of the step.
        status: solver outcome.
        build_time, setup_time, solve_time: seconds (formulation build; solver setup; solve).
        iterations: solver iterations.
        residuals: computed by contactopt on the step's program.
        solver: the solver that produced the answer; conversion: program conversion used.
        message: the solver's own status text or the error.
        bilateral: (nh,) impulses of the bilateral constraints over the step [N·s].
        constraint_error: max |h(q)| (position rows) and |H v - b| (velocity rows) at the
            start of the step.
    """

    t: float
    impulses: FloatArray
    phi: FloatArray
    status: Status
    build_time: float
    setup_time: float
    solve_time: float
    iterations: int
    residuals: Residuals
    solver: str = ""
    conversion: str | None = None
    message: str = ""
    bilateral: FloatArray = field(default_factory=lambda: np.zeros(0))
    constraint_error: float = 0.0


@dataclass
class Trajectory:
    """A simulated trajectory.

    Attributes:
        t: (N+1,) times; q: (N+1, nq); v: (N+1, nv); steps: N records (the step from
        ``t[i]`` to ``t[i+1]`` is ``steps[i]``). If a step failed, ``steps`` has one more
        record than there are transitions, the last one holding the failure.
        info: what was run (scene, system, formulation, solver, dt, options).
        message: why the run stopped early, or "" if it completed.
    """

    t: FloatArray
    q: FloatArray
    v: FloatArray
    steps: list[StepRecord] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def completed(self) -> bool:
        return self.message == ""

    @property
    def dt(self) -> float:
        return float(self.info.get("dt", np.nan))

    def impulses(self) -> FloatArray:
        """(N, nc, dim) impulses when every step has the same number of contacts."""
        shapes = {record.impulses.shape for record in self.steps}
        if len(shapes) > 1:
            raise ContactoptError("the number of contacts varies between steps; use steps[i].impulses")
        if not self.steps:
            return np.zeros((0, 0, 0))
        return np.stack([record.impulses for record in self.steps])

    def forces(self) -> FloatArray:
        """(N, nc, dim) average contact forces over each step, impulses / dt [N]."""
        return self.impulses() / self.dt

    def constraint_errors(self) -> FloatArray:
        """(N,) constraint violation at the start of each step (see StepRecord)."""
        return np.array([record.constraint_error for record in self.steps])

    def status_counts(self) -> dict[str, int]:
        return dict(Counter(str(record.status) for record in self.steps))

    def summary(self) -> dict[str, Any]:
        """Numbers a person looks at first."""
        phis = [record.phi.min() for record in self.steps if record.phi.size]
        worst = [record.residuals.worst for record in self.steps]
        return {
            "steps": len(self.steps),
            "t_final": float(self.t[-1]) if self.t.size else 0.0,
            "min_phi": float(min(phis)) if phis else float("nan"),
            "max_residual": float(np.nanmax(worst)) if worst else float("nan"),
            "build_time": float(sum(r.build_time for r in self.steps)),
            "solve_time": float(sum(r.setup_time + r.solve_time for r in self.steps)),
            "iterations": int(sum(r.iterations for r in self.steps)),
            "status": self.status_counts(),
            "completed": self.completed,
        }

    # --- persistence -------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write to ``path`` (``.npz``): arrays plus a JSON header, loadable without pickle."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(path.suffix + ".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        counts = np.array([record.phi.shape[0] for record in self.steps], dtype=np.int64)
        dims = {record.impulses.shape[1] for record in self.steps if record.impulses.ndim == 2}
        dim = dims.pop() if len(dims) == 1 else 1
        header = {"format": "contactopt-trajectory", "version": 1, "info": self.info,
                  "message": self.message, "impulse_dim": dim}
        steps = self.steps
        arrays: dict[str, Any] = {
            "t": self.t, "q": self.q, "v": self.v,
            "step_t": np.array([r.t for r in steps]),
            "contact_counts": counts,
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
                                    r.residuals.complementarity] for r in steps]).reshape(-1, 4),
            "bilateral_counts": np.array([r.bilateral.shape[0] for r in steps], dtype=np.int64),
            "bilateral": (np.concatenate([r.bilateral for r in steps]) if steps else np.zeros(0)),
            "constraint_error": np.array([r.constraint_error for r in steps]),
            "header": np.array(json.dumps(header, default=_json_default)),
        }
        np.savez_compressed(path, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as a:
                header = json.loads(str(a["header"]))
                if header.get("format") != "contactopt-trajectory":
                    raise ContactoptError(f"{path}: not a contactopt trajectory file")
                dim = int(header["impulse_dim"])
                offsets = np.concatenate([[0], np.cumsum(a["contact_counts"])])
                b_offsets = np.concatenate([[0], np.cumsum(a["bilateral_counts"])])
                steps = []
                for i in range(a["step_t"].shape[0]):
                    lo, hi = int(offsets[i]), int(offsets[i + 1])
                    b_lo, b_hi = int(b_offsets[i]), int(b_offsets[i + 1])
                    steps.append(StepRecord(
                        t=float(a["step_t"][i]), impulses=a["impulses"][lo:hi].reshape(hi - lo, dim),
                        phi=a["phi"][lo:hi], status=Status(str(a["status"][i])),
                        build_time=float(a["build_time"][i]), setup_time=float(a["setup_time"][i]),
                        solve_time=float(a["solve_time"][i]), iterations=int(a["iterations"][i]),
                        residuals=Residuals(*map(float, a["residuals"][i])),
                        solver=str(a["solver"][i]), conversion=str(a["conversion"][i]) or None,
                        message=str(a["message"][i]), bilateral=a["bilateral"][b_lo:b_hi],
                        constraint_error=float(a["constraint_error"][i])))
                return cls(t=a["t"], q=a["q"], v=a["v"], steps=steps, info=header["info"],
                           message=header["message"])
        except (OSError, KeyError, ValueError) as exc:
            raise ContactoptError(f"{path}: cannot read trajectory: {exc}") from exc


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)
