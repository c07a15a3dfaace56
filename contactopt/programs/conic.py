"""The conic program every QP/SOCP formulation builds.

Standard form (Clarabel / SCS / cvxpy canonical form)::

    minimize    1/2 x^T P x + c^T x
    subject to  A x + s = b,   s in K,

with ``K`` a product of ``Zero(n)`` (equalities), ``Nonneg(n)`` (inequalities ``A x <= b``)
and ``SOC(n)`` (``s_0 >= ||s_{1:}||``) cones, in that row order of ``cones``. The dual
variables ``y`` live in the dual cone ``K*`` and satisfy ``P x + c + A^T y = 0`` at a
solution. A QP is a ConicProgram without SOC cones.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core import display
from contactopt.core.arrays import debug_checks
from contactopt.core.errors import ContactoptError, NonconvexProgramError, ShapeError
from contactopt.programs.convexity import is_vouched, smallest_eigenvalue_if_nonconvex
from contactopt.programs.csc import (
    attached_upper,
    csr,
    empty_csc,
    symmetric_by_construction,
    to_csc,
    upper_triangle,
)

FloatArray = NDArray[np.float64]
ConeKind = Literal["zero", "nonneg", "soc"]

_OptionalArray = FloatArray | None  # built once: a union built per call costs microseconds

__all__ = ["SOC", "Block", "Cone", "ConicProgram", "Nonneg", "Zero"]


_KIND_CODES = {"zero": 0, "nonneg": 1, "soc": 2}


@dataclass(frozen=True)
class Cone:
    """One cone of the product ``K``: ``kind`` is ``zero``, ``nonneg`` or ``soc``; ``dim`` rows.

    A program holds one cone per contact (485 on the sphere pile), and its cones are hashed
    and compared every step (cone layouts, workspace keys, warm-start checks): the factories
    :func:`Zero`, :func:`Nonneg` and :func:`SOC` hand out one shared instance per dimension
    (tuples of identical objects compare by identity), and the hash is computed once, from
    integers (the same in every process)."""

    kind: ConeKind
    dim: int

    def __post_init__(self) -> None:
        if self.kind not in _KIND_CODES:
            raise ShapeError(f"Cone.kind: unknown cone {self.kind!r}")
        if self.dim < 0 or (self.kind == "soc" and self.dim < 1):
            raise ShapeError(f"Cone.dim: invalid dimension {self.dim} for a {self.kind} cone")
        object.__setattr__(self, "_hash", hash((_KIND_CODES[self.kind], int(self.dim))))

    def __hash__(self) -> int:
        return cast(int, self.__dict__["_hash"])


@functools.lru_cache(maxsize=1024)
def _shared(kind: ConeKind, dim: int) -> Cone:
    return Cone(kind, dim)


def Zero(dim: int) -> Cone:
    """``{0}^dim``: equality rows ``A x = b``."""
    return _shared("zero", int(dim))


def Nonneg(dim: int) -> Cone:
    """``R_+^dim``: inequality rows ``A x <= b``."""
    return _shared("nonneg", int(dim))


def SOC(dim: int) -> Cone:
    """Second-order (Lorentz) cone ``{s : s_0 >= ||s_{1:dim}||}``."""
    return _shared("soc", int(dim))


@dataclass(frozen=True)
class Block:
    """A named slice ``[start, stop)`` of a program's variables or constraint rows.

    ``per`` is the number of entries per item (for example 3 impulse components per contact,
    normal first), so item ``i`` occupies ``start + i*per : start + (i+1)*per``.
    """

    name: str
    start: int
    stop: int
    per: int = 1

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)

    @property
    def size(self) -> int:
        return self.stop - self.start


def blocks_from_sizes(items: Sequence[tuple[str, int, int]]) -> tuple[Block, ...]:
    """Consecutive blocks from ``(name, size, per)`` triples."""
    out: list[Block] = []
    start = 0
    for name, size, per in items:
        out.append(Block(name, start, start + size, per))
        start += size
    return tuple(out)


def _check_blocks(blocks: tuple[Block, ...], total: int, what: str) -> None:
    position = 0
    for block in blocks:
        if block.start != position or block.stop < block.start:
            raise ShapeError(f"{what} layout: block {block.name!r} does not follow on at {position}")
        position = block.stop
    if blocks and position != total:
        raise ShapeError(f"{what} layout covers {position} entries, the program has {total}")


@dataclass(frozen=True)
class ConicProgram:
    """``min 1/2 x^T P x + c^T x  s.t.  A x + s = b, s in K`` (see module docstring).

    Attributes:
        P: (n, n) symmetric positive semidefinite, CSC (full, both triangles); checked once
            (:mod:`contactopt.programs.convexity`) unless its assembler marked it.
        c: (n,) linear cost.
        A: (m, n) constraint matrix, CSC.
        b: (m,) constraint right side.
        cones: cones of ``K`` in row order; their dims sum to m.
        variables: named blocks of x (e.g. ``v_next``, ``impulse``).
        constraints: named blocks of the rows (their duals y are often the impulses).
        metadata: JSON-serialisable description (formulation, options, dt, t, ...).
    """

    P: sp.csc_matrix
    c: FloatArray
    A: sp.csc_matrix
    b: FloatArray
    cones: tuple[Cone, ...]
    variables: tuple[Block, ...] = ()
    constraints: tuple[Block, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        c = np.array(self.c, dtype=np.float64).reshape(-1)
        n = c.shape[0]
        P = to_csc(self.P)
        if P.shape != (n, n):
            raise ShapeError(f"ConicProgram.P: expected shape ({n}, {n}), got {P.shape}")
        b = np.array(self.b, dtype=np.float64).reshape(-1)
        m = b.shape[0]
        A = to_csc(self.A) if m or n else empty_csc(m, n)
        if A.shape != (m, n):
            raise ShapeError(f"ConicProgram.A: expected shape ({m}, {n}), got {A.shape}")
        cones = tuple(self.cones)
        if sum(cone.dim for cone in cones) != m:
            raise ShapeError(f"ConicProgram.cones: dims sum to {sum(k.dim for k in cones)}, A has {m} rows")
        for name, arr in (("c", c), ("b", b), ("P", P.data), ("A", A.data)):
            if not np.isfinite(arr).all():
                raise ShapeError(f"ConicProgram.{name}: contains NaN or infinite entries")
        # marked by its assembler (csc.mark_symmetric), or a perturbed copy of a checked program (convexity.vouched)
        trusted = (symmetric_by_construction(P) or is_vouched()) and not debug_checks()
        if P.nnz and not trusted and not _symmetric(P, 1e-9 * max(1.0, float(np.abs(P.data).max()))):
            raise ShapeError("ConicProgram.P: not symmetric (give both triangles)")
        if not trusted:  # a convex program, or none: refused before any solver sees it
            smallest = smallest_eigenvalue_if_nonconvex(P)
            if smallest is not None:
                raise NonconvexProgramError(f"ConicProgram.P is not positive semidefinite (smallest eigenvalue "
                                            f"{smallest:.3g}): the program is not convex")
        _check_blocks(tuple(self.variables), n, "variable")
        _check_blocks(tuple(self.constraints), m, "constraint")
        for name, value in (("P", P), ("c", c), ("A", A), ("b", b), ("cones", cones),
                            ("variables", tuple(self.variables)),
                            ("constraints", tuple(self.constraints)),
                            ("metadata", dict(self.metadata))):
            object.__setattr__(self, name, value)

    @property
    def kind(self) -> str:
        """``"qp"`` without SOC cones, else ``"socp"``."""
        return "socp" if any(cone.kind == "soc" for cone in self.cones) else "qp"

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        """Number of constraint rows."""
        return int(self.b.shape[0])

    @property
    def A_T(self) -> sp.csr_matrix:
        """``A^T`` as CSR over A's own arrays, made once per program (residuals, the judge
        and refinement multiply by it several times per step)."""
        cached = self.__dict__.get("_A_T")
        if cached is None:  # A is canonical CSC: its arrays are canonical CSR of A^T (no scipy checks)
            cached = csr(self.A.data, self.A.indices, self.A.indptr, (self.A.shape[1], self.A.shape[0]))
            object.__setattr__(self, "_A_T", cached)  # a cache on a frozen program
        return cached

    @property
    def P_upper(self) -> sp.csc_matrix:
        """The upper triangle of ``P`` with its diagonal, CSC (what Clarabel and OSQP take), made
        once per program: the one its assembler recorded (:func:`.csc.attach_upper`), else by
        masking P's sorted CSC arrays (:func:`.csc.upper_triangle`)."""
        cached = self.__dict__.get("_P_upper")
        if cached is None:
            cached = attached_upper(self.P)
            if cached is None:
                cached = upper_triangle(self.P)
            elif debug_checks():
                expected = upper_triangle(self.P)
                if not all(np.array_equal(a, b) for a, b in ((cached.indptr, expected.indptr),
                                                              (cached.indices, expected.indices),
                                                              (cached.data, expected.data))):
                    raise ContactoptError("CONTACTOPT_DEBUG: the upper triangle recorded with P differs from P's")
            object.__setattr__(self, "_P_upper", cached)
        return cached

    def _dense(self, name: str) -> FloatArray | None:
        """A dense copy of ``A`` or ``P`` for a small program (made once), else None: the
        residuals, the judge and the refinement multiply by them several times per step, and
        a dense product is several times cheaper than scipy's sparse one at that size."""
        key = f"_dense_{name}"
        if key not in self.__dict__:
            matrix = self.A if name == "A" else self.P
            small = matrix.shape[0] * matrix.shape[1] <= DENSE_PRODUCT_ENTRIES
            object.__setattr__(self, key, matrix.toarray() if small else None)  # a cache on a frozen program
        return cast(_OptionalArray, self.__dict__[key])

    def A_dot(self, x: FloatArray) -> FloatArray:
        """``A x``."""
        dense = self._dense("A")
        return np.asarray(self.A @ x) if dense is None else dense @ x

    def AT_dot(self, y: FloatArray) -> FloatArray:
        """``A^T y``."""
        dense = self._dense("A")
        return np.asarray(self.A_T @ y) if dense is None else y @ dense

    def P_dot(self, x: FloatArray) -> FloatArray:
        """``P x``."""
        dense = self._dense("P")
        return np.asarray(self.P @ x) if dense is None else dense @ x

    def A_rows_dense(self, rows: NDArray[np.int_]) -> FloatArray:
        """The rows ``rows`` of ``A`` as a dense (len(rows), n) array."""
        dense = self._dense("A")
        return dense[rows] if dense is not None else np.asarray(self.A_T[:, rows].T.toarray())

    def cone_rows(self, kind: ConeKind) -> NDArray[np.bool_]:
        """(m,) mask of the rows that belong to cones of ``kind``."""
        mask = np.zeros(self.m, dtype=bool)
        row = 0
        for cone in self.cones:
            if cone.kind == kind:
                mask[row : row + cone.dim] = True
            row += cone.dim
        return mask

    def variable(self, x: ArrayLike, name: str) -> FloatArray:
        """The slice of a primal vector ``x`` named ``name`` in :attr:`variables`."""
        return np.asarray(x, dtype=np.float64)[_find(self.variables, name).slice]

    def row_block(self, y: ArrayLike, name: str) -> FloatArray:
        """The slice of a row vector (``y`` or ``s``) named ``name`` in :attr:`constraints`."""
        return np.asarray(y, dtype=np.float64)[_find(self.constraints, name).slice]

    def objective(self, x: ArrayLike) -> float:
        xv = np.asarray(x, dtype=np.float64)
        return float(0.5 * xv @ (self.P @ xv) + self.c @ xv)

    def summary(self) -> str:
        cones = ", ".join(f"{k.kind}({k.dim})" for k in self.cones) or "none"
        return f"{self.kind.upper()}: n={self.n} variables, m={self.m} rows, cones {cones}"

    def __repr__(self) -> str:
        """One line: kind, sizes, cones, nonzeros, the formulation (:mod:`contactopt.core.display`)."""
        return display.program_text(self)

    def _repr_html_(self) -> str:
        """Jupyter: a table of the layout, with the matrices of a small program."""
        return display.program_html(self)


def _symmetric(P: sp.csc_matrix, tol: float) -> bool:
    """``max |P - P^T| <= tol`` in O(nnz): small matrices compare dense copies (one array
    operation each); larger ones compute the transpose of the sorted CSC matrix as one
    CSR-to-CSC conversion, equal patterns compare their values entry by entry, different
    patterns (explicit zeros on one side) fall back to the sparse difference."""
    if P.shape[0] <= _DENSE_SYMMETRY_CHECK:
        dense = P.toarray()
        return bool((np.abs(dense - dense.T) <= tol).all())
    transposed = P.T.tocsc()
    if np.array_equal(transposed.indptr, P.indptr) and np.array_equal(transposed.indices, P.indices):
        return bool(np.abs(transposed.data - P.data).max(initial=0.0) <= tol)
    return bool(abs(P - transposed).max() <= tol)


#: Matrices with at most this many entries get a dense copy for products (:meth:`ConicProgram.A_dot`).
DENSE_PRODUCT_ENTRIES = 4096
#: P up to this order is checked for symmetry as a dense copy (at most 64^2 entries).
_DENSE_SYMMETRY_CHECK = 64


def _find(blocks: tuple[Block, ...], name: str) -> Block:
    for block in blocks:
        if block.name == name:
            return block
    known = ", ".join(b.name for b in blocks) or "none"
    raise KeyError(f"no block named {name!r} (blocks: {known})")


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
