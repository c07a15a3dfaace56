"""The step derivative of a system that gives the analytic tangents of its step problem
(``system.linearize_step_problem``: the pinocchio URDF backend, fixed or floating base,
:class:`contactopt.systems.urdf_pinocchio.derivatives.StepLinearization`).

:class:`~contactopt.derivatives.step.StepDerivative` differentiates the smooth maps around the
program's solution by central differences, asking the system for the problem again at each
point (``P`` of its module docstring). Here ``P`` is not asked again:

* the problem at each point of a difference is the base problem moved along the system's
  tangents (``problem_at``), and only the formulation's ``build`` is differenced along them;
* a forward product moves every input at once (one difference, where the base class takes
  one per input block);
* for ``sap`` and the primal ``ccp`` no difference is left
  (:func:`contactopt.derivatives.analytic_step.analytic_linearization`): a forward product is
  one product of the program derivative, a reverse product one reverse product (no Jacobian).

Where the system gives no linearization (a parameter other than ``mu`` and ``dt``, drift projection, rows
or pairs its tangents do not cover), every method is the base class's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.derivatives.analytic_step import analytic_linearization
from contactopt.derivatives.conic import _vector
from contactopt.derivatives.differences import StepProgram
from contactopt.derivatives.step import (
    RELATIVE_STEP,
    StepCotangent,
    StepDerivative,
    StepTangent,
    _Point,
    _require_same_structure,
)
from contactopt.model.step import StepProblem
from contactopt.programs.convexity import vouched
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["ALL_INPUTS", "LinearizedStepDerivative"]

#: Every input moved at once: ``[q, v, u, params]``.
ALL_INPUTS = "all"
_UNASKED: Any = object()


@dataclasses.dataclass(frozen=True)
class _AllPoint(_Point):
    """A step's inputs that also move along :data:`ALL_INPUTS`."""

    def moved(self, block: str, direction: FloatArray, t: float) -> _Point:
        if block != ALL_INPUTS:
            moved = super().moved(block, direction, t)
            return _AllPoint(moved.q, moved.v, moved.u, moved.params)
        dq, dv, du, dp = np.split(direction, np.cumsum([self.q.size, self.v.size, self.u.size]))
        return _AllPoint(self.q + t * dq, self.v + t * dv, self.u + t * du, tuple(np.asarray(self.params) + t * dp))


class LinearizedStepDerivative(StepDerivative):
    """:class:`~contactopt.derivatives.step.StepDerivative` through the system's analytic
    tangents (module docstring); the same arguments and results."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        point = self.point
        self.point = _AllPoint(point.q, point.v, point.u, point.params)
        self._linear: Any = _UNASKED
        self._exact: Any = _UNASKED
        self._applies: bool | None = None  # whether the analytic path applies, once known

    def _linearization(self) -> Any:
        """The system's step problem linearized at the base (``problem_at(t, dq, dv, du, dmu)``),
        or None; asked once. Not under drift projection (a projected state moves with the
        constraints' own derivatives)."""
        if self._linear is _UNASKED:
            linearize = getattr(self.system, "linearize_step_problem", None)
            self._linear = (linearize(self.problem, self.parameters)
                            if linearize is not None and self.stepper.drift.mode != "projection" else None)
        return self._linear

    def _analytic(self) -> Any:
        """The step's linearization without differences (``sap``, primal ``ccp``), or None."""
        if self._exact is _UNASKED:
            linear = self._linearization()
            self._exact = (analytic_linearization(self.stepper, self.problem, self.program, self.program_derivative,
                                                  linear, self.parameters)
                           if linear is not None and self.point.u.size == 0 else None)
        return self._exact

    @property
    def joins_products(self) -> bool:
        """Whether forward products along several directions may be summed into one
        (:meth:`contactopt.derivatives.trajectory.Sensitivities.advance` does): where the step
        moves along the system's tangents, a forward product already moves every input at once
        (exact, a linear map, on the analytic path; one difference along the sum otherwise). Not
        with ``dt``: the products stay per block, so that ``dt`` is never stepped at the state's
        scale; the parameters' block is stepped relative to the largest moved parameter (``dt``'s
        own size where it moves alone, ``1e-6 max(mu, dt)`` where ``mu`` moves with it)."""
        return self._linearization() is not None and "dt" not in self.parameters

    def _program_at(self, point: _Point, block: str) -> tuple[System, float, StepProblem, StepProgram]:
        linear = self._linearization()
        if linear is None:
            return super()._program_at(point, block)
        base = self.point
        moved = {name: value - old for name, value, old in zip(self.parameters, point.params, base.params, strict=True)}
        dmu, ddt = moved.get("mu", 0.0), moved.get("dt", 0.0)
        problem = linear.problem_at(1.0, point.q - base.q, point.v - base.v, point.u - base.u, dmu, ddt)
        with vouched():  # the base program with its data moved: its structure is checked instead
            program = self.stepper.formulation.build(problem, self.stepper.formulation_options)
        assert isinstance(program, StepProgram)
        _require_same_structure(self.program, program, block)
        return self.system, self.stepper.dt + ddt, problem, program

    def jvp(self, dq: ArrayLike | None = None, dv: ArrayLike | None = None, du: ArrayLike | None = None,
            dparams: Mapping[str, float] | None = None) -> StepTangent:
        directions = self._directions(dq, dv, du, dparams)
        if self._linearization() is None or not directions or "dt" in self.parameters:
            return super().jvp(dq, dv, du, dparams)  # by block (dt's own step), along the linearized problem
        point = self.point
        sizes = {"q": point.q.size, "v": point.v.size, "u": point.u.size, "params": len(point.params)}
        combined = np.concatenate([directions.get(block, np.zeros(size)) for block, size in sizes.items()])
        exact = self._exact if self._exact is not _UNASKED else self._analytic_along(combined)
        return StepTangent(*(exact.jvp(combined) if exact is not None else self._block_jvp(ALL_INPUTS, combined)))

    def _analytic_along(self, direction: FloatArray) -> Any:
        """The analytic linearization along ``direction`` alone (a forward product: ``r`` on one
        column, not on every input's), or None where there is none (then remembered, as
        :meth:`_analytic`'s answer: whether it applies does not depend on the direction)."""
        linear = self._linearization()
        if self._applies is False or linear is None or self.point.u.size:
            self._applies = False
            return None
        along = analytic_linearization(self.stepper, self.problem, self.program, self.program_derivative, linear,
                                       self.parameters, direction[:, None])
        self._applies = along is not None
        if along is None:
            self._exact = None
        return along

    def _block_jvp(self, block: str, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        if block != ALL_INPUTS:
            return super()._block_jvp(block, direction)
        base = self.point  # as the base class's, with the step scaled on every input at once
        values = np.concatenate([base.q, base.v, base.u, base.params])
        t = RELATIVE_STEP * max(float(np.abs(values).max(initial=0.0)), 1.0) / float(np.abs(direction).max())
        evaluations = self._stencil(block, direction, t)
        tangent = self._solution_tangent([side[4] for _, _, side in evaluations], [w for _, w, _ in evaluations])
        q_change, v_change = np.zeros(self.system.nq), np.zeros(self.system.nv)
        for offset, weight, (system, dt, point, problem, program) in evaluations:
            moved = dataclasses.replace(self.solution, **{key: getattr(self.solution, key) + offset * value
                                                         for key, value in tangent.items()})
            q_next, v_next = self._advance(system, dt, point, problem, program, moved)
            q_change += weight * q_next
            v_change += weight * v_next
        return q_change, v_change

    def jacobian(self) -> dict[str, FloatArray]:
        exact = self._analytic()
        if self._jacobian is None and exact is not None:
            nq, nv, full = self.system.nq, self.system.nv, exact.jacobian()
            self._jacobian = {"q": full[:, :nq], "v": full[:, nq:nq + nv], "u": np.zeros((full.shape[0], 0)),
                              "params": full[:, nq + nv:]}
        return super().jacobian()

    def vjp(self, gq: ArrayLike | None = None, gv: ArrayLike | None = None) -> StepCotangent:
        exact = self._analytic()
        if exact is None or self._jacobian is not None:
            return super().vjp(gq, gv)
        nq, nv = self.system.nq, self.system.nv
        gradient = exact.vjp(_vector(gq, nq, "gq"), _vector(gv, nv, "gv"))  # one reverse product, no Jacobian
        return StepCotangent(gradient[:nq], gradient[nq:nq + nv], np.zeros(0),
                             dict(zip(self.parameters, gradient[nq + nv:].tolist(), strict=True)))
