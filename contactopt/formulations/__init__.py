"""Formulation registry: ``names()``, ``get(name)``; one module per formulation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from contactopt.core import plugins
from contactopt.core.errors import RegistrationError, UnknownNameError
from contactopt.formulations.anitescu import Anitescu
from contactopt.formulations.base import Formulation, StepResult
from contactopt.formulations.ccp import ConeComplementarity
from contactopt.formulations.coulomb import CoulombFormulation
from contactopt.formulations.gauss import FrictionIgnoredWarning, Gauss
from contactopt.formulations.lcp import StewartTrinkleLCP
from contactopt.formulations.regularized import Regularized
from contactopt.formulations.sap import SAP

if TYPE_CHECKING:
    from contactopt.systems.base import System

__all__ = ["METHOD_NAMES", "Formulation", "FrictionIgnoredWarning", "StepResult", "get", "names"]

#: The built-in methods that are not time-stepping formulations (:mod:`contactopt.integrators`,
#: the layer above, checks that it defines exactly these): formulations share the namespace of
#: ``simulate`` with them, so a plugin may not take one of these names.
METHOD_NAMES = ("ode", "variational", "compliant", "hybrid", "mujoco")

_REGISTRY: dict[str, Formulation] = {
    f.name: f for f in (Gauss(), StewartTrinkleLCP(), Anitescu(), ConeComplementarity(), Regularized())
}
_REGISTRY[SAP.name] = SAP()
_REGISTRY[CoulombFormulation.name] = CoulombFormulation()
#: The formulations :func:`contact_kind` knows by name.
_BUILT_IN = frozenset(_REGISTRY)


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


__all__ += ["ContactKind", "contact_kind"]


@dataclass(frozen=True)
class ContactKind:
    """The kind of program a formulation poses for a step with contacts, known before step 0.

    Attributes:
        kind: ``qp``, ``socp``, ``lcp`` or ``coulomb``.
        symmetric: for an LCP, whether its ``M`` can be symmetric (False: the Stewart-Trinkle
            LCP with friction rows, whose friction-cone rows couple ``mu n`` against ``-e^T``).
        why: what makes it that kind, for a refusal's message.
    """

    kind: str
    symmetric: bool = True
    why: str = ""


def contact_kind(name: str, options: Mapping[str, Any], system: System) -> ContactKind | None:
    """The kind of program the built-in formulation ``name`` (with ``options``) poses for a
    step of ``system`` once its contacts are in the program: what step 0 does not show when
    the bodies start apart (an MJCF model detects no contact until it is near). The
    friction rows decide it: :meth:`System.has_friction` (frames with tangent rows) makes
    ``ccp`` and ``sap`` programs SOCPs (``SOC(dim)`` per contact), the ``lcp``'s ``M``
    non-symmetric, and ``regularized -o cone=elliptic`` an SOCP in 3-D (in 2-D its cone is the
    pyramid). Another formulation (a plugin) may declare its own with a method
    ``contact_kind(options, system) -> ContactKind | None``. None when it is not known before a
    step: a plugin formulation without that method, ``regularized -o cone=model`` (the model's
    cone)."""
    if name not in _BUILT_IN:
        declare = getattr(get(name), "contact_kind", None)
        found = declare(options, system) if callable(declare) else None
        return found if isinstance(found, ContactKind) else None
    friction = system.has_friction()
    at = "at a contact with friction" if friction else "at a frictionless contact"
    if name in ("gauss", "anitescu"):
        return ContactKind("qp", why="its program is a QP")
    if name == "lcp":
        return ContactKind("lcp", symmetric=not friction,
                           why="its program is an LCP" + (" whose M is not symmetric (the friction rows)"
                                                           if friction else ""))
    if name in ("ccp", "sap"):
        return ContactKind("socp" if friction else "qp", why=f"its program {at} is an "
                           f"{'SOCP' if friction else 'QP'}")
    if name == "coulomb":
        return ContactKind("coulomb", why="its program is a Coulomb problem")
    if name == "regularized":
        cone = options.get("cone", Regularized.defaults["cone"])
        if cone == "pyramidal" or (cone == "elliptic" and not (friction and system.contact_dim == 3)):
            return ContactKind("qp", why=f"its program (cone={cone}) is a QP")
        if cone == "elliptic":
            return ContactKind("socp", why=f"its program (cone=elliptic) {at} is an SOCP")
    return None


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
    if name in METHOD_NAMES:
        raise RegistrationError(f"formulation {name!r}: the name is taken by a built-in method")
    return name, obj


_REGISTRY = plugins.Registry("formulation", "contactopt.formulations", _REGISTRY, _as_formulation)


def register(formulation: _F) -> _F:
    """Make a formulation available by its ``name`` to ``simulate``, ``formulate``,
    ``compare`` and the CLI. Takes a :class:`Formulation` subclass (instantiated without
    arguments) or an instance; returns it unchanged, so it works as a class decorator.

    Raises :class:`~contactopt.core.errors.RegistrationError` if the name is taken or malformed.
    Installed packages can instead declare the class in the entry-point group
    ``contactopt.formulations`` (see ``docs/extending.md``).
    """
    name, instance = _as_formulation(formulation)
    assert isinstance(_REGISTRY, plugins.Registry)  # made one just above
    _REGISTRY.add(name, instance)
    return formulation
