"""MuJoCo's own constraint problem of a step as a contactopt program: the program of
``regularized -o params=model`` and of :func:`contactopt.analysis.reproduce.reproduce`. MuJoCo's
constraint Jacobian ``efc_J``, regularization ``efc_R``, reference
acceleration ``efc_aref`` and unconstrained acceleration ``qacc_smooth`` go into
:func:`constraint_program`; the cone of each row block
follows ``efc_type``:

* pyramidal contact edges, limits, friction-less rows: ``f >= 0`` (Nonneg);
* equality rows: free (no cone row);
* elliptic contacts (``condim`` rows ``[n, t1, ...]``, torsional and rolling rows included):
  MuJoCo's cone ``f_n >= ||(f_i / mu_i)_i||`` with the contact's ``friction`` per row, written
  ``[mu_1 f_n, (mu_1 / mu_i) f_i] in SOC`` (for ``condim = 3``: ``[mu f_n, f_t]``);
* dry friction (``frictionloss`` of a dof or a tendon): the box ``|f| <= frictionloss``, two
  ``Nonneg`` rows ``+-x <= h frictionloss``.

``efc_force = lambda / h`` at the solution is MuJoCo's ``efc_force`` (same problem; MuJoCo
solves its primal with Newton's method, contactopt the dual with any conic solver).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.model.delassus import delassus
from contactopt.model.step import Dynamics, is_sparse
from contactopt.programs import SOC, Block, Cone, ConicProgram, Nonneg
from contactopt.programs.csc import mark_symmetric
from contactopt.systems.mjcf import compat

FloatArray = NDArray[np.float64]


def program_from_mujoco(model: Any, data: Any) -> ConicProgram:
    """The constraint problem MuJoCo solved at the current ``data`` (after ``mj_forward``)."""
    mujoco = compat.load()
    nefc = int(data.nefc)
    J = compat.constraint_jacobian(model, data)
    M = compat.full_mass_matrix(mujoco, model, data)
    h = float(model.opt.timestep)
    A, b, cones = cone_rows(mujoco, data, h)

    def inverse(rhs: FloatArray) -> FloatArray:  # MuJoCo's sparse factorization of this state's M
        rows = np.ascontiguousarray(rhs.reshape(model.nv, -1).T)
        out = np.zeros_like(rows)
        mujoco.mj_solveM(model, data, out, rows)
        return out.T.reshape(rhs.shape)

    return constraint_program(M, np.array(data.qvel), np.array(data.qacc_smooth), h, J,
                              np.array(data.efc_R)[:nefc], np.array(data.efc_aref)[:nefc], cones, A,
                              inverse=inverse, cone_offset=b)


def cone_rows(mujoco: Any, data: Any, h: float) -> tuple[sp.csc_matrix, FloatArray, tuple[Cone, ...]]:
    """``(A, b, cones)`` with ``A x + s = b, s in cones`` iff the impulses ``x`` of MuJoCo's rows
    lie in its constraint set (module docstring); ``h`` scales the dry-friction boxes."""
    nefc = int(data.nefc)
    kinds = mujoco.mjtConstraint
    efc_type = np.asarray(data.efc_type)[:nefc]
    efc_id = np.asarray(data.efc_id)[:nefc]
    friction = (efc_type == int(kinds.mjCNSTR_FRICTION_DOF)) | (efc_type == int(kinds.mjCNSTR_FRICTION_TENDON))
    elliptic = efc_type == int(kinds.mjCNSTR_CONTACT_ELLIPTIC)
    coned = np.flatnonzero(~friction & (efc_type != int(kinds.mjCNSTR_EQUALITY)))  # one cone row each, in order
    coefficient = -np.ones(coned.size)
    cones: list[Cone] = []
    if elliptic.any():
        # MuJoCo's elliptic cone f_n >= ||(f_i / mu_i)_i||, written [mu_1 f_n, (mu_1 / mu_i) f_i] in SOC
        on = elliptic[coned]
        rows_on = coned[on]
        contact = efc_id[rows_on]  # efc_id is a contact only on contact rows
        j = rows_on - np.asarray(data.contact.efc_address, dtype=np.int_)[contact]  # 0 normal, i: friction i
        mu = np.asarray(data.contact.friction, dtype=np.float64)[contact]
        scale = np.where(j == 0, mu[:, 0], mu[:, 0] / mu[np.arange(rows_on.size), np.maximum(j - 1, 0)])
        coefficient[on] = -scale
        dims = np.zeros(coned.size, np.int_)
        dims[on] = np.where(j == 0, np.asarray(data.contact.dim, dtype=np.int_)[contact], 0)
        for position in range(coned.size):  # Nonneg(1) per row, SOC(dim) at each contact's first row
            if not on[position]:
                cones.append(Nonneg(1))
            elif dims[position]:
                cones.append(SOC(int(dims[position])))
    else:
        cones = [Nonneg(coned.size)] if coned.size else []
    box = np.flatnonzero(friction)  # x <= h f_max, then -x <= h f_max
    bound = h * np.asarray(data.efc_frictionloss, dtype=np.float64)[:nefc][box]
    cones += [Nonneg(1)] * (2 * box.size)
    rows = coned.size + 2 * box.size
    A = sp.csc_matrix((np.concatenate([coefficient, np.ones(box.size), -np.ones(box.size)]),
                       (np.arange(rows), np.concatenate([coned, box, box]))), shape=(rows, nefc))
    offsets = np.concatenate([np.zeros(coned.size), bound, bound])
    return A, offsets, _merge_nonneg(cones)


def _merge_nonneg(cones: list[Cone]) -> tuple[Cone, ...]:
    merged: list[Cone] = []
    for cone in cones:
        if merged and cone.kind == "nonneg" and merged[-1].kind == "nonneg":
            merged[-1] = Nonneg(merged[-1].dim + cone.dim)
        else:
            merged.append(cone)
    return tuple(merged)


def constraint_program(M: FloatArray, v: FloatArray, acceleration_free: FloatArray, dt: float, J: FloatArray,
                       R: FloatArray, a_ref: FloatArray, cones: tuple[Cone, ...],
                       cone_rows: sp.csc_matrix | None = None,
                       inverse: Callable[[FloatArray], FloatArray] | None = None,
                       cone_offset: FloatArray | None = None) -> ConicProgram:
    """The regularized dual fed given constraint data (e.g. MuJoCo's own for a step).

    MuJoCo's constraint solve (Todorov 2014) is, in forces ``f``,
    ``min 1/2 f^T (J M^{-1} J^T + R) f + f^T (J a0 - a_ref)  s.t.  f in K``; with impulses
    ``lambda = h f`` (objective scaled by ``h^2``) it is the program
    :class:`contactopt.formulations.regularized.Regularized` builds:
    ``P = J M^{-1} J^T + diag(R)``, ``c = h (J a0 - a_ref) = J v^- - v*``. ``cones`` and
    ``cone_rows`` (``A``, default ``-I``) and ``cone_offset`` (``b``, default 0) say how ``K`` is
    written (``A x + s = b, s in cones``; a box ``|x_i| <= h f_max`` is two rows with ``b = h f_max``);
    ``inverse`` is an optional fast ``M^{-1}`` (e.g. MuJoCo's sparse factorization).
    """
    rows = J.shape[0]
    W = delassus(Dynamics(M, np.zeros(M.shape[0]), inverse=inverse), J) if rows else np.zeros((0, 0))
    P = W + sp.diags(R) if is_sparse(W) else W + np.diag(R)
    A = -sp.identity(rows, format="csc") if cone_rows is None else sp.csc_matrix(cone_rows)
    b = np.zeros(A.shape[0]) if cone_offset is None else np.asarray(cone_offset, dtype=np.float64)
    return ConicProgram(P=mark_symmetric(sp.csc_matrix(0.5 * (P + P.T))), c=dt * (J @ acceleration_free - a_ref),
                        A=A, b=b, cones=cones,
                        variables=(Block("impulse", 0, rows),), constraints=(Block("impulse_in_cone", 0, A.shape[0]),),
                        metadata={"formulation": "regularized", "source": "given constraint data", "dt": dt,
                                  "v": np.asarray(v).tolist()})
