"""FCLIB export: the local frictional contact problem of every step, one FCLIB file per step.

``folder/fclib/<scene>/step_000012.hdf5``: one file per step with at least one active contact,
each holding ONE problem at the root in FCLIB's local-problem layout (Acary, Brémond, Huber,
Pérignon et al., "FCLIB: a collection of discrete 3D frictional contact problems", 2014; the
layout ``fclib_write_local`` / ``fclib_read_local`` of ``fclib.c`` write and read, described in
:mod:`contactopt.programs.fclib`), as the files of the public FCLIB collection are::

    /fclib_local/spacedim          int32 (1,)       2 or 3 (rows per contact)
    /fclib_local/W/{nzmax,m,n,nz}  int32 (1,)       CSC: nz = -1, m = n = spacedim nc
    /fclib_local/W/{p,i,x}         int32, int32, float64: column pointers, row indices, values
    /fclib_local/vectors/q, mu     float64 (m,), (nc,)
    /fclib_local/V, R, vectors/s   only with bilateral rows (FCLIB's mixed local problem)
    /fclib_local/info/{title,description,math_info}   strings
    /contactopt/{active,phi}       which candidate contacts are in the problem (FCLIB readers
                                   ignore this group); attributes scene, step, t, dt, epsilon,
                                   formulation, convention

FCLIB defines no multi-problem file, so a run is a folder of such files (the FCLIB
collection's own shape); ``contactopt bench`` and ``co.load_program`` read them back, as they
read FCLIB files written by other tools.

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
``P`` and ``c`` are ``W`` and ``q``), which is also what ``co.load_program`` makes of the file.
FCLIB needs ``spacedim`` 2 or 3 and finite ``mu``: systems with normal-only contacts or
``mu = inf`` are skipped with a warning.

Under the ``coulomb`` formulation (:func:`write_coulomb_fclib`) each file holds that
formulation's :class:`~contactopt.programs.coulomb.CoulombProgram` unchanged (its ``W``, ``q``,
``mu``, ``dim``; :func:`~contactopt.programs.coulomb.coulomb_to_fclib`): bilateral rows already
eliminated and limit rows as frictionless contacts (:mod:`contactopt.formulations.coulomb`),
``phi / h`` capped by ``max_recovery_speed`` as simulated. ``co.load_program(file,
form="coulomb")`` reads back the same program.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.analysis.export.steps import recorded_control, step_count
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.core.outputs import atomic_path
from contactopt.formulations.common import active_contacts
from contactopt.integrators.drift import Drift
from contactopt.integrators.time_stepping import build_step_problem, split_drift_options
from contactopt.programs.fclib import FclibLocal, write_fclib_problem
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene

__all__ = ["FCLIB_CONVENTION", "FclibStep", "fclib_local_problem", "write_coulomb_fclib", "write_fclib"]

FloatArray = NDArray[np.float64]
FCLIB_CONVENTION = (
    "u = W r + q (+ De Saxce term mu ||u_T|| on the normal), C*_mu contains u_hat, perpendicular to r in "
    "C_mu; r: contact impulses [N s], u: local velocity at the end of the step, normal first per "
    "contact; W = J M^-1 J^T; q = J v_free + [phi/h, 0(, 0)] per contact (Anitescu / cone "
    "complementarity Signorini offset); with bilateral rows H v' = r_h: R = H M^-1 H^T, "
    "V = J M^-1 H^T, s = H v_free - r_h")



@dataclass(frozen=True)
class FclibStep:
    """One step's local frictional contact problem (module docstring), dense, with the
    candidate contacts it holds (``active``) and their gaps."""

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
                        epsilon: float = math.inf, drift: Drift | None = None, act: Any = None,
                        control: Any = None) -> FclibStep:
    """The FCLIB local problem of the step from ``(q, v)`` (module docstring, ``fclib``) with the
    actuator activations ``act`` (``State.act``; None: the system's initial ones) and the input
    ``control`` held over the step (None: no input)."""
    held, held_control = scene.system.activation, scene.system.control
    try:
        scene.system.set_activation(act)
        if control is not None:
            scene.system.set_control(control)
        problem = build_step_problem(scene.system, q, v, dt, t, drift=drift)
    finally:
        scene.system.set_activation(held)
        scene.system.set_control(held_control)
    limits = int(np.sum(problem.unilateral.phi <= epsilon))
    if limits or problem.friction_loss.count:
        # FCLIB's local problem has contact and bilateral rows only: dropping a limit or a
        # dry-friction row would export a different step than the one simulated.
        raise ContactoptError(f"FCLIB export: the step at t={t:g} has {limits} joint/tendon limit row(s) "
                              f"within epsilon and {problem.friction_loss.count} dry-friction row(s), which an "
                              "FCLIB local problem cannot hold (export --format npz keeps them)")
    active = active_contacts(problem.contacts, epsilon, rigid=True)
    if active.angular is not None:  # condim 4/6: its cone has 3 + m_c rows, FCLIB's has 3
        raise ContactoptError(f"FCLIB export: the step at t={t:g} has {active.angular.count} torsional/rolling "
                              "friction row(s) (condim 4/6), which an FCLIB local problem cannot hold "
                              "(export --format npz keeps them)")
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
    return FclibStep(W=W, q=local_q, mu=active.mu.copy(), spacedim=dim, active=active.index,
                      phi=active.phi.copy(), V=V, R=R, s=s)


def write_coulomb_fclib(programs: Sequence[tuple[int, float, Any]], folder: Path, scene: str,
                        dt: float, *, resume: bool = False) -> Path:
    """One FCLIB file per step with a contact or limit row, each the ``coulomb`` formulation's
    program of the step unchanged (module docstring); returns ``folder``. ``resume``: the step
    files already there are kept (complete, as every write is atomic)."""
    import h5py

    from contactopt.programs.coulomb import CoulombProgram, coulomb_to_fclib

    folder.mkdir(parents=True, exist_ok=True)
    for old in [] if resume else folder.glob("step_*.hdf5"):  # a previous export of another run
        old.unlink()
    written = 0
    for i, t, program in programs:
        assert isinstance(program, CoulombProgram)
        if not program.contacts:
            continue
        written += 1
        if resume and (folder / f"step_{i:06d}.hdf5").is_file():
            continue
        local = coulomb_to_fclib(program)
        local = FclibLocal(W=local.W, q=local.q, mu=local.mu, spacedim=local.spacedim, info={
            "title": f"contactopt {scene} step {i}",
            "description": (f"{scene}: the exact Coulomb problem of step {i} (t = {t:.9g} s, h = {dt:g} s) of the "
                            f"coulomb formulation, {program.contacts} contacts (limit rows as mu = 0 contacts, "
                            f"bilateral rows eliminated); {FCLIB_CONVENTION}"),
            "math_info": "W = J M^-1 J^T (Schur complement of the bilateral rows) symmetric positive semidefinite"})
        with atomic_path(folder / f"step_{i:06d}.hdf5", "FCLIB file") as temporary, \
                h5py.File(temporary, "w") as handle:
            write_fclib_problem(handle, local)
            extra = handle.create_group("contactopt")
            extra.attrs.update({"scene": scene, "step": i, "t": t, "dt": dt, "formulation": "coulomb",
                                "convention": FCLIB_CONVENTION})
            extra.create_dataset("active", data=np.asarray(program.metadata.get("contacts", []), dtype=np.int64))
    if not written:
        warnings.warn(f"fclib export: no step of {scene!r} has an active contact; {folder} is empty", stacklevel=3)
    return folder


def _fclib_options(options: Mapping[str, Any]) -> tuple[float, Drift]:
    drift_options, rest = split_drift_options(options)
    epsilon = rest.get("epsilon", math.inf)
    try:
        epsilon = float(math.inf if epsilon is None else epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"epsilon must be a number, got {epsilon!r}") from None
    return epsilon, Drift.from_options(drift_options, "fclib export")


def write_fclib(scene: Scene, traj: Trajectory, folder: Path, options: Mapping[str, Any],
                formulation: str = "", *, resume: bool = False) -> Path | None:
    """Write one FCLIB file per step with contacts under ``folder`` (module docstring); returns
    ``folder``, or None (with a warning) if FCLIB cannot represent the scene's contacts.
    ``resume``: the step files already there are kept (complete, as every write is atomic)."""
    import h5py

    dt = float(traj.info["dt"])
    epsilon, drift = _fclib_options(options)
    locals_: list[tuple[int, float, FclibStep]] = []
    for i in range(step_count(traj)):
        t = float(traj.t[i])
        local = fclib_local_problem(scene, traj.q[i], traj.v[i], dt, t, epsilon, drift, traj.act[i],
                                    recorded_control(traj, i))
        if local.spacedim not in (2, 3):
            warnings.warn(f"fclib export skipped: the contacts of {scene.name!r} have {local.spacedim} "
                          "row(s) per contact; FCLIB needs spacedim 2 or 3", stacklevel=3)
            return None
        if not np.all(np.isfinite(local.mu)):
            warnings.warn(f"fclib export skipped: {scene.name!r} has contacts with mu = inf, which FCLIB "
                          "cannot represent", stacklevel=3)
            return None
        if local.contacts:
            locals_.append((i, t, local))
    folder.mkdir(parents=True, exist_ok=True)
    for old in [] if resume else folder.glob("step_*.hdf5"):  # a previous export of another run
        old.unlink()
    for i, t, local in locals_:
        if resume and (folder / f"step_{i:06d}.hdf5").is_file():
            continue
        info = {"title": f"contactopt {scene.name} step {i}",
                "description": (f"{scene.name}: local problem of step {i} (t = {t:.9g} s, h = {dt:g} s), "
                                f"{local.contacts} active contacts; {FCLIB_CONVENTION}"),
                "math_info": "W = J M^-1 J^T symmetric positive semidefinite"}
        problem = FclibLocal(W=sp.csc_matrix(local.W), q=local.q, mu=local.mu, spacedim=local.spacedim,
                             V=None if local.V is None else sp.csc_matrix(local.V),
                             R=None if local.R is None else sp.csc_matrix(local.R), s=local.s, info=info)
        with atomic_path(folder / f"step_{i:06d}.hdf5", "FCLIB file") as temporary, \
                h5py.File(temporary, "w") as handle:
            write_fclib_problem(handle, problem)
            extra = handle.create_group("contactopt")
            extra.attrs.update({"scene": scene.name, "step": i, "t": t, "dt": dt, "epsilon": epsilon,
                                "formulation": formulation, "convention": FCLIB_CONVENTION})
            extra.create_dataset("active", data=local.active.astype(np.int64))
            extra.create_dataset("phi", data=local.phi)
    if not locals_:
        warnings.warn(f"fclib export: no step of {scene.name!r} has an active contact; {folder} is empty",
                      stacklevel=3)
    return folder
