"""Lumped parameters and the regressor of the textbook systems (Tedrake 2020, "Parameter
Estimation", its first topic, "lumped parameters"): the manipulator equation

    M(q) vdot + C(q, v) v - tau_g(q) = Y(q, v, vdot) alpha

is linear in a set of *lumped parameters* ``alpha``, products and sums of the system's masses
and lengths (Atkeson, An and Hollerbach 1986, "Estimation of inertial parameters of manipulator
loads and links": the dynamics are nonlinear in the physical parameters, linear in these).
Every system parameter except ``g`` is taken as unknown, so a lumped parameter is a monomial (or
a sum of monomials that always occur together); ``g`` is a known constant of the regressor.

The regressors below are derived by hand from each system's own ``M``, ``C`` and ``tau_g``
(contactopt/systems/pendulums.py, four_bar.py); ``tests/test_identification.py`` checks
``Y alpha = M vdot + C v - tau_g`` at random states. With ``c2 = cos(theta2)``,
``s2 = sin(theta2)``, ``s1 = sin(theta1)``, ``s12 = sin(theta1 + theta2)``:

* ``pendulum``: ``alpha = [m l^2, m l]``, ``Y = [thetadd, g sin(theta)]``;
* ``double_pendulum`` (Tedrake 2022, "Manipulator Equation form of the Simple Double
  Pendulum"): ``alpha = [(m1 + m2) l1^2, m2 l2^2, m2 l1 l2, (m1 + m2) l1, m2 l2]``::

      Y = [[qdd1, qdd1 + qdd2, c2 (2 qdd1 + qdd2) - s2 (2 qd1 qd2 + qd2^2), g s1, g s12],
           [0,    qdd1 + qdd2, c2 qdd1 + s2 qd1^2,                          0,    g s12]]

* ``cartpole``: ``alpha = [mc + mp, mp l, mp l^2]``::

      Y = [[xdd, cos(theta) thetadd - sin(theta) thetad^2, 0      ],
           [0,   cos(theta) xdd + g sin(theta),            thetadd]]

* ``cartesian_pendulum``: ``alpha = [m]``, ``Y = [[xdd], [ydd + g]]`` (the rod's force is
  a bilateral impulse, not part of ``Y``);
* ``four_bar`` (the kinematic tree of the linkage, absolute angles, ``D = th2 - th1``)::

      T = 1/2 a1 w1^2 + a2 w1 w2 cos D + 1/2 a3 w2^2 + 1/2 a4 w3^2
      U = g (a5 sin th1 + a6 sin th2 + a7 sin th3)
      alpha = [m1 a^2/3 + m2 a^2, m2 a b/2, m2 b^2/3, m3 c^2/3, m1 a/2 + m2 a, m2 b/2, m3 c/2]
      Y = [[wd1, wd2 cos D - w2^2 sin D, 0,   0,   g cos th1, 0,         0        ],
           [0,   wd1 cos D + w1^2 sin D, wd2, 0,   0,         g cos th2, 0        ],
           [0,   0,                      0,   wd3, 0,         0,         g cos th3]]

  (the loop-closure force is a bilateral impulse, not part of ``Y``).

The total energy ``H = T + U`` is linear in the same ``alpha`` (Tedrake 2020, "Parameter
Estimation", the power/energy formulation): :func:`energy_regressor` returns ``h`` with
``H = h(q, v) alpha``. Its kinetic part is read off the regressor, ``T = 1/2 v^T M v`` with
``M v = Y(q, 0, v) - Y(q, 0, 0)``; its potential part is given per system (the systems'
own ``potential_energy``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ContactoptError
from contactopt.identification.urdf import is_pinocchio_urdf, urdf_energy, urdf_lumped, urdf_regressor
from contactopt.model.step import as_vector
from contactopt.systems.base import System
from contactopt.systems.four_bar import FourBar
from contactopt.systems.pendulums import CartesianPendulum, CartPole, DoublePendulum, Pendulum

FloatArray = NDArray[np.float64]

__all__ = ["IdentificationError", "Lumped", "energy_regressor", "lumped_parameters", "regressor"]


class IdentificationError(ContactoptError, ValueError):
    """A system, data set or argument that parameter identification cannot take: the message
    says which and why."""


@dataclass(frozen=True)
class Lumped:
    """The lumped parameters of a system (Tedrake 2020, "Parameter Estimation", "Lumped
    parameters"): ``names[i]`` is a readable combination of the system's parameters and
    ``values[i]`` its value at the system's current parameters."""

    names: tuple[str, ...]
    values: FloatArray

    def __len__(self) -> int:
        return len(self.names)

    def as_dict(self) -> dict[str, float]:
        """``{name: value}``."""
        return dict(zip(self.names, (float(x) for x in self.values), strict=True))


# --- textbook systems: names, values, Y(q, v, vdot) and the potential-energy row -------------------

def _pendulum(p: dict[str, float]) -> tuple[tuple[str, ...], list[float]]:
    return ("m*l^2", "m*l"), [p["m"] * p["l"] ** 2, p["m"] * p["l"]]


def _pendulum_y(g: float, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
    return np.array([[a[0], g * math.sin(q[0])]])


def _pendulum_u(g: float, q: FloatArray) -> FloatArray:
    return np.array([0.0, -g * math.cos(q[0])])


def _double(p: dict[str, float]) -> tuple[tuple[str, ...], list[float]]:
    m1, m2, l1, l2 = p["m1"], p["m2"], p["l1"], p["l2"]
    return (("(m1+m2)*l1^2", "m2*l2^2", "m2*l1*l2", "(m1+m2)*l1", "m2*l2"),
            [(m1 + m2) * l1**2, m2 * l2**2, m2 * l1 * l2, (m1 + m2) * l1, m2 * l2])


def _double_y(g: float, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    s1, s12 = math.sin(q[0]), math.sin(q[0] + q[1])
    return np.array([
        [a[0], a[0] + a[1], c2 * (2 * a[0] + a[1]) - s2 * (2 * v[0] * v[1] + v[1] ** 2), g * s1, g * s12],
        [0.0, a[0] + a[1], c2 * a[0] + s2 * v[0] ** 2, 0.0, g * s12]])


def _double_u(g: float, q: FloatArray) -> FloatArray:
    return np.array([0.0, 0.0, 0.0, -g * math.cos(q[0]), -g * math.cos(q[0] + q[1])])


def _cartpole(p: dict[str, float]) -> tuple[tuple[str, ...], list[float]]:
    return ("mc+mp", "mp*l", "mp*l^2"), [p["mc"] + p["mp"], p["mp"] * p["l"], p["mp"] * p["l"] ** 2]


def _cartpole_y(g: float, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
    c, s = math.cos(q[1]), math.sin(q[1])
    return np.array([[a[0], c * a[1] - s * v[1] ** 2, 0.0],
                     [0.0, c * a[0] + g * s, a[1]]])


def _cartpole_u(g: float, q: FloatArray) -> FloatArray:
    return np.array([0.0, -g * math.cos(q[1]), 0.0])


def _cartesian(p: dict[str, float]) -> tuple[tuple[str, ...], list[float]]:
    return ("m",), [p["m"]]


def _cartesian_y(g: float, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
    return np.array([[a[0]], [a[1] + g]])


def _cartesian_u(g: float, q: FloatArray) -> FloatArray:
    return np.array([g * q[1]])


def _four_bar(p: dict[str, float]) -> tuple[tuple[str, ...], list[float]]:
    a, b, c, m1, m2, m3 = p["a"], p["b"], p["c"], p["m1"], p["m2"], p["m3"]
    return (("m1*a^2/3+m2*a^2", "m2*a*b/2", "m2*b^2/3", "m3*c^2/3", "m1*a/2+m2*a", "m2*b/2", "m3*c/2"),
            [m1 * a**2 / 3 + m2 * a**2, m2 * a * b / 2, m2 * b**2 / 3, m3 * c**2 / 3, m1 * a / 2 + m2 * a,
             m2 * b / 2, m3 * c / 2])


def _four_bar_y(g: float, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
    d = q[1] - q[0]
    cd, sd = math.cos(d), math.sin(d)
    return np.array([
        [a[0], a[1] * cd - v[1] ** 2 * sd, 0.0, 0.0, g * math.cos(q[0]), 0.0, 0.0],
        [0.0, a[0] * cd + v[0] ** 2 * sd, a[1], 0.0, 0.0, g * math.cos(q[1]), 0.0],
        [0.0, 0.0, 0.0, a[2], 0.0, 0.0, g * math.cos(q[2])]])


def _four_bar_u(g: float, q: FloatArray) -> FloatArray:
    return g * np.array([0.0, 0.0, 0.0, 0.0, math.sin(q[0]), math.sin(q[1]), math.sin(q[2])])


_Names = Callable[[dict[str, float]], tuple[tuple[str, ...], list[float]]]
_Y = Callable[[float, FloatArray, FloatArray, FloatArray], FloatArray]
_U = Callable[[float, FloatArray], FloatArray]

#: Per textbook system class: (names and values, Y(g, q, v, vdot), potential row u(g, q), U = u alpha).
TEXTBOOK: dict[type[System], tuple[_Names, _Y, _U]] = {
    Pendulum: (_pendulum, _pendulum_y, _pendulum_u),
    DoublePendulum: (_double, _double_y, _double_u),
    CartPole: (_cartpole, _cartpole_y, _cartpole_u),
    CartesianPendulum: (_cartesian, _cartesian_y, _cartesian_u),
    FourBar: (_four_bar, _four_bar_y, _four_bar_u),
}


def _textbook(system: System) -> tuple[_Names, _Y, _U] | None:
    for cls in type(system).__mro__:
        if cls in TEXTBOOK:
            return TEXTBOOK[cls]
    return None


def _is_rigid3d(system: object) -> bool:
    from contactopt.systems.rigid3d import Rigid3D

    return isinstance(system, Rigid3D)


def _is_mjcf(system: object) -> bool:
    from contactopt.systems.mjcf.system import MjcfSystem

    return isinstance(system, MjcfSystem)


def _refuse(system: object, function: str) -> IdentificationError:
    known = ", ".join(sorted(cls.type_name for cls in TEXTBOOK))
    name = getattr(system, "type_name", type(system).__name__)
    return IdentificationError(f"{function}: no lumped parameters for a {name!r} system; known: {known}, "
                               "rigid3d, mjcf and urdf (pinocchio backend)")


def check_system(system: object, function: str) -> System:
    """``system`` if identification knows it (a textbook system above or an MJCF model)."""
    if not isinstance(system, System):
        raise IdentificationError(f"{function}: system must be a contactopt System, got {type(system).__name__}")
    known = _textbook(system) is not None or _is_mjcf(system) or _is_rigid3d(system) or is_pinocchio_urdf(system)
    if not known:
        raise _refuse(system, function)
    return system


def lumped_parameters(system: System) -> Lumped:
    """The lumped parameters of ``system`` and their values at its parameters (Tedrake 2020,
    "Parameter Estimation", "Lumped parameters"; module docstring). MJCF models: the standard
    ten per moving body and the joints' damping, armature and friction loss
    (:mod:`contactopt.identification.mjcf`); ``rigid3d`` bodies likewise, ten each
    (:mod:`contactopt.identification.rigid3d`)."""
    check_system(system, "lumped_parameters")
    if is_pinocchio_urdf(system):  # Pinocchio's regressors (contactopt.identification.urdf)
        return Lumped(*urdf_lumped(system))
    if _is_rigid3d(system):
        from contactopt.identification.rigid3d import rigid3d_lumped

        return Lumped(*rigid3d_lumped(system))
    entry = _textbook(system)
    if entry is None:
        from contactopt.identification.mjcf import mjcf_regressor

        layout = mjcf_regressor(system)
        return Lumped(layout.names, layout.values.copy())
    names, values = entry[0](dict(system.params))
    return Lumped(names, np.array(values, dtype=np.float64))


def _state(system: System, q: ArrayLike, v: ArrayLike, vdot: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    return as_vector(q, "q", system.nq), as_vector(v, "v", system.nv), as_vector(vdot, "vdot", system.nv)


def regressor(system: System, q: ArrayLike, v: ArrayLike, vdot: ArrayLike) -> FloatArray:
    """``Y(q, v, vdot)``, (nv, p): ``Y @ lumped_parameters(system).values`` is the generalized
    force the motion needs, ``M vdot + C v - tau_g`` (Tedrake 2020, "Parameter Estimation",
    "Lumped parameters"; module docstring), which equals ``B u`` plus the constraint and
    contact forces (:func:`contactopt.identification.applied_force`). MJCF models: MuJoCo's
    inverse dynamics ``mj_inverse`` without constraints, less the part that no parameter
    multiplies (springs; :func:`contactopt.identification.mjcf.MjcfRegressor.at`)."""
    check_system(system, "regressor")
    qv, vv, av = _state(system, q, v, vdot)
    if is_pinocchio_urdf(system):
        return urdf_regressor(system, qv, vv, av)
    if _is_rigid3d(system):
        from contactopt.identification.rigid3d import rigid3d_regressor

        return rigid3d_regressor(system, qv, vv, av)
    entry = _textbook(system)
    if entry is None:
        from contactopt.identification.mjcf import mjcf_regressor

        return mjcf_regressor(system).at(qv, vv, av)[0]
    return entry[1](float(system.params["g"]), qv, vv, av)


def energy_regressor(system: System, q: ArrayLike, v: ArrayLike) -> FloatArray:
    """``h(q, v)``, (p,): the total energy ``H = T + U = h @ alpha`` (Tedrake 2020, "Parameter
    Estimation", the power formulation; module docstring)."""
    check_system(system, "energy_regressor")
    qv, vv, _ = _state(system, q, v, np.zeros(system.nv))
    if is_pinocchio_urdf(system):
        return urdf_energy(system, qv, vv)
    if _is_rigid3d(system):
        from contactopt.identification.rigid3d import rigid3d_energy

        return rigid3d_energy(system, qv, vv)
    entry = _textbook(system)
    if entry is None:
        from contactopt.identification.mjcf import mjcf_regressor

        return mjcf_regressor(system).energy(qv, vv)
    g = float(system.params["g"])
    zero = np.zeros(system.nv)
    mass_times_v = entry[1](g, qv, zero, vv) - entry[1](g, qv, zero, zero)  # rows of M v in alpha
    return 0.5 * vv @ mass_times_v + entry[2](g, qv)
