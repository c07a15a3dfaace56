"""The linear solves of the implicit function theorem: one factorization, forward and transposed.

The optimality conditions' Jacobian is singular when the solution's multipliers are not
unique (redundant active rows: a box resting on four corners has four normal rows for three
motions it can lose), while the primal answer, and the velocities a step recovers from it,
still are. There the derivative is the minimum-norm solution of the (consistent) linearized
conditions, the Moore-Penrose pseudo-inverse's answer (Golub & Van Loan, *Matrix
Computations*, 4th ed., §5.5): the multipliers' tangent is one of many, the primal tangent
the only one. A Jacobian is treated as singular when SuperLU finds an exactly zero pivot or
its pivots span more than :data:`PIVOT_RATIO` (a rank-revealing threshold on the LU's ``U``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, ContactoptWarning

FloatArray = NDArray[np.float64]

#: Smallest over largest pivot below which a factorization is called singular.
PIVOT_RATIO = 1e-12
#: Largest size solved by the dense pseudo-inverse when the Jacobian is singular.
DENSE_PSEUDOINVERSE_SIZE = 4000


class NotDifferentiableError(ContactoptError, ValueError):
    """The optimality conditions' Jacobian is singular in the primal variables too (the
    solution is not locally unique), or the solution is not one contactopt judged optimal."""


class RankDeficientWarning(ContactoptWarning):
    """The multipliers are not unique: the minimum-norm derivative is used."""


class LinearSolve:
    """``solve(rhs)`` and ``solve(rhs, transpose=True)`` with one factorization of ``matrix``.

    Attributes:
        rank_deficient: True when the pseudo-inverse replaced the LU factorization.
    """

    def __init__(self, matrix: Any, what: str) -> None:
        self.rank_deficient = False
        #: Smallest over largest pivot of the LU factorization (0: singular): how near singular.
        self.pivot_ratio = 0.0
        self._pinv: FloatArray | None = None
        self._lu: Any = None
        self._dense_lu: Any = None
        if isinstance(matrix, np.ndarray):  # small: LAPACK's LU (getrf, as la.lu_factor calls it), same test
            lu, pivots, _ = la.lapack.dgetrf(np.asarray(matrix, dtype=np.float64))  # a zero pivot: the test below
            diagonal = np.abs(np.diag(lu))
            self.pivot_ratio = float(diagonal.min() / diagonal.max()) if diagonal.size and diagonal.max() else 0.0
            if diagonal.size and diagonal.min() > PIVOT_RATIO * diagonal.max():
                self._dense_lu = (lu, pivots)
                return
            self._pinv = np.asarray(la.pinv(matrix, rtol=1e-10), dtype=np.float64)
            self.rank_deficient = True
            return
        csc = sp.csc_matrix(matrix)
        size = csc.shape[0]
        try:
            self._lu = spla.splu(csc)
            pivots = np.abs(self._lu.U.diagonal())
            self.pivot_ratio = float(pivots.min() / pivots.max()) if size and pivots.max() else 0.0
            if size and pivots.min() <= PIVOT_RATIO * pivots.max():
                self._lu = None
        except RuntimeError:  # SuperLU: "Factor is exactly singular"
            self._lu = None
        if self._lu is None:
            if size > DENSE_PSEUDOINVERSE_SIZE:
                raise NotDifferentiableError(
                    f"derivatives: {what} ({size} x {size}) is singular and too large for the dense "
                    f"pseudo-inverse (at most {DENSE_PSEUDOINVERSE_SIZE} rows)")
            self._pinv = np.asarray(la.pinv(csc.toarray(), rtol=1e-10), dtype=np.float64)
            self.rank_deficient = True

    def solve(self, rhs: FloatArray, transpose: bool = False) -> FloatArray:
        if self._dense_lu is not None:
            return np.asarray(la.lapack.dgetrs(*self._dense_lu, rhs, trans=1 if transpose else 0)[0])
        if self._pinv is not None:
            return np.asarray((self._pinv.T if transpose else self._pinv) @ rhs)
        return np.asarray(self._lu.solve(rhs, trans="T" if transpose else "N"))
