"""Derivative of a :class:`~contactopt.programs.ConicProgram`'s solution with respect to its
data ``(P, c, A, b)``, by the implicit function theorem on its optimality conditions written
with the cone projection.

Agrawal, Barratt, Boyd, Busseti, Moursi, "Differentiating through a cone program", J. Appl.
Numer. Optim. 2019, §2-§3, with their homogeneous embedding replaced by the plain residual map
and extended by the quadratic term (as in Amos & Kolter, "OptNet", ICML 2017, §3 for QPs).
For ``min 1/2 x'Px + c'x  s.t.  Ax + s = b, s in K`` with dual ``y in K*``, put ``v = y - s``;
by Moreau's decomposition ``y = Pi(v)`` and ``s = Pi(v) - v`` (``Pi`` the projection onto
``K*``, :mod:`~contactopt.derivatives.projection`), and the solution is the root of ::

    F(x, v) = [ P x + c + A' Pi(v)   ]
              [ A x + Pi(v) - v - b  ]  = 0.

Differentiating (``D = DPi(v)``, symmetric) ::

    J [dx; dv] = -[ dP x + dc + dA' y ],      J = [ P   A' D  ]
                  [ dA x - db         ]           [ A   D - I ]

and ``dy = D dv``, ``ds = (D - I) dv`` (the JVP). The VJP solves ``J' w = -(gx, D gy + (D - I) gs)``
once; with ``w = (w1, w2)`` the gradients are ``c: w1``, ``b: -w2``, ``A: y w1' + w2 x'`` and
``P: (w1 x' + x w1') / 2`` (P symmetric: the symmetric part, so that ``<dP, grad_P>`` is exact
for every symmetric ``dP``). ``J`` is factored once (SuperLU) per :class:`ConicDerivative` and
the factorization serves every JVP and VJP.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ContactoptWarning, ShapeError
from contactopt.derivatives.linear import LinearSolve, NotDifferentiableError
from contactopt.derivatives.projection import DegeneratePoint, project, projection_derivative
from contactopt.programs.conic import DENSE_PRODUCT_ENTRIES, ConicProgram
from contactopt.programs.solution import Solution, Status

FloatArray = NDArray[np.float64]

__all__ = ["ConicDerivative", "ConicGradient", "ConicTangent", "NondifferentiableWarning",
           "NotDifferentiableError", "data_gradient", "data_residual", "residual_map"]


#: Largest ``n + m`` whose optimality-conditions Jacobian is assembled and factored dense.
DENSE_SIZE = 200


class NondifferentiableWarning(ContactoptWarning):
    """A solution at which strict complementarity is lost: a one-sided derivative is used."""


@dataclass(frozen=True)
class ConicTangent:
    """A JVP's answer: ``dx`` (n,), ``dy`` (m,), ``ds`` (m,)."""

    x: FloatArray
    y: FloatArray
    s: FloatArray


@dataclass(frozen=True)
class ConicGradient:
    """A VJP's answer: the gradient with respect to each datum.

    ``P`` and ``A`` are dense arrays, or ``scipy.sparse`` CSC matrices on exactly the program's
    sparsity pattern (the gradient with respect to its stored entries; entries outside the
    pattern are structural zeros the program cannot move), see :meth:`ConicDerivative.vjp`."""

    P: Any
    c: FloatArray
    A: Any
    b: FloatArray


def residual_map(program: ConicProgram, x: FloatArray, v: FloatArray) -> FloatArray:
    """``F(x, v)`` of the module docstring: zero at a solution with ``v = y - s``."""
    projected = project(program.cones, v)
    return np.concatenate([program.P_dot(x) + program.c + program.AT_dot(projected),
                           program.A_dot(x) + projected - v - program.b])


def _vector(value: ArrayLike | None, size: int, name: str) -> FloatArray:
    if value is None:
        return np.zeros(size)
    out = np.asarray(value, dtype=np.float64).reshape(-1)
    if out.shape != (size,):
        raise ShapeError(f"derivatives: {name} must have shape ({size},), got {out.shape}")
    return out


def _matrix_product(value: Any, vector: FloatArray, shape: tuple[int, int], name: str,
                    transpose: bool = False) -> FloatArray:
    """``value @ vector`` (or ``value' @ vector``) for a dense array or a scipy sparse matrix."""
    if value is None:
        return np.zeros(shape[0] if not transpose else shape[1])
    matrix: Any = value if sp.issparse(value) else np.asarray(value, dtype=np.float64)
    if matrix.shape != shape:
        raise ShapeError(f"derivatives: {name} must have shape {shape}, got {matrix.shape}")
    return np.asarray((matrix.T if transpose else matrix) @ vector).reshape(-1)


class ConicDerivative:
    """The derivative of a conic program's solution with respect to its data, built once from
    ``(program, solution)`` (see the module docstring); :meth:`jvp` and :meth:`vjp` share one
    factorization.

    Attributes:
        degenerate: the points where strict complementarity is lost, each with the one-sided
            derivative used (``branch``); empty at a differentiable solution.
    """

    def __init__(self, program: ConicProgram, solution: Solution, branch: str = "active",
                 tol: float = 1e-8) -> None:
        if solution.status is not Status.OPTIMAL:
            raise NotDifferentiableError(f"derivatives: the solution's status is {solution.status.value!r}; "
                                         "only a solution contactopt judged optimal is differentiated")
        n, m = program.n, program.m
        self.program = program
        self.x = _vector(solution.x, n, "solution.x")
        self.y = _vector(solution.y, m, "solution.y")
        self.s = _vector(solution.s, m, "solution.s")
        self.v = self.y - self.s
        small = n + m <= DENSE_SIZE  # small programs: dense blocks and LAPACK's LU, no sparse assembly
        derivative = projection_derivative(program.cones, self.v, branch, tol, dense=small)
        self.D: Any = derivative.matrix
        self.degenerate: tuple[DegeneratePoint, ...] = derivative.degenerate
        self.branch = branch
        if self.degenerate:
            warnings.warn(f"derivatives: strict complementarity is lost at {len(self.degenerate)} point(s) "
                          f"(first: cone {self.degenerate[0].cone}, {self.degenerate[0].kind}); the "
                          f"{branch!r} one-sided derivative is used (ConicDerivative.degenerate lists them)",
                          NondifferentiableWarning, stacklevel=2)
        if small:
            D = np.asarray(self.D)
            P, A = program.P.toarray(), program.A.toarray()
            jacobian: Any = np.block([[P, A.T @ D], [A, D - np.eye(m)]])
        else:
            blocks: Any = [[program.P, program.A_T @ self.D], [program.A, self.D - sp.eye_array(m)]]
            jacobian = sp.block_array(blocks, format="csc")
        self._lu = LinearSolve(jacobian, "the optimality conditions' Jacobian")
        #: True when the multipliers are not unique and the minimum-norm derivative is used.
        self.rank_deficient = self._lu.rank_deficient

    def coupled_rows(self) -> NDArray[np.bool_]:
        """Per row, whether its ``DPi`` row is not zero: the rows whose data move ``x`` (a row
        with ``DPi = 0`` enters ``x``'s equations only through ``A' DPi``: not at all)."""
        D: Any = self.D
        if not isinstance(D, np.ndarray):  # sparse
            return np.asarray(D.multiply(D).sum(axis=1)).reshape(-1) > 0.0
        return np.asarray(np.any(np.asarray(D) != 0.0, axis=1))

    def jvp(self, dP: Any = None, dc: ArrayLike | None = None, dA: Any = None,
            db: ArrayLike | None = None) -> ConicTangent:
        """``(dx, dy, ds)`` for the data perturbation ``(dP, dc, dA, db)`` (None: zero; ``dP``
        and ``dA`` dense arrays or scipy sparse matrices, ``dP`` symmetric)."""
        n = self.program.n
        step = -self._lu.solve(data_residual(self.program, self.x, self.y, dP, dc, dA, db))
        dx, dv = step[:n], step[n:]
        dy = np.asarray(self.D @ dv)
        return ConicTangent(dx, dy, dy - dv)

    def vjp(self, gx: ArrayLike | None = None, gy: ArrayLike | None = None, gs: ArrayLike | None = None,
            dense: bool | None = None) -> ConicGradient:
        """The gradient with respect to ``(P, c, A, b)`` of ``<gx, x> + <gy, y> + <gs, s>``.

        ``dense``: the matrix gradients as dense arrays (True) or as CSC matrices on the
        program's sparsity pattern (False); None: dense when the matrix has at most
        :data:`~contactopt.programs.conic.DENSE_PRODUCT_ENTRIES` entries."""
        n, m = self.program.n, self.program.m
        gy_v, gs_v = _vector(gy, m, "gy"), _vector(gs, m, "gs")
        seed = np.concatenate([_vector(gx, n, "gx"), np.asarray(self.D @ (gy_v + gs_v)) - gs_v])
        adjoint = -self._lu.solve(seed, transpose=True)
        return data_gradient(self.program, self.x, self.y, adjoint[:n], adjoint[n:], dense)


def data_residual(program: ConicProgram, x: FloatArray, y: FloatArray, dP: Any, dc: ArrayLike | None, dA: Any,
                  db: ArrayLike | None) -> FloatArray:
    """``(dP x + dc + dA' y, dA x - db)``: how the data perturbation moves ``F`` (module
    docstring) at the solution, the right-hand side of the JVP's linear system."""
    n, m = program.n, program.m
    first = (_matrix_product(dP, x, (n, n), "dP") + _vector(dc, n, "dc")
             + _matrix_product(dA, y, (m, n), "dA", transpose=True))
    second = _matrix_product(dA, x, (m, n), "dA") - _vector(db, m, "db")
    return np.concatenate([first, second])


def data_gradient(program: ConicProgram, x: FloatArray, y: FloatArray, w1: FloatArray, w2: FloatArray,
                  dense: bool | None) -> ConicGradient:
    """The data gradient of a VJP whose pairing with :func:`data_residual` is ``<w1, first> +
    <w2, second>`` (module docstring: ``c: w1``, ``b: -w2``, ``A: y w1' + w2 x'``, ``P`` the
    symmetric part of ``w1 x'``), dense or on the data's pattern as :meth:`ConicDerivative.vjp`."""
    P, A = program.P, program.A
    if dense if dense is not None else P.shape[0] * P.shape[1] <= DENSE_PRODUCT_ENTRIES:
        grad_P: Any = 0.5 * (np.outer(w1, x) + np.outer(x, w1))
    else:
        rows, cols = _pattern(P)
        grad_P = _on_pattern(P, 0.5 * (w1[rows] * x[cols] + x[rows] * w1[cols]))
    if dense if dense is not None else A.shape[0] * A.shape[1] <= DENSE_PRODUCT_ENTRIES:
        grad_A: Any = np.outer(y, w1) + np.outer(w2, x)
    else:
        rows, cols = _pattern(A)
        grad_A = _on_pattern(A, y[rows] * w1[cols] + w2[rows] * x[cols])
    return ConicGradient(grad_P, w1, grad_A, -w2)


def _pattern(matrix: sp.csc_matrix) -> tuple[NDArray[np.int_], NDArray[np.int_]]:
    """Row and column of each stored entry of a CSC matrix, in storage order."""
    cols = np.repeat(np.arange(matrix.shape[1]), np.diff(matrix.indptr))
    return matrix.indices.astype(np.int_), cols


def _on_pattern(matrix: sp.csc_matrix, values: FloatArray) -> sp.csc_matrix:
    return sp.csc_matrix((values, matrix.indices.copy(), matrix.indptr.copy()), shape=matrix.shape)
