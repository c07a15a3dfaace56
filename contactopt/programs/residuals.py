"""Residuals of a candidate solution, computed by contactopt (never trusted from a solver)."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.programs.conic import Cone, ConicProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.relative import conic_relative, lcp_relative
from contactopt.programs.solution import Residuals

if TYPE_CHECKING:
    from contactopt.programs.coulomb import CoulombProgram

FloatArray = NDArray[np.float64]

__all__ = ["cone_row_indices", "cone_violation", "conic_check", "conic_residuals", "lcp_residuals", "residuals"]


def cone_violation(program: ConicProgram, s: FloatArray, dual: bool = False) -> float:
    """Infinity-norm distance-like violation of ``s in K`` (or ``s in K*`` if ``dual``).

    Zero cone: ``|s|`` (its dual cone is free: 0). Nonneg: ``max(0, -s)``.
    SOC (self-dual): ``max(0, ||s_{1:}|| - s_0)``. Vectorized over the cones: second-order
    cones of equal dimension are taken together (rows gathered by index).
    """
    s = np.asarray(s, dtype=np.float64)
    return _violations(program, s[None, :], with_zero=not dual)[0]


def _violations(program: ConicProgram, stacked: FloatArray, with_zero: bool) -> list[float]:
    """:func:`cone_violation` of each row of ``stacked`` (k, m), all rows at once; the zero
    cone counts for the first row only, and only ``with_zero`` (the primal side)."""
    zero, nonneg, socs = cone_row_indices(program)
    worst = np.zeros(stacked.shape[0])
    if nonneg.size:
        np.maximum(worst, -stacked[:, nonneg].min(axis=1), out=worst)
    for rows in socs:  # one (count, dim) index array per distinct SOC dimension
        block = stacked[:, rows]  # (k, count, dim)
        tangential = np.sqrt(np.einsum("kcd,kcd->kc", block[:, :, 1:], block[:, :, 1:]))
        np.maximum(worst, (tangential - block[:, :, 0]).max(axis=1), out=worst)
    out = worst.tolist()
    if with_zero and zero.size:
        out[0] = max(out[0], float(np.abs(stacked[0, zero]).max()))
    return out


_ConeRows = tuple[NDArray[np.int_], NDArray[np.int_], list[NDArray[np.int_]]]


def cone_row_indices(program: ConicProgram) -> tuple[NDArray[np.int_], NDArray[np.int_], list[NDArray[np.int_]]]:
    """Row indices of the zero and nonnegative cones and, per SOC dimension, a (count, dim)
    index array (read-only; computed once per program)."""
    cached = program.__dict__.get("_cone_row_indices")
    if cached is None:  # once per program
        cached = _cone_row_indices(program.cones)
        object.__setattr__(program, "_cone_row_indices", cached)  # a cache on a frozen program
    return cast(_ConeRows, cached)  # a module-level alias: a subscripted type built per call costs ~5 us


_KIND_CODE = {"zero": 0, "nonneg": 1, "soc": 2}
_DIM, _KIND = operator.attrgetter("dim"), operator.attrgetter("kind")


def _cone_row_indices(cones: tuple[Cone, ...]) -> tuple[NDArray[np.int_], NDArray[np.int_], list[NDArray[np.int_]]]:
    # kinds as integer codes, attributes read by C-level maps: the cones' own hash (a Python
    # method, ~20 us on the pile's 239 cones) and string arrays cost more than the indices
    count = len(cones)
    dims = np.fromiter(map(_DIM, cones), dtype=np.int_, count=count)
    codes = np.fromiter(map(_KIND_CODE.__getitem__, map(_KIND, cones)), dtype=np.int8, count=count)
    starts = np.cumsum(dims) - dims
    code_of_row = np.repeat(codes, dims)
    zero = np.flatnonzero(code_of_row == 0)
    nonneg = np.flatnonzero(code_of_row == 1)
    socs = []
    soc = codes == 2
    for dim in np.unique(dims[soc]):
        first = starts[soc & (dims == dim)]
        socs.append(first[:, None] + np.arange(dim)[None, :])
    for array in (zero, nonneg, *socs):
        array.setflags(write=False)
    return zero, nonneg, socs


def conic_check(program: ConicProgram, x: FloatArray, y: FloatArray) -> tuple[Residuals, FloatArray]:
    """``(residuals, s = b - A x)`` of a finite ``(x, y)``, with each product formed once;
    ``residuals.relative`` is the worst of them relative to its own row
    (:func:`contactopt.programs.relative.conic_relative`), which the solvers' judge reads.
    The last check of a program is kept: a solver that asks whether its answer is believed
    (:func:`contactopt.solvers.base.believed`) and then reports it (``make_solution``) checks
    the same ``(x, y)`` twice, and the second reading is the first's."""
    last = program.__dict__.get("_last_check")
    if last is not None and np.array_equal(last[0], x) and np.array_equal(last[1], y):
        return last[2], last[3].copy()  # the caller may keep or change its s
    res, s = _conic_check(program, x, y)
    object.__setattr__(program, "_last_check", (np.array(x), np.array(y), res, s.copy()))  # a cache on a frozen program
    return res, s


def _conic_check(program: ConicProgram, x: FloatArray, y: FloatArray) -> tuple[Residuals, FloatArray]:
    Ax = program.A_dot(x)
    Px = program.P_dot(x)
    ATy = program.AT_dot(y)
    s = program.b - Ax
    stationarity = Px + program.c + ATy
    primal, dual_cone = _violations(program, np.stack([s, y]), with_zero=True)
    dual = max(float(np.abs(stationarity).max(initial=0.0)), dual_cone)
    terms = (float(x @ Px), float(program.c @ x), float(program.b @ y))
    gap = abs(sum(terms))
    complementarity = abs(float(s @ y))
    relative = conic_relative(program, x, y, s, stationarity, terms, gap)
    return Residuals(primal, dual, gap, complementarity, relative), s


def conic_residuals(program: ConicProgram, x: ArrayLike, y: ArrayLike) -> Residuals:
    """Residuals of ``(x, y)`` for ``min 1/2 x'Px + c'x  s.t. Ax + s = b, s in K``."""
    xv = np.asarray(x, dtype=np.float64)
    yv = np.asarray(y, dtype=np.float64)
    if not (np.isfinite(xv).all() and np.isfinite(yv).all()):
        return Residuals(np.inf, np.inf, np.inf, np.inf, np.inf)
    return conic_check(program, xv, yv)[0]


def lcp_residuals(lcp: LCP, z: ArrayLike) -> Residuals:
    """Residuals of ``z`` for ``0 <= z ⟂ M z + q >= 0``."""
    zv = np.asarray(z, dtype=np.float64)
    if not np.all(np.isfinite(zv)):
        return Residuals(np.inf, np.inf, float("nan"), np.inf, np.inf)
    w = lcp.w(zv)
    return Residuals(
        primal=float(max(0.0, -zv.min(initial=0.0))),
        dual=float(max(0.0, -w.min(initial=0.0))),
        gap=float("nan"),
        complementarity=abs(float(zv @ w)),
        relative=lcp_relative(lcp, zv, w),
    )


def residuals(program: ConicProgram | LCP | CoulombProgram, x: ArrayLike, y: ArrayLike | None = None) -> Residuals:
    """Residuals of a candidate solution of any program kind (``y`` unused for an LCP and a
    Coulomb problem)."""
    from contactopt.programs.coulomb import CoulombProgram, coulomb_residuals

    if isinstance(program, CoulombProgram):
        return coulomb_residuals(program, x)
    if isinstance(program, LCP):
        return lcp_residuals(program, x)
    return conic_residuals(program, x, np.zeros(program.m) if y is None else y)
