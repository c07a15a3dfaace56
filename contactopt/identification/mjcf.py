"""The regressor of an MJCF model from MuJoCo's inverse dynamics, by exact linearity.

Tedrake 2020, "Parameter Estimation" (lumped parameters); Atkeson, An and Hollerbach 1986,
"Estimation of inertial parameters of manipulator loads and links": for a rigid-body tree the
manipulator equation is linear in the *standard parameters* of each body,

    phi_b = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz],

the mass, the first moment ``m c`` (``c`` the centre of mass in the body frame) and the
rotational inertia **about the body frame's origin**, in the body frame. MuJoCo stores a body's
mass, ``body_ipos = c``, and the principal inertia ``body_inertia`` about the centre of mass in
the frame ``body_iquat``; by the parallel-axis theorem

    I_O = R diag(body_inertia) R^T + m (|c|^2 1 - c c^T),   R = R(body_iquat),

and back: ``c = (m c) / m``, ``I_C = I_O - m (|c|^2 1 - c c^T) = V diag(w) V^T`` (``w`` the
principal inertia, ``V`` the frame, a rotation). Each joint dof adds its ``armature``
(``M_jj += a_j``: force ``a_j vdot_j``), ``damping`` (``b_j v_j``) and ``frictionloss``
(dry friction ``f_j sign(v_j)``) where the model has them (non-zero).

MuJoCo's ``mj_inverse`` with constraints disabled gives ``qfrc_inverse = M vdot + bias -
passive``, an affine function ``f(phi) = Y phi + f0`` of all the parameters (``f0``: the
forces no parameter multiplies, springs). Each column of ``Y`` is therefore the exact
difference ``(f(phi + s e_k) - f(phi)) / s`` for any step ``s`` (rounding only), evaluated on a
private copy of the model whose body arrays are set from ``phi`` as above (with MuJoCo's
``body_sameframe`` shortcut off there, which would take the inertial frame to be the body's
whatever ``body_iquat`` says, and its "simple body" shortcut, ``body_simple`` and
``dof_simplenum``, off too, which would take a lone free or slide-jointed body's mass matrix
from compile-time constants whatever its mass and inertia). The mass matrix's sparsity is
fixed at compile time too (a "simple" body's is diagonal, with no room for the coupling that a
first moment ``m c`` adds), so ``M vdot`` is taken from MuJoCo's recursive Newton-Euler
(``mj_rne`` with accelerations, which needs no ``M``) plus the armature: ``qfrc_inverse =
rne(vdot) + armature vdot - qfrc_passive``, and the kinetic energy ``1/2 v^T M v`` likewise
with ``M v = rne(v) - rne(0)`` at zero velocity. Friction loss is a
constraint in MuJoCo, not part of ``mj_inverse``; its column ``sign(v_j)`` is the Coulomb law.
The total energy ``H = T + U`` (MuJoCo's ``mj_energyPos`` + ``mj_energyVel``, gravity and
kinetic; springs are in ``f0``'s energy) is affine in ``phi`` the same way.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

__all__ = ["MjcfRegressor", "body_parameters", "mjcf_regressor", "mujoco_body"]

#: The standard parameters of a body, as suffixes of its name.
BODY_PARAMETERS = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
JOINT_PARAMETERS = ("armature", "damping", "frictionloss")


def _cross(c: FloatArray) -> FloatArray:
    """``|c|^2 1 - c c^T`` (the parallel-axis term per unit mass)."""
    return float(c @ c) * np.eye(3) - np.outer(c, c)


def body_parameters(mujoco: Any, mass: float, ipos: FloatArray, iquat: FloatArray, inertia: FloatArray) -> FloatArray:
    """``phi_b`` from MuJoCo's ``body_mass``, ``body_ipos``, ``body_iquat``, ``body_inertia``
    (parallel-axis theorem, module docstring)."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(iquat, dtype=np.float64))
    R = rot.reshape(3, 3)
    c = np.asarray(ipos, dtype=np.float64)
    I_O = R @ np.diag(inertia) @ R.T + mass * _cross(c)
    return np.array([mass, *(mass * c), I_O[0, 0], I_O[0, 1], I_O[0, 2], I_O[1, 1], I_O[1, 2], I_O[2, 2]])


def mujoco_body(mujoco: Any, phi: FloatArray) -> tuple[float, FloatArray, FloatArray, FloatArray]:
    """``(mass, ipos, iquat, inertia)`` of ``phi_b`` (``mass > 0``; the inverse of
    :func:`body_parameters`; the principal inertia may be of any sign for a direction that is
    not physical, which MuJoCo's dynamics take as the same linear algebra)."""
    m = float(phi[0])
    c = np.asarray(phi[1:4]) / m
    xx, xy, xz, yy, yz, zz = phi[4:]
    I_O = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    w, V = np.linalg.eigh(I_O - m * _cross(c))
    if np.linalg.det(V) < 0:
        V[:, 0] = -V[:, 0]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(V).reshape(-1))
    return m, c, quat, w


def _body_step(phi: FloatArray, entry: int) -> float:
    """A step along ``phi[entry]`` that keeps the inertia about the centre of mass positive
    definite (so that MuJoCo factors a positive definite ``M``): ``m -> 1.5 m`` raises it; a
    change ``s`` of ``I_O`` moves its eigenvalues by at most ``|s|``; a change ``s`` of ``m c``
    changes ``m (|c|^2 1 - c c^T)`` by at most ``(4 s |m c| + 2 s^2) / m`` in norm."""
    m = float(phi[0])
    if entry == 0:
        return 0.5 * m
    c = np.asarray(phi[1:4]) / m
    xx, xy, xz, yy, yz, zz = phi[4:]
    I_C = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) - m * _cross(c)
    smallest = max(float(np.linalg.eigvalsh(I_C)[0]), 1e-12 * max(float(np.trace(I_C)), 1e-12))
    if entry >= 4:
        return 0.25 * smallest
    first = float(np.linalg.norm(phi[1:4]))
    return min(np.sqrt(smallest * m) / 8.0, smallest * m / (32.0 * first) if first > 0 else np.inf)


@dataclass
class _Column:
    kind: str  # "body" | "armature" | "damping" | "frictionloss"
    index: int  # body id or dof id
    entry: int  # 0..9 for a body


class MjcfRegressor:
    """The regressor of one MJCF system (module docstring), on a private copy of its model."""

    def __init__(self, system: Any) -> None:
        mujoco = system.mujoco
        self.mujoco = mujoco
        self.nv = int(system.nv)
        self.nq = int(system.nq)
        model = copy.deepcopy(system.model)
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
        model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
        model.body_sameframe[:] = 0  # MuJoCo's shortcut "inertial frame = body frame" would ignore a new iquat/ipos
        for shortcut in ("body_simple", "dof_simplenum"):  # "simple" bodies: M from compile-time constants,
            if hasattr(model, shortcut):  # which would ignore a new mass or inertia (a lone free or slide body)
                getattr(model, shortcut)[:] = 0
        self.model = model
        self.data = mujoco.MjData(model)
        self.original = {f: np.array(getattr(model, f)) for f in ("body_mass", "body_ipos", "body_iquat",
                                                                  "body_inertia", "dof_armature", "dof_damping")}
        weld = np.asarray(model.body_weldid)
        self.bodies = [b for b in range(1, int(model.nbody)) if weld[b] != 0]
        names: list[str] = []
        values: list[float] = []
        columns: list[_Column] = []
        base: list[FloatArray] = []
        for b in self.bodies:
            label = model.body(b).name or f"body{b}"
            phi = body_parameters(mujoco, float(model.body_mass[b]), model.body_ipos[b], model.body_iquat[b],
                                  model.body_inertia[b])
            values.extend(phi)
            names.extend(f"{label}.{suffix}" for suffix in BODY_PARAMETERS)
            columns.extend(_Column("body", b, k) for k in range(10))
            base.append(phi if phi[0] > 0 else phi + np.eye(10)[0])  # a massless body: differences about m = 1
        for kind in JOINT_PARAMETERS:
            array = np.asarray(getattr(model, f"dof_{kind}"))
            for j in np.flatnonzero(array != 0.0):
                joint = int(model.dof_jntid[j])
                label = model.joint(joint).name or f"joint{joint}"
                count = int(np.sum(np.asarray(model.dof_jntid) == joint))
                if count > 1:
                    label = f"{label}[{j - int(model.jnt_dofadr[joint])}]"
                names.append(f"{label}.{kind}")
                values.append(float(array[j]))
                columns.append(_Column(kind, int(j), 0))
        self.names = tuple(names)
        self.values = np.array(values, dtype=np.float64)
        self.columns = columns
        self.base_bodies = base
        self.frictionloss = [c.index for c in columns if c.kind == "frictionloss"]

    # -- evaluation of the affine functions at a parameter point ---------------------------------
    def _set_bodies(self, phis: list[FloatArray]) -> None:
        for b, phi in zip(self.bodies, phis, strict=True):
            m, c, quat, w = mujoco_body(self.mujoco, phi)
            self.model.body_mass[b] = m
            self.model.body_ipos[b] = c
            self.model.body_iquat[b] = quat
            self.model.body_inertia[b] = w

    def _inverse(self, q: FloatArray, v: FloatArray, a: FloatArray, v_damper: FloatArray) -> FloatArray:
        d = self.data
        d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
        self.mujoco.mj_inverse(self.model, d)  # kinematics, com frames, passive forces at the parameters
        out = self._rne(a) + np.asarray(self.model.dof_armature) * a - np.array(d.qfrc_passive)
        if v_damper is not v:  # damping at another velocity (the step's own, MJCF Euler: v')
            out += np.asarray(self.model.dof_damping) * (v_damper - v)
        return out

    def _rne(self, a: FloatArray) -> FloatArray:
        """``M_body a + bias`` by MuJoCo's recursive Newton-Euler (``mj_rne`` with accelerations)
        at the data's state: no mass matrix, so none of its compile-time sparsity (module docstring)."""
        out = np.zeros(self.nv)
        self.data.qacc[:] = a
        self.mujoco.mj_rne(self.model, self.data, 1, out)
        return out

    def _energy(self, q: FloatArray, v: FloatArray) -> float:
        d = self.data
        d.qpos[:], d.qvel[:] = q, np.zeros(self.nv)
        self.mujoco.mj_fwdPosition(self.model, d)
        self.mujoco.mj_comVel(self.model, d)  # zero velocity: rne gives M_body a + gravity
        self.mujoco.mj_energyPos(self.model, d)
        mass_v = self._rne(v) - self._rne(np.zeros(self.nv)) + np.asarray(self.model.dof_armature) * v
        return float(d.energy[0] + 0.5 * v @ mass_v)

    def _affine(self, evaluate: Any, n_out: int) -> tuple[FloatArray, FloatArray]:
        """``(Y, f0)`` of an affine ``evaluate()`` of the parameters (module docstring)."""
        model = self.model
        Y = np.zeros((n_out, len(self.columns)))
        try:
            phis = [phi.copy() for phi in self.base_bodies]
            self._set_bodies(phis)
            f_base = np.atleast_1d(evaluate())
            point = np.zeros(len(self.columns))
            for k, col in enumerate(self.columns):
                if col.kind == "body":
                    i = self.bodies.index(col.index)
                    phi = phis[i]
                    point[k] = phi[col.entry]
                    step = _body_step(phi, col.entry)
                    moved = [p.copy() for p in phis]
                    moved[i][col.entry] += step
                    self._set_bodies(moved)
                    Y[:, k] = (np.atleast_1d(evaluate()) - f_base) / step
                    self._set_bodies(phis)
                elif col.kind in ("armature", "damping"):
                    array = getattr(model, f"dof_{col.kind}")
                    point[k] = array[col.index]
                    step = max(abs(float(array[col.index])), 1e-3)
                    array[col.index] += step
                    Y[:, k] = (np.atleast_1d(evaluate()) - f_base) / step
                    array[col.index] -= step
                    array[col.index] = self.original[f"dof_{col.kind}"][col.index]
            return Y, f_base - Y @ point
        finally:
            for field, value in self.original.items():
                getattr(model, field)[:] = value

    def at(self, q: FloatArray, v: FloatArray, vdot: FloatArray,
           v_damper: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """``(Y, f0)``: ``M vdot + bias - passive = Y phi + f0`` (MuJoCo's ``mj_inverse``,
        constraints off) plus ``f_j sign(v_j)`` per friction-loss dof; ``v_damper`` (default
        ``v``) the velocity the dampers act at."""
        damper = v if v_damper is None else v_damper
        Y, f0 = self._affine(lambda: self._inverse(q, v, vdot, damper), self.nv)
        for k, col in enumerate(self.columns):
            if col.kind == "frictionloss":
                Y[col.index, k] = np.sign(v[col.index])
        return Y, f0

    def stack(self, q: FloatArray, v: FloatArray, vdot: FloatArray,
              v_damper: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """``(Y, f0)`` of :meth:`at` for every row of ``q, v, vdot`` (N, .) stacked, (N nv, p)
        and (N nv,): each parameter is set once for all the samples (the same differences as
        :meth:`at`, so the same numbers, N times fewer model updates)."""
        damper = v if v_damper is None else v_damper
        n = q.shape[0]

        def evaluate() -> FloatArray:
            return np.concatenate([self._inverse(q[k], v[k], vdot[k], damper[k]) for k in range(n)])

        Y, f0 = self._affine(evaluate, n * self.nv)
        for k, col in enumerate(self.columns):
            if col.kind == "frictionloss":
                Y[col.index :: self.nv, k] = np.sign(v[:, col.index])
        return Y, f0

    def actuator_force(self, q: FloatArray, v: FloatArray, ctrl: FloatArray) -> FloatArray:
        """MuJoCo's ``qfrc_actuator`` at ``(q, v)`` for ``ctrl`` (activations at zero)."""
        d = self.data
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, v, ctrl
        d.act[:] = 0.0
        self.mujoco.mj_fwdPosition(self.model, d)
        self.mujoco.mj_fwdVelocity(self.model, d)
        self.mujoco.mj_fwdActuation(self.model, d)
        return np.array(d.qfrc_actuator)

    def energy(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``h``, (p,): ``T + U = h phi + H0`` (``H0``: spring energy, dropped)."""
        return self._affine(lambda: self._energy(q, v), 1)[0][0]


_CACHE: weakref.WeakKeyDictionary[Any, MjcfRegressor] = weakref.WeakKeyDictionary()


def mjcf_regressor(system: Any) -> MjcfRegressor:
    """The :class:`MjcfRegressor` of ``system``, built once per system."""
    found = _CACHE.get(system)
    if found is None:
        found = MjcfRegressor(system)
        _CACHE[system] = found
    return found
