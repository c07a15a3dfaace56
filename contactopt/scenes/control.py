"""Controllers: the input ``u = f(t, q, v)`` held over each step (zero-order hold).

``simulate(scene, ..., controller=f)`` calls ``f(t_k, q_k, v_k)`` at the start of step ``k``
and holds its value over ``[t_k, t_k + h]``; a scene's ``[control]`` table gives the common
cases without code. ``u`` enters the dynamics as

* textbook systems (manipulator form, Tedrake 2022 "Manipulator Equations"):
  ``tau = tau_g + B u - C v``, ``nu`` = the columns of ``B``;
* MJCF systems: ``data.ctrl`` before ``mj_fwdActuation``, so MuJoCo's actuator gains, biases,
  gears and ``ctrlrange`` apply; the ``mujoco`` reference row sets the same ``data.ctrl`` before
  each ``mj_step``. Every method therefore sees the same inputs.

The ``[control]`` table (``type`` picks the law; vectors have ``nu`` entries, a number is used
for every input)::

    type = "constant"   u = [...]
    type = "pd"         kp, kd, target = [...]          u = kp (target(t) - q_a) - kd v_a
                        amplitude, frequency, phase, start (optional: a moving target
                        target(t) = target + amplitude sin(2 pi frequency (t - start) + phase)
                        for t >= start, the scripted gait of a legged robot)
    type = "sinusoid"   offset, amplitude, frequency [Hz], phase [rad]
                        u = offset + amplitude sin(2 pi frequency t + phase)
    type = "python"     function = "module:function", called as function(t, q, v) -> u

``q_a``, ``v_a`` are the coordinates each input drives (:func:`actuated_coordinates`): the
coordinate ``j`` of a column ``B e_i = g e_j``, or the hinge/slide joint of a MuJoCo actuator
with joint transmission; the gain is in the input's own units (a MuJoCo motor with gear ``g``
applies ``g u``). At rest the PD law balances the gravity load: ``g kp (target - q*) =
-tau_g(q*)``, the steady error is the load over the gain.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import OptionError, SimulationError
from contactopt.systems.base import ParameterError, System

FloatArray = NDArray[np.float64]
Controller = Callable[[float, FloatArray, FloatArray], ArrayLike]

__all__ = ["CONTROL_KEYS", "ControlError", "ControlSpec", "Controller", "actuated_coordinates", "check_output",
           "make_controller", "parse_control"]

#: The keys of a [control] table per ``type``: key -> default (None: required).
CONTROL_KEYS: dict[str, dict[str, float | None]] = {
    "constant": {"u": None},
    "pd": {"kp": None, "kd": 0.0, "target": None, "amplitude": 0.0, "frequency": 0.0, "phase": 0.0,
           "start": 0.0},
    "sinusoid": {"offset": 0.0, "amplitude": None, "frequency": None, "phase": 0.0},
    "python": {"function": None},
}
_SCALARS = {"start", "function"}


class ControlError(SimulationError):
    """A controller failed or returned a bad value; the message names the step, and
    ``trajectory`` holds every step finished before it."""


@dataclass(frozen=True)
class ControlSpec:
    """A validated ``[control]`` table: the law's ``type`` and its values (vectors as tuples,
    so the spec pickles for process pools). ``base`` is the directory searched for the
    module of a ``python`` controller (the scene's)."""

    type: str
    values: Mapping[str, Any]
    base: str | None = None

    def describe(self) -> str:
        body = ", ".join(f"{k}={list(v) if isinstance(v, tuple) else v}" for k, v in self.values.items())
        return f"{self.type}({body})"

    def make(self, system: System) -> Controller:
        """The controller ``f(t, q, v)`` for ``system``."""
        values = {k: (np.array(v) if isinstance(v, tuple) else v) for k, v in self.values.items()}
        if self.type == "constant":
            return ConstantControl(values["u"])
        if self.type == "sinusoid":
            return SinusoidControl(*(values[k] for k in ("offset", "amplitude", "frequency", "phase")))
        if self.type == "pd":
            return _pd(system, values)
        return _import(str(values["function"]), self.base)


class OpenLoopControl:
    """A law of time alone: its inputs over a run are known before the run (:meth:`schedule`),
    so a run may take them without calling the law between steps
    (:mod:`contactopt.integrators.native_run`); ``f(t, q, v)`` is one row of the schedule."""

    def schedule(self, t: Any) -> Any:
        """(n, nu) the inputs at the times ``t`` (n,)."""
        raise NotImplementedError

    def __call__(self, t: float, q: Any, v: Any) -> Any:
        return self.schedule(np.array([t], dtype=np.float64))[0]


@dataclass(frozen=True)
class ConstantControl(OpenLoopControl):
    """The ``constant`` law: the same ``u`` (nu,) at every step."""

    u: Any

    def schedule(self, t: Any) -> Any:
        return np.tile(self.u, (np.shape(t)[0], 1))

    def __call__(self, t: float, q: Any, v: Any) -> Any:
        return self.u


@dataclass(frozen=True)
class SinusoidControl(OpenLoopControl):
    """The ``sinusoid`` law: ``u = offset + amplitude sin(2 pi frequency t + phase)``, each (nu,)
    or a scalar."""

    offset: Any
    amplitude: Any
    frequency: Any
    phase: Any

    def schedule(self, t: Any) -> Any:
        times = np.asarray(t, dtype=np.float64)[:, None]
        return self.offset + self.amplitude * np.sin(2.0 * math.pi * self.frequency * times + self.phase)


def parse_control(table: Mapping[str, Any], system: System, base: str | Path | None = None) -> ControlSpec:
    """Check a ``[control]`` table against ``system``; errors are ``ParameterError`` naming
    ``control.<key>``."""
    kind = table.get("type")
    if kind not in CONTROL_KEYS:
        raise ParameterError("control.type", f"control.type: expected one of {', '.join(map(repr, CONTROL_KEYS))}, "
                             f"got {kind!r}")
    known = CONTROL_KEYS[str(kind)]
    for key in table:
        if key != "type" and key not in known:
            raise ParameterError(f"control.{key}", f"control.{key}: unknown key for type {kind!r} "
                                 f"(known: {', '.join(['type', *known])})")
    nu = system.control_size
    if nu == 0:
        raise ParameterError("control", f"control: the {system.type_name} system takes no control input")
    values: dict[str, Any] = {}
    for key, default in known.items():
        if key not in table and default is None:
            raise ParameterError(f"control.{key}", f"control.{key}: missing (type {kind!r} needs "
                                 f"{', '.join(k for k, d in known.items() if d is None)})")
        value = table.get(key, default)
        if key == "function":
            values[key] = _function_name(value)
        elif key in _SCALARS:
            values[key] = _number(value, f"control.{key}")
        else:
            values[key] = tuple(_vector(value, f"control.{key}", nu, system))
    spec = ControlSpec(str(kind), values, None if base is None else str(base))
    if spec.type == "pd":
        actuated_coordinates(system)  # refused now, not at step 0, when an input drives no one joint
    return spec


def make_controller(controller: Controller | ControlSpec | Mapping[str, Any] | None,
                    system: System) -> Controller | None:
    """A callable from a callable, a :class:`ControlSpec` or a ``[control]``-shaped mapping."""
    if controller is None:
        return None
    if system.control_size == 0:
        raise OptionError(f"controller: the {system.type_name} system takes no control input")
    if isinstance(controller, Mapping):
        try:
            controller = parse_control(controller, system)
        except ParameterError as exc:
            raise OptionError(str(exc)) from exc
    if isinstance(controller, ControlSpec):
        return controller.make(system)
    if not callable(controller):
        raise OptionError(f"controller: expected a callable f(t, q, v) -> u or a [control] table, "
                          f"got {type(controller).__name__}")
    return controller


def check_output(value: Any, system: System, step: int, t: float, where: str | None = None) -> FloatArray:
    """``value`` as (nu,) finite floats, or a one-line :class:`OptionError` naming the step
    (or ``where``)."""
    where = where or f"controller output at step {step} (t={t:.6g})"
    if not _numeric(value):  # '1.0' or True would convert silently: a controller returns numbers
        raise OptionError(f"{where}: not an array of numbers: {_short(value)} ({type(value).__name__})")
    try:
        u = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{where}: not an array of numbers: {_short(value)}") from exc
    nu = system.control_size
    if u.ndim != 1 or u.shape[0] != nu:
        raise OptionError(f"{where}: expected {nu} values ({', '.join(system.control_names())}), "
                          f"got shape {u.shape}")
    bad = np.flatnonzero(~np.isfinite(u))
    if bad.size:
        names = system.control_names()
        raise OptionError(f"{where}: non-finite value(s) {', '.join(f'{names[i]}={u[i]}' for i in bad)}")
    return u


def _numeric(value: Any) -> bool:
    """Whether ``value`` is a number or an array (or nested sequence) of real numbers, not a
    string, bytes, bool or None."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return False
    if array.dtype.kind in "iuf":
        return True
    if array.dtype.kind != "O":
        return False  # strings, bytes, bools, complex, dates
    return all(isinstance(item, int | float | np.integer | np.floating) and not isinstance(item, bool)
               for item in array.reshape(-1))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def actuated_coordinates(system: System) -> tuple[NDArray[np.int64], NDArray[np.int64], FloatArray]:
    """``(q index, v index, gain)`` of the coordinate each input drives: ``B e_i = gain e_j``
    (textbook systems, ``q = v`` coordinates) or a MuJoCo actuator's hinge/slide joint and its
    gear. An input that drives no single coordinate is an :class:`OptionError` naming it."""
    model = getattr(system, "model", None)
    if model is not None and hasattr(model, "actuator_trnid"):
        return _mujoco_coordinates(system, model)
    B = getattr(system, "B", None)
    if B is None:
        raise OptionError(f"control: PD needs the coordinates the inputs drive; the {system.type_name} "
                          "system does not say")
    B = np.asarray(B, dtype=np.float64)
    rows, gains = [], []
    for i in range(B.shape[1]):
        nonzero = np.flatnonzero(B[:, i])
        if nonzero.size != 1:
            raise OptionError(f"control: PD needs input {i} of {system.type_name} to drive one coordinate; "
                              f"its column of B is {B[:, i].tolist()}")
        rows.append(int(nonzero[0]))
        gains.append(float(B[nonzero[0], i]))
    index = np.array(rows, dtype=np.int64)
    return index, index, np.array(gains)


def _mujoco_coordinates(system: System, model: Any) -> tuple[NDArray[np.int64], NDArray[np.int64], FloatArray]:
    import mujoco

    q_index, v_index = [], []
    names = system.control_names()
    for i in range(int(model.nu)):
        joint = int(model.actuator_trnid[i, 0])
        if (int(model.actuator_trntype[i]) != int(mujoco.mjtTrn.mjTRN_JOINT)
                or int(model.jnt_type[joint]) not in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                      int(mujoco.mjtJoint.mjJNT_SLIDE))):
            raise OptionError(f"control: PD needs actuator {names[i]!r} to drive a hinge or slide joint")
        q_index.append(int(model.jnt_qposadr[joint]))
        v_index.append(int(model.jnt_dofadr[joint]))
    return (np.array(q_index, dtype=np.int64), np.array(v_index, dtype=np.int64),
            np.array(model.actuator_gear[:, 0], dtype=np.float64))


def _pd(system: System, values: Mapping[str, Any]) -> Controller:
    """``u = kp (target(t) - q_a) - kd v_a`` (see the module docstring)."""
    q_index, v_index, _ = actuated_coordinates(system)
    kp, kd, target = values["kp"], values["kd"], values["target"]
    amplitude, frequency, phase, start = (values[k] for k in ("amplitude", "frequency", "phase", "start"))

    def controller(t: float, q: FloatArray, v: FloatArray) -> FloatArray:
        goal = target
        if t >= start and np.any(amplitude):
            goal = target + amplitude * np.sin(2.0 * math.pi * frequency * (t - start) + phase)
        return kp * (goal - q[q_index]) - kd * v[v_index]

    return controller


def _import(name: str, base: str | None) -> Controller:
    """``module:function``: imported as a module, else from ``base/module.py`` (the scene's
    directory); one clear error when neither exists or the attribute is not callable."""
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        candidate = Path(base or ".") / (module_name.replace(".", "/") + ".py")
        if not candidate.is_file():
            raise OptionError(f"control.function: cannot import module {module_name!r} ({exc}; "
                              f"no {candidate} either)") from exc
        spec = importlib.util.spec_from_file_location(f"contactopt_control_{candidate.stem}", candidate)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    function = getattr(module, attr, None)
    if not callable(function):
        raise OptionError(f"control.function: {module_name!r} has no callable {attr!r}")
    return function


def _function_name(value: Any) -> str:
    if not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":")):
        raise ParameterError("control.function", f"control.function: expected 'module:function', got {value!r}")
    return value


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParameterError(key, f"{key}: expected a finite number, got {value!r}")
    return float(value)


def _vector(value: Any, key: str, nu: int, system: System) -> list[float]:
    """A number (every input) or ``nu`` finite numbers."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [_number(value, key)] * nu
    if not isinstance(value, list | tuple) or len(value) != nu:
        raise ParameterError(key, f"{key}: expected a number or {nu} numbers (inputs "
                             f"{', '.join(system.control_names())}), got {value!r}")
    return [_number(x, key) for x in value]
