"""Explicit conversions between program kinds, each a pair ``apply`` / ``invert``.

``QPToLCP`` (strictly convex QP with inequality rows only -> LCP of its KKT conditions)::

    min 1/2 x'Px + c'x  s.t.  A x <= b            (P positive definite)
    KKT:  P x + c + A'y = 0,   0 <= y ⟂ b - A x >= 0
    =>    x = -P^{-1}(c + A'y)  and  0 <= y ⟂ (A P^{-1} A') y + (b + A P^{-1} c) >= 0

so ``LCP(M = A P^{-1} A', q = b + A P^{-1} c)`` with ``z = y`` and ``w = s``. This is the
passage from the frictionless Gauss QP to its LCP in Tedrake 2022 ("Time-stepping LCP:
Normal force": "the LCP ... is precisely the optimality conditions of this convex QP").

``NonnegQPToLCP`` (a convex QP over the nonnegative orthant -> LCP, no inverse needed)::

    min 1/2 x'Px + c'x  s.t.  x >= 0     (rows: -I x + s = 0, s in R_+^n)
    KKT:  P x + c - y = 0,   0 <= y ⟂ x >= 0     =>   LCP(M = P, q = c),  z = x,  w = y

(the dual programs of the Gauss and Anitescu formulations have this form, with P the
Delassus matrix, often singular: four table legs).

``LCPToQP`` (LCP with symmetric positive semidefinite M -> convex QP)::

    min 1/2 z'Mz + q'z  s.t.  z >= 0     (rows: -I z + s = 0, s in R_+^n)

whose KKT conditions ``M z + q - y = 0, 0 <= y ⟂ z >= 0`` are the LCP with ``w = y``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ConversionError
from contactopt.programs.conic import Block, ConicProgram, Nonneg
from contactopt.programs.lcp import LCP
from contactopt.programs.residuals import conic_residuals, lcp_residuals
from contactopt.programs.solution import Solution

FloatArray = NDArray[np.float64]

__all__ = ["LCPToQP", "NonnegQPToLCP", "QPToLCP", "lcp_to_qp", "qp_to_lcp"]


@dataclass(frozen=True)
class QPToLCP:
    """Reduction from a strictly convex inequality-constrained QP to an LCP (see module doc)."""

    name: str = "qp->lcp"
    max_condition: float = 1e12

    def accepts(self, program: ConicProgram | LCP) -> str | None:
        """None if the conversion applies, else the reason it does not."""
        if not isinstance(program, ConicProgram):
            return "it is not a conic program"
        if program.kind != "qp":
            return "it has second-order cone rows"
        if any(cone.kind == "zero" and cone.dim > 0 for cone in program.cones):
            return "it has equality rows (a mixed LCP, not supported by this conversion)"
        factor = self._factor(program)
        return factor if isinstance(factor, str) else None

    def _factor(self, program: ConicProgram) -> tuple[FloatArray, bool] | str:
        """Cholesky factor of P, or the reason P is not (numerically) positive definite."""
        try:
            factor = scipy.linalg.cho_factor(program.P.toarray())
        except np.linalg.LinAlgError:
            return "P is not positive definite"
        # Cholesky succeeds on numerically singular P; its diagonal bounds the condition
        # number from below (cond(P) >= (max L_ii / min L_ii)^2), so refuse hopeless ones.
        diagonal = np.abs(np.diag(factor[0]))
        ratio = diagonal.max() / diagonal.min() if diagonal.size and diagonal.min() > 0 else np.inf
        if diagonal.size and ratio**2 > self.max_condition:
            return f"P is numerically singular (condition number above {self.max_condition:.0e})"
        return factor

    def apply(self, program: ConicProgram) -> tuple[LCP, tuple[FloatArray, ConicProgram]]:
        reason = self.accepts(program)
        if reason is not None:
            raise ConversionError(f"cannot convert the QP to an LCP: {reason}")
        factor = self._factor(program)
        assert not isinstance(factor, str)
        A = program.A.toarray()
        P_inv_At = scipy.linalg.cho_solve(factor, A.T) if A.size else np.zeros((program.n, 0))
        P_inv_c = scipy.linalg.cho_solve(factor, program.c)
        M = A @ P_inv_At
        M = 0.5 * (M + M.T)
        q = program.b + A @ P_inv_c
        lcp = LCP(M, q, variables=_row_blocks_as_variables(program.constraints),
                  metadata={**program.metadata, "converted_from": "qp"})
        return lcp, (np.hstack([P_inv_c[:, None], P_inv_At]), program)

    def invert(self, solution: Solution, data: tuple[FloatArray, ConicProgram]) -> Solution:
        """``x = -P^{-1}(c + A'z)``, ``y = z``, ``s = b - A x``; residuals on the original QP."""
        P_inv_c_At, program = data
        z = solution.x
        x = -(P_inv_c_At[:, 0] + P_inv_c_At[:, 1:] @ z)
        s = program.b - program.A @ x
        return replace(solution, x=x, y=z.copy(), s=s,
                       residuals=conic_residuals(program, x, z), conversion=self.name)


@dataclass(frozen=True)
class NonnegQPToLCP:
    """Reduction from ``min 1/2 x'Px + c'x s.t. x >= 0`` to ``LCP(P, c)`` (see module doc)."""

    name: str = "qp(x>=0)->lcp"

    def accepts(self, program: ConicProgram | LCP) -> str | None:
        if not isinstance(program, ConicProgram) or program.kind != "qp":
            return "it is not a QP"
        if program.m != program.n or any(cone.kind != "nonneg" for cone in program.cones if cone.dim):
            return "its rows are not exactly x >= 0"
        A = program.A.tocoo()
        identity = A.nnz == program.n and np.all(A.row == A.col) and np.all(A.data == -1.0)
        if not identity or np.any(program.b != 0):
            return "its rows are not exactly x >= 0"
        return None

    def apply(self, program: ConicProgram) -> tuple[LCP, ConicProgram]:
        reason = self.accepts(program)
        if reason is not None:
            raise ConversionError(f"cannot read the QP as an LCP: {reason}")
        P = program.P.toarray()
        return LCP(0.5 * (P + P.T), program.c, variables=program.variables,
                   metadata={**program.metadata, "converted_from": "qp"}), program

    def invert(self, solution: Solution, program: ConicProgram) -> Solution:
        """``x = z``, ``y = w``, ``s = x``; residuals on the original QP."""
        x, y = solution.x, solution.s
        return replace(solution, x=x, y=y, s=x.copy(), residuals=conic_residuals(program, x, y),
                       conversion=self.name)


@dataclass(frozen=True)
class LCPToQP:
    """Reduction from an LCP with symmetric PSD ``M`` to a convex QP (see module doc)."""

    name: str = "lcp->qp"
    psd_tolerance: float = 1e-9

    def accepts(self, program: ConicProgram | LCP) -> str | None:
        if not isinstance(program, LCP):
            return "it is not an LCP"
        if not program.is_symmetric():
            return "M is not symmetric"
        if program.n:
            smallest = float(np.linalg.eigvalsh(program.M).min())
            scale = max(1.0, float(np.abs(program.M).max()))
            if smallest < -self.psd_tolerance * scale:
                return f"M is not positive semidefinite (smallest eigenvalue {smallest:.3g})"
        return None

    def apply(self, lcp: LCP) -> tuple[ConicProgram, LCP]:
        reason = self.accepts(lcp)
        if reason is not None:
            raise ConversionError(f"cannot convert the LCP to a QP: {reason}")
        n = lcp.n
        M = 0.5 * (lcp.M + lcp.M.T)
        qp = ConicProgram(
            P=sp.csc_matrix(M), c=lcp.q, A=-sp.identity(n, format="csc"), b=np.zeros(n),
            cones=(Nonneg(n),), variables=lcp.variables,
            constraints=(Block("z_nonneg", 0, n),) if n else (),
            metadata={**lcp.metadata, "converted_from": "lcp"},
        )
        return qp, lcp

    def invert(self, solution: Solution, lcp: LCP) -> Solution:
        """``z = x``, ``w = M z + q``; residuals on the original LCP."""
        z = solution.x
        return replace(solution, x=z, y=np.zeros(0), s=lcp.w(z),
                       residuals=lcp_residuals(lcp, z), conversion=self.name)


def _row_blocks_as_variables(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
    # The LCP variable z is the QP's dual y, so the rows' names carry over.
    return tuple(Block(f"dual:{b.name}", b.start, b.stop, b.per) for b in blocks)


def qp_to_lcp(program: ConicProgram) -> LCP:
    """The LCP of the KKT conditions of a strictly convex inequality-constrained QP."""
    return QPToLCP().apply(program)[0]


def lcp_to_qp(lcp: LCP) -> ConicProgram:
    """The convex QP whose KKT conditions are an LCP with symmetric PSD ``M``."""
    return LCPToQP().apply(lcp)[0]
