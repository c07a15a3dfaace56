"""Ways of advancing time. Every method has the same ``step(state) -> (next_state | None,
record)`` (Brax-style), so ``simulate`` and the comparison tooling never branch on it:

* the time-stepping formulations (one program per step; :mod:`contactopt.formulations`),
* ``ode``: continuous-time constrained dynamics (:mod:`contactopt.integrators.ode`),
* ``variational``: the variational integrator (:mod:`contactopt.integrators.variational`),
* ``compliant``: compliant contact, spring-damper forces and regularized friction integrated
  with error control (:mod:`contactopt.integrators.compliant`),
* ``hybrid``: event-driven rigid contact, impacts, bilateral active contacts and stick/slide
  guards (:mod:`contactopt.integrators.hybrid`; impact laws in
  :mod:`contactopt.integrators.impacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from contactopt import formulations
from contactopt.core.errors import OptionError, UnknownNameError
from contactopt.integrators.compliant import CompliantContact
from contactopt.integrators.drift import Drift, project
from contactopt.integrators.hybrid import HybridSimulation
from contactopt.integrators.ode import ConstrainedODE
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.integrators.variational import VariationalIntegrator
from contactopt.model.step import State
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System

__all__ = ["CompliantContact", "ConstrainedODE", "Drift", "HybridSimulation", "Stepper", "TimeStepping",
           "VariationalIntegrator", "build_step_problem", "describe", "make_stepper", "names", "project"]

def _mujoco_stepper(*args: Any) -> Any:  # imported lazily: mujoco is an optional extra
    from contactopt.integrators.mujoco_stepper import MujocoStepper

    return MujocoStepper(*args)


_mujoco_stepper.description = "MuJoCo's own mj_step on the same MJCF model (reference; mjcf systems only)"  # type: ignore[attr-defined]
_mujoco_stepper.defaults = {"cone": None, "solver": None, "iterations": None, "tolerance": None,  # type: ignore[attr-defined]
                            "residuals": True}

#: The methods that read a contact's own stiffness (hydroelastic patch rows; the others would treat
#: them as rigid point contacts at the pressure field's zero level, where the surface vanishes).
HYDROELASTIC_METHODS = ("sap", "regularized", "compliant")
_CONTINUOUS: dict[str, Any] = {"ode": ConstrainedODE, "variational": VariationalIntegrator,
                               "compliant": CompliantContact, "hybrid": HybridSimulation, "mujoco": _mujoco_stepper}
if set(_CONTINUOUS) != set(formulations.METHOD_NAMES):  # the names the formulation registry keeps free
    raise RuntimeError(f"contactopt.formulations.METHOD_NAMES {formulations.METHOD_NAMES} must name the "
                       f"continuous-time methods {tuple(_CONTINUOUS)}")


class Stepper(Protocol):
    """What every method provides."""

    options: dict[str, Any]

    def step(self, state: State) -> tuple[State | None, StepRecord]: ...


def names() -> list[str]:
    """Every method ``simulate`` takes: the time-stepping formulations, then ode, variational,
    compliant, hybrid."""
    return [*formulations.names(), *_CONTINUOUS]


def describe(name: str) -> tuple[str, Mapping[str, Any]]:
    """(description, default options) of a method."""
    if name in _CONTINUOUS:
        return _CONTINUOUS[name].description, _CONTINUOUS[name].defaults
    form = formulations.get(name)
    from contactopt.integrators.drift import DRIFT_DEFAULTS

    return form.description, {**form.defaults, **DRIFT_DEFAULTS}


def picks_own_solver(formulation: str) -> bool:
    """Whether the method chooses its own solver when the run names none, rather than take the
    scene's (which belongs to the scene's formulation): ``variational``, whose contact iterates
    are then the exact cone's, solved by nsgs."""
    return bool(getattr(_CONTINUOUS.get(formulation.strip().lower()), "picks_own_solver", False))


def make_stepper(system: System, formulation: str, solver: str | None, dt: float,
                 options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> Any:
    """The stepper for ``formulation``; options are validated here, before any step."""
    key = formulation.strip().lower()
    soft = system.declared_features().get("hydroelastic")
    if soft and key not in HYDROELASTIC_METHODS:
        raise OptionError(f"formulation {formulation!r} cannot take hydroelastic contact surfaces (soft "
                          f"{', '.join(map(repr, soft))}: rows with their own stiffness); use "
                          f"{', '.join(HYDROELASTIC_METHODS)}")
    if key in _CONTINUOUS:
        return _CONTINUOUS[key](system, solver, dt, options, solver_options)
    if key not in formulations.names():
        known = ", ".join(names())
        raise UnknownNameError(f"unknown formulation {formulation!r}; known formulations: {known}")
    if solver is None:
        raise OptionError(f"formulation {formulation!r} needs a solver")
    from contactopt.integrators import native_step

    if native_step.takes(key, solver, options, system):  # the step as arrays (MuJoCo's own rows)
        return native_step.NativeStepping(system, key, solver, dt, options, solver_options)
    return TimeStepping(system, key, solver, dt, options, solver_options)
