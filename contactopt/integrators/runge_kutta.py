"""A step made of several stage programs: MuJoCo's RK4 under ``regularized -o params=model``.

MuJoCo's ``RK4`` integrator (``mj_RungeKutta`` in MuJoCo's ``engine_forward.c``; MuJoCo
documentation, "Computation: Numerical integration") is the classic explicit Runge-Kutta method
on the state ``X = (qpos, qvel, act)`` with the tableau

    A = [[1/2], [0, 1/2], [0, 0, 1]],   B = [1/6, 1/3, 1/3, 1/6],   C_i = sum_j A_ij = [1/2, 1/2, 1].

Stage 0 is the state's own forward dynamics. Stage ``i >= 1`` starts from

    qpos_i = integratePos(qpos_0, sum_j A_ij qvel_j, h),   qvel_i = qvel_0 + h sum_j A_ij qacc_j,
    act_i  = act_0 + h sum_j A_ij act_dot_j               (not clamped),   time t_0 + C_i h,

and runs a full forward pass there, its constraint solve included, for ``(qvel_i, qacc_i,
act_dot_i)``; ``qacc_i = M^{-1} (qfrc_smooth_i + J_i^T f_i)`` with ``M`` alone (RK4 has no
implicit damping). The step is

    qpos' = integratePos(qpos_0, h sum_j B_j qvel_j),   qvel' = qvel_0 + h sum_j B_j qacc_j,
    act'  = MuJoCo's advance of act_0 at the rate sum_j B_j act_dot_j   (filterexact, clamped: ``mj_advance``).

**Orientations** (ball and free joints, since MuJoCo 4.0: its changelog, "The RK4 integrator is
now fourth-order accurate for the orientations of ball and free joints"): in the position
updates each stage's body-frame angular velocity ``w_j`` is replaced by the Runge-Kutta-Munthe-Kaas
rate ``K_j = dexp^{-1}_{-theta_j}(w_j)``, ``theta_j`` the stage's rotation vector
``h sum_k A_jk K_k`` (0 at stage 0; :func:`lie_rate`), so ``qpos_i = qpos_0 * exp(theta_i)``
(Munthe-Kaas 1998, "Runge-Kutta methods on Lie groups", BIT 38; Iserles et al., "Lie-group
methods", Acta Numerica 2000). This reproduces ``mj_step`` of MuJoCo 4.0 exactly; MuJoCo's
earlier RK4 combined the ``w_j`` themselves (second order in orientation), and under such a
MuJoCo the system names no rotation dofs (:func:`contactopt.systems.mjcf.compat.lie_group_rk4`), so
that the stages here do the same.

Here each stage's constraint problem is a program of the step's formulation at the stage state
(:meth:`Formulation.stage_tableau` says which formulations step this way), solved by the run's
solver and judged by contactopt's residuals like any step's; the stage's acceleration is the
formulation's own velocity step from that state, ``qacc_i = (v'_i - v_i) / h`` (for
``params=model`` on an RK4 model ``v'_i = v_i + M^{-1} (h qfrc_smooth_i + J_i^T x_i)``, so
``qacc_i = M^{-1} (qfrc_smooth_i + J_i^T x_i / h)`` with ``x = h f``). Checked against
``mj_step`` on RK4 models (``tests/test_mjcf_rk4.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.model.step import State
from contactopt.model.tableau import RK4, Tableau
from contactopt.systems.base import System

__all__ = ["RK4", "Stage", "StageRate", "Tableau", "derivative_refusal", "final_state", "first_stage", "lie_rate",
           "stage_at"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Stage:
    """Where a stage is evaluated: its state and its offset ``h sum_j A_ij K_j`` from the step's
    start in the tangent space (zero for stage 0; module docstring)."""

    state: State
    offset: FloatArray


@dataclass(frozen=True)
class StageRate:
    """The derivative of ``(q, v, act)`` that one stage contributes: its position rate ``K_i``
    (its velocity, orientations' RKMK-corrected), its acceleration and its activation rate
    (MuJoCo's ``qvel_i``, ``qacc_i``, ``act_dot_i``)."""

    position: FloatArray
    acceleration: FloatArray
    activation_rate: FloatArray

    @classmethod
    def at(cls, system: System, stage: Stage, v_next: FloatArray, dt: float) -> StageRate:
        """The rate of ``stage`` whose velocity step gave ``v_next``; the activation rate is the
        system's with the stage's ``act`` set (the stage's program set it)."""
        state = stage.state
        return cls(lie_rate(system.rotation_dofs, stage.offset, state.v),
                   (np.asarray(v_next, dtype=np.float64) - state.v) / dt, system.activation_rate(state.q, state.v))


def lie_rate(rotations: NDArray[np.int_], offset: FloatArray, v: FloatArray) -> FloatArray:
    """``K = v`` with each body-frame angular velocity ``w`` (the dof triples ``rotations``)
    replaced by ``dexp^{-1}_{-theta}(w) = w + 1/2 theta x w + c(|theta|) theta x (theta x w)``,
    ``theta`` its rotation vector in ``offset`` and ``c(t) = (1 - (t/2) cot(t/2)) / t^2``
    (``1/12 + t^2/720 + t^4/30240`` near 0): the right-trivialized inverse derivative of the
    exponential map of SO(3) (Iserles, Munthe-Kaas, Norsett and Zanna, "Lie-group methods",
    Acta Numerica 2000, sections 2.3 and 4.3 (RKMK))."""
    if not rotations.size:
        return v
    theta, w = offset[rotations], v[rotations]
    angle = np.linalg.norm(theta, axis=1)
    small = angle < 1e-2  # the series to t^4: error ~ t^6 / 1.2e6, below rounding
    safe = np.where(small, 1.0, angle)
    exact = (1.0 - 0.5 * safe / np.tan(0.5 * safe)) / safe**2
    series = 1.0 / 12.0 + angle**2 / 720.0 + angle**4 / 30240.0
    c = np.where(small, series, exact)[:, None]
    rate = np.array(v, dtype=np.float64)
    rate[rotations] = w + 0.5 * np.cross(theta, w) + c * np.cross(theta, np.cross(theta, w))
    return rate


def _combine(weights: Sequence[float], vectors: Sequence[FloatArray]) -> FloatArray:
    """``sum_j weights_j vectors_j`` over the stages so far (MuJoCo's order)."""
    total = np.zeros_like(vectors[0])
    for weight, vector in zip(weights, vectors, strict=False):
        total = total + weight * vector
    return total


def first_stage(state: State) -> Stage:
    """Stage 0: the step's own start."""
    return Stage(state, np.zeros(state.v.shape[0]))


def stage_at(system: System, tableau: Tableau, stage: int, start: State, rates: Sequence[StageRate],
             dt: float) -> Stage:
    """Where stage ``stage`` (>= 1) is evaluated, from the step's ``start`` and the rates of the
    stages before it (module docstring); its activations are not clamped, as in MuJoCo."""
    weights = tableau.A[stage - 1]
    offset = dt * _combine(weights, [r.position for r in rates])
    q = system.integrate(start.q, offset / dt, dt)
    v = start.v + dt * _combine(weights, [r.acceleration for r in rates])
    act = start.act + dt * _combine(weights, [r.activation_rate for r in rates]) if start.act.size else start.act
    return Stage(State(q, v, start.t + tableau.node(stage) * dt, act), offset)


def final_state(system: System, tableau: Tableau, start: State, rates: Sequence[StageRate], dt: float) -> State:
    """The state after the step: the ``B``-weighted rates applied to ``start`` (module docstring)."""
    q = system.integrate(start.q, _combine(tableau.B, [r.position for r in rates]), dt)
    v = start.v + dt * _combine(tableau.B, [r.acceleration for r in rates])
    act = system.advance_activation(start.act, _combine(tableau.B, [r.activation_rate for r in rates]), dt)
    return State(q, v, start.t + dt, act)


def derivative_refusal(tableau: Tableau, formulation: str) -> str:
    """Why a step of ``tableau``'s stages is not differentiated (one line)."""
    return (f"derivatives: formulation {formulation!r} steps this model as MuJoCo's {tableau.name}, "
            f"{tableau.stages} stage programs a step, whose derivative is not computed; set the model's "
            '<option integrator="implicitfast"/> (or Euler) to differentiate params=model')
