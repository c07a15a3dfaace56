"""Analytic derivatives of the pinocchio backend's dynamics (:mod:`.system`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]


def inverse_dynamics(system: Any, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(d/dq, d/dv)`` of ``M(q) a - tau(q, v) = rnea(q, v, a) + D v``, analytically
    (Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS
    2018: ``pin.computeRNEADerivatives``), in the public dof order; ``d/dq`` along the
    tangent that :meth:`~.system.PinocchioUrdfSystem.integrate` moves ``q`` by (the base:
    world translation, body-frame rotation; scalar joints: their coordinate). With ``a = (v' - v) / h`` these are the
    smooth part of a step's derivative (``M (v' - v) = h tau + J^T lambda``).

    A floating base is differentiated through Pinocchio's free-flyer joint (through the
    composite translation-spherical joint, ``pin.computeRNEADerivatives`` of pin 4.1
    disagrees with central differences in the rotation columns, by up to 31 on the tests'
    walker, in Pinocchio's own tangent): with ``T = diag(R^T, I)``, ``v_f = T v`` and
    ``a_f = T a + Tdot v`` (``Tdot v = -w x R^T pdot``), the public residual is
    ``T^T rnea_f(q, v_f, a_f)``, whose derivatives follow by the chain rule (``d(R^T x)/dphi
    = [R^T x]x``, ``d(R f)/dphi = -R [f]x`` for a body-frame rotation ``phi``)."""
    pin = system.pin
    qp, vp, ap = system.pin_q(q), system.pin_v(v), system.pin_v(a)
    d = system._dofs
    if system._base is None:
        dq, dv, _ = pin.computeRNEADerivatives(system.model, system.data, qp, vp, ap)
        return np.array(dq)[np.ix_(d, d)], np.array(dv)[np.ix_(d, d)] + np.diag(system.damping)
    if system._free_flyer is None:
        model = pin.buildModelFromUrdf(str(system.urdf), pin.JointModelFreeFlyer())
        system._free_flyer = (model, model.createData())
    model, data = system._free_flyer
    nv = system.nv
    R = np.array(pin.Quaternion(qp[6], qp[3], qp[4], qp[5]).normalized().toRotationMatrix())
    T = np.eye(nv)
    T[:3, :3] = R.T
    pdot, omega, pddot = vp[:3], vp[3:6], ap[:3]
    w = R.T @ pdot
    vf, af = T @ vp, T @ ap
    af[:3] -= np.cross(omega, w)
    dq_f, dv_f, da_f = (np.array(x) for x in pin.computeRNEADerivatives(model, data, qp, vf, af))
    da_f = np.triu(da_f) + np.triu(da_f, 1).T  # M: its upper triangle is filled
    force = np.array(pin.rnea(model, data, qp, vf, af))
    Vq, Aq, Av = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    Vq[:3, 3:6] = skew(w)
    Aq[:3, 3:6] = skew(R.T @ pddot) - skew(omega) @ skew(w)
    Av[:3, :3] = -skew(omega) @ R.T
    Av[:3, 3:6] = skew(w)
    dq = T.T @ (dq_f @ T + dv_f @ Vq + da_f @ Aq)
    dq[:3, 3:6] -= R @ skew(force[:3])
    dv = T.T @ (dv_f @ T + da_f @ Av)
    return dq[np.ix_(d, d)], dv[np.ix_(d, d)] + np.diag(system.damping)
