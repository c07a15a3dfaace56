"""An LCP solver by enumeration of complementary bases.

``w = M z + q``, ``0 <= z ⟂ w >= 0``: a solution has a set ``a`` of indices where ``w_a = 0``
and ``z`` vanishes elsewhere, so ``z_a`` solves ``M_aa z_a = -q_a``. Trying every set (by
increasing size, the empty set first: ``z = 0`` when ``q >= 0``) finds a solution whenever one
exists with a nonsingular ``M_aa`` (Cottle, Pang & Stone, *The Linear Complementarity Problem*,
sec. 1.1). The cost is ``2^n`` small solves, so it takes at most ``MAX_SIZE`` variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np

from contactopt import LCP, Solution, Status
from contactopt.solvers.base import SolverSpec, Stopwatch, check_options, make_solution

SPEC = SolverSpec(name="enumlcp", kinds=frozenset({"lcp"}), module=__name__, requires=None,
                  install_hint="(demo plugin)", description="LCP by enumerating complementary bases (demo plugin)")

MAX_SIZE = 12
# Feasibility is judged to this absolute level; contactopt recomputes the residuals anyway.
TOLERANCE = 1e-10


def accepts(program: Any) -> str | None:
    """Why a program is refused (too many variables to enumerate), or None."""
    return f"enumlcp takes at most {MAX_SIZE} variables, got {program.n}" if program.n > MAX_SIZE else None


def enumerate_lcp(M: np.ndarray, q: np.ndarray, tol: float = TOLERANCE) -> tuple[np.ndarray | None, int]:
    """The first complementary solution found and the number of bases tried."""
    n = q.shape[0]
    tried = 0
    for size in range(n + 1):
        for basis in combinations(range(n), size):
            tried += 1
            a = list(basis)
            z = np.zeros(n)
            if a:
                try:
                    z[a] = np.linalg.solve(M[np.ix_(a, a)], -q[a])
                except np.linalg.LinAlgError:
                    continue
            if z.min(initial=0.0) >= -tol and (M @ z + q).min(initial=0.0) >= -tol:
                return np.maximum(z, 0.0), tried
    return None, tried


def solve(program: LCP, variant: str | None, options: Mapping[str, Any]) -> Solution:
    check_options("enumlcp", options, {"tol"})
    watch = Stopwatch()
    with watch.time("solve"):
        z, tried = enumerate_lcp(program.M, program.q, float(options.get("tol", TOLERANCE)))
    status = Status.OPTIMAL if z is not None else Status.INFEASIBLE
    message = f"{tried} bases tried" + ("" if z is not None else "; no complementary solution")
    return make_solution(program, solver="enumlcp", status=status, x=z, y=None, iterations=tried,
                         watch=watch, message=message)
