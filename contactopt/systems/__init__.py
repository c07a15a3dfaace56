"""System registry: the types scene files name in ``[system] type = ...``."""

from __future__ import annotations

from contactopt.errors import UnknownNameError
from contactopt.mujoco.system import MjcfSystem
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System
from contactopt.systems.brick import Brick
from contactopt.systems.cart import Cart
from contactopt.systems.four_bar import FourBar
from contactopt.systems.pendulums import CartesianPendulum, CartPole, DoublePendulum, Pendulum
from contactopt.systems.planar_body import PlanarBall, PlanarBody
from contactopt.systems.point_mass import PointMass2D
from contactopt.systems.rigid3d import Rigid3D, RigidBody

__all__ = ["CONTACT_PARAMETERS", "Brick", "Cart", "CartPole", "CartesianPendulum", "DoublePendulum",
           "FourBar", "MjcfSystem",
           "Parameter", "ParameterError", "Pendulum", "PlanarBall", "PlanarBody", "PointMass2D",
           "Rigid3D", "RigidBody", "System", "get", "names"]

_REGISTRY: dict[str, type[System]] = {cls.type_name: cls for cls in (
    Cart, PointMass2D, Brick, PlanarBody, PlanarBall, Rigid3D,
    Pendulum, DoublePendulum, CartPole, CartesianPendulum, FourBar, MjcfSystem)}


def names() -> list[str]:
    return list(_REGISTRY)


def get(type_name: str) -> type[System]:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise UnknownNameError(f"unknown system type {type_name!r}; known types: "
                               f"{', '.join(_REGISTRY)}") from None
