"""Derivative of one time step, ``d(q', v') / d(q, v, u, theta)`` (issue 26, item 2).

A time step is the composition ::

    x = (q, v, u, theta)  --P-->  StepProblem  --B-->  program data  --S-->  solution z
                          --R-->  v' = recover(problem, program, z)  --I-->  q' = integrate(q, v', h)

where ``P`` asks the system for ``M``, ``tau``, the contact rows and gaps (with the parameters
``theta``: ``mu``, the system's own parameters, ``dt``), ``B`` is the formulation's ``build``,
``S`` the solver and ``R``, ``I`` the formulation's ``recover`` and the system's integrator.
``S`` is the only non-smooth map: its derivative is the implicit function theorem on the
program's optimality conditions at the judged solution (:func:`~contactopt.derivatives.program_derivative`,
exact up to the solution's own accuracy). ``P``, ``B``, ``R`` and ``I`` are smooth while the
step's structure (the contact candidates, the rows and cones of the program) stays the same,
and they are differentiated by central differences along each tangent, one input block at a
time (Nocedal & Wright, *Numerical Optimization*, 2nd ed., §8.1: error ``O(t^2)`` plus
round-off ``O(eps / t)``, balanced at ``t ~ (eps l^2)^(1/3)`` for a map that bends on the
length ``l``: the contact models bend on ``l ~ 1e-3`` of the block's size (MuJoCo's impedance
width, 1 mm, in ``regularized``), where ``eps^(1/3) = 6e-6`` left ``2.5e-6`` relative error on a
box 0.1 mm deep and ``1e-6`` leaves ``7e-8``, with ``eps`` the maps' own round-off, ``~1e-13``
for MuJoCo's (tests/test_step_derivatives.py); each parameter is moved relative to its own
size, not the block's (``dt = 1e-3`` beside ``g = 9.81``); exact for the maps that are affine
in the block, as ``B`` is in ``v`` for every formulation).
This is what MuJoCo's ``mjd_transitionFD`` does for a whole step, restricted here to the
smooth maps: the contact solve, where finite differences are unreliable (they straddle
kinks, and they see the solver's tolerance), is differentiated exactly.

A perturbation that changes the structure (a candidate appears or leaves within the
difference step) raises :class:`~contactopt.derivatives.NotDifferentiableError` naming the
input block; points where the solution loses strict complementarity give the ``branch``
one-sided derivative and are listed in :attr:`StepDerivative.degenerate`.

The reverse product (:meth:`StepDerivative.vjp`) is the transpose of the step's Jacobian,
built column by column from forward products on first use and kept.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import OptionError, ParameterValueError, ShapeError
from contactopt.derivatives.conic import ConicDerivative, NondifferentiableWarning, NotDifferentiableError, _vector
from contactopt.derivatives.coulomb import CoulombDerivative
from contactopt.derivatives.differences import StepProgram, kinked, solution_tangent
from contactopt.derivatives.lcp import LCPDerivative
from contactopt.derivatives.primal import PrimalDerivative
from contactopt.derivatives.program import program_derivative
from contactopt.integrators.drift import project
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.model.step import State, StepProblem
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.programs.convexity import vouched
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
#: The programs whose solution is differentiated (:func:`~contactopt.derivatives.program_derivative`).

__all__ = ["STEP_INPUTS", "StepCotangent", "StepDerivative", "StepTangent"]

#: Relative central-difference step (module docstring: the contact models' 1 mm lengths).
RELATIVE_STEP = 1e-6
#: The input blocks of a step besides the named parameters.
STEP_INPUTS = ("q", "v", "u")


@dataclass(frozen=True)
class StepTangent:
    """A forward product's answer: ``q`` (nq,) and ``v`` (nv,), the changes of the next state."""

    q: FloatArray
    v: FloatArray


@dataclass(frozen=True)
class StepCotangent:
    """A reverse product's answer: the gradient of ``<gq, q'> + <gv, v'>`` with respect to
    ``q`` (nq,), ``v`` (nv,), ``u`` (nu,) and each named parameter (a float per name)."""

    q: FloatArray
    v: FloatArray
    u: FloatArray
    params: dict[str, float]


@dataclass(frozen=True)
class _Point:
    """The inputs of one step: ``q``, ``v``, ``u`` (empty when the step has no input) and the
    values of the named parameters (``dt`` among them when differentiated)."""

    q: FloatArray
    v: FloatArray
    u: FloatArray
    params: tuple[float, ...]

    def moved(self, block: str, direction: FloatArray, t: float) -> _Point:
        if block in STEP_INPUTS:
            return dataclasses.replace(self, **{block: getattr(self, block) + t * direction})
        return dataclasses.replace(self, params=tuple(np.asarray(self.params) + t * direction))


class StepDerivative:
    """The derivative of the step from ``state`` taken by ``stepper`` (module docstring).

    Args:
        stepper: the :class:`~contactopt.integrators.time_stepping.TimeStepping` that took the step.
        state: the state at the start of the step.
        control: the input held over the step ((nu,), None: none).
        problem: the step's problem.
        program: the program the formulation built from it.
        solution: its solution, judged optimal or inaccurate (usable: the step the run took
            used it, and its derivative is that answer's; :attr:`inaccurate` says so).
        parameters: names to differentiate by besides ``q``, ``v``, ``u``: ``"dt"`` and the
            names of :meth:`System.differentiable_parameters` (``"mu"``, ...).
        branch: the one-sided derivative at points where strict complementarity is lost.

    Attributes:
        degenerate: how many points of the program lost strict complementarity (0: the step
            is differentiable there).
        inaccurate: whether the solution was judged ``inaccurate`` (solved to reduced accuracy).
    """

    def __init__(self, stepper: TimeStepping, state: State, control: ArrayLike | None,
                 problem: StepProblem, program: StepProgram, solution: Solution,
                 parameters: Sequence[str] = (), branch: str = "active") -> None:
        if stepper.tableau is not None:
            from contactopt.integrators.runge_kutta import derivative_refusal

            raise OptionError(derivative_refusal(stepper.tableau, stepper.formulation.name))
        if not isinstance(program, StepProgram):
            raise NotDifferentiableError(
                f"derivatives: formulation {stepper.formulation.name!r} builds a {type(program).__name__}, "
                "whose solution has no derivative here (a ConicProgram, an LCP or a CoulombProgram is differentiated)")
        self.stepper, self.state, self.problem, self.program, self.solution = stepper, state, problem, program, solution
        self.system: System = stepper.system
        self.parameters = tuple(parameters)
        _check_parameters(self.system, self.parameters)
        u = np.zeros(0) if control is None else np.asarray(control, dtype=np.float64).reshape(-1)
        values = [self.system.parameter_values([n])[n] if n != "dt" else stepper.dt for n in self.parameters]
        self.point = _Point(np.asarray(state.q, dtype=np.float64), np.asarray(state.v, dtype=np.float64), u,
                            tuple(float(x) for x in values))
        self.inaccurate = solution.status is Status.INACCURATE
        # An inaccurate answer is still the one the run stepped with: the program derivative,
        # which takes only answers judged optimal, is given it as such (counted in ``inaccurate``).
        judged = dataclasses.replace(solution, status=Status.OPTIMAL) if self.inaccurate else solution
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", NondifferentiableWarning)
            self.program_derivative: ConicDerivative | PrimalDerivative | LCPDerivative | CoulombDerivative = (
                program_derivative(program, judged, branch=branch))
        self.degenerate = len(self.program_derivative.degenerate)
        for warning in caught:
            if not issubclass(warning.category, NondifferentiableWarning):
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        self._jacobian: dict[str, FloatArray] | None = None
        #: The input blocks whose difference was one-sided (one side changes the structure).
        self.one_sided: list[str] = []

    @property
    def one_sided_points(self) -> int:
        """Where this step's derivative is one-sided so far: the program's points that lost
        strict complementarity, and the input blocks differenced on one side."""
        return self.degenerate + len(self.one_sided)

    # -- the smooth maps ------------------------------------------------------------------
    def _system_at(self, point: _Point) -> tuple[System, float]:
        # only the moved ones: names can overlap (mjcf's "mu" sets every geom's friction, which
        # "floor.friction" at its base value would set back), and an unmoved system is kept
        values = {name: value for name, value, base in zip(self.parameters, point.params, self.point.params,
                                                           strict=True) if value != base}
        dt = values.pop("dt", self.stepper.dt)
        system = self.system.with_parameters(values) if values else self.system
        return system, dt

    def _program_at(self, point: _Point, block: str) -> tuple[System, float, StepProblem, StepProgram]:
        """The step's problem and program at ``point``, moved along ``block`` from the base.

        Along ``v`` and ``u`` the base problem's contacts, limits and friction-loss rows are
        reused (they depend on ``q`` alone: :func:`build_step_problem`'s ``geometry``), and the
        program is built under :func:`~contactopt.programs.convexity.vouched`: it is the base
        program with its data moved by ``RELATIVE_STEP``, whose structure is checked here
        (:func:`_require_same_structure`) in place of the construction's convexity test.
        """
        system, dt = self._system_at(point)
        held = system.control
        try:
            system.set_control(point.u if point.u.size else held)
            # a step starts at n dt: moving dt moves its start time too (time-dependent constraints)
            start = self.state.t * (dt / self.stepper.dt)
            problem = build_step_problem(system, point.q, point.v, dt, start, drift=self.stepper.drift,
                                         native=self.stepper.formulation.native_request(
                                             self.stepper.formulation_options),
                                         geometry=self.problem if block in ("v", "u") else None)
        finally:
            system.set_control(held)
        with vouched():
            program = self.stepper.formulation.build(problem, self.stepper.formulation_options)
        assert isinstance(program, StepProgram)
        _require_same_structure(self.program, program, block)
        return system, dt, problem, program

    def _advance(self, system: System, dt: float, point: _Point, problem: StepProblem,
                 program: StepProgram, solution: Solution) -> tuple[FloatArray, FloatArray]:
        v_next = self.stepper.formulation.recover(problem, program, solution).v_next
        q_next = system.integrate(point.q, v_next, dt)
        if self.stepper.drift.mode == "projection":
            q_next, v_next = project(system, q_next, v_next, self.state.t + dt)
        return np.asarray(q_next, dtype=np.float64), np.asarray(v_next, dtype=np.float64)

    # -- forward ----------------------------------------------------------------------------
    def jvp(self, dq: ArrayLike | None = None, dv: ArrayLike | None = None, du: ArrayLike | None = None,
            dparams: Mapping[str, float] | None = None) -> StepTangent:
        """``(dq', dv')`` for the input change ``(dq, dv, du, dparams)`` (None: zero)."""
        directions = self._directions(dq, dv, du, dparams)
        total_q, total_v = np.zeros(self.system.nq), np.zeros(self.system.nv)
        for block, direction in directions.items():
            dq_next, dv_next = self._block_jvp(block, direction)
            total_q += dq_next
            total_v += dv_next
        return StepTangent(total_q, total_v)

    def _directions(self, dq: ArrayLike | None, dv: ArrayLike | None, du: ArrayLike | None,
                    dparams: Mapping[str, float] | None) -> dict[str, FloatArray]:
        point = self.point
        out: dict[str, FloatArray] = {}
        for block, value in (("q", dq), ("v", dv), ("u", du)):
            if value is None:
                continue
            size = getattr(point, block).size
            vector = np.asarray(value, dtype=np.float64).reshape(-1)
            if vector.shape != (size,):
                raise ShapeError(f"derivatives: d{block} must have length {size}, got {vector.shape[0]}")
            if np.any(vector):
                out[block] = vector
        if dparams:
            unknown = sorted(set(dparams) - set(self.parameters))
            if unknown:
                raise OptionError(f"derivatives: parameter(s) {', '.join(map(repr, unknown))} were not asked "
                                  f"for; this step differentiates by {', '.join(self.parameters) or 'none'}")
            vector = np.array([float(dparams.get(name, 0.0)) for name in self.parameters])
            if np.any(vector):
                out["params"] = vector
        return out

    def _block_jvp(self, block: str, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        base = self.point
        values = getattr(base, block) if block in STEP_INPUTS else np.asarray(base.params)
        if block not in STEP_INPUTS:  # parameters have units of their own (dt = 1e-3 s beside g = 9.81)
            values = values[direction != 0]
            scale = float(np.abs(values).max(initial=0.0)) or 1.0
        else:  # a state at rest (v = 1e-32 after a step) has no size of its own: a unit floor, as the controller's
            scale = max(float(np.abs(values).max(initial=0.0)), 1.0)
        t = RELATIVE_STEP * scale / float(np.abs(direction).max())
        evaluations = self._stencil(block, direction, t)
        weights = [weight for _, weight, _ in evaluations]
        tangent = self._solution_tangent([side[4] for _, _, side in evaluations], weights)
        q_change, v_change = np.zeros(self.system.nq), np.zeros(self.system.nv)
        for offset, weight, (system, dt, point, problem, program) in evaluations:
            moved = dataclasses.replace(self.solution, **{key: getattr(self.solution, key) + offset * value
                                                         for key, value in tangent.items()})
            q_next, v_next = self._advance(system, dt, point, problem, program, moved)
            q_change += weight * q_next
            v_change += weight * v_next
        return q_change, v_change

    def _stencil(self, block: str, direction: FloatArray, t: float) -> list[tuple[float, float, Any]]:
        """``(offset, weight, evaluation)`` of the difference formula along ``direction``: the
        central one (offsets ``+-t``), or the second-order one-sided one (offsets ``0, s t,
        2 s t``, weights ``(-3/2, 2, -1/2) s / t``: Fornberg 1988), counted in :attr:`one_sided`:

        * on the other side where one side changes the program's structure (a candidate at its
          detection margin, a contact exactly at ``phi = 0`` under a formulation that selects
          contacts by their gap) or leaves a parameter's range (``mu`` at 0);
        * on the side of increasing input where the program's data have a kink there (their
          second difference is not small against their first: MuJoCo's friction of two touching
          geoms tied at the larger's, a gap exactly at the recovery cap): the right derivative.

        Both sides failing raises :class:`NotDifferentiableError`."""
        sides: dict[float, Any] = {}
        failure: Exception | None = None
        for sign in (1.0, -1.0):
            try:
                sides[sign] = self._program_at(self.point.moved(block, direction, sign * t), block)
            except (NotDifferentiableError, ParameterValueError) as error:
                failure = error
        if len(sides) == 2:
            central = [(t, 0.5 / t, self._evaluation(t, sides[1.0], block, direction)),
                       (-t, -0.5 / t, self._evaluation(-t, sides[-1.0], block, direction))]
            if not kinked(sides[-1.0][3], self.program, sides[1.0][3]):
                return central
        if not sides:
            assert failure is not None
            raise NotDifferentiableError(f"derivatives: along {block!r} both sides of the difference fail: "
                                         f"{failure}") from None
        sign = 1.0 if 1.0 in sides else -1.0
        try:
            far = self._program_at(self.point.moved(block, direction, 2.0 * sign * t), block)
        except (NotDifferentiableError, ParameterValueError) as error:
            if len(sides) == 2:  # a kink, and no room on its right: the central difference after all
                return central
            raise NotDifferentiableError(f"derivatives: along {block!r} the one-sided difference fails: "
                                         f"{failure or error}") from None
        self.one_sided.append(block)
        near = self._evaluation(sign * t, sides[sign], block, direction)
        return [(0.0, -1.5 * sign / t, self._evaluation(0.0, None, block, direction)),
                (sign * t, 2.0 * sign / t, near),
                (2.0 * sign * t, -0.5 * sign / t, self._evaluation(2.0 * sign * t, far, block, direction))]

    def _evaluation(self, offset: float, built: Any, block: str, direction: FloatArray) -> tuple[Any, ...]:
        """``(system, dt, point, problem, program)`` at ``offset`` along ``direction`` (the base
        step's own at 0)."""
        if built is None:
            system, dt = self._system_at(self.point)
            return system, dt, self.point, self.problem, self.program
        system, dt, problem, program = built
        return system, dt, self.point.moved(block, direction, offset), problem, program

    def _solution_tangent(self, programs: Sequence[StepProgram],
                          weights: Sequence[float]) -> dict[str, FloatArray]:
        return solution_tangent(self.program_derivative, programs, weights)

    # -- reverse ----------------------------------------------------------------------------
    def jacobian(self) -> dict[str, FloatArray]:
        """The step's Jacobian by input block: ``"q"`` ((nq + nv, nq)), ``"v"`` ((nq + nv, nv)),
        ``"u"`` ((nq + nv, nu)) and ``"params"`` ((nq + nv, len(parameters))), rows ``(q', v')``;
        built from forward products on first use and kept."""
        if self._jacobian is None:
            point = self.point
            columns: dict[str, FloatArray] = {}
            sizes = {"q": point.q.size, "v": point.v.size, "u": point.u.size, "params": len(point.params)}
            for block, size in sizes.items():
                block_columns = np.zeros((self.system.nq + self.system.nv, size))
                for j in range(size):
                    unit = np.zeros(size)
                    unit[j] = 1.0
                    dq_next, dv_next = self._block_jvp(block, unit)
                    block_columns[:, j] = np.concatenate([dq_next, dv_next])
                columns[block] = block_columns
            self._jacobian = columns
        return self._jacobian

    def vjp(self, gq: ArrayLike | None = None, gv: ArrayLike | None = None) -> StepCotangent:
        """The gradient of ``<gq, q'> + <gv, v'>`` with respect to the step's inputs."""
        nq, nv = self.system.nq, self.system.nv
        seed = np.concatenate([_vector(gq, nq, "gq"), _vector(gv, nv, "gv")])
        blocks = self.jacobian()
        params = blocks["params"].T @ seed
        return StepCotangent(blocks["q"].T @ seed, blocks["v"].T @ seed, blocks["u"].T @ seed,
                             dict(zip(self.parameters, params.tolist(), strict=True)))


def _check_parameters(system: System, names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        raise OptionError(f"derivatives: parameters named twice in {list(names)}")
    if not [name for name in names if name != "dt"]:
        return
    known = ("dt", *system.differentiable_parameters())
    unknown = [name for name in names if name not in known]
    if unknown:
        raise OptionError(f"derivatives: system {system.type_name!r} has no differentiable parameter "
                          f"{', '.join(map(repr, unknown))}; known: {', '.join(known)}")


def _require_same_structure(base: StepProgram, moved: StepProgram, block: str) -> None:
    same = type(base) is type(moved) and base.n == moved.n and base.metadata.get("contacts") == moved.metadata.get(
        "contacts")
    if same and isinstance(base, ConicProgram) and isinstance(moved, ConicProgram):
        same = base.m == moved.m and base.cones == moved.cones
    if not same:
        raise NotDifferentiableError(
            f"derivatives: the step's program changes its structure (contacts, rows or cones) within a "
            f"relative change of {RELATIVE_STEP:g} of {block!r}: a contact candidate appears or leaves there, "
            "where the step is not differentiable")

