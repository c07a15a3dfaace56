"""What a time-stepping formulation is: ``build`` a program from a step, ``recover`` the step.

Like a cvxpy reduction, a formulation has two halves: :meth:`Formulation.build` turns a
:class:`~contactopt.model.step.StepProblem` into an explicit program (ConicProgram, LCP or CoulombProgram) whose
variable and row blocks are named, and :meth:`Formulation.recover` maps a solver's
:class:`~contactopt.programs.Solution` back to the next velocity and the contact impulses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.model.step import StepProblem
from contactopt.programs import LCP, ConicProgram, Solution
from contactopt.programs.coulomb import CoulombProgram

if TYPE_CHECKING:
    from contactopt.model.tableau import Tableau
    from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
Program = ConicProgram | LCP | CoulombProgram
#: The solver registry's ``solve(program, solver)`` (:func:`contactopt.solvers.solve`).
SolveFunction = Callable[[Any, str], Solution]


@dataclass(frozen=True)
class StepResult:
    """What a formulation recovers from a solution.

    Attributes:
        v_next: (nv,) velocity at the end of the step.
        impulses: (nc, dim) contact impulses in N·s, normal first per contact.
        bilateral: (nh,) bilateral-constraint impulses in N·s (``M (v' - v_free)`` includes
            ``H^T bilateral``).
        limits: (nu,) impulses of the unilateral (limit) rows, >= 0.
        friction_loss: (nf,) impulses of the dry-friction (box) rows.
        angular_friction: (m,) impulses of the contacts' torsional and rolling rows
            (``Contacts.angular``, every candidate's; N·m·s), 0 for contacts out of the program.
    """

    v_next: FloatArray
    impulses: FloatArray
    bilateral: FloatArray = field(default_factory=lambda: np.zeros(0))
    limits: FloatArray = field(default_factory=lambda: np.zeros(0))
    friction_loss: FloatArray = field(default_factory=lambda: np.zeros(0))
    angular_friction: FloatArray = field(default_factory=lambda: np.zeros(0))


class Formulation(ABC):
    """Base class of every formulation; subclasses declare ``name`` and ``defaults``."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: Option names with their default values; anything else is rejected.
    defaults: ClassVar[Mapping[str, Any]] = {}
    #: Allowed values of enumerated options.
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    #: Rows it cannot hold, by the feature names of :meth:`System.declared_features`, with
    #: why: a system that declares one is refused before step 0 (:mod:`contactopt.integrators.capabilities`).
    refuses: ClassVar[Mapping[str, str]] = {}

    def resolve_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults merged with ``options``; unknown keys and bad choices raise OptionError."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise OptionError(
                f"formulation {self.name!r}: unknown option(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(self.defaults) or 'none'}")
        merged = {**self.defaults, **given}
        for key, allowed in self.choices.items():
            if merged[key] not in allowed:
                raise OptionError(f"formulation {self.name!r}: option {key!r} must be one of "
                                  f"{', '.join(map(repr, allowed))}, got {merged[key]!r}")
        # Options shared by the contact formulations, checked once here.
        from contactopt.formulations.common import check_directions, check_margin

        if merged.get("k") is not None:
            check_directions(merged["k"], 3, self.name)
        if "epsilon" in merged:
            check_margin(merged, self.name)
        from contactopt.formulations.recovery import OPTION, check_recovery_speed

        if OPTION in merged:
            merged[OPTION] = check_recovery_speed(merged[OPTION], self.name)
        return merged

    def native_request(self, options: Mapping[str, Any]) -> dict[str, Any] | None:
        """The settings with which :meth:`build` needs the system's own constraint problem
        (``StepProblem.native``, :meth:`System.native_rows`) under these (resolved) options;
        None when it does not."""
        return None

    def stage_tableau(self, system: System, options: Mapping[str, Any]) -> Tableau | None:
        """The Runge-Kutta tableau when a step of ``system`` under these (resolved) options is
        several stage programs (:mod:`contactopt.integrators.runge_kutta`: MuJoCo's RK4 under
        ``regularized -o params=model``); None (every other formulation): one program a step,
        semi-implicit Euler."""
        return None

    @abstractmethod
    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        """The explicit program of one step (options already resolved)."""

    def choose_solution(self, program: Program, solution: Solution, options: Mapping[str, Any],
                        solve: SolveFunction) -> Solution:
        """Among the solutions of ``program``, the one the formulation steps with (options
        resolved): the solver's answer, unless the formulation defines a selection where the
        program's solution is not unique (``lcp -o impulses=min_norm``). ``solve(program,
        solver)`` is the solver registry's (formulations never import the solvers: the driver
        hands it over) for a selection that solves a program of its own."""
        return solution

    @abstractmethod
    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        """Next velocity and impulses from a solution of ``program``."""
