"""The variational integrator of ``rigid3d`` free bodies in maximal coordinates: a Lie-group
variational integrator on unit quaternions (``formulation="variational"`` on ``rigid3d``).

Per body, translation: the midpoint discrete Lagrangian of ``L = 1/2 m |xdot|^2 + m g . x``
(the "Lagrangian Mechanics" notes, "Variational Integrator", as in :mod:`.variational`) gives, in momentum form,
``m vd = m v_k + h/2 m g``, ``x_k+1 = x_k + h vd``, ``m v_k+1 = m vd + h/2 m g``.

Rotation (Lee, Leok & McClamroch 2005, "A Lie group variational integrator for the attitude
dynamics of a rigid body", the discrete Lagrangian ``L_d = 1/h tr((I - F_k) J_d)`` on SO(3) with
``R_k+1 = R_k F_k``, ``J_d = 1/2 tr(I_b) I3 - I_b``; Dojo, Howell et al. 2022, writes the same
discrete Euler-Lagrange equation on unit quaternions): with the body-frame angular momentum
``Pi_k = I_b R_k^T w_k`` (``w`` in the world frame, the ``rigid3d`` convention),

    h Pi_k^ = F_k J_d - J_d F_k^T,       Pi_k+1 = F_k^T Pi_k,       R_k+1 = R_k F_k.

``F_k`` is the rotation of the unit quaternion ``f = (1, g) / sqrt(1 + |g|^2)`` (``g`` the Gibbs
vector: the Cayley transform), so ``quat_k+1 = quat_k * f`` stays a unit quaternion up to
rounding, and ``g`` solves the three equations by Newton's method (initial guess ``h w_b / 2``,
the leading order: ``F ~ I + 2 g^`` gives ``2 (I_b g)^``; then a central-difference Jacobian).
The spatial angular momentum ``R Pi`` is conserved exactly: ``R_k+1 Pi_k+1 = R_k F_k F_k^T Pi_k``,
and the linear momentum without gravity; the energy oscillates without drift (symplectic).
**Contact** (:func:`rigid_lagrangian`, for :func:`~.variational_contact.contact_step`): the
same discrete Lagrangian in the unknown world-frame twist ``vd = [xd, wd]`` of the step,
``q_k+1 = Rigid3D.integrate(q_k, vd, h)`` (``R_k+1 = exp(h wd^) R_k``, so ``F_k = R_k^T R_k+1``).
Its momentum form per body is ``p_k + J^T P = (m xd - h/2 m g, R_k vee(F_k J_d - J_d F_k^T) / h)``
(the contact impulse ``P`` through the rows at ``q_k`` added to the momentum that decides the step, as in the
planar case; for the rotation it is the Lee-Leok-McClamroch equation with ``Pi_k`` replaced by
``Pi_k + R_k^T T``, ``T`` the impulse's world torque), and ``p_k+1 = (m xd + h/2 m g,
R_k vee(F_k J_d - J_d F_k^T) / h)``: the spatial angular momentum changes by ``T`` exactly.
The iterate's mass ``blockdiag(m I3, R I_b R^T)`` at the half step is ``-dR/dvd`` to leading
order (``F J_d - J_d F^T = h (I_b w_b)^ + O(h^2)``). Inputs on ``rigid3d`` are refused before step 0.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.integrators.variational_contact import Lagrangian
from contactopt.model.step import State
from contactopt.programs import Residuals, Status
from contactopt.records.trajectory import StepRecord
from contactopt.systems import rigid3d_contacts as kernels
from contactopt.systems.geometry import quat_multiply_rows
from contactopt.systems.rigid3d import Rigid3D

FloatArray = NDArray[np.float64]

__all__ = ["rigid_lagrangian", "rigid_step", "step_twist"]


def _hat(w: FloatArray) -> FloatArray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _vee(S: FloatArray) -> FloatArray:
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


def _cayley(g: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(unit quaternion ``(1, g) / sqrt(1 + |g|^2)``, its rotation matrix)."""
    f = np.concatenate(([1.0], g)) / math.sqrt(1.0 + float(g @ g))
    return f, kernels.rotations(f[None, :])[0]


def _solve_rotation(Pi: FloatArray, inertia: FloatArray, h: float, tol: float,
                    max_iter: int) -> tuple[FloatArray | None, FloatArray, int, float]:
    """Newton on ``vee(F J_d - J_d F^T) = h Pi`` in the Gibbs vector ``g``: ``(f or None, F,
    iterations, residual)``."""
    Ib = np.diag(inertia)
    Jd = 0.5 * float(inertia.sum()) * np.eye(3) - Ib

    def residual(g: FloatArray) -> FloatArray:
        F = _cayley(g)[1]
        return _vee(F @ Jd - Jd @ F.T) - h * Pi

    g = 0.5 * h * Pi / inertia
    # relative to |h Pi| (the equation's own size), and polished to rounding: the energy's
    # drift is the Newton residual's, so a residual at tol would show as drift
    scale = max(float(np.abs(h * Pi).max()), 1e-300)
    floor = 8 * np.finfo(float).eps * max(scale, float(np.abs(Jd).max()) * float(np.abs(g).max()))
    norm, best = math.inf, None
    for iteration in range(1, max_iter + 1):
        r = residual(g)
        norm = float(np.abs(r).max())
        if norm <= tol * scale and (best is None or norm < best[0]):
            best = (norm, g.copy(), iteration)
        if best is not None and (norm <= floor or norm >= best[0] or iteration - best[2] >= 3):
            f, F = _cayley(best[1])
            return f, F, iteration, best[0]
        if iteration == 1:
            J = 2.0 * Ib
        else:
            J = np.empty((3, 3))
            for j in range(3):
                e = np.zeros(3)
                e[j] = 1e-7 * max(1.0, abs(g[j]))
                J[:, j] = (residual(g + e) - residual(g - e)) / (2 * e[j])
        g = g - np.linalg.solve(J, r)
    if best is not None:
        f, F = _cayley(best[1])
        return f, F, max_iter, best[0]
    return None, np.eye(3), max_iter, norm


def rigid_step(system: Rigid3D, state: State, h: float, tol: float, max_iter: int) -> tuple[State | None, StepRecord]:
    """One Lie-group variational step of every body (module doc)."""
    start = time.perf_counter()
    q = state.q.reshape(-1, 7)
    v = state.v.reshape(-1, 6)
    q_next, v_next = np.empty_like(q), np.empty_like(v)
    iterations, worst = 0, 0.0
    for i, body in enumerate(system.bodies):
        inertia = np.asarray(body.inertia, dtype=np.float64)
        R = kernels.rotations(q[i, None, 3:])[0]
        vd = v[i, :3] + 0.5 * h * system.gravity
        q_next[i, :3] = q[i, :3] + h * vd
        v_next[i, :3] = vd + 0.5 * h * system.gravity
        Pi = inertia * (R.T @ v[i, 3:])
        f, F, used, norm = _solve_rotation(Pi, inertia, h, tol, max_iter)
        iterations, worst = max(iterations, used), max(worst, norm)
        if f is None:
            return None, StepRecord(status=Status.MAX_ITERATIONS, message=(
                f"Newton on body {body.name!r}'s rotation stopped at residual {norm:.2e}"),
                **_record(state, start, iterations, worst))
        quat = quat_multiply_rows(q[i, None, 3:], f[None, :])[0]
        quat = quat / math.sqrt(float(quat @ quat))
        q_next[i, 3:] = quat
        R_next = kernels.rotations(quat[None, :])[0]
        Pi_next = F.T @ Pi
        v_next[i, 3:] = R_next @ (Pi_next / inertia)
    return State(q_next.reshape(-1), v_next.reshape(-1), state.t + h), StepRecord(
        status=Status.OPTIMAL, message=f"Newton converged in {iterations} iterations",
        **_record(state, start, iterations, worst))


def _record(state: State, start: float, iterations: int, worst: float) -> dict[str, Any]:
    """The step record's fields: no contacts, the worst rotation residual as primal."""
    return dict(t=state.t, impulses=np.zeros((0, 3)), phi=np.zeros(0), build_time=0.0, setup_time=0.0,
                solve_time=time.perf_counter() - start, iterations=iterations, solver="newton",
                residuals=Residuals(primal=worst, dual=0.0, gap=math.nan, complementarity=0.0))


def rigid_lagrangian(system: Rigid3D, h: float) -> Lagrangian:
    """The Lie-group discrete Lagrangian of every body, step ``h``, in the twist ``vd`` of the
    step (module doc)."""
    inertia = np.array([body.inertia for body in system.bodies], dtype=np.float64)  # (N, 3)
    masses = np.array([body.mass for body in system.bodies], dtype=np.float64)
    Jd = 0.5 * inertia.sum(axis=1)[:, None, None] * np.eye(3) - inertia[:, :, None] * np.eye(3)
    n = len(system.bodies)

    def blocks(q: FloatArray, invert: bool = False) -> FloatArray:
        R = kernels.rotations(q.reshape(-1, 7)[:, 3:])
        principal = 1.0 / inertia if invert else inertia
        return np.einsum("nij,nj,nkj->nik", R, principal, R)

    def mass(q: FloatArray) -> FloatArray:
        M = np.zeros((6 * n, 6 * n))
        for i, block in enumerate(blocks(q)):
            M[6 * i: 6 * i + 3, 6 * i: 6 * i + 3] = masses[i] * np.eye(3)
            M[6 * i + 3: 6 * i + 6, 6 * i + 3: 6 * i + 6] = 0.5 * (block + block.T)
        return M

    def terms(q0: FloatArray, q1: FloatArray, t: float) -> tuple[FloatArray, FloatArray]:
        a, b = q0.reshape(-1, 7), q1.reshape(-1, 7)
        R0, R1 = kernels.rotations(a[:, 3:]), kernels.rotations(b[:, 3:])
        F = np.einsum("nji,njk->nik", R0, R1)  # R0^T R1
        S = F @ Jd - Jd @ np.transpose(F, (0, 2, 1))
        spin = np.einsum("nij,nj->ni", R0, np.stack([S[:, 2, 1], S[:, 0, 2], S[:, 1, 0]], axis=1)) / h
        linear = masses[:, None] * (b[:, :3] - a[:, :3]) / h
        weight = 0.5 * h * masses[:, None] * system.gravity[None, :]
        return (np.concatenate([linear - weight, spin], axis=1).reshape(-1),
                np.concatenate([linear + weight, spin], axis=1).reshape(-1))

    def velocity(q: FloatArray, p: FloatArray) -> FloatArray:
        pp = p.reshape(-1, 6)
        spin = np.einsum("nij,nj->ni", blocks(q, invert=True), pp[:, 3:])
        return np.concatenate([pp[:, :3] / masses[:, None], spin], axis=1).reshape(-1)

    return Lagrangian(mass=mass, terms=terms, velocity=velocity, advance=system.integrate,
                      iterate_mass=lambda q0, vbar, step: mass(system.integrate(q0, vbar, 0.5 * step)))


def step_twist(q0: FloatArray, q1: FloatArray, h: float) -> FloatArray:
    """The world-frame twist ``vd`` of every body with ``Rigid3D.integrate(q0, vd, h) = q1``:
    ``(x1 - x0) / h`` and ``theta / h`` for the rotation ``quat1 * conj(quat0)`` of angle
    ``|theta|`` about ``theta / |theta|`` (the shorter way round)."""
    a, b = q0.reshape(-1, 7), q1.reshape(-1, 7)
    conjugate = a[:, 3:] * np.array([1.0, -1.0, -1.0, -1.0])
    delta = quat_multiply_rows(b[:, 3:], conjugate)
    delta = delta * np.where(delta[:, :1] < 0, -1.0, 1.0)
    sine = np.linalg.norm(delta[:, 1:], axis=1)
    angle = 2.0 * np.arctan2(sine, delta[:, 0])
    factor = np.where(sine > 1e-300, angle / np.where(sine > 1e-300, sine, 1.0), 2.0)
    twist = np.concatenate([(b[:, :3] - a[:, :3]) / h, factor[:, None] * delta[:, 1:] / h], axis=1)
    return np.asarray(twist.reshape(-1), dtype=np.float64)
