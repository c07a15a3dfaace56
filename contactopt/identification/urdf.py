"""Lumped parameters of a URDF robot on the pinocchio backend
(:class:`~contactopt.systems.urdf_pinocchio.system.PinocchioUrdfSystem`), from Pinocchio's
regressors.

The inverse dynamics of a rigid-body tree is linear in each body's ten standard inertial
parameters ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)`` (the inertia about
the joint frame's origin, in that frame): ``rnea(q, v, a) = Y(q, v, a) theta`` (Atkeson, An &
Hollerbach, "Estimation of inertial parameters of manipulator loads and links", 1986; Khalil &
Dombre, "Modeling, identification and control of robots"), which Pinocchio computes as
``pin.computeJointTorqueRegressor`` (Carpentier et al., "The Pinocchio C++ library", 2019), per
joint of its model (a link fixed to its parent is merged into it, as Pinocchio's URDF parser
does), ``theta_j = model.inertias[j].toDynamicParameters()``. The pinocchio backend's
``tau = -rnea(q, v, 0) - D v`` adds the URDF's ``<dynamics damping>`` (one column ``v_i`` per
damped-or-not dof, named ``damping[joint]``), so ``Y @ values = M vdot + C v - tau_g + D v``,
what :func:`contactopt.identification.regressor` promises. The energy rows are
``pin.computeKineticEnergyRegressor`` and ``pin.computePotentialEnergyRegressor`` (damping: no
energy). Rows are in the system's public dof order; the dry friction (``<dynamics friction>``) is
a constraint row of the step, not a force of the motion, and has no column here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: Pinocchio's order of the ten parameters (``Inertia.toDynamicParameters``).
TEN = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


def is_pinocchio_urdf(system: object) -> bool:
    """Whether ``system`` is a URDF robot on the pinocchio backend."""
    try:
        from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem
    except ImportError:  # pragma: no cover - the module imports pinocchio lazily
        return False
    return isinstance(system, PinocchioUrdfSystem)


def _joints(system: Any) -> list[int]:
    return list(range(1, system.model.njoints))


def urdf_lumped(system: Any) -> tuple[tuple[str, ...], FloatArray]:
    """``(names, values)``: ten per Pinocchio joint's body, named by the joint
    (``"<joint>.m"``, ...), then the damping of each dof (module docstring)."""
    model = system.model
    names: list[str] = []
    values: list[float] = []
    for j in _joints(system):
        names += [f"{model.names[j]}.{p}" for p in TEN]
        values += [float(x) for x in np.asarray(model.inertias[j].toDynamicParameters())]
    names += [f"damping[{name}]" for name in system.v_names]
    values += [float(x) for x in system.damping]
    return tuple(names), np.array(values, dtype=np.float64)


def urdf_regressor(system: Any, q: FloatArray, v: FloatArray, vdot: FloatArray) -> FloatArray:
    """``Y(q, v, vdot)`` ((nv, 10 n_joints + nv)): Pinocchio's joint-torque regressor in the public
    dof order, then ``diag(v)`` for the damping (module docstring)."""
    pin = system.pin
    Y = np.array(pin.computeJointTorqueRegressor(system.model, system.data, system.pin_q(q), system.pin_v(v),
                                                 system.pin_v(vdot)))[system._dofs]
    return np.hstack([Y, np.diag(v)])


def urdf_energy(system: Any, q: FloatArray, v: FloatArray) -> FloatArray:
    """``h(q, v)`` with ``h @ values = T + U`` (module docstring)."""
    pin, qp = system.pin, system.pin_q(q)
    kinetic = np.array(pin.computeKineticEnergyRegressor(system.model, system.data, qp, system.pin_v(v)))
    potential = np.array(pin.computePotentialEnergyRegressor(system.model, system.data, qp))
    return np.concatenate([kinetic + potential, np.zeros(system.nv)])
