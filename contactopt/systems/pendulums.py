"""Textbook pendulums in manipulator-equation form (Tedrake 2022, "Manipulator Equations")::

    M(q) qddot + C(q, qdot) qdot = tau_g(q) + B u   (+ H^T lambda for bilateral rows,
                                                     + J^T lambda for contacts)

``v = qdot`` throughout (``N(q) = I``), so the base class's ``q' = q + h v'`` is the right
position update. Angles are measured so that ``theta = 0`` hangs **straight down**
(Tedrake's convention), with gravity ``g`` along ``-y``.

* ``pendulum``: one point mass ``m`` on a massless rod ``l``; ``q = [theta]``,
  ``M = m l^2``, ``C = 0``, ``tau_g = -m g l sin(theta)``, ``U = -m g l cos(theta)``.
* ``double_pendulum``: Tedrake 2022, "Simple Double Pendulum" and "Manipulator Equation
  form of the Simple Double Pendulum": point masses, ``q = [theta1, theta2]`` with ``theta2``
  **relative** to link 1. ``M`` and ``tau_g`` are the reference's; ``C`` is the
  Christoffel-symbol matrix (see :meth:`DoublePendulum.C` for why not the printed one).
  Optionally joint 1 follows a prescribed motion (Tedrake 2022, "Bilateral Velocity
  Constraints"): ``qdot1 = b(t) = A w cos(w t)``, i.e. ``theta1(t) = theta1(0) + A sin(w t)``.
* ``cartpole``: "Lagrangian Mechanics" notes, "Cartpole" (Tedrake's angle: ``theta = 0`` hanging down);
  ``q = [x, theta]``, the input is the horizontal force on the cart.
* ``cartesian_pendulum``: "Lagrangian Mechanics" notes, "Example: pendulum": the point mass in Cartesian
  coordinates ``q = [x, y]`` (pivot at the origin, ``y`` up) held on the circle by the
  bilateral position row ``h = x^2 + y^2 - l^2 = 0`` (Tedrake 2022, "Bilateral Position
  Constraints"); optionally a floor line ``y = floor`` it can hit (one 2-D contact).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import Bilateral, Contacts, as_vector
from contactopt.systems.base import (
    CONTACT_PARAMETERS,
    Parameter,
    ParameterError,
    resolve_parameters,
)
from contactopt.systems.manipulator import ManipulatorSystem

FloatArray = NDArray[np.float64]

__all__ = ["CartPole", "CartesianPendulum", "DoublePendulum", "Pendulum"]


def _positive(name: str, doc: str) -> Parameter:
    return Parameter(name, doc, minimum=0.0, exclusive=True)


_GRAVITY = Parameter("g", "gravitational acceleration [m/s^2]", default=9.81)


class Pendulum(ManipulatorSystem):
    """The simple pendulum: point mass ``m`` on a massless rod of length ``l``.

    ``q = [theta]`` (0 hanging down, counterclockwise positive), ``M = m l^2``, ``C = 0``,
    ``tau_g = -m g l sin(theta)``, ``B = [[1]]`` (a torque at the pivot),
    ``U = -m g l cos(theta)``. Tedrake 2022, "Simple Double Pendulum" with one link.
    """

    type_name: ClassVar[str] = "pendulum"
    description: ClassVar[str] = "simple pendulum, q = [theta] (0 hanging down), torque at the pivot"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        _positive("m", "bob mass [kg]"),
        _positive("l", "rod length [m]"),
        _GRAVITY,
    )
    nq = 1
    nv = 1
    q_names = ("theta",)
    v_names = ("thetadot",)

    def M(self, q: ArrayLike) -> FloatArray:
        """``[[m l^2]]`` (Tedrake 2022, "Simple Double Pendulum", one link)."""
        return np.array([[self.params["m"] * self.params["l"] ** 2]])

    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``[[0]]``: the mass matrix is constant (Tedrake 2022, "Manipulator Equations")."""
        return np.zeros((1, 1))

    def tau_g(self, q: ArrayLike) -> FloatArray:
        """``[-m g l sin(theta)] = -dU/dq`` (Tedrake 2022, "Simple Double Pendulum")."""
        theta = float(as_vector(q, "q", 1)[0])
        p = self.params
        return np.array([-p["m"] * p["g"] * p["l"] * math.sin(theta)])

    @property
    def B(self) -> FloatArray:
        """``[[1]]``: a torque at the pivot (Tedrake 2022, "Manipulator Equations")."""
        return np.eye(1)

    def potential_energy(self, q: ArrayLike) -> float:
        """``U = -m g l cos(theta)`` (Tedrake 2022, "Simple Double Pendulum", one link)."""
        theta = float(as_vector(q, "q", 1)[0])
        p = self.params
        return -p["m"] * p["g"] * p["l"] * math.cos(theta)


class DoublePendulum(ManipulatorSystem):
    """The simple double pendulum of Tedrake 2022, "Simple Double Pendulum".

    Point masses ``m1`` at ``p1 = l1 [s1, -c1]`` and ``m2`` at ``p2 = p1 + l2 [s12, -c12]``;
    ``q = [theta1, theta2]``, ``theta2`` relative to link 1; torques at both joints
    (``B = I``). With ``drive_amplitude > 0`` joint 1 follows the prescribed motion
    ``theta1(t) = theta1(0) + A sin(w t)`` as one velocity row (see :meth:`constraints`).
    """

    type_name: ClassVar[str] = "double_pendulum"
    description: ClassVar[str] = ("double pendulum (point masses), q = [theta1, theta2 relative]; "
                                  "optional prescribed motion of joint 1")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        _positive("m1", "mass at the end of link 1 [kg]"),
        _positive("m2", "mass at the end of link 2 [kg]"),
        _positive("l1", "length of link 1 [m]"),
        _positive("l2", "length of link 2 [m]"),
        _GRAVITY,
        Parameter("drive_amplitude", "prescribed motion of joint 1: theta1(0) + A sin(2 pi f t) "
                  "[rad]; 0 leaves joint 1 free", default=0.0, minimum=0.0),
        Parameter("drive_frequency", "frequency f of the prescribed motion [Hz]", default=0.5,
                  minimum=0.0),
    )
    nq = 2
    nv = 2
    q_names = ("theta1", "theta2")
    v_names = ("theta1dot", "theta2dot")

    def M(self, q: ArrayLike) -> FloatArray:
        """Tedrake 2022, "Manipulator Equation form of the Simple Double Pendulum"::

            M = [[(m1 + m2) l1^2 + m2 l2^2 + 2 m2 l1 l2 c2,  m2 l2^2 + m2 l1 l2 c2],
                 [m2 l2^2 + m2 l1 l2 c2,                     m2 l2^2]]
        """
        q2 = float(as_vector(q, "q", 2)[1])
        p = self.params
        m1, m2, l1, l2 = p["m1"], p["m2"], p["l1"], p["l2"]
        c2 = math.cos(q2)
        off = m2 * l2**2 + m2 * l1 * l2 * c2
        return np.array([[(m1 + m2) * l1**2 + m2 * l2**2 + 2.0 * m2 * l1 * l2 * c2, off],
                         [off, m2 * l2**2]])

    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """The Christoffel-symbol Coriolis matrix (Tedrake 2022, "Manipulator Equation form
        of the Simple Double Pendulum", the remark after Asada86 / Slotine90)::

            C = m2 l1 l2 s2 [[-qd2, -(qd1 + qd2)],
                             [ qd1,  0         ]]

        ``C_ij = sum_k Gamma_ijk qd_k`` with ``Gamma_ijk = (dM_ij/dq_k + dM_ik/dq_j -
        dM_jk/dq_i) / 2``. Its product ``C v`` equals the reference's printed ``C`` (2022:
        ``[[0, -k (2 qd1 + qd2)], [k/2 (2 qd1 + qd2), -k qd1 / 2]]``; 2021 text:
        ``[[0, -k (2 qd1 + qd2)], [k qd1, 0]]``, ``k = m2 l1 l2 s2``), hence the same
        dynamics, but neither printed matrix makes ``Mdot - 2C`` skew-symmetric (their
        ``Mdot - 2C`` has diagonal ``-2 k qd2`` and ``k qd1`` resp. ``-2 k qd2``), while this
        one does: ``Mdot - 2C = k (2 qd1 + qd2) [[0, 1], [-1, 0]]`` (the "appropriate choice
        of C" of the reference, which the project's tests check).
        """
        q2 = float(as_vector(q, "q", 2)[1])
        qd1, qd2 = as_vector(v, "v", 2)
        p = self.params
        k = p["m2"] * p["l1"] * p["l2"] * math.sin(q2)
        return k * np.array([[-qd2, -(qd1 + qd2)], [qd1, 0.0]])

    def tau_g(self, q: ArrayLike) -> FloatArray:
        """Tedrake 2022, "Manipulator Equation form of the Simple Double Pendulum"::

            tau_g = -g [(m1 + m2) l1 s1 + m2 l2 s12,  m2 l2 s12]
        """
        q1, q2 = as_vector(q, "q", 2)
        p = self.params
        s1, s12 = math.sin(q1), math.sin(q1 + q2)
        return -p["g"] * np.array([(p["m1"] + p["m2"]) * p["l1"] * s1 + p["m2"] * p["l2"] * s12,
                                   p["m2"] * p["l2"] * s12])

    @property
    def B(self) -> FloatArray:
        """``I``: torques at both joints (Tedrake 2022, "Manipulator Equation form of the
        Simple Double Pendulum")."""
        return np.eye(2)

    def potential_energy(self, q: ArrayLike) -> float:
        """``U = -(m1 + m2) g l1 c1 - m2 g l2 c12`` (Tedrake 2022, "Simple Double Pendulum")."""
        q1, q2 = as_vector(q, "q", 2)
        p = self.params
        return (-(p["m1"] + p["m2"]) * p["g"] * p["l1"] * math.cos(q1)
                - p["m2"] * p["g"] * p["l2"] * math.cos(q1 + q2))

    @property
    def driven(self) -> bool:
        """Whether joint 1 follows the prescribed motion (``drive_amplitude > 0``)."""
        return self.params["drive_amplitude"] > 0.0

    def drive(self, t: float) -> tuple[float, float]:
        """``(b(t), bdot(t)) = (A w cos(w t), -A w^2 sin(w t))``, ``w = 2 pi f``: the velocity
        of joint 1 and its rate under ``theta1(t) = theta1(0) + A sin(w t)`` (Tedrake 2022,
        "Bilateral Velocity Constraints")."""
        amplitude = self.params["drive_amplitude"]
        w = 2.0 * math.pi * self.params["drive_frequency"]
        return amplitude * w * math.cos(w * t), -amplitude * w * w * math.sin(w * t)

    def constraints(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Bilateral:
        """Tedrake 2022, "Bilateral Velocity Constraints": with ``drive_amplitude > 0`` one
        velocity row ``h_v = H v - b(t) = 0``, ``H = dh_v/dv = [1, 0]``, ``b(t) = A w cos(w t)``,
        ``bdot(t) = -A w^2 sin(w t)``; ``dh_v/dq = 0`` so ``Hdot v = 0``. No rows otherwise."""
        if not self.driven:
            return Bilateral.empty(self.nv)
        target, rate = self.drive(t)
        return Bilateral(h=np.zeros(1), H=np.array([[1.0, 0.0]]), Hdot_v=np.zeros(1),
                         target=np.array([target]), target_rate=np.array([rate]),
                         velocity_rows=np.array([True]))


class CartPole(ManipulatorSystem):
    """The cart-pole ("Lagrangian Mechanics" notes, "Cartpole"; Tedrake's convention): a cart of mass ``mc``
    on a horizontal rail and a point mass ``mp`` on a massless pole of length ``l``.

    ``q = [x, theta]``, ``theta = 0`` hanging straight down; the pole mass is at
    ``(x + l sin(theta), -l cos(theta))``; ``u`` a horizontal force on the cart (``B = [1, 0]^T``).
    """

    type_name: ClassVar[str] = "cartpole"
    description: ClassVar[str] = "cart-pole, q = [x, theta] (0 hanging down), force on the cart"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        _positive("mc", "cart mass [kg]"),
        _positive("mp", "pole-tip mass [kg]"),
        _positive("l", "pole length [m]"),
        _GRAVITY,
    )
    nq = 2
    nv = 2
    q_names = ("x", "theta")
    v_names = ("xdot", "thetadot")

    def M(self, q: ArrayLike) -> FloatArray:
        """``[[mc + mp, mp l cos(theta)], [mp l cos(theta), mp l^2]]`` ("Lagrangian Mechanics" notes, "Cartpole")."""
        theta = float(as_vector(q, "q", 2)[1])
        p = self.params
        off = p["mp"] * p["l"] * math.cos(theta)
        return np.array([[p["mc"] + p["mp"], off], [off, p["mp"] * p["l"] ** 2]])

    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``[[0, -mp l thetadot sin(theta)], [0, 0]]`` ("Lagrangian Mechanics" notes, "Cartpole", whose
        ``C qdot = [-mp l thetadot^2 sin(theta), 0]``). It is the Christoffel-symbol matrix:
        ``Mdot - 2C = mp l thetadot sin(theta) [[0, 1], [-1, 0]]`` is skew-symmetric."""
        theta = float(as_vector(q, "q", 2)[1])
        thetadot = float(as_vector(v, "v", 2)[1])
        p = self.params
        return np.array([[0.0, -p["mp"] * p["l"] * thetadot * math.sin(theta)], [0.0, 0.0]])

    def tau_g(self, q: ArrayLike) -> FloatArray:
        """``[0, -mp g l sin(theta)] = -dU/dq`` ("Lagrangian Mechanics" notes, "Cartpole", with theta = 0
        hanging down; the reference writes this vector as ``G`` on the left-hand side with
        the opposite angle convention)."""
        theta = float(as_vector(q, "q", 2)[1])
        p = self.params
        return np.array([0.0, -p["mp"] * p["g"] * p["l"] * math.sin(theta)])

    @property
    def B(self) -> FloatArray:
        """``[[1], [0]]``: a horizontal force on the cart ("Lagrangian Mechanics" notes, "Cartpole")."""
        return np.array([[1.0], [0.0]])

    def potential_energy(self, q: ArrayLike) -> float:
        """``U = -mp g l cos(theta)``: the pole mass at height ``-l cos(theta)`` ("Lagrangian Mechanics" notes,
        "Cartpole", with theta = 0 hanging down)."""
        theta = float(as_vector(q, "q", 2)[1])
        p = self.params
        return -p["mp"] * p["g"] * p["l"] * math.cos(theta)


class CartesianPendulum(ManipulatorSystem):
    """The pendulum in Cartesian coordinates ("Lagrangian Mechanics" notes, "Example: pendulum"): a free
    point mass ``q = [x, y]`` (``y`` up, pivot at the origin) held at distance ``l`` by the
    position row ``h = x^2 + y^2 - l^2 = 0`` (Tedrake 2022, "Bilateral Position Constraints").

    ``M = m I``, ``C = 0``, ``tau_g = [0, -m g]``, ``B = I`` (a force on the mass),
    ``U = m g y``. With ``floor = Y`` in the ``[system]`` table, the mass has one 2-D
    contact with the line ``y = Y``: ``phi = y - Y``, rows ``n = [0, 1]``, ``t = [1, 0]``,
    ``mu`` and restitution from the scene's ``[contact]`` table.
    """

    type_name: ClassVar[str] = "cartesian_pendulum"
    description: ClassVar[str] = ("pendulum as a point mass q = [x, y] on the circle "
                                  "x^2 + y^2 = l^2 (bilateral row), optional floor y = floor")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        _positive("m", "bob mass [kg]"),
        _positive("l", "rod length [m]"),
        _GRAVITY,
    )
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters", "floor"})
    nq = 2
    nv = 2
    contact_dim = 2
    q_names = ("x", "y")
    v_names = ("vx", "vy")

    def __init__(self, params: Mapping[str, float], contact: Mapping[str, float],
                 floor: float | None = None) -> None:
        """Resolved ``params`` and ``contact`` values; ``floor`` the height of the floor
        line (None: no floor, no contacts)."""
        super().__init__(params, contact)
        self.floor = None if floor is None else float(floor)

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> CartesianPendulum:
        """Build from a ``[system]`` table: ``parameters`` and an optional ``floor`` number
        (the height of the floor line). Errors name the key."""
        for key in table:
            if key not in cls.config_keys:
                raise ParameterError(f"system.{key}", f"system.{key}: unknown key for "
                                     f"{cls.type_name}; known: {', '.join(sorted(cls.config_keys))}")
        floor = table.get("floor")
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int | float)
                                  or not math.isfinite(floor)):
            raise ParameterError("system.floor", f"system.floor: expected a finite number, got {floor!r}")
        params = table.get("parameters", {})
        if not isinstance(params, Mapping):
            raise ParameterError("system.parameters", "system.parameters: expected a table")
        return cls(resolve_parameters(cls.parameters, params, "system.parameters"),
                   resolve_parameters(CONTACT_PARAMETERS, contact, "contact"),
                   floor=None if floor is None else float(floor))

    def M(self, q: ArrayLike) -> FloatArray:
        """``m I`` ("Lagrangian Mechanics" notes, "Example: pendulum": ``L = m (xd^2 + yd^2) / 2 - m g y``)."""
        return self.params["m"] * np.eye(2)

    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``0``: Cartesian coordinates of a point mass ("Lagrangian Mechanics" notes, "Example: pendulum")."""
        return np.zeros((2, 2))

    def tau_g(self, q: ArrayLike) -> FloatArray:
        """``[0, -m g] = -dU/dq`` ("Lagrangian Mechanics" notes, "Example: pendulum")."""
        return np.array([0.0, -self.params["m"] * self.params["g"]])

    @property
    def B(self) -> FloatArray:
        """``I``: a force on the mass (Tedrake 2022, "The Manipulator Equations", ``B u``)."""
        return np.eye(2)

    def potential_energy(self, q: ArrayLike) -> float:
        """``U = m g y`` ("Lagrangian Mechanics" notes, "Example: pendulum")."""
        return self.params["m"] * self.params["g"] * float(as_vector(q, "q", 2)[1])

    def constraints(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Bilateral:
        """One position row ("Lagrangian Mechanics" notes, "Example: pendulum", ``c = x^2 + y^2 - l^2``;
        Tedrake 2022, "Bilateral Position Constraints"): ``h = x^2 + y^2 - l^2``,
        ``H = dh/dq = [2x, 2y]``, ``Hdot v = 2 (vx^2 + vy^2)``."""
        x, y = as_vector(q, "q", 2)
        vv = as_vector(v, "v", 2)
        return Bilateral(h=np.array([x * x + y * y - self.params["l"] ** 2]),
                         H=np.array([[2.0 * x, 2.0 * y]]),
                         Hdot_v=np.array([2.0 * float(vv @ vv)]),
                         velocity_rows=np.array([False]))

    def contacts(self, q: ArrayLike) -> Contacts:
        """With a floor: one contact, ``phi = y - floor``, rows ``n = [0, 1]``, ``t = [1, 0]``
        (Tedrake 2022, "The Dynamics of Contact", contact Jacobian ``J = [n; t]``); none
        otherwise."""
        if self.floor is None:
            return Contacts.empty(self.nv, self.contact_dim)
        y = float(as_vector(q, "q", 2)[1])
        return Contacts(phi=np.array([y - self.floor]), J=np.array([[0.0, 1.0], [1.0, 0.0]]),
                        mu=np.array([self.mu]), restitution=np.array([self.restitution]), dim=2)

    def has_friction(self) -> bool:
        """The floor's contact has a tangent row: ``"mu"`` is a parameter with a floor only."""
        return self.floor is not None

    def describe(self) -> str:
        """One line: parameters, floor and contact parameters."""
        floor = "" if self.floor is None else f", floor={self.floor:g}"
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.type_name}({params}{floor}; mu={self.mu:g}, e={self.restitution:g})"
