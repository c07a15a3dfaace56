"""System registry: the types scene files name in ``[system] type = ...``."""

from __future__ import annotations

import inspect
from typing import TypeVar

from contactopt.core import plugins
from contactopt.core.errors import RegistrationError, UnknownNameError
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System
from contactopt.systems.brick import Brick
from contactopt.systems.cart import Cart
from contactopt.systems.four_bar import FourBar
from contactopt.systems.mjcf.system import MjcfSystem
from contactopt.systems.mjcf.urdf import UrdfSystem
from contactopt.systems.pendulums import CartesianPendulum, CartPole, DoublePendulum, Pendulum
from contactopt.systems.planar_body import PlanarBall, PlanarBody
from contactopt.systems.point_mass import PointMass2D
from contactopt.systems.rigid3d import Rigid3D, RigidBody

__all__ = ["CONTACT_PARAMETERS", "Brick", "Cart", "CartPole", "CartesianPendulum", "DoublePendulum",
           "FourBar", "MjcfSystem",
           "Parameter", "ParameterError", "Pendulum", "PlanarBall", "PlanarBody", "PointMass2D",
           "Rigid3D", "RigidBody", "System", "UrdfSystem", "get", "names"]

_REGISTRY: dict[str, type[System]] = {cls.type_name: cls for cls in (
    Cart, PointMass2D, Brick, PlanarBody, PlanarBall, Rigid3D,
    Pendulum, DoublePendulum, CartPole, CartesianPendulum, FourBar, MjcfSystem, UrdfSystem)}


def names() -> list[str]:
    return list(_REGISTRY)


def get(type_name: str) -> type[System]:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise UnknownNameError(f"unknown system type {type_name!r}; known types: "
                               f"{', '.join(_REGISTRY)}") from None


__all__ += ["register"]

_S = TypeVar("_S", bound=type[System])


def _as_system(obj: object) -> tuple[str, type[System]]:
    """A concrete System subclass with a usable ``type_name`` and declared parameters."""
    if not (isinstance(obj, type) and issubclass(obj, System)):
        raise RegistrationError(f"expected a System subclass, got {obj!r}")
    if inspect.isabstract(obj):
        raise RegistrationError(f"system class {obj.__name__} does not define dynamics and contacts")
    name = plugins.check_name(getattr(obj, "type_name", None), "system type")
    if not isinstance(getattr(obj, "description", None), str):
        raise RegistrationError(f"system type {name!r}: needs a one-line `description` string")
    if not all(isinstance(p, Parameter) for p in obj.parameters):
        raise RegistrationError(f"system type {name!r}: `parameters` must be a tuple of Parameter")
    return name, obj


_REGISTRY = plugins.Registry("system type", "contactopt.systems", _REGISTRY, _as_system)


def register(cls: _S) -> _S:
    """Make a :class:`System` subclass available to scene files as ``[system] type =
    cls.type_name``; returns it unchanged, so it works as a class decorator.

    Raises :class:`~contactopt.core.errors.RegistrationError` if the type name is taken or the
    class is incomplete. Installed packages can instead declare the class in the entry-point
    group ``contactopt.systems`` (see ``docs/extending.md``).
    """
    name, found = _as_system(cls)
    assert isinstance(_REGISTRY, plugins.Registry)  # made one just above
    _REGISTRY.add(name, found)
    return cls
