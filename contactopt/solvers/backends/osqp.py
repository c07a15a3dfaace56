"""OSQP (operator splitting, QP) through its own 1.x Python API.

OSQP solves ``min 1/2 x'Px + q'x  s.t.  l <= A x <= u``. contactopt's rows map as
``Zero``: ``l = u = b``; ``Nonneg`` (``A x <= b``): ``l = -inf, u = b``. OSQP's dual ``y``
satisfies ``P x + q + A'y = 0`` with ``y >= 0`` on active upper bounds, which is exactly our
dual. Defaults are tightened to ``eps_abs = eps_rel = 1e-7`` with solution polishing, since
contact impulses are compared against closed forms; any OSQP setting may be overridden.
Stellato et al., "OSQP: an operator splitting solver for quadratic programs", 2020.

Workspace reuse (option ``reuse``, default true): when a program has the sparsity pattern,
row kinds and settings of the previous one, the previous workspace is updated in place
(``OSQP.update`` of ``q, l, u`` and the values of ``P`` and ``A``, which refactors the KKT
matrix numerically only) and starts from the previous iterate (OSQP's warm start), instead
of a fresh ``setup`` and a cold start; see :mod:`contactopt.solvers.workspace`. The kept
iterate seeds the next program only when it was an exact (polished) answer, whose active set
is then the likely next one (with ``polishing`` off, every iterate seeds the next). An
unpolished iterate (polishing rejected on a degenerate active set, or skipped because no
constraint was active) starts the next program cold: a warm start from it may stop at an
incomplete active set and, with no constraint active, at an error of about ``eps_abs`` that a
free flight accumulates step after step (the point mass of ``point_mass_drop``: 1e-6 in
``vx`` after 45 steps). A warm start whose polishing does not succeed is solved once more from
a cold start. ``iterations`` counts the ADMM iterations of every run, and the message says
how polishing ended (an unpolished answer is accurate to ``eps_abs``/``eps_rel``, a polished
one to rounding).

OSQP 1.x's ``setup`` keeps the buffers of the ``P`` and ``A`` values it is given, and ``update``
writes the next program's values into them: a workspace set up on a program's own matrices
overwrote that program's ``P`` (its cached upper triangle) and ``A`` at the next update (the
registry's normalized re-solve of the same step included, which then judged the answer against
the scaled ``A``). ``setup`` is given copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.core.budgets import count_option
from contactopt.core.errors import OptionError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.solvers import workspace
from contactopt.solvers.base import (
    Program,
    SolverSpec,
    Stopwatch,
    Tolerance,
    make_solution,
    silence_c_stdout,
)

SPEC = SolverSpec(
    name="osqp", kinds=frozenset({"qp"}), module=__name__, requires="osqp",
    install_hint="pip install 'osqp>=1,<2'", description="OSQP ADMM QP solver (native 1.x API)",
    tolerances=(Tolerance("eps_abs", 1e-7), Tolerance("eps_rel", 1e-7, relative=True)), time_limit="time_limit",
)

DEFAULTS: dict[str, Any] = {"eps_abs": 1e-7, "eps_rel": 1e-7, "polishing": True,
                            "max_iter": 20000, "verbose": False}

_STATUS = {
    "OSQP_SOLVED": Status.OPTIMAL,
    "OSQP_SOLVED_INACCURATE": Status.INACCURATE,
    "OSQP_PRIMAL_INFEASIBLE": Status.INFEASIBLE,
    "OSQP_PRIMAL_INFEASIBLE_INACCURATE": Status.INFEASIBLE,
    "OSQP_DUAL_INFEASIBLE": Status.UNBOUNDED,
    "OSQP_DUAL_INFEASIBLE_INACCURATE": Status.UNBOUNDED,
    "OSQP_MAX_ITER_REACHED": Status.MAX_ITERATIONS,
    "OSQP_TIME_LIMIT_REACHED": Status.MAX_ITERATIONS,
}
#: OSQP's ``info.status_polish`` (``osqp_polish_status_type`` of OSQP 1.x's constants.h).
_POLISH = {-2: "linear system error", -1: "unsuccessful", 0: "not performed", 1: "successful",
           2: "not needed (no active constraint)"}


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    import osqp

    assert isinstance(program, ConicProgram)
    watch = Stopwatch()
    with watch.time("setup"):
        zero_rows = program.cone_rows("zero")
        lower = np.where(zero_rows, program.b, -np.inf)
        settings = {**DEFAULTS, **options}
        settings["max_iter"] = count_option(settings, "max_iter", "osqp", 20000, minimum=1)  # OSQP needs >= 1
        reuse = bool(settings.pop("reuse", True))
        P_upper = program.P_upper
        key = (workspace.settings_key(settings), zero_rows.tobytes())
        kept = workspace.cached("osqp", P_upper, program.A, key) if reuse else None
        backend, warm = kept if kept is not None else (None, False)
        if backend is not None:
            backend.update(q=program.c, l=lower, u=program.b, Px=P_upper.data, Ax=program.A.data)
            if not warm:
                backend.warm_start(x=np.zeros(program.n), y=np.zeros(program.m))
        else:
            backend = osqp.OSQP()
            try:
                # copies: OSQP's workspace keeps the arrays it is set up with and a later
                # update() writes the new values into them, which would be this program's own
                backend.setup(P_upper.copy(), program.c.copy(), program.A.copy(), lower, program.b.copy(), **settings)
            except (TypeError, ValueError) as exc:
                raise OptionError(f"solver 'osqp': {exc}") from exc
            except osqp.OSQPException as exc:  # rejected data (e.g. P not convex to OSQP's test)
                workspace.forget("osqp")
                return make_solution(program, solver="osqp", status=Status.NUMERICAL_ERROR, x=None, y=None,
                                     iterations=0, watch=watch, message=f"OSQP setup failed: {exc!r}")
    with watch.time("solve"), silence_c_stdout():
        result = backend.solve(raise_error=False)
        iterations = result.info.iter
        if warm and settings.get("polishing") and result.info.status_polish != 1:
            # A warm start can stop before the active set is identified, and polishing (the
            # exact KKT solve that makes OSQP's answers exact) then fails or does not run:
            # start the updated workspace cold once more, as a fresh setup would.
            backend.warm_start(x=np.zeros(program.n), y=np.zeros(program.m))
            result = backend.solve(raise_error=False)
            iterations += result.info.iter
    name = osqp.SolverStatus(result.info.status_val).name
    status = _STATUS.get(name, Status.NUMERICAL_ERROR)
    usable = status.usable
    if reuse and usable:  # the iterate seeds the next program only where it is an exact answer
        exact = result.info.status_polish == 1 or not settings.get("polishing")
        workspace.keep("osqp", (backend, exact), P_upper, program.A, key)
    else:
        workspace.forget("osqp")
    message = result.info.status
    if usable and settings.get("polishing"):
        message += f"; polishing {_POLISH.get(result.info.status_polish, result.info.status_polish)}"
    return make_solution(program, solver="osqp", status=status,
                         x=result.x if usable else None, y=result.y if usable else None,
                         iterations=iterations, watch=watch, message=message, raw=result)
