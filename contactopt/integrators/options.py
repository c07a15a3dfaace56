"""Option checking shared by the continuous-time baselines (``compliant``, ``hybrid``).

Every check raises :class:`~contactopt.core.errors.OptionError` whose message names the method
and the key, so a bad scene or command line fails before the first step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from contactopt.core.errors import OptionError


def merge_options(owner: str, defaults: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{**defaults, **given}``; unknown keys are rejected with the list of known ones."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise OptionError(f"formulation {owner!r}: unknown option(s) {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(defaults)}")
    return {**defaults, **given}


def choice(owner: str, options: Mapping[str, Any], key: str, allowed: Iterable[str]) -> str:
    """``options[key]`` if it is one of ``allowed``."""
    allowed = tuple(allowed)
    value = options[key]
    if value not in allowed:
        raise OptionError(f"formulation {owner!r}: {key} must be one of {', '.join(map(repr, allowed))}, "
                          f"got {value!r}")
    return str(value)


def optional_number(owner: str, options: Mapping[str, Any], key: str, *, minimum: float = 0.0,
                    strict: bool = True, finite: bool = True, optional: bool = True) -> float | None:
    """``options[key]`` as a float ``> minimum`` (``>=`` if not ``strict``); ``inf`` allowed
    unless ``finite``; ``None`` allowed (and returned) if ``optional``."""
    value = options[key]
    if value is None and optional:
        return None
    bound = ">" if strict else ">="
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) \
            or (finite and math.isinf(value)) or not (value > minimum if strict else value >= minimum):
        kind = "a finite number" if finite else "a number"
        raise OptionError(f"formulation {owner!r}: {key} must be {kind} {bound} {minimum:g}"
                          f"{' or omitted' if optional else ''}, got {value!r}")
    return float(value)


def number(owner: str, options: Mapping[str, Any], key: str, *, minimum: float = 0.0, strict: bool = True,
           finite: bool = True) -> float:
    """``options[key]`` as a float ``> minimum`` (``>=`` if not ``strict``); ``inf`` allowed
    unless ``finite``."""
    value = optional_number(owner, options, key, minimum=minimum, strict=strict, finite=finite, optional=False)
    assert value is not None
    return value


def integer(owner: str, options: Mapping[str, Any], key: str, minimum: int = 1) -> int:
    """``options[key]`` as an integer ``>= minimum``."""
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise OptionError(f"formulation {owner!r}: {key} must be an integer >= {minimum}, got {value!r}")
    return int(value)
