"""System registry: the types scene files name in ``[system] type = ...``."""

from __future__ import annotations

from contactopt.errors import UnknownNameError
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System
from contactopt.systems.cart import Cart
from contactopt.systems.point_mass import PointMass2D

__all__ = ["CONTACT_PARAMETERS", "Cart", "Parameter", "ParameterError", "PointMass2D", "System",
           "get", "names"]

_REGISTRY: dict[str, type[System]] = {cls.type_name: cls for cls in (Cart, PointMass2D)}


def names() -> list[str]:
    return list(_REGISTRY)


def get(type_name: str) -> type[System]:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise UnknownNameError(f"unknown system type {type_name!r}; known types: "
                               f"{', '.join(_REGISTRY)}") from None
