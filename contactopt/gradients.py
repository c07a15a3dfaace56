"""The reverse-mode (adjoint) gradient of a scalar loss of a trajectory:
:func:`contactopt.gradients.gradient` (issue 26, item 3; the recursion is in :mod:`.trajectory`).

A loss is a function of the whole recorded trajectory, ``loss(q, v) -> (value, dL/dq, dL/dv)``
with ``q`` (N+1, nq) and ``v`` (N+1, nv) and the gradients of the same shapes: plain NumPy in
and out. :func:`final_state_loss` and :func:`tracking_loss` build the two common ones.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, OptionError, ShapeError
from contactopt.derivatives.losses import Loss, final_state_loss, tracking_loss
from contactopt.derivatives.trajectory import (
    StepLinearization,
    check_names,
    is_control,
    linearize_step,
    parameter_names,
    refuse_activations,
)
from contactopt.integrators.time_stepping import TimeStepping
from contactopt.model.step import State
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene

FloatArray = NDArray[np.float64]

__all__ = ["Gradient", "final_state_loss", "gradient", "tracking_loss"]


@dataclass(frozen=True)
class Gradient:
    """What :func:`gradient` returns.

    Attributes:
        value: the loss of the simulated trajectory.
        gradients: per name asked for, ``dL/d name``: ``"q0"`` (nq,), ``"v0"`` (nv,), ``"u"``
            (N, nu) (the input of each step), a float for ``"dt"`` and each system parameter.
        trajectory: the simulated trajectory.
        degenerate: per step, the points of its program where strict complementarity is lost
            and the input blocks whose difference had to be one-sided (a one-sided derivative is
            used there; 0 everywhere: the loss is differentiable).
    """

    value: float
    gradients: dict[str, Any]
    trajectory: Trajectory
    degenerate: list[int] = field(default_factory=list)


@dataclass
class _Recorder:
    """Keeps each step's derivative and controller derivative for the reverse sweep (the
    observer :func:`contactopt.simulation.simulate` calls after every step)."""

    parameters: tuple[str, ...]
    controller: Callable[..., Any] | None = None
    steps: list[StepLinearization] = field(default_factory=list)

    def advance(self, stepper: TimeStepping, state: State, u: FloatArray | None, index: int) -> None:
        self.steps.append(linearize_step(stepper, state, u, self.parameters, self.controller, index))


def gradient(scene: Scene, loss: Loss, wrt: Sequence[str], formulation: str | None = None,
             solver: str | None = None, dt: float | None = None, duration: float | None = None,
             options: Mapping[str, Any] | None = None, solver_options: Mapping[str, Any] | None = None,
             controller: Any = None, progress: bool = False) -> Gradient:
    """Simulate ``scene`` (arguments as :func:`contactopt.simulation.simulate`) and return ``loss`` of the
    trajectory with its gradient with respect to each name of ``wrt`` by the adjoint sweep.

    Raises :class:`~contactopt.core.errors.SimulationError` (holding the trajectory) when the run
    stops early, and :class:`~contactopt.derivatives.NotDifferentiableError` naming the step
    whose structure changes within the difference step.
    """
    from contactopt.scenes.control import make_controller
    from contactopt.simulation import simulate

    names = check_names(scene.system, wrt)
    spec = controller if controller is not None else scene.control
    refuse_activations(scene.system, names, spec)
    recorder = _Recorder(parameter_names(scene.system, names), make_controller(spec, scene.system))
    if "u" in names and is_control(scene.system, "u") and recorder.controller is None:
        raise OptionError("gradient: 'u' is the input of each step, and this run has no controller "
                          "(give one, e.g. a constant [control] table, to differentiate by its values)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=_partial_warning())
        try:
            trajectory = simulate(scene, formulation, solver, dt, duration, options, solver_options,
                                  controller=controller, progress=progress, _observer=recorder)
        except _partial_warning() as exc:
            raise ContactoptError(f"gradient: {exc}; the gradient of a partial run is not computed") from None
    value, gq, gv = _evaluate(loss, trajectory)
    nq = scene.system.nq
    adjoint = np.concatenate([gq[-1], gv[-1]])
    nu = scene.system.control_size
    grad_u = np.zeros((len(recorder.steps), nu))
    grad_params = dict.fromkeys(recorder.parameters, 0.0)
    for index in range(len(recorder.steps) - 1, -1, -1):
        step = recorder.steps[index]
        derivative, feedback, rate = step.derivative, step.feedback, step.rate
        cotangent = derivative.vjp(adjoint[:nq], adjoint[nq:])
        previous = np.concatenate([cotangent.q, cotangent.v])
        if feedback.size:
            previous = previous + feedback.T @ cotangent.u
        if cotangent.u.size:
            grad_u[index] = cotangent.u
        for name, value_k in cotangent.params.items():
            grad_params[name] += value_k
        if rate.size:
            grad_params["dt"] += float(rate @ cotangent.u)
        adjoint = np.concatenate([gq[index], gv[index]]) + previous
    result: dict[str, Any] = {}
    for name in names:
        if name == "q0":
            result[name] = adjoint[:nq].copy()
        elif name == "v0":
            result[name] = adjoint[nq:].copy()
        elif is_control(scene.system, name):
            result[name] = grad_u
        else:
            result[name] = float(grad_params[name])
    one_sided = [step.derivative.one_sided_points for step in recorder.steps]
    return Gradient(float(value), result, trajectory, one_sided)


def _partial_warning() -> type[Warning]:
    from contactopt.core.errors import PartialTrajectoryWarning

    return PartialTrajectoryWarning


def _evaluate(loss: Loss, trajectory: Trajectory) -> tuple[float, FloatArray, FloatArray]:
    try:
        value, gq, gv = loss(trajectory.q.copy(), trajectory.v.copy())
    except (TypeError, ValueError) as exc:
        raise OptionError(f"gradient: the loss must return (value, dL/dq, dL/dv); it raised {exc}") from exc
    if np.ndim(value) != 0 or not np.isrealobj(value) or isinstance(value, bool | np.bool_ | str):
        raise OptionError(f"gradient: the loss's value must be one real number, got {type(value).__name__} "
                          f"of shape {np.shape(value)}")
    arrays = []
    for name, array, shape in (("dL/dq", gq, trajectory.q.shape), ("dL/dv", gv, trajectory.v.shape)):
        values = np.asarray(array, dtype=np.float64)
        if values.shape != shape:
            raise ShapeError(f"gradient: the loss's {name} has shape {values.shape}, the trajectory's is {shape}")
        arrays.append(values)
    if not np.isfinite(float(value)) or not all(np.isfinite(a).all() for a in arrays):
        raise OptionError("gradient: the loss or its gradient is not finite")
    return float(value), arrays[0], arrays[1]
