"""The non-contact constraint rows of an MJCF model, as MuJoCo builds them (MuJoCo
documentation, "Computation: Constraint model"):

* **equality** constraints (connect: 3 rows, weld: 6, joint and tendon couplings: 1 each)
  become bilateral rows ``h(q) = 0`` with ``h`` MuJoCo's own violation ``efc_pos`` and
  ``H`` its ``efc_J`` (``mj_fwdPosition`` builds them for every active equality);
  ``Hdot v`` by a central difference of ``H`` along ``v``;
* **joint limits** (hinge, slide; ball: the rotation angle against ``range[1]``) and
  **tendon limits** (length against ``range``) become unilateral rows with ``phi`` the
  distance to the bound less the limit's ``margin`` (MuJoCo activates a limit row once
  ``dist < margin`` and drives ``dist - margin`` to 0), Jacobian ``+-e_dof`` / ``+-ten_J``;
  every limited joint and tendon is a candidate row, on the side of its nearer bound;
* **dry friction** (``frictionloss`` of a degree of freedom or a tendon) becomes a box row:
  ``F`` the unit row of the dof or the tendon Jacobian, ``bound = frictionloss``.

The model's disable flags (``equality``, ``limit``, ``frictionloss``) remove the rows as
they do in MuJoCo.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.model.step import Bilateral, FrictionLoss, Unilateral
from contactopt.systems.mjcf import compat

FloatArray = NDArray[np.float64]


def disabled(mujoco: Any, model: Any, flag: str) -> bool:
    return bool(int(model.opt.disableflags) & int(getattr(mujoco.mjtDisableBit, flag)))


def tendon_jacobian(model: Any, data: Any) -> FloatArray:
    """Dense ``ten_J`` (``ntendon x nv``), dense or compressed storage."""
    nten, nv = int(model.ntendon), int(model.nv)
    flat = np.asarray(data.ten_J, dtype=np.float64).reshape(-1)
    if flat.size == nten * nv and not hasattr(model, "ten_J_rownnz"):
        return flat.reshape(nten, nv).copy()
    J = np.zeros((nten, nv))
    for row in range(nten):
        start, count = int(model.ten_J_rowadr[row]), int(model.ten_J_rownnz[row])
        J[row, model.ten_J_colind[start:start + count]] = flat[start:start + count]
    return J


def equality_rows(mujoco: Any, model: Any, data: Any) -> tuple[FloatArray, FloatArray]:
    """``(h, H)``: MuJoCo's equality rows at the current ``data`` (after ``mj_fwdPosition``)."""
    nefc = int(data.nefc)
    kinds = np.asarray(data.efc_type)[:nefc]
    rows = np.flatnonzero(kinds == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY))
    if not rows.size:
        return np.zeros(0), np.zeros((0, int(model.nv)))
    J = compat.constraint_jacobian(model, data)
    return np.array(data.efc_pos)[rows], J[rows]


def bilateral(mujoco: Any, model: Any, data: Any, scratch: Any, q: FloatArray, v: FloatArray) -> Bilateral:
    """Equality rows with ``Hdot v`` by a central difference of ``H`` along ``v`` (``scratch``:
    an MjData of the same model, so the system's evaluation cache stays valid)."""
    h, H = equality_rows(mujoco, model, data)
    if not h.size:
        return Bilateral.empty(int(model.nv))
    speed = float(np.linalg.norm(v))
    Hdot_v = np.zeros(h.size)
    if speed > 0:
        step = 1e-6 / speed
        ends = []
        for sign in (1.0, -1.0):
            moved = np.array(q)
            mujoco.mj_integratePos(model, moved, v, sign * step)
            scratch.qpos[:] = moved
            scratch.qvel[:] = 0.0
            mujoco.mj_fwdPosition(model, scratch)
            ends.append(equality_rows(mujoco, model, scratch)[1])
        if ends[0].shape == H.shape and ends[1].shape == H.shape:
            Hdot_v = (ends[0] - ends[1]) @ v / (2.0 * step)
    return Bilateral(h=h, H=H, Hdot_v=Hdot_v)


LimitKey = tuple[str, int, int]  # ("joint" | "tendon", id, +1 lower / -1 upper / 0 ball cone)


def limit_entries(mujoco: Any, model: Any, data: Any) -> list[tuple[LimitKey, float, FloatArray, str]]:
    """``(key, phi, row, label)`` for every limited joint and tendon (its nearer bound)."""
    nv = int(model.nv)
    if disabled(mujoco, model, "mjDSBL_LIMIT"):
        return []
    out: list[tuple[LimitKey, float, FloatArray, str]] = []
    joint_types = mujoco.mjtJoint
    for j in (int(i) for i in np.flatnonzero(np.asarray(model.jnt_limited))):
        kind, name = int(model.jnt_type[j]), model.joint(j).name or f"joint{j}"
        lo, hi = (float(x) for x in model.jnt_range[j])
        margin = float(model.jnt_margin[j])
        qadr, dadr = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        if kind in (int(joint_types.mjJNT_HINGE), int(joint_types.mjJNT_SLIDE)):
            value = float(data.qpos[qadr])
            side, dist, sign = nearer_side(value - lo, hi - value)
            row = np.zeros(nv)
            row[dadr] = sign
            out.append((("joint", j, sign), dist - margin, row, f"{name} {side}"))
        elif kind == int(joint_types.mjJNT_BALL):
            rotation = np.zeros(3)
            mujoco.mju_quat2Vel(rotation, np.array(data.qpos[qadr:qadr + 4]), 1.0)
            angle = float(np.linalg.norm(rotation))
            if angle < 1e-12:  # no rotation: the axis (and the Jacobian) is undefined, far from a limit
                continue
            row = np.zeros(nv)
            row[dadr:dadr + 3] = -rotation / angle
            out.append((("joint", j, 0), max(lo, hi) - angle - margin, row, f"{name} cone"))
    limited = [int(t) for t in np.flatnonzero(np.asarray(model.tendon_limited))] if int(model.ntendon) else []
    if limited:
        J = tendon_jacobian(model, data)
        for t in limited:
            name = model.tendon(t).name or f"tendon{t}"
            lo, hi = (float(x) for x in model.tendon_range[t])
            margin, length = float(model.tendon_margin[t]), float(data.ten_length[t])
            side, dist, sign = nearer_side(length - lo, hi - length)
            out.append((("tendon", t, sign), dist - margin, sign * J[t], f"{name} {side}"))
    return out


def nearer_side(lower: float, upper: float) -> tuple[str, float, int]:
    """``(side, distance, sign)`` of the nearer bound: only one side of a range can be reached
    within a step, and the two sides' rows are exact negatives of each other (a singular pair
    in the Delassus matrix, which Lemke's pivoting does not tolerate)."""
    return ("lower", lower, 1) if lower <= upper else ("upper", upper, -1)


def limit_keys(mujoco: Any, model: Any, data: Any) -> list[LimitKey]:
    """The keys of :func:`limit_rows`, in its order."""
    return [entry[0] for entry in limit_entries(mujoco, model, data)]


def limit_rows(mujoco: Any, model: Any, data: Any) -> Unilateral:
    """A row per limited joint and tendon, at its nearer bound (module docstring)."""
    entries = limit_entries(mujoco, model, data)
    if not entries:
        return Unilateral.empty(int(model.nv))
    return Unilateral(phi=np.array([e[1] for e in entries]), G=np.array([e[2] for e in entries]),
                      labels=tuple(e[3] for e in entries))


def friction_rows(mujoco: Any, model: Any, data: Any) -> FrictionLoss:
    """A box row per dof and per tendon with ``frictionloss > 0``."""
    nv = int(model.nv)
    if disabled(mujoco, model, "mjDSBL_FRICTIONLOSS"):
        return FrictionLoss.empty(nv)
    rows: list[FloatArray] = []
    bounds: list[float] = []
    labels: list[str] = []
    for d in np.flatnonzero(np.asarray(model.dof_frictionloss) > 0):
        row = np.zeros(nv)
        row[d] = 1.0
        rows.append(row)
        bounds.append(float(model.dof_frictionloss[d]))
        labels.append(f"dof{d}")
    lossy: list[int] = [int(t) for t in np.flatnonzero(np.asarray(model.tendon_frictionloss) > 0)] \
        if int(model.ntendon) else []
    if lossy:
        J = tendon_jacobian(model, data)
        for t in lossy:
            rows.append(J[t].copy())
            bounds.append(float(model.tendon_frictionloss[t]))
            labels.append(model.tendon(int(t)).name or f"tendon{t}")
    if not rows:
        return FrictionLoss.empty(nv)
    return FrictionLoss(F=np.array(rows), bound=np.array(bounds), labels=tuple(labels))
