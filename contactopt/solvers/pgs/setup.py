"""Which programs :mod:`contactopt.solvers.pgs.solver` takes, and their sweep data.

:func:`check` says (in O(nnz)) why a program is refused; :func:`setup` turns an accepted one
into the block structure of the sweeps, in the scaled coordinates ``u = E x`` described in the
docstring of :mod:`contactopt.solvers.pgs.solver`; :func:`refusal` is the error message naming the
solvers that can take a refused program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.programs import LCP, ConicProgram, LCPToQP, QPToLCP

#: The kinds pgs takes (the registry's ``Program`` also includes Coulomb problems).
Program = ConicProgram | LCP

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

NONNEG = -1.0  # the ``m`` of a block that is a single Nonneg row


@dataclass(frozen=True)
class Setup:
    """A program in the coordinates ``u = E x`` that the sweeps work in (module docstring).

    ``blocks`` are ``(start, stop, m, step)`` in sweep order: ``m`` is the circular cone's
    slope, or ``NONNEG`` for one Nonneg row; ``step`` is ``1/H_ii`` or ``1/L_b``.
    ``HT`` holds the columns of ``H`` as rows (``H`` itself when symmetric).
    """

    H: FloatArray
    HT: FloatArray
    f: FloatArray
    E: FloatArray
    blocks: tuple[tuple[int, int, float, float], ...]
    nonneg: IntArray
    fixed: IntArray  # Zero rows: x_i = 0
    cone_groups: tuple[tuple[IntArray, FloatArray], ...]
    D: FloatArray | None  # -diag(A) of a cone program; None for an LCP

    @property
    def arrays(self) -> tuple[Any, IntArray, IntArray, FloatArray, FloatArray]:
        """``HT`` in CSR form and ``blocks`` as arrays, for the sweep kernel (once per set-up)."""
        cached = self.__dict__.get("_arrays")
        if cached is None:
            table = np.array(self.blocks, dtype=np.float64).reshape(-1, 4)
            cached = (sp.csr_matrix(self.HT), table[:, 0].astype(np.intp), table[:, 1].astype(np.intp),
                      np.ascontiguousarray(table[:, 2]), np.ascontiguousarray(table[:, 3]))
            object.__setattr__(self, "_arrays", cached)
        return cached



def check(program: Program) -> str | None:
    """Why pgs cannot take ``program`` (structure and diagonals only: O(nnz)), or None."""
    if isinstance(program, LCP):
        diagonal = np.diag(program.M)
        bad = np.flatnonzero(~(diagonal > 0))
        if bad.size:
            i = int(bad[0])
            return (f"projected Gauss-Seidel divides by the diagonal of M, and M[{i},{i}] = "
                    f"{diagonal[i]:.3g} is not positive ({bad.size} such entries; LCPs with zero "
                    "diagonal blocks, like the Stewart-Trinkle LCP, need pivoting)")
        return None
    if not isinstance(program, ConicProgram):
        return f"it is a {type(program).__name__}, not an LCP or a ConicProgram"
    n, m = program.n, program.m
    if m != n:
        return f"{_DUAL_SHAPE}; this one has {m} rows for {n} variables"
    A = program.A.tocoo()
    if np.any((A.row != A.col) & (A.data != 0)):
        return f"{_DUAL_SHAPE}; this one's A has off-diagonal entries"
    if np.any(program.b != 0):
        return f"{_DUAL_SHAPE}; this one has b != 0"
    D = -program.A.diagonal()
    if np.any(~(D > 0)):
        i = int(np.flatnonzero(~(D > 0))[0])
        return f"{_DUAL_SHAPE}; this one has D[{i}] = -A[{i},{i}] = {D[i]:.3g}, not > 0"
    # A block needs curvature for its step: P_ii > 0 on a Nonneg row, some P_ii > 0 in an SOC
    # block (then lambda_max(H_bb) >= max_i H_ii > 0).
    curvature = program.P.diagonal()
    row = 0
    for cone in program.cones:
        start, row = row, row + cone.dim
        if cone.kind == "zero" or cone.dim == 0:
            continue
        flat = curvature[start:row] <= 0
        if (cone.kind == "nonneg" and np.any(flat)) or (cone.kind == "soc" and np.all(flat)):
            where = start + int(np.flatnonzero(flat)[0])
            return (f"P[{where},{where}] = {curvature[where]:.3g}: the objective has no curvature "
                    f"in the {cone.kind} block at row {where if cone.kind == 'nonneg' else start} "
                    "to scale a Gauss-Seidel step")
    return None


_DUAL_SHAPE = ("pgs takes LCPs and dual cone programs 'minimize 1/2 x'Px + c'x subject to D x in K' "
               "(A = -D with D diagonal and positive, b = 0, cones Nonneg, SOC, Zero)")


def build_setup(program: Program) -> Setup:
    """The sweep data of a program that :func:`check` accepted."""
    if isinstance(program, LCP):
        M = np.array(program.M, dtype=np.float64)
        n = program.n
        blocks = tuple((i, i + 1, NONNEG, 1.0 / float(M[i, i])) for i in range(n))
        HT = M if program.is_symmetric(tol=0.0) else np.ascontiguousarray(M.T)
        return Setup(H=M, HT=HT, f=np.array(program.q), E=np.ones(n), blocks=blocks,
                      nonneg=np.arange(n), fixed=np.zeros(0, dtype=np.intp), cone_groups=(),
                      D=None)
    D = -program.A.diagonal()
    E = np.ones(program.n)
    specs: list[tuple[int, int, float]] = []  # (start, stop, m), m = NONNEG for one row
    fixed: list[int] = []
    row = 0
    for cone in program.cones:
        start, row = row, row + cone.dim
        if cone.kind == "zero":
            fixed += range(start, row)
        elif cone.kind == "nonneg":
            specs += [(i, i + 1, NONNEG) for i in range(start, row)]
        elif cone.dim:
            tangential = D[start + 1 : row]
            s = float(np.sqrt(np.mean(tangential**2))) if tangential.size else 1.0
            E[start] = s
            E[start + 1 : row] = tangential
            specs.append((start, row, float(D[start]) / s))
    H = program.P.toarray() / np.outer(E, E)
    blocks = tuple(
        (start, stop, slope, 1.0 / float(H[start, start] if slope == NONNEG else
                                         np.linalg.eigvalsh(H[start:stop, start:stop])[-1]))
        for start, stop, slope in specs)
    nonneg = np.array([start for start, _, slope in specs if slope == NONNEG], dtype=np.intp)
    by_dim: dict[int, list[tuple[int, float]]] = {}
    for start, stop, slope in specs:
        if slope != NONNEG:
            by_dim.setdefault(stop - start, []).append((start, slope))
    groups = tuple((np.array([[s + k for k in range(dim)] for s, _ in members], dtype=np.intp),
                    np.array([slope for _, slope in members]))
                   for dim, members in by_dim.items())
    return Setup(H=H, HT=H, f=program.c / E, E=E, blocks=blocks, nonneg=nonneg,
                  fixed=np.array(fixed, dtype=np.intp), cone_groups=groups, D=D)


def refusal(program: Program, reason: str) -> str:
    """The error message: why, and which solvers can take the program."""
    if isinstance(program, LCP):
        who = ["lemke"]
        if LCPToQP().accepts(program) is None:
            who += ["clarabel", "osqp", "cvxpy (through the lcp->qp conversion)"]
        kind = "this LCP"
    else:
        who = ["clarabel", "cvxpy"] + (["osqp"] if program.kind == "qp" else [])
        if QPToLCP().accepts(program) is None:
            who.append("lemke (through the qp->lcp conversion)")
        kind = f"this {program.kind.upper()}"
    return f"solver 'pgs' cannot take {kind}: {reason}; solvers that can: {', '.join(who)}"
