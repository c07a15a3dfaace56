"""The grid a ``contactopt compare`` names, checked before any run: comma lists without empty
items, step sizes that are numbers, formulations whose options exist, and runs within the
step budget. A grid that cannot run is one ``contactopt: error:`` line, not a table of error
rows with an empty stderr."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from contactopt.core.budgets import plan_steps
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.scenes.loading import Scene


def split_list(text: str | None, option: str) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]`` (None when not given); an empty item (``a,,b``, a trailing
    or leading comma, ``,``) is an :class:`OptionError` naming the option and the item."""
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    for index, part in enumerate(parts):
        if not part:
            raise OptionError(f"{option} {text!r}: item {index + 1} of {len(parts)} is empty "
                              "(expected a comma-separated list without empty items)")
    return parts


def step_size(text: str) -> float:
    """One item of ``--dt``: a finite number > 0, or an :class:`OptionError` naming the item."""
    try:
        value = float(text)
    except ValueError:
        raise OptionError(f"--dt: item {text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise OptionError(f"--dt: item {text!r} is not a positive number")
    return value


def check_grid(scene: Scene, formulations: Sequence[str] | None, dts: Sequence[float] | None,
               duration: float | None) -> None:
    """Refuse a grid with an unknown formulation option (``lcp:kk=3``) or a step size over the
    step budget (or larger than the duration) before any cell runs."""
    from contactopt import integrators
    from contactopt.analysis.compare import parse_formulation

    horizon = float(scene.duration if duration is None else duration)
    for dt in dts or [scene.dt]:
        plan_steps(dt, horizon, scene.max_steps, scene.name)
    for spec in formulations or []:
        method, options = parse_formulation(spec)
        if method not in integrators.names():
            raise OptionError(f"--formulations: unknown formulation {method!r} in {spec!r}; known: "
                              f"{', '.join(integrators.names())}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                integrators.make_stepper(scene.system, method, scene.solver, float((dts or [scene.dt])[0]),
                                         {**scene.options, **options})
        except ContactoptError as exc:
            raise OptionError(f"--formulations {spec!r}: {exc}") from exc
