"""The textbook systems: pendulum, double_pendulum, cartpole, cartesian_pendulum, four_bar.

Every check is a number fixed by physics or by the references:

* the double pendulum's ``M``, ``C v`` and ``tau_g`` against the closed forms typed in from
  Tedrake 2022, "Manipulator Equation form of the Simple Double Pendulum";
* ``Mdot - 2C`` skew-symmetric (Tedrake 2022 after Slotine90; the text's "M - 2C" is a typo)
  with ``Mdot`` by central differences along ``v``;
* ``C v`` against the Christoffel form ``[C v]_i = sum_jk (dM_ij/dq_k - 1/2 dM_jk/dq_i) v_j v_k``
  (Tedrake 2022 after Asada86) with ``dM/dq`` by central differences;
* ``M qddot + C qdot - tau_g`` against the Euler-Lagrange residual ``d/dt dL/dqdot - dL/dq`` of
  a Lagrangian written here independently from the kinematics (point positions, link angles);
* ``tau_g = -dU/dq``; constraint Jacobians ``H = dh/dq`` and ``Hdot v = d(H v)/dt``; the
  four-bar's assembled state closes the loop; contact rows are ``d(gap)/dq``.

Finite differences are central. ``EPS = 1e-6`` on O(1) functions: truncation ``~EPS^2 = 1e-12``,
round-off ``~1e-16 / EPS = 1e-10``, so ``FD_TOL = 1e-7`` leaves a wide margin and still catches
any wrong term (O(1) at the random states used). The Euler-Lagrange check differentiates twice
(see :func:`_euler_lagrange`) and uses ``EL_TOL = 1e-6``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import SceneError
from contactopt.systems import (
    CartesianPendulum,
    CartPole,
    DoublePendulum,
    FourBar,
    ParameterError,
    Pendulum,
)
from contactopt.systems.manipulator import ManipulatorSystem

EPS = 1e-6
FD_TOL = 1e-7
EL_TOL = 1e-6
G = 9.81
PROBLEMS = Path(__file__).resolve().parent.parent / "problems"

DP = {"m1": 1.3, "m2": 0.7, "l1": 1.1, "l2": 0.8}
CP = {"mc": 1.2, "mp": 0.4, "l": 0.6}
FB = {"a": 0.2, "b": 0.6, "c": 0.5, "d": 0.5, "m1": 0.8, "m2": 1.1, "m3": 0.9}


def _make(cls: type[ManipulatorSystem], params: dict[str, Any], contact: dict[str, Any] | None = None,
          **table: Any) -> Any:
    return cls.from_config({"parameters": params, **table}, contact or {})


def _double_pendulum(**extra: float) -> DoublePendulum:
    system: DoublePendulum = _make(DoublePendulum, {**DP, **extra})
    return system


def _cartpole() -> CartPole:
    system: CartPole = _make(CartPole, CP)
    return system


def _four_bar(**extra: float) -> FourBar:
    system: FourBar = _make(FourBar, {**FB, **extra})
    return system


def _states(system: ManipulatorSystem, count: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-math.pi, math.pi, system.nq), rng.normal(size=system.nv)) for _ in range(count)]


def _dM_dq(system: ManipulatorSystem, q: np.ndarray) -> np.ndarray:
    """(n, n, n) array ``D[i, j, k] = dM_ij / dq_k`` by central differences."""
    n = q.shape[0]
    D = np.zeros((n, n, n))
    for k in range(n):
        step = np.zeros(n)
        step[k] = EPS
        D[:, :, k] = (system.M(q + step) - system.M(q - step)) / (2 * EPS)
    return D


# -- kinematics written here, independently of the systems, for the Lagrangian checks ----------
#: Each returns (masses, points (k, 2) as functions of q, rotational inertias, link angles).
Kinematics = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _dp_points(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tedrake 2022, "Simple Double Pendulum": p1 = l1 [s1, -c1], p2 = p1 + l2 [s12, -c12]."""
    p1 = DP["l1"] * np.array([np.sin(q[0]), -np.cos(q[0])])
    p2 = p1 + DP["l2"] * np.array([np.sin(q[0] + q[1]), -np.cos(q[0] + q[1])])
    return np.array([p1, p2]), np.zeros(0, dtype=q.dtype)


def _cp_points(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cart at (x, 0), pole mass at (x + l sin(theta), -l cos(theta))."""
    cart = np.array([q[0], 0.0 * q[0]])
    pole = np.array([q[0] + CP["l"] * np.sin(q[1]), -CP["l"] * np.cos(q[1])])
    return np.array([cart, pole]), np.zeros(0, dtype=q.dtype)


def _fb_points(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Link centres of the four-bar tree and the links' absolute angles."""
    a, b, c, d = FB["a"], FB["b"], FB["c"], FB["d"]
    tip = a * np.array([np.cos(q[0]), np.sin(q[0])])
    p1 = tip / 2
    p2 = tip + b / 2 * np.array([np.cos(q[1]), np.sin(q[1])])
    p3 = np.array([d + 0.0 * q[2], 0.0 * q[2]]) + c / 2 * np.array([np.cos(q[2]), np.sin(q[2])])
    return np.array([p1, p2, p3]), q


def _lagrangian(points: Kinematics, masses: np.ndarray, inertias: np.ndarray) -> Callable[
        [np.ndarray, np.ndarray], float]:
    """``L(q, qdot) = sum 1/2 m |pdot|^2 + sum 1/2 I angledot^2 - sum m g y``; velocities by the
    complex step ``Im f(q + i h qdot) / h`` (exact to round-off, no subtraction)."""
    h = 1e-30

    def L(q: np.ndarray, qd: np.ndarray) -> float:
        p_c, a_c = points(q + 1j * h * qd)
        pdot, adot = p_c.imag / h, np.asarray(a_c).imag / h
        y = points(q)[0][:, 1]
        T = 0.5 * float(masses @ (pdot**2).sum(axis=1)) + 0.5 * float(inertias @ adot**2)
        return T - G * float(masses @ y)

    return L


def _euler_lagrange(L: Callable[[np.ndarray, np.ndarray], float], q: np.ndarray, qd: np.ndarray,
                    qdd: np.ndarray) -> np.ndarray:
    """``d/dt dL/dqdot - dL/dq`` along ``q(t) = q + t qd + t^2/2 qdd`` at ``t = 0``.

    ``dL/dqdot`` by central differences with a large step (``L`` is quadratic in ``qdot``,
    so the difference is exact but for round-off ~1e-13), its time derivative by central
    differences in ``t`` (step 1e-4: truncation ~1e-8, round-off ~1e-9), ``dL/dq`` with EPS.
    """
    n = q.shape[0]
    eye = np.eye(n)

    def momentum(t: float) -> np.ndarray:
        qt, qdt = q + t * qd + 0.5 * t * t * qdd, qd + t * qdd
        return np.array([(L(qt, qdt + 1e-2 * e) - L(qt, qdt - 1e-2 * e)) / 2e-2 for e in eye])

    dt = 1e-4
    pdot = (momentum(dt) - momentum(-dt)) / (2 * dt)
    dLdq = np.array([(L(q + EPS * e, qd) - L(q - EPS * e, qd)) / (2 * EPS) for e in eye])
    return pdot - dLdq


# -- double pendulum against Tedrake 2022 ---------------------------------------------------

def test_double_pendulum_matches_reference_closed_forms() -> None:
    """Tedrake 2022, "Manipulator Equation form of the Simple Double Pendulum": M and tau_g
    verbatim, and C v equal to the product of the reference's printed C (2022 text) and of
    the 2021 text's C (Tedrake 2021) -- the C returned differs but has the same product."""
    system = _double_pendulum()
    m1, m2, l1, l2 = DP["m1"], DP["m2"], DP["l1"], DP["l2"]
    for q, v in _states(system, 8):
        c2, s2 = math.cos(q[1]), math.sin(q[1])
        s1, s12 = math.sin(q[0]), math.sin(q[0] + q[1])
        qd1, qd2 = v
        M_ref = np.array([[(m1 + m2) * l1**2 + m2 * l2**2 + 2 * m2 * l1 * l2 * c2,
                           m2 * l2**2 + m2 * l1 * l2 * c2],
                          [m2 * l2**2 + m2 * l1 * l2 * c2, m2 * l2**2]])
        C_2022 = np.array([[0.0, -m2 * l1 * l2 * (2 * qd1 + qd2) * s2],
                           [0.5 * m2 * l1 * l2 * (2 * qd1 + qd2) * s2, -0.5 * m2 * l1 * l2 * qd1 * s2]])
        C_2021 = np.array([[0.0, -m2 * l1 * l2 * (2 * qd1 + qd2) * s2], [m2 * l1 * l2 * qd1 * s2, 0.0]])
        tau_ref = -G * np.array([(m1 + m2) * l1 * s1 + m2 * l2 * s12, m2 * l2 * s12])
        # The equations of motion of "Simple Double Pendulum", Coriolis terms written out:
        Cv_eom = np.array([-m2 * l1 * l2 * (2 * qd1 + qd2) * qd2 * s2, m2 * l1 * l2 * qd1**2 * s2])
        np.testing.assert_allclose(system.M(q), M_ref, rtol=0, atol=1e-13)
        np.testing.assert_allclose(system.tau_g(q), tau_ref, rtol=0, atol=1e-13)
        Cv = system.C(q, v) @ v
        for expected in (C_2022 @ v, C_2021 @ v, Cv_eom):
            np.testing.assert_allclose(Cv, expected, rtol=0, atol=1e-13)
        np.testing.assert_array_equal(system.B, np.eye(2))
        U_ref = -(m1 + m2) * G * l1 * math.cos(q[0]) - m2 * G * l2 * math.cos(q[0] + q[1])
        assert system.potential_energy(q) == pytest.approx(U_ref, abs=1e-13)


def test_double_pendulum_printed_c_matrices_are_not_the_skew_choice() -> None:
    """Why the system returns the Christoffel C: the reference's printed C (both texts) gives
    ``Mdot - 2C`` with a non-zero diagonal; the returned one gives ``k (2 qd1 + qd2) [[0, 1],
    [-1, 0]]``, ``k = m2 l1 l2 s2``."""
    system = _double_pendulum()
    m2, l1, l2 = DP["m2"], DP["l1"], DP["l2"]
    q, v = np.array([0.3, 0.9]), np.array([0.7, -1.1])
    k = m2 * l1 * l2 * math.sin(q[1])
    Mdot = (system.M(q + EPS * v) - system.M(q - EPS * v)) / (2 * EPS)
    C_2022 = k * np.array([[0.0, -(2 * v[0] + v[1])], [0.5 * (2 * v[0] + v[1]), -0.5 * v[0]]])
    assert abs(np.diag(Mdot - 2 * C_2022)).max() > 0.1
    np.testing.assert_allclose(Mdot - 2 * system.C(q, v), k * (2 * v[0] + v[1]) * np.array([[0, 1], [-1, 0]]),
                               rtol=0, atol=FD_TOL)


# -- identities for every system with a configuration-dependent M ------------------------------

SYSTEMS: dict[str, Callable[[], ManipulatorSystem]] = {
    "pendulum": lambda: _make(Pendulum, {"m": 1.3, "l": 0.7}),
    "double_pendulum": _double_pendulum,
    "cartpole": _cartpole,
    "cartesian_pendulum": lambda: _make(CartesianPendulum, {"m": 1.3, "l": 0.7}),
    "four_bar": _four_bar,
}


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_mdot_minus_2c_is_skew_symmetric(name: str) -> None:
    """Tedrake 2022 after Slotine90: ``Mdot - 2C`` skew for the C each system returns."""
    system = SYSTEMS[name]()
    for q, v in _states(system):
        Mdot = (system.M(q + EPS * v) - system.M(q - EPS * v)) / (2 * EPS)
        S = Mdot - 2 * system.C(q, v)
        np.testing.assert_allclose(S + S.T, 0.0, rtol=0, atol=FD_TOL)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_coriolis_product_equals_christoffel_form(name: str) -> None:
    """Tedrake 2022 after Asada86: ``[C v]_i = sum_jk (dM_ij/dq_k - 1/2 dM_jk/dq_i) v_j v_k``."""
    system = SYSTEMS[name]()
    for q, v in _states(system):
        D = _dM_dq(system, q)
        christoffel = np.einsum("ijk,j,k->i", D, v, v) - 0.5 * np.einsum("jki,j,k->i", D, v, v)
        np.testing.assert_allclose(system.C(q, v) @ v, christoffel, rtol=0, atol=FD_TOL)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_gravity_is_minus_potential_gradient(name: str) -> None:
    """``tau_g = -dU/dq`` (Tedrake 2022, "Deriving the equations of motion")."""
    system = SYSTEMS[name]()
    for q, _ in _states(system):
        grad = np.array([(system.potential_energy(q + EPS * e) - system.potential_energy(q - EPS * e))
                         / (2 * EPS) for e in np.eye(system.nq)])
        np.testing.assert_allclose(system.tau_g(q), -grad, rtol=0, atol=FD_TOL)


@pytest.mark.parametrize(("name", "points", "masses", "inertias"), [
    ("double_pendulum", _dp_points, np.array([DP["m1"], DP["m2"]]), np.zeros(0)),
    ("cartpole", _cp_points, np.array([CP["mc"], CP["mp"]]), np.zeros(0)),
    ("four_bar", _fb_points, np.array([FB["m1"], FB["m2"], FB["m3"]]),
     np.array([FB["m1"] * FB["a"] ** 2, FB["m2"] * FB["b"] ** 2, FB["m3"] * FB["c"] ** 2]) / 12),
])
def test_manipulator_form_matches_independent_lagrangian(name: str, points: Kinematics, masses: np.ndarray,
                                                         inertias: np.ndarray) -> None:
    """``M qddot + C qdot - tau_g = d/dt dL/dqdot - dL/dq`` (Tedrake 2022, "Deriving the
    equations of motion"), with ``L = T - U`` built here from the kinematics; also
    ``T = 1/2 qdot^T M qdot``."""
    system = SYSTEMS[name]()
    L = _lagrangian(points, masses, inertias)
    rng = np.random.default_rng(7)
    for q, qd in _states(system, 4, seed=3):
        qdd = rng.normal(size=system.nv)
        lhs = system.M(q) @ qdd + system.C(q, qd) @ qd - system.tau_g(q)
        np.testing.assert_allclose(lhs, _euler_lagrange(L, q, qd, qdd), rtol=0, atol=EL_TOL)
        kinetic = L(q, qd) - L(q, np.zeros_like(qd))
        assert system.energy(q, qd)[0] == pytest.approx(kinetic, rel=1e-12)


def test_dynamics_assembles_tau_from_the_parts() -> None:
    """``Dynamics.tau = tau_g + B u - C v`` (Tedrake 2022, "The Manipulator Equations")."""
    system = _cartpole()
    q, v, u = np.array([0.2, 1.1]), np.array([-0.4, 0.8]), np.array([2.5])
    dyn = system.dynamics(q, v, u)
    np.testing.assert_allclose(dyn.tau, system.tau_g(q) + system.B @ u - system.C(q, v) @ v, atol=1e-15)
    np.testing.assert_array_equal(dyn.M, system.M(q))


# -- pendulum and cart-pole closed forms ------------------------------------------------------

def test_pendulum_closed_forms() -> None:
    system = _make(Pendulum, {"m": 2.0, "l": 0.5})
    q = np.array([0.7])
    assert system.M(q)[0, 0] == pytest.approx(2.0 * 0.25)
    assert system.tau_g(q)[0] == pytest.approx(-2.0 * G * 0.5 * math.sin(0.7))
    assert system.potential_energy(q) == pytest.approx(-2.0 * G * 0.5 * math.cos(0.7))
    assert system.potential_energy(np.zeros(1)) < system.potential_energy(q)  # theta = 0 hangs down
    np.testing.assert_array_equal(system.C(q, np.ones(1)), 0.0)
    np.testing.assert_array_equal(system.B, [[1.0]])


def test_cartpole_closed_forms() -> None:
    """The "Lagrangian Mechanics" notes, "Cartpole" with theta = 0 hanging down."""
    system = _cartpole()
    mc, mp, length = CP["mc"], CP["mp"], CP["l"]
    q, v = np.array([0.3, 2.2]), np.array([0.5, -1.7])
    c, s = math.cos(2.2), math.sin(2.2)
    np.testing.assert_allclose(system.M(q), [[mc + mp, mp * length * c], [mp * length * c, mp * length**2]],
                               atol=1e-15)
    np.testing.assert_allclose(system.C(q, v) @ v, [-mp * length * v[1] ** 2 * s, 0.0], atol=1e-15)
    np.testing.assert_allclose(system.tau_g(q), [0.0, -mp * G * length * s], atol=1e-15)
    np.testing.assert_array_equal(system.B, [[1.0], [0.0]])


# -- Cartesian pendulum ---------------------------------------------------------------------------

def test_cartesian_pendulum_constraint_row() -> None:
    """The "Lagrangian Mechanics" notes, "Example: pendulum": ``h = x^2 + y^2 - l^2``; ``H = dh/dq`` and
    ``Hdot v = d(H v)/dt`` by central differences; one position row."""
    system = _make(CartesianPendulum, {"m": 1.3, "l": 0.7})
    for q, v in _states(system):
        rows = system.constraints(q, v)
        assert rows.count == 1
        assert not rows.velocity_rows[0]
        np.testing.assert_array_equal(rows.target, [0.0])
        assert rows.h[0] == pytest.approx(q @ q - 0.49, abs=1e-15)
        grad = [(system.constraints(q + EPS * e, v).h[0] - system.constraints(q - EPS * e, v).h[0])
                / (2 * EPS) for e in np.eye(2)]
        np.testing.assert_allclose(rows.H[0], grad, rtol=0, atol=FD_TOL)
        ahead, behind = system.constraints(q + EPS * v, v).H, system.constraints(q - EPS * v, v).H
        rate = (ahead @ v - behind @ v) / (2 * EPS)
        np.testing.assert_allclose(rows.Hdot_v, rate, rtol=0, atol=FD_TOL)
    assert system.contacts(np.array([0.0, -0.7])).count == 0
    assert system.contacts(np.array([0.0, -0.7])).dim == 2
    np.testing.assert_array_equal(system.M(np.zeros(2)), 1.3 * np.eye(2))
    assert system.potential_energy(np.array([0.2, -0.5])) == pytest.approx(1.3 * G * -0.5)


def test_cartesian_pendulum_floor_contact() -> None:
    """``phi = y - floor``; rows ``n = dphi/dq = [0, 1]``, ``t = d x/dq = [1, 0]``; mu, e from
    the scene's [contact] table."""
    system = _make(CartesianPendulum, {"m": 1.0, "l": 1.0}, {"mu": 0.3, "restitution": 0.2}, floor=-0.8)
    q = np.array([0.6, -0.75])
    contacts = system.contacts(q)
    assert contacts.count == 1 and contacts.dim == 2
    assert contacts.phi[0] == pytest.approx(0.05, abs=1e-15)
    for row, gap in zip(contacts.J, (lambda p: p[1] + 0.8, lambda p: p[0]), strict=True):
        grad = [(gap(q + EPS * e) - gap(q - EPS * e)) / (2 * EPS) for e in np.eye(2)]
        np.testing.assert_allclose(row, grad, rtol=0, atol=FD_TOL)
    np.testing.assert_array_equal(contacts.J, [[0.0, 1.0], [1.0, 0.0]])
    assert contacts.mu[0] == 0.3 and contacts.restitution[0] == 0.2
    assert "floor=-0.8" in system.describe()


def test_cartesian_pendulum_floor_key_is_validated() -> None:
    with pytest.raises(ParameterError, match=r"system\.floor") as info:
        _make(CartesianPendulum, {"m": 1.0, "l": 1.0}, floor="low")
    assert info.value.key == "system.floor"
    with pytest.raises(ParameterError, match=r"system\.ceiling"):
        _make(CartesianPendulum, {"m": 1.0, "l": 1.0}, ceiling=1.0)


# -- four-bar -------------------------------------------------------------------------------------

def test_four_bar_closure_jacobians() -> None:
    """Tedrake 2022, "Bilateral Position Constraints": ``H = dh/dq``, ``Hdot v = d(H v)/dt``."""
    system = _four_bar()
    for q, v in _states(system):
        rows = system.constraints(q, v)
        assert rows.count == 2 and not rows.velocity_rows.any()
        h = system.closure(q)
        t1, t2, t3 = q
        expected = (FB["a"] * np.array([math.cos(t1), math.sin(t1)])
                    + FB["b"] * np.array([math.cos(t2), math.sin(t2)])
                    - np.array([FB["d"], 0.0]) - FB["c"] * np.array([math.cos(t3), math.sin(t3)]))
        np.testing.assert_allclose(rows.h, expected, atol=1e-15)
        np.testing.assert_allclose(rows.h, h, atol=0)
        grad = np.column_stack([(system.closure(q + EPS * e) - system.closure(q - EPS * e)) / (2 * EPS)
                                for e in np.eye(3)])
        np.testing.assert_allclose(rows.H, grad, rtol=0, atol=FD_TOL)
        ahead, behind = system.closure_jacobian(q + EPS * v), system.closure_jacobian(q - EPS * v)
        rate = (ahead @ v - behind @ v) / (2 * EPS)
        np.testing.assert_allclose(rows.Hdot_v, rate, rtol=0, atol=FD_TOL)


@pytest.mark.parametrize("crank_angle", [0.0, 1.0, 2.5, -1.3, 4.0])
def test_four_bar_default_state_is_closed_elbow_up(crank_angle: float) -> None:
    """``default_state`` honours crank_angle and crank_speed, closes the loop (|h| < 1e-12),
    has ``H v = 0``, and the coupler-rocker joint lies left of the crank tip -> rocker pivot."""
    system = _four_bar(crank_angle=crank_angle, crank_speed=2.0)
    q, v = system.default_state()
    assert q[0] == crank_angle and v[0] == 2.0
    rows = system.constraints(q, v)
    assert np.abs(rows.h).max() < 1e-12
    assert np.abs(rows.H @ v).max() < 1e-12
    origin, tip, joint, rocker_tip, pivot = system.joint_points(q)
    np.testing.assert_allclose(joint, rocker_tip, atol=1e-12)
    assert np.linalg.norm(tip - origin) == pytest.approx(FB["a"])
    assert np.linalg.norm(joint - tip) == pytest.approx(FB["b"])
    assert np.linalg.norm(rocker_tip - pivot) == pytest.approx(FB["c"])
    along, to_joint = pivot - tip, joint - tip
    assert along[0] * to_joint[1] - along[1] * to_joint[0] > 0  # elbow-up: left of A -> D


def test_four_bar_branch_is_continuous_over_a_crank_turn() -> None:
    """A Grashof crank-rocker: the elbow-up branch exists for every crank angle and the coupler
    and rocker angles vary continuously (no branch jump) as the crank turns once."""
    system = _four_bar()
    angles = np.linspace(0.0, 2 * math.pi, 721)
    qs = np.array([system.assemble(float(a))[0] for a in angles])
    assert np.abs(np.diff(qs[:, 1:], axis=0)).max() < 0.05
    np.testing.assert_allclose(qs[0, 1:], qs[-1, 1:], atol=1e-12)


def test_four_bar_that_cannot_close_names_crank_angle() -> None:
    with pytest.raises(ParameterError, match=r"crank_angle.*cannot be assembled") as info:
        _four_bar(d=2.0)
    assert info.value.key == "system.parameters.crank_angle"


# -- driven double pendulum ---------------------------------------------------------------------

def test_driven_double_pendulum_velocity_row() -> None:
    """Tedrake 2022, "Bilateral Velocity Constraints": ``H = [1, 0]``, ``b(t) = A w cos(w t)``
    with ``bdot`` its time derivative, so ``theta1(t) - theta1(0) = integral b = A sin(w t)``."""
    A, f = 0.5, 0.5
    w = 2 * math.pi * f
    system = _double_pendulum(drive_amplitude=A, drive_frequency=f)
    q, v = np.array([0.1, 0.2]), np.array([0.3, -0.4])
    for t in (0.0, 0.3, 1.1, 2.7):
        rows = system.constraints(q, v, t)
        assert rows.count == 1
        np.testing.assert_array_equal(rows.velocity_rows, [True])
        np.testing.assert_array_equal(rows.H, [[1.0, 0.0]])
        np.testing.assert_array_equal(rows.h, [0.0])
        np.testing.assert_array_equal(rows.Hdot_v, [0.0])
        assert rows.target[0] == pytest.approx(A * w * math.cos(w * t), abs=1e-14)
        later, earlier = system.constraints(q, v, t + EPS).target, system.constraints(q, v, t - EPS).target
        rate = (later - earlier) / (2 * EPS)
        assert rows.target_rate[0] == pytest.approx(rate[0], abs=FD_TOL)
        assert rows.violation(np.array([rows.target[0], 5.0])) == pytest.approx(0.0, abs=1e-15)
    ts = np.linspace(0.0, 1.7, 4001)
    b = np.array([system.constraints(q, v, t).target[0] for t in ts])
    integral = np.sum((b[1:] + b[:-1]) / 2 * np.diff(ts))
    assert integral == pytest.approx(A * math.sin(w * 1.7), abs=1e-6)
    assert _double_pendulum().constraints(q, v, 0.3).count == 0


# -- parameters and scenes ----------------------------------------------------------------------

@pytest.mark.parametrize(("cls", "params", "key"), [
    (Pendulum, {"m": -1.0, "l": 1.0}, "m"),
    (Pendulum, {"m": 1.0, "l": 0.0}, "l"),
    (DoublePendulum, {**DP, "m2": -0.1}, "m2"),
    (DoublePendulum, {**DP, "l1": 0.0}, "l1"),
    (DoublePendulum, {**DP, "drive_amplitude": -0.5}, "drive_amplitude"),
    (CartPole, {**CP, "mc": -1.0}, "mc"),
    (CartPole, {**CP, "l": 0.0}, "l"),
    (CartesianPendulum, {"m": 0.0, "l": 1.0}, "m"),
    (CartesianPendulum, {"m": 1.0, "l": -1.0}, "l"),
    (FourBar, {"m3": -1.0}, "m3"),
    (FourBar, {"b": 0.0}, "b"),
])
def test_bad_parameters_name_the_key(cls: type[ManipulatorSystem], params: dict[str, float],
                                     key: str) -> None:
    with pytest.raises(ParameterError, match=rf"system\.parameters\.{key}\b") as info:
        _make(cls, params)
    assert info.value.key == f"system.parameters.{key}"


def test_bad_parameter_in_scene_file_names_file_and_key(tmp_path: Path) -> None:
    text = (PROBLEMS / "pendulum.toml").read_text().replace("l = 1.0", "l = 0.0")
    path = tmp_path / "bad_pendulum.toml"
    path.write_text(text)
    with pytest.raises(SceneError, match=r"bad_pendulum\.toml.*system\.parameters\.l"):
        co.load_scene(path)


def test_registry_lists_the_textbook_systems() -> None:
    for name, cls in (("pendulum", Pendulum), ("double_pendulum", DoublePendulum), ("cartpole", CartPole),
                      ("cartesian_pendulum", CartesianPendulum), ("four_bar", FourBar)):
        assert co.systems.get(name) is cls
        assert cls.type_name == name
        system = SYSTEMS[name]()
        assert len(system.q_names) == system.nq and len(system.v_names) == system.nv
        assert cls.description


def _load(tmp_path: Path, name: str) -> co.Scene:
    """Load a bundled scene; if its formulation is not registered yet, a copy with "gauss"."""
    path = PROBLEMS / f"{name}.toml"
    text = path.read_text()
    for formulation in ("ode", "variational"):
        if f'formulation = "{formulation}"' in text and formulation not in co.formulations.names():
            path = tmp_path / f"{name}.toml"
            path.write_text(text.replace(f'formulation = "{formulation}"', 'formulation = "gauss"'))
    return co.load_scene(path)


@pytest.mark.parametrize(("name", "type_name", "q0", "v0"), [
    ("pendulum", "pendulum", [1.0], [0.0]),
    ("double_pendulum", "double_pendulum", [math.pi / 2, 0.0], [0.0, 0.0]),
    ("double_pendulum_driven", "double_pendulum", [0.0, 0.0], [math.pi / 2, 0.0]),
    ("cartpole", "cartpole", [0.0, 2.5], [0.0, 0.0]),
    ("cartesian_pendulum", "cartesian_pendulum", [1.0, 0.0], [0.0, 0.0]),
    ("cartesian_pendulum_floor", "cartesian_pendulum", [1.0, 0.0], [0.0, 0.0]),
])
def test_scene_files_load(tmp_path: Path, name: str, type_name: str, q0: list[float],
                          v0: list[float]) -> None:
    scene = _load(tmp_path, name)
    assert scene.system.type_name == type_name
    np.testing.assert_array_equal(scene.q0, q0)
    np.testing.assert_array_equal(scene.v0, v0)
    # The initial states satisfy their bilateral rows (position rows and the drive at t = 0).
    assert scene.system.constraints(scene.q0, scene.v0, 0.0).violation(scene.v0) < 1e-12


def test_driven_and_floor_scenes_set_their_options(tmp_path: Path) -> None:
    driven = _load(tmp_path, "double_pendulum_driven").system
    assert driven.params["drive_amplitude"] == 0.5 and driven.params["drive_frequency"] == 0.5
    floor = _load(tmp_path, "cartesian_pendulum_floor")
    assert isinstance(floor.system, CartesianPendulum) and floor.system.floor == -0.8
    assert floor.system.mu == 0.3
    assert floor.formulation == "gauss" and floor.dt == 1e-3 and floor.duration == 3.0


def test_four_bar_scene_needs_no_initial_table(tmp_path: Path) -> None:
    scene = _load(tmp_path, "four_bar")
    assert isinstance(scene.system, FourBar)
    assert scene.q0[0] == 1.0 and scene.v0[0] == 2.0
    rows = scene.system.constraints(scene.q0, scene.v0)
    assert np.abs(rows.h).max() < 1e-12 and np.abs(rows.H @ scene.v0).max() < 1e-12
