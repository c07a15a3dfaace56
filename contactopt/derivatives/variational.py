"""Derivative of one step of the variational integrator, ``d(q_k+1, v_k+1) / d(q_k, v_k, theta)``
(issue 38; the integrator is :mod:`contactopt.integrators.variational`).

A step solves ``G(x; p) = 0`` for its unknown ``x`` given the inputs ``p = (q_k, v_k, theta)``
and maps the answer to the next state, ``(q_k+1, v_k+1) = Y(x, p)``. The implicit function
theorem gives ``dx = -G_x^{-1} G_p dp`` and ``d(q_k+1, v_k+1) = Y_x dx + Y_p dp`` (the same
theorem Dojo, Howell et al. 2022, applies to its step). The unknown and ``G``:

* contact-free textbook step: ``x = (q_k+1, lambda)``, ``G`` the discrete Euler-Lagrange
  residual with the constraint rows (:meth:`VariationalIntegrator._residual`);
* ``rigid3d`` free bodies: ``x = vd``, the step's world twist, ``G = p_k - (-D1 L_d - h/2 F)``
  (:func:`~contactopt.integrators.variational_rigid.rigid_lagrangian`);
* a contact step: ``x = vd`` and ``G = vd - Phi(vd; p)``, ``Phi`` the Newton iterate's map (the
  time-stepping program built at the guess ``vd``, solved, recovered:
  :mod:`contactopt.integrators.variational_contact`), whose fixed point is the step. ``Phi``'s
  solve is differentiated exactly by the program's own implicit function theorem
  (:func:`~contactopt.derivatives.program_derivative`); points that lose strict
  complementarity give the ``active`` one-sided derivative and count in :attr:`degenerate`.
  The contacts under Newton's impact law (the step's restitution, decided at its start) stay
  the same set at the moved inputs; their bound moves with ``(q_k, v_k)`` through ``Phi``.

The smooth maps (``G`` of the contact-free steps, ``Y``, and ``Phi``'s build and recover) are
differentiated by central differences of relative step :data:`VARIATIONAL_STEP` = 1e-5
(Nocedal & Wright, *Numerical Optimization*, 2nd ed., section 8.1: error ``O(t^2)`` plus
round-off over ``t``). It is ten times the time-stepping derivative's (:mod:`.step`) because the
textbook systems' discrete Lagrangian holds ``dM/dq`` by central differences of step 1e-6
(:meth:`VariationalIntegrator._dT_dq`), whose round-off, ``1e-16 |M| / 1e-6`` times
``h/2 |vd|^2``, is ``~1e-12`` in ``v_k+1``: over ``2t = 2e-6`` that was a 7e-7 error of the
Jacobian (measured on the double pendulum), over ``2e-5`` it is below 1e-7, while the
truncation ``t^2`` stays 1e-10. A difference that
changes the program's structure raises :class:`NotDifferentiableError`. Inputs ``u`` are not
differentiated (refused in one line).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt import formulations
from contactopt.core.errors import OptionError, ShapeError
from contactopt.derivatives.conic import NondifferentiableWarning, NotDifferentiableError, _vector
from contactopt.derivatives.differences import solution_tangent
from contactopt.derivatives.program import program_derivative
from contactopt.derivatives.step import (
    StepCotangent,
    StepTangent,
    _check_parameters,
    _require_same_structure,
)
from contactopt.integrators.variational import VariationalIntegrator
from contactopt.integrators.variational_contact import iterate_problem
from contactopt.model.step import State
from contactopt.programs import Solution, Status
from contactopt.programs.convexity import vouched
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["VARIATIONAL_STEP", "VariationalStepDerivative"]

#: Relative central-difference step of the smooth maps (module docstring).
VARIATIONAL_STEP = 1e-5


@dataclasses.dataclass(frozen=True)
class _Point:
    q: FloatArray
    v: FloatArray
    params: tuple[float, ...]


class VariationalStepDerivative:
    """The derivative of the step ``stepper`` just took from ``state`` (module docstring); the
    interface of :class:`~contactopt.derivatives.StepDerivative` (``jvp``, ``jacobian``,
    ``vjp``, ``one_sided_points``, ``inaccurate``)."""

    def __init__(self, stepper: VariationalIntegrator, state: State, control: ArrayLike | None,
                 parameters: Sequence[str] = ()) -> None:
        if control is not None and np.size(control):
            raise OptionError("derivatives: the variational integrator's steps are not differentiated "
                              "by an input u (differentiate by q0, v0, dt or the system's parameters)")
        if stepper.last_kind not in ("free", "rigid", "contact") or (
                stepper.last_kind == "contact" and stepper.last_iterate is None):
            raise NotDifferentiableError("derivatives: the variational step holds no accepted step to differentiate")
        self.stepper, self.state = stepper, state
        self.system: System = stepper.system
        self.parameters = tuple(parameters)
        _check_parameters(self.system, self.parameters)
        values = [self.system.parameter_values([n])[n] if n != "dt" else stepper.dt for n in self.parameters]
        self.point = _Point(np.array(state.q, dtype=np.float64), np.array(state.v, dtype=np.float64),
                            tuple(float(x) for x in values))
        self.kind = stepper.last_kind
        self.inaccurate = False
        self.degenerate = 0
        self.one_sided: list[str] = []
        self._steppers: dict[tuple[float, ...], VariationalIntegrator] = {self.point.params: stepper}
        if self.kind == "contact":
            iterate = stepper.last_iterate
            assert iterate is not None
            self.x = np.array(iterate.vd, dtype=np.float64)
            self.iterate = iterate
            self.inaccurate = iterate.solution.status is Status.INACCURATE
            judged = dataclasses.replace(iterate.solution, status=Status.OPTIMAL) if self.inaccurate \
                else iterate.solution
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", NondifferentiableWarning)
                self.program_derivative = program_derivative(iterate.program, judged)
            self.degenerate = len(self.program_derivative.degenerate)
            for warning in caught:
                if not issubclass(warning.category, NondifferentiableWarning):
                    warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        else:
            self.x = np.array(stepper.last_x, dtype=np.float64)
        self._jacobian: dict[str, FloatArray] | None = None

    @property
    def one_sided_points(self) -> int:
        """The iterate program's points that lost strict complementarity (0: differentiable)."""
        return self.degenerate

    # -- the step's maps at moved inputs ----------------------------------------------------
    def _stepper_at(self, point: _Point) -> tuple[VariationalIntegrator, float]:
        """The integrator of the moved parameters and the step's start time (moving dt moves it)."""
        key = point.params
        if key not in self._steppers:
            values = {name: value for name, value, base in zip(self.parameters, point.params, self.point.params,
                                                               strict=True) if value != base}
            dt = values.pop("dt", self.stepper.dt)
            system = self.system.with_parameters(values) if values else self.system
            base = self.stepper
            self._steppers[key] = VariationalIntegrator(system, base.solver, dt, base.options, base.solver_options)
        moved = self._steppers[key]
        return moved, self.state.t * (moved.dt / self.stepper.dt)

    def _residual(self, x: FloatArray, point: _Point) -> FloatArray:
        """``G(x; p)`` of a contact-free step."""
        integrator, t = self._stepper_at(point)
        if self.kind == "free":
            p0 = integrator._mass(point.q) @ point.v
            return np.asarray(integrator._residual(x, point.q, p0, t), dtype=np.float64)
        lag, h = integrator.lagrangian, integrator.dt
        return lag.momentum(point.q, point.v) - lag.terms(point.q, lag.advance(point.q, x, h), t)[0]

    def _output(self, x: FloatArray, point: _Point) -> FloatArray:
        """``Y(x; p) = (q_k+1, v_k+1)``."""
        integrator, t = self._stepper_at(point)
        if self.kind == "free":
            q1 = x[: self.system.nq]
            momentum, midpoint = integrator._midpoint_terms(point.q, q1, t)
            v1 = np.linalg.solve(integrator._mass(q1), momentum + midpoint)
        else:
            lag = integrator.lagrangian
            q1 = lag.advance(point.q, x, integrator.dt)
            v1 = lag.end_velocity(q1, lag.terms(point.q, q1, t)[1])
        return np.concatenate([q1, v1])

    def _iterate_at(self, x: FloatArray, point: _Point) -> tuple[Any, Any, Any]:
        """``(formulation, problem, program)`` of the contact iterate at the guess ``x``."""
        integrator, t = self._stepper_at(point)
        formulation = formulations.get(integrator.options["contact"])
        options = formulation.resolve_options(dict(integrator.options["contact_options"]))
        lag, system = integrator.lagrangian, integrator.system
        now = system.constraints(point.q, point.v, t)
        problem, linearized = iterate_problem(system, lag, point.q, lag.momentum(point.q, point.v), x, integrator.dt,
                                              t, now, impacts=self.iterate.impacts)  # the step's impacting set
        if linearized != self.iterate.linearized:
            raise NotDifferentiableError("derivatives: the contact candidates change within the difference step "
                                         "of the variational step (its gaps switch between q_k+1 and q_k)")
        with vouched():
            program = formulation.build(problem, options)
        _require_same_structure(self.iterate.program, program, "the step's inputs")
        return formulation, problem, program

    def _phi_tangent(self, dx: FloatArray, point_direction: _Point) -> FloatArray:
        """``dPhi`` along ``(dx, dp)``: central differences of build and recover, the solve by
        the program derivative."""
        t = self._step(self.x, dx, point_direction)
        sides = []
        for sign in (1.0, -1.0):
            point = self._moved(point_direction, sign * t)
            sides.append(self._iterate_at(self.x + sign * t * dx, point))
        weights = [0.5 / t, -0.5 / t]
        tangent = self._solution_tangent([side[2] for side in sides], weights)
        solution: Solution = self.iterate.solution
        total = np.zeros(self.x.shape[0])
        for sign, weight, (formulation, problem, program) in zip((1.0, -1.0), weights, sides, strict=True):
            moved = dataclasses.replace(solution, **{key: getattr(solution, key) + sign * t * value
                                                     for key, value in tangent.items()})
            total += weight * np.asarray(formulation.recover(problem, program, moved).v_next, dtype=np.float64)
        return total

    def _solution_tangent(self, programs: Sequence[Any], weights: Sequence[float]) -> dict[str, FloatArray]:
        """The solution's tangent for the programs' data difference (as :class:`StepDerivative`)."""
        return solution_tangent(self.program_derivative, programs, weights)

    # -- the implicit function theorem ------------------------------------------------------
    def _moved(self, direction: _Point, t: float) -> _Point:
        base = self.point
        return _Point(base.q + t * direction.q, base.v + t * direction.v,
                      tuple(np.asarray(base.params) + t * np.asarray(direction.params)))

    def _step(self, x: FloatArray, dx: FloatArray, direction: _Point) -> float:
        """The difference step: ``VARIATIONAL_STEP`` of each moved block's size (a unit floor for
        the state and the unknown, each parameter's own size), the smallest of them."""
        steps = []
        for values, change in ((x, dx), (self.point.q, direction.q), (self.point.v, direction.v)):
            if np.any(change):
                steps.append(VARIATIONAL_STEP * max(float(np.abs(values).max(initial=0.0)), 1.0)
                             / float(np.abs(change).max()))
        params, change = np.asarray(self.point.params), np.asarray(direction.params)
        for value, delta in zip(params, change, strict=True):
            if delta:
                steps.append(VARIATIONAL_STEP * (abs(float(value)) or 1.0) / abs(float(delta)))
        return min(steps) if steps else VARIATIONAL_STEP

    def _difference(self, f: Callable[[FloatArray, _Point], FloatArray], dx: FloatArray,
                    direction: _Point) -> FloatArray:
        t = self._step(self.x, dx, direction)
        forward = f(self.x + t * dx, self._moved(direction, t))
        return np.asarray((forward - f(self.x - t * dx, self._moved(direction, -t))) / (2 * t), dtype=np.float64)

    def _zero(self) -> _Point:
        return _Point(np.zeros_like(self.point.q), np.zeros_like(self.point.v), (0.0,) * len(self.point.params))

    def _unit_directions(self) -> dict[str, list[_Point]]:
        zero = self._zero()
        out: dict[str, list[_Point]] = {"q": [], "v": [], "params": []}
        for j in range(self.point.q.size):
            q = np.zeros_like(self.point.q)
            q[j] = 1.0
            out["q"].append(dataclasses.replace(zero, q=q))
        for j in range(self.point.v.size):
            v = np.zeros_like(self.point.v)
            v[j] = 1.0
            out["v"].append(dataclasses.replace(zero, v=v))
        for j in range(len(self.point.params)):
            out["params"].append(dataclasses.replace(zero, params=tuple(float(k == j) for k in
                                                                        range(len(self.point.params)))))
        return out

    def jacobian(self) -> dict[str, FloatArray]:
        """The step's Jacobian by input block: ``"q"`` ((nq + nv, nq)), ``"v"``, ``"u"`` (no
        columns) and ``"params"``, rows ``(q_k+1, v_k+1)``; built on first use and kept."""
        if self._jacobian is not None:
            return self._jacobian
        n, zero = self.x.shape[0], self._zero()
        units = np.eye(n)
        if self.kind == "contact":
            G_x = units - np.stack([self._phi_tangent(units[j], zero) for j in range(n)], axis=1)

            def G_p(direction: _Point) -> FloatArray:
                return -self._phi_tangent(np.zeros(n), direction)
        else:
            G_x = np.stack([self._difference(self._residual, units[j], zero) for j in range(n)], axis=1)

            def G_p(direction: _Point) -> FloatArray:
                return self._difference(self._residual, np.zeros(n), direction)
        if not np.all(np.isfinite(G_x)):
            raise NotDifferentiableError("derivatives: the variational step's Jacobian is not finite")
        rows = self.system.nq + self.system.nv
        blocks: dict[str, FloatArray] = {"u": np.zeros((rows, 0))}
        for block, directions in self._unit_directions().items():
            columns = np.zeros((rows, len(directions)))
            for j, direction in enumerate(directions):
                dx = np.asarray(-np.linalg.lstsq(G_x, G_p(direction), rcond=None)[0], dtype=np.float64)
                columns[:, j] = self._difference(self._output, dx, direction)
            blocks[block] = columns
        self._jacobian = blocks
        return blocks

    def jvp(self, dq: ArrayLike | None = None, dv: ArrayLike | None = None, du: ArrayLike | None = None,
            dparams: Mapping[str, float] | None = None) -> StepTangent:
        """``(dq', dv')`` for the input change ``(dq, dv, dparams)`` (None: zero; ``du`` must be
        None or empty)."""
        if du is not None and np.size(du):
            raise OptionError("derivatives: the variational step takes no input u")
        blocks = self.jacobian()
        total = np.zeros(self.system.nq + self.system.nv)
        for block, value in (("q", dq), ("v", dv)):
            if value is None:
                continue
            vector = np.asarray(value, dtype=np.float64).reshape(-1)
            if vector.shape != (blocks[block].shape[1],):
                raise ShapeError(f"derivatives: d{block} must have length {blocks[block].shape[1]}, "
                                 f"got {vector.shape[0]}")
            total += blocks[block] @ vector
        if dparams:
            unknown = sorted(set(dparams) - set(self.parameters))
            if unknown:
                raise OptionError(f"derivatives: parameter(s) {', '.join(map(repr, unknown))} were not asked "
                                  f"for; this step differentiates by {', '.join(self.parameters) or 'none'}")
            total += blocks["params"] @ np.array([float(dparams.get(name, 0.0)) for name in self.parameters])
        nq = self.system.nq
        return StepTangent(total[:nq], total[nq:])

    def vjp(self, gq: ArrayLike | None = None, gv: ArrayLike | None = None) -> StepCotangent:
        """The gradient of ``<gq, q'> + <gv, v'>`` with respect to the step's inputs."""
        seed = np.concatenate([_vector(gq, self.system.nq, "gq"), _vector(gv, self.system.nv, "gv")])
        blocks = self.jacobian()
        params = blocks["params"].T @ seed
        return StepCotangent(blocks["q"].T @ seed, blocks["v"].T @ seed, np.zeros(0),
                             dict(zip(self.parameters, params.tolist(), strict=True)))
