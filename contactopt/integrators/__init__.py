"""Ways of advancing time. Every method has the same ``step(state) -> (next_state | None,
record)`` (Brax-style), so ``simulate`` and the comparison tooling never branch on it:

* the time-stepping formulations (one program per step; :mod:`contactopt.formulations`),
* ``ode``: continuous-time constrained dynamics (:mod:`contactopt.integrators.ode`),
* ``variational``: the variational integrator (:mod:`contactopt.integrators.variational`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from contactopt import formulations
from contactopt.errors import UnknownNameError
from contactopt.integrators.drift import Drift, project
from contactopt.integrators.ode import ConstrainedODE
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.integrators.variational import VariationalIntegrator
from contactopt.model import State
from contactopt.records import StepRecord
from contactopt.systems.base import System

__all__ = ["ConstrainedODE", "Drift", "Stepper", "TimeStepping", "VariationalIntegrator",
           "build_step_problem", "describe", "make_stepper", "names", "project"]

_CONTINUOUS: dict[str, Any] = {"ode": ConstrainedODE, "variational": VariationalIntegrator}


class Stepper(Protocol):
    """What every method provides."""

    options: dict[str, Any]

    def step(self, state: State) -> tuple[State | None, StepRecord]: ...


def names() -> list[str]:
    """Every method ``simulate`` takes: the time-stepping formulations, then ode, variational."""
    return [*formulations.names(), *_CONTINUOUS]


def describe(name: str) -> tuple[str, Mapping[str, Any]]:
    """(description, default options) of a method."""
    if name in _CONTINUOUS:
        return _CONTINUOUS[name].description, _CONTINUOUS[name].defaults
    form = formulations.get(name)
    from contactopt.integrators.drift import DRIFT_DEFAULTS

    return form.description, {**form.defaults, **DRIFT_DEFAULTS}


def make_stepper(system: System, formulation: str, solver: str, dt: float,
                 options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> Any:
    """The stepper for ``formulation``; options are validated here, before any step."""
    key = formulation.strip().lower()
    if key in _CONTINUOUS:
        return _CONTINUOUS[key](system, solver, dt, options, solver_options)
    if key not in formulations.names():
        known = ", ".join(names())
        raise UnknownNameError(f"unknown formulation {formulation!r}; known formulations: {known}")
    return TimeStepping(system, key, solver, dt, options, solver_options)
