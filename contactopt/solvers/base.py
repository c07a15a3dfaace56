"""What a solver backend declares, and the helpers every backend shares.

A backend is one module exposing ``SPEC`` (a :class:`SolverSpec`) and a function
``solve(program, variant, options) -> Solution``. The registry reads the specs without
importing the backends' third-party packages, so a missing package costs nothing until the
solver is asked for, and then it is reported with its install hint.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import io
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from contactopt.core.errors import OptionError
from contactopt.programs import LCP, ConicProgram, Residuals, Solution, Status, residuals
from contactopt.programs.coulomb import CoulombProgram, coulomb_residuals
from contactopt.programs.relative import conic_data_violation, lcp_data_violation
from contactopt.programs.residuals import conic_check

Program = ConicProgram | LCP | CoulombProgram
SolveFunction = Callable[[Program, "str | None", Mapping[str, Any]], Solution]


@dataclass(frozen=True)
class Tolerance:
    """One option through which a solver takes an accuracy, and the value it uses when none is
    given. ``relative``: a tolerance scaled by the data's norms (``eps_rel``), which a
    benchmark profile of absolute tolerances sets to 0 (qpbenchmark's convention);
    otherwise a benchmark passes ``min(profile eps, default)``: never looser than the
    solver's own default (:func:`contactopt.analysis.bench.solver_options`)."""

    option: str
    default: float
    relative: bool = False


class Registry(Protocol):
    """What a composite backend may ask of the solver registry (:mod:`contactopt.solvers`),
    handed to its ``solve`` as ``registry``."""

    def solve(self, program: Any, solver: str = ..., options: Mapping[str, Any] | None = ...,
              **kwargs: Any) -> Solution: ...

    def can_take(self, program: Any, solver: str) -> bool: ...

    def available(self) -> list[str]: ...

    def kinds(self, solver: str) -> frozenset[str]: ...

    def spec(self, solver: str) -> SolverSpec: ...


@dataclass(frozen=True)
class SolverSpec:
    """Declaration of a solver backend.

    Attributes:
        name: registry name (``clarabel``); variants are written ``name:VARIANT``.
        kinds: program kinds it takes natively (``qp``, ``socp``, ``lcp``).
        module: the contactopt module implementing it.
        requires: the third-party import name it needs, or None.
        install_hint: what to run when ``requires`` is missing.
        description: one line for ``contactopt list solvers``.
        variants: whether ``name:VARIANT`` selects an inner solver (cvxpy:SCS).
        warm_start: the option through which the backend takes an initial iterate (the
            time-stepping driver passes the previous step's solution there), or None.
        conversions: whether programs of another kind are routed to it through a conversion
            (False for a backend whose ``accepts`` needs a structure no conversion produces).
        interior_point: its answers are interior-point iterates, refined by default by the
            active-set step of :mod:`contactopt.solvers.refine` (solver option ``refine``).
        default_comparison: whether ``compare`` runs it when no solvers are named (a backend
            that only re-solves the same programs through other solvers, at many times their
            cost, sets False: it runs when named).
        normalize: whether programs far from unit size reach it in their own units
            (:mod:`contactopt.programs.normalize`); False for a backend that reads a
            formulation's structure (``A = -I`` of a dual program, SAP's primal layout), which a
            rescaling would hide.
        tolerances: the options through which it takes an accuracy, with their defaults
            (:class:`Tolerance`): how ``contactopt bench`` asks it for a profile's accuracy. A
            backend (a plugin) that declares none gets no tolerance option, and the results
            say so.
        time_limit: the option through which it takes a time limit in seconds, or None.
        history: whether it takes the option ``history=true`` and then records its iterations
            in ``Solution.history`` (:mod:`contactopt.solvers.history`); ``contactopt bench``
            asks only these for histories, and hands the option to no other backend.
        composite: its programs are solved through other solvers (``fixed_point``, ``staggered``):
            its ``solve`` takes the solver registry as the keyword ``registry`` (:class:`Registry`;
            a backend never imports the registry that imports it).
    """

    name: str
    kinds: frozenset[str]
    module: str
    requires: str | None
    install_hint: str
    description: str
    variants: bool = False
    warm_start: str | None = None
    conversions: bool = True
    interior_point: bool = False
    default_comparison: bool = True
    normalize: bool = True
    tolerances: tuple[Tolerance, ...] = ()
    time_limit: str | None = None
    history: bool = False
    composite: bool = False

    def is_available(self) -> bool:
        """Whether the backend's package is installed, without importing it. A package found
        once (or already imported) stays found for the process: ``solve`` asks every step, and
        ``find_spec`` walks ``sys.path`` (40-180 us); a missing one is looked for again."""
        if self.requires is None or self.requires in _FOUND or self.requires in sys.modules:
            return True
        if importlib.util.find_spec(self.requires) is None:
            return False
        _FOUND.add(self.requires)
        return True


#: Packages :meth:`SolverSpec.is_available` has found.
_FOUND: set[str] = set()


class Stopwatch:
    """Wall-clock times of a backend's setup and solve phases, measured by contactopt."""

    def __init__(self) -> None:
        self.setup = 0.0
        self.solve = 0.0

    @contextmanager
    def time(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, phase, getattr(self, phase) + time.perf_counter() - start)


_LIBC = ctypes.CDLL(None)


@contextmanager
def silence_c_stdout() -> Iterator[None]:
    """Silence a backend's printing for the duration, by both routes it can take: OSQP prints
    "Polishing not needed" with verbose off through ``PySys_WriteStdout``, i.e. Python's
    ``sys.stdout`` (in Jupyter the kernel's stream, which is not file descriptor 1), and C
    libraries print through C stdio on file descriptor 1 (sent to /dev/null meanwhile). Not
    thread-safe: solves run one per process."""
    if sys.stdout is not None:
        sys.stdout.flush()
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            saved = os.dup(1)
        except OSError:  # no usable file descriptor 1: the Python route alone
            yield
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            yield
        finally:
            _LIBC.fflush(None)  # C stdio buffers: flush while fd 1 is still /dev/null
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)


def check_options(solver: str, options: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(f"solver {solver!r}: unknown option(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known)) or 'none'}")


#: Residual levels, relative to the terms of each residual's own row
#: (:mod:`contactopt.programs.relative`), above which a solver's "optimal" is not believed:
#: INACCURATE above the first, NUMERICAL_ERROR (not an answer: a residual of 1 % of the terms
#: it balances, or more) above the second. An interior-point iterate that cannot tell a
#: barely touching contact from a barely open one sits between the two.
INACCURATE_LEVEL, WRONG_LEVEL = 1e-6, 1e-2
#: What contactopt's own iterative solvers (pgs, newton) require of a converged answer before
#: they stop: their global stopping tests pass on rows whose own terms are far below the
#: largest, and a tenth of the downgrade level leaves room for the recomputation's rounding.
CONFIRM_LEVEL = 0.1 * INACCURATE_LEVEL


def believed(program: Program, x: np.ndarray, y: np.ndarray | None) -> bool:
    """Whether a finite iterate passes contactopt's row-wise judgement at :data:`CONFIRM_LEVEL`
    (what contactopt's own iterative solvers ask before they stop); a non-finite one: True,
    its status says so already."""
    if not (np.all(np.isfinite(x)) and (y is None or np.all(np.isfinite(y)))):
        return True
    if isinstance(program, CoulombProgram):
        return coulomb_residuals(program, x).relative <= CONFIRM_LEVEL
    return residuals(program, x, y).relative <= CONFIRM_LEVEL


def coulomb_rounding_violation(program: CoulombProgram, r: np.ndarray) -> float:
    """How far the velocities ``u = W r + q`` of an answer ``r`` are beyond what floating point
    can tell, against the data's own velocities: ``eps ||W||_inf ||r||_inf / max(|q|)`` (the
    rounding of each product ``W r``, Higham, "Accuracy and Stability of Numerical Algorithms",
    sec. 3.5). A Coulomb problem with no solution can have iterates running off along a ray
    (``|r| ~ 1e16`` on the welded CMU humanoid's step 10) where the natural map, and so FCLIB's
    error and every row-wise ratio, round to 0: the answer then says nothing about the rows, and
    this ratio is 0.37 there (above :data:`WRONG_LEVEL`) instead of the ~1e-16 of a physical answer
    (impulses of order ``m |q|``, ``W`` of order ``1 / m``; ``tests/test_nsgs_drift.py``)."""
    r = np.asarray(r, dtype=np.float64)
    if not r.size or not np.all(np.isfinite(r)):
        return 0.0
    W = program.W
    row_sums = np.asarray(abs(W).sum(axis=1)).reshape(-1)
    scale = float(np.abs(program.q).max(initial=0.0))
    rounding = float(np.finfo(np.float64).eps * row_sums.max(initial=0.0) * np.abs(r).max())
    if scale == 0.0:
        return 0.0 if rounding == 0.0 else np.inf
    return rounding / scale


def judge(program: Program | None, x: np.ndarray, y: np.ndarray, res: Residuals, status: Status,
          message: str, s: np.ndarray | None = None, data_violation: float | None = None) -> tuple[Status, str]:
    """Downgrade a solver's claim when contactopt's own residuals contradict it.

    ``res.relative`` (every residual against its own row's terms) decides; a second reading
    measures the rows against the magnitudes the data alone implies, which a diverging
    iterate (``|x| ~ 1e11`` on an infeasible program, a row violated by 0.5) cannot hide in.
    Both are unit-free: the verdict does not change when a scene is written in other units.
    ``program = None`` judges a conic program's answer whose residuals and ``data_violation``
    were computed on its arrays (:mod:`contactopt.integrators.native_step`).
    """
    worst = res.relative
    if (program is None or isinstance(program, ConicProgram)) and np.isnan(res.gap):  # inf - inf: unverifiable
        worst = np.inf
    if np.isnan(worst) and program is not None:  # a Residuals made without the relative reading: compute it
        worst = residuals(program, x, y).relative
    where = "contacts" if isinstance(program, CoulombProgram) else "rows"
    if worst > WRONG_LEVEL:
        return Status.NUMERICAL_ERROR, (f"{message}; residuals {worst:.1e} (relative to their {where}) "
                                        "contradict the solver")
    if data_violation is not None or program is None:
        data = np.inf if data_violation is None else data_violation
    elif isinstance(program, LCP):
        data = lcp_data_violation(program, x, program.w(x) if s is None else s)
    elif isinstance(program, ConicProgram):
        data = conic_data_violation(program, x, program.b - program.A_dot(x) if s is None else s)
    else:
        data = coulomb_rounding_violation(program, x)
    if data > WRONG_LEVEL:
        if isinstance(program, CoulombProgram):
            return Status.NUMERICAL_ERROR, (f"{message}; impulses of size {np.abs(x).max():.1e} leave W r + q "
                                            f"known only to {data:.1e} of the data's velocities |q|: no answer "
                                            "can be read from them (contradicts the solver)")
        return Status.NUMERICAL_ERROR, (f"{message}; a row violated by {data:.1e} of the magnitudes its data "
                                        "implies contradicts the solver")
    if worst > INACCURATE_LEVEL and status is Status.OPTIMAL:
        return Status.INACCURATE, (f"{message}; residuals {worst:.1e} (relative to their {where}) above "
                                   f"{INACCURATE_LEVEL:g}")
    return status, message


def make_solution(
    program: Program, *, solver: str, status: Status, x: Any, y: Any | None,
    iterations: int, watch: Stopwatch, message: str = "", raw: Any = None,
    history: Mapping[str, Any] | None = None,
) -> Solution:
    """Assemble a :class:`Solution`, computing slacks and residuals ourselves.

    A missing or non-finite iterate becomes NaN arrays (the status says why). For a Coulomb
    problem ``x`` is the impulses ``r``, ``y`` is empty and ``s`` the local velocity
    ``u = W r + q``. ``history``: per-iteration criteria (equal-length 1-D arrays).
    """
    recorded = None if history is None else {key: np.asarray(value, dtype=np.float64)
                                             for key, value in history.items()}
    if isinstance(program, CoulombProgram):
        return _coulomb_solution(program, solver=solver, status=status, x=x, iterations=iterations, watch=watch,
                                 message=message, raw=raw, history=recorded)
    n = program.n
    m = program.n if isinstance(program, LCP) else program.m
    x_arr = np.full(n, np.nan) if x is None else np.asarray(x, dtype=np.float64).reshape(n)
    y_arr = np.zeros(0) if isinstance(program, LCP) else (
        np.full(m, np.nan) if y is None else np.asarray(y, dtype=np.float64).reshape(m))
    finite = bool(np.isfinite(x_arr).all() and np.isfinite(y_arr).all())
    if isinstance(program, LCP):
        s_arr = program.w(x_arr)
        res = residuals(program, x_arr, y_arr) if finite else Residuals(np.inf, np.inf, np.inf, np.inf, np.inf)
    elif finite:
        res, s_arr = conic_check(program, x_arr, y_arr)
    else:
        s_arr = program.b - program.A @ x_arr
        res = Residuals(np.inf, np.inf, np.inf, np.inf, np.inf)
    claimed = status
    if status.usable and not finite:
        status, message = Status.NUMERICAL_ERROR, f"{message}; solver returned a non-finite iterate"
    elif status.usable:
        status, message = judge(program, x_arr, y_arr, res, status, message, s_arr)
    return Solution(x=x_arr, y=y_arr, s=s_arr, status=status, iterations=int(iterations),
                    setup_time=watch.setup, solve_time=watch.solve, residuals=res,
                    solver=solver, message=message, raw=raw, claimed=None if status is claimed else claimed,
                    history=recorded)


def _coulomb_solution(program: CoulombProgram, *, solver: str, status: Status, x: Any, iterations: int,
                      watch: Stopwatch, message: str, raw: Any,
                      history: dict[str, np.ndarray] | None) -> Solution:
    r = np.full(program.m, np.nan) if x is None else np.asarray(x, dtype=np.float64).reshape(program.m)
    res = coulomb_residuals(program, r)
    claimed = status
    if status.usable and not np.all(np.isfinite(r)):
        status, message = Status.NUMERICAL_ERROR, f"{message}; solver returned a non-finite iterate"
    elif status.usable:
        status, message = judge(program, r, np.zeros(0), res, status, message)
    return Solution(x=r, y=np.zeros(0), s=program.velocity(r) if np.all(np.isfinite(r)) else np.full(program.m, np.nan),
                    status=status, iterations=int(iterations), setup_time=watch.setup, solve_time=watch.solve,
                    residuals=res, solver=solver, message=message, raw=raw,
                    claimed=None if status is claimed else claimed, history=history)
