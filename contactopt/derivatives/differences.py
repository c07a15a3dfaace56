"""The difference formulas' arithmetic on program data (:mod:`.step`): weighted sums of
programs' data arrays, and the test for a kink of the data at the base point.

A kink is declared where the central second difference of the data is not small against the
first: for a smooth map ``|D(t) - 2 D(0) + D(-t)| ~ t^2 |D''|`` against ``2 t |D'|``, a ratio
of about ``t`` times the map's curvature scale, while two slopes meeting at the base point (a
``max`` of two equal friction coefficients, a clipped gap) give a ratio of order one
(:data:`KINK_RATIO`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.derivatives.coulomb import CoulombDerivative
from contactopt.derivatives.lcp import LCPDerivative
from contactopt.programs import LCP, ConicProgram, CoulombProgram

FloatArray = NDArray[np.float64]
StepProgram = ConicProgram | LCP | CoulombProgram

__all__ = ["KINK_RATIO", "StepProgram", "combination", "dense", "kinked", "solution_tangent"]

#: Second over first difference of the program data above which a kink is declared (a
#: smooth map gives about ``t`` times its curvature scale, a tie of two slopes gives 1).
KINK_RATIO = 0.1


def data_arrays(program: StepProgram) -> list[Any]:
    """The data arrays of a program (dense vectors, sparse matrices as CSC)."""
    if isinstance(program, LCP):
        return [np.asarray(program.M), program.q]
    if isinstance(program, CoulombProgram):
        return [sp.csc_matrix(program.W) if sp.issparse(program.W) else np.asarray(program.W), program.q, program.mu]
    return [program.P, program.c, program.A, program.b]


def kinked(minus: StepProgram, base: StepProgram, plus: StepProgram) -> bool:
    """Whether the program data bend at ``base``: ``|D+ - 2 D0 + D-|`` above :data:`KINK_RATIO`
    times ``|D+ - D-|`` and above round-off (``1e-12`` of the data's size)."""
    second = first = size = 0.0
    low_high_middle: Any = zip(data_arrays(minus), data_arrays(base), data_arrays(plus), strict=True)
    for low, middle, high in low_high_middle:
        triple: list[Any] = [high, middle, low]
        if sp.issparse(triple[1]):
            if _same_pattern(triple):  # the usual case: entries in the same places on all three
                triple = [matrix.data for matrix in triple]
            else:
                triple = [np.asarray(matrix.toarray()) for matrix in triple]
        high_values, middle_values, low_values = triple
        second = max(second, float(np.abs(high_values - 2.0 * middle_values + low_values).max(initial=0.0)))
        first = max(first, float(np.abs(high_values - low_values).max(initial=0.0)))
        size = max(size, float(np.abs(middle_values).max(initial=0.0)))
    return second > KINK_RATIO * first and second > 1e-12 * size


def _same_pattern(matrices: Sequence[Any]) -> bool:
    """Whether canonical CSC matrices store their entries in the same places."""
    first = matrices[0]
    return all(m.indptr.shape == first.indptr.shape and m.indices.shape == first.indices.shape
               and np.array_equal(m.indptr, first.indptr) and np.array_equal(m.indices, first.indices)
               for m in matrices[1:])


def combination(matrices: Sequence[sp.csc_matrix], weights: Sequence[float]) -> sp.csc_array | None:
    """``sum_k weights_k matrices_k`` of canonical CSC matrices (the programs' ``P``, ``A``): on
    their data arrays when the patterns agree (as they do for a program whose structure is
    unchanged, unless an entry vanishes on one side), else by scipy's sparse sum; None when
    nothing moved (the matrix does not depend on the block: the program derivative then skips
    its term)."""
    first = matrices[0]
    if _same_pattern(matrices):
        change = np.zeros(first.data.shape)
        for w, m in zip(weights, matrices, strict=True):
            change += w * m.data
        if not np.any(change):
            return None
        return sp.csc_array((change, first.indices, first.indptr), shape=first.shape)
    total: Any = weights[0] * sp.csc_array(first)
    for w, m in zip(weights[1:], matrices[1:], strict=True):
        total = total + w * sp.csc_array(m)
    return sp.csc_array(total)


def dense(matrix: Any) -> FloatArray:
    return np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix, dtype=np.float64)  # type: ignore[attr-defined]


def solution_tangent(derivative: Any, programs: Sequence[Any], weights: Sequence[float]) -> dict[str, FloatArray]:
    """The tangent of ``derivative``'s solution along the programs' weighted data difference
    (``sum w_i data(program_i)``: a difference quotient of the step's program data), by the
    program's own derivative (LCP, Coulomb or conic), keyed by the solution's fields."""
    if isinstance(derivative, LCPDerivative):
        lcps = [program for program in programs if isinstance(program, LCP)]
        lcp = derivative.jvp(dM=sum(w * dense(p.M) for w, p in zip(weights, lcps, strict=True)),
                             dq=sum(w * p.q for w, p in zip(weights, lcps, strict=True)))
        return {"x": lcp.z, "s": lcp.w}
    if isinstance(derivative, CoulombDerivative):  # recover reads the impulses r from x
        coulombs = [program for program in programs if isinstance(program, CoulombProgram)]
        coulomb = derivative.jvp(dW=combination([sp.csc_matrix(p.W) for p in coulombs], weights),
                                 dq=sum(w * p.q for w, p in zip(weights, coulombs, strict=True)),
                                 dmu=sum(w * p.mu for w, p in zip(weights, coulombs, strict=True)))
        return {"x": coulomb.r}
    conics = [program for program in programs if isinstance(program, ConicProgram)]
    conic = derivative.jvp(dP=combination([p.P for p in conics], weights),
                           dc=sum(w * p.c for w, p in zip(weights, conics, strict=True)),
                           dA=combination([p.A for p in conics], weights),
                           db=sum(w * p.b for w, p in zip(weights, conics, strict=True)))
    return {"x": conic.x, "y": conic.y, "s": conic.s}
