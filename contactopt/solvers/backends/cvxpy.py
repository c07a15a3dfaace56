"""cvxpy as a modelling layer over any solver it has installed (``cvxpy:SCS``, ``cvxpy:CLARABEL``).

The program is restated in cvxpy's modelling language, one constraint per cone::

    Zero:    A_k x == b_k
    Nonneg:  A_k x <= b_k
    SOC:     (b_k - A_k x)[0] >= ||(b_k - A_k x)[1:]||

and the duals are read back with the signs of contactopt's standard form (checked by our own
stationarity residual ``P x + c + A'y``). Without a variant the inner solver is CLARABEL when
cvxpy has it (so plain ``cvxpy`` is reproducible across cvxpy releases), else cvxpy's own
choice; inner solvers run at their cvxpy defaults unless options say otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

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
    name="cvxpy", kinds=frozenset({"qp", "socp"}), module=__name__, requires="cvxpy",
    install_hint="pip install 'contactopt[cvxpy]'",
    description="cvxpy modelling layer; cvxpy:SOLVER picks any solver cvxpy has installed",
    variants=True,
    # cvxpy canonicalizes every step's program anew (5-15 ms per box step) and hands it to the
    # solvers contactopt also calls natively (its default is Clarabel): in a default comparison
    # its cells repeat the native rows at 10-20x their time (18 of the ~40 s of cells of the
    # README's box comparison). ``--solvers cvxpy`` (or ``cvxpy:SCS``, ...) runs it.
    default_comparison=False,
)


def installed_variants() -> list[str]:
    import cvxpy as cp

    return list(cp.installed_solvers())


def variant_kinds(variant: str) -> frozenset[str]:
    """Kinds an inner cvxpy solver takes: SOCPs need SOC support; QPs need a QP solver or a
    conic one with SOC (cvxpy rewrites the quadratic objective as a cone)."""
    try:
        from cvxpy.reductions.solvers.defines import SOLVER_MAP_CONIC, SOLVER_MAP_QP
    except ImportError:  # cvxpy moved its tables: assume the base declaration
        return SPEC.kinds
    name = variant.upper()
    conic = SOLVER_MAP_CONIC.get(name)
    with_soc = conic is not None and any(c.__name__ == "SOC" for c in conic.SUPPORTED_CONSTRAINTS)
    if with_soc:
        return frozenset({"qp", "socp"})
    return frozenset({"qp"}) if name in SOLVER_MAP_QP else frozenset()


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    import cvxpy as cp

    assert isinstance(program, ConicProgram)
    installed = cp.installed_solvers()
    name = f"cvxpy:{variant.upper()}" if variant else "cvxpy"
    if variant is None:
        variant = "CLARABEL" if "CLARABEL" in installed else None
    elif variant.upper() in installed:
        variant = variant.upper()
    else:
        raise SolverUnavailableError(
            f"cvxpy has no solver {variant!r} installed; installed: {', '.join(installed)}")
    _status = {
        cp.OPTIMAL: Status.OPTIMAL,
        cp.OPTIMAL_INACCURATE: Status.INACCURATE,
        cp.INFEASIBLE: Status.INFEASIBLE,
        cp.INFEASIBLE_INACCURATE: Status.INFEASIBLE,
        cp.UNBOUNDED: Status.UNBOUNDED,
        cp.UNBOUNDED_INACCURATE: Status.UNBOUNDED,
        cp.USER_LIMIT: Status.MAX_ITERATIONS,
    }
    watch = Stopwatch()
    with watch.time("setup"):
        x = cp.Variable(program.n)
        objective = program.c @ x
        if program.P.nnz:
            objective = objective + 0.5 * cp.quad_form(x, cp.psd_wrap(program.P))
        constraints: list[Any] = []
        row = 0
        for cone in program.cones:
            rows = slice(row, row + cone.dim)
            row += cone.dim
            if cone.dim == 0:
                continue
            A_k, b_k = program.A[rows], program.b[rows]
            if cone.kind == "zero":
                constraints.append(A_k @ x == b_k)
            elif cone.kind == "nonneg":
                constraints.append(A_k @ x <= b_k)
            else:
                slack = b_k - A_k @ x
                constraints.append(cp.SOC(slack[0], slack[1:]))
        problem = cp.Problem(cp.Minimize(objective), constraints)
    with watch.time("solve"), silence_c_stdout():
        try:
            problem.solve(solver=variant, **options)
        except cp.error.SolverError as exc:
            return make_solution(program, solver=name, status=Status.NUMERICAL_ERROR, x=None,
                                 y=None, iterations=0, watch=watch, message=str(exc))
        except TypeError as exc:  # cvxpy hands options to its inner solver, which names a bad one so
            raise OptionError(f"solver {name!r}: {exc} (options given: "
                              f"{', '.join(sorted(options)) or 'none'})") from None
    status = _status.get(problem.status, Status.NUMERICAL_ERROR)
    y = _duals(program, constraints) if status.usable else None
    stats = problem.solver_stats
    iterations = int(stats.num_iters) if stats is not None and stats.num_iters is not None else 0
    return make_solution(program, solver=name, status=status,
                         x=x.value if status.usable else None, y=y, iterations=iterations,
                         watch=watch, message=str(problem.status), raw=problem)


def _duals(program: ConicProgram, constraints: list[Any]) -> np.ndarray:
    parts: list[np.ndarray] = []
    index = 0
    for cone in program.cones:
        if cone.dim == 0:
            continue
        constraint = constraints[index]
        index += 1
        if cone.kind == "soc":
            # cvxpy's SOC dual is (t-dual, X-dual), both for the slack b - A x.
            t_dual, x_dual = constraint.dual_value
            parts.append(np.concatenate([np.atleast_1d(t_dual), np.ravel(x_dual)]))
        else:
            parts.append(np.atleast_1d(np.asarray(constraint.dual_value, dtype=np.float64)))
    return np.concatenate(parts) if parts else np.zeros(0)
