"""Re-solve MuJoCo's own constraint problem of a step with contactopt (issue: "MuJoCo
reproduction"): MuJoCo's constraint Jacobian ``efc_J``, regularization ``efc_R``, reference
acceleration ``efc_aref`` and unconstrained acceleration ``qacc_smooth`` go into
:func:`contactopt.formulations.regularized.constraint_program`; the cone of each row block
follows ``efc_type``:

* pyramidal contact edges, limits, friction-less rows: ``f >= 0`` (Nonneg);
* equality rows: free (no cone row);
* elliptic contacts (``condim`` rows ``[n, t1, ...]``): ``||f_t|| <= mu f_n`` with
  ``mu = contact.friction[0]``, i.e. ``[mu f_n, f_t] in SOC``.

``efc_force = lambda / h`` at the solution is MuJoCo's ``efc_force`` (same problem; MuJoCo
solves its primal with Newton's method, contactopt the dual with any conic solver).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.errors import ContactoptError
from contactopt.formulations.regularized import constraint_program
from contactopt.mujoco import compat
from contactopt.programs import SOC, Cone, ConicProgram, Nonneg, Solution
from contactopt.solvers import solve

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Reproduction:
    """MuJoCo's forces, contactopt's re-solve of the same problem, and their difference."""

    program: ConicProgram
    solution: Solution
    mujoco_force: FloatArray
    force: FloatArray

    @property
    def relative_error(self) -> float:
        scale = max(float(np.linalg.norm(self.mujoco_force)), 1e-300)
        return float(np.linalg.norm(self.force - self.mujoco_force) / scale)


def program_from_mujoco(model: Any, data: Any) -> ConicProgram:
    """The constraint problem MuJoCo solved at the current ``data`` (after ``mj_forward``)."""
    mujoco = compat.load()
    nefc = int(data.nefc)
    J = compat.constraint_jacobian(model, data)
    M = compat.full_mass_matrix(mujoco, model, data)
    kinds = mujoco.mjtConstraint
    scale = np.ones(nefc)  # A = -diag(scale) on the rows that carry a cone
    in_cone = np.ones(nefc, dtype=bool)
    cones: list[Cone] = []
    row = 0
    while row < nefc:
        kind = int(data.efc_type[row])
        if kind == int(kinds.mjCNSTR_EQUALITY):
            in_cone[row] = False  # free multiplier: no cone row
            row += 1
            continue
        if kind == int(kinds.mjCNSTR_CONTACT_ELLIPTIC):
            contact = data.contact[int(data.efc_id[row])]
            dim = int(contact.dim)
            scale[row] = float(contact.friction[0])  # [mu f_n, f_t] in SOC
            cones.append(SOC(dim))
            row += dim
            continue
        if kind in (int(kinds.mjCNSTR_FRICTION_DOF), int(kinds.mjCNSTR_FRICTION_TENDON)):
            raise ContactoptError("MuJoCo frictionloss rows (box-constrained) are not reproduced")
        cones.append(Nonneg(1))  # limits, pyramidal edges, frictionless contacts
        row += 1
    columns = np.flatnonzero(in_cone)
    A = sp.csc_matrix((-scale[columns], (np.arange(columns.size), columns)), shape=(columns.size, nefc))
    merged = _merge_nonneg(cones)

    def inverse(rhs: FloatArray) -> FloatArray:  # MuJoCo's sparse factorization of this state's M
        rows = np.ascontiguousarray(rhs.reshape(model.nv, -1).T)
        out = np.zeros_like(rows)
        mujoco.mj_solveM(model, data, out, rows)
        return out.T.reshape(rhs.shape)

    return constraint_program(M, np.array(data.qvel), np.array(data.qacc_smooth), float(model.opt.timestep), J,
                              np.array(data.efc_R), np.array(data.efc_aref), merged, A, inverse=inverse)


def _merge_nonneg(cones: list[Cone]) -> tuple[Cone, ...]:
    merged: list[Cone] = []
    for cone in cones:
        if merged and cone.kind == "nonneg" and merged[-1].kind == "nonneg":
            merged[-1] = Nonneg(merged[-1].dim + cone.dim)
        else:
            merged.append(cone)
    return tuple(merged)


def reproduce(model: Any, data: Any, solver: str = "clarabel", **options: Any) -> Reproduction:
    """Re-solve the constraint problem of ``data`` and compare with MuJoCo's ``efc_force``."""
    program = program_from_mujoco(model, data)
    solution = solve(program, solver, options)
    if not solution.status.usable:
        raise ContactoptError(f"re-solve of MuJoCo's constraint problem failed: {solution.status}")
    h = float(model.opt.timestep)
    return Reproduction(program=program, solution=solution, mujoco_force=np.array(data.efc_force),
                        force=solution.x / h)
