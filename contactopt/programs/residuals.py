"""Residuals of a candidate solution, computed by contactopt (never trusted from a solver)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core import jit
from contactopt.programs.conic import ConicProgram, cone_row_indices
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


#: Variables plus rows from which a program's verdict runs compiled (:mod:`.relative_kernel`: the
#: same numbers, 5-8x faster on a pile's 1,300); a small program keeps NumPy, whose first call
#: costs no compilation (a textbook run from the command line).
KERNEL_FROM = 256


def _conic_check(program: ConicProgram, x: FloatArray, y: FloatArray) -> tuple[Residuals, FloatArray]:
    if jit.ENABLED and program.n + program.m >= KERNEL_FROM:  # the same numbers, compiled (.relative_kernel)
        from contactopt.programs import relative_kernel

        s = np.empty(program.m)
        return relative_kernel.conic_verdict(program, x, y, s)[0], s
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
