"""qpsolvers as a gateway to any QP solver it has installed (``qpsolvers:proxqp``,
``qpsolvers:piqp``, ``qpsolvers:daqp``, ...).

qpsolvers solves ``min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b`` (Caron et al., qpsolvers).
contactopt's rows map one to one (:func:`to_qpsolvers_arrays`)::

    Zero rows    A_k x + s = b_k, s = 0      ->  A x = b     (equality rows, in row order)
    Nonneg rows  A_k x + s = b_k, s >= 0     ->  G x <= h    (inequality rows, in row order)

qpsolvers' Lagrangian is ``1/2 x'Px + q'x + z'(G x - h) + y'(A x - b)``, so its stationarity
``P x + q + G'z + A'y = 0`` (``z >= 0``) is contactopt's ``P x + c + A'y = 0`` with our dual
equal to qpsolvers' ``z`` on the Nonneg rows and its ``y`` on the Zero rows: the duals are
scattered back into row order without a sign change. contactopt's own residuals (computed by
:func:`~contactopt.solvers.base.make_solution`) check that mapping on every solve.

Without a variant the inner solver is ``proxqp`` when installed, else the first of
``qpsolvers.available_solvers``. Solvers that only take dense matrices (quadprog, ...) get
dense arrays; the others get CSC. Options go to ``qpsolvers.solve_problem`` as the inner
solver's own keyword arguments (``eps_abs`` for proxqp/piqp/osqp, ``feastol`` for cvxopt,
...), over contactopt's :data:`DEFAULTS` (proxqp: tolerances 1e-9 with its duality-gap test;
the others run at their own defaults). qpsolvers reports found / not found: found is OPTIMAL
(then judged by contactopt's residuals); not found is INFEASIBLE, UNBOUNDED or MAX_ITERATIONS
when the inner solver's own status text says so (proxqp, piqp, osqp, clarabel, scs, ecos, ...),
else NUMERICAL_ERROR.
A QP without constraint rows (a step before any contact: the quadruped's first) reaches the
inner solver with one redundant row ``0 x <= 1`` (:data:`REDUNDANT_ROW`, its multiplier dropped):
given no rows at all, qpsolvers solves it with SciPy's LSQR instead of clarabel, scs, ...
(qpsolvers 4.x ``solve_unconstrained``), whose absolute test ``|P x + q| <= 1e-8`` refuses a
positive definite P's answer of residual 2e-7 as "unbounded below".
An exception inside the inner solver (quadprog refusing a semidefinite P, ...) is returned as
a NUMERICAL_ERROR solution carrying the message; an unknown option raises OptionError where the
inner solver rejects it (cvxopt, highs and piqp silently ignore unknown keywords).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import OptionError, SolverUnavailableError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.solvers.base import (
    Program,
    SolverSpec,
    Stopwatch,
    make_solution,
    silence_c_stdout,
)

SPEC = SolverSpec(
    name="qpsolvers", kinds=frozenset({"qp"}), module=__name__, requires="qpsolvers",
    install_hint="pip install 'contactopt[qpsolvers]'",
    description="qpsolvers gateway; qpsolvers:SOLVER picks any QP solver qpsolvers has installed",
    variants=True,
)

#: The inner solver used when none is named, if installed.
PREFERRED = "proxqp"

#: contactopt's defaults for inner solvers whose own defaults give wrong answers on contact
#: programs: proxqp stops on primal/dual residuals only (eps_abs 1e-5, no duality-gap test) and
#: reports PROXQP_SOLVED on a cart-at-the-wall step whose duality gap is 7e-2 (impulse off by
#: 2 %); with the gap test at 1e-9 it matches clarabel. Options given override these.
DEFAULTS: dict[str, dict[str, Any]] = {
    "proxqp": {"eps_abs": 1e-9, "eps_rel": 0.0, "check_duality_gap": True,
               "eps_duality_gap_abs": 1e-9, "eps_duality_gap_rel": 0.0},
}

FloatArray = NDArray[np.float64]

#: The right side of the row ``0 x <= REDUNDANT_ROW`` handed with a QP that has no rows (see
#: the module docstring): any x satisfies it strictly, so its multiplier is 0 at the answer.
REDUNDANT_ROW = 1.0


def installed_variants() -> list[str]:
    """The QP solvers qpsolvers finds installed (``qpsolvers.available_solvers``)."""
    import qpsolvers

    return list(qpsolvers.available_solvers)


def variant_kinds(variant: str) -> frozenset[str]:
    """``{"qp"}`` if qpsolvers has ``variant`` installed, else nothing."""
    return frozenset({"qp"}) if variant.lower() in installed_variants() else frozenset()


def accepts(program: Program) -> str | None:
    """Every QP ``ConicProgram`` (no SOC rows) is taken."""
    if not isinstance(program, ConicProgram):
        return "it is not a conic program"
    return None if program.kind == "qp" else "it has second-order cone rows"


def default_variant() -> str:
    """``proxqp`` if installed, else the first solver qpsolvers lists."""
    installed = installed_variants()
    if not installed:
        raise SolverUnavailableError("qpsolvers is installed but finds no QP solver; "
                                     "install one, e.g. pip install proxsuite")
    return PREFERRED if PREFERRED in installed else installed[0]


def to_qpsolvers_arrays(program: ConicProgram) -> dict[str, Any]:
    """``P, q, G, h, A, b`` of qpsolvers' form (see the module docstring); ``G, h`` (``A, b``)
    are None when the program has no Nonneg (Zero) rows. Matrices are CSC; P is the full
    symmetric matrix. Pure numpy/scipy (no qpsolvers import), so exporters can use it."""
    if program.kind != "qp":
        raise OptionError("only QPs (Zero and Nonneg rows) convert to qpsolvers' G x <= h, A x = b form")
    zero = program.cone_rows("zero")
    nonneg = program.cone_rows("nonneg")
    A = program.A.tocsr()
    G_rows, A_rows = np.flatnonzero(nonneg), np.flatnonzero(zero)
    return {
        "P": sp.csc_matrix(program.P),
        "q": program.c.copy(),
        "G": sp.csc_matrix(A[G_rows]) if G_rows.size else None,
        "h": program.b[G_rows].copy() if G_rows.size else None,
        "A": sp.csc_matrix(A[A_rows]) if A_rows.size else None,
        "b": program.b[A_rows].copy() if A_rows.size else None,
    }


def _dense(matrix: sp.csc_matrix | None) -> FloatArray | None:
    return None if matrix is None else np.asarray(matrix.toarray(), dtype=np.float64)


def _iterations(extras: Any) -> int:
    """Iteration count from a qpsolvers ``Solution.extras`` when the inner solver reports one."""
    if not isinstance(extras, Mapping):
        return 0
    for key in ("iterations", "iter"):
        if isinstance(extras.get(key), int | np.integer):
            return int(extras[key])
    info = extras.get("info")
    for attribute in ("iter", "iterations"):
        value = getattr(info, attribute, None)
        if isinstance(value, int | np.integer):
            return int(value)
    return 0


def _status_text(extras: Any) -> str:
    if isinstance(extras, Mapping):
        for key in ("status", "infostring", "exitFlag"):
            if key in extras:
                return str(extras[key])
        info = extras.get("info")
        for attribute in ("status", "status_val"):
            if hasattr(info, attribute):
                return str(getattr(info, attribute))
    return ""


def _failure_status(text: str) -> Status:
    """Status of a solve qpsolvers marks not found, from the inner solver's own status text
    (proxqp ``PROXQP_PRIMAL_INFEASIBLE``, osqp ``primal infeasible``, clarabel
    ``DualInfeasible``, scs ``unbounded``, ... ); solvers that give none: NUMERICAL_ERROR."""
    key = "".join(ch for ch in text.lower() if ch.isalpha())
    if "dualinfeasible" in key or "unbounded" in key:
        return Status.UNBOUNDED
    if "infeasible" in key:
        return Status.INFEASIBLE
    if any(word in key for word in ("maxiter", "maximumiter", "iterationlimit", "timelimit", "maxtime")):
        return Status.MAX_ITERATIONS
    return Status.NUMERICAL_ERROR


def _duals(program: ConicProgram, y_eq: Any, z_ineq: Any) -> FloatArray | None:
    """Row-ordered duals from qpsolvers' ``y`` (Zero rows) and ``z`` (Nonneg rows)."""
    y = np.zeros(program.m)
    for mask, values in ((program.cone_rows("zero"), y_eq), (program.cone_rows("nonneg"), z_ineq)):
        if mask.any():
            if values is None:
                return None
            y[mask] = np.asarray(values, dtype=np.float64).reshape(-1)
    return y


def _is_option_error(exc: Exception, param_error: type[Exception]) -> bool:
    """How qpsolvers' inner solvers reject an unknown keyword: TypeError (daqp, ecos, proxqp,
    quadprog, scs), AttributeError (clarabel's settings object), ValueError "Unrecognized
    settings" (osqp), ParamError (qpsolvers itself). cvxopt, highs and piqp ignore unknown
    keywords silently."""
    if isinstance(exc, TypeError | AttributeError | param_error):
        return True
    return isinstance(exc, ValueError) and "unrecognized setting" in str(exc).lower()


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    import qpsolvers
    from qpsolvers.exceptions import ParamError

    assert isinstance(program, ConicProgram)
    installed = installed_variants()
    if variant is None:
        variant = default_variant()
    elif variant.lower() in installed:
        variant = variant.lower()
    else:
        raise SolverUnavailableError(
            f"qpsolvers has no solver {variant!r} installed; installed: {', '.join(installed) or 'none'}")
    name = f"qpsolvers:{variant}"
    watch = Stopwatch()
    with watch.time("setup"):
        arrays = to_qpsolvers_arrays(program)
        unconstrained = arrays["G"] is None and arrays["A"] is None
        if unconstrained:  # not qpsolvers' LSQR path: the inner solver itself, with one redundant row
            arrays["G"], arrays["h"] = sp.csc_matrix((1, program.n)), np.array([REDUNDANT_ROW])
        if variant not in qpsolvers.sparse_solvers:  # dense-only solvers (quadprog, daqp, ...)
            arrays = {key: _dense(value) if key in ("P", "G", "A") else value
                      for key, value in arrays.items()}
        problem = qpsolvers.Problem(**arrays)
    with watch.time("solve"), silence_c_stdout():
        try:
            settings = {**DEFAULTS.get(variant, {}), **dict(options)}
            result = qpsolvers.solve_problem(problem, solver=variant, **settings)
        except Exception as exc:
            if options and _is_option_error(exc, ParamError):
                raise OptionError(f"solver {name!r}: bad option(s) {sorted(options)}: {exc}") from exc
            # the inner solver refused the program or broke: a failed solve, not a crash
            return make_solution(program, solver=name, status=Status.NUMERICAL_ERROR, x=None, y=None,
                                 iterations=0, watch=watch,
                                 message=f"{type(exc).__name__}: {exc}".strip())
    found = bool(result.found) and result.x is not None
    y = _duals(program, result.y, None if unconstrained else result.z) if found else None
    text = _status_text(result.extras)
    status = Status.OPTIMAL if found else _failure_status(text)
    message = text if found else f"no solution found{f' ({text})' if text else ''}"
    if found and y is None:
        message = "the inner solver returned no dual multipliers"
    return make_solution(program, solver=name, status=status, x=result.x if found else None, y=y,
                         iterations=_iterations(result.extras), watch=watch, message=message,
                         raw=result)
