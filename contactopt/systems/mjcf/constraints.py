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

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.model.step import Bilateral, FrictionLoss, Unilateral
from contactopt.systems.mjcf import compat

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


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


@dataclass(frozen=True)
class RowLayout:
    """Which joints, dofs and tendons of a model carry limit and dry-friction rows, with their
    addresses and names: the model's structure, resolved once per model (:func:`row_layout`), so
    that a step reads the values (ranges, margins, positions) as arrays. Values are never kept
    here: a system's parameters (``with_parameters``) may change them between steps.

    ``scalar_*``: limited hinge and slide joints (ids, ``qposadr``, ``dofadr``); ``ball_*``: limited
    ball joints; ``tendons``: limited tendons;
    ``*_names``: labels (``joint3`` where unnamed)."""

    limits: bool
    scalar_joints: IntArray
    scalar_qadr: IntArray
    scalar_dadr: IntArray
    scalar_names: tuple[str, ...]
    ball_joints: IntArray
    ball_names: tuple[str, ...]
    tendons: IntArray
    tendon_names: tuple[str, ...]
    all_tendon_names: tuple[str, ...]

    @staticmethod
    def of(mujoco: Any, model: Any) -> RowLayout:
        joint_types = mujoco.mjtJoint
        limited = np.flatnonzero(np.asarray(model.jnt_limited)).astype(np.int_)
        kinds = np.asarray(model.jnt_type)[limited]
        scalar = limited[(kinds == int(joint_types.mjJNT_HINGE)) | (kinds == int(joint_types.mjJNT_SLIDE))]
        ball = limited[kinds == int(joint_types.mjJNT_BALL)]
        tendons = (np.flatnonzero(np.asarray(model.tendon_limited)).astype(np.int_) if int(model.ntendon)
                   else np.zeros(0, np.int_))
        return RowLayout(
            limits=not disabled(mujoco, model, "mjDSBL_LIMIT"),
            scalar_joints=scalar, scalar_qadr=np.asarray(model.jnt_qposadr, dtype=np.int_)[scalar],
            scalar_dadr=np.asarray(model.jnt_dofadr, dtype=np.int_)[scalar],
            scalar_names=tuple(model.joint(int(j)).name or f"joint{j}" for j in scalar),
            ball_joints=ball, ball_names=tuple(model.joint(int(j)).name or f"joint{j}" for j in ball),
            tendons=tendons, tendon_names=tuple(model.tendon(int(t)).name or f"tendon{t}" for t in tendons),
            all_tendon_names=tuple(model.tendon(t).name or f"tendon{t}" for t in range(int(model.ntendon))))


_LAYOUTS: weakref.WeakKeyDictionary[Any, RowLayout] = weakref.WeakKeyDictionary()
_LAYOUTS_LOCK = threading.Lock()


def row_layout(mujoco: Any, model: Any) -> RowLayout:
    """The :class:`RowLayout` of ``model``, built at its first use and kept while it lives."""
    with _LAYOUTS_LOCK:
        layout = _LAYOUTS.get(model)
        if layout is None:
            layout = _LAYOUTS[model] = RowLayout.of(mujoco, model)
        return layout


def limit_entries(mujoco: Any, model: Any, data: Any) -> list[tuple[LimitKey, float, FloatArray, str]]:
    """``(key, phi, row, label)`` for every limited joint and tendon (its nearer bound), joints in
    id order, then tendons."""
    return _limit_table(mujoco, model, data).entries()


@dataclass(frozen=True)
class _LimitTable:
    """The limit rows at one state as arrays: ``phi`` (n,), ``G`` (n, nv), ``keys``, ``labels``."""

    keys: list[LimitKey]
    phi: FloatArray
    G: FloatArray
    labels: tuple[str, ...]

    def entries(self) -> list[tuple[LimitKey, float, FloatArray, str]]:
        return [(key, float(self.phi[i]), self.G[i], self.labels[i]) for i, key in enumerate(self.keys)]


def _limit_table(mujoco: Any, model: Any, data: Any) -> _LimitTable:
    """The rows of :func:`limit_entries`, computed from arrays (module docstring)."""
    nv = int(model.nv)
    layout = row_layout(mujoco, model)
    if not layout.limits:
        return _LimitTable([], np.zeros(0), np.zeros((0, nv)), ())
    joints: list[tuple[int, LimitKey, float, FloatArray, str]] = []  # (joint id, ...): merged in id order
    scalar = layout.scalar_joints
    if scalar.size:
        bounds = np.asarray(model.jnt_range, dtype=np.float64)[scalar]
        value = np.asarray(data.qpos, dtype=np.float64)[layout.scalar_qadr]
        lower, upper = value - bounds[:, 0], bounds[:, 1] - value
        at_lower = lower <= upper  # the nearer side (nearer_side)
        phi = np.where(at_lower, lower, upper) - np.asarray(model.jnt_margin, dtype=np.float64)[scalar]
        sign = np.where(at_lower, 1, -1)
        rows = np.zeros((scalar.size, nv))
        rows[np.arange(scalar.size), layout.scalar_dadr] = sign
        for i, j in enumerate(scalar.tolist()):
            joints.append((j, ("joint", j, int(sign[i])), float(phi[i]), rows[i],
                           f"{layout.scalar_names[i]} {'lower' if at_lower[i] else 'upper'}"))
    for i, j in enumerate(layout.ball_joints.tolist()):
        qadr, dadr = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        rotation = np.zeros(3)
        mujoco.mju_quat2Vel(rotation, np.array(data.qpos[qadr:qadr + 4]), 1.0)
        angle = float(np.linalg.norm(rotation))
        if angle < 1e-12:  # no rotation: the axis (and the Jacobian) is undefined, far from a limit
            continue
        row = np.zeros(nv)
        row[dadr:dadr + 3] = -rotation / angle
        lo, hi = (float(x) for x in model.jnt_range[j])
        joints.append((j, ("joint", j, 0), max(lo, hi) - angle - float(model.jnt_margin[j]), row,
                       f"{layout.ball_names[i]} cone"))
    if layout.ball_joints.size:
        joints.sort(key=lambda entry: entry[0])
    entries = [entry[1:] for entry in joints]
    if layout.tendons.size:
        J = tendon_jacobian(model, data)
        for i, t in enumerate(layout.tendons.tolist()):
            lo, hi = (float(x) for x in model.tendon_range[t])
            margin, length = float(model.tendon_margin[t]), float(data.ten_length[t])
            side, dist, sign_t = nearer_side(length - lo, hi - length)
            entries.append((("tendon", t, sign_t), dist - margin, sign_t * J[t], f"{layout.tendon_names[i]} {side}"))
    if not entries:
        return _LimitTable([], np.zeros(0), np.zeros((0, nv)), ())
    return _LimitTable([e[0] for e in entries], np.array([e[1] for e in entries]),
                       np.array([e[2] for e in entries]), tuple(e[3] for e in entries))


def nearer_side(lower: float, upper: float) -> tuple[str, float, int]:
    """``(side, distance, sign)`` of the nearer bound: only one side of a range can be reached
    within a step, and the two sides' rows are exact negatives of each other (a singular pair
    in the Delassus matrix, which Lemke's pivoting does not tolerate)."""
    return ("lower", lower, 1) if lower <= upper else ("upper", upper, -1)


def limit_keys(mujoco: Any, model: Any, data: Any) -> list[LimitKey]:
    """The keys of :func:`limit_rows`, in its order."""
    return _limit_table(mujoco, model, data).keys


def limit_rows(mujoco: Any, model: Any, data: Any) -> Unilateral:
    """A row per limited joint and tendon, at its nearer bound (module docstring)."""
    table = _limit_table(mujoco, model, data)
    if not table.keys:
        return Unilateral.empty(int(model.nv))
    return Unilateral(phi=table.phi, G=table.G, labels=table.labels)


def friction_rows(mujoco: Any, model: Any, data: Any) -> FrictionLoss:
    """A box row per dof and per tendon with ``frictionloss > 0``."""
    nv = int(model.nv)
    if disabled(mujoco, model, "mjDSBL_FRICTIONLOSS"):
        return FrictionLoss.empty(nv)
    dofs = np.flatnonzero(np.asarray(model.dof_frictionloss) > 0)
    rows = np.zeros((dofs.size, nv))
    rows[np.arange(dofs.size), dofs] = 1.0
    bounds = np.asarray(model.dof_frictionloss, dtype=np.float64)[dofs]
    labels = tuple(f"dof{d}" for d in dofs.tolist())
    lossy = np.flatnonzero(np.asarray(model.tendon_frictionloss) > 0) if int(model.ntendon) else np.zeros(0, np.int_)
    if lossy.size:
        names = row_layout(mujoco, model).all_tendon_names
        rows = np.vstack([rows, tendon_jacobian(model, data)[lossy]])
        bounds = np.concatenate([bounds, np.asarray(model.tendon_frictionloss, dtype=np.float64)[lossy]])
        labels += tuple(names[t] for t in lossy.tolist())
    if not labels:
        return FrictionLoss.empty(nv)
    return FrictionLoss(F=rows, bound=bounds, labels=labels)
