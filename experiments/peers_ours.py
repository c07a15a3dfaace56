"""Our side of ``experiments/coulomb_peers.py``: contactopt's Coulomb solvers on one FCLIB problem.

A solver name is either ``legacy_fixed_point``, the De Saxcé fixed point over CCP programs of
:func:`contactopt.solvers.coulomb.fclib_solve.solve_coulomb` (Acary, Cadoux, Lemaréchal, Malick, ZAMM
91, 2011; each iteration one convex solve by ``conic``, Clarabel unless told), or any solver of
``co.solve`` on the file's Coulomb program (``co.load_program(path, form="coulomb")``; issue 25:
``nsgs``, ``nsn``, ``admm``, ``fixed_point``, ``staggered``), asked for FCLIB error ``tol``. The
answer's FCLIB error is computed by the caller, like Siconos's, from ``r`` alone.

``FAMILY`` pairs each of ours with the Siconos solver of the same method (Acary, Brémond, Huber
2018): nonsmooth Gauss-Seidel, semismooth Newton on Alart-Curnier, ADMM, and the
Acary-Cadoux-Lemaréchal-Malick fixed point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.fclib import FclibLocal
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb

FAMILY: dict[str, str] = {"nsgs": "NSGS", "nsn": "NSN-AC", "admm": "ADMM", "fixed_point": "ACLMFP",
                          "legacy_fixed_point": "ACLMFP"}
LEGACY = "legacy_fixed_point"
COULOMB_SOLVERS = ("nsgs", "nsn", "admm", "fixed_point", "staggered")  # issue 25's families, as they land
#: Run only when named (``--ours ...,fixed_point``), under an iteration budget: one CCP solve an
#: iteration, 1.5 s each on the 100-sphere pile's first step (2 cores), where it does not
#: converge in its default 100 (about 150 s a problem and tolerance).
OPT_IN = frozenset({"fixed_point"})
#: Seconds per contact of one solve at one tolerance, measured on the pile's first (hardest)
#: step, 486 contacts, 2 shared cores: the rates of the expected time printed before a run
#: (:func:`expected_seconds`); fixed_point's per iteration.
SECONDS_PER_CONTACT = {"nsgs": 1.6e-3, "nsn": 7.8e-3, "admm": 3.1e-3, "staggered": 3.7e-3, "fixed_point": 3.1e-3,
                       LEGACY: 3.1e-3}


def default_ours() -> tuple[list[str], list[str]]:
    """Issue 25's Coulomb solvers registered in ``co.solve`` but the opt-in ones (:data:`OPT_IN`;
    the legacy fixed point when none is registered yet), and those not registered."""
    from contactopt.solvers import names

    known = set(names())
    present = [name for name in COULOMB_SOLVERS if name in known and name not in OPT_IN]
    return present or [LEGACY], [name for name in COULOMB_SOLVERS if name not in known]


def expected_seconds(contacts: Sequence[int], ours: Sequence[str], tolerances: int, fixed_point_iterations: int,
                     rounds: int = 3, budget: float = 2.0) -> float:
    """An upper estimate of our side's time on problems of ``contacts`` contacts: each solve at
    :data:`SECONDS_PER_CONTACT` (the hardest pile step's rate), timed ``rounds`` times while the
    rounds take under ``budget`` s (``timed``); the fixed points at their iteration budget."""
    total = 0.0
    for name in ours:
        rate = SECONDS_PER_CONTACT.get(name, max(SECONDS_PER_CONTACT.values()))
        if name in OPT_IN or name == LEGACY:
            rate *= fixed_point_iterations
        for count in contacts:
            once = rate * count  # timed() starts a round while the rounds so far took under budget
            timings = min(rounds, max(1, math.ceil(budget / once))) if once > 0 else 1
            total += tolerances * timings * once
    return total


@dataclass(frozen=True)
class OursRun:
    """One of our solves: the answer (None on failure), iterations, best wall time of the rounds
    [s], rounds timed, the solver's own error claim, its status, and what went wrong."""

    solver: str
    tol: float
    r: NDArray[np.float64] | None
    iterations: int
    seconds: float
    rounds: int
    own_error: float
    status: str
    error: str = ""


def timed(call: Callable[[], Any], rounds: int, budget: float) -> tuple[Any, float, int]:
    """``call()`` up to ``rounds`` times, a further round only while the rounds so far took under
    ``budget`` seconds (slow solves are timed once); the last result, best time, rounds run."""
    times: list[float] = []
    result: Any = None
    while len(times) < rounds and (not times or sum(times) < budget):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return result, min(times), len(times)


def _legacy(problem: FclibLocal, tol: float, options: Mapping[str, Any], rounds: int, budget: float) -> OursRun:
    conic = str(options.get("conic", "clarabel"))
    max_iter = int(options.get("max_iterations", 200))
    result, seconds, done = timed(lambda: solve_coulomb(problem, conic, tol=tol, max_iter=max_iter), rounds, budget)
    status = "converged" if result.converged else f"not converged ({result.status.value} last)"
    return OursRun(LEGACY, tol, np.asarray(result.answer.r, dtype=np.float64), result.iterations, seconds, done,
                   result.error, status)


def _registered(name: str, path: Path, tol: float, options: Mapping[str, Any], rounds: int,
                budget: float) -> OursRun:
    import contactopt as co

    program = co.load_program(path, form="coulomb")  # loading is not part of the solve
    # the bare methods beside Siconos's: nsgs' and nsn's last resort (the fixed point) is another family
    bare = {"last_resort": "none"} if name in ("nsgs", "nsn") else {}
    solution, seconds, done = timed(lambda: co.solve(program, solver=name, options={**bare, **options, "tol": tol}),
                                    rounds, budget)
    own = getattr(solution.residuals, "fclib", None)
    return OursRun(name, tol, np.asarray(solution.x, dtype=np.float64), int(solution.iterations), seconds, done,
                   float(own) if own is not None else float("nan"), solution.status.value)


def solve_ours(name: str, problem: FclibLocal, path: Path | None, tol: float, options: Mapping[str, Any],
               rounds: int = 3, budget: float = 2.0) -> OursRun:
    """Our solver ``name`` on the problem (``path``: its file, for ``co.load_program``); a
    solver that raises gives a run with the error instead of an answer."""
    try:
        if name == LEGACY:
            return _legacy(problem, tol, options, rounds, budget)
        if path is None:
            raise ValueError("co.solve needs the problem's file")
        return _registered(name, path, tol, options, rounds, budget)
    except Exception as exc:  # one failing solve is a row of the report
        return OursRun(name, tol, None, 0, float("nan"), 0, float("nan"), "error", f"{type(exc).__name__}: {exc}")
