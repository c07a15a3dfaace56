"""What the iterative Coulomb solvers ``nsn`` and ``admm`` share: the common options of
:mod:`contactopt.programs.coulomb` (``tol``, ``max_iterations``, ``history``, ``r0``,
``symmetrize``), the stopping test (FCLIB's error at most ``tol`` and contactopt's own
judgement, :func:`~contactopt.programs.coulomb.coulomb_believed`), the convergence history
(one :func:`~contactopt.programs.coulomb.coulomb_criteria` row per iterate, plus
``iteration``, ``time`` and the solver's own columns) and the final :class:`Solution`."""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs import Solution, Status
from contactopt.programs.coulomb import CoulombProgram, coulomb_believed, coulomb_criteria
from contactopt.programs.coulomb_error import natural_map
from contactopt.solvers.base import Program, Stopwatch, check_options, make_solution

__all__ = ["COMMON_OPTIONS", "Monitor", "coulomb_program", "finish", "integer_option", "real_option"]

FloatArray = NDArray[np.float64]

COMMON_OPTIONS = {"tol", "max_iterations", "history", "r0", "symmetrize"}
DEFAULT_TOL = 1e-8


def real_option(solver: str, options: Mapping[str, Any], key: str, default: float, *, positive: bool = True) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise OptionError(f"solver {solver!r}: {key} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise OptionError(f"solver {solver!r}: {key} must be a {'positive' if positive else 'nonnegative'} "
                          f"finite number, got {value!r}")
    return value


def integer_option(solver: str, options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise OptionError(f"solver {solver!r}: {key} must be an integer, got {value!r}") from None
    if number < 0:
        raise OptionError(f"solver {solver!r}: {key} must be >= 0, got {number}")
    return number


def _flag(solver: str, options: Mapping[str, Any], key: str, default: bool) -> bool:
    value = options.get(key, default)
    if not isinstance(value, bool | np.bool_):
        raise OptionError(f"solver {solver!r}: {key} must be true or false, got {value!r}")
    return bool(value)


def coulomb_program(solver: str, program: Program, options: Mapping[str, Any], known: set[str], *,
                    needs_symmetry: bool) -> tuple[CoulombProgram, FloatArray, str]:
    """The program the solver iterates on (``W`` symmetrized when asked, or refused when the
    solver needs symmetry and ``W`` lacks it), the start ``r0`` (zeros by default) and a note
    for the message."""
    check_options(solver, options, known)
    if not isinstance(program, CoulombProgram):
        raise UnsupportedProgramError(f"solver {solver!r} takes Coulomb problems (kind 'coulomb'), "
                                      f"got a {program.kind} program")
    note = ""
    if _flag(solver, options, "symmetrize", False) and not program.symmetric:
        note = f"; solved with the symmetric part of W, (W + W^T)/2 (asymmetry {program.asymmetry:.1e})"
        program = program.symmetrized()
    elif needs_symmetry and not program.symmetric:
        raise UnsupportedProgramError(f"solver {solver!r} needs a symmetric W (it minimizes convex quadratics "
                                      f"1/2 r'W r + ...); this W is nonsymmetric by {program.asymmetry:.1e} of "
                                      "its largest entry: pass symmetrize=true to solve with (W + W^T) / 2")
    r0 = options.get("r0")
    if r0 is None:
        start = np.zeros(program.m)
    else:
        start = np.array(r0, dtype=np.float64).reshape(-1)
        if start.shape != (program.m,) or not np.all(np.isfinite(start)):
            raise OptionError(f"solver {solver!r}: r0 must be {program.m} finite numbers (the impulses), "
                              f"got shape {np.shape(r0)}")
    return program, start, note


class Monitor:
    """The stopping test and the history of one solve. :meth:`stop` is given every iterate
    ``r`` with its velocity ``u = W r + q`` (already computed by the solver, so the test costs
    one natural map) and the solver's own columns."""

    def __init__(self, solver: str, program: CoulombProgram, options: Mapping[str, Any],
                 accept: Callable[[FloatArray, FloatArray], bool] | None = None) -> None:
        self.program = program
        self.tol = real_option(solver, options, "tol", DEFAULT_TOL)
        self.recording = _flag(solver, options, "history", False)
        self.rows: list[dict[str, float]] = []
        self.error = math.inf
        self.accept = accept
        self.start = time.perf_counter()
        self.scale = 1.0 + math.sqrt(float(np.linalg.norm(program.q)))

    def stop(self, iteration: int, r: FloatArray, u: FloatArray, **extra: float) -> bool:
        if self.recording:
            row = coulomb_criteria(self.program, r)
            row.update(extra, iteration=float(iteration), time=time.perf_counter() - self.start)
            self.rows.append(row)
        if self.accept is not None:  # the solver's own problem (admm's CCP)
            return self.accept(r, u)
        program = self.program
        self.error = float(np.linalg.norm(natural_map(r, u, program.mu, program.dim))) / self.scale
        return self.error <= self.tol and coulomb_believed(program, r)

    def history(self) -> dict[str, FloatArray] | None:
        if not self.recording:
            return None
        return {key: np.array([row[key] for row in self.rows]) for key in self.rows[0]} if self.rows else {}


def finish(solver: str, given: Program, monitor: Monitor, r: FloatArray, iterations: int, stopped: bool,
           watch: Stopwatch, what: str, note: str, raw: dict[str, Any]) -> Solution:
    """The :class:`Solution` of ``r``, judged against the program as given."""
    if not np.all(np.isfinite(r)):
        status, message = Status.NUMERICAL_ERROR, f"non-finite iterate after {iterations} {what}"
    elif stopped:
        status, message = Status.OPTIMAL, f"converged in {iterations} {what}"
    else:
        status = Status.MAX_ITERATIONS
        error = monitor.error if monitor.accept is None else math.nan
        message = (f"not converged after {iterations} {what} (FCLIB error {error:.2e}, asked {monitor.tol:g})"
                   if monitor.accept is None else f"not converged after {iterations} {what}")
    with np.errstate(over="ignore", invalid="ignore"):
        return make_solution(given, solver=solver, status=status, x=r, y=None, iterations=iterations, watch=watch,
                             message=message + note, raw=raw, history=monitor.history())
