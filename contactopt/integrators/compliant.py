"""Compliant contact: rigid contact approximated by stiff springs and dampers, integrated in
continuous time with error control (``formulation="compliant"``; Tedrake 2022, "Compliant
Contact Models"; Tedrake 2020, "Compliant Contact Models").

At every instant the contact forces are functions of the state. Per contact, with the frame
rows of :meth:`System.contacts` (normal first), the penetration ``x = max(0, -phi)``, its
rate ``xdot = -n v`` and the tangential velocity ``v_t = t v`` (1 or 2 components):

* normal force (``model``), zero while ``x = 0`` and never pulling:

  - ``"linear"``, the reference's "simple (piecewise) linear spring law" with a damper:
    ``f_n = max(0, k x + c xdot)``;
  - ``"hunt_crossley"`` (Hunt & Crossley 1975, the damper the reference cites):
    ``f_n = max(0, k x^p (1 + alpha xdot))``, ``p = exponent`` (1.5 for Hertzian spheres).

  ``damping`` is ``c`` [N·s/m] for the linear model and ``alpha`` [s/m] for Hunt-Crossley.
  Left unset it follows the scene's restitution ``e``: linear, ``c = 2 zeta sqrt(k m_n)`` with
  the contact's effective normal mass ``m_n = 1 / (n M^{-1} n^T)`` and the damping ratio
  ``zeta`` whose spring-damper, force cut at zero, rebounds with exactly ``e``
  (:func:`clipped_restitution`; the uncut formula ``zeta = -ln e / sqrt(pi^2 + ln^2 e)`` would
  give ``e = 0.135`` instead of 0 at critical damping); ``e = 0`` is taken as ``e = 0.01``
  (``zeta = 4.9``: a spring-damper cannot be perfectly plastic). Hunt-Crossley: their relation
  ``e = 1 - 2/3 alpha v_in`` at a reference impact speed ``v_in = 1 m/s``,
  ``alpha = 3 (1 - e) / 2`` (the rebound depends on the impact speed).
* friction (``friction``): Coulomb's law with a static and a dynamic coefficient,
  ``|f_t| = mu_static f_n`` to start sliding and ``mu_dynamic f_n`` while sliding, is not a
  function of the state, so it is approximated by a continuous coefficient ``mu(s)`` of the
  slip speed ``s = |v_t|`` (the reference's figure), ``f_t = -mu(s) f_n v_t / s``:

  - ``"coulomb_pwl"``, the continuous piecewise-linear law: ``mu = mu_s s / v_s`` for
    ``s <= v_s``, then linearly down to ``mu_d`` at ``s = 3 v_s``, then ``mu_d``;
  - ``"stribeck"``, a smooth Stribeck curve:
    ``mu = tanh(2 s / v_s) (mu_d + (mu_s - mu_d) exp(-(s / (2 v_s))^2))``.

  ``v_s = slip_velocity`` is the regularization width: below it friction is viscous, so a body
  held by friction creeps at a speed of order ``v_s``. ``mu_static`` and ``mu_dynamic``
  default to the scene's ``mu`` (per contact); infinite friction has no compliant model.

The dynamics ``M vdot = tau + J^T f(q, v)`` (with the system's bilateral rows, if any, imposed at
acceleration level as in the ``ode`` baseline: :func:`~contactopt.integrators.ode.accelerations`,
KKT) and ``qdot = N(q) v`` (:meth:`System.qdot`; unit quaternions for ``rigid3d``) are
integrated by one :mod:`scipy.integrate` solver (``method``: RK45, RK23, DOP853 explicit;
Radau, BDF, LSODA stiff) that keeps running across the output intervals ``[t, t + dt]``:
the state at ``t + dt`` is read from its dense output, so the interval does not restart the
error control. ``method="euler"`` is fixed-step explicit Euler with substeps
``min(dt, max_step)``, the "step at a fixed rate" integrator that explodes when the contact is
stiff. The contact impulses are integrated along (extra states ``P' = f``), so a record's
``impulses`` are the exact ``int f dt`` over its interval.

**Rows with their own stiffness** (:attr:`Contacts.stiffness`: hydroelastic quadrature points,
:mod:`contactopt.systems.hydroelastic`): ``f_n = max(0, k_i x (1 + d_i xdot))``, Hunt-Crossley
with the row's stiffness ``k_i`` and dissipation ``d_i`` (exponent 1), whatever ``model``,
``stiffness`` and ``damping`` say; their friction is the law above. The number of rows must
stay constant over a run (a surface's mesh has a fixed number of polygons while it exists: a
body that lands or lifts off ends the run with a failed step, as box pairs do).

A step fails (status ``numerical_error``, no next state) when the solver fails, the state is
not finite, or a speed exceeds ``max_speed`` (a blow-up).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, OdeSolver, Radau
from scipy.optimize import brentq

from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators.capabilities import refuse_activation_states
from contactopt.integrators.drift import Drift
from contactopt.integrators.ode import accelerations
from contactopt.integrators.options import choice, merge_options, number, optional_number
from contactopt.model.step import Contacts, Dynamics, State
from contactopt.programs import Residuals, Status
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System
from contactopt.systems.dense import dense_view

FloatArray = NDArray[np.float64]

__all__ = ["FRICTION_LAWS", "METHODS", "MODELS", "CompliantContact", "friction_coefficient", "normal_force",
           "restitution_damping_ratio"]

MODELS = ("linear", "hunt_crossley")
FRICTION_LAWS = ("coulomb_pwl", "stribeck")
_SOLVERS: dict[str, type[OdeSolver]] = {"RK45": RK45, "RK23": RK23, "DOP853": DOP853, "Radau": Radau,
                                        "BDF": BDF, "LSODA": LSODA}
METHODS = (*_SOLVERS, "euler")
_STIFF = ("Radau", "BDF", "LSODA")  # solvers that take a Jacobian
_NO_RESIDUALS = Residuals(math.nan, math.nan, math.nan, math.nan)


class BlowUp(ContactoptError):
    """The state left the range a physical simulation can reach (non-finite or too fast)."""


#: The smallest restitution a clipped spring-damper is tuned to: it cannot be perfectly plastic
#: (``e -> 0`` needs ``zeta -> inf``); ``e = 0`` gives ``zeta = 4.9``.
RESTITUTION_FLOOR = 0.01


def clipped_restitution(zeta: float) -> float:
    """Restitution of the linear spring-damper whose force is cut at zero, as a function of the
    damping ratio ``zeta`` (contact ends when ``k x + c xdot = 0``, i.e. ``xddot = 0``, not when
    ``x = 0``; cf. Schwager & Poeschel, Granular Matter 9, 2007). In units ``omega = v_in = 1``,
    ``x(t)`` is the free response from ``x = 0``, ``xdot = 1``; ``e = -xdot(t_r)`` at the release
    time ``t_r``: underdamped ``t_r = atan2(2 zeta w, 2 zeta^2 - 1) / w`` (``w = sqrt(1 - zeta^2)``),
    critical ``t_r = 2`` (``e = exp(-2)``), overdamped ``t_r = 2 ln(r2 / r1) / (r1 - r2)`` with the
    roots ``r1,2 = -zeta +- sqrt(zeta^2 - 1)``."""
    if zeta <= 0.0:
        return 1.0
    if zeta < 1.0:
        w = math.sqrt(1.0 - zeta * zeta)
        t = math.atan2(2.0 * zeta * w, 2.0 * zeta * zeta - 1.0) / w
        return -math.exp(-zeta * t) * (math.cos(w * t) - zeta / w * math.sin(w * t))
    if zeta == 1.0:
        return math.exp(-2.0)
    s = math.sqrt(zeta * zeta - 1.0)
    r1, r2 = -zeta + s, -zeta - s
    t = 2.0 * math.log(r2 / r1) / (r1 - r2)
    return -(r1 * math.exp(r1 * t) - r2 * math.exp(r2 * t)) / (r1 - r2)


@functools.lru_cache(maxsize=64)
def _zeta_for(e: float) -> float:
    """The damping ratio of :func:`clipped_restitution` for ``e`` (cached: one root per value)."""
    if e >= 1.0:
        return 0.0
    target = max(e, RESTITUTION_FLOOR)
    return float(brentq(lambda z: clipped_restitution(z) - target, 0.0, 1e3, xtol=1e-14, rtol=1e-12))


def restitution_damping_ratio(e: FloatArray) -> FloatArray:
    """Per contact the damping ratio ``zeta`` whose clipped spring-damper (:func:`clipped_restitution`)
    rebounds with restitution ``e`` (at least :data:`RESTITUTION_FLOOR`); 0 for ``e = 1``."""
    values = np.clip(np.asarray(e, dtype=np.float64), 0.0, 1.0)
    return np.array([_zeta_for(float(x)) for x in values.reshape(-1)]).reshape(values.shape)


def normal_force(model: str, x: FloatArray, xdot: FloatArray, k: float, damping: FloatArray,
                 exponent: float = 1.0) -> FloatArray:
    """Normal force of each contact from its penetration ``x >= 0`` and rate ``xdot``
    (module docstring): linear ``max(0, k x + c xdot)``, Hunt-Crossley
    ``max(0, k x^p (1 + alpha xdot))``; zero where ``x = 0``."""
    force = k * x + damping * xdot if model == "linear" else k * x**exponent * (1.0 + damping * xdot)
    return np.where(x > 0, np.maximum(force, 0.0), 0.0)


def friction_coefficient(law: str, s: FloatArray, mu_s: FloatArray, mu_d: FloatArray,
                         v_s: float) -> FloatArray:
    """``mu(s)`` of the slip speed ``s >= 0`` (module docstring): ``coulomb_pwl`` or ``stribeck``."""
    ratio = s / v_s
    if law == "coulomb_pwl":
        return np.where(ratio <= 1.0, mu_s * ratio,
                        np.where(ratio <= 3.0, mu_s - (mu_s - mu_d) * (ratio - 1.0) / 2.0, mu_d))
    return np.tanh(2.0 * ratio) * (mu_d + (mu_s - mu_d) * np.exp(-(0.5 * ratio) ** 2))


class CompliantContact:
    """``step(state) -> (next_state, record)`` with compliant contact forces (module docstring)."""

    name: ClassVar[str] = "compliant"
    description: ClassVar[str] = ("compliant contact (linear or Hunt-Crossley spring-damper, regularized "
                                  "Coulomb/Stribeck friction) integrated by solve_ivp solvers")
    defaults: ClassVar[Mapping[str, Any]] = {
        "model": "linear", "stiffness": 1e5, "damping": None, "exponent": 1.0, "friction": "coulomb_pwl",
        "mu_static": None, "mu_dynamic": None, "slip_velocity": 1e-4, "method": "Radau", "rtol": 1e-6,
        "atol": 1e-9, "max_step": math.inf, "max_speed": 1e6}

    def __init__(self, system: System, solver: str, dt: float, options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        """Validate ``options`` (module docstring; unknown keys rejected); ``solver`` is unused."""
        refuse_activation_states(system, 'compliant')  # before step 0
        owner = self.name
        self.system = dense_view(system)  # small dense linear algebra (systems/dense.py)
        self.dt = float(dt)
        self.options = merge_options(owner, self.defaults, options)
        opts = self.options
        self.model = choice(owner, opts, "model", MODELS)
        self.friction = choice(owner, opts, "friction", FRICTION_LAWS)
        self.method = choice(owner, opts, "method", METHODS)
        self.k = number(owner, opts, "stiffness")
        self.damping = optional_number(owner, opts, "damping", strict=False)
        self.exponent = number(owner, opts, "exponent", minimum=1.0, strict=False)
        if self.model == "linear" and self.exponent != 1.0:
            raise OptionError(f"formulation {owner!r}: exponent applies to model 'hunt_crossley' only "
                              f"(the linear spring has exponent 1), got {self.exponent:g}")
        self.mu_static = optional_number(owner, opts, "mu_static", strict=False)
        self.mu_dynamic = optional_number(owner, opts, "mu_dynamic", strict=False)
        self.slip_velocity = number(owner, opts, "slip_velocity")
        self.rtol = number(owner, opts, "rtol")
        self.atol = number(owner, opts, "atol")
        self.max_step = number(owner, opts, "max_step", finite=False)
        self.max_speed = number(owner, opts, "max_speed", finite=False)
        scene_mu = float(getattr(system, "mu", 0.0))
        mu_s = scene_mu if self.mu_static is None else self.mu_static
        mu_d = scene_mu if self.mu_dynamic is None else self.mu_dynamic
        if not (math.isfinite(mu_s) and math.isfinite(mu_d)):
            raise OptionError(f"formulation {owner!r}: infinite friction (mu = inf) has no compliant model; "
                              "give finite mu_static and mu_dynamic")
        if mu_s < mu_d:
            raise OptionError(f"formulation {owner!r}: mu_static ({mu_s:g}) must be >= mu_dynamic ({mu_d:g})")
        if system.nq != system.nv and type(system).qdot is System.qdot:
            raise OptionError(f"formulation {owner!r}: system {system.type_name!r} has nq != nv and no "
                              "qdot = N(q) v")
        self.solver = solver
        self.solver_options = dict(solver_options or {})
        self._ode: OdeSolver | None = None
        self._last: tuple[float, FloatArray, FloatArray] | None = None  # the state the last step returned
        self._impulse_at_last = np.zeros(0)
        self._euler_y = np.zeros(0)  # method "euler": the running state and its time
        self._euler_t = 0.0

    # --- the contact forces -----------------------------------------------------------------
    def forces(self, q: FloatArray, v: FloatArray, contacts: Contacts | None = None,
               dynamics: Dynamics | None = None) -> FloatArray:
        """(nc, dim) contact forces in the contact frames (normal first) at ``(q, v)``."""
        contacts = self.system.contacts(q) if contacts is None else contacts
        nc, dim = contacts.count, contacts.dim
        if nc == 0:
            return np.zeros((0, dim))
        local = (contacts.J @ v).reshape(nc, dim)
        x = np.maximum(0.0, -contacts.phi)
        xdot = -local[:, 0]
        out = np.zeros((nc, dim))
        out[:, 0] = normal_force(self.model, x, xdot, self.k, self._damping(q, contacts, dynamics), self.exponent)
        if contacts.stiffness is not None and contacts.dissipation is not None:  # rows with their own spring
            own = np.isfinite(contacts.stiffness)
            out[own, 0] = normal_force("hunt_crossley", x[own], xdot[own], 1.0, contacts.dissipation[own]) \
                * contacts.stiffness[own]
        if dim > 1:
            mu_s = np.full(nc, self.mu_static) if self.mu_static is not None else contacts.mu
            mu_d = np.full(nc, self.mu_dynamic) if self.mu_dynamic is not None else contacts.mu
            if not (np.all(np.isfinite(mu_s)) and np.all(np.isfinite(mu_d))):
                raise ContactoptError("formulation 'compliant': a contact has mu = inf; give finite "
                                      "mu_static and mu_dynamic")
            vt = local[:, 1:]
            s = np.linalg.norm(vt, axis=1)
            mu = friction_coefficient(self.friction, s, mu_s, mu_d, self.slip_velocity)
            with np.errstate(invalid="ignore", divide="ignore"):
                direction = np.where(s[:, None] > 0, vt / s[:, None], 0.0)
            out[:, 1:] = -(mu * out[:, 0])[:, None] * direction
        return out

    def _damping(self, q: FloatArray, contacts: Contacts, dynamics: Dynamics | None = None) -> FloatArray:
        """Per-contact ``c`` (linear) or ``alpha`` (Hunt-Crossley), given or from restitution."""
        if self.damping is not None:
            return np.full(contacts.count, self.damping)
        e = contacts.restitution
        if self.model == "hunt_crossley":
            return 1.5 * (1.0 - e)
        penetrating = contacts.phi < 0
        c = np.zeros(contacts.count)
        if np.any(penetrating):
            dynamics = self.system.dynamics(q, np.zeros(self.system.nv)) if dynamics is None else dynamics
            N = contacts.J_normal[penetrating]
            inverse_mass = np.einsum("ij,ji->i", N, dynamics.solve_M(N.T))
            m_n = 1.0 / np.maximum(inverse_mass, 1e-300)
            c[penetrating] = 2.0 * restitution_damping_ratio(e[penetrating]) * np.sqrt(self.k * m_n)
        return c

    # --- the ODE ------------------------------------------------------------------------------
    def _rhs(self, t: float, y: FloatArray) -> FloatArray:
        """``[qdot, vdot, f]`` with ``y = [q, v, P]`` (``P`` the integrated contact forces)."""
        system = self.system
        nq, nv = system.nq, system.nv
        q, v = y[:nq], y[nq:nq + nv]
        if not np.all(np.isfinite(y)):  # a trial point of the solver; it will reject the step
            return np.full(y.shape[0], np.nan)
        contacts = system.contacts(q)
        if contacts.count * contacts.dim != y.shape[0] - nq - nv:
            raise ContactoptError("formulation 'compliant': the number of contacts changed during the run")
        dynamics = system.dynamics(q, v)
        f = self.forces(q, v, contacts, dynamics)
        tau = dynamics.tau + contacts.J.T @ f.reshape(-1)
        bilateral = system.constraints(q, v, t)
        if bilateral.count:
            vdot = accelerations(dynamics.M, tau, bilateral.H, Drift().acceleration_target(bilateral, v), "kkt")[0]
        else:
            vdot = dynamics.solve_M(tau)
        return np.concatenate([system.qdot(q, v), vdot, f.reshape(-1)])

    def _jacobian(self, t: float, y: FloatArray) -> FloatArray:
        """``d rhs / d y`` by forward differences over the ``q`` and ``v`` columns (nothing
        depends on the impulse states), step ``sqrt(eps) max(1, |y_j|)``. (scipy's adaptive
        differences grow their step without bound on columns with no effect, e.g. positions in
        free flight, until the perturbed state overflows.)"""
        f0 = self._rhs(t, y)
        n, nqv = y.shape[0], self.system.nq + self.system.nv
        jac = np.zeros((n, n))
        for j in range(nqv):
            h = 1.5e-8 * max(1.0, abs(float(y[j])))
            shifted = y.copy()
            shifted[j] += h
            jac[:, j] = (self._rhs(t, shifted) - f0) / h
        return jac

    def _start(self, state: State) -> None:
        """A fresh integrator at ``state`` (impulse states from zero)."""
        contacts = self.system.contacts(state.q)
        y0 = np.concatenate([state.q, state.v, np.zeros(contacts.count * contacts.dim)])
        self._impulse_at_last = np.zeros(contacts.count * contacts.dim)
        if self.method == "euler":
            self._ode = None
            self._euler_y = y0
            self._euler_t = state.t
            return
        kwargs: dict[str, Any] = {"rtol": self.rtol, "atol": self.atol, "max_step": self.max_step}
        if self.method in _STIFF:
            kwargs["jac"] = self._jacobian
        self._ode = _SOLVERS[self.method](self._rhs, state.t, y0, np.inf, **kwargs)

    def _matches(self, state: State) -> bool:
        """Whether ``state`` is the one the last step returned (the integrator then continues)."""
        if self._last is None:
            return False
        t, q, v = self._last
        return t == state.t and np.array_equal(q, state.q) and np.array_equal(v, state.v)

    def _check(self, t: float, y: FloatArray) -> None:
        """Raise :class:`BlowUp` if an accepted state is not finite or too fast."""
        v = y[self.system.nq:self.system.nq + self.system.nv]
        speed = float(np.abs(v).max(initial=0.0)) if np.all(np.isfinite(v)) else math.inf
        if not np.all(np.isfinite(y)) or speed > self.max_speed:
            raise BlowUp(f"the state blew up at t={t:.6g} (|v| = {speed:.3g}, max_speed = {self.max_speed:g})")

    def _advance(self, t_end: float) -> tuple[FloatArray, int, int]:
        """Run the integrator to ``t_end``: ``(y(t_end), rhs evaluations, internal steps)``."""
        if self.method == "euler":
            h_max = min(self.dt, self.max_step)
            steps = 0
            while self._euler_t < t_end - 1e-12 * max(1.0, abs(t_end)):
                h = min(h_max, t_end - self._euler_t)
                self._euler_y = self._euler_y + h * self._rhs(self._euler_t, self._euler_y)
                self._euler_t += h
                steps += 1
                self._check(self._euler_t, self._euler_y)
            self._euler_t = t_end
            return self._euler_y.copy(), steps, steps
        ode = self._ode
        assert ode is not None
        nfev0, steps = ode.nfev, 0
        while ode.t < t_end:
            message = ode.step()
            steps += 1
            if ode.status == "failed":
                raise ContactoptError(f"{self.method} failed at t={ode.t:.6g}: {message}")
            self._check(ode.t, ode.y)
        y = ode.y.copy() if ode.t == t_end else ode.dense_output()(t_end)
        return np.asarray(y, dtype=np.float64), int(ode.nfev - nfev0), steps

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        """Integrate over ``[t, t + dt]``; impulses are ``int f dt``, a failure is a failed record."""
        system = self.system
        nq, nv = system.nq, system.nv
        contacts = system.contacts(state.q)
        record: dict[str, Any] = dict(t=state.t, phi=contacts.phi.copy(), build_time=0.0, setup_time=0.0,
                                      solver=self.method, residuals=_NO_RESIDUALS,
                                      constraint_error=system.constraints(state.q, state.v, state.t).violation(
                                          state.v))
        start = time.perf_counter()
        t_end = state.t + self.dt
        try:
            if not self._matches(state):
                self._start(state)
            y, evaluations, steps = self._advance(t_end)
            self._check(t_end, y)
            q1, v1 = y[:nq], y[nq:nq + nv]
            if nq != nv:  # unit quaternions: the system's own normalization (integrate with h = 0)
                q1 = system.integrate(q1, np.zeros(nv), 0.0)
            impulse_total = y[nq + nv:]
            impulses = (impulse_total - self._impulse_at_last).reshape(contacts.count, contacts.dim)
        except (ContactoptError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            self._ode, self._last = None, None
            return None, StepRecord(impulses=np.full((contacts.count, contacts.dim), np.nan),
                                    status=Status.NUMERICAL_ERROR, solve_time=time.perf_counter() - start,
                                    iterations=0, message=f"{type(exc).__name__}: {exc}", **record)
        self._impulse_at_last = impulse_total.copy()
        next_state = State(q1, v1, t_end)
        self._last = (t_end, next_state.q, next_state.v)
        return next_state, StepRecord(impulses=impulses, status=Status.OPTIMAL,
                                      solve_time=time.perf_counter() - start, iterations=evaluations,
                                      substeps=steps,
                                      message=f"{self.method}: {steps} steps, {evaluations} evaluations", **record)
