"""FCLIB matrix groups as files store them: the two triplet conventions, and symmetry judged at
the precision the file was written with.

**Storage** (``fclib.h``, FCLIB's ``struct fclib_matrix``): ``nzmax, m, n, nz`` and arrays
``p, i, x``. ``nz = -1``: compressed columns (``p`` the ``n + 1`` column pointers, ``i`` row
indices); ``nz = -2``: compressed rows (``p`` the ``m + 1`` row pointers, ``i`` column
indices); ``nz >= 0``: ``nz`` triplets (``nz <= nzmax``). For triplets two conventions are
in use:

* ``"fclib"``: ``p`` the rows, ``i`` the columns, as ``fclib.h`` documents and FCLIB's own
  test writes them: **the default**;
* ``"csparse"``: ``i`` the rows, ``p`` the columns, CSparse's ``cs`` triplet form (Davis,
  *Direct Methods for Sparse Linear Systems*, SIAM 2006, section 2.1), which FCLIB's merit
  code casts a matrix to and which Siconos writes (its global test problems Box_Stacks,
  Spheres, spheres-in-a-box, CubeH8, LMGC_GlobalFrictionContactProblem00046).

A reading is *valid* when its row indices lie in ``[0, m)`` and its column indices in
``[0, n)``. One file has one writer, so :func:`resolve_triplets` decides per file: where a
matrix admits one reading only (``H`` of Box_Stacks: 450 x 246 with ``i`` up to 389), the whole
file follows it (its square ``M``, valid both ways, included); where no matrix decides, a
matrix valid both ways whose two readings differ beyond the stored precision (below) is read
the default way with an :class:`~contactopt.core.errors.AmbiguousTripletsWarning` naming the file
and the matrix; readings that agree need no decision. The choice is recorded per matrix.

**Symmetry** (:func:`relative_asymmetry`, :data:`SYMMETRY_TOLERANCE`): ``max |A_ij - A_ji| /
max |A_ij|``, unit-free. Files written from text keep about 7 significant digits (Siconos's
``.dat`` problems): each stored entry is off its exact value by up to half a unit of the 7th
digit, ``5e-7`` of itself, hence of ``max |A|``, and ``A_ij - A_ji`` of an exactly symmetric
matrix reads up to twice that: ``1e-6``. A matrix within it is symmetric as stored (CubeH8's
``M``: ``1.5e-7``); beyond it, it is not (Rover's ``W``: ``8e-6`` to ``3e-5``; Capsules ``1.3e-3``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import AmbiguousTripletsWarning, ContactoptError
from contactopt.programs.file_checks import checked_csc_parts

__all__ = ["CSPARSE", "FCLIB", "SYMMETRY_TOLERANCE", "StoredMatrix", "read_stored_matrix", "relative_asymmetry",
           "resolve_triplets"]

#: ``fclib.h``'s triplets: ``p`` rows, ``i`` columns (the default).
FCLIB = "fclib"
#: CSparse's triplets, as Siconos writes them: ``i`` rows, ``p`` columns.
CSPARSE = "csparse"
_MEANING = {FCLIB: "fclib.h's (p rows, i columns)", CSPARSE: "CSparse's (i rows, p columns)"}
#: Relative asymmetry ``max|A - A^T| / max|A|`` within which a stored matrix is symmetric
#: (module docstring: twice the half-unit rounding of 7 significant digits).
SYMMETRY_TOLERANCE = 1e-6


def _int(group: Any, name: str, where: str) -> int:
    if name not in group:
        raise ContactoptError(f"{where}: missing {name!r}")
    return int(np.asarray(group[name][()]).reshape(-1)[0])


@dataclass(frozen=True)
class StoredMatrix:
    """A matrix group's sizes and arrays as stored (``where``: file and group, for messages)."""

    where: str
    m: int
    n: int
    nz: int
    nzmax: int
    p: NDArray[np.int64]
    i: NDArray[np.int64]
    x: NDArray[np.float64]

    @property
    def is_triplets(self) -> bool:
        return self.nz >= 0

    def readings(self) -> tuple[str, ...]:
        """The valid triplet conventions (module docstring)."""
        rows_p = not self.nz or (self.p.min() >= 0 and self.p.max() < self.m and self.i.min() >= 0
                                 and self.i.max() < self.n)
        rows_i = not self.nz or (self.i.min() >= 0 and self.i.max() < self.m and self.p.min() >= 0
                                 and self.p.max() < self.n)
        return tuple(name for name, valid in ((FCLIB, rows_p), (CSPARSE, rows_i)) if valid)

    def triplets(self, convention: str) -> sp.csc_matrix:
        rows, cols = (self.p, self.i) if convention == FCLIB else (self.i, self.p)
        matrix = sp.csc_matrix((self.x, (rows, cols)), shape=(self.m, self.n))
        matrix.sum_duplicates()  # duplicate triplets are summed (CSparse's cs_compress)
        return matrix

    def compressed(self) -> sp.csc_matrix:
        outer = self.n if self.nz == -1 else self.m
        if self.p.shape[0] != outer + 1:
            raise self.malformed(f"{self.p.shape[0]} pointers, expected {outer + 1}")
        count = int(self.p[-1])
        if count < 0 or count > min(self.i.shape[0], self.x.shape[0]) or count > max(self.nzmax, 0):
            raise self.malformed(f"{count} entries announced, nzmax {self.nzmax}, i/x hold "
                                 f"{self.i.shape[0]}/{self.x.shape[0]}")
        shape = (self.m, self.n) if self.nz == -1 else (self.n, self.m)
        matrix = checked_csc_parts(self.x[:count], self.i[:count], self.p, shape, self.where, ("x", "i", "p"))
        return matrix if self.nz == -1 else sp.csc_matrix(matrix.T)

    def malformed(self, reason: str) -> ContactoptError:
        return ContactoptError(f"{self.where}: malformed matrix: {reason}")


def read_stored_matrix(group: Any, where: str) -> StoredMatrix:
    """The arrays of a FCLIB matrix group, their sizes checked; triplet indices are checked by
    :func:`resolve_triplets` (their meaning depends on the convention)."""
    m, n, nz, nzmax = (_int(group, key, where) for key in ("m", "n", "nz", "nzmax"))
    try:
        p = np.asarray(group["p"][()], dtype=np.int64).reshape(-1)
        i = np.asarray(group["i"][()], dtype=np.int64).reshape(-1)
        x = np.asarray(group["x"][()], dtype=np.float64).reshape(-1)
    except KeyError as exc:
        raise ContactoptError(f"{where}: missing dataset {exc.args[0]!r}") from None
    if m < 0 or n < 0:
        raise ContactoptError(f"{where}: negative size {m} x {n}")
    stored = StoredMatrix(where, m, n, nz, nzmax, p, i, x)
    if nz >= 0:
        if min(p.shape[0], i.shape[0], x.shape[0]) < nz:
            raise stored.malformed(f"{nz} triplets announced, p/i/x hold {p.shape[0]}/{i.shape[0]}/{x.shape[0]}")
        if nz > nzmax:
            raise stored.malformed(f"{nz} triplets announced, more than nzmax = {nzmax}")
        stored = StoredMatrix(where, m, n, nz, nzmax, p[:nz], i[:nz], x[:nz])
    elif nz not in (-1, -2):
        raise stored.malformed(f"unknown storage nz = {nz} (-1 columns, -2 rows, >= 0 triplets)")
    if not np.all(np.isfinite(stored.x)):
        raise ContactoptError(f"{where}: matrix has NaN or infinite entries")
    return stored


def relative_asymmetry(matrix: sp.csc_matrix) -> float:
    """``max |A - A^T| / max |A|`` of a square matrix (0 for a zero matrix; module docstring)."""
    if matrix.nnz == 0:
        return 0.0
    scale = float(abs(matrix).max())
    return float(abs(matrix - matrix.T).max()) / scale if scale > 0 else 0.0


def _differ(first: sp.csc_matrix, second: sp.csc_matrix) -> float:
    """How far two readings of one matrix differ, relative to its largest entry."""
    scale = float(abs(first).max()) if first.nnz else 0.0
    return float(abs(first - second).max()) / scale if scale > 0 else 0.0


def resolve_triplets(stored: Mapping[str, StoredMatrix], path: str) -> tuple[dict[str, sp.csc_matrix],
                                                                            dict[str, str]]:
    """Every matrix of one file as CSC, and the triplet convention taken for each matrix
    stored as triplets (module docstring: decided per file; a warning where it is a guess)."""
    triplets = {name: matrix for name, matrix in stored.items() if matrix.is_triplets}
    valid = {name: matrix.readings() for name, matrix in triplets.items()}
    for name, readings in valid.items():
        if not readings:
            matrix = triplets[name]
            raise matrix.malformed(f"triplet index out of range in both conventions ({matrix.m} x {matrix.n}, "
                                   f"p in [{matrix.p.min()}, {matrix.p.max()}], i in [{matrix.i.min()}, "
                                   f"{matrix.i.max()}])")
    forced = {readings[0] for readings in valid.values() if len(readings) == 1}
    writer = next(iter(forced)) if len(forced) == 1 else None
    out = {name: matrix.compressed() for name, matrix in stored.items() if not matrix.is_triplets}
    chosen: dict[str, str] = {}
    for name, matrix in triplets.items():
        readings = valid[name]
        if len(readings) == 1:
            chosen[name] = readings[0]
        elif writer is not None:
            chosen[name] = writer
        else:
            chosen[name] = FCLIB
            gap = _differ(matrix.triplets(FCLIB), matrix.triplets(CSPARSE))
            if gap > SYMMETRY_TOLERANCE:
                warnings.warn(AmbiguousTripletsWarning(
                    f"{path}: {name} ({matrix.m} x {matrix.n}) stored as triplets valid both as "
                    f"{_MEANING[FCLIB]} and as {_MEANING[CSPARSE]}, and the two readings differ "
                    f"(by {gap:.3g} of max|{name}|); read as {_MEANING[FCLIB]}, the FCLIB specification"),
                    stacklevel=5)  # the caller of read_fclib
        out[name] = matrix.triplets(chosen[name])
    return out, chosen
