"""One ``Solution`` type and one ``Status`` enum for every solver.

Residuals are always computed by contactopt from the returned iterate
(:mod:`contactopt.programs.residuals`), never copied from the solver.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import display

FloatArray = NDArray[np.float64]

__all__ = ["Residuals", "Solution", "Status"]


class Status(StrEnum):
    """Outcome of a solve, shared by every backend (each backend maps its own codes here)."""

    OPTIMAL = "optimal"
    INACCURATE = "inaccurate"  # solved to reduced accuracy
    INFEASIBLE = "infeasible"  # primal infeasible (certificate found)
    UNBOUNDED = "unbounded"  # dual infeasible: objective unbounded below
    RAY_TERMINATION = "ray_termination"  # Lemke: secondary ray, no solution found
    MAX_ITERATIONS = "max_iterations"
    NUMERICAL_ERROR = "numerical_error"

    @property
    def usable(self) -> bool:
        """Whether the iterate is meant as an answer (optimal or inaccurate)."""
        return self in (Status.OPTIMAL, Status.INACCURATE)


@dataclass(frozen=True)
class Residuals:
    """Optimality residuals computed by contactopt (absolute, infinity norms).

    For a ConicProgram with ``s = b - A x``:
        primal: max distance of ``s`` from ``K`` (equality violation, negative slack, cone violation).
        dual: max of ``||P x + c + A^T y||_inf`` and the distance of ``y`` from ``K*``.
        gap: ``|x^T P x + c^T x + b^T y|`` (primal minus dual objective).
        complementarity: ``|s^T y|``.
    For an LCP with ``w = M z + q``:
        primal: ``max(0, -min z)``; dual: ``max(0, -min w)``; gap: NaN (not defined);
        complementarity: ``|z^T w|``.
    And, for both kinds:
        relative: the worst residual relative to the terms of its own row, cone or variable
            (:mod:`contactopt.programs.relative`): unit-free, what the solver layer judges a
            solver's claim by; NaN where not computed.
    For a Coulomb problem (:mod:`contactopt.programs.coulomb`, which defines its readings of
    the first four), also:
        fclib: FCLIB's error measure of the answer; NaN for the other kinds.
    """

    primal: float
    dual: float
    gap: float
    complementarity: float
    relative: float = float("nan")
    fclib: float = float("nan")

    def __eq__(self, other: object) -> bool:
        """Field by field, an undefined (NaN) residual equal to an undefined one (a record
        saved and loaded again compares equal)."""
        if not isinstance(other, Residuals):
            return NotImplemented
        return all(a == b or (np.isnan(a) and np.isnan(b))
                   for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True))

    def __hash__(self) -> int:
        return hash(tuple(np.nan_to_num(dataclasses.astuple(self), nan=0.1234)))

    @property
    def worst(self) -> float:
        """The largest residual, ignoring the ones not defined (NaN)."""
        values = [v for v in (self.primal, self.dual, self.gap, self.complementarity) if not np.isnan(v)]
        return max(values, default=0.0)

    def as_dict(self) -> dict[str, float]:
        """The residuals by name; ``fclib`` only where defined (a Coulomb problem's)."""
        values = {"primal": self.primal, "dual": self.dual, "gap": self.gap,
                  "complementarity": self.complementarity, "relative": self.relative}
        return values if np.isnan(self.fclib) else {**values, "fclib": self.fclib}

    @staticmethod
    def undefined() -> Residuals:
        nan = float("nan")
        return Residuals(nan, nan, nan, nan, nan, nan)


@dataclass(frozen=True)
class Solution:
    """The answer of any solver to any program.

    Attributes:
        x: primal variables (``z`` for an LCP); NaN-filled when the solver gave none.
        y: dual variables of the rows (empty for an LCP).
        s: slacks ``b - A x`` (``w = M z + q`` for an LCP).
        status: the outcome, see :class:`Status`.
        iterations: solver iterations (pivots for Lemke, sweeps for PGS).
        setup_time, solve_time: seconds, measured by contactopt around the backend calls.
        residuals: computed by contactopt.
        solver: the solver name that produced it (e.g. ``cvxpy:SCS``).
        conversion: the program conversion applied before solving (e.g. ``qp->lcp``), or None.
        message: human-readable detail (the backend's own status string).
        refined: whether the active-set refinement of :mod:`contactopt.solvers.refine`
            replaced the backend's interior-point answer.
        raw: the backend's own result object.
        claimed: the status the backend claimed, when contactopt's judgement of its answer
            (:func:`contactopt.solvers.base.judge`) differs from it; None otherwise.
        history: per-iteration criteria of an iterative solver asked for them (option
            ``history``): equal-length arrays keyed by ``iteration``, ``time`` and the columns
            of :func:`contactopt.programs.coulomb.coulomb_criteria` (or the solver's own); None
            when not recorded.
    """

    x: FloatArray
    y: FloatArray
    s: FloatArray
    status: Status
    iterations: int
    setup_time: float
    solve_time: float
    residuals: Residuals
    solver: str
    conversion: str | None = None
    message: str = ""
    raw: Any = field(default=None, repr=False, compare=False)
    refined: bool = False
    claimed: Status | None = None
    history: dict[str, FloatArray] | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """One line: status, solver, iterations, time, worst residual (:mod:`contactopt.core.display`)."""
        return display.solution_text(self)

    def _repr_html_(self) -> str:
        """Jupyter: a table of the outcome and residuals, with x, y, s of a small program."""
        return display.solution_html(self)

    @property
    def z(self) -> FloatArray:
        """LCP alias of ``x``."""
        return self.x

    @property
    def w(self) -> FloatArray:
        """LCP alias of ``s``."""
        return self.s
