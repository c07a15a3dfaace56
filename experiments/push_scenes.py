"""Scenes shared by ``sysid.py`` and ``gradients.py``: a rigid3d box pushed along x by a known
force for a while and then released, a sphere thrown horizontally at a wall, and the closed
forms (Coulomb friction, a perfectly plastic impact) their final positions follow.

Why a push: with gravity and contact alone every force on a box is proportional to its mass,
so its motion is the same for every mass (``m vdot = -mu m g``); a known force ``F`` makes the
mass observable (``vdot = F / m - mu g`` while pushed, ``-mu g`` after), and pushing for only
part of the run separates ``mu`` from ``m`` (two accelerations, two unknowns). ``rigid3d``
takes no control input, so :class:`PushedRigid3D` adds one: a force along world x on the
first body, the input ``u`` of :mod:`contactopt.scenes.control` (zero-order hold over each step).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from common import ROOT
from numpy.typing import ArrayLike, NDArray

import contactopt as co
from contactopt.model.step import Dynamics
from contactopt.systems.rigid3d import Rigid3D

FloatArray = NDArray[np.float64]
G = 9.81

__all__ = ["FORMULATIONS", "G", "PushedRigid3D", "ball_wall_final", "ball_wall_scene", "box_push_final",
           "push_controller", "pushed_box_scene", "rolling_speed", "stick_threshold"]

#: Per formulation the solver and options these experiments run it with. ``regularized``
#: takes contacts within 1 cm (``epsilon``; default 0): a box resting exactly on the ground
#: (phi = 0) would otherwise have its contacts enter and leave the program within the
#: difference step of the derivative, where the step is not differentiable.
FORMULATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "lcp": ("lemke", {}),
    "anitescu": ("clarabel", {}),
    "ccp": ("clarabel", {}),
    "regularized": ("clarabel", {"epsilon": 0.01}),
    "sap": ("clarabel", {}),
}


class PushedRigid3D(Rigid3D):
    """:class:`~contactopt.systems.rigid3d.Rigid3D` with one input: a force (N) along world x
    applied at the centre of mass of the first body (``tau += [u, 0, 0, 0, 0, 0, ...]``)."""

    @property
    def control_size(self) -> int:
        return 1

    def control_names(self) -> tuple[str, ...]:
        return (f"{self.bodies[0].name}.push_x",)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        push = self.control if u is None else u
        if push is None:
            return super().dynamics(q, v)
        wrench = np.zeros(self.nv)
        wrench[0] = float(np.asarray(push, dtype=np.float64).reshape(-1)[0])
        return super().dynamics(q, v, wrench)


def push_controller(force: float, push_time: float, dt: float) -> Callable[[float, FloatArray, FloatArray],
                                                                              FloatArray]:
    """``u(t) = force`` for the steps that start before ``push_time``, 0 after (the half-step
    margin keeps a step starting at ``push_time`` itself off by rounding)."""
    def control(t: float, q: FloatArray, v: FloatArray) -> FloatArray:
        return np.array([force if t < push_time - 0.5 * dt else 0.0])
    return control


def pushed_box_scene(v0: float = 0.0, duration: float = 0.6, dt: float = 0.01) -> co.Scene:
    """``problems/box_slide.toml``'s cube (1 kg, half-size 0.1 m, ``mu = 0.5``) on the ground
    as a :class:`PushedRigid3D`, launched along x at ``v0``."""
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    system = scene.system
    assert isinstance(system, Rigid3D)
    pushed = PushedRigid3D(system.bodies, {"mu": system.mu, "restitution": system.restitution},
                           gravity=system.gravity)
    velocity = np.zeros(pushed.nv)
    velocity[0] = v0
    return dataclasses.replace(scene, system=pushed, v0=velocity, dt=dt, duration=duration,
                               name="box_push", description="cube pushed along x, then released")


def box_push_final(force: float, push_time: float, mu: float, mass: float = 1.0,
                   g: float = G) -> tuple[float, float]:
    """Distance a box at rest slides, and its derivative with respect to ``force``, when
    pushed by ``force`` for ``push_time`` and then released (Coulomb friction, continuous
    time): ``a = F / m - mu g``, ``v1 = a T``, ``x = a T^2 / 2 + v1^2 / (2 mu g)``,
    ``dx/dF = T^2 / m (1/2 + a / (mu g))``; at or below ``F = mu m g`` it sticks: 0 and 0."""
    accel = force / mass - mu * g
    if accel <= 0.0:
        return 0.0, 0.0
    distance = 0.5 * accel * push_time**2 + (accel * push_time) ** 2 / (2.0 * mu * g)
    return distance, push_time**2 / mass * (0.5 + accel / (mu * g))


def ball_wall_scene(duration: float = 0.6, dt: float = 0.01) -> co.Scene:
    """``experiments/ball_wall.toml``: a solid sphere thrown horizontally at a vertical wall."""
    scene = co.load_scene(ROOT / "experiments" / "ball_wall.toml")
    return dataclasses.replace(scene, dt=dt, duration=duration)


def ball_wall_final(vx: float, distance: float, duration: float, mu: float,
                    g: float = G) -> dict[str, Any]:
    """Final height change ``z_T - z_0`` of a solid sphere thrown at ``vx`` toward a wall
    ``distance`` away (centre to contact) under gravity along the wall, and its derivative
    with respect to ``vx``, in continuous time with a perfectly plastic impact (restitution 0:
    the normal velocity is stopped) and Coulomb friction (Stronge, *Impact Mechanics*, 2000,
    ch. 4, a sphere's oblique impact).

    The wall is hit at ``t_h = d / vx`` with vertical velocity ``-g t_h``. The normal impulse is
    ``m vx``; a tangential impulse ``P`` changes the contact point's velocity by ``P (1/m + r^2 / I)
    = 7/2 P / m`` (``I = 2/5 m r^2``), so the point stops (rolling) if ``g t_h <= 7/2 mu vx``:
    ``vz+ = 5/7 vz``; else it slides and ``vz+ = vz + mu vx``. After the impact no force
    presses the ball on the wall (gravity is parallel to it): free fall. Hence, with
    ``s = T - t_h``: ``z_T - z_0 = -g T^2 / 2 + dz`` with ``dz = 2/7 g t_h s`` (rolling,
    ``d/dvx = 2/7 g (s - t_h) (-d / vx^2)``) or ``mu (vx T - d)`` (sliding, ``d/dvx = mu T``);
    ``dz = 0`` if the ball does not reach the wall (``vx T < d``)."""
    free_fall = -0.5 * g * duration**2
    if vx * duration <= distance:
        return {"regime": "misses", "dz": free_fall, "dz_dvx": 0.0, "dx_dvx": duration}
    t_hit = distance / vx
    after = duration - t_hit
    if g * t_hit <= 3.5 * mu * vx:
        return {"regime": "rolls", "dz": free_fall + 2.0 / 7.0 * g * t_hit * after,
                "dz_dvx": 2.0 / 7.0 * g * (after - t_hit) * (-distance / vx**2), "dx_dvx": 0.0}
    return {"regime": "slides", "dz": free_fall + mu * (vx * duration - distance), "dz_dvx": mu * duration,
            "dx_dvx": 0.0}


def stick_threshold(mu: float, mass: float = 1.0, g: float = G) -> float:
    """The push ``mu m g`` below which a box at rest does not move."""
    return mu * mass * g


def rolling_speed(distance: float, mu: float, g: float = G) -> float:
    """The throw speed above which the ball rolls on the wall at impact: ``vx^2 = 2 g d / (7 mu)``."""
    return math.sqrt(2.0 * g * distance / (7.0 * mu))
