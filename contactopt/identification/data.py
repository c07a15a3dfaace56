"""Identification data: the samples ``(q, v, vdot)`` and the generalized force ``F`` each
needs, from a simulated :class:`~contactopt.records.trajectory.Trajectory` or from recorded
arrays (Tedrake 2020, "Parameter Estimation", "Least-squares estimation": stack one
regressor per sample, ``W alpha = F``).

* A ``Trajectory``: the time-stepping scheme's own discrete equation (docs/architecture.md,
  "Time stepping", semi-implicit Euler): ``M(q_k) (v_{k+1} - v_k) = h tau(q_k, v_k, u_k) +
  J(q_k)^T lambda_k + H(q_k)^T Lambda_k``, i.e. sample ``k`` is ``(q_k, v_k, vdot_k = (v_{k+1} -
  v_k) / h)`` and ``F_k = B u_k + (J^T lambda_k + H^T Lambda_k) / h`` with the control, contact
  and bilateral impulses of ``steps[k]``. MJCF models with MuJoCo's Euler integrator damp at
  ``v_{k+1}`` (the step matrix ``M + h diag(damping)``, :mod:`contactopt.systems.mjcf.derivatives`),
  and the regressor's damping columns do too.
* A mapping of arrays ``t`` (N,), ``q`` (N, nq), ``v`` (N, nv) and ``u`` (N, nu) (optionally
  ``vdot`` (N, nv)): recorded data. Without ``vdot`` the accelerations are the stated filter
  ``numpy.gradient(v, t)`` (second-order central differences inside, one-sided at the ends);
  ``F = B u`` (``qfrc_actuator`` of an MJCF model). The energy method needs no ``vdot``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import to_dense
from contactopt.identification.lumped import IdentificationError, _is_mjcf
from contactopt.model.step import as_vector
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["Samples", "applied_force", "samples"]


@dataclass(frozen=True)
class Samples:
    """Per sample ``k``: ``t[k]``, ``q[k]``, ``v[k]``, ``vdot[k]``, the force ``F[k]`` the motion
    needs, ``v_damper[k]`` (the velocity dampers act at) and ``power[k] = F_k . v_k``
    integrated by the energy method; ``discrete``: from a trajectory's step equation."""

    t: FloatArray
    q: FloatArray
    v: FloatArray
    vdot: FloatArray
    F: FloatArray
    v_damper: FloatArray
    discrete: bool
    v_end: FloatArray  # (N, nv): v_{k+1} of a trajectory's step k; v itself for recorded data

    def __len__(self) -> int:
        return int(self.t.shape[0])


def _array(data: Mapping[str, Any], key: str, shape: tuple[int, ...], function: str) -> FloatArray:
    if key not in data:
        raise IdentificationError(f"{function}: data has no {key!r} (expected keys t, q, v, u)")
    arr = np.asarray(data[key], dtype=np.float64)
    if arr.ndim == 1 and len(shape) == 2 and shape[1] == 1:
        arr = arr[:, None]
    if arr.shape != shape:
        raise IdentificationError(f"{function}: data[{key!r}] has shape {arr.shape}, expected {shape}")
    if not np.all(np.isfinite(arr)):
        raise IdentificationError(f"{function}: data[{key!r}] has non-finite entries")
    return arr


def input_matrix(system: System, q: FloatArray, v: FloatArray, u: FloatArray) -> FloatArray:
    """The generalized force of the input ``u``: ``B u`` (textbook), MuJoCo's ``qfrc_actuator``
    (MJCF, gains and biases of its actuators), ``u`` itself for a system without ``B``, zero
    for a system without inputs."""
    if system.control_size == 0:
        return np.zeros(system.nv)
    if _is_mjcf(system):
        from contactopt.identification.mjcf import mjcf_regressor

        return mjcf_regressor(system).actuator_force(q, v, u)
    B = getattr(system, "B", None)
    return np.asarray(u if B is None else B @ u, dtype=np.float64)  # no B: u is a generalized force


def applied_force(system: System, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None,
                  impulses: ArrayLike | None = None, bilateral: ArrayLike | None = None, dt: float | None = None,
                  t: float = 0.0) -> FloatArray:
    """The generalized force that :func:`~contactopt.identification.regressor` ``@ values`` equals
    over a step: ``B u`` (MJCF: ``qfrc_actuator``) plus ``(J(q)^T impulses + H(q)^T bilateral) / dt``
    for the contact impulses ``(nc, dim)`` and bilateral impulses ``(nh,)`` of a step of length
    ``dt`` (docs/architecture.md, "Time stepping"; the discrete equation of the module docstring)."""
    qv, vv = as_vector(q, "q", system.nq), as_vector(v, "v", system.nv)
    force = np.zeros(system.nv)
    if u is not None:
        force += input_matrix(system, qv, vv, as_vector(u, "u", system.control_size))
    for name, value in (("impulses", impulses), ("bilateral", bilateral)):
        if value is None:
            continue
        if dt is None or not dt > 0:
            raise IdentificationError(f"applied_force: {name} need the step length dt > 0")
        lam = np.asarray(value, dtype=np.float64).reshape(-1)
        rows = to_dense(system.contacts(qv).J if name == "impulses" else system.constraints(qv, vv, t).H)
        if rows.shape[0] != lam.size:
            raise IdentificationError(f"applied_force: {lam.size} {name} but {rows.shape[0]} rows at q")
        force += rows.T @ lam / dt
    return force


def _euler_damping(system: System) -> bool:
    if not _is_mjcf(system):
        return False
    mujoco = system.mujoco  # type: ignore[attr-defined]
    model = system.model  # type: ignore[attr-defined]
    return int(model.opt.integrator) != int(mujoco.mjtIntegrator.mjINT_RK4)


def samples(system: System, data: Any, function: str, *, accelerations: bool = True) -> Samples:
    """The :class:`Samples` of ``data`` (module docstring)."""
    nq, nv, nu = system.nq, system.nv, system.control_size
    if isinstance(data, Trajectory):
        return _from_trajectory(system, data, function)
    if not isinstance(data, Mapping):
        raise IdentificationError(f"{function}: data must be a Trajectory or a mapping of arrays t, q, v, u; "
                                  f"got {type(data).__name__}")
    t = np.asarray(data.get("t", []), dtype=np.float64).reshape(-1)
    n = t.shape[0]
    if n < 2 or not np.all(np.diff(t) > 0):
        raise IdentificationError(f"{function}: data['t'] must hold at least 2 increasing times")
    q = _array(data, "q", (n, nq), function)
    v = _array(data, "v", (n, nv), function)
    u = _array(data, "u", (n, nu), function) if nu else np.zeros((n, 0))
    if "vdot" in data:
        vdot = _array(data, "vdot", (n, nv), function)
    elif accelerations:
        vdot = np.gradient(v, t, axis=0, edge_order=2)
    else:
        vdot = np.full((n, nv), np.nan)
    F = np.array([input_matrix(system, q[k], v[k], u[k]) for k in range(n)]).reshape(n, nv)
    return Samples(t, q, v, vdot, F, v, False, v)


def _from_trajectory(system: System, traj: Trajectory, function: str) -> Samples:
    n = min(len(traj.steps), traj.t.shape[0] - 1)
    if n < 1:
        raise IdentificationError(f"{function}: the trajectory has no finished step")
    h = np.diff(traj.t[: n + 1])
    q, v, v_next = traj.q[:n], traj.v[:n], traj.v[1 : n + 1]
    vdot = (v_next - v) / h[:, None]
    F = np.zeros((n, system.nv))
    for k in range(n):
        record = traj.steps[k]
        for name in ("limits", "friction_loss", "angular_friction"):
            if np.any(np.asarray(getattr(record, name)) != 0.0):
                raise IdentificationError(f"{function}: step {k} has {name.replace('_', ' ')} impulses, which "
                                          "identification does not model")
        if system.control_size:
            u = record.control if record.control.size else np.zeros(system.control_size)
            F[k] += input_matrix(system, q[k], v[k], u)
        if record.impulses.size:
            J = to_dense(system.contacts(q[k]).J)
            if J.shape[0] != record.impulses.size:
                raise IdentificationError(f"{function}: step {k}: {record.impulses.size} contact impulses "
                                          f"but {J.shape[0]} contact rows at q_k")
            F[k] += J.T @ record.impulses.reshape(-1) / h[k]
        if record.bilateral.size:
            H = to_dense(system.constraints(q[k], v[k], float(traj.t[k])).H)
            F[k] += H.T @ record.bilateral / h[k]
    damper = v_next if _euler_damping(system) else v
    return Samples(traj.t[:n], q, v, vdot, F, damper, True, v_next)
