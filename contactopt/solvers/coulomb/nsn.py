"""``nsn``: semismooth Newton on the Alart-Curnier function for FCLIB's local Coulomb problem
(ours; as Siconos's ``fc3d_nonsmooth_Newton_AlartCurnier``, "NSN-AC": Alart & Curnier, CMAME
92, 1991; Acary, Brémond & Huber, "On solving contact problems with Coulomb friction:
formulations and numerical comparisons", 2018). The method, its Jacobian, line searches and
fallbacks are in :mod:`contactopt.solvers.coulomb.alart_curnier`.

Options (besides the common ``tol``, ``max_iterations`` (default 100), ``history``, ``r0``,
``symmetrize`` of :mod:`contactopt.solvers.coulomb.options`):

- ``rho``: the Alart-Curnier parameter, a positive number for every contact or one per
  contact; default ``rho_c = 1 / max diag W_cc`` (:func:`~contactopt.programs.coulomb.local_scaling`,
  unit-free: the method does not change when the scene's units do).
- ``linesearch``: ``armijo`` (default), ``goldstein`` (Goldstein-Price, Siconos's default) or
  ``none`` (full Newton steps).
- ``last_resort``: ``nsgs+fixed_point`` (default: an iteration that spends its budget is
  continued by plain NSGS from its last iterate, then by De Saxcé's fixed point,
  :mod:`contactopt.solvers.coulomb.last_resort`), one of them, or ``none``.
- ``fallback``: ``nsgs`` (default: a stalled Newton iteration is continued by NSGS sweeps from
  its iterate and, at a second stall, a raised ``rho``; the module docstring of
  :mod:`~contactopt.solvers.coulomb.alart_curnier`, "Globalization") or ``none``. ``raw`` records
  ``newton_steps``, ``fallback_sweeps`` and ``rho_increases``; the message says the sweeps
  ("converged in 6 Newton steps and 20 NSGS sweeps"); ``iterations`` counts Newton steps. The
  sweeps of one solve are at most NSGS's own default budget (50000).

The zero of the Alart-Curnier function is Coulomb's law exactly (no CCP hover), and W need not
be symmetric. The history adds the column ``merit`` (``1/2 ||Phi||^2``), which the line searches
make decrease at every step they accept (``raw["linesearch_failures"]`` counts the others).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.core.errors import OptionError
from contactopt.programs import Solution
from contactopt.programs.coulomb import local_scaling
from contactopt.solvers.base import Program, Registry, SolverSpec, Stopwatch
from contactopt.solvers.coulomb import last_resort
from contactopt.solvers.coulomb.alart_curnier import LINESEARCHES, semismooth_newton
from contactopt.solvers.coulomb.nsgs.solver import DEFAULT_MAX_ITERATIONS as NSGS_BUDGET
from contactopt.solvers.coulomb.nsgs.solver import sweeper
from contactopt.solvers.coulomb.options import COMMON_OPTIONS, Monitor, coulomb_program, finish, integer_option

SPEC = SolverSpec(
    name="nsn",
    kinds=frozenset({"coulomb"}),
    module="contactopt.solvers.coulomb.nsn",
    requires=None,
    install_hint="",
    description="semismooth Newton on the Alart-Curnier function, sparse LU, line search (ours, as Siconos NSN-AC)",
    warm_start="r0",
    normalize=False,
    history=True,
    composite=True,  # its last resort (contactopt.solvers.coulomb.last_resort) is solved through the registry
)

OPTIONS = COMMON_OPTIONS | {"rho", "linesearch", "fallback", "last_resort"}
DEFAULT_MAX_ITERATIONS = 100
#: What answers a stall: NSGS sweeps and a raised rho (default), or nothing (``none``).
FALLBACKS = ("nsgs", "none")


def solve(program: Program, variant: str | None, options: Mapping[str, Any], *,
          registry: Registry | None = None) -> Solution:
    """The semismooth Newton answer, or, where it spends its budget, De Saxcé's fixed point's
    from its iterate (:mod:`contactopt.solvers.coulomb.last_resort`)."""
    last_resort.last_resort_option("nsn", options)
    return last_resort.finish("nsn", program, _solve(program, options), options, registry)


def _solve(program: Program, options: Mapping[str, Any]) -> Solution:
    watch = Stopwatch()
    with watch.time("setup"):
        solved, r0, note = coulomb_program("nsn", program, options, OPTIONS, needs_symmetry=False)
        max_iterations = integer_option("nsn", options, "max_iterations", DEFAULT_MAX_ITERATIONS)
        linesearch = options.get("linesearch", "armijo")
        if linesearch not in LINESEARCHES:
            raise OptionError(f"solver 'nsn': linesearch must be one of {', '.join(LINESEARCHES)}, "
                              f"got {linesearch!r}")
        rho = _rho(solved.contacts, options.get("rho"))
        if rho is None:
            rho = local_scaling(solved)
        fallback = options.get("fallback", "nsgs")
        if fallback not in FALLBACKS:
            raise OptionError(f"solver 'nsn': fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
        monitor = Monitor("nsn", solved, options)
        sweeps = sweeper(solved, monitor.tol) if fallback == "nsgs" else None
    with watch.time("solve"), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        result = semismooth_newton(solved.W, solved.q, solved.mu, solved.dim, rho, r0, max_iterations, linesearch,
                                   lambda k, r, u, merit: monitor.stop(k, r, u, merit=merit), sweeps,
                                   NSGS_BUDGET)
    stalled = not result.stopped and result.iterations < max_iterations
    if stalled:
        note = "; stopped: no step along the Newton or Levenberg-Marquardt directions decreases the merit" + note
    what = f"Newton steps and {result.sweeps} NSGS sweeps" if result.sweeps else "Newton steps"
    raw = {"linesearch": linesearch, "linesearch_failures": result.linesearch_failures,
           "regularized": result.regularized, "stalled": stalled, "newton_steps": result.iterations,
           "fallback": fallback, "fallback_sweeps": result.sweeps, "rho_increases": result.rho_increases}
    return finish("nsn", program, monitor, result.r, result.iterations, result.stopped, watch, what, note, raw)


def _rho(contacts: int, value: Any) -> np.ndarray | None:
    if value is None:
        return None
    try:
        rho = np.broadcast_to(np.asarray(value, dtype=np.float64), (contacts,)).copy()
    except (TypeError, ValueError):
        raise OptionError(f"solver 'nsn': rho must be a positive number or {contacts} of them (one per contact), "
                          f"got {value!r}") from None
    if not (np.all(np.isfinite(rho)) and np.all(rho > 0)):
        raise OptionError(f"solver 'nsn': rho must be positive and finite, got {value!r}")
    return rho
