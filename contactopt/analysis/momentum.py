r"""The momentum a scene's symmetry conserves, and its balance against the recorded impulses
(the momentum columns of ``contactopt compare``; issue 38).

Noether's theorem: a Lagrangian invariant under a one-parameter group of motions conserves
the momentum conjugate to it; what changes it is the work-free part of the external impulses
along it (the "Lagrangian Mechanics" notes, "Variational Integrator": a discrete Lagrangian
with the symmetry conserves the same momentum exactly, the discrete Noether theorem). Under
uniform gravity ``g``:

* ``rigid3d`` bodies: the Lagrangian is invariant under translations perpendicular to ``g``
  and rotations about any axis along ``g``. The conserved momenta are the **linear momentum
  perpendicular to g**, ``P_h = sum m_i v_i`` less its component along ``g`` (two components),
  and the **angular momentum about the axis along g through the world origin**,
  ``L_g = g_hat . sum (R_i I_i R_i^T w_i + x_i x m_i v_i)`` (``g_hat`` the unit vector of
  ``-g``; ``z`` without gravity). Gravity's impulses change neither (``g_hat . (x x m g) = 0``).
* planar and point systems whose first coordinate is the horizontal ``x`` with ``qdot = v``
  (``point_mass``, ``brick``, ``planar_body``, ``planar_ball``, ``cart``): the **momentum
  conjugate to x**, ``p_x = (M v)_x``; what the system's own generalized force holds along
  ``x`` (a push) is counted as an impulse, ``h tau_x`` at the step's start.

Other systems (MJCF, URDF, the textbook pendulums, ``rigid3d`` with inputs, systems with
bilateral rows) have no momentum column (NaN): their symmetry is not declared here.

**Balance.** Each step's contact impulses ``r`` act through the rows ``J(q_k)`` at the step's
start, the generalized impulse ``f = J(q_k)^T r`` (both the time-stepping step, ``M (v' - v) = h
tau + J^T r``, and the variational contact step, whose impulse acts at the knot ``q_k``:
:mod:`contactopt.integrators.variational_contact`). Per body its linear part ``f_lin`` and its
torque about the centre ``f_ang``; they change ``P_h`` by ``f_lin`` less its component along
``g`` and ``L_g`` by ``g_hat . (f_ang + x_k x f_lin)``. The balance after ``k`` steps is

    B_k = momentum_k - momentum_0 - sum_{i<k} (impulse of step i along the momentum),

0 for a step that keeps the momentum law. For semi-implicit Euler the linear part is exact by
construction (``m (v' - v) = h m g + f_lin``) and so is ``x' x m v' - x x m v = x x (h m g +
f_lin)``; the angular part is not: ``R' I R'^T w' - R I R^T w`` differs from ``-h w x (R I R^T w)
+ f_ang`` by ``O(h^2)`` per step for a body whose world inertia turns (a non-isotropic body),
the explicit gyroscopic term's error, ``O(h)`` over a run. The Lie-group variational step
keeps both to its Newton tolerance (the spatial angular momentum changes by the contact torque
exactly; :mod:`contactopt.integrators.variational_rigid`). The **drift** is ``momentum_k -
momentum_0``: what the contacts did, beside what the integrator did (the balance).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene
from contactopt.systems.base import System
from contactopt.systems.rigid3d import Rigid3D
from contactopt.systems.rigid3d_contacts import rotations

FloatArray = NDArray[np.float64]

__all__ = ["COLUMNS", "momentum_metrics", "momentum_series"]

#: The run metrics of :func:`momentum_metrics` (NaN where the system declares no symmetry here).
COLUMNS = ("max_abs_linear_momentum_balance", "max_abs_angular_momentum_balance",
           "max_abs_linear_momentum_drift", "max_abs_angular_momentum_drift")

#: (momentum of a state: (linear components, angular components); the same components of a
#: generalized impulse f at q, of length nv)
_Symmetry = tuple[Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray]],
                  Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]]


def _rigid(system: Rigid3D) -> _Symmetry:
    gravity = np.asarray(system.gravity, dtype=np.float64)
    norm = float(np.linalg.norm(gravity))
    up = -gravity / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
    basis = np.linalg.svd(up[None, :])[2][1:]  # two unit vectors perpendicular to up
    masses = np.array([body.mass for body in system.bodies], dtype=np.float64)
    inertia = np.array([body.inertia for body in system.bodies], dtype=np.float64)

    def state(q: FloatArray, v: FloatArray) -> tuple[FloatArray, FloatArray]:
        qq, vv = q.reshape(-1, 7), v.reshape(-1, 6)
        R = rotations(qq[:, 3:])
        spin = np.einsum("nij,nj,nkj,nk->ni", R, inertia, R, vv[:, 3:])
        linear = masses[:, None] * vv[:, :3]
        angular = spin + np.cross(qq[:, :3], linear)
        return basis @ linear.sum(axis=0), np.array([up @ angular.sum(axis=0)])

    def impulse(q: FloatArray, f: FloatArray) -> tuple[FloatArray, FloatArray]:
        qq, ff = q.reshape(-1, 7), f.reshape(-1, 6)
        angular = ff[:, 3:] + np.cross(qq[:, :3], ff[:, :3])
        return basis @ ff[:, :3].sum(axis=0), np.array([up @ angular.sum(axis=0)])

    return state, impulse


def _planar(system: System) -> _Symmetry:
    def state(q: FloatArray, v: FloatArray) -> tuple[FloatArray, FloatArray]:
        M = system.dynamics(q, v).M
        row = M[0] if not hasattr(M, "toarray") else M.toarray()[0]
        return np.array([float(np.asarray(row).reshape(-1) @ v)]), np.zeros(0)

    def impulse(q: FloatArray, f: FloatArray) -> tuple[FloatArray, FloatArray]:
        return np.array([float(f[0])]), np.zeros(0)

    return state, impulse


def _symmetry(system: System, q: FloatArray, v: FloatArray) -> _Symmetry | None:
    """The scene's conserved momenta (module doc), or None where none is declared."""
    if system.constraints(q, v, 0.0).count:
        return None
    if isinstance(system, Rigid3D):
        return _rigid(system) if system.control is None else None
    if system.q_names[:1] == ("x",) and system.nq == system.nv and system.type_name in (
            "point_mass", "brick", "planar_body", "planar_ball", "cart"):
        return _planar(system)
    return None


def momentum_series(scene: Scene, traj: Trajectory) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray] | None:
    """Per state ``(linear drift, angular drift, linear balance, angular balance)``, each
    ``(n_states, components)`` (module doc), or None where the system declares no symmetry.
    After a step whose impulses are not finite (a failed step) the balance is NaN."""
    symmetry = _symmetry(scene.system, traj.q[0], traj.v[0]) if traj.q.shape[0] and traj.v.shape[0] else None
    if symmetry is None:
        return None
    state, impulse = symmetry
    system = scene.system
    dt = traj.dt if math.isfinite(traj.dt) and traj.dt > 0 else float(scene.dt)
    n_states = min(traj.q.shape[0], traj.v.shape[0])
    momenta = [state(traj.q[k], traj.v[k]) for k in range(n_states)]
    linear0, angular0 = momenta[0]
    lin_sum, ang_sum = np.zeros_like(linear0), np.zeros_like(angular0)
    balances = [(np.zeros_like(linear0), np.zeros_like(angular0))]
    for i in range(n_states - 1):
        record = traj.steps[i] if i < len(traj.steps) else None
        q, v = traj.q[i], traj.v[i]
        f = np.zeros(system.nv)
        if record is not None and record.phi.shape[0]:
            contacts = system.contacts(q)
            r = np.asarray(record.impulses, dtype=np.float64)
            if contacts.count != record.phi.shape[0] or r.shape != (contacts.count, contacts.dim) \
                    or not np.all(np.isfinite(r)):
                f = np.full(system.nv, np.nan)
            else:
                f = np.asarray(contacts.J.T @ r.reshape(-1), dtype=np.float64).reshape(-1)
        if not isinstance(system, Rigid3D):
            f = f + dt * np.asarray(system.dynamics(q, v).tau, dtype=np.float64)  # a push along x
        lin, ang = impulse(q, f)
        lin_sum, ang_sum = lin_sum + lin, ang_sum + ang
        linear, angular = momenta[i + 1]
        balances.append((linear - linear0 - lin_sum, angular - angular0 - ang_sum))
    drift_l = np.array([m[0] - linear0 for m in momenta])
    drift_a = np.array([m[1] - angular0 for m in momenta])
    return (drift_l, drift_a, np.array([b[0] for b in balances]), np.array([b[1] for b in balances]))


def _largest(values: FloatArray) -> float:
    if values.size == 0:
        return math.nan
    return math.nan if np.isnan(values).any() else float(np.abs(values).max())


def momentum_metrics(scene: Scene, traj: Trajectory) -> dict[str, float]:
    """The run's :data:`COLUMNS`: the largest ``|balance|`` and ``|drift|`` of the linear
    [kg m/s] and the angular [kg m^2/s] conserved momenta over every state (module doc); NaN
    where the system declares no such momentum (or none of that kind) or after a failed step."""
    series = momentum_series(scene, traj)
    if series is None:
        return dict.fromkeys(COLUMNS, math.nan)
    drift_l, drift_a, balance_l, balance_a = series
    return {"max_abs_linear_momentum_balance": _largest(balance_l),
            "max_abs_angular_momentum_balance": _largest(balance_a),
            "max_abs_linear_momentum_drift": _largest(drift_l),
            "max_abs_angular_momentum_drift": _largest(drift_a)}
