"""Programs in their own units: an exact rescaling applied before a solver sees a program.

Solvers stop on tolerances with absolute floors (Clarabel and OSQP compare residuals with
``eps (1 + |data|)``, Lemke accepts pivots above ``tol max(1, |column|)``): a program whose
numbers are all far from 1 (a 1 mg box: impulses of 1e-8 N s; a cart at rest against a wall:
a cost of 5e-16) is "solved" by them to an accuracy that is no accuracy at its own scale.
Written in its own units, the same program has numbers near 1 and those floors do not bite.

For a :class:`ConicProgram` the units are three scalars (a nondimensionalization; an
interior-point solver's own equilibration takes care of the ratios between rows and between
variables, but not of the program's overall size, which its absolute floors compare with):
the variables' unit ``alpha`` (the geometric mean of the reaches ``|c_j| / P_jj``, the size one
step of the applied forces gives a variable), the rows' unit ``1 / beta`` (the geometric mean
of ``|b_i| + alpha sum_j |A_ij|``) and the objective's ``1 / sigma`` (the geometric mean of
``|c_j| alpha + P_jj alpha^2``): typical sizes, not the largest, so that one far contact
(``phi / h = 200`` m/s) does not shrink every other row below the solver's tolerance::

    P~ = sigma alpha^2 P,  c~ = sigma alpha c,  A~ = beta alpha A,  b~ = beta b
    x = alpha x~,  s = s~ / beta,  y = beta y~ / sigma,

and for an :class:`LCP` ``0 <= z _|_ M z + q >= 0``, whose pivoting has no equilibration of its
own, one factor per variable and per row: ``z = D z~`` (``D_j``:
:func:`~contactopt.programs.relative.lcp_reach`, ``|q_j| / M_jj`` or what the rows ask) and rows
``E_i = 1 / (|q_i| + sum_j |M_ij| D_j)``: ``M~ = E M D``, ``q~ = E q``, ``w = w~ / E``.
Every factor is a power of two, so the scaled program is the given one exactly (no rounding);
a program whose factors are all 1 is handed over untouched. The solver layer
(:func:`contactopt.solvers.solve`, option ``normalize``) asks for this only when the answer to
the program as given falls short of optimal: a typical size is not always the size of what
matters (the active contacts of a box whose far corners set ``phi / h = 200`` m/s), and a
program that solves well as given is left as it is.

A reduction in cvxpy's sense: :meth:`Normalize.apply` gives the scaled program and what
:meth:`Normalize.invert` needs to map the solver's answer back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.programs.conic import ConicProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.relative import FLOOR, column_max, data_reach, filled_reach, lcp_reach

FloatArray = NDArray[np.float64]

__all__ = ["THRESHOLD_EXPONENT", "Normalize", "Scaling"]

#: A program is rescaled when one of its factors is at least 2^this from 1.
THRESHOLD_EXPONENT = 1


@dataclass(frozen=True)
class Scaling:
    """Power-of-two factors of one program: ``column`` (n,) = D, ``row`` (m,) = E, ``objective`` = sigma
    (1 for an LCP)."""

    column: FloatArray
    row: FloatArray
    objective: float

    def x_to_scaled(self, x: FloatArray) -> FloatArray:
        return np.asarray(x, dtype=np.float64) / self.column


def _power_of_two(values: FloatArray) -> FloatArray:
    """``2^round(log2(v))`` for positive finite ``v``; 1 elsewhere."""
    out = np.ones_like(values)
    good = np.isfinite(values) & (values > 0.0)
    out[good] = np.exp2(np.round(np.log2(values[good])))
    return out


def _asked_reach(program: ConicProgram, abs_A: sp.csc_matrix) -> FloatArray:
    """:func:`data_reach` capped by what the rows ask of each variable (``max_i |b_i| / |A_ij|``,
    where they ask anything): a nearly flat direction (``P_jj = 1e-16``) must not set the unit."""
    asked = column_max(abs_A, np.abs(program.b))
    reach = data_reach(program)
    return np.where(asked > 0.0, np.minimum(reach, asked), reach)


def _column_units(program: ConicProgram, abs_A: sp.csc_matrix, diagonal: FloatArray) -> FloatArray:
    """The variables' units ``D_j`` (powers of two): the reach the data ask of each
    (:func:`_asked_reach`), the empty ones filled by the energy they would carry
    (:func:`contactopt.programs.relative.filled_reach`); one shared unit, the geometric mean
    of the reaches, for the variables of a family whose reaches are all empty."""
    reach = filled_reach(_asked_reach(program, abs_A), diagonal)
    if not np.any(reach > 0.0):
        return np.ones(program.n)
    return _power_of_two(np.where(reach > 0.0, reach, _geometric_mean(reach)))


def _geometric_mean(values: FloatArray) -> float:
    """The power of two nearest the geometric mean of the positive finite ``values`` (1 if none)."""
    good = values[np.isfinite(values) & (values > 0.0)]
    return float(np.exp2(np.round(np.log2(good).mean()))) if good.size else 1.0


def _needed(*factors: FloatArray) -> bool:
    exponents = [np.abs(np.log2(f)).max(initial=0.0) for f in factors]
    return max(exponents) >= THRESHOLD_EXPONENT


class Normalize:
    """The reduction to the program's own units (module docstring)."""

    name = "normalize"

    def apply(self, program: ConicProgram | LCP) -> tuple[ConicProgram | LCP, Scaling] | None:
        """The scaled program and its factors, or None when no factor is far from 1."""
        if isinstance(program, LCP):
            return self._apply_lcp(program)
        return self._apply_conic(program)

    @staticmethod
    def _apply_conic(program: ConicProgram) -> tuple[ConicProgram, Scaling] | None:
        if program.n == 0:
            return None
        abs_A = sp.csc_matrix((np.abs(program.A.data), program.A.indices, program.A.indptr), shape=program.A.shape)
        diagonal = program.P.diagonal()
        D = _column_units(program, abs_A, diagonal)
        rows = np.abs(program.b) + abs_A @ D
        beta = 1.0 / _geometric_mean(rows[rows > FLOOR * rows.max(initial=0.0)])
        sigma = 1.0 / _geometric_mean(np.abs(program.c) * D + np.abs(diagonal) * D * D)
        if not _needed(D, np.array([beta, sigma])):
            return None
        Dm = sp.diags(D)
        scaled = ConicProgram(P=sp.csc_matrix(sigma * (Dm @ program.P @ Dm)), c=sigma * D * program.c,
                              A=sp.csc_matrix(beta * (program.A @ Dm)), b=beta * program.b, cones=program.cones,
                              variables=program.variables, constraints=program.constraints,
                              metadata=program.metadata)
        return scaled, Scaling(column=D, row=np.full(program.m, beta), objective=sigma)

    @staticmethod
    def _apply_lcp(program: LCP) -> tuple[LCP, Scaling] | None:
        if program.n == 0:
            return None
        abs_M = np.abs(program.M)
        D = _power_of_two(lcp_reach(program))
        E = 1.0 / _power_of_two(np.abs(program.q) + abs_M @ D)
        if not _needed(D, E):
            return None
        return LCP(M=E[:, None] * program.M * D[None, :], q=E * program.q), Scaling(column=D, row=E, objective=1.0)

    @staticmethod
    def invert(x: FloatArray, y: FloatArray, scaling: Scaling) -> tuple[FloatArray, FloatArray]:
        """The given program's ``(x, y)`` from the scaled program's (``y`` empty for an LCP)."""
        x_out = scaling.column * np.asarray(x, dtype=np.float64)
        y_out = np.asarray(y, dtype=np.float64)
        if y_out.size:
            y_out = scaling.row * y_out / scaling.objective
        return x_out, y_out
