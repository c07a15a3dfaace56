"""MuJoCo's own constraint problem of a step as :class:`~contactopt.model.native.NativeArrays`:
its rows taken as MuJoCo keeps them (``efc_J``, ``efc_R``, ``efc_aref``, ``efc_type``, the
contacts' ``efc_address``, ``dim``, ``friction`` and ``dist``; ``qM`` through ``mj_fullM``), read
in a handful of array copies after one ``mj_forward`` (:func:`.native.evaluate`), with the
model's integrator's step matrix (:func:`.native.step_matrix`). The program these arrays pose is
the one :mod:`.native` writes as a conic program (MuJoCo documentation, "Computation:
Constraint model"; Todorov 2014): the same numbers, without the maps onto the system's own
contact candidates."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.model.native import CONE, EDGE, EQUALITY, FRICTION_LOSS, LIMIT, NativeArrays
from contactopt.model.rows import NativeRows
from contactopt.systems.mjcf import compat, derivatives
from contactopt.systems.mjcf.native import evaluate, native_rows, step_matrix

FloatArray = NDArray[np.float64]

#: MuJoCo's ``mjtConstraint`` names and the row kind each one is.
_KINDS = {"mjCNSTR_EQUALITY": EQUALITY, "mjCNSTR_FRICTION_DOF": FRICTION_LOSS,
          "mjCNSTR_FRICTION_TENDON": FRICTION_LOSS, "mjCNSTR_LIMIT_JOINT": LIMIT, "mjCNSTR_LIMIT_TENDON": LIMIT,
          "mjCNSTR_CONTACT_FRICTIONLESS": EDGE, "mjCNSTR_CONTACT_PYRAMIDAL": EDGE,
          "mjCNSTR_CONTACT_ELLIPTIC": CONE}


def kind_table(mujoco: Any) -> NDArray[np.int64]:
    """``table[efc_type]``: the row kind of each of MuJoCo's constraint types (-1: unknown)."""
    codes = {int(getattr(mujoco.mjtConstraint, name)): kind for name, kind in _KINDS.items()
             if hasattr(mujoco.mjtConstraint, name)}
    table = np.full(max(codes) + 1, -1, dtype=np.int64)
    for code, kind in codes.items():
        table[code] = kind
    return table


def derive_rows(efc_type: Any, efc_id: Any, frictionloss: Any, address: Any, friction: Any, table: Any, kind: Any,
                contact: Any, bound: Any, cone_scale: Any) -> int:
    """Fill each row's kind, contact, dry-friction bound and cone scale (:class:`NativeArrays`)
    in one pass; returns the first row whose MuJoCo type has no kind, or -1."""
    for i in range(efc_type.shape[0]):
        code = efc_type[i]
        k = table[code] if 0 <= code < table.shape[0] else -1
        if k < 0:
            return i
        kind[i] = k
        contact[i] = efc_id[i] if k >= EDGE else -1
        bound[i] = frictionloss[i] if k == FRICTION_LOSS else 0.0
        cone_scale[i] = 1.0
        if k == CONE:
            j = i - address[efc_id[i]]  # 0: the normal row; j: friction direction j
            if j > 0:
                cone_scale[i] = friction[efc_id[i], j - 1]
    return -1


_KERNELS = ("derive_rows",)


def jit_kernels() -> None:
    """Compile :func:`derive_rows` (numba, optional: plain Python without it)."""
    if jit.ENABLED:
        jit.jit_in_place(globals(), _KERNELS)


def _step_matrix(system: Any, model: Any, data: Any, M: FloatArray, dt: float) -> FloatArray:
    """:func:`.native.step_matrix`; under ``Euler`` ``M + h diag(damping)`` with the model's
    damping read once (a model's numbers do not change under a system)."""
    cached = getattr(system, "_native_euler", None)
    if cached is None or cached[0] is not model:
        name = derivatives.integrator_name(system.mujoco, model)
        damping = derivatives.euler_damping(system.mujoco, model) if name == "Euler" else None
        cached = system._native_euler = (model, name == "Euler", damping)
    if not cached[1]:
        return step_matrix(system, model, data, M, dt)
    if cached[2] is None:
        return M
    S = M.copy()
    S.flat[:: S.shape[0] + 1] += dt * cached[2]  # the diagonal
    return S


def native_arrays(system: Any, q: FloatArray, v: FloatArray, dt: float, cone: str | None = None) -> NativeArrays:
    """MuJoCo's constraint problem at ``(q, v)`` with step ``dt`` as flat arrays (module docstring)."""
    model, data = evaluate(system, q, v, dt, cone)
    return read_arrays(system, model, data, v, dt)


def read_arrays(system: Any, model: Any, data: Any, v: FloatArray, dt: float) -> NativeArrays:
    """The arrays of the problem ``data`` holds (after :func:`.native.evaluate` at velocity ``v``)."""
    mujoco = system.mujoco
    table = getattr(system, "_native_kind_table", None)
    if table is None:
        table = system._native_kind_table = kind_table(mujoco)
        jit_kernels()
    nefc, ncon = int(data.nefc), int(data.ncon)
    efc_type = np.asarray(data.efc_type)[:nefc]
    address = np.asarray(data.contact.efc_address, dtype=np.int64)[:ncon]
    # a copy in C order whatever ncon (an empty slice is typed otherwise by the compiled step)
    friction = np.array(data.contact.friction[:ncon], dtype=np.float64, order="C")
    kind, contact, bound, cone_scale = np.empty(nefc, np.int64), np.empty(nefc, np.int64), np.empty(nefc), \
        np.empty(nefc)
    unknown = derive_rows(efc_type, np.asarray(data.efc_id)[:nefc], np.asarray(data.efc_frictionloss)[:nefc],
                          address, friction, table, kind, contact, bound, cone_scale)
    if unknown >= 0:
        raise ValueError(f"MuJoCo constraint type {int(efc_type[unknown])} has no row kind")
    M = compat.full_mass_matrix(mujoco, model, data)
    return NativeArrays(
        dt=float(dt), v=np.array(v, dtype=np.float64), M=M, step_matrix=_step_matrix(system, model, data, M, dt),
        smooth_force=np.array(data.qfrc_smooth), acceleration_free=np.array(data.qacc_smooth),
        J=compat.constraint_jacobian(model, data), R=np.array(data.efc_R[:nefc]),
        a_ref=np.array(data.efc_aref[:nefc]), position=np.array(data.efc_pos[:nefc]), kind=kind, bound=bound,
        cone_scale=cone_scale, contact=contact,
        contact_address=address, contact_dim=np.asarray(data.contact.dim, dtype=np.int64)[:ncon],
        contact_friction=friction, contact_distance=np.array(data.contact.dist[:ncon]),
        pyramidal=int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL))


def rows_with_arrays(system: Any, q: FloatArray, v: FloatArray, dt: float, cone: str | None = None) -> NativeRows:
    """:func:`.native.native_rows` with its ``arrays`` (read from the same evaluation)."""
    rows = native_rows(system, q, v, dt, cone)
    model, data = system.native_model_data()  # as native_rows left it: evaluated at (q, v)
    return dataclasses.replace(rows, arrays=read_arrays(system, model, data, v, dt))
