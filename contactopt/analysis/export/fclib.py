"""FCLIB export: the local frictional contact problem of every step, in one HDF5 file.

``folder/fclib/<scene>.hdf5``: ONE HDF5 file holding the *local* frictional contact problem
of every step with at least one active contact, each in FCLIB's local-problem layout
(Acary, Brémond, Koziara, Pérignon, "FCLIB: a collection of discrete 3D frictional contact
problems", 2014; ``fclib.h``/``fclib.c`` of the FCLIB project) under its own group::

    /step_000012/fclib_local/spacedim        int32 (1,)       2 or 3 (rows per contact)
    /step_000012/fclib_local/W/{nzmax,m,n,nz} int32 (1,)      CSC: nz = -1, m = n = spacedim nc
    /step_000012/fclib_local/W/p             int32 (n+1,)     column pointers
    /step_000012/fclib_local/W/i             int32 (nzmax,)   row indices
    /step_000012/fclib_local/W/x             float64 (nzmax,) values
    /step_000012/fclib_local/vectors/q       float64 (m,)
    /step_000012/fclib_local/vectors/mu      float64 (nc,)
    /step_000012/fclib_local/V, R            (only with bilateral rows) same matrix layout
    /step_000012/fclib_local/vectors/s       (only with bilateral rows) float64 (p,)
    /step_000012/fclib_local/info/{title,description,math_info}   strings
    /step_000012/contactopt/{active,phi}     which candidate contacts are in the problem
    /index/{step,t,contacts}                 one entry per exported step
    /  attributes: format, scene, dt, spacedim, epsilon, convention, steps_skipped

FCLIB tools read one problem per file at ``/fclib_local``; one step is made a standalone
FCLIB file by copying its group (``h5copy -i run.hdf5 -o step.hdf5 -s
/step_000012/fclib_local -d /fclib_local`` or :func:`extract_fclib_step`).

The problem is FCLIB's ``u = W r + q (+ De Saxcé term), C*_mu ∋ û ⟂ r ∈ C_mu`` with ``r``
the contact **impulses** (N·s) and ``u`` the local velocity at the end of the step, both
normal first per contact (``[n, t1, t2]`` / ``[n, t]``)::

    W = J M^{-1} J^T                 (J the active contacts' frame rows, normal first)
    q = J v_free + [phi_c / h, 0, 0] per contact,     v_free = v + h M^{-1} tau

so that ``u = J v' + [phi/h, 0, 0]`` with ``v' = v_free + M^{-1} J^T r`` and ``u_n =
(phi + h n v') / h``: the Signorini condition is imposed on the predicted gap ``phi(q')/h``,
not on ``n v'`` alone. That offset is the choice of Anitescu's relaxation and of the cone
complementarity problem (formulations ``anitescu``, ``ccp``); without it (``q = J v_free``)
a resting contact with a small gap would be treated as closed. ``W`` is written in CSC
(``nz = -1``) with every entry of the dense product ``J M^{-1} J^T`` that is not exactly zero
(small scenes are therefore dense stored as sparse). Bilateral rows ``H v' = r_h`` (the
driver's velocity target) make it FCLIB's mixed local problem with ``R = H M^{-1} H^T``,
``V = J M^{-1} H^T``, ``s = H v_free - r_h`` (``V^T r + R lambda + s = 0``). Only contacts with
``phi <= epsilon`` enter (the formulation's ``epsilon`` option; default: every candidate).
The ``ccp`` dual program of the same step is exactly ``min 1/2 r'Wr + q'r, r in C_mu`` (its
``P`` and ``c`` are ``W`` and ``q``). FCLIB needs ``spacedim`` 2 or 3 and finite ``mu``:
systems with normal-only contacts or ``mu = inf`` are skipped with a warning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.analysis.export.steps import step_count
from contactopt.errors import ContactoptError, OptionError
from contactopt.formulations.common import active_contacts
from contactopt.integrators.drift import Drift
from contactopt.integrators.time_stepping import build_step_problem, split_drift_options
from contactopt.records import Trajectory
from contactopt.scenes import Scene

__all__ = ["FCLIB_CONVENTION", "FclibLocal", "extract_fclib_step", "fclib_local_problem", "write_fclib"]

FloatArray = NDArray[np.float64]
FCLIB_CONVENTION = (
    "u = W r + q (+ De Saxce term mu ||u_T|| on the normal), C*_mu contains u_hat, perpendicular to r in "
    "C_mu; r: contact impulses [N s], u: local velocity at the end of the step, normal first per "
    "contact; W = J M^-1 J^T; q = J v_free + [phi/h, 0(, 0)] per contact (Anitescu / cone "
    "complementarity Signorini offset); with bilateral rows H v' = r_h: R = H M^-1 H^T, "
    "V = J M^-1 H^T, s = H v_free - r_h")



@dataclass(frozen=True)
class FclibLocal:
    """One step's local frictional contact problem (module docstring, ``fclib``)."""

    W: FloatArray
    q: FloatArray
    mu: FloatArray
    spacedim: int
    active: NDArray[np.int_]
    phi: FloatArray
    V: FloatArray | None = None
    R: FloatArray | None = None
    s: FloatArray | None = None

    @property
    def contacts(self) -> int:
        return int(self.mu.shape[0])


def fclib_local_problem(scene: Scene, q: Any, v: Any, dt: float, t: float = 0.0,
                        epsilon: float = math.inf, drift: Drift | None = None) -> FclibLocal:
    """The FCLIB local problem of the step from ``(q, v)`` (module docstring, ``fclib``)."""
    problem = build_step_problem(scene.system, q, v, dt, t, drift=drift)
    limits = int(np.sum(problem.unilateral.phi <= epsilon))
    if limits or problem.friction_loss.count:
        # FCLIB's local problem has contact and bilateral rows only: dropping a limit or a
        # dry-friction row would export a different step than the one simulated.
        raise ContactoptError(f"FCLIB export: the step at t={t:g} has {limits} joint/tendon limit row(s) "
                              f"within epsilon and {problem.friction_loss.count} dry-friction row(s), which an "
                              "FCLIB local problem cannot hold (export --format npz keeps them)")
    active = active_contacts(problem.contacts, epsilon)
    dim = problem.contacts.dim
    J = active.J
    dynamics = problem.dynamics
    W = J @ dynamics.solve_M(J.T) if J.shape[0] else np.zeros((0, 0))
    W = 0.5 * (W + W.T)
    offset = np.zeros(J.shape[0])
    offset[::dim] = active.phi / dt
    local_q = J @ problem.v_free + offset
    V = R = s = None
    H = problem.bilateral.H
    if H.shape[0]:
        R = H @ dynamics.solve_M(H.T)
        R = 0.5 * (R + R.T)
        V = J @ dynamics.solve_M(H.T)
        s = H @ problem.v_free - problem.bilateral_target
    return FclibLocal(W=W, q=local_q, mu=active.mu.copy(), spacedim=dim, active=active.index,
                      phi=active.phi.copy(), V=V, R=R, s=s)


def _write_int(group: Any, name: str, value: int) -> None:
    group.create_dataset(name, data=np.array([value], dtype=np.int32))


def _write_string(group: Any, name: str, text: str) -> None:
    group.create_dataset(name, data=np.bytes_(text.encode("ascii", "replace")))


def _write_fclib_matrix(group: Any, matrix: FloatArray) -> None:
    """FCLIB's ``fclib_matrix`` in compressed columns (``nz = -1``)."""
    csc = sp.csc_matrix(matrix)
    csc.sort_indices()
    m, n = matrix.shape
    for name, value in (("nzmax", csc.nnz), ("m", m), ("n", n), ("nz", -1)):
        _write_int(group, name, int(value))
    group.create_dataset("p", data=csc.indptr.astype(np.int32))
    group.create_dataset("i", data=csc.indices.astype(np.int32))
    group.create_dataset("x", data=csc.data.astype(np.float64))


def _fclib_options(options: Mapping[str, Any]) -> tuple[float, Drift]:
    drift_options, rest = split_drift_options(options)
    epsilon = rest.get("epsilon", math.inf)
    try:
        epsilon = float(math.inf if epsilon is None else epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"epsilon must be a number, got {epsilon!r}") from None
    return epsilon, Drift.from_options(drift_options, "fclib export")


def write_fclib(scene: Scene, traj: Trajectory, path: Path, options: Mapping[str, Any],
                formulation: str = "") -> Path | None:
    """Write the run's local problems to one HDF5 file (module docstring); None if skipped."""
    import h5py

    dt = float(traj.info["dt"])
    epsilon, drift = _fclib_options(options)
    locals_: list[tuple[int, float, FclibLocal]] = []
    skipped = 0
    for i in range(step_count(traj)):
        t = float(traj.t[i])
        local = fclib_local_problem(scene, traj.q[i], traj.v[i], dt, t, epsilon, drift)
        if local.spacedim not in (2, 3):
            warnings.warn(f"fclib export skipped: the contacts of {scene.name!r} have {local.spacedim} "
                          "row(s) per contact; FCLIB needs spacedim 2 or 3", stacklevel=3)
            return None
        if not np.all(np.isfinite(local.mu)):
            warnings.warn(f"fclib export skipped: {scene.name!r} has contacts with mu = inf, which FCLIB "
                          "cannot represent", stacklevel=3)
            return None
        if local.contacts == 0:
            skipped += 1
            continue
        locals_.append((i, t, local))
    path.parent.mkdir(parents=True, exist_ok=True)
    spacedim = locals_[0][2].spacedim if locals_ else 0
    with h5py.File(path, "w") as handle:
        handle.attrs.update({
            "format": "contactopt-fclib-run", "scene": scene.name, "dt": dt, "spacedim": spacedim,
            "epsilon": epsilon, "convention": FCLIB_CONVENTION, "formulation": formulation,
            "steps_skipped_without_contacts": skipped,
        })
        index = handle.create_group("index")
        index.create_dataset("step", data=np.array([i for i, _, _ in locals_], dtype=np.int64))
        index.create_dataset("t", data=np.array([t for _, t, _ in locals_], dtype=np.float64))
        index.create_dataset("contacts", data=np.array([loc.contacts for _, _, loc in locals_],
                                                       dtype=np.int64))
        for i, t, local in locals_:
            step = handle.create_group(f"step_{i:06d}")
            root = step.create_group("fclib_local")
            _write_int(root, "spacedim", local.spacedim)
            _write_fclib_matrix(root.create_group("W"), local.W)
            vectors = root.create_group("vectors")
            vectors.create_dataset("q", data=local.q)
            vectors.create_dataset("mu", data=local.mu)
            if local.V is not None and local.R is not None and local.s is not None:
                _write_fclib_matrix(root.create_group("V"), local.V)
                _write_fclib_matrix(root.create_group("R"), local.R)
                vectors.create_dataset("s", data=local.s)
            info = root.create_group("info")
            _write_string(info, "title", f"contactopt {scene.name} step {i}")
            _write_string(info, "description",
                          f"{scene.name}: local problem of step {i} (t = {t:.9g} s, h = {dt:g} s), "
                          f"{local.contacts} active contacts; {FCLIB_CONVENTION}")
            _write_string(info, "math_info", "W = J M^-1 J^T symmetric positive semidefinite")
            extra = step.create_group("contactopt")
            extra.create_dataset("active", data=local.active.astype(np.int64))
            extra.create_dataset("phi", data=local.phi)
    return path


def extract_fclib_step(path: str | Path, step: int, out: str | Path) -> Path:
    """Copy step ``step`` of a run file into a standalone FCLIB file (``/fclib_local`` at root)."""
    import h5py

    out = Path(out)
    with h5py.File(path, "r") as source:
        name = f"step_{step:06d}"
        if name not in source:
            raise ContactoptError(f"{path}: no local problem for step {step} (steps without active "
                                  "contacts are not written)")
        with h5py.File(out, "w") as target:
            source.copy(source[f"{name}/fclib_local"], target, name="fclib_local")
    return out
