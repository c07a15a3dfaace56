"""``simulate``: the loop from a scene to a :class:`~contactopt.records.trajectory.Trajectory`;
``formulate``: the explicit program of one step."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt import formulations
from contactopt.core.arguments import ArgumentTypeError, check_mapping, check_name, check_number, given
from contactopt.core.budgets import plan_steps
from contactopt.core.errors import ContactoptError, OptionError, PartialTrajectoryWarning, SimulationError
from contactopt.formulations.base import Program
from contactopt.integrators import make_stepper, picks_own_solver
from contactopt.integrators.drift import Drift
from contactopt.integrators.initial_penetration import INITIAL_PENETRATION_TOLERANCE, check_initial_penetration
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem, split_drift_options
from contactopt.model.step import State
from contactopt.records.columns import StepColumns
from contactopt.records.trajectory import StepRecord, Trajectory
from contactopt.scenes.control import (
    ControlError,
    Controller,
    ControlSpec,
    OpenLoopControl,
    check_output,
    make_controller,
)
from contactopt.scenes.loading import Scene, as_scene
from contactopt.solvers.choice import check_solver_options, choose
from contactopt.systems.base import System

__all__ = ["formulate", "simulate"]

FloatArray = NDArray[np.float64]


def formulate(system: System, q: ArrayLike, v: ArrayLike, dt: float, formulation: str = "gauss",
              options: Mapping[str, Any] | None = None, t: float = 0.0,
              control: ArrayLike | None = None, activation: ArrayLike | None = None) -> Program:
    """The explicit program that ``formulation`` builds for one step from ``(q, v)``, with the
    input ``control`` ((nu,): ``B u`` or MuJoCo's ``ctrl``; see :mod:`contactopt.scenes.control`)
    held over the step (None: no input) and the actuator activations ``activation`` ((na,),
    ``State.act``; None: the system's initial ones). Arguments of the wrong type are refused
    by name (:mod:`contactopt.core.arguments`)."""
    q, v, dt, formulation, options, t = _formulate_arguments(system, q, v, dt, formulation, options, t)
    form = formulations.get(formulation)
    drift_options, rest = split_drift_options(options, form)
    drift = Drift.from_options(drift_options, f"formulation {formulation!r}")
    resolved = form.resolve_options(rest)
    held, held_activation = system.control, system.activation
    try:
        if control is not None:
            system.set_control(check_output(control, system, 0, t, "formulate: control"))
        system.set_activation(activation)
        problem = build_step_problem(system, q, v, dt, t, drift=drift, native=form.native_request(resolved))
    finally:
        system.set_control(held)
        system.set_activation(held_activation)
    return form.build(problem, resolved)


def _formulate_arguments(system: Any, q: Any, v: Any, dt: Any, formulation: Any, options: Any,
                         t: Any) -> tuple[FloatArray, FloatArray, float, str, dict[str, Any], float]:
    """``formulate``'s arguments, their types checked (:mod:`contactopt.core.arguments`)."""
    if not isinstance(system, System):
        raise ArgumentTypeError(f"formulate: system must be a System (scene.system), got {given(system)}")
    arrays = []
    for name, value in (("q", q), ("v", v)):
        try:
            arrays.append(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"formulate: {name} must be an array of numbers, got {given(value)}") from None
    return (arrays[0], arrays[1], check_number(dt, "dt", "formulate"),
            check_name(formulation, "formulation", "formulate", "gauss"),
            check_mapping(options, "options", "formulate"),
            check_number(t, "t", "formulate", positive=False))


def simulate(
    scene: Scene | str | Path,
    formulation: str | None = None,
    solver: str | None = None,
    dt: float | None = None,
    duration: float | None = None,
    options: Mapping[str, Any] | None = None,
    solver_options: Mapping[str, Any] | None = None,
    *,
    fallback: str | None = None,
    on_failure: Literal["stop", "raise"] = "stop",
    progress: bool = False,
    controller: Controller | ControlSpec | Mapping[str, Any] | None = None,
    penetration_tolerance: float = INITIAL_PENETRATION_TOLERANCE,
    max_steps: int | None = None,
    sensitivities: Sequence[str] | None = None,
    _observer: Any = None,
) -> Trajectory:
    """Simulate ``scene``; arguments left None take the scene's defaults.

    The solver is checked against step 0's program before the first step: a solver given
    here that cannot take the formulation's program is refused with one line naming those
    that can; the scene's solver (``solver=None``) is replaced by the best installed one that
    can, and ``info["solver_choice"]`` says so.

    A trajectory that stops before ``duration`` is never silent: ``completed`` is False,
    ``message`` says why, and a :class:`~contactopt.core.errors.PartialTrajectoryWarning` is
    issued. ``on_failure="raise"`` is the strict mode: the first failed step raises.

    Each step builds the formulation's program, solves it, checks the status and records
    residuals computed by contactopt. A step whose solve is not usable is retried with
    ``fallback`` (if given); if it still fails, the run stops there (``on_failure="stop"``:
    the trajectory keeps every finished step, the failed record is the last of ``steps``
    and ``message`` says why) or raises (``"raise"``). Ctrl-C stops the run the same way.
    An unexpected exception inside a step raises :class:`~contactopt.core.errors.SimulationError`
    whose ``trajectory`` holds every finished step.

    ``controller`` (default: the scene's ``[control]`` table, if any) is ``f(t, q, v) -> u``,
    a :class:`~contactopt.scenes.control.ControlSpec` or a ``[control]``-shaped mapping; ``u`` is
    evaluated at the start of each step and held over it (:mod:`contactopt.scenes.control`), and
    recorded in ``steps[k].control``. A controller that raises or returns the wrong length or
    a non-finite value raises :class:`~contactopt.scenes.control.ControlError` naming the step, with
    every finished step in its ``trajectory``.

    Before step 0, contacts of ``q0`` deeper than ``penetration_tolerance`` (m; ``inf``: no
    check) give one :class:`~contactopt.core.errors.InitialPenetrationWarning` naming the deepest
    (:mod:`contactopt.integrators.initial_penetration`).
    ``max_steps`` (default: the scene's ``max_steps``, else
    :data:`~contactopt.core.budgets.DEFAULT_MAX_STEPS` = 10**6) bounds ``round(duration / dt)``:
    a run over the budget, or with ``dt > duration``, raises
    :class:`~contactopt.core.errors.BudgetError` before any work.

    ``sensitivities`` (names: ``"q0"``, ``"v0"``, ``"u"``, ``"dt"``, ``"mu"`` and the system's
    own parameters, :meth:`System.differentiable_parameters`) records ``d(q, v)/d name`` at
    every state in ``traj.sensitivities`` (:mod:`contactopt.derivatives.trajectory`); a step
    where the run is not differentiable (a contact appears within the difference step) leaves
    NaN from there on with a :class:`~contactopt.derivatives.NondifferentiableWarning`.

    ``scene`` may also be a scene file path or a bundled problem name (``simulate("cart_wall")``),
    loaded as the CLI does. Arguments of the wrong type (``dt="0.1"``, ``formulation=3``,
    ``options=[("form", "dual")]``) are refused by name before any work
    (:class:`~contactopt.core.arguments.ArgumentTypeError`).
    """
    scene = as_scene(scene, "simulate")
    for name, value in (("formulation", formulation), ("solver", solver), ("fallback", fallback)):
        if value is not None:
            check_name(value, name, "simulate", "clarabel" if name != "formulation" else "gauss")
    options = check_mapping(options, "options", "simulate")
    solver_options = check_mapping(solver_options, "solver_options", "simulate")
    formulation = formulation or scene.formulation
    dt = float(scene.dt) if dt is None else check_number(dt, "dt", "simulate")
    duration = float(scene.duration) if duration is None else check_number(duration, "duration", "simulate")
    if not (math.isfinite(dt) and dt > 0):
        raise OptionError(f"dt must be a positive number, got {dt}")
    if not (math.isfinite(duration) and duration > 0):
        raise OptionError(f"duration must be a positive number, got {duration}")
    n_steps = plan_steps(dt, duration, scene.max_steps if max_steps is None else max_steps, scene.name)
    if on_failure not in ("stop", "raise"):
        raise OptionError(f"on_failure must be 'stop' or 'raise', got {on_failure!r}")
    merged_options = {**scene.options, **(options or {})}
    explicit = solver is not None
    if explicit or not picks_own_solver(formulation):
        solver = solver or scene.solver
    stepper = make_stepper(scene.system, formulation, solver, dt, merged_options, solver_options)
    solver = solver or stepper.solver  # the method's own choice
    choice = ""
    initial = State(scene.q0, scene.v0, 0.0, scene.system.initial_activation())  # MJCF: the keyframe's act
    held_activation = scene.system.activation
    check_state = getattr(stepper, "check_state", None)
    if check_state is not None:  # what the method cannot handle is refused before the first step
        check_state(initial)
    if isinstance(stepper, TimeStepping):  # refuse (or replace a default) before the first step
        program = stepper.first_program(initial)
        chosen, choice = choose(program, solver, explicit=explicit)
        if chosen != solver:
            solver = chosen
            stepper = make_stepper(scene.system, formulation, solver, dt, merged_options, solver_options)
        check_solver_options(program, solver, solver_options)
        if fallback:
            choose(program, fallback, explicit=True)
    check_initial_penetration(scene.system, scene.q0, penetration_tolerance, scene.name)
    backup = make_stepper(scene.system, formulation, fallback, dt, merged_options) if fallback else None
    spec = controller if controller is not None else scene.control
    control = make_controller(spec, scene.system)
    if control is not None and isinstance(stepper, TimeStepping):
        stepper.forget_first_program()  # step 0's program depends on the control it is given
    info = {"scene": scene.name, "system": scene.system.type_name,
            "system_description": scene.system.describe(), "formulation": formulation.strip().lower(),
            "solver": solver, "solver_choice": choice, "fallback": fallback, "dt": dt, "duration": duration,
            "options": stepper.options, "solver_options": dict(solver_options or {}),
            "q_names": list(scene.system.q_names), "v_names": list(scene.system.v_names),
            "q_units": list(scene.system.coordinate_units()[0]), "v_units": list(scene.system.coordinate_units()[1]),
            "control": _describe_control(spec)}

    tracker = (_tracker(scene, stepper, sensitivities, control, spec, n_steps, fallback) if sensitivities
               else _observer)
    if tracker is not None:
        _require_differentiable(stepper)

    state = initial
    times, qs, vs, acts = [state.t], [state.q], [state.v], [state.act]
    steps: list[StepRecord] | StepColumns = []
    message = ""
    bar = _progress_bar(n_steps, f"{scene.name} {info['formulation']}/{solver}", progress)

    def partial(reason: str) -> Trajectory:
        tracked = tracker.arrays(len(times)) if sensitivities else {}
        if sensitivities:  # where the derivative is one-sided, and where it stopped
            degenerate = [i for i, n in enumerate(tracker.degenerate) if n]
            info["sensitivities"] = {"names": list(tracked), "stopped": tracker.stopped,
                                     "one_sided_steps": len(degenerate),
                                     "first_one_sided_step": degenerate[0] if degenerate else None,
                                     "inaccurate_steps": int(sum(tracker.inaccurate))}
        return Trajectory(t=np.array(times), q=np.array(qs), v=np.array(vs), steps=steps,
                          info=info, message=reason, sensitivities=tracked, act=np.array(acts))

    fast = getattr(stepper, "run_steps", None) if tracker is None and backup is None else None

    def control_of(at: State) -> FloatArray:  # the fast loop's controller: u of the step, held over it
        assert control is not None
        u = _control_at(control, info["control"], scene.system, len(steps), at, partial)
        scene.system.set_control(u)
        return u

    try:
        if fast is not None:  # the step as arrays: its own loop (contactopt.integrators.native_step)
            try:
                schedule = _schedule(control, control_of, state, dt, n_steps)
                if stepper.compiled_run(schedule, control_of if control is not None else None):
                    steps = StepColumns()  # the compiled run's records, as columns
                message = fast(state, n_steps, times, qs, vs, acts, steps, bar,
                               control_of if control is not None else None, schedule)
            except ControlError:  # it keeps the finished steps itself
                raise
            except Exception as exc:  # keep what was computed
                reason = f"step {len(steps)} raised {type(exc).__name__}: {exc}"
                raise SimulationError(reason, partial(reason)) from exc
            if message and on_failure == "raise":
                raise ContactoptError(message)
        for _ in range(0 if fast is not None else n_steps):
            u = None
            if control is not None:
                u = _control_at(control, info["control"], scene.system, len(steps), state, partial)
                scene.system.set_control(u)
            try:
                next_state, record = stepper.step(state)
                if next_state is None and backup is not None:
                    next_state, record = backup.step(state)
                if next_state is not None and tracker is not None:
                    _track(tracker, stepper, state, u, len(steps), _observer is not None)
            except Exception as exc:  # a bug or a system error: keep what was computed
                reason = f"step {len(steps)} at t={state.t:.6g} raised {type(exc).__name__}: {exc}"
                raise SimulationError(reason, partial(reason)) from exc
            if u is not None:
                record = dataclasses.replace(record, control=u)
            steps.append(record)
            if next_state is None:
                message = (f"step {len(steps) - 1} at t={state.t:.6g} failed: "
                           f"{record.status} ({record.message})")
                if on_failure == "raise":
                    raise ContactoptError(message)
                break
            state = next_state
            times.append(state.t)
            qs.append(state.q)
            vs.append(state.v)
            acts.append(state.act)
            bar.update(1)
    except KeyboardInterrupt:
        message = f"interrupted by the user after {len(times) - 1} steps"
    finally:
        bar.close()
        if control is not None:
            scene.system.set_control(None)
        scene.system.set_activation(held_activation)
    if message:
        warnings.warn(f"{scene.name}: the trajectory is partial: {message}", PartialTrajectoryWarning, stacklevel=2)
    return partial(message)


def _schedule(control: Controller | None, control_of: Callable[[State], FloatArray], state: State, dt: float,
              n_steps: int) -> FloatArray | None:
    """(n_steps, nu) an open-loop controller's inputs at the run's step times (``t += dt``, step by
    step), the first one checked and set on the system by ``control_of``; None for other
    controllers, or where a row is not finite (the step-by-step loop then stops at it, loud)."""
    if not isinstance(control, OpenLoopControl):
        return None
    first = control_of(state)
    stamps = np.add.accumulate(np.concatenate([[state.t], np.full(n_steps - 1, dt)]))
    inputs = np.asarray(control.schedule(stamps), dtype=np.float64)
    if inputs.shape != (n_steps, first.shape[0]) or not np.all(np.isfinite(inputs)):
        return None
    return inputs


def _tracker(scene: Scene, stepper: Any, names: Sequence[str], control: Controller | None, spec: Any,
             n_steps: int, fallback: str | None) -> Any:
    from contactopt.derivatives.trajectory import Sensitivities, check_names, refuse_activations

    if fallback:
        raise OptionError("sensitivities: a run with a fallback solver is not differentiated "
                          "(its steps would mix two solvers' answers)")
    checked = check_names(scene.system, names)
    refuse_activations(scene.system, checked, spec)  # what act's dependence would make wrong
    return Sensitivities(scene.system, checked, n_steps, control)


def _require_differentiable(stepper: Any) -> None:
    """Refuse, before step 0, a run whose steps have no derivative: a method that is not time
    stepping, or a step of several stage programs (every time-stepping formulation's single
    program is differentiated: :mod:`contactopt.derivatives`)."""
    if getattr(stepper, "name", "") == "variational":  # contactopt.derivatives.variational
        return
    if not isinstance(stepper, TimeStepping):
        raise OptionError("sensitivities: only a time-stepping formulation or the variational integrator is "
                          "differentiated, "
                          f"not {stepper.__class__.__name__}")
    if stepper.tableau is not None:  # a step of several stage programs (MuJoCo's RK4)
        from contactopt.integrators.runge_kutta import derivative_refusal

        raise OptionError(derivative_refusal(stepper.tableau, stepper.formulation.name))


def _track(tracker: Any, stepper: Any, state: State, u: FloatArray | None, index: int, strict: bool) -> None:
    """Advance the sensitivities (or the gradient's recorder) through step ``index``; a step
    that is not differentiable stops the sensitivities loudly (or raises, for a gradient)."""
    from contactopt.derivatives import NondifferentiableWarning, NotDifferentiableError

    if getattr(tracker, "stopped", ""):
        return
    try:
        tracker.advance(stepper, state, u, index)
    except NotDifferentiableError as exc:
        if strict:
            raise
        tracker.stopped = f"step {index} at t={state.t:.6g}: {exc}"
        warnings.warn(f"sensitivities stop at {tracker.stopped} (NaN from there on)",
                      NondifferentiableWarning, stacklevel=3)


def _control_at(control: Controller, name: str, system: System, step: int, state: State,
                partial: Callable[[str], Trajectory]) -> FloatArray:
    """``u`` of step ``step``, checked; a failing controller keeps every finished step."""
    try:
        value = control(state.t, state.q.copy(), state.v.copy())
        return check_output(value, system, step, state.t,
                            f"controller {name} output at step {step} (t={state.t:.6g})")
    except OptionError as exc:
        raise ControlError(str(exc), partial(str(exc))) from exc
    except Exception as exc:  # the user's code
        reason = f"controller raised {type(exc).__name__} at step {step} (t={state.t:.6g}): {exc}"
        raise ControlError(reason, partial(reason)) from exc


def _describe_control(spec: Any) -> str | None:
    if spec is None:
        return None
    if isinstance(spec, ControlSpec):
        return spec.describe()
    if isinstance(spec, Mapping):
        return ControlSpec(str(spec.get("type")), {k: v for k, v in spec.items() if k != "type"}).describe()
    return str(getattr(spec, "__qualname__", None) or type(spec).__name__)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, label: str, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="step", leave=False, dynamic_ncols=True)
