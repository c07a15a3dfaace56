"""``fixed_point``: Coulomb's problem as a sequence of convex cone complementarity problems,
each solved by any conic solver (ours; the iteration of Acary, Cadoux, Lemaréchal & Malick,
"A formulation of the linear discrete Coulomb friction problem via convex optimization",
ZAMM 91 (2011), section 4).

For a :class:`~contactopt.programs.coulomb.CoulombProgram` ``(W, q, mu)`` and a fixed
``s`` (one number per contact), the problem with ``q_cN`` raised by ``s_c`` and De Saxcé's term
dropped is the convex CCP (Anitescu & Tasora 2010; the ``ccp`` formulation's dual form)::

    minimize 1/2 r'W r + (q + [s, 0])'r    subject to   r_c in C_mu_c

whose optimality conditions are ``C* ∋ W r + q + [s_c, 0] ⟂ r ∈ C``: FCLIB's problem exactly
when ``s_c = mu_c ||u_cT||`` for the ``u = W r + q`` it produces (De Saxcé & Feng 1991). The
solver iterates ``s <- mu ||u_T||`` (:func:`contactopt.solvers.coulomb.de_saxce.de_saxce_fixed_point`,
the loop :func:`~contactopt.solvers.coulomb.fclib_solve.solve_coulomb` runs on FCLIB files), from
``s = 0`` (the plain CCP) or from the ``s`` of the warm start ``r0``, until FCLIB's error is at
most ``tol`` and contactopt's judgement believes the answer
(:func:`~contactopt.programs.coulomb.coulomb_believed`), or, FCLIB's error met, the relative
residual stalls at the inner solver's accuracy (:data:`STALLED`; the judgement decides). Each
iteration is one convex solve by the solver ``inner`` (default ``clarabel``; ``pgs``,
``cvxpy:*``, ... any that takes the CCP; ``newton`` takes only regularized primal programs and
is refused by name), warm-started from
the previous iterate where ``inner`` takes a warm start. The iteration is a contraction for
small ``mu`` (one contact with ``W = I/m``: factor ``mu^2 / (1 + mu^2)``), not in general;
Coulomb's problem may have several solutions or none (Acary et al. 2011, section 3).

Like ``solve_coulomb`` the CCPs are solved with ``q`` divided by the largest entry that drives
the impulses (:func:`~contactopt.programs.coulomb_error.load_normalization`), the answer scaled
back: exact (every CCP is positively homogeneous in ``(q, s)``), and interior-point solvers'
absolute tolerance floors then do not limit the error on problems with small data.

The CCP is convex only for a symmetric positive semidefinite ``W``: a nonsymmetric ``W`` (read
from another tool's file) is refused unless ``symmetrize=True``, which solves the problem with
``(W + W^T) / 2`` and judges the answer on the program as given.

Options: ``tol`` (1e-8, FCLIB's error), ``max_iterations`` (100 convex solves), ``history``
(False; True records :func:`~contactopt.programs.coulomb.coulomb_criteria` of every iterate,
with ``iteration`` and ``time``, in ``Solution.history``), ``r0`` (warm start: impulses of
length ``m``), ``symmetrize`` (False), ``inner`` (``"clarabel"``), ``inner_options`` (options
of every inner solve). Iterations are convex solves. Ends ``optimal`` when the test passes,
``max_iterations`` with the iterate of smallest error otherwise, ``numerical_error`` when an
inner solve gives no usable answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.budgets import count_option
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.programs.coulomb import (
    COULOMB_CONFIRM_LEVEL,
    coulomb_criteria,
    coulomb_residuals,
    coulomb_to_fclib,
)
from contactopt.programs.coulomb_error import load_normalization
from contactopt.programs.csc import mark_symmetric
from contactopt.programs.fclib import fclib_program
from contactopt.solvers.base import Program, Registry, SolverSpec, Stopwatch, make_solution
from contactopt.solvers.coulomb.de_saxce import de_saxce_fixed_point, de_saxce_shift
from contactopt.solvers.coulomb.options import coulomb_program, real_option

FloatArray = NDArray[np.float64]

SPEC = SolverSpec(
    name="fixed_point", kinds=frozenset({"coulomb"}), module=__name__, requires=None, install_hint="",
    description="De Saxce fixed point: Coulomb's problem as a sequence of CCPs, any conic solver inside (ours)",
    warm_start="r0", normalize=False, history=True, composite=True,
)

DEFAULTS: dict[str, Any] = {"tol": 1e-8, "max_iterations": 100, "history": False, "r0": None,
                            "symmetrize": False, "inner": "clarabel", "inner_options": None}


#: Iterations without halving the relative residual, FCLIB's error below ``tol``, after which
#: the fixed point stops and leaves the verdict to contactopt's judgement (``optimal`` up to a
#: relative residual of 1e-6, ``inaccurate`` above): the CCPs' answers are exact only to the
#: inner solver's accuracy, which on a degenerate problem (a singular ``W`` whose data has a
#: component outside its range) keeps the residual just above the confirmation level of 1e-7.
STALLED = 3


class _InnerFailure(Exception):
    """An inner solve without a usable answer (the fixed point stops there)."""

    def __init__(self, solution: Solution) -> None:
        super().__init__(solution.message)
        self.solution = solution


def solve(program: Program, variant: str | None, options: Mapping[str, Any], *, registry: Registry) -> Solution:
    """``registry``: the solver registry, whose ``solve`` takes each CCP."""
    used, warm, note = coulomb_program("fixed_point", program, options, set(DEFAULTS), needs_symmetry=True)
    r0 = None if options.get("r0") is None else warm  # None: from the plain CCP (s = 0)
    opts = {**DEFAULTS, **options}
    tol, max_iterations = real_option("fixed_point", opts, "tol", 1e-8), count_option(opts, "max_iterations",
                                                                                        "fixed_point", 100, 1)
    watch = Stopwatch()
    with watch.time("setup"):
        k = load_normalization(coulomb_to_fclib(used))
        base = fclib_program(coulomb_to_fclib(dataclasses.replace(used, q=k * used.q)))
        mark_symmetric(base.P)  # checked symmetric and convex once, by the line above
        inner, inner_options, warm_option = _inner(base, opts, registry)
    dim, m = used.dim, used.m
    history: dict[str, list[float]] | None = {} if opts["history"] else None
    start = time.perf_counter()
    previous: list[FloatArray | None] = [None if r0 is None else k * r0]
    solves = [0]

    def convex_solve(shift: FloatArray) -> tuple[FloatArray, FloatArray, Status]:
        solves[0] += 1
        c = base.c.copy()
        c[::dim] += shift
        ccp = dataclasses.replace(base, c=c)
        given = dict(inner_options)
        if warm_option is not None and previous[0] is not None and warm_option not in given:
            given[warm_option] = previous[0]
        solution = registry.solve(ccp, inner, given)
        if not solution.status.usable:
            raise _InnerFailure(solution)
        x = np.asarray(solution.x[:m], dtype=np.float64)
        previous[0] = x
        r = x / k
        return r, np.asarray(used.W @ x, dtype=np.float64) + base.c, solution.status  # u of the unshifted CCP

    floor = {"best": np.inf, "stalled": 0}  # the inner solver's accuracy floor, once FCLIB's error is met

    def judge(r: FloatArray, iteration: int) -> tuple[float, bool]:
        residuals = coulomb_residuals(used, r)
        if history is not None:
            row = {**coulomb_criteria(used, r), "iteration": float(iteration), "time": time.perf_counter() - start}
            for key, value in row.items():
                history.setdefault(key, []).append(value)
        if residuals.fclib > tol:
            return residuals.fclib, False
        if residuals.relative <= COULOMB_CONFIRM_LEVEL:
            return residuals.fclib, True
        floor["stalled"] = floor["stalled"] + 1 if residuals.relative > 0.5 * floor["best"] else 0
        floor["best"] = min(floor["best"], residuals.relative)
        return residuals.fclib, floor["stalled"] >= STALLED

    shift = None if r0 is None else de_saxce_shift(k * used.velocity(r0), used.mu, dim)
    try:
        with watch.time("solve"):
            run = de_saxce_fixed_point(convex_solve, judge, used.mu, dim, max_iterations, shift)
    except _InnerFailure as failure:
        return make_solution(program, solver="fixed_point", status=Status.NUMERICAL_ERROR,
                             x=None if previous[0] is None else previous[0] / k, y=None, iterations=solves[0],
                             watch=watch, history=history,
                             message=f"inner solver {inner!r} returned {failure.solution.status} at "
                                     f"iteration {solves[0]}: {failure.solution.message}")
    if run.converged:
        status = Status.OPTIMAL
        message = f"FCLIB error {run.error:.1e} <= {tol:g} after {run.iterations} {inner} solves"
        if floor["stalled"] >= STALLED:
            message += (f"; the relative residual stalled at {floor['best']:.1e} (the {inner} answers' accuracy) "
                        f"for {STALLED} iterations")
    else:
        status, message = Status.MAX_ITERATIONS, (f"FCLIB error {run.error:.1e} > {tol:g} after {run.iterations} "
                                                  f"{inner} solves (the iterate of smallest error)")
    return make_solution(program, solver="fixed_point", status=status, x=run.answer, y=None,
                         iterations=run.iterations, watch=watch, message=message + note,
                         raw={"inner": inner, "normalization": k}, history=history)


def _inner(ccp: ConicProgram, opts: Mapping[str, Any], solvers: Registry) -> tuple[str, dict[str, Any], str | None]:
    """``(inner solver, its options, its warm-start option or None)``, checked against the CCP."""

    inner = opts["inner"]
    if not isinstance(inner, str) or not inner:
        raise OptionError(f"solver 'fixed_point': inner must be a solver name, got {inner!r}")
    given = opts["inner_options"] or {}
    if not isinstance(given, Mapping):
        raise OptionError(f"solver 'fixed_point': inner_options must be a mapping, got {given!r}")
    if not solvers.can_take(ccp, inner):
        able = [name for name in solvers.available() if solvers.can_take(ccp, name)]
        raise UnsupportedProgramError(
            f"solver 'fixed_point': its inner solver {inner!r} cannot take the convex program of the fixed point "
            f"(a {ccp.kind.upper()} in the impulses, x in the friction cones); inner solvers that can: "
            f"{', '.join(able) or 'none installed'}")
    return inner, dict(given), solvers.spec(inner).warm_start
