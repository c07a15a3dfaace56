"""Formulation registry: ``names()``, ``get(name)``; one module per formulation."""

from __future__ import annotations

from contactopt.errors import UnknownNameError
from contactopt.formulations.anitescu import Anitescu
from contactopt.formulations.base import Formulation, StepResult
from contactopt.formulations.ccp import ConeComplementarity
from contactopt.formulations.gauss import FrictionIgnoredWarning, Gauss
from contactopt.formulations.lcp import StewartTrinkleLCP
from contactopt.formulations.regularized import Regularized
from contactopt.formulations.sap import SAP

__all__ = ["Formulation", "FrictionIgnoredWarning", "StepResult", "get", "names"]

_REGISTRY: dict[str, Formulation] = {
    f.name: f for f in (Gauss(), StewartTrinkleLCP(), Anitescu(), ConeComplementarity(), Regularized())
}
_REGISTRY[SAP.name] = SAP()


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
