"""Formulation registry: ``names()``, ``get(name)``; one module per formulation."""

from __future__ import annotations

from typing import TypeVar

from contactopt import plugins
from contactopt.errors import RegistrationError, UnknownNameError
from contactopt.formulations.anitescu import Anitescu
from contactopt.formulations.base import Formulation, StepResult
from contactopt.formulations.ccp import ConeComplementarity
from contactopt.formulations.coulomb import CoulombFormulation
from contactopt.formulations.gauss import FrictionIgnoredWarning, Gauss
from contactopt.formulations.lcp import StewartTrinkleLCP
from contactopt.formulations.regularized import Regularized
from contactopt.formulations.sap import SAP

__all__ = ["Formulation", "FrictionIgnoredWarning", "StepResult", "get", "names"]

_REGISTRY: dict[str, Formulation] = {
    f.name: f for f in (Gauss(), StewartTrinkleLCP(), Anitescu(), ConeComplementarity(), Regularized())
}
_REGISTRY[SAP.name] = SAP()
_REGISTRY[CoulombFormulation.name] = CoulombFormulation()


def names() -> list[str]:
    """Every registered formulation name."""
    return list(_REGISTRY)


def get(name: str) -> Formulation:
    """The formulation called ``name``; an unknown name lists the known ones."""
    try:
        return _REGISTRY[name.strip().lower()]
    except KeyError:
        raise UnknownNameError(f"unknown formulation {name!r}; known formulations: "
                               f"{', '.join(_REGISTRY)}") from None


__all__ += ["register"]

_F = TypeVar("_F", bound="type[Formulation] | Formulation")


def _as_formulation(obj: object) -> tuple[str, Formulation]:
    """A Formulation subclass (instantiated without arguments) or instance, checked."""
    import inspect

    if isinstance(obj, type) and issubclass(obj, Formulation):
        if inspect.isabstract(obj):
            raise RegistrationError(f"formulation class {obj.__name__} does not define build and recover")
        obj = obj()
    if not isinstance(obj, Formulation):
        raise RegistrationError(f"expected a Formulation subclass, got {obj!r}")
    name = plugins.check_name(getattr(obj, "name", None), "formulation")
    if not isinstance(getattr(obj, "description", None), str):
        raise RegistrationError(f"formulation {name!r}: needs a one-line `description` string")
    from contactopt.integrators import continuous_names  # methods share the namespace of `simulate`

    if name in continuous_names():
        raise RegistrationError(f"formulation {name!r}: the name is taken by a built-in method")
    return name, obj


_REGISTRY = plugins.Registry("formulation", "contactopt.formulations", _REGISTRY, _as_formulation)


def register(formulation: _F) -> _F:
    """Make a formulation available by its ``name`` to ``simulate``, ``formulate``,
    ``compare`` and the CLI. Takes a :class:`Formulation` subclass (instantiated without
    arguments) or an instance; returns it unchanged, so it works as a class decorator.

    Raises :class:`~contactopt.errors.RegistrationError` if the name is taken or malformed.
    Installed packages can instead declare the class in the entry-point group
    ``contactopt.formulations`` (see ``docs/extending.md``).
    """
    name, instance = _as_formulation(formulation)
    assert isinstance(_REGISTRY, plugins.Registry)  # made one just above
    _REGISTRY.add(name, instance)
    return formulation
