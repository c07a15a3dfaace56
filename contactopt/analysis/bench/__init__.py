"""Solver benchmark on exported step programs: success rate, shifted geometric means of time and
residuals, Dolan-Moré performance profiles (``contactopt bench``).

The metrics follow qpbenchmark (Caron et al., ``qpsolvers_benchmark``; its ``shgeom.py`` and
``report.py``) so that numbers here and there mean the same thing:

* **success**: the solver's status is usable (optimal or inaccurate) *and* contactopt's own
  residuals (:class:`~contactopt.programs.Residuals`, absolute infinity norms: primal, dual,
  gap, complementarity) all lie within the profile's ``tolerance`` (``residuals.worst <=
  tolerance``) *and* the run time is within the profile's ``time_limit``. A status is never
  trusted alone. A program the solver cannot take (``UnsupportedProgramError``) or an
  exception counts as a failure, with the text in ``error``.
* **shifted geometric mean** of values ``v_1..v_n >= 0`` with shift ``s``::

      sgm(v; s) = exp( (1/n) sum_i log(v_i + s) ) - s        (computed as s expm1(mean log1p(v/s)))

  over every program of a (solver, profile), with ``s = 10`` as qpbenchmark. Times are in
  **seconds** (``runtime = setup_time + solve_time``: qpbenchmark times the whole solver call,
  setup included); a failed solve counts **at the profile's time limit**. Residuals are
  ``residuals.worst``; a solve with no usable iterate counts at the profile's tolerance
  (qpbenchmark charges "not found" at the full tolerance). ``*_ratio`` columns divide by the
  best solver of the same profile (qpbenchmark reports those: 1.0 is the best).
* **performance profile** (Dolan & Moré, Math. Program. 91, 2002): with ``t_ps`` the run time of
  solver ``s`` on program ``p`` (infinity if it failed) and ``r_ps = t_ps / min_s t_ps``,
  ``rho_s(tau) = |{p : r_ps <= tau}| / n_p``, plotted against ``tau`` on a log2 axis.
* **what a reader is shown** (:func:`display_summary`, the table ``contactopt bench`` prints):
  the penalty is a score, never a time. Times are means over the *solved* programs
  (``time_sgm_solved``), marked ``(k/N)`` when some failed and ``failed`` when none was
  solved; the penalised mean appears only as the dimensionless ``time_score`` (its ratio to
  the best solver). In the performance profile a solver that solved nothing has no curve and
  is listed as ``failed all N`` in the legend; a partial one says ``k/N solved``.

Tolerance profiles (:data:`PROFILES`; backend option names in :func:`solver_options`):

==============  ======  =========  ==========================================================
profile         eps     tolerance  solver settings
==============  ======  =========  ==========================================================
default         --      1e-6       none: each backend's defaults (contactopt's clarabel 1e-10,
                                   osqp 1e-7 polished, pgs 1e-10, ...)
high_accuracy   1e-9    1e-9       each absolute tolerance min(eps, the solver's default),
                                   relative ones 0
mid_accuracy    1e-6    1e-6       same with eps = 1e-6
low_accuracy    1e-3    1e-3       same with eps = 1e-3
==============  ======  =========  ==========================================================

Profiles are per solver: each backend says how it takes tolerances
(:class:`~contactopt.solvers.base.SolverSpec` ``tolerances``, a plugin's included; cvxpy's and
qpsolvers' inner solvers in :data:`~contactopt.analysis.bench.profiles.INNER_TOLERANCES`), and
a profile never asks a solver for less than its own default: ``high_accuracy`` leaves pgs at its
1e-10 (it asked for 1e-9 before, looser, and pgs failed every program). The options each solve
got are in the ``options`` column of ``results.csv``; a solve that is not a success says why in
``error`` (its status and message, the residuals above the tolerance, or the time over the
limit). Every profile has a 10 s time limit (passed to the backends that take one). Each
(solver, profile) first solves one program untimed (warm-up: imports, first-call
compilation); the summary gives the median and interquartile range of the solved programs'
times beside the shifted geometric means. Each bench writes a new folder
(:mod:`~contactopt.analysis.bench.folder`).
"""

from __future__ import annotations

from contactopt.analysis.bench.inputs import collect_programs, load_inputs, skipped_summary
from contactopt.analysis.bench.profiles import PROFILES, Profile, get_profile, solver_options
from contactopt.analysis.bench.run import run_benchmark
from contactopt.analysis.bench.stats import (
    SHIFT,
    display_summary,
    performance_profile,
    performance_ratios,
    shifted_geometric_mean,
    summarize,
)

__all__ = ["PROFILES", "SHIFT", "Profile", "collect_programs", "display_summary", "get_profile", "load_inputs",
           "performance_profile", "performance_ratios", "run_benchmark", "shifted_geometric_mean", "skipped_summary",
           "solver_options", "summarize"]
