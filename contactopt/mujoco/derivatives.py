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
``MjData.qDeriv``; ``mjd_smooth_vel`` is not exposed) runs on a scratch ``MjData`` holding the
state, so the system's evaluated data is left as it was.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.errors import ContactoptError, ContactoptWarning
from contactopt.model import Dynamics

FloatArray = NDArray[np.float64]

#: The integrators by MuJoCo's enum name, as reported in messages and records.
INTEGRATOR_NAMES = {"mjINT_EULER": "Euler", "mjINT_RK4": "RK4", "mjINT_IMPLICIT": "implicit",
                    "mjINT_IMPLICITFAST": "implicitfast"}


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


def smooth_velocity_derivative(mujoco: Any, model: Any, data: Any, scratch: Any) -> sp.csr_matrix:
    """MuJoCo's ``qDeriv`` (``nv x nv`` CSR on its dof-dof pattern) at the state of ``data``
    (positions, velocities, controls and activations), computed by ``mj_implicit`` on
    ``scratch`` (a ``MjData`` of ``model``). The model's integrator decides what is in it:
    ``implicit`` includes the RNE derivative, ``implicitfast`` does not."""
    for name in ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat"):
        getattr(scratch, name)[:] = getattr(data, name)
    mujoco.mj_fwdPosition(model, scratch)  # moments, tendon Jacobians, M
    mujoco.mj_fwdVelocity(model, scratch)  # velocities of com frames, tendons and actuators
    mujoco.mj_fwdActuation(model, scratch)
    mujoco.mj_implicit(model, scratch)  # fills qDeriv (and advances the scratch state: unused)
    nv = int(model.nv)
    rownnz = np.asarray(model.D_rownnz, dtype=np.int_)
    rowadr = np.asarray(model.D_rowadr, dtype=np.int_)
    entries = np.repeat(rowadr, rownnz) + np.arange(int(rownnz.sum())) - np.repeat(np.cumsum(rownnz) - rownnz,
                                                                                    rownnz)
    rows = np.repeat(np.arange(nv), rownnz)
    cols = np.asarray(model.D_colind, dtype=np.int_)[entries]
    return sp.csr_matrix((np.asarray(scratch.qDeriv)[entries], (rows, cols)), shape=(nv, nv))


def velocity_derivative(mujoco: Any, model: Any, data: Any, scratch: Any) -> sp.csr_matrix | None:
    """``D`` of the module docstring for the model's integrator (``None``: the step is plain
    ``M``). ``implicitfast``: the lower triangle of ``qDeriv`` mirrored (symmetric);
    ``implicit``: ``qDeriv`` itself (nonsymmetric in general)."""
    name = integrator_name(mujoco, model)
    if name == "Euler":
        damping = euler_damping(mujoco, model)
        return None if damping is None else sp.diags(-damping, format="csr")
    if name not in ("implicit", "implicitfast"):
        return None
    derivative = smooth_velocity_derivative(mujoco, model, data, scratch)
    if name == "implicitfast":
        lower = sp.tril(derivative, format="csr")
        return (lower + sp.tril(derivative, k=-1, format="csr").T).tocsr()
    return derivative


def step_matrix(mujoco: Any, model: Any, data: Any, scratch: Any, M: FloatArray, dt: float) -> FloatArray:
    """Dense ``M - dt D``: exactly the matrix MuJoCo's integrator factors (``implicit``: not symmetric)."""
    derivative = velocity_derivative(mujoco, model, data, scratch)
    return M if derivative is None else M - dt * derivative.toarray()


def antisymmetric_part(derivative: sp.csr_matrix) -> float:
    """``max |D - D^T| / 2`` relative to ``max |D|`` (0 for a symmetric ``D``)."""
    if derivative.nnz == 0:
        return 0.0
    scale = float(abs(derivative).max())
    return float(abs(derivative - derivative.T).max()) / 2.0 / scale if scale > 0 else 0.0


def formulation_derivative(derivative: sp.csr_matrix) -> sp.csr_matrix:
    """What the formulations' step takes of ``D``: its symmetric part (their programs need a
    symmetric positive definite step matrix; equal to ``D`` except under ``implicit``)."""
    return (0.5 * (derivative + derivative.T)).tocsr()


def check_positive_definite(matrix: Any, what: str) -> None:
    """Raise :class:`StepMatrixError` unless the symmetric ``matrix`` is positive definite."""
    dense = matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)
    try:
        np.linalg.cholesky(dense)
    except np.linalg.LinAlgError:
        lowest = float(np.linalg.eigvalsh(dense)[0])
        raise StepMatrixError(f"{what}: the step matrix M - h D is not positive definite (smallest eigenvalue "
                              f"{lowest:.3g}: forces that grow with velocity, e.g. a negative kv or damping); "
                              "no convex program models this step: use a smaller dt or the RK4/Euler integrator"
                              ) from None


def step_dynamics(system: Any, dynamics: Dynamics, dt: float) -> Dynamics:
    """``(M - dt D, tau)`` of an :class:`~contactopt.mujoco.system.MjcfSystem` at the state its
    ``data`` holds (:meth:`~contactopt.mujoco.system.MjcfSystem.step_dynamics`): ``D`` of
    :func:`velocity_derivative`, its symmetric part under ``implicit`` (said once), on MuJoCo's
    sparse mass-matrix pattern with its block inverse where the system keeps ``M`` sparse."""
    derivative = velocity_derivative(system.mujoco, system.model, system.data, system.derivative_scratch())
    if derivative is None or derivative.nnz == 0:
        return dynamics
    if integrator_name(system.mujoco, system.model) == "implicit":
        if not system.warned_implicit and antisymmetric_part(derivative) > 1e-12:
            system.warned_implicit = True
            warnings.warn(f"{system.path.name}: MuJoCo's implicit integrator factors a nonsymmetric M - h D "
                          "(Coriolis derivative); the formulations take its symmetric part, "
                          "regularized -o params=model the exact one", NonsymmetricStepWarning, stacklevel=4)
        derivative = formulation_derivative(derivative)
    layout = system.mass_layout
    if layout is not None and dynamics.is_sparse:  # M - h D and its sparse inverse on M's pattern
        values = layout.values_of(dynamics.M) + layout.values_of(-dt * derivative)
        sparse_step = layout.matrix(values)
        check_positive_definite(sparse_step, system.path.name)
        return Dynamics(M=sparse_step, tau=dynamics.tau, inverse_matrix=layout.inverse(values))
    step = dynamics.M - dt * (derivative.tocsc() if dynamics.is_sparse else derivative.toarray())
    check_positive_definite(step, system.path.name)
    return Dynamics(M=step, tau=dynamics.tau)
