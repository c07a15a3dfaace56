"""Budgets and bounds checked before work starts, so that a unit slip (``dt = 1e-300``,
``k = 100000``) is one clear line instead of a run that never ends or an allocation that
cannot succeed.

* **Steps**: a run plans ``round(duration / dt)`` steps; more than the step budget
  (:data:`DEFAULT_MAX_STEPS` = 10**6 unless raised by ``simulate(..., max_steps=...)``, the
  scene key ``[scene] max_steps`` or the CLI's ``--max-steps``) is refused before the first
  step, and so is a ``dt`` larger than ``duration`` (a run of no step).
* **Sizes**: an option that scales an allocation (the friction directions ``k`` of ``lcp`` and
  ``anitescu``) is checked against :data:`MAX_ALLOCATION_BYTES` (4 GiB) and the memory the
  machine has available, before the array is made; the error names the option and the size.
* **Counts**: iteration and pivot budgets given as options must be integers in range
  (:func:`count_option`), so a string or a negative budget is refused by name.
"""

from __future__ import annotations

import math
import operator
import os
from typing import Any

from contactopt.core.errors import BudgetError, OptionError

__all__ = ["DEFAULT_MAX_STEPS", "MAX_ALLOCATION_BYTES", "check_allocation", "check_max_steps",
           "count_option", "plan_steps"]

#: Steps a run may plan unless the caller raises the budget (10**6: a million programs
#: solved is hours of work for most formulations; ``dt = 1e-300`` is a unit slip, not a plan).
DEFAULT_MAX_STEPS = 1_000_000

#: Bytes one array implied by an option may take (4 GiB), and never more than is available.
MAX_ALLOCATION_BYTES = 4 * 2**30


def check_max_steps(value: Any, where: str = "max_steps") -> int:
    """``value`` as a step budget: an integer >= 1 (an integral float such as ``1e7`` from TOML
    counts), or a one-line :class:`OptionError` naming ``where``."""
    number = value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise OptionError(f"{where} must be an integer >= 1 (a number of steps), got {value!r}")
    return number


def plan_steps(dt: float, duration: float, max_steps: int | None = None, where: str = "") -> int:
    """The number of steps of a run, ``round(duration / dt)``, checked against the budget.

    Raises :class:`~contactopt.core.errors.BudgetError` when ``dt > duration`` (the run would have
    no step, or one step past the end) and when the count exceeds ``max_steps`` (default
    :data:`DEFAULT_MAX_STEPS`); the message names both numbers and how to raise the budget.
    """
    budget = DEFAULT_MAX_STEPS if max_steps is None else check_max_steps(max_steps)
    prefix = f"{where}: " if where else ""
    if dt > duration * (1.0 + 1e-9):
        raise BudgetError(f"{prefix}dt = {dt:g} is larger than duration = {duration:g}: no step fits in "
                          "the run (use a dt <= duration)")
    ratio = duration / dt  # inf when it overflows (1e300 / 1e-300)
    if not math.isfinite(ratio) or ratio > budget + 0.5:
        count = "more than 1e308" if not math.isfinite(ratio) else f"{ratio:.3g}"
        raise BudgetError(f"{prefix}duration / dt = {duration:g} / {dt:g} = {count} steps exceeds the step budget "
                          f"of {budget} (raise it with max_steps, --max-steps or [scene] max_steps)")
    return max(1, round(ratio))


def count_option(options: Any, key: str, solver: str, default: int, minimum: int = 0) -> int:
    """``options[key]`` (or ``default``) as an integer >= ``minimum``; a string, a float with a
    fraction, a bool or a smaller number is a one-line :class:`OptionError` naming the solver
    and the option (an iteration or pivot budget must be a count)."""
    value = options.get(key, default) if hasattr(options, "get") else default
    try:
        if isinstance(value, bool):
            raise TypeError
        number = int(value) if isinstance(value, float) and value.is_integer() else operator.index(value)
    except (TypeError, ValueError, OverflowError):
        raise OptionError(f"solver {solver!r}: {key} must be an integer >= {minimum}, got {value!r}") from None
    if number < minimum:
        raise OptionError(f"solver {solver!r}: {key} must be an integer >= {minimum}, got {value!r}")
    return number


def available_memory() -> int | None:
    """Bytes of memory available now (Linux ``SC_AVPHYS_PAGES``), None where unknown."""
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_allocation(entries: float, what: str, option: str, value: Any, where: str) -> None:
    """Refuse an array of ``entries`` float64 values implied by ``option = value`` (of
    ``where``, e.g. formulation 'lcp') when it exceeds :data:`MAX_ALLOCATION_BYTES` or the
    available memory: one line naming the option, the array and its size."""
    size = float(entries) * 8.0
    limit = float(MAX_ALLOCATION_BYTES)
    free = available_memory()
    if free is not None:
        limit = min(limit, float(free))
    if size > limit:
        raise BudgetError(f"{where}: {option} = {value!r} implies {what} of {_bytes(size)}, more than the "
                          f"{_bytes(limit)} allowed (4 GiB, or the available memory): lower {option}")


def _bytes(size: float) -> str:
    for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"
