"""Excitation trajectories (Tedrake 2020, "Parameter Estimation", "Trajectory design"; Swevers,
Ganseman, Tukel, De Schutter and Van Brussel 1997, "Optimal robot excitation and identification"):
finite Fourier series with base frequency ``w_f = 2 pi / duration`` whose coefficients minimize
the condition number of the base regressor stacked over the motion, ``cond(W_i)``
(:mod:`contactopt.identification.basis`), within position, velocity and torque limits (SLSQP,
the limits as inequality constraints). The base columns are those of the system's structural
basis (random states), fixed during the search so that the objective is one function. Two
parametrizations (``parametrize=``):

* ``"reference"`` (the default for a fully actuated textbook system, square invertible ``B``):
  a periodic reference per joint, Swevers et al.'s series::

      q_i(t) = q0_i + sum_{l=1..L} a_il / (w_f l) sin(w_f l t) - b_il / (w_f l) cos(w_f l t)

  (so ``qdot_i = sum a_il cos(w_f l t) + b_il sin(w_f l t)``), the regressor stacked over
  ``samples`` points of one period, the limits imposed there with the nominal model's torques
  ``B^{-1} Y alpha``. The :class:`Excitation` is the controller ``f(t, q, v) -> u`` of the
  nominal computed torque of the reference plus PD tracking, ``u = B^{-1} (Y(q_r, v_r, a_r)
  alpha + Kp (q_r - q) + Kd (v_r - v))`` (the nominal ``alpha`` are the system's own
  parameters, the best guess before identification).
* ``"input"`` (the default otherwise: underactuated systems such as the cart-pole, MJCF models,
  whose actuators need not act on every dof, a free joint included): the inputs themselves, one
  series per actuator, ``u_j(t) = u0_j + sum_l a_jl sin(w_f l t) + b_jl cos(w_f l t)`` (the
  constant ``u0_j`` can hold a load against gravity), and the motion
  they cause, obtained by simulating the nominal system from ``(q0, v0)`` with the
  time-stepping scheme's contact-free step (docs/architecture.md, "Time stepping":
  ``v' = v + h M^{-1} tau(q, v, u)`` with the system's :meth:`step_dynamics`, ``q' =
  integrate(q, v', h)``), the step ``co.simulate`` takes when no contact, joint limit or
  friction-loss row is active (it agrees with it to rounding). The regressor is stacked over
  ``samples`` of the steps' discrete samples ``(q_k, v_k, (v_{k+1} - v_k) / h)``, the very rows
  :func:`~contactopt.identification.estimate` regresses; the ``q`` and ``v`` limits hold at
  every step of that simulation, the ``u`` limits at every step's input. The
  :class:`Excitation` is the open-loop controller ``f(t, q, v) -> u(t)``; simulated from its
  :meth:`~Excitation.initial_state` at the design's ``dt`` it reproduces the designed motion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import to_dense
from contactopt.identification.basis import DEFAULT_TOLERANCE, decompose, stacked
from contactopt.identification.data import Samples
from contactopt.identification.excitation_search import (
    _check_integer,
    _check_limits,
    _optimize,
    _start_feasible,
    limit_margins,
)
from contactopt.identification.lumped import (
    IdentificationError,
    _is_mjcf,
    check_system,
    lumped_parameters,
    regressor,
)
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["PARAMETRIZATIONS", "Excitation", "excitation", "fourier", "input_series", "stacked_condition"]

PARAMETRIZATIONS = ("reference", "input")


def fourier(coefficients: FloatArray, q0: FloatArray, w: float, t: ArrayLike) -> tuple[FloatArray, FloatArray,
                                                                                           FloatArray]:
    """``(q, v, vdot)`` at times ``t`` (shape (N, n)) of the series (module docstring);
    ``coefficients`` (n, L, 2) holds ``a_il, b_il``."""
    times = np.atleast_1d(np.asarray(t, dtype=np.float64))
    harmonics = np.arange(1, coefficients.shape[1] + 1)
    phase = w * np.outer(times, harmonics)  # (N, L)
    s, c = np.sin(phase), np.cos(phase)
    a, b = coefficients[..., 0], coefficients[..., 1]  # (n, L)
    wl = w * harmonics
    q = q0 + s @ (a / wl).T - c @ (b / wl).T
    v = c @ a.T + s @ b.T
    vdot = -s @ (a * wl).T + c @ (b * wl).T
    return q, v, vdot


def stacked_condition(system: System, q: FloatArray, v: FloatArray, vdot: FloatArray,
                      columns: list[int] | None = None) -> float:
    """``cond(W[:, columns])`` of the regressors stacked over the samples (all columns of the
    data's own basis when None)."""
    W = np.concatenate([regressor(system, q[k], v[k], vdot[k]) for k in range(q.shape[0])], axis=0)
    if columns is None:
        columns = list(decompose(lumped_parameters(system), W, DEFAULT_TOLERANCE).independent)
    return float(np.linalg.cond(W[:, columns]))


def input_series(coefficients: FloatArray, w: float, t: ArrayLike, offset: ArrayLike | None = None) -> FloatArray:
    """``u`` at times ``t`` (shape (N, nu)) of the input series ``u_j = u0_j + sum_l a_jl sin(w l
    t) + b_jl cos(w l t)`` (module docstring); ``coefficients`` (nu, L, 2) holds ``a_jl, b_jl``,
    ``offset`` the constants ``u0_j`` (None: zero)."""
    times = np.atleast_1d(np.asarray(t, dtype=np.float64))
    phase = w * np.outer(times, np.arange(1, coefficients.shape[1] + 1))
    u = np.sin(phase) @ coefficients[..., 0].T + np.cos(phase) @ coefficients[..., 1].T
    return u if offset is None else u + np.asarray(offset, dtype=np.float64)


def free_motion(system: System, controls: FloatArray, q0: FloatArray, v0: FloatArray,
                dt: float) -> tuple[FloatArray, FloatArray]:
    """``(q, v)`` (N + 1 rows) of the contact-free semi-implicit Euler steps under the held
    ``controls`` (N, nu) from ``(q0, v0)`` (module docstring); the system's held control is
    cleared afterwards. Non-finite states stop the run (the rest is NaN)."""
    n = controls.shape[0]
    q = np.full((n + 1, system.nq), np.nan)
    v = np.full((n + 1, system.nv), np.nan)
    q[0], v[0] = q0, v0
    try:
        for k in range(n):
            system.set_control(controls[k])
            dyn = system.step_dynamics(system.dynamics(q[k], v[k]), dt)
            v_next = v[k] + dt * np.linalg.solve(to_dense(dyn.M), np.asarray(dyn.tau, dtype=np.float64))
            if not np.all(np.isfinite(v_next)) or np.max(np.abs(v_next)) > 1e8:
                break
            v[k + 1] = v_next
            q[k + 1] = system.integrate(q[k], v_next, dt)
    finally:
        system.set_control(None)
    return q, v


def _samples_of(system: System, q: FloatArray, v: FloatArray, dt: float, rows: FloatArray) -> Samples:
    """The discrete samples ``(q_k, v_k, (v_{k+1} - v_k) / h)`` of steps ``rows`` (as
    :mod:`contactopt.identification.data` reads a Trajectory; the force is not needed here)."""
    k = rows.astype(int)
    vdot = (v[k + 1] - v[k]) / dt
    euler = _is_mjcf(system) and int(system.model.opt.integrator) != int(  # type: ignore[attr-defined]
        system.mujoco.mjtIntegrator.mjINT_RK4)  # type: ignore[attr-defined]
    return Samples(k * dt, q[k], v[k], vdot, np.zeros_like(vdot), v[k + 1] if euler else v[k], True, v[k + 1])


@dataclass
class Excitation:
    """An optimized excitation and its controller (module docstring).

    Attributes:
        coefficients: ``parametrize="reference"``: (n, L, 2) the joint series' ``a_il, b_il``;
            ``"input"``: (nu, L, 2) the input series' ``a_jl, b_jl``.
        q0: ``"reference"``: (nq,) the reference's offset; ``"input"``: the design's start
            configuration. v0: the start velocity (``"input"``; the reference's own otherwise).
        frequency: ``w_f`` [rad/s]; duration: one period [s]; dt: the design's step (``"input"``).
        condition: ``cond(W_i)`` at the optimum over the design samples; initial: at the start.
        columns: the base columns it was designed for.
        parametrize: ``"reference"`` or ``"input"``.
        gains: ``(Kp, Kd)`` of the tracking controller (``"reference"``).
        u0: the input series' constants (``"input"``).
        feasible: whether the limits hold at the returned design (False: SLSQP found no point
            within them; the returned design is the one that violates them least).
    """

    system: System = field(repr=False)
    coefficients: FloatArray
    q0: FloatArray
    frequency: float
    duration: float
    condition: float
    initial: float
    columns: list[int]
    gains: tuple[float, float] = (100.0, 20.0)
    message: str = ""
    parametrize: str = "reference"
    v0: FloatArray | None = None
    dt: float | None = None
    u0: FloatArray | None = None
    feasible: bool = True

    def reference(self, t: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(q, v, vdot)`` of the joint reference at times ``t`` (``parametrize="reference"``)."""
        if self.parametrize != "reference":
            raise IdentificationError("Excitation.reference: an input excitation has no joint reference; its "
                                      "motion is Excitation.motion() (the designed simulation)")
        return fourier(self.coefficients, self.q0, self.frequency, t)

    def inputs(self, t: ArrayLike) -> FloatArray:
        """``u`` at times ``t``, (N, nu): the input series (``"input"``) or the computed torque
        of the reference at the reference's own state (``"reference"``)."""
        times = np.atleast_1d(np.asarray(t, dtype=np.float64))
        if self.parametrize == "input":
            return input_series(self.coefficients, self.frequency, times, self.u0)
        q, v, _ = self.reference(times)
        return np.array([self(float(times[k]), q[k], v[k]) for k in range(times.size)])

    def motion(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(t, q, v)`` of the design's simulation (``"input"``: the nominal system's contact-free
        steps of ``dt`` from ``(q0, v0)``; ``"reference"``: the reference at the design's rate
        of 100 points per period)."""
        if self.parametrize == "reference":
            t = np.linspace(0.0, self.duration, 101)
            q, v, _ = self.reference(t)
            return t, q, v
        assert self.v0 is not None and self.dt is not None
        n = round(self.duration / self.dt)
        t = np.arange(n + 1, dtype=np.float64) * float(self.dt)
        q, v = free_motion(self.system, self.inputs(t[:-1]), self.q0, self.v0, self.dt)
        return t, q, v

    def initial_state(self) -> tuple[FloatArray, FloatArray]:
        """``(q(0), v(0))``: a scene's ``q0, v0`` for tracking the reference from the start, or
        the input design's start state."""
        if self.parametrize == "input":
            assert self.v0 is not None
            return self.q0.copy(), self.v0.copy()
        q, v, _ = self.reference(0.0)
        return q[0], v[0]

    def __call__(self, t: float, q: FloatArray, v: FloatArray) -> FloatArray:
        """The control at ``t``: the input series (``"input"``), or the computed torque of the
        reference plus PD tracking (``"reference"``; module docstring)."""
        if self.parametrize == "input":
            return np.asarray(input_series(self.coefficients, self.frequency, float(t), self.u0)[0],
                              dtype=np.float64)
        qr, vr, ar = (x[0] for x in self.reference(t))
        kp, kd = self.gains
        alpha = lumped_parameters(self.system).values
        force = regressor(self.system, qr, vr, ar) @ alpha + kp * (qr - q) + kd * (vr - v)
        return np.asarray(np.linalg.solve(self.system.B, force), dtype=np.float64)  # type: ignore[attr-defined]


def _fully_actuated(system: System) -> bool:
    B = getattr(system, "B", None)
    n = system.nv
    return (not _is_mjcf(system)) and B is not None and np.shape(B) == (n, n) and \
        int(np.linalg.matrix_rank(np.asarray(B))) == n


def _structural_columns(system: System, q_start: FloatArray, rng: np.random.Generator) -> list[int]:
    """The base columns of regressors at random states (valid configurations: ``integrate``
    from ``q_start`` along a random velocity)."""
    lumped = lumped_parameters(system)
    count = max(10 * len(lumped) // max(system.nv, 1), 10)
    q = np.array([system.integrate(q_start, rng.normal(size=system.nv), 1.0) for _ in range(count)])
    v, a = rng.normal(size=(2, count, system.nv))
    data = Samples(np.arange(count, dtype=np.float64), q, v, a, np.zeros_like(v), v, False, v)
    return list(decompose(lumped, stacked(system, data)[0], DEFAULT_TOLERANCE).independent)


def excitation(system: System, duration: float, harmonics: int = 5, limits: Mapping[str, Any] | None = None, *,
               q0: ArrayLike | None = None, v0: ArrayLike | None = None, samples: int = 60, seed: int = 0,
               max_iterations: int = 100, parametrize: str | None = None, dt: float = 0.01) -> Excitation:
    """A periodic excitation of ``duration`` seconds with ``harmonics`` terms per joint
    (``parametrize="reference"``) or per input (``"input"``) that minimizes the condition number
    of the stacked base regressor within ``limits`` (``"q"``: ``|q - q0|``, ``"v"``: ``|v|``,
    ``"u"``: ``|u|``, each a number or one per coordinate, velocity or input; ``inf``: none),
    designed on ``samples`` points of the period from a random start (``seed``) (module
    docstring; Swevers et al. 1997). ``parametrize`` None: ``"reference"`` for a fully actuated
    textbook system, ``"input"`` otherwise (underactuated systems, MJCF models). ``q0``: the
    reference's offset, or the input design's start configuration (default zero, an MJCF
    model's default state), ``v0`` its start velocity (``"input"``; default zero); ``dt``: the
    step of the input design's simulation."""
    check_system(system, "excitation")
    if not (isinstance(duration, float | int) and not isinstance(duration, bool) and math.isfinite(duration)
            and duration > 0):
        raise IdentificationError(f"excitation: duration must be a positive number, got {duration!r}")
    _check_integer("harmonics", harmonics, 1)
    _check_integer("samples", samples, 2)
    _check_integer("max_iterations", max_iterations, 1)
    _check_integer("seed", seed, 0)
    fully = _fully_actuated(system)
    mode = ("reference" if fully else "input") if parametrize is None else parametrize
    if mode not in PARAMETRIZATIONS:
        raise IdentificationError(f"excitation: parametrize must be one of {', '.join(map(repr, PARAMETRIZATIONS))} "
                                  f"or None, got {parametrize!r}")
    if mode == "reference" and not fully:
        raise IdentificationError(f"excitation: parametrize='reference' needs a fully actuated textbook system "
                                  f"(square, invertible B); {system.type_name} is not: use parametrize='input' "
                                  "(the inputs' series, the motion by simulation)")
    if mode == "input":
        return _input_excitation(system, float(duration), harmonics, limits, q0, v0, samples, seed,
                                 max_iterations, dt)
    if v0 is not None:
        raise IdentificationError("excitation: v0 applies to parametrize='input' (a reference sets its own)")
    return _reference_excitation(system, float(duration), harmonics, limits, q0, samples, seed, max_iterations)


def _reference_excitation(system: System, duration: float, harmonics: int, limits: Mapping[str, Any] | None,
                          q0: ArrayLike | None, samples: int, seed: int, max_iterations: int) -> Excitation:
    n = system.nv
    B = np.asarray(system.B)  # type: ignore[attr-defined]
    bounds = _check_limits(limits, {"q": n, "v": n, "u": n})
    offset = np.zeros(n) if q0 is None else np.asarray(q0, dtype=np.float64)
    if offset.shape != (n,) or not np.all(np.isfinite(offset)):
        raise IdentificationError(f"excitation: q0 must be {n} finite numbers, got {q0!r}")
    w = 2.0 * math.pi / duration
    times = np.linspace(0.0, duration, samples, endpoint=False)
    rng = np.random.default_rng(seed)
    lumped = lumped_parameters(system)
    generic = np.concatenate([regressor(system, *rng.normal(size=(3, n))) for _ in range(10 * len(lumped))])
    columns = list(decompose(lumped, generic, DEFAULT_TOLERANCE).independent)
    shape = (n, harmonics, 2)

    def trajectory(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        return fourier(x.reshape(shape), offset, w, times)

    def objective(x: FloatArray) -> float:
        q, v, a = trajectory(x)
        return math.log(stacked_condition(system, q, v, a, columns))

    def margins(x: FloatArray) -> FloatArray:
        q, v, a = trajectory(x)
        return limit_margins(bounds, q - offset, v, lambda: np.array(
            [np.linalg.solve(B, regressor(system, q[k], v[k], a[k]) @ lumped.values) for k in range(samples)]))

    x0 = _start_feasible(rng.normal(scale=0.1, size=int(np.prod(shape))), margins, bounds)
    best, condition, initial, message, feasible = _optimize(objective, margins, x0, bounds, max_iterations)
    return Excitation(system=system, coefficients=best.reshape(shape), q0=offset, frequency=w,
                      duration=duration, condition=condition, initial=initial, columns=columns, message=message,
                      feasible=feasible)


def _input_excitation(system: System, duration: float, harmonics: int, limits: Mapping[str, Any] | None,
                      q0: ArrayLike | None, v0: ArrayLike | None, samples: int, seed: int, max_iterations: int,
                      dt: float) -> Excitation:
    nu = system.control_size
    if nu == 0:
        raise IdentificationError(f"excitation: a {system.type_name!r} system has no inputs to excite it with")
    if system.na:
        raise IdentificationError(f"excitation: parametrize='input' does not model actuator activations "
                                  f"({system.type_name!r} has na = {system.na})")
    if not (isinstance(dt, float | int) and not isinstance(dt, bool) and 0 < dt <= duration / 2):
        raise IdentificationError(f"excitation: dt must be a number in (0, duration / 2], got {dt!r}")
    steps = round(duration / dt)
    if abs(steps * dt - duration) > 1e-9 * duration:
        raise IdentificationError(f"excitation: duration {duration} is not a whole number of steps dt = {dt}")
    bounds = _check_limits(limits, {"q": system.nq, "v": system.nv, "u": nu})
    default = system.default_state() if _is_mjcf(system) else None
    start_q = np.asarray(default[0] if (q0 is None and default is not None) else
                         (np.zeros(system.nq) if q0 is None else q0), dtype=np.float64)
    start_v = np.asarray(np.zeros(system.nv) if v0 is None else v0, dtype=np.float64)
    if start_q.shape != (system.nq,) or start_v.shape != (system.nv,) or not (
            np.all(np.isfinite(start_q)) and np.all(np.isfinite(start_v))):
        raise IdentificationError(f"excitation: q0 must be {system.nq} finite numbers and v0 {system.nv}, got "
                                  f"{q0!r} and {v0!r}")
    w = 2.0 * math.pi / duration
    times = np.arange(steps) * dt
    rows = np.unique(np.linspace(0, steps - 1, min(samples, steps)).round().astype(int))
    rng = np.random.default_rng(seed)
    columns = _structural_columns(system, start_q, rng)
    shape = (nu, harmonics, 2)
    cache: dict[bytes, tuple[FloatArray, FloatArray, FloatArray]] = {}

    def run(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key not in cache:
            if len(cache) > 4 * x.size + 8:  # the points of one Jacobian and the line search's
                cache.clear()
            u = input_series(x[:-nu].reshape(shape), w, times, x[-nu:])
            cache[key] = (*free_motion(system, u, start_q, start_v, dt), u)
        return cache[key]

    def objective(x: FloatArray) -> float:
        q, v, _ = run(x)
        if not np.all(np.isfinite(v)):
            return math.log(1e16)
        W = stacked(system, _samples_of(system, q, v, dt, rows))[0][:, columns]
        return math.log(min(float(np.linalg.cond(W)), 1e16))

    def margins(x: FloatArray) -> FloatArray:
        q, v, u = run(x)
        out = limit_margins(bounds, q - start_q, v, lambda: u)
        return np.where(np.isnan(out), -1e3, out)  # a run that diverged violates every limit

    scale = 0.3 * float(np.min(bounds["u"])) / harmonics if "u" in bounds and np.isfinite(bounds["u"]).all() else 1.0
    x0 = _start_feasible(np.append(rng.normal(scale=scale, size=int(np.prod(shape))), np.zeros(nu)), margins,
                         bounds)
    best, condition, initial, message, feasible = _optimize(objective, margins, x0, bounds, max_iterations, 1e-7)
    return Excitation(system=system, coefficients=best[:-nu].reshape(shape), q0=start_q, frequency=w,
                      duration=duration, condition=condition, initial=initial, columns=columns, message=message,
                      parametrize="input", v0=start_v, dt=float(dt), u0=best[-nu:].copy(), feasible=feasible)
