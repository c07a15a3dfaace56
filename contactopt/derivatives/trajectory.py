"""Derivatives of a whole trajectory (issue 26, item 3): forward sensitivities recorded by
``co.simulate(..., sensitivities=[...])`` and the reverse-mode (adjoint) gradient of a scalar
loss, :func:`contactopt.gradients.gradient`.

With ``x_n = (q_n, v_n)``, the input ``u_n = f(t_n, x_n) + w_n`` of step ``n`` (``f`` the
controller, ``w_n`` the open-loop perturbation a user differentiates by as ``"u"``) and the
parameters ``theta``, a run is ``x_{n+1} = F_n(x_n, u_n, theta)``. Its tangent (forward)
recursion is ::

    S_{n+1} = (F_x + F_u f_x) S_n + F_u dw_n + F_theta dtheta,     S_0 = dx_0,

and the adjoint (reverse) recursion for ``L(x_0, ..., x_N)`` is (Bryson & Ho, *Applied Optimal
Control*, 1975, §2.2; the discrete adjoint of a one-step map) ::

    lambda_N = dL/dx_N,   lambda_n = dL/dx_n + (F_x + F_u f_x)^T lambda_{n+1},
    dL/dw_n = F_u^T lambda_{n+1},   dL/dtheta = sum_n F_theta^T lambda_{n+1},   dL/dx_0 = lambda_0,

with the step derivatives of :mod:`.step`. The controller's derivative ``f_x`` is taken by
central differences along each tangent (controllers are smooth: constant, sinusoid, PD); an
open-loop input has ``f_x = 0``.

Names a user differentiates by: ``"q0"``, ``"v0"``, ``"u"`` (the input of every step),
``"dt"``, and the system's own (:meth:`System.differentiable_parameters`: ``"mu"``, masses, ...).

**Actuator activations** (``State.act``, an MJCF model with ``na > 0``) are not in ``x``: the
step's forces use ``act_n``, which the past inputs and ``dt`` set (:mod:`contactopt.systems.mjcf.activations`)
but not the state nor the contact parameters. So with an open-loop input (none, constant,
sinusoid) ``act_n`` is the same along every perturbation of ``q0``, ``v0`` and the parameters,
and their sensitivities are exact; ``"u"``, ``"dt"`` and a state-feedback controller would need
``d act / d(...)`` and are refused before step 0 (:func:`refuse_activations`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.derivatives.linearized_step import LinearizedStepDerivative
from contactopt.derivatives.step import RELATIVE_STEP, StepDerivative
from contactopt.integrators.time_stepping import TimeStepping
from contactopt.model.step import State
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
Controller = Callable[[float, FloatArray, FloatArray], Any]

__all__ = ["INITIAL_STATE", "OPEN_LOOP_CONTROLS", "Sensitivities", "StepLinearization", "check_names",
           "controller_jacobian", "controller_rate", "is_control", "linearize_step", "parameter_names",
           "refuse_activations"]

#: Names of the initial state's blocks.
INITIAL_STATE = ("q0", "v0")
#: ``[control]`` types whose input does not read the state (:mod:`contactopt.scenes.control`).
OPEN_LOOP_CONTROLS = ("constant", "sinusoid")


def check_names(system: System, names: Sequence[str]) -> tuple[str, ...]:
    """``names`` checked against what ``system`` can be differentiated by (one clear error)."""
    if isinstance(names, str):
        raise OptionError(f"sensitivities: give a list of names (e.g. [{names!r}]), not the string {names!r}")
    given = tuple(str(name) for name in names)
    parameters = tuple(system.differentiable_parameters()) if hasattr(system, "differentiable_parameters") else ()
    known = tuple(dict.fromkeys((*INITIAL_STATE, "u", "dt", *parameters)))
    unknown = [name for name in given if name not in known]
    if unknown:
        raise OptionError(f"sensitivities: unknown name(s) {', '.join(map(repr, unknown))} for system "
                          f"{system.type_name!r}; known: {', '.join(known)}")
    if len(set(given)) != len(given):
        raise OptionError(f"sensitivities: a name is given twice in {list(given)}")
    if "u" in given and system.control_size == 0 and "u" not in parameters:
        raise OptionError(f"sensitivities: system {system.type_name!r} takes no input, so 'u' has no sensitivity")
    return given


def refuse_activations(system: System, names: Sequence[str], controller: Any) -> None:
    """On a system with actuator activations, refuse (one :class:`OptionError`) the names and
    the controller whose derivative would leave out ``d act / d(...)`` (module docstring):
    ``"u"``, ``"dt"``, and any controller but an open-loop one (:data:`OPEN_LOOP_CONTROLS`;
    ``controller`` is a ``ControlSpec``, a ``[control]`` mapping, a callable or None)."""
    if not system.na:
        return
    where = f"sensitivities: system {system.describe()} has {system.na} actuator activation(s) (MuJoCo's act)"
    wrong = [name for name in names if name in ("u", "dt")]
    if wrong:
        raise OptionError(f"{where}, which the inputs and dt set: derivatives by {', '.join(map(repr, wrong))} "
                          "are not computed (q0, v0 and the parameters are)")
    kind = controller.get("type") if isinstance(controller, Mapping) else getattr(controller, "type", None)
    if controller is not None and kind not in OPEN_LOOP_CONTROLS:
        raise OptionError(f"{where}, which a controller reading the state (type {kind or 'python callable'!r}) "
                          f"makes depend on q and v: only an open-loop control "
                          f"({', '.join(OPEN_LOOP_CONTROLS)}) is differentiated")


def is_control(system: System, name: str) -> bool:
    """Whether ``name`` is the input of each step: ``"u"`` on a system that takes one (the
    textbook cart's and brick's constant push ``u`` is a parameter of the system)."""
    return name == "u" and system.control_size > 0


def parameter_names(system: System, names: Sequence[str]) -> tuple[str, ...]:
    """The names among ``names`` that are step parameters (not the initial state nor the input)."""
    return tuple(name for name in names if name not in INITIAL_STATE and not is_control(system, name))


def controller_jacobian(controller: Controller | None, system: System, state: State,
                        u: FloatArray | None) -> FloatArray:
    """``f_x`` ((nu, nq + nv)): the controller's derivative with respect to the state, by
    central differences (zeros without a controller)."""
    nx = system.nq + system.nv
    if controller is None or u is None or u.size == 0:
        return np.zeros((0 if u is None else u.size, nx))
    x = np.concatenate([state.q, state.v])
    jacobian = np.zeros((u.size, nx))
    for j in range(nx):
        t = RELATIVE_STEP * max(abs(float(x[j])), 1.0)
        sides = []
        for sign in (1.0, -1.0):
            moved = x.copy()
            moved[j] += sign * t
            sides.append(np.asarray(controller(state.t, moved[:system.nq], moved[system.nq:]), dtype=np.float64))
        jacobian[:, j] = (sides[0] - sides[1]) / (2.0 * t)
    return jacobian


def controller_rate(controller: Controller | None, state: State, u: FloatArray | None) -> FloatArray:
    """``f_t`` ((nu,)): the controller's derivative with respect to time, by central
    differences (zeros without a controller). Step ``n`` starts at ``t_n = n dt``, so a change
    of ``dt`` moves its input by ``n f_t`` (and the step's own time, :mod:`.step`)."""
    if controller is None or u is None or u.size == 0:
        return np.zeros(0 if u is None else u.size)
    t = RELATIVE_STEP * max(abs(state.t), 1.0)
    later = np.asarray(controller(state.t + t, state.q.copy(), state.v.copy()), dtype=np.float64)
    earlier = np.asarray(controller(state.t - t, state.q.copy(), state.v.copy()), dtype=np.float64)
    return (later - earlier) / (2.0 * t)


@dataclass
class Sensitivities:
    """Forward sensitivities along a run, advanced after every step (module docstring).

    ``values[name]`` per step: ``(nq + nv,)`` for a scalar parameter, ``(nq + nv, nq)`` for
    ``"q0"``, ``(nq + nv, nv)`` for ``"v0"``, ``(nq + nv, N, nu)`` for ``"u"``.
    """

    system: System
    names: tuple[str, ...]
    n_steps: int
    controller: Controller | None = None
    history: dict[str, list[FloatArray]] = field(default_factory=dict)
    degenerate: list[int] = field(default_factory=list)
    #: Per step, whether its solution was judged inaccurate (differentiated as it was used).
    inaccurate: list[bool] = field(default_factory=list)
    #: Why the sensitivities stopped (a step where the run is not differentiable), or "".
    stopped: str = ""

    def __post_init__(self) -> None:
        if is_control(self.system, "u") and "u" in self.names and self.controller is None:
            raise OptionError("sensitivities: 'u' is the input of each step, and this run has no controller "
                              "(give one, e.g. a constant [control] table, to differentiate by its values)")
        nq, nv, nu = self.system.nq, self.system.nv, self.system.control_size
        nx = nq + nv
        start: dict[str, FloatArray] = {}
        for name in self.names:
            if name == "q0":
                start[name] = np.eye(nx, nq)
            elif name == "v0":
                start[name] = np.eye(nx, nv, -nq)
            elif is_control(self.system, name):
                start[name] = np.zeros((nx, self.n_steps, nu))
            else:
                start[name] = np.zeros(nx)
        self.history = {name: [value] for name, value in start.items()}

    def advance(self, stepper: TimeStepping, state: State, u: FloatArray | None, index: int) -> None:
        """Propagate through step ``index`` just taken by ``stepper`` from ``state`` under ``u``."""
        parameters = parameter_names(self.system, self.names)
        step = linearize_step(stepper, state, u, parameters, self.controller, index)
        derivative, feedback, rate = step.derivative, step.feedback, step.rate
        nq, nu = self.system.nq, self.system.control_size
        matrices = {name: values[-1].reshape(values[-1].shape[0], -1) for name, values in self.history.items()}
        columns = sum(matrix.shape[1] for matrix in matrices.values())
        inputs = nq + self.system.nv + (0 if u is None else u.size) + len(parameters)
        joined: set[str] = set()
        if columns >= inputs:  # cheaper through the whole step Jacobian
            blocks = derivative.jacobian()
            closed = np.hstack([blocks["q"], blocks["v"]])
            if feedback.size:
                closed = closed + blocks["u"] @ feedback

            def propagate(matrix: FloatArray) -> FloatArray:
                return np.asarray(closed @ matrix)
            by_input = {"u": blocks["u"], **{name: blocks["params"][:, k]
                                           for k, name in enumerate(parameters)}}
            if rate.size and np.any(rate):
                by_input["dt"] = by_input["dt"] + blocks["u"] @ rate
        else:
            def propagate(matrix: FloatArray) -> FloatArray:
                moved = [derivative.jvp(dq=column[:nq], dv=column[nq:],
                                        du=feedback @ column if feedback.size else None) for column in matrix.T]
                return (np.stack([np.concatenate([t.q, t.v]) for t in moved], axis=1) if moved
                        else np.zeros_like(matrix))

            def own(name: str) -> FloatArray:
                if is_control(self.system, name):
                    tangents = [derivative.jvp(du=unit) for unit in np.eye(nu)]
                    return np.stack([np.concatenate([t.q, t.v]) for t in tangents], axis=1)
                moved_input = rate if name == "dt" and rate.size and np.any(rate) else None
                tangent = derivative.jvp(dparams={name: 1.0}, du=moved_input)
                return np.concatenate([tangent.q, tangent.v])
            # where a product moves every input at once (the pinocchio backend's tangents), a
            # parameter's column and its own input move in one product (their sum), not two
            joined = {name for name in matrices if getattr(derivative, "joins_products", False)
                      and name not in INITIAL_STATE and not is_control(self.system, name) and name != "dt"}
            by_input = {name: own(name) for name in self.names if name not in INITIAL_STATE and name not in joined}
        for name, matrix in matrices.items():
            shape = self.history[name][-1].shape
            if name in joined:
                column = matrix[:, 0]
                tangent = derivative.jvp(dq=column[:nq], dv=column[nq:], dparams={name: 1.0},
                                         du=feedback @ column if feedback.size else None)
                self.history[name].append(np.concatenate([tangent.q, tangent.v]).reshape(shape))
                continue
            moved = propagate(matrix).reshape(shape)
            if is_control(self.system, name):
                moved[:, index, :] += by_input["u"]
            elif name not in INITIAL_STATE:
                moved = moved + by_input[name]
            self.history[name].append(moved)
        self.degenerate.append(derivative.one_sided_points)
        self.inaccurate.append(derivative.inaccurate)

    def arrays(self, states: int) -> dict[str, FloatArray]:
        """Per name, the stacked sensitivities of the first ``states`` recorded states
        (``(states, ...)``), NaN after a step where they :attr:`stopped`."""
        out = {}
        for name, values in self.history.items():
            stacked = np.stack(values[:states])
            missing = states - stacked.shape[0]
            if missing > 0:
                stacked = np.concatenate([stacked, np.full((missing, *stacked.shape[1:]), np.nan)])
            out[name] = stacked
        return out


def step_derivative(stepper: TimeStepping, state: State, u: FloatArray | None,
                    parameters: Sequence[str]) -> StepDerivative:
    """The derivative of the step ``stepper`` just took from ``state`` (through the system's
    analytic tangents where it has them: :mod:`contactopt.derivatives.linearized_step`)."""
    if getattr(stepper, "name", "") == "variational":  # its own implicit function theorem
        from contactopt.derivatives.variational import VariationalStepDerivative

        return VariationalStepDerivative(stepper, state, u, parameters)  # type: ignore[arg-type, return-value]
    problem, program, solution = stepper.last_problem, stepper.last_program, stepper.last_solution
    assert problem is not None and program is not None and solution is not None
    kind = LinearizedStepDerivative if hasattr(stepper.system, "linearize_step_problem") else StepDerivative
    return kind(stepper, state, u, problem, program, solution, parameters=parameters)


@dataclass(frozen=True)
class StepLinearization:
    """What both recursions (module docstring) need of step ``n``: its derivative ``F``, the
    controller's ``f_x`` ((nu, nq + nv)) and ``n f_t`` ((nu,), empty unless ``dt`` is asked for:
    a change of ``dt`` moves step ``n``'s start time ``n dt``, hence a time-dependent input)."""

    derivative: StepDerivative
    feedback: FloatArray
    rate: FloatArray


def linearize_step(stepper: TimeStepping, state: State, u: FloatArray | None, parameters: Sequence[str],
                   controller: Controller | None, index: int) -> StepLinearization:
    """The linearization of step ``index`` just taken by ``stepper`` from ``state`` under ``u``."""
    rate = index * controller_rate(controller, state, u) if "dt" in parameters else np.zeros(0)
    return StepLinearization(step_derivative(stepper, state, u, parameters),
                             controller_jacobian(controller, stepper.system, state, u), rate)
