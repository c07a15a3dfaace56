"""The pinocchio backend's contact rows and its check of the mass matrix (:mod:`.system`).

The rows of :mod:`.collision`'s contacts: ``frame (J_2(pos) - J_1(pos))``, ``J_k(x) = J_lin -
[x - o]x J_ang`` from the joint Jacobian in ``LOCAL_WORLD_ALIGNED`` (Pinocchio's
``getJointJacobian``: the linear velocity of the joint origin ``o`` and the angular velocity, both
in the world frame; Featherstone, "Rigid Body Dynamics Algorithms", sec. 2.8, the velocity of a
point of a body), zero for the ground and for geometry fixed to the world.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.model.step import Contacts
from contactopt.systems.base import ParameterError
from contactopt.systems.urdf_pinocchio import collision, ground
from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]


def contact_rows(system: Any, q: FloatArray, touches: list[collision.Contact]) -> Contacts:
    """The :class:`Contacts` of ``touches`` at ``q`` (module docstring), ``mu`` the system's."""
    if not touches:
        return Contacts.empty(system.nv, 3)
    pin, model, data = system.pin, system.model, system.data
    pin.computeJointJacobians(model, data, system.pin_q(q))
    jacobians: dict[int, tuple[FloatArray, FloatArray]] = {}

    def point_jacobian(shape: int, pos: FloatArray) -> FloatArray:
        joint = system._shapes[shape].joint if shape >= 0 else 0
        if joint == 0:  # the ground, or geometry fixed to the world
            return np.zeros((3, system.nv))
        if joint not in jacobians:
            full = np.array(pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED))
            jacobians[joint] = (full.reshape(6, model.nv)[:, system._dofs],  # (6,) when nv = 1
                                np.array(data.oMi[joint].translation))
        jacobian, origin = jacobians[joint]
        return jacobian[:3] - skew(pos - origin) @ jacobian[3:]

    phis, rows = [], []
    for touch in touches:
        frame = ground.contact_frame(touch.normal)
        relative = point_jacobian(touch.second, touch.pos)
        if touch.first >= 0:
            relative = relative - point_jacobian(touch.first, touch.pos)
        phis.append(touch.dist)
        rows.append(frame @ relative)
    n = len(phis)
    out = Contacts(phi=np.array(phis), J=np.vstack(rows), mu=np.full(n, system.mu), restitution=np.zeros(n), dim=3)
    object.__setattr__(out, "_touches", tuple(touches))  # behind the rows, with the joints' Jacobians: their
    object.__setattr__(out, "_joint_jacobians", jacobians)  # derivative's (.contact_tangents), not found again
    return out


def check_masses(system: Any) -> None:
    """Refuse (one line) a dof that moves no mass: ``M`` at the neutral configuration not
    positive definite (Cholesky), naming the dofs whose diagonal entry is (numerically) zero."""
    upper = np.array(system.pin.crba(system.model, system.data, system.pin_q(system._neutral())))
    M = np.triu(upper) + np.triu(upper, 1).T
    try:
        np.linalg.cholesky(M)
        return
    except np.linalg.LinAlgError:
        pass
    diagonal = np.diag(M)[system._dofs]
    weak = [system.v_names[k] for k in np.flatnonzero(diagonal <= 1e-12 * max(float(diagonal.max()), 1.0))]
    raise ParameterError("system.file", f"system.file: {system.urdf.name}: the mass matrix is singular at the "
                         f"neutral configuration (dofs moving no mass: {', '.join(weak) or 'none alone'}): give "
                         "the links they move an <inertial>")
