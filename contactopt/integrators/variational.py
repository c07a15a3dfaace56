"""Variational integrator: discrete Euler-Lagrange equations (``formulation="variational"``).

The "Lagrangian Mechanics" notes, "Variational Integrator" and "DEL with Constraints". With the midpoint
discrete Lagrangian (the reference prints ``M((q_n+1 + q_n)/h)``; the midpoint is ``/2``)

    L_d(q0, q1) = h L((q0 + q1) / 2, (q1 - q0) / h),   L(q, v) = 1/2 v^T M(q) v - U(q),

its slot derivatives are, with ``qm`` the midpoint and ``vd = (q1 - q0) / h``,

    D1 L_d = -M(qm) vd + h/2 (dT/dq(qm, vd) - dU/dq(qm)),
    D2 L_d =  M(qm) vd + h/2 (dT/dq(qm, vd) - dU/dq(qm)),      dT/dq_i = 1/2 vd^T dM/dq_i vd.

In momentum form (discrete Legendre transform, ``p_k = D2 L_d(q_k-1, q_k) = M(q_k) v_k``)
one step solves, for ``q_k+1`` and the multipliers ``lambda``,

    p_k + D1 L_d(q_k, q_k+1) + h/2 F + h G(q_k)^T lambda = 0,      c(q_k+1) = 0,

the constraint force acting at the middle knot and the constraint imposed at the end point
("Lagrangian Mechanics" notes), ``F`` the non-conservative forces at the midpoint (discrete
Lagrange-d'Alembert: ``h F^T (q0 + q1)/2``). Velocity rows ``H v = b(t)`` are imposed as
``H(q_k) vd = b(t + h/2)``. Then ``p_k+1 = D2 L_d(q_k, q_k+1) + h/2 F``,
``v_k+1 = M(q_k+1)^{-1} p_k+1``. Each step is solved by Newton's method: first with the
leading-order Jacobian ``[[-M(qm)/h, h G^T], [G(q_k+1), 0]]`` (cheap; the neglected terms are
O(h)), then, if that stalls, with a finite-difference Jacobian; not converging within
``max_iter`` is a failed step (status ``max_iterations``).
The method is symplectic: energy oscillates without secular drift (experiments/energy.py).

**Contact** (the "Lagrangian Mechanics" notes, "Variational Integrator with Contacts"; Dojo, Howell et al. 2022):
on a system with contact candidates each step solves the discrete Lagrange-d'Alembert
equations with the contact impulses through the rows at ``q_k``, Signorini on ``phi(q_k+1)`` and
Coulomb friction, by Newton iterates that are each a time-stepping program
(:mod:`contactopt.integrators.variational_contact`; options ``contact``, the iterate's
formulation: ``anitescu``, ``ccp``, ``lcp``, or ``coulomb``, the exact cone with De Saxce's
complementarity, no hover; ``contact_options``, its options, and ``contact_tol``). The systems: the textbook
manipulator systems and the planar ones of constant mass matrix whose forces depend on ``q``
alone (``point_mass``, ``brick``, ``planar_body``, ``planar_ball``, ``cart``: ``L = 1/2 v^T M v``
and their ``tau`` the discrete Lagrange-d'Alembert force at the midpoint), and MJCF/URDF models
of hinge and slide joints (``qdot = v``): ``L = 1/2 v^T M(q) v - U(q)`` with ``M`` from the model,
``tau(q, 0)`` (gravity, springs, held inputs) and the odd part ``(tau(q, v) - tau(q, -v)) / 2``
(damping, velocity servos) as the midpoint force, the even part being ``-C(q, v) v``, which the
DEL's ``dT/dq`` and momentum carry. Refused before step 0: quaternion states other than
``rigid3d`` bodies (MJCF free and ball joints), joint limits and dry joint friction of MJCF
models, inputs on ``rigid3d``. Restitution is Newton's impact law at the knot ``q_k`` where the
impulse acts, beside Signorini, for the contacts that close within the step
(:mod:`contactopt.integrators.variational_contact`, "Restitution"). ``rigid3d`` bodies take the
Lie-group variational integrator on unit quaternions of :mod:`contactopt.integrators.variational_rigid`,
with the same contact step in the twist of the step. Where the contact candidates change within a
step (MuJoCo's detection, rigid3d box pairs), the step's gaps are linearized at ``q_k`` (the
time-stepping gap), said in its record's message.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, OptionError
from contactopt.integrators.capabilities import refuse_activation_states
from contactopt.integrators.variational_contact import CONTACT_FORMULATIONS, Iterate, contact_step, midpoint_lagrangian
from contactopt.integrators.variational_rigid import rigid_lagrangian, rigid_step, step_twist
from contactopt.model.step import State
from contactopt.programs import Residuals, Status
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System
from contactopt.systems.manipulator import ManipulatorSystem
from contactopt.systems.rigid3d import Rigid3D

FloatArray = NDArray[np.float64]


class VariationalIntegrator:
    """``step(state) -> (next_state, record)`` by the discrete Euler-Lagrange equations."""

    name: ClassVar[str] = "variational"
    description: ClassVar[str] = "variational integrator (midpoint DEL, constraints at the end point, Newton)"
    # tol: relative to max(1, |p|). The step residual has a noise floor of ~1e-12 from the
    # finite-difference dM/dq, so 1e-10 is the tightest tolerance Newton reliably reaches;
    # it is far below the method's O(h^2) error.
    # contact_tol: the contact steps' DEL residual (relative to max(1, |p|)) and penetration [m];
    # the iterates are conic programs, solved to about 1e-9 by an interior-point method.
    # contact: the iterate's formulation; a run that names neither it nor a solver takes the
    # exact cone (coulomb) with nsgs; one that names a solver the first of anitescu, coulomb and
    # lcp that the solver takes (default_iterate): anitescu with clarabel, the exact cone with
    # nsgs or nsn, lcp with lemke; one that names the iterate alone its first solver
    # (ITERATE_SOLVERS).
    #: a run that names no solver leaves the choice here (the scene's is its formulation's)
    picks_own_solver: ClassVar[bool] = True
    defaults: ClassVar[Mapping[str, Any]] = {"tol": 1e-10, "max_iter": 30, "fd_step": 1e-6,
                                             "contact": "anitescu", "contact_options": {}, "contact_tol": 1e-8}

    def __init__(self, system: System, solver: str | None, dt: float, options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        refuse_activation_states(system, 'variational')  # before step 0
        self.manipulator = isinstance(system, ManipulatorSystem)
        self.rigid = isinstance(system, Rigid3D)
        constant = not (self.rigid or self.manipulator) and system.nq == system.nv and _constant_mass_form(system)
        #: MJCF or URDF joints with qdot = v (hinges, slides): M(q) from the model, tau split in v (module doc)
        self.general = not (self.rigid or self.manipulator or constant) and _general_form(system)
        if not (self.rigid or self.manipulator or constant or self.general):
            raise OptionError(f"formulation 'variational' needs a textbook system with M(q), C(q, v), "
                              f"tau_g(q) and qdot = v (or a constant M and forces of q alone, MJCF/URDF hinge "
                              f"and slide joints, or rigid3d); {system.type_name!r} with nq={system.nq}, "
                              f"nv={system.nv} is not one")
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            listed = ", ".join(map(repr, unknown))
            raise OptionError(f"formulation 'variational': unknown option(s) {listed}; "
                              f"known: {', '.join(self.defaults)}")
        self.options = {**self.defaults, **given}
        if "contact" not in given:  # the exact cone, or the first iterate the run's solver takes (class doc)
            self.options["contact"] = default_iterate(system, solver) if solver else "coulomb"
        for key in ("tol", "fd_step", "contact_tol"):
            if not (isinstance(self.options[key], int | float) and self.options[key] > 0):
                raise OptionError(f"formulation 'variational': {key} must be a positive number")
        if not (isinstance(self.options["max_iter"], int) and self.options["max_iter"] >= 1):
            raise OptionError("formulation 'variational': max_iter must be an integer >= 1")
        if self.options["contact"] not in CONTACT_FORMULATIONS:
            raise OptionError(f"formulation 'variational': contact must be one of "
                              f"{', '.join(CONTACT_FORMULATIONS)}, got {self.options['contact']!r}")
        if not isinstance(self.options["contact_options"], Mapping):
            raise OptionError("formulation 'variational': contact_options must be a table of the "
                              f"{self.options['contact']!r} formulation's options")
        from contactopt import formulations

        formulations.get(self.options["contact"]).resolve_options(dict(self.options["contact_options"]))
        self.system: System = system
        self.solver = solver or ITERATE_SOLVERS[self.options["contact"]]
        self.solver_options = dict(solver_options or {})
        self.dt = float(dt)
        probe_q, probe_v = np.linspace(0.3, 0.7, system.nq), np.linspace(-0.5, 0.4, system.nv)
        if self.rigid:
            self.nonconservative = False
            self._M0 = np.zeros((0, 0))
        elif isinstance(system, ManipulatorSystem):
            lagrangian = system.tau_g(probe_q) - system.C(probe_q, probe_v) @ probe_v
            extra = system.dynamics(probe_q, probe_v).tau - lagrangian
            self.nonconservative = bool(np.abs(extra).max() > 0)
            self._M0 = np.zeros((0, 0))
        elif self.general:
            self.nonconservative = True
            self._M0 = np.zeros((0, 0))
        else:  # L = 1/2 v^T M v; every force of tau(q) is the midpoint discrete force
            self.nonconservative = True
            self._M0 = np.asarray(system.dynamics(probe_q, probe_v).M, dtype=np.float64)
        self.lagrangian = rigid_lagrangian(system, self.dt) if isinstance(system, Rigid3D) \
            else midpoint_lagrangian(self._mass, self._midpoint_terms)
        self.formulation_options = self.options
        #: What the last accepted step solved, for its derivative (:mod:`contactopt.derivatives.variational`):
        #: ``"free"`` (``last_x = (q_k+1, lambda)``), ``"rigid"`` (free bodies) or ``"contact"`` (``last_iterate``).
        self.last_kind = ""
        self.last_x = np.zeros(0)
        self.last_iterate: Iterate | None = None

    def _mass(self, q: FloatArray) -> FloatArray:
        system = self.system
        if self.general:
            M = system.dynamics(q, np.zeros(system.nv)).M
            return np.asarray(M.toarray() if hasattr(M, "toarray") else M, dtype=np.float64)
        return system.M(q) if isinstance(system, ManipulatorSystem) else self._M0

    # --- the discrete Lagrangian's slot derivatives --------------------------------------
    def _dT_dq(self, q: FloatArray, v: FloatArray) -> FloatArray:
        system = self.system
        if not (isinstance(system, ManipulatorSystem) or self.general):
            return np.zeros(q.shape[0])  # constant M
        eps = self.options["fd_step"]
        out = np.empty(q.shape[0])
        for i in range(q.shape[0]):
            step = np.zeros_like(q)
            step[i] = eps * max(1.0, abs(q[i]))
            dM = (self._mass(q + step) - self._mass(q - step)) / (2 * step[i])
            out[i] = 0.5 * v @ dM @ v
        return out

    def _midpoint_terms(self, q0: FloatArray, q1: FloatArray, t: float) -> tuple[FloatArray, FloatArray]:
        """``(M(qm) vd, h/2 (dT/dq - dU/dq + F))`` at the midpoint."""
        h = self.dt
        qm, vd = 0.5 * (q0 + q1), (q1 - q0) / h
        system = self.system
        if self.general:  # tau(q, 0): gravity, springs, inputs; its odd part in v: damping (module doc)
            tau0 = system.dynamics(qm, np.zeros_like(vd)).tau
            odd = 0.5 * (system.dynamics(qm, vd).tau - system.dynamics(qm, -vd).tau)
            return self._mass(qm) @ vd, 0.5 * h * (self._dT_dq(qm, vd) + tau0 + odd)
        if not isinstance(system, ManipulatorSystem):  # constant M: every force is tau(q)
            return self._M0 @ vd, 0.5 * h * system.dynamics(qm, vd).tau
        # Non-conservative forces: what tau holds beyond the Lagrangian's tau_g - C v (zero
        # for the textbook systems without inputs, whose tau is exactly that).
        forcing = system.dynamics(qm, vd).tau - (system.tau_g(qm) - system.C(qm, vd) @ vd) \
            if self.nonconservative or system.control is not None else 0.0  # B u of a controller
        return system.M(qm) @ vd, 0.5 * h * (self._dT_dq(qm, vd) + system.tau_g(qm) + forcing)

    def _residual(self, x: FloatArray, q0: FloatArray, p0: FloatArray, t: float) -> FloatArray:
        nq, h = self.system.nq, self.dt
        q1, lam = x[:nq], x[nq:]
        momentum, midpoint = self._midpoint_terms(q0, q1, t)
        constraints_now = self.system.constraints(q0, (q1 - q0) / h, t)
        dynamics = p0 - momentum + midpoint + h * constraints_now.H.T @ lam
        if not lam.shape[0]:
            return dynamics
        end = self.system.constraints(q1, (q1 - q0) / h, t + h)
        velocity_rows = constraints_now.velocity_rows
        mid = self.system.constraints(q0, (q1 - q0) / h, t + 0.5 * h)
        closure = np.where(velocity_rows, mid.H @ ((q1 - q0) / h) - mid.target, end.h)
        return np.concatenate([dynamics, closure])

    def check_state(self, state: State) -> None:
        """Before step 0: what the step cannot carry (inputs on rigid3d, MJCF joint limits and
        dry friction) and an iterate solver that cannot take the contact iterate's program."""
        contacts = self.system.contacts(state.q)
        if self.rigid and self.system.control is not None:
            raise OptionError(f"formulation 'variational' on rigid3d carries no inputs (the Lie-group "
                              f"variational integrator of bodies under gravity and contact); "
                              f"{self.system.describe()} has a controller: use a time-stepping formulation")
        if self.general:
            limits, loss = self.system.limits(state.q).count, self.system.friction_loss(state.q).count
            if limits or loss:
                raise OptionError(f"formulation 'variational' carries no joint limits or dry joint friction; "
                                  f"{self.system.describe()} has {limits} limit row(s) and {loss} friction-loss "
                                  f"row(s): use a time-stepping formulation")
        if contacts.count:
            self._check_iterate_solver()

    def _check_iterate_solver(self) -> None:
        """The run's solver must take the contact iterate's kind of program (one line, before step 0)."""
        from contactopt import formulations, solvers

        contact = self.options["contact"]
        kind = formulations.contact_kind(contact, dict(self.options["contact_options"]), self.system)
        if kind is not None and not solvers.can_take_kind(self.solver, kind.kind, symmetric=kind.symmetric):
            able = [name for name in solvers.available()
                    if solvers.can_take_kind(name, kind.kind, symmetric=kind.symmetric)]
            raise OptionError(f"formulation 'variational': its contact iterates are {contact!r} programs "
                              f"({kind.why}), which solver {self.solver!r} cannot take (solvers that can: "
                              f"{', '.join(able) or 'none installed'})")

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        system, h = self.system, self.dt
        self.last_kind, self.last_iterate = "", None
        if isinstance(system, Rigid3D) and not system.contacts(state.q).count:
            advanced = rigid_step(system, state, h, self.options["tol"], self.options["max_iter"])
            if advanced[0] is not None:
                self.last_kind, self.last_x = "rigid", step_twist(state.q, advanced[0].q, h)
            return advanced
        if system.contacts(state.q).count:
            keep: list[Iterate] = []
            result = contact_step(system, self.lagrangian, state, h, self.options["contact"], self.solver,
                                  self.solver_options, self.options["contact_options"],
                                  self.options["contact_tol"], self.options["max_iter"], keep)
            self.last_kind, self.last_iterate = "contact", (keep[0] if keep else None)
            return result
        q0, v0, t = state.q, state.v, state.t
        p0 = self._mass(q0) @ v0
        bilateral = system.constraints(q0, v0, t)
        x = np.concatenate([q0 + h * v0, np.zeros(bilateral.count)])
        start = time.perf_counter()
        scale = max(1.0, float(np.abs(p0).max()))
        converged, iterations, norm = False, 0, math.inf
        for iterations in range(1, self.options["max_iter"] + 1):
            F = self._residual(x, q0, p0, t)
            norm = float(np.abs(F).max())
            if norm <= self.options["tol"] * scale:
                converged = True
                break
            J = self._approximate_jacobian(x, q0, t) if iterations <= self.options["max_iter"] // 2 \
                else self._jacobian(x, F, q0, p0, t)
            try:
                x = x - np.linalg.lstsq(J, F, rcond=None)[0]
            except np.linalg.LinAlgError:
                break
            if not np.all(np.isfinite(x)):
                break
        elapsed = time.perf_counter() - start
        contacts = system.contacts(q0)
        record: dict[str, Any] = dict(
            t=t, impulses=np.zeros((contacts.count, contacts.dim)), phi=contacts.phi.copy(), build_time=0.0,
            setup_time=0.0, solve_time=elapsed, iterations=iterations,
            residuals=Residuals(primal=norm, dual=0.0, gap=math.nan, complementarity=0.0),
            solver="newton", bilateral=h * x[system.nq :], constraint_error=bilateral.violation(v0))
        if not converged:
            status = Status.MAX_ITERATIONS if np.isfinite(norm) else Status.NUMERICAL_ERROR
            return None, StepRecord(status=status, message=f"Newton stopped at residual {norm:.2e}", **record)
        q1 = x[: system.nq]
        self.last_kind, self.last_x = "free", x
        momentum, midpoint = self._midpoint_terms(q0, q1, t)
        v1 = np.asarray(np.linalg.solve(self._mass(q1), momentum + midpoint), dtype=np.float64)
        return State(q1, v1, t + h), StepRecord(status=Status.OPTIMAL, message=f"Newton converged in "
                                                 f"{iterations} iterations", **record)

    def _approximate_jacobian(self, x: FloatArray, q0: FloatArray, t: float) -> FloatArray:
        """Leading-order Jacobian of the step residual (see module doc)."""
        nq, h = self.system.nq, self.dt
        q1 = x[:nq]
        nh = x.shape[0] - nq
        J = np.zeros((nq + nh, nq + nh))
        J[:nq, :nq] = -self._mass(0.5 * (q0 + q1)) / h
        if nh:
            now = self.system.constraints(q0, (q1 - q0) / h, t)
            end = self.system.constraints(q1, (q1 - q0) / h, t + h)
            J[:nq, nq:] = h * now.H.T
            J[nq:, :nq] = np.where(now.velocity_rows[:, None], now.H / h, end.H)
        return J

    def _jacobian(self, x: FloatArray, F: FloatArray, q0: FloatArray, p0: FloatArray, t: float) -> FloatArray:
        J = np.empty((F.shape[0], x.shape[0]))
        for j in range(x.shape[0]):
            step = np.zeros_like(x)
            step[j] = 1e-7 * max(1.0, abs(x[j]))
            forward, backward = self._residual(x + step, q0, p0, t), self._residual(x - step, q0, p0, t)
            J[:, j] = (forward - backward) / (2 * step[j])
        return J


#: The solver of a run that names an iterate but no solver.
ITERATE_SOLVERS: Mapping[str, str] = {"anitescu": "clarabel", "ccp": "clarabel", "lcp": "lemke", "coulomb": "nsgs"}


def default_iterate(system: System, solver: str) -> str:
    """The contact iterate of a run that names none: ``anitescu`` (a QP) where ``solver`` takes
    it, else ``coulomb`` (the exact cone: ``nsgs``, ``nsn``), else ``lcp`` (``lemke``, ``pgs``),
    else ``anitescu`` (refused before step 0 with the solvers that can)."""
    from contactopt import formulations, solvers

    for name in ("anitescu", "coulomb", "lcp"):
        kind = formulations.contact_kind(name, {}, system)
        try:
            if kind is not None and solvers.can_take_kind(solver, kind.kind, symmetric=kind.symmetric):
                return name
        except ContactoptError:  # an unknown solver: its own refusal says so
            return "anitescu"
    return "anitescu"


def _general_form(system: System) -> bool:
    """Whether ``system`` is an MJCF or URDF model whose joints all have ``qdot = v`` (hinges and
    slides, no free or ball joint): ``L = 1/2 v^T M(q) v - U(q)`` with ``M`` from the model."""
    if system.type_name not in ("mjcf", "urdf") or system.nq != system.nv:
        return False
    q, v = np.linspace(0.3, 0.7, system.nq), np.linspace(-0.5, 0.4, system.nv)
    try:
        moved = system.integrate(q, v, 0.1)
    except ContactoptError:
        return False
    return bool(np.allclose(moved, q + 0.1 * v, rtol=0, atol=1e-14))


def _constant_mass_form(system: System) -> bool:
    """Whether ``system`` is a Lagrangian system of constant ``M`` whose forces depend on ``q``
    alone and with ``qdot = v`` (probed at two states): ``L = 1/2 v^T M v`` with ``tau(q)``
    as the discrete Lagrange-d'Alembert force."""
    if system.nq != system.nv:
        return False
    qa, qb = np.linspace(0.3, 0.7, system.nq), np.linspace(-0.2, 0.5, system.nq)
    va, vb = np.linspace(-0.5, 0.4, system.nv), np.linspace(0.6, -0.3, system.nv)
    try:
        a, b = system.dynamics(qa, va), system.dynamics(qb, vb)
        slow = system.dynamics(qa, vb)
        moved = system.integrate(qa, va, 0.1)
    except ContactoptError:
        return False
    Ma, Mb = np.asarray(a.M.toarray() if hasattr(a.M, "toarray") else a.M), \
        np.asarray(b.M.toarray() if hasattr(b.M, "toarray") else b.M)
    return bool(np.array_equal(Ma, Mb) and np.array_equal(a.tau, slow.tau)
                and np.allclose(moved, qa + 0.1 * va, rtol=0, atol=1e-14))


def refusal(system: System, q0: FloatArray, v0: FloatArray, dt: float,
            options: Mapping[str, Any] | None = None) -> str | None:
    """Why ``formulation="variational"`` refuses a run of ``system`` from ``(q0, v0)`` with the
    scene's ``options`` before step 0 (the system's kind, unknown options, what it does not carry), or None
    when it takes it (``compare`` adds it to its default formulations on such a scene)."""
    try:
        VariationalIntegrator(system, "clarabel", dt, options).check_state(State(np.asarray(q0, dtype=np.float64),
                                                                                np.asarray(v0, dtype=np.float64), 0.0))
    except ContactoptError as exc:
        return str(exc)
    return None
