"""Friction and inertia together from a trajectory with contact (Tedrake 2020, "Parameter
Estimation", least squares, extended to the contact impulses the step programs record; the
friction law is Coulomb's, Tedrake 2022, "The Dynamics of Contact"/"Time-stepping LCP: Coulomb
Friction": a sliding contact's friction impulse is ``-mu lambda_n`` along its sliding direction).

The recorded normal impulses are used, the tangential ones are not (their size is what ``mu``
determines). Per step ``k`` of the scheme's discrete equation (:mod:`contactopt.identification.data`)::

    Y_k alpha = B u_k + sum_c (J_n,c^T lambda_n,c + J_t,c^T lambda_t,c) / h,
    lambda_t,c = -mu lambda_n,c d_c,   d_c = J_t,c v_{k+1} / |J_t,c v_{k+1}|   (sliding)

so ``Y_k alpha + mu g_k = B u_k + sum_c J_n,c^T lambda_n,c / h`` with ``g_k = sum_c J_t,c^T
lambda_n,c d_c / h``: one more column, ``mu``, linear like the lumped parameters. Steps where a
loaded contact (``lambda_n > 0``) slides slower than ``slip`` [m/s] (sticking: its friction is
inside the cone, not given by ``mu``) are left out; steps without a loaded contact enter as in
:func:`~contactopt.identification.estimate`. The friction direction is that of the *next*
velocity, the one the time-stepping formulations' maximum-dissipation principle opposes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.core.arrays import to_dense
from contactopt.identification.basis import DEFAULT_TOLERANCE, Basis, decompose
from contactopt.identification.data import input_matrix
from contactopt.identification.lumped import (
    IdentificationError,
    Lumped,
    _is_mjcf,
    check_system,
    lumped_parameters,
    regressor,
)
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["FrictionEstimate", "estimate_friction"]


@dataclass(frozen=True)
class FrictionEstimate:
    """Base parameters and ``mu`` from a trajectory with contact (module docstring).

    Attributes:
        values, names: the base parameters of the lumped parameters and ``"mu"`` together.
        mu: the friction coefficient (NaN if the data do not determine it).
        identifiable: the basis of the stacked columns (lumped parameters, then ``mu``).
        covariance, condition, residual: as for :class:`~contactopt.identification.Estimate`.
        sliding, free, dropped: how many steps had a sliding loaded contact, none, or a sticking one.
    """

    values: FloatArray
    names: tuple[str, ...]
    mu: float
    identifiable: Basis
    covariance: FloatArray
    condition: float
    residual: float
    sliding: int
    free: int
    dropped: int


def _true_mu(system: System) -> float:
    try:
        return float(system.parameter_values(["mu"])["mu"])
    except Exception:  # no single "mu" (an MJCF model whose geoms differ): the truth is unknown
        return float("nan")


def estimate_friction(system: System, traj: Trajectory, slip: float = 1e-6,
                      tolerance: float = DEFAULT_TOLERANCE) -> FrictionEstimate:
    """Estimate the identifiable lumped parameters and ``mu`` of ``system`` together from a
    simulated trajectory ``traj`` that makes and breaks contact, with its recorded normal
    impulses (module docstring)."""
    check_system(system, "estimate_friction")
    if not isinstance(traj, Trajectory):
        raise IdentificationError(f"estimate_friction: traj must be a Trajectory, got {type(traj).__name__}")
    if not (isinstance(slip, float | int) and slip > 0):
        raise IdentificationError(f"estimate_friction: slip must be a positive number, got {slip!r}")
    n = min(len(traj.steps), traj.t.shape[0] - 1)
    if n < 1:
        raise IdentificationError("estimate_friction: the trajectory has no finished step")
    euler = _is_mjcf(system) and int(system.model.opt.integrator) != int(  # type: ignore[attr-defined]
        system.mujoco.mjtIntegrator.mjINT_RK4)  # type: ignore[attr-defined]
    rows: list[FloatArray] = []
    rhs: list[FloatArray] = []
    sliding = free = dropped = 0
    for k in range(n):
        record = traj.steps[k]
        h = float(traj.t[k + 1] - traj.t[k])
        q, v, v_next = traj.q[k], traj.v[k], traj.v[k + 1]
        vdot = (v_next - v) / h
        force = input_matrix(system, q, v, record.control) if system.control_size else np.zeros(system.nv)
        if record.bilateral.size:
            force = force + to_dense(system.constraints(q, v, float(traj.t[k])).H).T @ record.bilateral / h
        friction = np.zeros(system.nv)
        loaded = False
        stuck = False
        if record.impulses.size:
            contacts = system.contacts(q)
            J = to_dense(contacts.J)
            dim = contacts.dim
            if J.shape[0] != record.impulses.size:
                raise IdentificationError(f"estimate_friction: step {k}: {record.impulses.size} contact impulses "
                                          f"but {J.shape[0]} contact rows at q_k")
            impulses = record.impulses.reshape(-1, dim)
            for c in range(impulses.shape[0]):
                normal = float(impulses[c, 0])
                Jn, Jt = J[c * dim], J[c * dim + 1 : (c + 1) * dim]
                force = force + Jn * normal / h
                if normal <= 0.0:
                    continue
                loaded = True
                slide = Jt @ v_next
                speed = float(np.linalg.norm(slide))
                if speed <= slip:
                    stuck = True
                    break
                friction += Jt.T @ (slide / speed) * normal / h
        if stuck:
            dropped += 1
            continue
        sliding += int(loaded)
        free += int(not loaded)
        if _is_mjcf(system):
            from contactopt.identification.mjcf import mjcf_regressor

            Y, f0 = mjcf_regressor(system).at(q, v, vdot, v_next if euler else v)
        else:
            Y, f0 = regressor(system, q, v, vdot), np.zeros(system.nv)
        rows.append(np.column_stack([Y, friction]))
        rhs.append(force - f0)
    if not rows:
        raise IdentificationError("estimate_friction: every step has a sticking contact; nothing to fit")
    lumped = lumped_parameters(system)
    augmented = Lumped((*lumped.names, "mu"), np.append(lumped.values, _true_mu(system)))
    W, b = np.concatenate(rows), np.concatenate(rhs)
    basis = decompose(augmented, W, tolerance)
    Wi = W[:, list(basis.independent)]
    theta = np.asarray(np.linalg.lstsq(Wi, b, rcond=None)[0], dtype=np.float64)
    residual = b - Wi @ theta
    dof = W.shape[0] - basis.rank
    sigma2 = float(residual @ residual / dof) if dof > 0 else float("nan")
    mu_column = len(lumped.names)
    mu = float(theta[basis.independent.index(mu_column)]) if mu_column in basis.independent and not np.any(
        basis.combination[basis.independent.index(mu_column), list(basis.dependent)]) else float("nan")
    return FrictionEstimate(values=theta, names=basis.names, mu=mu, identifiable=basis,
                            covariance=np.asarray(sigma2 * np.linalg.inv(Wi.T @ Wi), dtype=np.float64),
                            condition=basis.condition, residual=float(np.sqrt(np.mean(residual**2))),
                            sliding=sliding, free=free, dropped=dropped)
