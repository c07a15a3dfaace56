"""One step of the variational integrator with contact: Newton on the discrete Lagrange-d'Alembert
equations, each iterate an explicit convex program (``formulation="variational"`` on a scene
with contact candidates).

The "Lagrangian Mechanics" notes, "Variational Integrator with Contacts": the contact impulses join the discrete
Euler-Lagrange equations as a force to be solved for, ``D2 L_d(q_k-1, q_k) + D1 L_d(q_k, q_k+1)
+ h F = 0``. As the notes' "DEL with Constraints" puts a constraint's force at the middle knot
``q_k`` (``h lambda Dc(q_k)``) and the constraint at the end point (``c(q_k+1) = 0``), the contact
impulse acts through the rows ``J(q_k)`` and Signorini holds at ``q_k+1`` (the variational form of
a unilateral constraint; Dojo, Howell et al. 2022, also imposes the gap at the step's end
configuration). With ``p_k = D2 L_d(q_k-1, q_k)`` (the discrete Legendre transform,
:mod:`.variational`), the unknowns ``q_k+1``, the bilateral impulses ``Lambda`` and the contact
impulses ``P`` solve

    R(q_k+1) + H(q_k)^T Lambda + J(q_k)^T P = 0,
    R = p_k + D1 L_d(q_k, q_k+1) + h/2 F,
    c(q_k+1) = 0,
    Signorini   0 <= phi(q_k+1)  _|_  P_n >= 0,
    Coulomb     P in the friction cone, maximum dissipation on the tangential velocity
                J_t(q_k) vd,   vd = (q_k+1 - q_k) / h (the step's twist on rigid3d),

and ``p_k+1 = D2 L_d(q_k, q_k+1) + h/2 F`` (the contact impulse is wholly in the left
discrete force: with Signorini alone an impact removes the approach velocity and puts none
back, a plastic impact; restitution below). While the set of active contacts stays the same,
the step is the constrained variational integrator (SHAKE's form), whose energy oscillates
without drift: a rocking block (half extents 0.05 x 0.5 m, h = 2e-3) keeps its energy between
impacts to 3e-7 to 7e-7 J, where the rows at ``q_k+1`` (this module's first form) moved it by
1e-4 J, 0.5 to 1 % of the swing's, in every swing.

**Each Newton iterate is a time-stepping program.** With the guess ``vbar``, ``R`` is
linearized with its leading-order Jacobian ``dR/dvd = -M(qm)`` (the neglected terms are O(h), as
the bilateral-only Newton of :mod:`.variational`), ``phi`` and ``c`` at ``qbar = advance(q_k, vbar)``
to first order:

    M(qm) vd = M(qm) vbar + R(qbar) + H(q_k)^T Lambda + J(q_k)^T P,
    phi(qbar) + h J_n(q_k) (vd - vbar) >= 0,        c(qbar) + h H(q_k) (vd - vbar) = 0.

That is exactly a time-stepping step problem with mass ``M(qm)``, free velocity
``v_free = vbar + M(qm)^{-1} R(qbar)``, rows ``J(q_k)``, contact gaps ``phi(qbar) - h J_n vbar``
and bilateral target ``H(q_k) vbar - c(qbar) / h``; the formulation named by the option ``contact``
(``anitescu``: Anitescu's convex relaxation of the cone, a QP, the default where the run's solver
takes QPs, else ``coulomb`` and then ``lcp``: :func:`~.variational.default_iterate`; ``ccp``: the Lorentz cone,
an SOCP; ``lcp``; ``coulomb``: the exact cone with De Saxce's complementarity, FCLIB's problem,
solved by ``nsgs``/``nsn``) builds its program, any solver of ``contactopt.solvers.solve`` that
takes it solves it, and contactopt's residuals judge it. The iterate's ``vd`` is the next guess.
At a fixed point (``vd = vbar``) the gap is ``phi(q_k+1)`` exactly and the DEL residual is the
program's, so the step is accepted when the true DEL residual is below ``contact_tol``
(relative to ``max(1, |p|)``) and ``phi(q_k+1) >= -contact_tol``. The relaxations keep their
character inside the DEL (Anitescu's and the CCP's sliding contact hovers by about
``h mu |v_t|``; ``lcp`` with ``k = 2`` in the plane, or along a tangent of its cone, and
``coulomb`` are exact Coulomb).

**Restitution** (Newton's impact law, Tedrake 2022, "Impulsive Collisions": after the
collision ``phidot+ = -e phidot-``). The impulse acts at the knot ``q_k``, so the velocity just
before it is the knot's, ``v_k = M(q_k)^{-1} p_k`` (the discrete Legendre transform), and just
after it ``v_k^+ = M(q_k)^{-1} (p_k + J^T P + H^T Lambda) = M(q_k)^{-1} (-D1 L_d(q_k, q_k+1) -
h/2 F)`` (the step's own equation; :func:`knot_velocity`). A contact that closes within the
step, with restitution ``e > 0``, approaching (``u^- = J_n(q_k) v_k < 0``) and whose gap the
contact-free step would close (``phi(q_k+1) < 0`` predicted by the first iterate without
contact: :func:`closing_contacts`, decided once at the step's start), obeys Newton's law at the
knot besides Signorini:

    J_n v_k^+ >= -e u^-,    phi(q_k+1) >= 0,    P_n >= 0 complementary to the larger bound,

so ``J_n vd`` is at least the larger of the two bounds. In flight this is the impact law
(the bounce starts from the knot before the surface, at most one step's travel ``h |u^-|``
from it: the position error of the first order); at rest ``v_k`` is the discrete rest
momentum ``-h/2 g``, ``-e u^-`` asks less than Signorini, and no contact micro-bounces. The
energy of the knots then changes by ``-(1 - e^2)`` of the normal kinetic energy at the knot to
first order in ``h`` (for a ball: ``v_k+1 = e|u^-| - g h``, ``z_k+1 = z_k + h (e|u^-| - g h/2)``,
the ``g h`` terms cancel in ``E``); a pendulum swinging into a wall keeps ``e^2`` of its energy
at each impact and nothing else between them (tests/test_variational_restitution.py). In the
iterate, linearized as ``R`` is (``M(q_k)^{-1} A = I + O(h)``), the law's bound is
``J_n vd >= J_n vbar - e u^- - J_n v_k^+(vbar)`` (:func:`newton_bounds`), at a fixed point exactly
``J_n v_k^+ >= -e u^-``; the program takes the larger bound as its gap (``gaps = min(gap,
-h bound)``), and the step is accepted when Newton's law holds to ``contact_tol`` as Signorini
does. A contact that closes only through another contact's impulse within the same step is
plastic (it was not predicted to close).

**Candidates that change within a step.** The gap at ``q_k+1`` needs the candidates of ``q_k``
there. Where the system's detection gives another set at the guess (MuJoCo's contacts, rigid3d
box pairs), the iterate's gaps are the time-stepping ones, ``phi(q_k) + h J_n(q_k) vd >= 0``, and
the step says so in its record's message.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt import formulations, solvers
from contactopt.core.errors import ContactoptError
from contactopt.model.rows import Bilateral
from contactopt.model.step import Contacts, Dynamics, State, StepProblem
from contactopt.programs import Residuals, Status
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["CONTACT_FORMULATIONS", "Iterate", "Lagrangian", "closing_contacts", "contact_step", "iterate_problem",
           "knot_velocity", "midpoint_lagrangian", "newton_bounds"]

#: The time-stepping formulations whose program an iterate may be (each a ConicProgram or an LCP).
CONTACT_FORMULATIONS = ("anitescu", "ccp", "lcp", "coulomb")


@dataclasses.dataclass(frozen=True)
class Lagrangian:
    """What a step needs of the discrete Lagrangian: ``M(q)``, the end-point map
    ``q_k+1 = advance(q_k, vd, h)``, ``terms(q_k, q_k+1, t) = (-D1 L_d - h/2 F, D2 L_d + h/2 F)``
    (so that ``R = p_k - terms[0]`` and ``p_k+1 = terms[1]``), the iterate's symmetric mass
    ``iterate_mass(q_k, vbar, h)`` (the leading order of ``-dR/dvd``) and ``velocity(q, p)``,
    the velocity of a momentum (``M(q)^{-1} p``)."""

    mass: Callable[[FloatArray], FloatArray]
    terms: Callable[[FloatArray, FloatArray, float], tuple[FloatArray, FloatArray]]
    iterate_mass: Callable[[FloatArray, FloatArray, float], FloatArray]
    advance: Callable[[FloatArray, FloatArray, float], FloatArray] = lambda q, vd, h: q + h * vd
    velocity: Callable[[FloatArray, FloatArray], FloatArray] | None = None

    def momentum(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``p = M(q) v``."""
        return np.asarray(self.mass(q) @ v, dtype=np.float64)

    def end_velocity(self, q: FloatArray, p: FloatArray) -> FloatArray:
        """``M(q)^{-1} p``."""
        if self.velocity is not None:
            return self.velocity(q, p)
        return np.asarray(np.linalg.solve(self.mass(q), p), dtype=np.float64)


def midpoint_lagrangian(mass: Callable[[FloatArray], FloatArray],
                        midpoint_terms: Callable[[FloatArray, FloatArray, float], tuple[FloatArray, FloatArray]]
                        ) -> Lagrangian:
    """The midpoint discrete Lagrangian of :mod:`.variational` from ``M(q)`` and
    ``midpoint_terms(q0, q1, t) = (M(qm) vd, h/2 (dT/dq - dU/dq + F))``."""

    def terms(q0: FloatArray, q1: FloatArray, t: float) -> tuple[FloatArray, FloatArray]:
        momentum, midpoint = midpoint_terms(q0, q1, t)
        return momentum - midpoint, momentum + midpoint

    return Lagrangian(mass=mass, terms=terms, iterate_mass=lambda q0, vbar, h: mass(q0 + 0.5 * h * vbar))


def _residual(lag: Lagrangian, q0: FloatArray, p0: FloatArray, vd: FloatArray, h: float,
              t: float) -> FloatArray:
    """``R = p_k + D1 L_d(q_k, q_k+1) + h/2 F`` with ``q_k+1 = advance(q_k, vd, h)`` (module doc)."""
    return p0 - lag.terms(q0, lag.advance(q0, vd, h), t)[0]


@dataclasses.dataclass(frozen=True)
class Iterate:
    """The last Newton iterate of an accepted contact step: its guess ``vbar``, the accepted
    ``vd`` (``q_k+1 = advance(q_k, vd, h)``), the problem built at ``vbar``, the program and its
    solution (what the step's derivative differentiates), whether its gaps are linearized and
    the contacts under Newton's impact law (module doc, "Restitution"; None: none)."""

    vbar: FloatArray
    vd: FloatArray
    problem: StepProblem
    program: Any
    solution: Any
    linearized: bool = False
    impacts: NDArray[np.bool_] | None = None


def knot_velocity(lag: Lagrangian, q0: FloatArray, vd: FloatArray, h: float, t: float) -> FloatArray:
    """The velocity just after the step's impulse at the knot ``q_k``, ``v_k^+ = M(q_k)^{-1}
    (p_k + J^T P + H^T Lambda)``; at a solution of the step ``p_k + J^T P + H^T Lambda =
    -D1 L_d - h/2 F`` (module doc), so it is ``M(q_k)^{-1} (-D1 L_d(q_k, q_k+1) - h/2 F)``."""
    return lag.end_velocity(q0, lag.terms(q0, lag.advance(q0, vd, h), t)[0])


def newton_bounds(lag: Lagrangian, q0: FloatArray, p0: FloatArray, vbar: FloatArray, h: float, t: float,
                  start: Contacts, impacts: NDArray[np.bool_]) -> FloatArray:
    """Per contact the least normal twist ``J_n vd`` that Newton's impact law asks of the
    iterate at the guess ``vbar`` (module doc, "Restitution"), NaN for the contacts not in
    ``impacts``: ``J_n vbar + (-e u^- - J_n v_k^+(vbar))``, with ``u^- = J_n v_k``."""
    normal = start.J[:: start.dim]
    before = normal @ lag.end_velocity(q0, p0)
    after = normal @ knot_velocity(lag, q0, vbar, h, t)
    least = normal @ vbar - start.restitution * before - after
    return np.where(impacts, least, np.nan)


def iterate_problem(system: System, lag: Lagrangian, q0: FloatArray, p0: FloatArray, vbar: FloatArray,
                     h: float, t: float, now: Bilateral, start: Contacts | None = None,
                     impacts: NDArray[np.bool_] | None = None) -> tuple[StepProblem, bool]:
    """The time-stepping problem of one Newton iterate at the guess ``vbar`` (module doc), and
    whether its gaps are linearized at ``q_k`` (the candidates at the guess are not those at
    ``q_k``: module doc); ``start``: the contacts at ``q_k`` (computed when None); ``impacts``:
    the contacts that obey Newton's impact law in this step besides Signorini (module doc,
    "Restitution"; None: none)."""
    qbar = lag.advance(q0, vbar, h)
    A = lag.iterate_mass(q0, vbar, h)
    R = _residual(lag, q0, p0, vbar, h, t)
    contacts = system.contacts(qbar)
    start = system.contacts(q0) if start is None else start
    rows, dim = start.J, start.dim  # the force acts at the knot q_k
    normal = rows[::dim] if start.count else np.zeros((0, system.nv))
    linearized = start.count != contacts.count
    gaps = start.phi if linearized else contacts.phi - h * normal @ vbar  # phi(q_k+1) ~ phi(q_k) + h J_n vd
    if impacts is not None and np.any(impacts):  # gaps + h J_n vd >= 0 is J_n vd >= -gaps / h: the larger bound
        least = newton_bounds(lag, q0, p0, vbar, h, t, start, impacts)
        gaps = np.where(impacts, np.minimum(gaps, -h * np.nan_to_num(least, nan=0.0)), gaps)
    linear = Contacts(phi=gaps, J=rows, mu=start.mu, restitution=np.zeros(start.count), dim=dim)
    bilateral = now
    target = np.zeros(0)
    if now.count:
        end = system.constraints(qbar, vbar, t + h)
        mid = system.constraints(q0, vbar, t + 0.5 * h)
        target = np.where(now.velocity_rows, mid.target, now.H @ vbar - end.h / h)
        bilateral = Bilateral(h=end.h, H=np.where(now.velocity_rows[:, None], mid.H, now.H), Hdot_v=now.Hdot_v,
                              target=target, velocity_rows=now.velocity_rows)
    return StepProblem(state=State(q0, vbar, t), dt=h, dynamics=Dynamics(M=A, tau=R / h), contacts=linear,
                       bilateral=bilateral, bilateral_target=target), linearized


def closing_contacts(system: System, lag: Lagrangian, q0: FloatArray, p0: FloatArray, v0: FloatArray, h: float,
                     t: float, now: Bilateral, start: Contacts) -> NDArray[np.bool_] | None:
    """The contacts that obey Newton's impact law in the step from ``q_k`` (module doc,
    "Restitution"): restitution above 0, approaching (``J_n v_k < 0``) and closing within the
    step, ``phi(q_k+1) < 0`` predicted by the contact-free first iterate (``vd = v_k + A^{-1}
    R(v_k)``, its gap linearized at the guess); None when no contact has restitution."""
    if not start.count or not np.any(start.restitution > 0):
        return None
    problem, _ = iterate_problem(system, lag, q0, p0, v0, h, t, now, start)
    free = v0 + np.linalg.solve(np.asarray(problem.dynamics.M, dtype=np.float64), h * problem.dynamics.tau)
    normal = start.J[:: start.dim]
    closing = problem.contacts.phi + h * normal @ free < 0
    return np.asarray((start.restitution > 0) & (normal @ v0 < 0) & closing, dtype=np.bool_)


def contact_step(system: System, lag: Lagrangian, state: State, h: float, contact: str, solver: str,
                 solver_options: Mapping[str, Any], contact_options: Mapping[str, Any], tol: float,
                 max_iter: int, keep: list[Iterate] | None = None) -> tuple[State | None, StepRecord]:
    """One step with contact (module doc): the next state, or None and a failed record; an
    accepted step's last iterate is appended to ``keep`` when given."""
    q0, v0, t = state.q, state.v, state.t
    formulation = formulations.get(contact)
    options = formulation.resolve_options(dict(contact_options))
    p0 = lag.momentum(q0, v0)
    now = system.constraints(q0, v0, t)
    scale = max(1.0, float(np.abs(p0).max()))
    vbar = np.array(v0, dtype=np.float64)
    start = time.perf_counter()
    setup = solve_time = 0.0
    iterations, norm, gap_error = 0, math.inf, math.inf
    contacts0 = system.contacts(q0)
    impulses = np.zeros((contacts0.count, contacts0.dim))
    bilateral = np.zeros(now.count)
    residuals = Residuals(math.inf, math.inf, math.inf, math.inf)
    solver_name = solver
    message = ""
    converged = linearized = False
    impacts = closing_contacts(system, lag, q0, p0, v0, h, t, now, contacts0)
    for iterations in range(1, max_iter + 1):
        problem, linearized = iterate_problem(system, lag, q0, p0, vbar, h, t, now, contacts0, impacts)
        program = formulation.build(problem, options)
        try:
            solution = solvers.solve(program, solver, solver_options)
        except ContactoptError as exc:
            message = f"iterate {iterations}: {exc}"
            break
        solution = formulation.choose_solution(program, solution, options, solvers.solve)
        setup += solution.setup_time
        solve_time += solution.solve_time
        residuals, solver_name = solution.residuals, solution.solver
        if not solution.status.usable:
            message = f"iterate {iterations}: the {contact} program's solve is {solution.status.value}"
            break
        result = formulation.recover(problem, program, solution)
        vd = np.asarray(result.v_next, dtype=np.float64)
        impulses = np.asarray(result.impulses, dtype=np.float64)
        bilateral = np.asarray(result.bilateral, dtype=np.float64) if now.count else np.zeros(0)
        # the step's own conditions at the new iterate, with J at the new q_k+1
        q1 = lag.advance(q0, vd, h)
        end = system.contacts(q1)
        dynamics = _residual(lag, q0, p0, vd, h, t) + contacts0.J.T @ impulses.reshape(-1)
        if now.count:
            dynamics = dynamics + problem.bilateral.H.T @ bilateral
        norm = float(np.abs(dynamics).max())
        linearized = linearized or end.count != contacts0.count
        gaps = contacts0.phi + h * (contacts0.J[::contacts0.dim] @ vd) if linearized else end.phi
        gap_error = float(max(0.0, -gaps.min())) if gaps.shape[0] else 0.0
        if impacts is not None:  # Newton's law at the knot, exactly (module doc, "Restitution")
            least = newton_bounds(lag, q0, p0, vd, h, t, contacts0, impacts)
            shortfall = least - contacts0.J[:: contacts0.dim] @ vd
            gap_error = max(gap_error, float(np.nanmax(shortfall, initial=0.0)))
        closure = 0.0
        if now.count:
            closing = system.constraints(q1, vd, t + h)
            mid = system.constraints(q0, vd, t + 0.5 * h)
            closure = float(np.abs(np.where(now.velocity_rows, mid.H @ vd - mid.target, closing.h)).max())
        guess, vbar = vbar, vd
        if norm <= tol * scale and gap_error <= tol and closure <= tol:
            converged = True
            if keep is not None:
                keep.append(Iterate(guess, vd, problem, program, solution, linearized, impacts))
            break
    elapsed = time.perf_counter() - start
    record: dict[str, Any] = dict(
        t=t, impulses=impulses if converged else np.full_like(impulses, np.nan), phi=contacts0.phi.copy(),
        build_time=elapsed - setup - solve_time, setup_time=setup, solve_time=solve_time, iterations=iterations,
        residuals=Residuals(primal=max(norm, residuals.primal), dual=residuals.dual, gap=residuals.gap,
                            complementarity=residuals.complementarity),
        solver=solver_name, bilateral=bilateral, constraint_error=now.violation(v0),
        candidates=contacts0.count)
    if not converged:
        status = Status.MAX_ITERATIONS if np.isfinite(norm) and not message else Status.NUMERICAL_ERROR
        text = message or (f"Newton with {contact} iterates stopped at DEL residual {norm:.2e}, "
                           f"penetration {gap_error:.2e}")
        return None, StepRecord(status=status, message=text, **record)
    q1 = lag.advance(q0, vbar, h)
    v1 = lag.end_velocity(q1, lag.terms(q0, q1, t)[1])
    where = "; gaps linearized at q_k (the candidates changed within the step)" if linearized else ""
    return State(q1, v1, t + h), StepRecord(status=Status.OPTIMAL, message=(
        f"Newton converged in {iterations} {contact} iterates (DEL residual {norm:.1e}){where}"), **record)
