"""Type checks of the public functions' arguments (``simulate``, ``formulate``, ``solve``,
``compare``), made before any work: a wrong type is one :class:`ArgumentTypeError` naming the
function, the argument, what was given and what is expected, never an ``AttributeError`` from
deep inside nor a value taken silently (``dt="0.1"``).

What is accepted besides the documented types, on purpose:

* a scene given as a file path or a bundled problem name (``simulate("cart_wall")``), loaded
  by :func:`contactopt.scenes.loading.as_scene` as the CLI does;
* a list of names given as one string: a comma-separated list, as the CLI's ``--formulations``
  (``formulations="gauss"`` is ``["gauss"]``, ``"gauss,lcp"`` two names);
* a list of step sizes given as one number (``dts=0.1`` is ``[0.1]``).

A number is a real ``int``, ``float`` or NumPy scalar, never a ``bool`` or a string.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from contactopt.core.errors import OptionError

__all__ = [
    "ArgumentTypeError",
    "check_mapping",
    "check_name",
    "check_names",
    "check_number",
    "check_step_sizes",
    "given",
    "refuse",
]


class ArgumentTypeError(OptionError, TypeError):
    """An argument of a public function has the wrong type (or a value no number of that
    name can have): the message names the function, the argument, what was given and what is
    expected. A :class:`~contactopt.core.errors.OptionError` (so a ``ValueError``) and a ``TypeError``."""


def given(value: Any) -> str:
    """``str '0.1'``, ``list [('form', 'dual')]``: the type and a short repr of a value."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:59] + '…'}"


def refuse(function: str, name: str, value: Any, expected: str) -> ArgumentTypeError:
    return ArgumentTypeError(f"{function}: {name} must be {expected}, got {given(value)}")


def is_real(value: Any) -> bool:
    """A real number that is not a bool (nor a string, which ``float()`` would also take)."""
    return isinstance(value, numbers.Real | np.floating | np.integer) and not isinstance(value, bool | np.bool_)


def check_number(value: Any, name: str, function: str, *, positive: bool = True) -> float:
    """``value`` as a float: a finite real number (> 0 with ``positive``). Not a number at all
    is an :class:`ArgumentTypeError`; a number out of range an :class:`OptionError`."""
    if not is_real(value):
        raise refuse(function, name, value, "a positive number" if positive else "a finite number")
    number = float(value)
    if not math.isfinite(number) or (positive and not number > 0):
        raise OptionError(f"{function}: {name} must be a {'positive' if positive else 'finite'} number, "
                          f"got {value!r}")
    return number


def check_name(value: Any, name: str, function: str, example: str) -> str:
    """A name (a non-empty string), e.g. of a formulation or solver."""
    if not isinstance(value, str) or not value.strip():
        raise refuse(function, name, value, f"a name (a non-empty str, e.g. {example!r})")
    return value


def check_mapping(value: Any, name: str, function: str) -> dict[str, Any]:
    """A mapping of option names (strings) to values, as a new dict (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        example = "{'max_iter': 100}" if "solver" in name else "{'form': 'dual'}"
        raise refuse(function, name, value, f"a mapping (dict) of option names to values, e.g. {example}")
    bad = [key for key in value if not isinstance(key, str)]
    if bad:
        raise ArgumentTypeError(f"{function}: {name} must have option names (str) as keys, got the key {given(bad[0])}")
    return dict(value)


def check_names(value: Any, name: str, function: str, example: str) -> list[str] | None:
    """None, a list (or tuple) of names, or one string read as a comma-separated list."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",")]
        if not all(items):
            raise ArgumentTypeError(f"{function}: {name} {value!r} has an empty item (expected a name or a "
                                    f"comma-separated list of names, e.g. {example!r})")
        return items
    if not isinstance(value, Sequence) or isinstance(value, bytes):
        raise refuse(function, name, value, f"a list of names (or one comma-separated str, e.g. {example!r})")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ArgumentTypeError(f"{function}: {name}[{index}] must be a name (a non-empty str), got {given(item)}")
    return list(value)


def check_step_sizes(value: Any, name: str, function: str) -> list[float] | None:
    """None, one step size, or a list of them: each a finite number > 0."""
    if value is None:
        return None
    if is_real(value):
        return [check_number(value, name, function)]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise refuse(function, name, value, "a list of step sizes (positive numbers) or one step size")
    return [check_number(item, f"{name}[{index}]", function) for index, item in enumerate(value)]
