"""Checks of the values read from scene files and ``[system]`` tables, shared by
:mod:`contactopt.scenes.loading` and the system types that read more than scalar parameters.

Each raises :class:`~contactopt.systems.base.ParameterError` whose ``key`` is the full dotted
key (``scene.dt``, ``system.bodies[1].mass``) and whose message starts with it;
:func:`contactopt.load_scene` adds the file name.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.base import ParameterError

__all__ = ["join", "number", "reject_unknown", "string", "table", "vector"]


def join(prefix: str, key: str) -> str:
    """``"scene", "dt"`` -> ``"scene.dt"``; an empty prefix gives ``key``."""
    return f"{prefix}.{key}" if prefix else key


def table(data: Mapping[str, Any], key: str, prefix: str = "", *, required: bool = False) -> dict[str, Any]:
    """The sub-table ``data[key]`` ({} if absent and not ``required``)."""
    label = join(prefix, key)
    if key not in data:
        if required:
            raise ParameterError(label, f"missing table [{label}]")
        return {}
    value = data[key]
    if not isinstance(value, Mapping):
        raise ParameterError(label, f"{label}: expected a table, got {type(value).__name__}")
    return dict(value)


def reject_unknown(data: Mapping[str, Any], known: Collection[str], prefix: str = "") -> None:
    """The first key of ``data`` not in ``known`` is an error listing the known ones."""
    for key in data:
        if key not in known:
            label = join(prefix, key)
            raise ParameterError(label, f"unknown key {label!r} (known: {', '.join(sorted(known))})")


def number(value: Any, key: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    """A finite number, ``> 0`` if ``positive``, ``>= 0`` if ``nonnegative``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParameterError(key, f"{key}: expected a finite number, got {value!r}")
    if positive and not value > 0:
        raise ParameterError(key, f"{key}: must be > 0, got {value!r}")
    if nonnegative and not value >= 0:
        raise ParameterError(key, f"{key}: must be >= 0, got {value!r}")
    return float(value)


def vector(value: Any, key: str, length: int, what: str = "") -> NDArray[np.float64]:
    """A list of ``length`` finite numbers; ``what`` says whose length it is in the message
    (``" for the cart system"``)."""
    if not isinstance(value, list | tuple):
        raise ParameterError(key, f"{key}: expected a list of {length} numbers, got {value!r}")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in value):
        raise ParameterError(key, f"{key}: expected a list of finite numbers, got {list(value)!r}")
    if len(value) != length:
        raise ParameterError(key, f"{key}: expected {length} values{what}, got {len(value)}: {list(value)!r}")
    return np.array(value, dtype=np.float64)


def string(value: Any, key: str) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ParameterError(key, f"{key}: expected a string, got {value!r}")
    return value
