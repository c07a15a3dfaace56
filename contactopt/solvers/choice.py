"""Which solver a run uses: the one asked for, checked before the first step, or the best
installed one that takes the formulation's program."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contactopt import solvers
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.solvers.base import Program

__all__ = ["PREFERENCE", "check_solver_options", "choose", "takers"]

#: Order of preference when contactopt picks: exact-by-construction pivoting and the refined
#: interior point first, then the first-order methods (less accurate at their defaults). The
#: Coulomb solvers (which take only Coulomb programs) come first: ``lemke`` takes a Coulomb
#: program only through its pyramidal LCP, an approximation; of them the nonsmooth
#: Gauss-Seidel when registered, else the fixed point over CCPs.
PREFERENCE = ("nsgs", "fixed_point", "clarabel", "lemke", "osqp", "qpsolvers", "cvxpy", "pgs")


def takers(program: Program) -> list[str]:
    """Installed solvers that take ``program`` (natively or by a conversion), best first."""
    installed = set(solvers.available())
    ordered = [name for name in PREFERENCE if name in installed]
    ordered += [name for name in solvers.available() if name not in ordered]
    return [name for name in ordered if solvers.can_take(program, name)]


def choose(program: Program, solver: str, *, explicit: bool) -> tuple[str, str]:
    """``(solver, note)``: ``solver`` itself when it takes ``program``; otherwise, if the
    solver was only a default (``explicit`` False), the best one that does, with a note saying
    so; an explicit solver that cannot take it raises the one-line refusal naming those that can."""
    if solvers.can_take(program, solver):
        return solver, ""
    able = takers(program)
    kind = program.kind.upper()
    if explicit or not able:
        raise UnsupportedProgramError(f"solver {solver!r} cannot take a {kind} program; "
                                      f"solvers that can: {', '.join(able) or 'none installed'}")
    return able[0], f"the scene's solver {solver!r} cannot take a {kind} program; using {able[0]!r}"


def check_solver_options(program: Program, solver: str, options: Mapping[str, Any] | None) -> None:
    """Refuse bad solver options before the first step: a trial solve of step 0's program
    raises the backend's :class:`OptionError` (unknown setting, bad value); any other outcome
    is left to the run itself."""
    if not options:
        return
    try:
        solvers.solve(program, solver, options)
    except OptionError:
        raise
    except Exception:  # not an option problem: the run reports it in its step record
        return
