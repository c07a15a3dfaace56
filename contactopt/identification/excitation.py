"""Excitation trajectories (Tedrake 2020, "Parameter Estimation", "Trajectory design"; Swevers,
Ganseman, Tukel, De Schutter and Van Brussel 1997, "Optimal robot excitation and identification"):
a periodic reference per joint, a finite Fourier series with base frequency ``w_f = 2 pi /
duration``::

    q_i(t) = q0_i + sum_{l=1..L} a_il / (w_f l) sin(w_f l t) - b_il / (w_f l) cos(w_f l t)

(so ``qdot_i = sum a_il cos(w_f l t) + b_il sin(w_f l t)``), whose coefficients minimize the
condition number of the base regressor stacked over ``samples`` points of one period,
``cond(W_i)`` (:mod:`contactopt.identification.basis`), subject to joint position, velocity and
torque limits at those points (SLSQP, the limits as inequality constraints; the torques are
the nominal model's ``Y alpha``). The base columns are those of the system's structural basis
(random states), fixed during the search so that the objective is one function.

The result, an :class:`Excitation`, is a controller that ``simulate`` accepts, ``f(t, q, v) ->
u``: the nominal computed torque of the reference plus PD tracking, ``u = B^{-1} (Y(q_r, v_r,
a_r) alpha + Kp (q_r - q) + Kd (v_r - v))`` (fully actuated systems; the nominal ``alpha`` are
the system's own parameters, the best guess before identification).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from contactopt.identification.basis import DEFAULT_TOLERANCE, decompose
from contactopt.identification.lumped import IdentificationError, check_system, lumped_parameters, regressor
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["Excitation", "excitation", "fourier", "stacked_condition"]

LIMIT_KEYS = ("q", "v", "u")


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


@dataclass
class Excitation:
    """An optimized excitation trajectory and its tracking controller (module docstring).

    Attributes:
        coefficients: (n, L, 2) the Fourier coefficients ``a_il, b_il``.
        q0: (n,) the offset; frequency: ``w_f`` [rad/s]; duration: one period [s].
        condition: ``cond(W_i)`` at the optimum over the design samples; initial: at the start.
        columns: the base columns it was designed for.
        gains: ``(Kp, Kd)`` of the tracking controller.
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

    def reference(self, t: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(q, v, vdot)`` of the reference at times ``t``."""
        return fourier(self.coefficients, self.q0, self.frequency, t)

    def initial_state(self) -> tuple[FloatArray, FloatArray]:
        """``(q(0), v(0))`` of the reference: a scene's ``q0, v0`` for tracking from the start."""
        q, v, _ = self.reference(0.0)
        return q[0], v[0]

    def __call__(self, t: float, q: FloatArray, v: FloatArray) -> FloatArray:
        """The computed torque of the reference plus PD tracking (module docstring)."""
        qr, vr, ar = (x[0] for x in self.reference(t))
        kp, kd = self.gains
        alpha = lumped_parameters(self.system).values
        force = regressor(self.system, qr, vr, ar) @ alpha + kp * (qr - q) + kd * (vr - v)
        return np.asarray(np.linalg.solve(self.system.B, force), dtype=np.float64)  # type: ignore[attr-defined]


def _check_limits(limits: Mapping[str, float] | None, n: int) -> dict[str, FloatArray]:
    out: dict[str, FloatArray] = {}
    if limits is None:
        return out
    if not isinstance(limits, Mapping):
        raise IdentificationError(f"excitation: limits must be a mapping with keys q, v, u; "
                                  f"got {type(limits).__name__}")
    for key, value in limits.items():
        if key not in LIMIT_KEYS:
            raise IdentificationError(f"excitation: unknown limit {key!r}; known: {', '.join(LIMIT_KEYS)}")
        arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy()
        if not np.all(np.isfinite(arr) & (arr > 0)):
            raise IdentificationError(f"excitation: limits[{key!r}] must be positive and finite, got {value!r}")
        out[key] = arr
    return out


def excitation(system: System, duration: float, harmonics: int = 5, limits: Mapping[str, float] | None = None, *,
               q0: ArrayLike | None = None, samples: int = 60, seed: int = 0, max_iterations: int = 100) -> Excitation:
    """A periodic excitation of ``duration`` seconds with ``harmonics`` terms per joint that
    minimizes the condition number of the stacked base regressor within ``limits`` (``"q"``:
    ``|q - q0|``, ``"v"``: ``|v|``, ``"u"``: ``|u|``, each a number or one per joint), designed
    on ``samples`` points of the period from a random start (``seed``), for a fully actuated
    textbook system (module docstring; Swevers et al. 1997)."""
    check_system(system, "excitation")
    B = getattr(system, "B", None)
    n = system.nv
    if B is None or B.shape != (n, n) or np.linalg.matrix_rank(B) < n:
        raise IdentificationError(f"excitation: needs a fully actuated textbook system (square, invertible B); "
                                  f"{system.type_name} is not")
    if not (isinstance(duration, float | int) and math.isfinite(duration) and duration > 0):
        raise IdentificationError(f"excitation: duration must be a positive number, got {duration!r}")
    for name, value, least in (("harmonics", harmonics, 1), ("samples", samples, 2), ("max_iterations",
                                                                                        max_iterations, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise IdentificationError(f"excitation: {name} must be an integer >= {least}, got {value!r}")
    bounds = _check_limits(limits, n)
    offset = np.zeros(n) if q0 is None else np.asarray(q0, dtype=np.float64).reshape(n)
    w = 2.0 * math.pi / float(duration)
    times = np.linspace(0.0, float(duration), samples, endpoint=False)
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
        parts = [np.zeros(0)]
        if "q" in bounds:
            parts.append((bounds["q"] - np.abs(q - offset)).reshape(-1))
        if "v" in bounds:
            parts.append((bounds["v"] - np.abs(v)).reshape(-1))
        if "u" in bounds:
            u = np.array([np.linalg.solve(B, regressor(system, q[k], v[k], a[k]) @ lumped.values)
                          for k in range(samples)])
            parts.append((bounds["u"] - np.abs(u)).reshape(-1))
        return np.concatenate(parts)

    x0 = rng.normal(scale=0.1, size=int(np.prod(shape)))
    if bounds:  # start feasible: shrink the random start until every limit holds
        for _ in range(60):
            if np.all(margins(x0) >= 0):
                break
            x0 *= 0.7
    initial = math.exp(objective(x0))
    constraints: Any = [{"type": "ineq", "fun": margins}] if bounds else []
    options: Any = {"maxiter": max_iterations, "ftol": 1e-6}
    result = scipy.optimize.minimize(objective, x0, method="SLSQP", constraints=constraints, options=options)
    best = result.x if (not bounds or np.all(margins(result.x) >= -1e-6)) and result.fun <= math.log(initial) else x0
    return Excitation(system=system, coefficients=best.reshape(shape), q0=offset, frequency=w,
                      duration=float(duration), condition=math.exp(objective(best)), initial=initial,
                      columns=columns, message=str(result.message))
