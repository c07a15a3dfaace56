"""Actuator activations of an MJCF model (MuJoCo's ``act``, ``na`` of them): their initial
values and their advance over a step.

MuJoCo documentation, "Computation: Actuation model": an actuator with dynamics (``dyntype``
``integrator``, ``filter``, ``filterexact``, ``muscle``, ``user``) has an activation ``act``
whose rate ``act_dot`` MuJoCo computes in ``mj_fwdActuation`` from ``ctrl`` and ``act``
(integrator: ``ctrl``; filter: ``(ctrl - act) / tau``; muscle: its activation dynamics; user:
the callback). The force of the step uses ``act`` at the start of the step (with
``actearly``, MuJoCo's own ``mj_fwdActuation`` uses the next activation, computed with the
model's ``opt.timestep``). contactopt takes ``act_dot`` from MuJoCo (the system's evaluation
sets ``data.act`` and ``data.ctrl``) and advances it as MuJoCo's ``mj_advance`` does
(``mj_nextActivation``, engine_forward.c; "Computation: Numerical integration"):

* Euler: ``act' = act + h act_dot``; ``filterexact``: ``act' = act + act_dot tau (1 - exp(-h / tau))``
  (the exact solution of ``tau act_dot = ctrl - act`` over the step, ``tau >= mjMINVAL``);
* then clamped to ``actuator_actrange`` where ``actuator_actlimited``.

The model's integrator does not change this rule except RK4, whose four stages MuJoCo also
applies to ``act`` (unclamped within the step, this rule at the weighted rate at its end):
``regularized -o params=model`` follows them (:mod:`contactopt.integrators.runge_kutta`), every
other formulation steps an RK4 model as Euler (:mod:`.derivatives`), its activations too. A run
starts from the keyframe's ``act`` (``mj_resetDataKeyframe``), zeros without a keyframe
(``mj_resetData``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError

FloatArray = NDArray[np.float64]

#: MuJoCo's ``mjMINVAL``: the smallest time constant of a ``filterexact`` actuator.
MINVAL = 1e-15


class ActivationLaw:
    """Per activation of ``model``: its actuator's kind (``filterexact`` or not), time constant
    and ``actrange`` (``-inf, inf`` where the actuator is not ``actlimited``)."""

    def __init__(self, mujoco: Any, model: Any) -> None:
        na = int(model.na)
        self.owner = np.zeros(na, dtype=np.int_)
        for actuator in range(int(model.nu)):
            start, count = int(model.actuator_actadr[actuator]), int(model.actuator_actnum[actuator])
            if start >= 0:
                self.owner[start:start + count] = actuator
        dyntype = np.asarray(model.actuator_dyntype)[self.owner]
        self.exact = dyntype == int(mujoco.mjtDyn.mjDYN_FILTEREXACT)
        self.tau = np.maximum(MINVAL, np.asarray(model.actuator_dynprm, dtype=np.float64)[self.owner, 0])
        limited = np.asarray(model.actuator_actlimited, dtype=bool)[self.owner]
        ranges = np.asarray(model.actuator_actrange, dtype=np.float64)[self.owner]
        self.low = np.where(limited, ranges[:, 0], -np.inf)
        self.high = np.where(limited, ranges[:, 1], np.inf)

    def advance(self, act: FloatArray, act_dot: FloatArray, dt: float) -> FloatArray:
        """``act'`` from ``act`` and MuJoCo's ``act_dot`` over a step ``dt`` (module docstring)."""
        # MuJoCo's order of operations, so that act' rounds as mj_step's does
        step = np.where(self.exact, act_dot * self.tau * (1.0 - np.exp(-dt / self.tau)), act_dot * dt)
        return np.clip(act + step, self.low, self.high)


def initial_activation(model: Any, keyframe: int | None) -> FloatArray:
    """The keyframe's ``act`` (``mj_resetDataKeyframe``), or zeros (``mj_resetData``)."""
    if keyframe is None:
        return np.zeros(int(model.na))
    return np.array(model.key_act[keyframe], dtype=np.float64).reshape(int(model.na))


def refusal(model: Any, dt: float, source: str) -> str | None:
    """Why a step of ``dt`` cannot reproduce the model's activation dynamics, or None:
    an actuator plugin with activations (the plugin advances them itself), or ``actearly``
    actuators under a step other than the model's ``opt.timestep`` (MuJoCo's force then uses
    the next activation over ``opt.timestep``)."""
    if not int(model.na):
        return None
    actuators = range(int(model.nu))
    name = lambda i: model.actuator(i).name or f"actuator{i}"  # noqa: E731
    plugins = [name(i) for i in actuators
               if int(model.actuator_plugin[i]) >= 0 and int(model.actuator_actnum[i]) > 0]
    if plugins:
        return (f"{source}: actuator plugin(s) with activation states ({', '.join(plugins)}) advance them "
                "themselves; only formulation 'mujoco' runs them")
    early = [name(i) for i in actuators if int(model.actuator_actearly[i]) and int(model.actuator_actnum[i]) > 0]
    if early and float(dt) != float(model.opt.timestep):
        return (f"{source}: actuator(s) {', '.join(early)} have actearly, whose force MuJoCo takes at the "
                f"activation one opt.timestep = {float(model.opt.timestep):g} s ahead; run them with that dt "
                f"(got {float(dt):g})")
    return None


def check(model: Any, dt: float, source: str) -> None:
    """Raise :class:`OptionError` with :func:`refusal`'s reason, if any."""
    reason = refusal(model, dt, source)
    if reason is not None:
        raise OptionError(reason)
