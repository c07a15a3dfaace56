"""The derivative of a program's solution with respect to the program's data, dispatched on the
program kind (``co.derivatives.program_derivative``; the kinds' derivatives are in
:mod:`.conic`, :mod:`.primal`, :mod:`.lcp` and :mod:`.coulomb`).
"""

from __future__ import annotations

from typing import overload

from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.derivatives.conic import ConicDerivative
from contactopt.derivatives.coulomb import CoulombDerivative
from contactopt.derivatives.lcp import LCPDerivative
from contactopt.derivatives.primal import PrimalDerivative, why_not_primal_derivative
from contactopt.programs.conic import ConicProgram
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Solution

__all__ = ["METHODS", "program_derivative"]

METHODS = ("auto", "primal", "conic")


@overload
def program_derivative(program: ConicProgram, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> ConicDerivative | PrimalDerivative: ...
@overload
def program_derivative(program: LCP, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> LCPDerivative: ...
@overload
def program_derivative(program: CoulombProgram, solution: Solution, branch: str = ..., tol: float = ...,
                       method: str = ...) -> CoulombDerivative: ...
def program_derivative(program: ConicProgram | LCP | CoulombProgram, solution: Solution, branch: str = "active",
                       tol: float = 1e-8,
                       method: str = "auto") -> ConicDerivative | PrimalDerivative | LCPDerivative | CoulombDerivative:
    """The derivative of ``solution`` with respect to ``program``'s data.

    Args:
        program: a ConicProgram (data ``P, c, A, b``), an LCP (data ``M, q``) or a
            CoulombProgram (data ``W, q, mu``).
        solution: its solution, of status ``optimal``.
        branch: the one-sided derivative at points where strict complementarity is lost,
            ``"active"`` (constraint kept tight) or ``"inactive"`` (:mod:`.projection`).
        tol: relative size below which both sides of a complementary pair count as zero.
        method: for a ConicProgram, ``"auto"`` (:class:`PrimalDerivative` for the programs it
            takes, :func:`why_not_primal_derivative`, else :class:`ConicDerivative`),
            ``"primal"`` (PrimalDerivative or an error saying why not) or ``"conic"``
            (ConicDerivative, the general residual map, for any ConicProgram).
    """
    if method not in METHODS:
        raise OptionError(f"derivatives: method must be one of {METHODS}, got {method!r}")
    if isinstance(program, ConicProgram):
        if method == "primal" or (method == "auto" and why_not_primal_derivative(program) is None):
            return PrimalDerivative(program, solution, branch, tol)
        return ConicDerivative(program, solution, branch, tol)
    if isinstance(program, LCP):
        return LCPDerivative(program, solution, branch, tol)
    if isinstance(program, CoulombProgram):
        return CoulombDerivative(program, solution, branch, tol)
    raise UnsupportedProgramError(f"derivatives: no derivative for a {type(program).__name__} "
                                  "(a ConicProgram, an LCP or a CoulombProgram is differentiated)")
