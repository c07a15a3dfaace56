"""The search of :func:`contactopt.identification.excitation.excitation`: SLSQP within the
limits from a feasible start, with forward-difference Jacobians on shared points (Swevers,
Ganseman, Tukel, de Schutter and Van Brussel 1997, "Optimal robot excitation and identification":
the condition number of the stacked regressor minimized under joint limits)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.optimize
from numpy.typing import NDArray

from contactopt.identification.lumped import IdentificationError

FloatArray = NDArray[np.float64]

LIMIT_KEYS = ("q", "v", "u")


def _check_limits(limits: Mapping[str, Any] | None, sizes: Mapping[str, int]) -> dict[str, FloatArray]:
    out: dict[str, FloatArray] = {}
    if limits is None:
        return out
    if not isinstance(limits, Mapping):
        raise IdentificationError(f"excitation: limits must be a mapping with keys q, v, u; "
                                  f"got {type(limits).__name__}")
    for key, value in limits.items():
        if key not in LIMIT_KEYS:
            raise IdentificationError(f"excitation: unknown limit {key!r}; known: {', '.join(LIMIT_KEYS)}")
        try:
            arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (sizes[key],)).copy()
        except (ValueError, TypeError):
            raise IdentificationError(f"excitation: limits[{key!r}] must be a number or {sizes[key]} numbers "
                                      f"(one per {'input' if key == 'u' else 'coordinate'}), got {value!r}") from None
        if not np.all(~np.isnan(arr) & (arr > 0)):
            raise IdentificationError(f"excitation: limits[{key!r}] must be positive (inf: no limit), got {value!r}")
        out[key] = arr
    return out


def _check_integer(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise IdentificationError(f"excitation: {name} must be an integer >= {least}, got {value!r}")



def _margin(bound: FloatArray, x: FloatArray) -> FloatArray:
    """``bound - |x|`` at every row of ``x`` for the columns with a finite bound (flattened)."""
    finite = np.isfinite(bound)
    return (bound[finite] - np.abs(x[:, finite])).reshape(-1)


def limit_margins(bounds: Mapping[str, FloatArray], q: FloatArray, v: FloatArray,
                  inputs: Callable[[], FloatArray]) -> FloatArray:
    """:func:`_margin` of each bounded quantity, ``q`` (measured from its centre), ``v`` and the
    inputs (``inputs()``, computed only when they are bounded), stacked."""
    parts = [np.zeros(0)]
    for key, value in (("q", q), ("v", v)):
        if key in bounds:
            parts.append(_margin(bounds[key], value))
    if "u" in bounds:
        parts.append(_margin(bounds["u"], inputs()))
    return np.concatenate(parts)


def _start_feasible(x0: FloatArray, margins: Any, bounds: Mapping[str, FloatArray]) -> FloatArray:
    """Shrink the random start until every limit holds; the start itself where no shrinking
    does (a limit that the free motion breaks whatever the inputs' size: SLSQP starts outside)."""
    if not bounds:
        return x0
    x = x0
    for _ in range(60):
        if np.all(margins(x) >= 0):
            return x
        x = 0.7 * x
    return x0


def _forward_differences(function: Any, step: float) -> Any:
    """The Jacobian of ``function`` by forward differences of relative step ``step`` (the
    perturbed points are the same for the objective and the limits, so that a cache of the
    simulations serves both)."""
    def jacobian(x: FloatArray) -> FloatArray:
        base = np.asarray(function(x), dtype=np.float64)
        columns = []
        for i in range(x.size):
            h = step * max(1.0, abs(float(x[i])))
            shifted = x.copy()
            shifted[i] += h
            columns.append((np.asarray(function(shifted), dtype=np.float64) - base) / h)
        return np.stack(columns, axis=-1)
    return jacobian


def _optimize(objective: Any, margins: Any, x0: FloatArray, bounds: Mapping[str, FloatArray],
              max_iterations: int, differences: float | None = None) -> tuple[FloatArray, float, float, str, bool]:
    """SLSQP from ``x0`` (feasible where shrinking the start could make it so). Returns the
    best of the start, SLSQP's iterates and its answer (SLSQP may stop at its iteration limit
    just outside a limit after better points inside): a design within the limits (tolerance
    1e-6) before one outside them, then the lower condition number, or, none within them, the
    smaller violation; with its condition, the start's, SLSQP's message and whether it is
    within the limits. ``differences``: forward-difference Jacobians of that relative step
    (shared points) instead of SciPy's own."""
    initial = math.exp(objective(x0))
    jac: Any = None if differences is None else _forward_differences(objective, differences)
    constraint: dict[str, Any] = {"type": "ineq", "fun": margins}
    if differences is not None:
        constraint["jac"] = _forward_differences(margins, differences)
    constraints: Any = [constraint] if bounds else []
    options: Any = {"maxiter": max_iterations, "ftol": 1e-6}
    iterates: list[FloatArray] = []
    result = scipy.optimize.minimize(objective, x0, jac=jac, method="SLSQP", constraints=constraints,
                                     options=options, callback=lambda x: iterates.append(np.array(x)))

    def worst(x: FloatArray) -> float:
        return float(np.min(margins(x), initial=0.0)) if bounds else 0.0

    def rank(x: FloatArray) -> tuple[bool, float]:
        inside = worst(x) >= -1e-6
        return (not inside, float(objective(x)) if inside else -worst(x))

    best = min((result.x, *iterates, x0), key=rank)
    return best, math.exp(objective(best)), initial, str(result.message), worst(best) >= -1e-6
