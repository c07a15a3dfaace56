"""Residuals of a candidate solution, computed by contactopt (never trusted from a solver)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.programs.conic import ConicProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Residuals

FloatArray = NDArray[np.float64]

__all__ = ["cone_violation", "conic_residuals", "lcp_residuals", "residuals"]


def cone_violation(program: ConicProgram, s: FloatArray, dual: bool = False) -> float:
    """Infinity-norm distance-like violation of ``s in K`` (or ``s in K*`` if ``dual``).

    Zero cone: ``|s|`` (its dual cone is free: 0). Nonneg: ``max(0, -s)``.
    SOC (self-dual): ``max(0, ||s_{1:}|| - s_0)``. Vectorized over the cones: second-order
    cones of equal dimension are taken together (rows gathered by index).
    """
    s = np.asarray(s, dtype=np.float64)
    zero, nonneg, socs = _cone_rows(program)
    worst = 0.0
    if not dual and zero.size:
        worst = float(np.abs(s[zero]).max())
    if nonneg.size:
        worst = max(worst, float(max(0.0, -s[nonneg].min())))
    for rows in socs:  # one (count, dim) index array per distinct SOC dimension
        block = s[rows]
        violation = np.linalg.norm(block[:, 1:], axis=1) - block[:, 0]
        worst = max(worst, float(max(0.0, violation.max())))
    return worst


def _cone_rows(program: ConicProgram) -> tuple[NDArray[np.int_], NDArray[np.int_], list[NDArray[np.int_]]]:
    """Row indices of the zero and nonnegative cones and, per SOC dimension, a (count, dim)
    index array; computed once per program (its cones are fixed)."""
    cached = program.__dict__.get("_cone_rows")
    if cached is not None:
        return cached
    dims = np.array([cone.dim for cone in program.cones], dtype=np.int_)
    kinds = np.array([cone.kind for cone in program.cones])
    starts = np.concatenate([[0], np.cumsum(dims)[:-1]]).astype(np.int_) if dims.size else dims
    kind_of_row = np.repeat(kinds, dims) if dims.size else np.zeros(0, dtype=str)
    zero = np.flatnonzero(kind_of_row == "zero")
    nonneg = np.flatnonzero(kind_of_row == "nonneg")
    socs = []
    soc = kinds == "soc" if dims.size else np.zeros(0, dtype=bool)
    for dim in np.unique(dims[soc]):
        first = starts[soc & (dims == dim)]
        socs.append(first[:, None] + np.arange(dim)[None, :])
    result = (zero, nonneg, socs)
    object.__setattr__(program, "_cone_rows", result)  # a cache on a frozen program
    return result


def conic_residuals(program: ConicProgram, x: ArrayLike, y: ArrayLike) -> Residuals:
    """Residuals of ``(x, y)`` for ``min 1/2 x'Px + c'x  s.t. Ax + s = b, s in K``."""
    xv = np.asarray(x, dtype=np.float64)
    yv = np.asarray(y, dtype=np.float64)
    if not (np.all(np.isfinite(xv)) and np.all(np.isfinite(yv))):
        return Residuals(np.inf, np.inf, np.inf, np.inf)
    s = program.b - program.A @ xv
    Px = program.P @ xv
    stationarity = Px + program.c + program.A_T @ yv
    primal = cone_violation(program, s)
    dual = max(float(np.abs(stationarity).max(initial=0.0)), cone_violation(program, yv, dual=True))
    gap = abs(float(xv @ Px + program.c @ xv + program.b @ yv))
    complementarity = abs(float(s @ yv))
    return Residuals(primal, dual, gap, complementarity)


def lcp_residuals(lcp: LCP, z: ArrayLike) -> Residuals:
    """Residuals of ``z`` for ``0 <= z ⟂ M z + q >= 0``."""
    zv = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(zv)):
        return Residuals(np.inf, np.inf, float("nan"), np.inf)
    w = lcp.w(zv)
    return Residuals(
        primal=float(max(0.0, -zv.min(initial=0.0))),
        dual=float(max(0.0, -w.min(initial=0.0))),
        gap=float("nan"),
        complementarity=abs(float(zv @ w)),
    )


def residuals(program: ConicProgram | LCP, x: ArrayLike, y: ArrayLike | None = None) -> Residuals:
    """Residuals of a candidate solution of either program kind."""
    if isinstance(program, LCP):
        return lcp_residuals(program, x)
    return conic_residuals(program, x, np.zeros(program.m) if y is None else y)
