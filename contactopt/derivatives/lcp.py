"""Derivative of an :class:`~contactopt.programs.LCP`'s solution with respect to ``(M, q)``
through its complementarity pattern.

At a solution of ``0 <= z  ⟂  w = M z + q >= 0`` split the indices into the basic set ``B``
(``z_i > 0``, ``w_i = 0``) and the nonbasic set ``N`` (``z_i = 0``, ``w_i > 0``). Where the
pattern is strict it persists under small perturbations, so the solution is the linear
system's (Cottle, Pang & Stone, *The Linear Complementarity Problem*, 1992, §7.1
"sensitivity": the local solution map on a fixed complementary basis; the same active-set
step as Amos & Kolter, "OptNet", ICML 2017, §3) ::

    M_BB z_B = -q_B,   z_N = 0,   w_N = M_NB z_B + q_N,   w_B = 0.

With ``r = dM z + dq`` (JVP) ::

    dz_B = -M_BB^{-1} r_B,   dz_N = 0,   dw_N = M_NB dz_B + r_N,   dw_B = 0,

and for the VJP of ``<gz, z> + <gw, w>``, with ``a = gz_B + M_NB' gw_N`` ::

    g_q = (g_B, g_N) = (-M_BB^{-T} a, gw_N),   g_M = g_q z'   (nonzero only on B's columns).

A degenerate index (``z_i = w_i = 0``) is a kink of the solution map; ``branch`` puts it in
``B`` (``"active"``: the derivative of the side where ``z_i`` grows and ``w_i`` stays 0) or in
``N`` (``"inactive"``: ``z_i`` stays 0 and ``w_i`` grows). ``M_BB`` is factored once (LU) per
:class:`LCPDerivative`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import OptionError, ShapeError
from contactopt.derivatives.conic import NondifferentiableWarning, NotDifferentiableError, _vector
from contactopt.derivatives.linear import LinearSolve
from contactopt.derivatives.projection import BRANCHES
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Solution, Status

FloatArray = NDArray[np.float64]

__all__ = ["LCPDerivative", "LCPGradient", "LCPTangent"]


@dataclass(frozen=True)
class LCPTangent:
    """A JVP's answer: ``dz`` and ``dw`` (n,)."""

    z: FloatArray
    w: FloatArray


@dataclass(frozen=True)
class LCPGradient:
    """A VJP's answer: the gradients with respect to ``M`` (dense (n, n)) and ``q`` (n,)."""

    M: FloatArray
    q: FloatArray


#: Pivot ratio below which a basic block counts as nearly singular (:meth:`LCPDerivative._choose_basis`).
NEAR_SINGULAR = 1e-8


class LCPDerivative:
    """The derivative of an LCP's solution with respect to ``(M, q)`` (module docstring).

    Attributes:
        basic: indices of ``B`` (after the branch choice at degenerate indices).
        degenerate: the indices with ``z_i = w_i = 0`` (``|z_i|, |w_i| <= tol max(||z||, ||w||)``),
            given ``branch``'s one-sided derivative.
    """

    def __init__(self, program: LCP, solution: Solution, branch: str = "active", tol: float = 1e-8) -> None:
        if solution.status is not Status.OPTIMAL:
            raise NotDifferentiableError(f"derivatives: the solution's status is {solution.status.value!r}; "
                                         "only a solution contactopt judged optimal is differentiated")
        if branch not in BRANCHES:
            raise OptionError(f"derivatives: branch must be one of {BRANCHES}, got {branch!r}")
        n = program.n
        self.program = program
        self.z = _vector(solution.x, n, "solution.x")
        self.w = program.w(self.z)
        threshold = tol * max(float(np.abs(self.z).max(initial=0.0)), float(np.abs(self.w).max(initial=0.0)))
        ties = (np.abs(self.z) <= threshold) & (np.abs(self.w) <= threshold)
        self.degenerate: tuple[int, ...] = tuple(int(i) for i in np.flatnonzero(ties))
        self._choose_basis(program, ties, branch)
        if self.degenerate:
            warnings.warn(f"derivatives: z_i = w_i = 0 at {len(self.degenerate)} index(es) "
                          f"(first {self.degenerate[0]}); the {branch!r} one-sided derivative is used "
                          "(LCPDerivative.degenerate lists them)",
                          NondifferentiableWarning, stacklevel=2)
        #: True when the basic block is singular and the minimum-norm derivative is used.
        self.rank_deficient = self._lu is not None and self._lu.rank_deficient

    def _choose_basis(self, program: LCP, ties: NDArray[np.bool_], branch: str) -> None:
        """The basic set: strictly basic indices, and the degenerate ones on ``branch``'s side.

        Where that side's block is nearly singular (pivots spanning more than
        :data:`NEAR_SINGULAR`, short of the exactly singular case the minimum-norm solve
        handles) and the other side's is better conditioned, the other side is taken
        (:attr:`branch` says which): the friction indices of an untouched Stewart-Trinkle
        contact all sit at ``z = w = 0``, and keeping them basic couples rows that differ by
        round-off (a pendulum's tangent rows 7.8e-11 apart), whose solve returns impulses of
        1e10 that no contact can carry."""
        sides = [branch, *(side for side in BRANCHES if side != branch)] if ties.any() else [branch]
        for index, side in enumerate(sides):
            in_basis = np.where(ties, side == "active", self.z > self.w)
            basic, nonbasic = np.flatnonzero(in_basis), np.flatnonzero(~in_basis)
            solve = LinearSolve(program.M[np.ix_(basic, basic)], "M restricted to the basic set") \
                if basic.size else None
            good = solve is None or solve.rank_deficient or solve.pivot_ratio > NEAR_SINGULAR
            if index == 0 or good:
                self.branch, self.basic, self.nonbasic, self._lu = side, basic, nonbasic, solve
                self._coupling = program.M[np.ix_(nonbasic, basic)]
            if good:
                return

    def _solve(self, rhs: FloatArray, trans: Literal[0, 1]) -> FloatArray:
        return rhs if self._lu is None else self._lu.solve(rhs, transpose=trans == 1)

    def jvp(self, dM: ArrayLike | None = None, dq: ArrayLike | None = None) -> LCPTangent:
        """``(dz, dw)`` for the perturbation ``(dM, dq)`` (None: zero)."""
        n = self.program.n
        r = _vector(dq, n, "dq")
        if dM is not None:
            matrix = np.asarray(dM, dtype=np.float64)
            if matrix.shape != (n, n):
                raise ShapeError(f"derivatives: dM must have shape ({n}, {n}), got {matrix.shape}")
            r = r + matrix @ self.z
        dz, dw = np.zeros(n), np.zeros(n)
        dz[self.basic] = -self._solve(r[self.basic], 0)
        dw[self.nonbasic] = self._coupling @ dz[self.basic] + r[self.nonbasic]
        return LCPTangent(dz, dw)

    def vjp(self, gz: ArrayLike | None = None, gw: ArrayLike | None = None) -> LCPGradient:
        """The gradients with respect to ``(M, q)`` of ``<gz, z> + <gw, w>``."""
        n = self.program.n
        gz_v, gw_v = _vector(gz, n, "gz"), _vector(gw, n, "gw")
        seed = gz_v[self.basic] + self._coupling.T @ gw_v[self.nonbasic]
        grad_q = np.zeros(n)
        grad_q[self.basic] = -self._solve(seed, 1)
        grad_q[self.nonbasic] = gw_v[self.nonbasic]
        return LCPGradient(np.outer(grad_q, self.z), grad_q)
