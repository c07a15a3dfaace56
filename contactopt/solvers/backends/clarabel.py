"""Clarabel (interior point, QP and SOCP) through its own Python API.

Clarabel solves exactly contactopt's standard form::

    min 1/2 x'Px + c'x   s.t.  A x + s = b,  s in K  (Zero, Nonnegative, SecondOrder cones)

so the program is passed as is (upper triangle of P, which is all Clarabel reads), and its
``z`` is our dual ``y``. Options are Clarabel ``DefaultSettings`` attributes
(``tol_gap_abs``, ``max_iter``, ...). Gap and feasibility tolerances default to 1e-10 instead
of Clarabel's 1e-8: resting contacts make the step programs degenerate (strict
complementarity fails at ``phi/h + n v' = 0, lambda = 0``), where an interior-point iterate
is only ``O(sqrt(tol))`` from the solution; 1e-10 cuts the drift of a resting cart tenfold
for about 20 % more iterations. Goulart & Chen, "Clarabel: An interior-point solver
for conic programs with quadratic objectives", 2024.

Clarabel stops on the whole program's gap (``tol_gap_abs``, or ``tol_gap_rel`` of the objective),
which rows of a much smaller scale than the objective's cannot move: example-robot-data's tiago
(a 19 kg torso falling against 36 hand joints at their limit, driven at 1e-5 rad/s through
``M``'s coupling) is "Solved" while those rows' products ``s_i y_i ~ 1e-12`` are still on the
central path, slack and multiplier both of the row's own size: contactopt's residuals refute
it (1.0 relative) and no active set read from it is right. Such an answer, refuted even after
the active-set refinement the solver layer applies (:mod:`contactopt.solvers.refine`) and its
re-solve in the program's own units, is solved once more by the solver layer with the gap and
feasibility tolerances times :data:`TIGHTENING` (1e-4; unless the user set one; :func:`tightened`),
and the better of the two by contactopt's residuals is returned (its message says so). After the
re-solve in the program's own units, not before: a 1 ug box's step that its own units solve
exactly is not replaced by a tightened answer in the given ones. On the central path
``s_i y_i = mu``: the vanishing side of a strictly complementary row falls in proportion to
``mu``, so a row read at 1 reads about 1e-4 after the retry, where refinement finds its active
set (tiago: 5 of 100 steps retried, each then usable).
Answers that pass, or that refinement rescues, are untouched.

Workspace reuse (option ``reuse``, default **false**): Clarabel 0.11 can update a solver's data
in place (``DefaultSolver.update`` with the values of ``P``, ``c``, ``A``, ``b``, allowed
when ``is_data_update_allowed()``, i.e. no presolve reduction or chordal decomposition).
When a program has the sparsity pattern, cones and settings of the previous one, the kept
solver is updated instead of set up again (no new symbolic factorization). An interior
point method restarts from its own initial point, so there is no warm start. It is off by
default: an updated solver keeps the equilibration (data scaling) of its first setup, so its
answers differ from a fresh solver's within the tolerances (up to 2.5e-8 in the velocities
of 100 box steps), which breaks bit-level reproducibility of trajectories; see
:mod:`contactopt.solvers.workspace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import scipy.sparse as sp

from contactopt.core.budgets import count_option
from contactopt.core.errors import OptionError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.solvers import workspace
from contactopt.solvers.base import Program, SolverSpec, Stopwatch, Tolerance, make_solution

SPEC = SolverSpec(
    name="clarabel", kinds=frozenset({"qp", "socp"}), module=__name__, requires="clarabel",
    install_hint="pip install clarabel", description="Clarabel interior-point conic solver (native API)",
    interior_point=True,
    tolerances=(Tolerance("tol_feas", 1e-10), Tolerance("tol_gap_abs", 1e-10),
                Tolerance("tol_gap_rel", 1e-10, relative=True)),
    time_limit="time_limit",
)

DEFAULTS: dict[str, Any] = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}

_STATUS = {
    "Solved": Status.OPTIMAL,
    "AlmostSolved": Status.INACCURATE,
    "PrimalInfeasible": Status.INFEASIBLE,
    "AlmostPrimalInfeasible": Status.INFEASIBLE,
    "DualInfeasible": Status.UNBOUNDED,
    "AlmostDualInfeasible": Status.UNBOUNDED,
    "MaxIterations": Status.MAX_ITERATIONS,
    "MaxTime": Status.MAX_ITERATIONS,
}


#: Clarabel statuses after which a step is retried with the settings of :data:`_RETRIES`, in turn.
_STALLS = ("InsufficientProgress", "MaxIterations")
_RETRIES: tuple[dict[str, Any], ...] = ({"equilibrate_enable": False}, {"max_step_fraction": 0.9})
#: The factor on the gap and feasibility tolerances of the one retry of an answer that
#: contactopt's residuals refute even after refinement (:func:`_rejected_after_refinement`).
TIGHTENING = 1e-4


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    import clarabel

    assert isinstance(program, ConicProgram)
    watch = Stopwatch()
    with watch.time("setup"):
        merged = {**DEFAULTS, **options}
        if "max_iter" in options:  # a count, refused by name before Clarabel's own TypeError
            merged["max_iter"] = count_option(options, "max_iter", "clarabel", 0, minimum=0)
        reuse = bool(merged.pop("reuse", False))
        P_upper = program.P_upper
        key = (workspace.settings_key(merged), program.cones)
        backend = workspace.cached("clarabel", P_upper, program.A, key) if reuse else None
        if backend is not None:
            backend.update(P=P_upper.data, q=program.c, A=program.A.data, b=program.b)
        else:
            backend = _setup(clarabel, program, P_upper, merged)
    attempt = _run(clarabel, program, P_upper, merged, options, backend, watch)
    solution = _solution(program, attempt, watch)
    if reuse and attempt.reusable and attempt.status.usable and attempt.backend.is_data_update_allowed():
        workspace.keep("clarabel", attempt.backend, P_upper, program.A, key)
    else:
        workspace.forget("clarabel")
    return solution


@dataclass(frozen=True)
class _Attempt:
    """One Clarabel solve (after its stall retries): the result, its status text, contactopt's
    reading of that status, the solver that gave it and whether it is the kept workspace's."""

    result: Any
    name: str
    status: Status
    backend: Any
    reusable: bool


def _run(clarabel: Any, program: ConicProgram, P_upper: sp.csc_matrix, merged: Mapping[str, Any],
         options: Mapping[str, Any], backend: Any, watch: Stopwatch) -> _Attempt:
    """``backend.solve()``, retried with the settings of :data:`_RETRIES` in turn while Clarabel stalls."""
    with watch.time("solve"):
        result = backend.solve()
    name = str(result.status)
    status = _STATUS.get(name, Status.NUMERICAL_ERROR)
    history: list[str] = []
    reusable = True
    for retry_settings in _RETRIES:
        if str(result.status) not in _STALLS or (str(result.status) == "MaxIterations" and "max_iter" in options):
            break  # solved, failed otherwise, or stopped at the user's own iteration cap
        if set(retry_settings) & set(options):
            continue  # a setting the user chose is not overridden
        # Clarabel can stall on a well-posed step: hopper, gauss primal (M of condition 98, five
        # inactive rows: InsufficientProgress with Ruiz equilibration, solved without it);
        # dm-control's finger, anitescu primal with a frictionloss row (the L1 slack, cost 1e-3
        # and no curvature, drifts to 2e3 in 200 iterations; solved in 13 with step fraction 0.9).
        with watch.time("solve"):
            backend = _setup(clarabel, program, P_upper, {**merged, **retry_settings})
            result = backend.solve()
        reusable = False
        history.append(f"{', '.join(f'{k}={v}' for k, v in retry_settings.items())} after {name.split(' ')[0]}")
        name = f"{result.status} (retried: {'; '.join(history)})"
        status = _STATUS.get(str(result.status), Status.NUMERICAL_ERROR)
    return _Attempt(result, name, status, backend, reusable)


def _solution(program: ConicProgram, attempt: _Attempt, watch: Stopwatch) -> Solution:
    usable = attempt.status.usable
    result = attempt.result
    return make_solution(program, solver="clarabel", status=attempt.status,
                         x=result.x if usable else None, y=result.z if usable else None,
                         iterations=result.iterations, watch=watch, message=attempt.name, raw=result)


def tightened(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The options of the one retry of an answer contactopt's residuals refute after refinement
    and after the solver layer's re-solve in the program's own units (module docstring): the gap
    and feasibility tolerances times :data:`TIGHTENING`; None where the user set one of them."""
    if set(DEFAULTS) & set(options):
        return None
    return {**options, **{name: value * TIGHTENING for name, value in DEFAULTS.items()}}


def _setup(clarabel: Any, program: ConicProgram, P_upper: sp.csc_matrix, options: Mapping[str, Any]) -> Any:
    """A new Clarabel solver for ``program`` with ``options`` as its settings."""
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for key, value in options.items():
        if not hasattr(settings, key):
            raise OptionError(f"solver 'clarabel': unknown setting {key!r}")
        setattr(settings, key, value)
    cones = []
    for cone in program.cones:
        if cone.kind == "zero":
            cones.append(clarabel.ZeroConeT(cone.dim))
        elif cone.kind == "nonneg":
            cones.append(clarabel.NonnegativeConeT(cone.dim))
        else:
            cones.append(clarabel.SecondOrderConeT(cone.dim))
    try:
        return clarabel.DefaultSolver(_ListCsc.of(P_upper), program.c.tolist(), _ListCsc.of(program.A),
                                      program.b.tolist(), cones, settings)
    except (AttributeError, TypeError):  # a Clarabel that reads more than _ListCsc gives
        return clarabel.DefaultSolver(P_upper, program.c, program.A, program.b, cones, settings)


@dataclass(frozen=True)
class _ListCsc:
    """A canonical CSC matrix as the attributes Clarabel's Python binding reads (0.11: ``data``,
    ``indices``, ``indptr``, ``shape``, ``has_canonical_format``), as Python lists: the binding
    converts each array element by element through Python's sequence protocol (PyO3's ``Vec``
    extraction), about twice as fast from a list as from a NumPy array, conversion included
    (the pile's program: constructor 1.78 -> 1.49 ms; the same solver data, so the same
    iterates: tested). A Clarabel that reads anything else gets the scipy matrix."""

    data: list[float]
    indices: list[int]
    indptr: list[int]
    shape: tuple[int, int]
    has_canonical_format: bool = True

    @classmethod
    def of(cls, matrix: sp.csc_matrix) -> _ListCsc:
        return cls(matrix.data.tolist(), matrix.indices.tolist(), matrix.indptr.tolist(),
                   (int(matrix.shape[0]), int(matrix.shape[1])))
