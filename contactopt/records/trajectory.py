"""The trajectory of a run (its per-step records: :mod:`.step`), with ``.npz`` save/load (no
pickle; the file layout: :mod:`.io`)."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import display
from contactopt.core.errors import ContactoptError
from contactopt.core.outputs import atomic_path, existing_npz, npz_path, writable_file
from contactopt.programs import Residuals, Status
from contactopt.records import io as records_io
from contactopt.records.columns import StepColumns
from contactopt.records.step import Impact, StepRecord

FloatArray = NDArray[np.float64]

__all__ = ["Impact", "StepRecord", "Trajectory"]


@dataclass
class Trajectory:
    """A simulated trajectory.

    Attributes:
        t: (N+1,) times.
        q: (N+1, nq) configurations.
        v: (N+1, nv) velocities.
        steps: N records (the step from ``t[i]`` to ``t[i+1]`` is ``steps[i]``). If a step
            failed, ``steps`` has one more record than there are transitions, the last one
            holding the failure.
        info: what was run (scene, system, formulation, solver, dt, options).
        message: why the run stopped early, or "" if it completed.
        sensitivities: per name given to ``simulate(..., sensitivities=[...])``, ``d(q, v)/d name``
            at every recorded state ((N+1, nq + nv) for a scalar, with a trailing axis for a
            vector: ``"q0"`` (nq), ``"v0"`` (nv), ``"u"`` (N, nu); :mod:`contactopt.derivatives.trajectory`).
        act: (N+1, na) the actuator activations at every state (``State.act``: MuJoCo's ``act``
            of an MJCF model with activation states; ``(N+1, 0)`` without them or when not given).
    """

    t: FloatArray
    q: FloatArray
    v: FloatArray
    steps: list[StepRecord] | StepColumns = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    sensitivities: dict[str, FloatArray] = field(default_factory=dict)
    act: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))

    def __post_init__(self) -> None:
        if np.size(self.act) == 0:  # a system without activations, or a file written before them
            self.act = np.zeros((np.shape(self.t)[0] if np.ndim(self.t) else 0, 0))

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

    def controls(self) -> FloatArray:
        """(N, nu) the input held over each step ((N, 0) without a controller)."""
        sizes = {record.control.shape[0] for record in self.steps}
        if len(sizes) > 1:
            raise ContactoptError("the number of control inputs varies between steps; use steps[i].control")
        return (np.stack([record.control for record in self.steps]) if self.steps
                else np.zeros((0, 0)))

    def constraint_errors(self) -> FloatArray:
        """(N,) constraint violation at the start of each step (see StepRecord)."""
        return np.array([record.constraint_error for record in self.steps])

    def all_impacts(self) -> list[Impact]:
        """Every recorded impulsive collision of the run, in time order."""
        return [impact for record in self.steps for impact in record.impacts]

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

    # --- notebook display and tables ----------------------------------------------------
    def __repr__(self) -> str:
        """One line: what was run, how long, and how it ended."""
        info = self.info
        span = f"t = {self.t[0]:g} .. {self.t[-1]:g} s" if self.t.size else "no states"
        ending = "completed" if self.completed else f"stopped: {self.message}"
        counts = ", ".join(f"{name}: {count}" for name, count in self.status_counts().items())
        return (f"Trajectory({info.get('scene', '?')}, {info.get('formulation', '?')} / {info.get('solver', '?')}, "
                f"dt = {self.dt:g}, {len(self.steps)} steps, {span}, {ending}" + (f"; {counts}" if counts else "")
                + ")")

    def _repr_html_(self) -> str:
        """A small table for Jupyter: the run and :meth:`summary`."""
        summary = self.summary()
        rows = {"scene": self.info.get("scene", ""), "formulation": self.info.get("formulation", ""),
                "solver": self.info.get("solver", ""), "dt [s]": f"{self.dt:g}", "steps": summary["steps"],
                "t final [s]": f"{summary['t_final']:g}",
                "ended": "completed" if self.completed else f"stopped: {self.message}",
                "statuses": ", ".join(f"{k}: {v}" for k, v in summary["status"].items()),
                "min phi [m]": f"{summary['min_phi']:.4g}", "max residual": f"{summary['max_residual']:.3g}",
                "build / solve time [s]": f"{summary['build_time']:.3g} / {summary['solve_time']:.3g}"}
        return display.html_table("Trajectory", rows)

    def to_dataframe(self) -> Any:
        """A :class:`pandas.DataFrame` with one row per state: ``t``, the coordinates and
        velocities by name (``info["q_names"]``, ``info["v_names"]``; ``q[i]``/``v[i]`` without),
        and the step that starts there: ``status``, ``n_contacts``, ``min_phi`` [m],
        ``normal_impulse`` (sum over contacts [N·s]), ``build_time``, ``solve_time`` (setup + solve)
        [s], ``iterations`` (the final state, which starts no step, has NaN/empty there)."""
        import pandas as pd

        n = self.t.shape[0]
        q_names = list(self.info.get("q_names") or [f"q[{i}]" for i in range(self.q.shape[1])])
        v_names = list(self.info.get("v_names") or [f"v[{i}]" for i in range(self.v.shape[1])])
        if set(q_names) & set(v_names):
            q_names, v_names = [f"q:{x}" for x in q_names], [f"v:{x}" for x in v_names]
        columns: dict[str, Any] = {"t": self.t}
        columns.update({name: self.q[:n, i] for i, name in enumerate(q_names)})
        columns.update({name: self.v[:n, i] for i, name in enumerate(v_names)})
        records = self.steps[:n]

        def per_step(values: list[Any], fill: Any) -> list[Any]:
            return values + [fill] * (n - len(values))

        columns["status"] = per_step([str(r.status) for r in records], "")
        columns["n_contacts"] = per_step([int(r.phi.shape[0]) for r in records], 0)
        columns["min_phi"] = per_step([float(r.phi.min()) if r.phi.size else np.nan for r in records], np.nan)
        columns["normal_impulse"] = per_step([float(np.nansum(r.impulses[:, 0])) if r.impulses.size else 0.0
                                              for r in records], np.nan)
        columns["build_time"] = per_step([r.build_time for r in records], np.nan)
        columns["solve_time"] = per_step([r.setup_time + r.solve_time for r in records], np.nan)
        columns["iterations"] = per_step([r.iterations for r in records], 0)
        return pd.DataFrame(columns)

    # --- persistence -------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write to ``path`` (``.npz``): arrays plus a JSON header, loadable without pickle.

        A ``path`` not ending in ``.npz`` gets it appended (``traj.save("run")`` writes
        ``run.npz``, and :meth:`load` of ``"run"`` finds it); the path written is returned. The
        file appears under its name only complete (:func:`~contactopt.core.outputs.atomic_path`)."""
        path = npz_path(path)
        writable_file(path, "trajectory file")
        steps = self.steps
        dims = (steps.impulse_dims() if isinstance(steps, StepColumns)
                else {record.impulses.shape[1] for record in steps if record.impulses.ndim == 2})
        dim = dims.pop() if len(dims) == 1 else 1
        header = {"format": "contactopt-trajectory", "version": 1, "info": self.info,
                  "message": self.message, "impulse_dim": dim, "sensitivities": list(self.sensitivities)}
        impacts = steps.impacts_per_step() if isinstance(steps, StepColumns) else [r.impacts for r in steps]
        arrays: dict[str, Any] = {
            "t": self.t, "q": self.q, "v": self.v, "act": self.act,
            **(steps.npz_arrays(dim) if isinstance(steps, StepColumns) else records_io.record_arrays(steps, dim)),
            **records_io.impact_arrays(impacts, self.v.shape[1] if self.v.ndim == 2 else 0),
            "header": np.array(json.dumps(header, default=records_io.json_default)),
            **{f"sensitivity_{k}": values for k, values in enumerate(self.sensitivities.values())},
        }
        with atomic_path(path, "trajectory file") as temporary:
            np.savez_compressed(temporary, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a file written by :meth:`save`; ``path`` without ``.npz`` is tried with it
        appended when no file has that name (as :meth:`save` names it)."""
        path = existing_npz(path)
        if path.exists() and not path.is_file():  # a FIFO would block the read
            raise ContactoptError(f"{path}: cannot read trajectory: not a regular file (a folder, a FIFO or a device)")
        if path.is_file():
            with path.open("rb") as handle:
                start = handle.read(4)
            if start not in (b"PK\x03\x04", b"PK\x05\x06"):  # np.load would call a text file "pickled data"
                what = "empty" if not start else "not an .npz archive"
                raise ContactoptError(f"{path}: not a trajectory file ({what}; expected the .npz written by "
                                      "Trajectory.save)")
        try:
            with np.load(path, allow_pickle=False) as archive:  # every member read once (NpzFile
                a = records_io.Arrays({key: archive[key] for key in archive.files})  # re-reads on each access)
                header = json.loads(str(a["header"]))
                if not isinstance(header, dict) or header.get("format") != "contactopt-trajectory":
                    raise ContactoptError(f"{path}: not a contactopt trajectory file")
                dim = int(header["impulse_dim"])
                offsets = np.concatenate([[0], np.cumsum(a["contact_counts"])])
                b_offsets = np.concatenate([[0], np.cumsum(a["bilateral_counts"])])
                n_steps = a["step_t"].shape[0]
                impacts = records_io.read_impacts(a, n_steps)
                substeps = a["substeps"] if "substeps" in a.files else np.zeros(n_steps, dtype=np.int64)
                refined = a["refined"] if "refined" in a.files else np.zeros(n_steps, dtype=bool)
                rows = {name: records_io.row_slices(a, name, n_steps) for name in records_io.ROW_ARRAYS}
                counts = {name: records_io.counts(a, name, n_steps) for name in records_io.COUNTS}
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
                        constraint_error=float(a["constraint_error"][i]), impacts=impacts[i],
                        substeps=int(substeps[i]), refined=bool(refined[i]), control=rows["control"][i],
                        limits=rows["limits"][i], friction_loss=rows["friction_loss"][i],
                        angular_friction=rows["angular_friction"][i],
                        **{name: int(values[i]) for name, values in counts.items()}))
                sensitivities = {str(name): a[f"sensitivity_{k}"]
                                 for k, name in enumerate(header.get("sensitivities", []))}
                trajectory = cls(t=a["t"], q=a["q"], v=a["v"], steps=steps, info=header["info"],
                                 message=header["message"], sensitivities=sensitivities,
                                 act=a["act"] if "act" in a.files else np.zeros((0, 0)))
        except ContactoptError:
            raise
        except zipfile.BadZipFile as exc:  # the end of the archive is missing
            raise ContactoptError(f"{path}: cannot read trajectory: the .npz archive is truncated or damaged "
                                  f"({exc})") from exc
        except Exception as exc:  # a damaged file in any way: one line naming it
            raise ContactoptError(f"{path}: cannot read trajectory: {type(exc).__name__}: {exc}") from exc
        records_io.check_shapes(path, trajectory)
        return trajectory
