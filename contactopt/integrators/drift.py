"""Constraint-drift treatments for bilateral constraints, shared by every integrator.

* ``none``: the constraints are imposed at velocity (time stepping) or acceleration (ODE)
  level only, so ``h(q)`` drifts (Tedrake 2022, "Bilateral Position Constraints").
* ``baumgarte``: feedback on the violation. At acceleration level (continuous time) the
  constraint rows become ``H vdot + Hdot v = bdot - 2 alpha e - alpha^2 h`` with one
  critically damped ``alpha`` (Tedrake 2022), or ``... - alpha e - beta h`` with separate
  gains when ``beta`` is given ("Lagrangian Mechanics" notes), ``e = H v - b`` the velocity error. At velocity
  level (time stepping) ``H v' = b - alpha h``: the error decays like ``exp(-alpha t)``
  (stable for ``alpha h < 2``).
* ``projection``: after each step, positions are moved back onto ``h(q) = 0`` by the
  linearized projection ``q <- q - H^+ h(q)`` (repeated until ``|h|`` is at round-off) and
  velocities onto ``H v = b`` by ``v <- N N^+ v + H^+ b``, ``N`` the null space of ``H`` from
  one SVD (Savin 2020, "constraint drift").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, OptionError
from contactopt.model.step import Bilateral
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

DRIFT_DEFAULTS: dict[str, Any] = {"drift": "none", "alpha": 10.0, "beta": None}
DRIFT_MODES = ("none", "baumgarte", "projection")


@dataclass(frozen=True)
class Drift:
    """A drift treatment: ``mode`` and the Baumgarte gains ``alpha`` [1/s], ``beta`` [1/s^2]."""

    mode: str = "none"
    alpha: float = 10.0
    beta: float | None = None

    @staticmethod
    def from_options(options: Mapping[str, Any], owner: str) -> Drift:
        mode = options.get("drift", "none")
        if mode not in DRIFT_MODES:
            allowed = ", ".join(map(repr, DRIFT_MODES))
            raise OptionError(f"{owner}: drift must be one of {allowed}, got {mode!r}")
        alpha, beta = options.get("alpha", 10.0), options.get("beta")
        for key, value in (("alpha", alpha), ("beta", beta)):
            if value is None and key == "beta":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or value < 0:
                raise OptionError(f"{owner}: {key} must be a finite number >= 0, got {value!r}")
        return Drift(mode, float(alpha), None if beta is None else float(beta))

    def acceleration_target(self, bilateral: Bilateral, v: FloatArray) -> FloatArray:
        """``r`` with ``H vdot = r`` for the continuous-time dynamics."""
        r = bilateral.target_rate - bilateral.Hdot_v
        if self.mode != "baumgarte":
            return r
        error_rate = bilateral.velocity_error(v)
        error = bilateral.position_error
        if self.beta is None:
            return r - 2.0 * self.alpha * error_rate - self.alpha**2 * error
        return r - self.alpha * error_rate - self.beta * error

    def velocity_target(self, bilateral: Bilateral) -> FloatArray:
        """``r_v`` with ``H v' = r_v`` at the end of a time step."""
        if self.mode != "baumgarte":
            return bilateral.target
        return bilateral.target - self.alpha * bilateral.position_error


def project(system: System, q: FloatArray, v: FloatArray, t: float, tol: float = 1e-13,
            max_iter: int = 20) -> tuple[FloatArray, FloatArray]:
    """Project ``(q, v)`` onto the constraint manifold (Savin 2020; see module doc)."""
    if system.constraints(q, v, t).count == 0:
        return q, v
    if system.nq != system.nv:
        raise ContactoptError(f"drift projection needs qdot = v; system {system.type_name!r} has "
                              f"nq = {system.nq}, nv = {system.nv}")
    q = np.array(q, dtype=np.float64)
    for _ in range(max_iter):
        bilateral = system.constraints(q, v, t)
        error = bilateral.position_error
        if np.abs(error).max(initial=0.0) <= tol * max(1.0, float(np.abs(q).max())):
            break
        rows = ~bilateral.velocity_rows
        q = q - np.linalg.pinv(bilateral.H[rows]) @ error[rows]
    bilateral = system.constraints(q, v, t)
    U, S, Vt = np.linalg.svd(bilateral.H)
    rank = int((1e-12 * max(1.0, S.max(initial=0.0)) < S).sum())
    N = Vt[rank:].T  # orthonormal null-space basis: N^+ = N^T
    H_pinv = Vt[:rank].T @ np.diag(1.0 / S[:rank]) @ U[:, :rank].T
    return q, N @ (N.T @ v) + H_pinv @ bilateral.target
