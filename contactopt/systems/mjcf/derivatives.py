"""The step matrix of MuJoCo's integrators: ``M - h D``, ``D`` the velocity derivative of the
smooth forces as the model's integrator takes it (MuJoCo documentation, "Computation:
Numerical integration", and ``mj_implicit``/``mj_Euler`` of its API reference).

* ``Euler``: ``D = -diag(dof_damping)`` (joint damping only; nothing when no dof is damped or
  the ``eulerdamp`` disable flag is set);
* ``implicitfast``: ``D = qDeriv`` as ``mjd_smooth_vel`` gives it without the RNE (Coriolis)
  term: ``mjd_passive_vel`` (dof and tendon damping, fluid forces) plus ``mjd_actuator_vel``
  (the ``kv`` and bias terms of position/velocity/general actuators, on joints and tendons),
  on MuJoCo's dof-dof sparsity pattern (``D_rownnz/D_rowadr/D_colind``, the dofs related by
  ancestry). MuJoCo gathers its *lower triangle* into the mass matrix's storage and factors
  that symmetric matrix, so the step matrix here is the lower triangle mirrored. A tendon
  coupling two dofs of different branches (a tendon from one finger to another) is outside
  the pattern: MuJoCo drops that cross term, and so does this module;
* ``implicit``: the full, nonsymmetric ``D`` with the RNE derivative (MuJoCo factors
  ``M - h D`` by LU);
* ``RK4``: no step matrix (explicit).

``qDeriv`` is MuJoCo's own: ``mujoco.mj_implicit`` (the only binding that fills
``MjData.qDeriv``; ``mjd_smooth_vel`` is not exposed) runs on the evaluated data, whose state
is restored afterwards (:func:`smooth_velocity_derivative`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import SPARSE_FROM_NV
from contactopt.core.errors import ContactoptError, ContactoptWarning
from contactopt.model.step import Dynamics, to_dense

FloatArray = NDArray[np.float64]
#: ``D``: dense below :data:`~contactopt.core.arrays.SPARSE_FROM_NV` dofs, CSR from there on.
Derivative = FloatArray | sp.csr_matrix

#: The integrators by MuJoCo's enum name, as reported in messages and records.
INTEGRATOR_NAMES = {"mjINT_EULER": "Euler", "mjINT_RK4": "RK4", "mjINT_IMPLICIT": "implicit",
                    "mjINT_IMPLICITFAST": "implicitfast"}

#: What ``mj_implicit`` changes besides its outputs (``qDeriv`` and the factor ``qH``/``qLU``):
#: the solve's ``qacc`` and ``mj_advance``'s state; saved and restored around the call.
ADVANCED_FIELDS = ("qpos", "qvel", "act", "qacc", "qacc_warmstart", "time")


class StepMatrixError(ContactoptError):
    """A step matrix ``M - h D`` that no convex program can take (not positive definite)."""


class NonsymmetricStepWarning(ContactoptWarning):
    """MuJoCo's ``implicit`` integrator factors a nonsymmetric ``M - h D``; the convex
    formulations take its symmetric part (``regularized -o params=model`` takes it exactly)."""


def integrator_name(mujoco: Any, model: Any) -> str:
    """``"Euler"``, ``"RK4"``, ``"implicit"`` or ``"implicitfast"``: the model's ``opt.integrator``."""
    kind = int(model.opt.integrator)
    for enum, name in INTEGRATOR_NAMES.items():
        if hasattr(mujoco.mjtIntegrator, enum) and kind == int(getattr(mujoco.mjtIntegrator, enum)):
            return name
    return str(kind)


def euler_damping(mujoco: Any, model: Any) -> FloatArray | None:
    """``dof_damping`` where MuJoCo's Euler integrator makes it implicit, else ``None``."""
    damping = np.asarray(model.dof_damping, dtype=np.float64)
    eulerdamp_off = int(model.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    return None if eulerdamp_off or not np.any(damping > 0) else damping


def smooth_velocity_derivative(mujoco: Any, model: Any, data: Any) -> Derivative:
    """MuJoCo's ``qDeriv`` (``nv x nv`` on its dof-dof pattern) at the state of ``data``, which
    ``mj_fwdPosition``, ``mj_fwdVelocity`` and ``mj_fwdActuation`` have evaluated. It runs
    ``mj_implicit`` on ``data`` itself (no second position pass: collision detection is the
    costly part) and restores what that call advances (:data:`ADVANCED_FIELDS`), so ``data``
    reads as before. The model's integrator decides what is in ``qDeriv``: ``implicit``
    includes the RNE derivative, ``implicitfast`` does not."""
    saved = {name: np.array(getattr(data, name)) for name in ADVANCED_FIELDS}
    try:
        mujoco.mj_implicit(model, data)
    finally:
        for name, value in saved.items():
            if name == "time":
                data.time = float(value)
            else:
                getattr(data, name)[:] = value
    nv = int(model.nv)
    rownnz = np.asarray(model.D_rownnz, dtype=np.int_)
    rowadr = np.asarray(model.D_rowadr, dtype=np.int_)
    starts = np.repeat(rowadr - (np.cumsum(rownnz) - rownnz), rownnz)
    entries = starts + np.arange(int(rownnz.sum()))
    rows = np.repeat(np.arange(nv), rownnz)
    cols = np.asarray(model.D_colind, dtype=np.int_)[entries]
    values = np.asarray(data.qDeriv, dtype=np.float64)[entries]
    if nv >= SPARSE_FROM_NV:
        return sp.csr_matrix((values, (rows, cols)), shape=(nv, nv))
    dense = np.zeros((nv, nv))
    dense[rows, cols] = values
    return dense


def velocity_derivative(mujoco: Any, model: Any, data: Any) -> Derivative | None:
    """``D`` of the module docstring for the model's integrator (``None``: the step is plain
    ``M``). ``implicitfast``: the lower triangle of ``qDeriv`` mirrored (symmetric);
    ``implicit``: ``qDeriv`` itself (nonsymmetric in general)."""
    name = integrator_name(mujoco, model)
    if name == "Euler":
        damping = euler_damping(mujoco, model)
        if damping is None:
            return None
        return sp.diags(-damping, format="csr") if damping.shape[0] >= SPARSE_FROM_NV else np.diag(-damping)
    if name not in ("implicit", "implicitfast"):
        return None
    derivative = smooth_velocity_derivative(mujoco, model, data)
    if name == "implicitfast":
        if sp.issparse(derivative):
            return (sp.tril(derivative, format="csr") + sp.tril(derivative, k=-1, format="csr").T).tocsr()
        return np.tril(derivative) + np.tril(derivative, k=-1).T
    return derivative


def step_matrix(mujoco: Any, model: Any, data: Any, M: FloatArray, dt: float) -> FloatArray:
    """Dense ``M - dt D``: exactly the matrix MuJoCo's integrator factors (``implicit``: not symmetric)."""
    derivative = velocity_derivative(mujoco, model, data)
    return M if derivative is None else M - dt * to_dense(derivative)


def antisymmetric_part(derivative: Derivative) -> float:
    """``max |D - D^T| / 2`` relative to ``max |D|`` (0 for a symmetric ``D``)."""
    magnitude: Any = abs(derivative)
    scale = float(magnitude.max()) if derivative.shape[0] else 0.0
    skew: Any = abs(derivative - derivative.T)
    return float(skew.max()) / 2.0 / scale if scale > 0 else 0.0


def dissipative(derivative: Derivative) -> bool:
    """Whether the symmetric ``D`` is negative semidefinite by Gershgorin's circles (every
    ``D_ii + sum_j |D_ij| <= 0``): damping and ``kv`` terms are, so ``M - h D`` is positive
    definite without a factorization."""
    magnitude: Any = abs(derivative)
    diagonal = derivative.diagonal()
    off = np.asarray(magnitude.sum(axis=1)).reshape(-1) - np.abs(diagonal)
    return bool(np.all(diagonal + off <= 0.0))


def check_positive_definite(matrix: Any, what: str) -> None:
    """Raise :class:`StepMatrixError` unless the symmetric ``matrix`` is positive definite."""
    dense = to_dense(matrix)
    try:
        np.linalg.cholesky(dense)
    except np.linalg.LinAlgError:
        lowest = float(np.linalg.eigvalsh(dense)[0])
        raise StepMatrixError(f"{what}: the step matrix M - h D is not positive definite (smallest eigenvalue "
                              f"{lowest:.3g}: forces that grow with velocity, e.g. a negative kv or damping); "
                              "no convex program models this step: use a smaller dt or the RK4/Euler integrator"
                              ) from None


def step_dynamics(system: Any, dynamics: Dynamics, dt: float) -> Dynamics:
    """``(M - dt D, tau)`` of an :class:`~contactopt.systems.mjcf.system.MjcfSystem` at the state its
    ``data`` holds (:meth:`~contactopt.systems.mjcf.system.MjcfSystem.step_dynamics`): ``D`` of
    :func:`velocity_derivative`, its symmetric part under ``implicit`` (said once), on MuJoCo's
    sparse mass-matrix pattern with its block inverse where the system keeps ``M`` sparse.
    Positive definiteness is checked by a factorization unless ``D`` is :func:`dissipative`."""
    derivative = velocity_derivative(system.mujoco, system.model, system.data)
    if derivative is None or not (derivative.nnz if sp.issparse(derivative) else np.any(derivative)):
        return dynamics
    if integrator_name(system.mujoco, system.model) == "implicit":
        if not system.warned_implicit and antisymmetric_part(derivative) > 1e-12:
            system.warned_implicit = True
            warnings.warn(f"{system.path.name}: MuJoCo's implicit integrator factors a nonsymmetric M - h D "
                          "(Coriolis derivative); the formulations take its symmetric part, "
                          "regularized -o params=model the exact one", NonsymmetricStepWarning, stacklevel=4)
        derivative = 0.5 * (derivative + derivative.T)
    layout = system.mass_layout
    if layout is not None and dynamics.is_sparse and layout.holds(derivative):  # on M's pattern, block inverse
        values = layout.values_of(dynamics.M) + layout.values_of(-dt * derivative)
        step: Any = layout.matrix(values)
        inverse = layout.inverse(values)
    else:
        step = dynamics.M - dt * (sp.csc_matrix(derivative) if dynamics.is_sparse else to_dense(derivative))
        inverse = None
    if not dissipative(derivative):
        check_positive_definite(step, system.path.name)
    return Dynamics(M=step, tau=dynamics.tau, inverse_matrix=inverse)


def nonpotential_force(system: Any, q: ArrayLike, v: ArrayLike) -> FloatArray:
    """``qfrc_actuator + qfrc_applied + qfrc_passive - qfrc_spring`` at ``(q, v)`` with the held
    control (``MjcfSystem.nonpotential_force``, :mod:`contactopt.analysis.energy`): every force of
    ``tau`` but the bias (gravity, whose potential ``mj_energyPos`` holds, and Coriolis) and the
    springs (their potential is in ``mj_energyPos`` too): actuators, dampers, gravity
    compensation, fluid forces, applied forces."""
    data = system._evaluate(q, v)
    return np.array(data.qfrc_actuator + data.qfrc_applied + data.qfrc_passive - data.qfrc_spring)
