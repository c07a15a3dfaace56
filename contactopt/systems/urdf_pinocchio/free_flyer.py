"""The pinocchio backend's kinematic tangents, a floating base's through Pinocchio's free-flyer
joint, and the floating base's coordinate maps (for :mod:`.derivatives` and :mod:`.contact_tangents`).

**Why the free flyer.** The backend's floating base is the composite joint translation-then-spherical,
whose velocity is MuJoCo's free joint's ``[v_world, w_body]`` (:mod:`.system`). On that composite
joint, Pinocchio 4.1's kinematics (joint Jacobians, ``crba``, ``rnea``) and ``dIntegrate`` agree with
central differences, but its derivative algorithms do not: ``computeRNEADerivatives`` in the rotation
columns, ``computeCoriolisMatrix`` and ``computeJointJacobiansTimeVariation`` by ``O(1)`` (the floating
two-link arm at tests/test_urdf_floating_derivatives.py's random configuration: 0.73 on ``dM``
entries up to 0.84, 1.02 on ``dJ`` entries up to 1.22, the missing ``dT`` terms below). The same
tree with a free-flyer root, whose velocity is ``v_ff = T v`` with ``T = diag(R^T, I)`` (``R`` the
base's rotation), is differentiated instead::

    J(q) = J_ff(q) T(q),        M(q) = T^T M_ff(q) T

and along a tangent direction ``D`` (the base turning by ``dphi = D[3:6]`` in its own frame,
``R -> R exp([dphi]x)``, so ``dT = diag(-[dphi]x R^T, 0)``)::

    dJ = dJ_ff(T D) T + J_ff dT,        dM = dT^T M_ff T + T^T (C_ff + C_ff^T) T + T^T M_ff dT

with ``dJ_ff(T D)`` the Jacobian's variation along the velocity ``T D``
(``computeJointJacobiansTimeVariation``: ``Jdot = sum_k dJ/dq_k qdot_k``) and ``C_ff`` Pinocchio's
Coriolis matrix at velocity ``T D``, whose ``dM/dt = C + C^T`` (Carpentier et al., "The Pinocchio
C++ library", 2019; Carpentier & Mansard, "Analytical derivatives of rigid body dynamics
algorithms", RSS 2018). A fixed base takes the system's own model (``T = I``).

**Coordinates.** The public ``q`` stores the base's quaternion ``Q = [w, x, y, z]`` (``nq = nv +
1``) and the system reads it normalized (:meth:`.system.PinocchioUrdfSystem.pin_q`, as MuJoCo's
``mj_kinematics``). A raw direction ``dq`` moves the tangent by ``G(q) dq``: the translation as it
is, the rotation by ``dphi = 2 vec(conj(n) (x) dQ) / |Q|`` (``n = Q / |Q|``; the radial part of
``dQ`` moves nothing), scalar joints as they are. ``q' = integrate(q, v', h)`` moves by ``N(q')
(J_q G dq + h J_v dv')`` with ``J_q``, ``J_v`` Pinocchio's ``dIntegrate`` and ``N(q')`` the tangent's
raw image, ``dQ' = Q' (x) (0, dphi') / 2`` (Sola, "Quaternion kinematics for the error-state
Kalman filter", 2017, sec. 4: the right (local) perturbation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]


def free_flyer(system: Any) -> tuple[Any, Any]:
    """The system's tree with a free-flyer root, and its data (built once, kept on the system):
    from the same XML as the system's model, with its mimic joints, so that it has the same dofs."""
    if system._free_flyer is None:
        pin = system.pin
        model = pin.buildModelFromXML(system._xml, pin.JointModelFreeFlyer(), True)
        system._free_flyer = (model, model.createData())
    return system._free_flyer


def base_rotation(system: Any, qp: FloatArray) -> FloatArray:
    """``R`` ((3, 3)): the floating base's rotation in Pinocchio's configuration ``qp``."""
    i = system._base[1]
    quaternion = system.pin.Quaternion(qp[i + 6], qp[i + 3], qp[i + 4], qp[i + 5]).normalized()
    return np.array(quaternion.toRotationMatrix())


class Kinematics:
    """The variations of joint Jacobians and of ``M`` along tangent directions at Pinocchio's
    configuration ``qp``, in the public dof order (module docstring): the system's model for a
    fixed base, the free-flyer tree with ``T`` for a floating one."""

    def __init__(self, system: Any, qp: FloatArray) -> None:
        self.system, self.qp, self.grid = system, qp, np.ix_(system._dofs, system._dofs)
        self.T: FloatArray | None = None
        self.model, self.data = system.model, system.data
        if system._base is not None:
            self.model, self.data = free_flyer(system)
            self.R = base_rotation(system, qp)
            self.T = np.eye(system.nv)
            self.T[:3, :3] = self.R.T

    def _turn(self, direction: FloatArray) -> FloatArray:
        """``dT`` ((nv, nv)) along ``direction``: ``-[dphi]x R^T`` in the base's translation block."""
        dT = np.zeros((self.system.nv, self.system.nv))
        dT[:3, :3] = -skew(direction[3:6]) @ self.R.T
        return dT

    def jacobian_variations(self, joints: list[int], direction: FloatArray) -> dict[int, FloatArray]:
        """``dJ`` ((6, nv), ``LOCAL_WORLD_ALIGNED``) of each joint's Jacobian along ``direction`` ((nv,))."""
        system, pin, d = self.system, self.system.pin, self.system._dofs
        velocity = direction if self.T is None else self.T @ direction
        pin.computeJointJacobiansTimeVariation(self.model, self.data, self.qp, system.pin_v(velocity))
        out = {joint: np.array(pin.getJointJacobianTimeVariation(self.model, self.data, joint,
                                                                 pin.LOCAL_WORLD_ALIGNED))[:, d] for joint in joints}
        if self.T is None:
            return out
        dT = self._turn(direction)
        for joint, variation in out.items():  # the time variation's pass computed the Jacobians too
            jacobian = np.array(pin.getJointJacobian(self.model, self.data, joint, pin.LOCAL_WORLD_ALIGNED))[:, d]
            out[joint] = variation @ self.T + jacobian @ dT
        return out

    def mass_variation(self, direction: FloatArray) -> FloatArray:
        """``dM`` ((nv, nv)) along ``direction`` ((nv,)): ``C + C^T`` (module docstring)."""
        system, pin = self.system, self.system.pin
        velocity = direction if self.T is None else self.T @ direction
        C = np.array(pin.computeCoriolisMatrix(self.model, self.data, self.qp, system.pin_v(velocity)))[self.grid]
        if self.T is None:
            return C + C.T
        upper = np.array(pin.crba(self.model, self.data, self.qp))
        M = (np.triu(upper) + np.triu(upper, 1).T)[self.grid]
        dT, T = self._turn(direction), self.T
        first = dT.T @ M @ T
        return first + first.T + T.T @ (C + C.T) @ T


def _left(quaternion: FloatArray) -> FloatArray:
    """``L(Q)`` ((4, 4)) with ``Q (x) P = L(Q) P`` (Hamilton product, ``[w, x, y, z]``)."""
    w, x, y, z = quaternion
    return np.array([[w, -x, -y, -z], [x, w, -z, y], [y, z, w, -x], [z, -y, x, w]])


def tangent_map(system: Any, q: FloatArray) -> FloatArray | None:
    """``G(q)`` ((nv, nq)): a raw direction's tangent (module docstring); None for a fixed base (``G = I``)."""
    if system._base is None:
        return None
    p = system._base[0]
    G = np.zeros((system.nv, system.nq))
    G[:3, p:p + 3] = np.eye(3)
    quaternion = np.asarray(q[p + 3:p + 7], dtype=np.float64)
    size = float(np.linalg.norm(quaternion))
    conjugate = quaternion * np.array([1.0, -1.0, -1.0, -1.0])
    G[3:6, p + 3:p + 7] = 2.0 * _left(conjugate)[1:] / size ** 2  # conj(n) / |Q| = conj(Q) / |Q|^2
    others = [k for k in range(system.nq) if not p <= k < p + 7]
    G[6:, others] = np.eye(system.nv - 6)
    return G


def integration_map(system: Any, q: FloatArray, v_next: FloatArray, h: float) -> tuple[FloatArray, FloatArray]:
    """``(dq'/dq, dq'/dv')`` ((nq, nq), (nq, nv)) of ``q' = integrate(q, v', h)`` (module docstring)."""
    pin, qp, grid = system.pin, system.pin_q(q), np.ix_(system._dofs, system._dofs)
    step = h * system.pin_v(v_next)
    J_q = np.array(pin.dIntegrate(system.model, qp, step, pin.ArgumentPosition.ARG0))[grid]
    J_v = h * np.array(pin.dIntegrate(system.model, qp, step, pin.ArgumentPosition.ARG1))[grid]
    G = tangent_map(system, q)
    assert G is not None
    q_next = system.integrate(q, v_next, h)
    p = system._base[0]
    N = np.zeros((system.nq, system.nv))
    N[p:p + 3, :3] = np.eye(3)
    N[p + 3:p + 7, 3:6] = 0.5 * _left(q_next[p + 3:p + 7])[:, 1:]
    others = [k for k in range(system.nq) if not p <= k < p + 7]
    N[others, 6:] = np.eye(system.nv - 6)
    return N @ J_q @ G, N @ J_v
