"""The planar four-bar linkage: a kinematic tree closed by a loop-closure constraint
(Tedrake 2022, "Bilateral Position Constraints": "use the Lagrangian to derive the dynamics
of the unconstrained system (a kinematic tree without the closed-loop constraints), then add
additional generalized forces that ensure that the constraint is always satisfied").

Geometry (vertical plane, ``y`` up, gravity ``-g y``): the crank (length ``a``) turns about
the origin, the coupler (``b``) hangs on the crank's tip, the rocker (``c``) turns about
``(d, 0)``; ``d`` is the ground link. ``q = [theta1, theta2, theta3]`` are the **absolute**
angles from ``+x`` of crank, coupler and rocker; ``v = qdot``. With ``e(th) = (cos th, sin th)``
and ``e'(th) = (-sin th, cos th)`` the links' centres are::

    p1 = a/2 e(th1),   p2 = a e(th1) + b/2 e(th2),   p3 = (d, 0) + c/2 e(th3)

and their 2x3 Jacobians ``J_i = dp_i/dq`` have columns ``a/2 e'(th1)``; ``a e'(th1),
b/2 e'(th2)``; ``c/2 e'(th3)``. The links are uniform slender rods, ``I_i = m_i L_i^2 / 12``
about their centres, and each turns at its own absolute rate. Hence (Tedrake 2022, "The
Manipulator Equations", ``T = 1/2 qdot^T M qdot``)::

    M     = sum_i m_i J_i^T J_i + diag(I_1, I_2, I_3)
    C     = sum_i m_i J_i^T Jdot_i                 (Mdot - 2C = sum m (Jdot^T J - J^T Jdot), skew)
    tau_g = -sum_i m_i g J_i^T [0, 1]  = -dU/dq,   U = sum_i m_i g y_i
    B     = [1, 0, 0]^T                            (a motor torque on the crank)

Loop closure, two position rows: the coupler's far end meets the rocker's tip::

    h(q) = a e(th1) + b e(th2) - (d, 0) - c e(th3) = 0
    H    = dh/dq = [a e'(th1), b e'(th2), -c e'(th3)]
    Hdot v = -a e(th1) th1d^2 - b e(th2) th2d^2 + c e(th3) th3d^2

:meth:`FourBar.default_state` assembles the linkage at ``crank_angle`` on the **elbow-up**
branch: the coupler-rocker joint ``P`` is the intersection of the circles ``|P - A| = b``
(``A = a e(th1)`` the crank tip) and ``|P - D| = c`` (``D = (d, 0)``) that lies to the
**left of the direction A -> D** (above the ground line when the crank is horizontal; the
choice is continuous as a Grashof crank turns, since ``A != D``). Its velocity is the one
in the null space of ``H`` with ``th1d = crank_speed``.

The defaults ``a, b, c, d = 0.2, 0.6, 0.5, 0.5`` are a Grashof crank-rocker: the shortest
link is the crank and ``0.2 + 0.6 <= 0.5 + 0.5``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import Bilateral, as_vector
from contactopt.systems.base import Parameter, ParameterError
from contactopt.systems.manipulator import ManipulatorSystem

FloatArray = NDArray[np.float64]

__all__ = ["FourBar"]


def _e(theta: float) -> FloatArray:
    """``e(th) = (cos th, sin th)``."""
    return np.array([math.cos(theta), math.sin(theta)])


def _de(theta: float) -> FloatArray:
    """``e'(th) = de/dth = (-sin th, cos th)``."""
    return np.array([-math.sin(theta), math.cos(theta)])


def _positive(name: str, doc: str, default: float) -> Parameter:
    return Parameter(name, doc, default=default, minimum=0.0, exclusive=True)


class FourBar(ManipulatorSystem):
    """Planar four-bar linkage in a vertical plane; see the module docstring."""

    type_name: ClassVar[str] = "four_bar"
    description: ClassVar[str] = ("four-bar linkage (crank a, coupler b, rocker c, ground d), "
                                  "q = absolute link angles, loop closure as 2 bilateral rows")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        _positive("a", "crank length [m]", 0.2),
        _positive("b", "coupler length [m]", 0.6),
        _positive("c", "rocker length [m]", 0.5),
        _positive("d", "ground link length: rocker pivot at (d, 0) [m]", 0.5),
        _positive("m1", "crank mass (uniform rod) [kg]", 1.0),
        _positive("m2", "coupler mass (uniform rod) [kg]", 1.0),
        _positive("m3", "rocker mass (uniform rod) [kg]", 1.0),
        Parameter("g", "gravitational acceleration [m/s^2]", default=9.81),
        Parameter("crank_angle", "initial crank angle theta1 from +x [rad]", default=1.0),
        Parameter("crank_speed", "initial crank rate theta1dot [rad/s]", default=0.0),
    )
    nq = 3
    nv = 3
    q_names = ("theta1", "theta2", "theta3")
    v_names = ("theta1dot", "theta2dot", "theta3dot")

    def __init__(self, params: Mapping[str, float], contact: Mapping[str, float]) -> None:
        """Resolved ``params`` and ``contact`` values. Raises :class:`ParameterError` naming
        ``crank_angle`` if the linkage cannot be assembled there (or is at a singular pose)."""
        super().__init__(params, contact)
        p = self.params
        self.lengths: FloatArray = np.array([p["a"], p["b"], p["c"]])
        self.masses: FloatArray = np.array([p["m1"], p["m2"], p["m3"]])
        self.inertias: FloatArray = self.masses * self.lengths**2 / 12.0
        self._initial = self.assemble(p["crank_angle"], p["crank_speed"])

    def _replace_parameters(self, values: Mapping[str, float]) -> FourBar:
        """A fresh construction: lengths, masses, inertias and the assembled initial state are
        derived from the parameters at construction."""
        new = FourBar(*self._replaced_values(values))
        new.control = self.control
        return new

    # -- kinematics ------------------------------------------------------------------------

    def centres(self, q: ArrayLike) -> FloatArray:
        """(3, 2) centres ``p1, p2, p3`` of crank, coupler and rocker: the kinematic tree of
        Tedrake 2022, "Bilateral Position Constraints" (module docstring)."""
        t1, t2, t3 = as_vector(q, "q", 3)
        a, b, c, d = (self.params[k] for k in "abcd")
        return np.array([0.5 * a * _e(t1),
                         a * _e(t1) + 0.5 * b * _e(t2),
                         np.array([d, 0.0]) + 0.5 * c * _e(t3)])

    def joint_points(self, q: ArrayLike) -> FloatArray:
        """(5, 2) polyline of the tree: origin, crank tip ``A``, coupler end, rocker tip,
        rocker pivot ``(d, 0)``; the coupler end and the rocker tip coincide when ``h = 0``
        (Tedrake 2022, "Bilateral Position Constraints": the two ends of the chain meet)."""
        t1, t2, t3 = as_vector(q, "q", 3)
        a, b, c, d = (self.params[k] for k in "abcd")
        pivot = np.array([d, 0.0])
        return np.array([np.zeros(2), a * _e(t1), a * _e(t1) + b * _e(t2), pivot + c * _e(t3), pivot])

    def centre_jacobians(self, q: ArrayLike) -> FloatArray:
        """(3, 2, 3) Jacobians ``J_i = dp_i/dq`` of the three centres (Tedrake 2022, "The
        Manipulator Equations": ``T = 1/2 sum m_i |J_i qdot|^2 + ...``)."""
        t1, t2, t3 = as_vector(q, "q", 3)
        a, b, c = self.lengths
        J = np.zeros((3, 2, 3))
        J[0, :, 0] = 0.5 * a * _de(t1)
        J[1, :, 0] = a * _de(t1)
        J[1, :, 1] = 0.5 * b * _de(t2)
        J[2, :, 2] = 0.5 * c * _de(t3)
        return J

    def centre_jacobian_rates(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """(3, 2, 3) ``Jdot_i = dJ_i/dt``: each column ``L e'(th)`` becomes ``-L e(th) thd``
        (for ``C = sum m_i J_i^T Jdot_i``, Tedrake 2022, "The Manipulator Equations")."""
        t1, t2, t3 = as_vector(q, "q", 3)
        w1, w2, w3 = as_vector(v, "v", 3)
        a, b, c = self.lengths
        Jd = np.zeros((3, 2, 3))
        Jd[0, :, 0] = -0.5 * a * w1 * _e(t1)
        Jd[1, :, 0] = -a * w1 * _e(t1)
        Jd[1, :, 1] = -0.5 * b * w2 * _e(t2)
        Jd[2, :, 2] = -0.5 * c * w3 * _e(t3)
        return Jd

    # -- manipulator equation ----------------------------------------------------------------

    def M(self, q: ArrayLike) -> FloatArray:
        """``sum_i m_i J_i^T J_i + diag(I_i)`` (Tedrake 2022, "The Manipulator Equations",
        ``T = 1/2 qdot^T M qdot`` summed over the links of the tree)."""
        J = self.centre_jacobians(q)
        return np.einsum("i,iak,ial->kl", self.masses, J, J) + np.diag(self.inertias)

    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``sum_i m_i J_i^T Jdot_i``: ``C v`` is the tree's Coriolis/centripetal force
        (Tedrake 2022, "The Manipulator Equations") and ``Mdot - 2C`` is skew-symmetric."""
        J = self.centre_jacobians(q)
        Jd = self.centre_jacobian_rates(q, v)
        return np.einsum("i,iak,ial->kl", self.masses, J, Jd)

    def tau_g(self, q: ArrayLike) -> FloatArray:
        """``-sum_i m_i g J_i^T [0, 1] = -dU/dq`` (Tedrake 2022, "The Manipulator Equations")."""
        J = self.centre_jacobians(q)
        return -self.params["g"] * np.einsum("i,ik->k", self.masses, J[:, 1, :])

    @property
    def B(self) -> FloatArray:
        """``[1, 0, 0]^T``: a motor torque on the crank (Tedrake 2022, "The Manipulator
        Equations", ``B u``)."""
        return np.array([[1.0], [0.0], [0.0]])

    def potential_energy(self, q: ArrayLike) -> float:
        """``U = sum_i m_i g y_i`` with ``y_i`` the height of link ``i``'s centre (Tedrake 2022,
        "Deriving the equations of motion")."""
        return float(self.params["g"] * self.masses @ self.centres(q)[:, 1])

    # -- loop closure --------------------------------------------------------------------------

    def closure(self, q: ArrayLike) -> FloatArray:
        """``h(q) = a e(th1) + b e(th2) - (d, 0) - c e(th3)`` (Tedrake 2022, "Bilateral
        Position Constraints": the two ends of the chain meet)."""
        t1, t2, t3 = as_vector(q, "q", 3)
        a, b, c = self.lengths
        return a * _e(t1) + b * _e(t2) - np.array([self.params["d"], 0.0]) - c * _e(t3)

    def closure_jacobian(self, q: ArrayLike) -> FloatArray:
        """``H = dh/dq = [a e'(th1), b e'(th2), -c e'(th3)]`` (Tedrake 2022, "Bilateral
        Position Constraints")."""
        t1, t2, t3 = as_vector(q, "q", 3)
        a, b, c = self.lengths
        return np.column_stack((a * _de(t1), b * _de(t2), -c * _de(t3)))

    def constraints(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Bilateral:
        """Two position rows (Tedrake 2022, "Bilateral Position Constraints"): ``h``, ``H``
        and ``Hdot v = -a e(th1) th1d^2 - b e(th2) th2d^2 + c e(th3) th3d^2``."""
        t1, t2, t3 = as_vector(q, "q", 3)
        w1, w2, w3 = as_vector(v, "v", 3)
        a, b, c = self.lengths
        hdot_v = -a * w1 * w1 * _e(t1) - b * w2 * w2 * _e(t2) + c * w3 * w3 * _e(t3)
        return Bilateral(h=self.closure(q), H=self.closure_jacobian(q), Hdot_v=hdot_v,
                         velocity_rows=np.zeros(2, dtype=bool))

    # -- assembly --------------------------------------------------------------------------

    def assemble(self, crank_angle: float, crank_speed: float = 0.0) -> tuple[FloatArray, FloatArray]:
        """A closed state ``(q, v)`` with ``th1 = crank_angle`` and ``th1d = crank_speed``:
        ``h(q) = 0`` on the elbow-up branch (circle intersection, module docstring) and
        ``H v = 0`` (Tedrake 2022, "Bilateral Position Constraints": ``hdot = H qdot = 0``).
        Raises :class:`ParameterError` (key ``crank_angle``) if the circles do not meet or the
        pose is singular (coupler and rocker aligned)."""
        key = "system.parameters.crank_angle"
        a, b, c = self.lengths
        d = self.params["d"]
        tip = a * _e(crank_angle)
        r = np.array([d, 0.0]) - tip
        dist = float(np.linalg.norm(r))
        if not (abs(b - c) < dist < b + c):
            raise ParameterError(key, f"{key}: the four-bar (a={a:g}, b={b:g}, c={c:g}, d={d:g}) "
                                 f"cannot be assembled at crank angle {crank_angle:g} rad: the crank "
                                 f"tip is {dist:g} m from the rocker pivot, outside "
                                 f"(|b - c|, b + c) = ({abs(b - c):g}, {b + c:g})")
        along = (b * b - c * c + dist * dist) / (2.0 * dist)
        across = math.sqrt(max(b * b - along * along, 0.0))
        unit = r / dist
        joint = tip + along * unit + across * np.array([-unit[1], unit[0]])  # left of A -> D
        coupler = joint - tip
        rocker = joint - np.array([d, 0.0])
        q = np.array([crank_angle, math.atan2(coupler[1], coupler[0]),
                      math.atan2(rocker[1], rocker[0])])
        H = self.closure_jacobian(q)
        square = H[:, 1:]
        if abs(float(np.linalg.det(square))) < 1e-9 * b * c:
            raise ParameterError(key, f"{key}: the four-bar is at a singular pose (coupler and "
                                 f"rocker aligned) at crank angle {crank_angle:g} rad")
        rest = np.linalg.solve(square, -H[:, 0] * crank_speed)
        return q, np.concatenate(([crank_speed], rest))

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """The closed state at ``crank_angle`` and ``crank_speed`` (:meth:`assemble`): ``h = 0``
        and ``H v = 0`` (Tedrake 2022, "Bilateral Position Constraints")."""
        q, v = self._initial
        return q.copy(), v.copy()
