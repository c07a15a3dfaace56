"""Continuous-time constrained dynamics integrated with scipy (``formulation="ode"``).

The multipliers of the bilateral rows (``H vdot = r``, ``r`` from the drift treatment, see
:mod:`contactopt.integrators.drift`) come from one of three equivalent computations:

* ``pinv`` (Tedrake 2022, "Bilateral Position Constraints"):
  ``lambda = (H M^{-1} H^T)^+ (r - H M^{-1} tau)``, ``vdot = M^{-1} (tau + H^T lambda)``;
* ``kkt`` (Savin 2020 and the "Lagrangian Mechanics" notes): ``[M, -H^T; H, 0] [vdot; lambda] = [tau; r]``;
* ``gauss`` (Tedrake 2022, Gauss's principle of least constraint): the equality-constrained
  QP ``min 1/2 (a - M^{-1} tau)^T M (a - M^{-1} tau)  s.t.  H a = r`` posed as a
  :class:`~contactopt.programs.ConicProgram` and solved through the solver layer; the row
  duals are ``-lambda``.

Integration uses :func:`scipy.integrate.solve_ivp` (``method`` RK45, DOP853, Radau, BDF, LSODA;
step-size control with ``rtol``/``atol``) over each output interval ``[t, t + dt]``, or fixed
explicit Euler (``method="euler"``) to show its energy drift. With ``drift="projection"`` the
state is projected onto the constraint manifold after each interval. Contacts are not
modelled: a system with contact candidates is refused (the compliant and hybrid baselines
handle them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.integrate import solve_ivp

from contactopt import solvers
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators.capabilities import refuse_activation_states, refuse_contacts
from contactopt.integrators.drift import DRIFT_DEFAULTS, Drift, project
from contactopt.model.step import State
from contactopt.programs import ConicProgram, Residuals, Status, Zero
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System
from contactopt.systems.dense import dense_view

FloatArray = NDArray[np.float64]

METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA", "euler")


class ConstrainedODE:
    """``step(state) -> (next_state, record)`` by integrating the constrained dynamics."""

    name: ClassVar[str] = "ode"
    description: ClassVar[str] = "continuous-time constrained dynamics (solve_ivp), lambda by pinv/kkt/gauss"
    defaults: ClassVar[Mapping[str, Any]] = {
        "multipliers": "kkt", "method": "RK45", "rtol": 1e-9, "atol": 1e-9, **DRIFT_DEFAULTS}

    def __init__(self, system: System, solver: str, dt: float, options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        refuse_activation_states(system, 'ode')  # before step 0
        self.system = dense_view(system)  # small dense linear algebra (systems/dense.py)
        self.dt = float(dt)
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise OptionError(f"formulation 'ode': unknown option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(self.defaults)}")
        self.options = {**self.defaults, **given}
        if self.options["multipliers"] not in ("pinv", "kkt", "gauss"):
            raise OptionError(f"formulation 'ode': multipliers must be 'pinv', 'kkt' or 'gauss', "
                              f"got {self.options['multipliers']!r}")
        if self.options["method"] not in METHODS:
            raise OptionError(f"formulation 'ode': method must be one of {', '.join(METHODS)}, "
                              f"got {self.options['method']!r}")
        for key in ("rtol", "atol"):
            value = self.options[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise OptionError(f"formulation 'ode': {key} must be a positive number, got {value!r}")
        self.drift = Drift.from_options(self.options, "formulation 'ode'")
        if self.drift.mode == "projection" and system.nq != system.nv:
            raise OptionError("formulation 'ode': drift projection needs qdot = v")
        self.solver = solver
        self.solver_options = dict(solver_options or {})
        if self.options["multipliers"] == "gauss":
            solvers.parse_name(solver)
        self.formulation_options = self.options
        if system.nq != system.nv:
            raise OptionError(f"formulation 'ode' needs qdot = v; system {system.type_name!r} has nq={system.nq} "
                              f"!= nv={system.nv} (quaternion states): use 'compliant' or a time-stepping formulation")

    def check_state(self, state: State) -> None:
        """Contacts are refused, not ignored (:mod:`contactopt.integrators.capabilities`)."""
        refuse_contacts(self.system, state, "ode")

    # --- the dynamics ---------------------------------------------------------------------
    def acceleration(self, t: float, q: FloatArray, v: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(vdot, lambda)`` at ``(t, q, v)``."""
        dynamics = self.system.dynamics(q, v)
        bilateral = self.system.constraints(q, v, t)
        if bilateral.count == 0:
            return dynamics.solve_M(dynamics.tau), np.zeros(0)
        return accelerations(dynamics.M, dynamics.tau, bilateral.H,
                             self.drift.acceleration_target(bilateral, v), self.options["multipliers"],
                             self.solver, self.solver_options)

    def _rhs(self, t: float, y: FloatArray) -> FloatArray:
        nq = self.system.nq
        q, v = y[:nq], y[nq:]
        if self.system.nq != self.system.nv:
            raise OptionError("formulation 'ode' needs qdot = v (no quaternion states)")
        return np.concatenate([v, self.acceleration(t, q, v)[0]])

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        system = self.system
        self.check_state(state)
        contacts = system.contacts(state.q)
        record: dict[str, Any] = dict(t=state.t, impulses=np.zeros((contacts.count, contacts.dim)),
                                      phi=contacts.phi.copy(), build_time=0.0, setup_time=0.0,
                                      solver=self.options["method"])
        start = time.perf_counter()
        try:
            record.update(self._start_of_step(state))
            y0 = np.concatenate([state.q, state.v])
            if self.options["method"] == "euler":
                y1 = y0 + self.dt * self._rhs(state.t, y0)
                success, evaluations, message = True, 1, "explicit Euler"
            else:
                result = solve_ivp(self._rhs, (state.t, state.t + self.dt), y0, method=self.options["method"],
                                   rtol=self.options["rtol"], atol=self.options["atol"])
                success, evaluations, message = bool(result.success), int(result.nfev), str(result.message)
                y1 = result.y[:, -1]
        except ContactoptError as exc:  # e.g. Gauss's QP failed: a failed step, recorded
            success, evaluations, message, y1 = False, 0, str(exc), np.full(system.nq + system.nv, np.nan)
            record.setdefault("residuals", Residuals(np.inf, np.inf, np.inf, np.inf))
        elapsed = time.perf_counter() - start
        if not success or not np.all(np.isfinite(y1)):
            return None, StepRecord(status=Status.NUMERICAL_ERROR, solve_time=elapsed, iterations=evaluations,
                                    message=message, **record)
        q1, v1 = y1[: system.nq], y1[system.nq :]
        if self.drift.mode == "projection":
            q1, v1 = project(system, q1, v1, state.t + self.dt)
        return State(q1, v1, state.t + self.dt), StepRecord(
            status=Status.OPTIMAL, solve_time=elapsed, iterations=evaluations, message=message, **record)

    def _start_of_step(self, state: State) -> dict[str, Any]:
        """Multipliers, their residuals and the constraint violation at the start of the step."""
        dynamics = self.system.dynamics(state.q, state.v)
        bilateral = self.system.constraints(state.q, state.v, state.t)
        acceleration, lam = self.acceleration(state.t, state.q, state.v)
        target = self.drift.acceleration_target(bilateral, state.v)
        stationarity = dynamics.M @ acceleration - dynamics.tau - bilateral.H.T @ lam
        residuals = Residuals(primal=float(np.abs(bilateral.H @ acceleration - target).max(initial=0.0)),
                              dual=float(np.abs(stationarity).max(initial=0.0)), gap=math.nan,
                              complementarity=0.0)
        return {"residuals": residuals, "bilateral": lam * self.dt,
                "constraint_error": bilateral.violation(state.v)}


def accelerations(M: FloatArray, tau: FloatArray, H: FloatArray, r: FloatArray, method: str,
                  solver: str = "clarabel", solver_options: Mapping[str, Any] | None = None,
                  ) -> tuple[FloatArray, FloatArray]:
    """``(vdot, lambda)`` of ``M vdot = tau + H^T lambda``, ``H vdot = r`` (see module doc)."""
    nv, nh = M.shape[0], H.shape[0]
    if method == "pinv":
        Mi_tau = np.linalg.solve(M, tau)
        Mi_Ht = np.linalg.solve(M, H.T)
        lam = np.linalg.pinv(H @ Mi_Ht) @ (r - H @ Mi_tau)
        return Mi_tau + Mi_Ht @ lam, lam
    if method == "kkt":
        kkt = np.block([[M, -H.T], [H, np.zeros((nh, nh))]])
        solution = np.linalg.lstsq(kkt, np.concatenate([tau, r]), rcond=None)[0]
        return solution[:nv], solution[nv:]
    program = ConicProgram(P=sp.csc_matrix(M), c=-tau, A=sp.csc_matrix(H), b=r, cones=(Zero(nh),),
                           metadata={"formulation": "ode", "multipliers": "gauss"})
    solution = solvers.solve(program, solver, solver_options)
    if not solution.status.usable:
        raise ContactoptError(f"formulation 'ode': Gauss's principle QP failed with {solution.status} "
                          f"({solution.message})")
    return solution.x, -solution.y
