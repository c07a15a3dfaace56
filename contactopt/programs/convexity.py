"""Is ``P`` positive semidefinite? Checked once per program whose ``P`` its assembler did not
vouch for, before any solver sees it: a "QP" with ``P = -I`` is no convex program, and an
interior-point solver handed one can still say ``optimal`` (Clarabel did).

``P`` marked by :func:`contactopt.programs.csc.mark_symmetric` (the formulations' Delassus and
mass matrices: symmetric positive semidefinite by construction) is trusted. Otherwise, in
order of cost:

1. a Gershgorin test: nonnegative diagonal and ``P_ii >= sum_(j != i) |P_ij|`` for every row
   proves it (O(nnz); mass matrices of point masses, diagonal regularizations);
2. a Cholesky factorization of ``P + delta I`` with ``delta = TOLERANCE * max|P_ij|``
   (dense up to :data:`DENSE_LIMIT` variables): success proves ``lambda_min(P) >= -delta``;
3. where it fails, the smallest eigenvalue (dense ``eigvalsh``, or ``eigsh`` beyond the dense
   limit) decides, against the same ``-delta``, and names the eigenvalue in the refusal.

:func:`vouched` skips the symmetry and convexity checks of the programs built inside it: the
step derivative (:mod:`contactopt.derivatives.step`) builds, per difference column, copies of
a program already checked and solved, its data moved by a relative ``6e-6`` with the same
structure, whose test outcome cannot differ from the original's beyond the test's own
tolerance ``TOLERANCE``. Under ``CONTACTOPT_DEBUG=1`` they run regardless.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["DENSE_LIMIT", "TOLERANCE", "is_vouched", "smallest_eigenvalue_if_nonconvex", "vouched"]

#: Relative tolerance of the test (times max|P_ij|): a positive semidefinite matrix stored to
#: about 7 digits (Siconos's FCLIB files written from text: Delassus matrices whose smallest
#: eigenvalue reads -9e-8 of the largest) is still one; a genuinely nonconvex P is off by far more.
TOLERANCE = 1e-6
#: Largest n checked with dense factorizations.
DENSE_LIMIT = 2000

_VOUCHED: contextvars.ContextVar[bool] = contextvars.ContextVar("contactopt_vouched_programs", default=False)


@contextlib.contextmanager
def vouched() -> Iterator[None]:
    """Within the block, :class:`~contactopt.programs.ConicProgram` takes ``P`` as symmetric
    positive semidefinite without checking (module docstring: for perturbed copies of a
    checked program only)."""
    token = _VOUCHED.set(True)
    try:
        yield
    finally:
        _VOUCHED.reset(token)


def is_vouched() -> bool:
    """Whether the caller is inside :func:`vouched`."""
    return _VOUCHED.get()


def smallest_eigenvalue_if_nonconvex(P: sp.csc_matrix) -> float | None:
    """None when ``P`` (symmetric) is positive semidefinite to the tolerance, else its
    smallest eigenvalue (negative)."""
    n = P.shape[0]
    if n == 0 or P.nnz == 0:
        return None
    diagonal = P.diagonal()
    if diagonal.min() < 0.0:
        return float(diagonal.min()) if n > DENSE_LIMIT else float(np.linalg.eigvalsh(P.toarray())[0])
    off = np.asarray(abs(P).sum(axis=1)).reshape(-1) - np.abs(diagonal)
    if np.all(diagonal >= off):
        return None
    delta = TOLERANCE * float(np.abs(P.data).max())
    if n <= DENSE_LIMIT:
        dense = P.toarray()
        try:
            np.linalg.cholesky(dense + delta * np.eye(n))
            return None
        except np.linalg.LinAlgError:
            smallest = float(np.linalg.eigvalsh(dense)[0])
    else:
        smallest = float(spla.eigsh(P.astype(np.float64), k=1, which="SA", return_eigenvectors=False)[0])
    return None if smallest >= -delta else smallest
