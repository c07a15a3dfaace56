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
    friction = (int(kinds.mjCNSTR_FRICTION_DOF), int(kinds.mjCNSTR_FRICTION_TENDON))
    entries: list[tuple[int, int, float]] = []  # (cone row, efc row, coefficient)
    offsets: list[float] = []
    cones: list[Cone] = []
    box_rows: list[tuple[int, float]] = []
    row = 0
    while row < nefc:
        kind = int(data.efc_type[row])
        if kind == int(kinds.mjCNSTR_EQUALITY):  # free multiplier: no cone row
            row += 1
        elif kind == int(kinds.mjCNSTR_CONTACT_ELLIPTIC):
            # MuJoCo's elliptic cone f_n >= ||(f_i / mu_i)_i||, written [mu_1 f_n, (mu_1 / mu_i) f_i] in SOC
            contact = data.contact[int(data.efc_id[row])]
            dim = int(contact.dim)
            mu = np.asarray(contact.friction, dtype=np.float64)[: dim - 1]
            scale = np.concatenate([[mu[0]], mu[0] / mu])
            for j in range(dim):
                entries.append((len(offsets), row + j, -float(scale[j])))
                offsets.append(0.0)
            cones.append(SOC(dim))
            row += dim
        elif kind in friction:
            box_rows.append((row, h * float(data.efc_frictionloss[row])))
            row += 1
        else:  # limits, pyramidal edges, frictionless contacts
            entries.append((len(offsets), row, -1.0))
            offsets.append(0.0)
            cones.append(Nonneg(1))
            row += 1
    for sign in (1.0, -1.0):  # x <= h f_max, then -x <= h f_max
        for efc_row, bound in box_rows:
            entries.append((len(offsets), efc_row, sign))
            offsets.append(bound)
            cones.append(Nonneg(1))
    rows = len(offsets)
    if entries:
        r, c, values = zip(*entries, strict=True)
        A = sp.csc_matrix((np.array(values), (np.array(r), np.array(c))), shape=(rows, nefc))
    else:
        A = sp.csc_matrix((0, nefc))
    return A, np.array(offsets), _merge_nonneg(cones)


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
