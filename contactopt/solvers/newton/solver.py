"""``newton``: SAP's primal Newton method (ours) for the unconstrained convex primal (S1) of
:mod:`contactopt.programs.primal` (Castro, Permenter & Han, "An Unconstrained Convex
Formulation of Compliant Contact", IEEE T-RO 2022, arXiv 2110.10107, the SAP solver).

It takes the conic programs of the form (S6) (the ``sap`` formulation, and ``regularized``
with ``form = "primal"``; :func:`accepts` says why another program is refused) and solves
the primal directly::

    v_0 = the warm start, else the program's v_guess (the step's initial velocity: the
          previous step's v', as in SAP), else v*
    repeat:  g = A (v - v*) - J^T gamma(J v)                         (S5)
             stop if ||D g|| <= tol_abs + tol * max(||D A v||, ||D A v*||, ||D J^T gamma||)   (S10)
             dv = -(A + J^T G J)^{-1} g                               (sparse LDL^T, :mod:`.newton_linalg`)
             alpha = argmin_{0 < alpha <= alpha_max} l(v + alpha dv)  (exact line search)
             v = v + alpha dv

(S10) is SAP's relative optimality criterion with ``D = diag(A)^{-1/2}`` (momentum in
units that do not depend on the mass scale); the solve also stops when a step decreases the
cost by less than ``cost_tol`` relative (rounding floor). **Exact line search**: ``l`` is
convex along ``dv``, so its derivative ``l'(alpha) = dv'(A (v + alpha dv - v*)) -
(J dv)' gamma(alpha)`` is nondecreasing; ``l'(0) < 0`` for a descent direction. If
``l'(alpha_max) <= 0`` the step is ``alpha_max`` (SAP's 1.5); otherwise the root of
``l'`` is found by Newton's method on ``l'`` (second derivative
``dv' A dv + (J dv)' G (J dv)``) safeguarded by bisection of the bracket, starting from the
full step ``alpha = 1``, until ``|l'| <= ls_tol |l'(0)|``. Each evaluation costs one
projection (O(m)). Converges globally (strictly convex ``l``, exact line search) and
quadratically near the solution (``l`` is quadratic in stiction and no contact and smooth
in sliding, away from a zero slip).

The answer ``x = [v, gamma(v)]``, ``y = D^{-1} gamma(v)`` is judged on the conic form like
every other solver's: its slacks are feasible and complementary by construction and its
stationarity residual is ``g``. Iterations are Newton steps.

**How it runs.** With numba installed (extra ``fast``) programs with at most
``DENSE_KERNEL_MAX`` unknowns run the whole loop compiled with a dense Cholesky
(:mod:`.newton_kernels`); larger ones run :mod:`.newton_sparse`: two compiled calls per
iteration around QDLDL's numeric refactorization, with ``H``'s sparsity pattern (keyed by the
columns of the active blocks) analysed once and kept across iterations and time steps, and a
line search over the blocks that are not separated on the whole segment; every kind of block
has its kernel (``soc_general`` and ``soc_scaled`` cones: :mod:`.newton_kernels_cones`). Without
numba the same algorithm factorizes over the blocks active during the solve
(:class:`.newton_linalg.ActiveHessian`), with the same projection and line search kernels run as
plain Python loops.

**Iteration counts** (checked against Drake's SapSolver, whose Newton step, Hessian ``G`` per
regime, exact line search ``l'(alpha) = 0`` from ``alpha_max = 1.5`` and warm start from the
previous step's ``v`` are the ones here; ``experiments/sap_iterations.py`` reproduces the
numbers below with the option ``history``). Near a solution every step is a full Newton step;
far from it the line search stops early, for two reasons. (1) A contact changes regime on the
segment where the curvature grows: sliding to stiction (along the slip the sliding ``G`` has
only the normal coupling ``mu^2 / (R_n + mu^2 R_t)``, in stiction ``1 / R_t``: a jump of
``R_n / (mu^2 R_t) = beta^2 / (4 pi^2 sigma mu^2)``, about 100 at the near-rigid defaults and
``mu = 0.5``, with a narrow stiction cone ``|v_t| <= mu (R_t / R_n) (v_hat_n - v_n)``), or no
contact to contact (``0`` to ``~1 / R_n``). The sliding Newton step carries a slip through
zero; the search stops in the cone. (2) ``l`` is not quadratic within the sliding regime (it
depends on ``|y_t|``), so a step whose slip turns by a lot also stops with no regime change
(pile with ``tau_d = 0.05``, step 6: one contact's slip is asked to reverse by 4-25 times its
size on six successive iterations, ``alpha`` 0.05-0.5). The record shows every search ending
at ``|l'(alpha)| <= 1e-6 |l'(0)|``: the steps are exact, not short. Measured on the MJCF sphere
pile (20 steps): SAP's defaults (near-rigid, ``tau_d = 0``: MuJoCo's settled penetrations are
pushed out at ``phi / h``, the spheres fly apart at 0.3 m/s spinning at 10 rad/s, ~30 new
impacts a step) take 28.3 iterations per step; on step 0 the first step (``alpha = 0.83``)
moves 125 of 246 sticking contacts to sliding and 35 of them return to stiction one or two per
iteration over the next 30 (``alpha`` 0.03-0.36). The same pile at rest (``tau_d = 0.05,
epsilon = 0``) takes 10.5, with a finite ``stiffness = 1e4`` 14; raising ``sigma`` (a
different program: softer stiction) to ``1e-2`` gives 14.6 and to ``2.5e-2`` (``R_t = R_n``,
MuJoCo-like) 10.3, the ``regularized`` primal (``R_t ~ R_n``) 4.7: the count follows the
curvature jump. Start: the previous step's ``v`` 28.5, ``v*`` 31.4, ``v = 0`` 22.7 on the
rigid-limit pile (from ``v = 0`` every penetrating contact starts in stiction, and releasing
a contact lowers the curvature, which the search passes), but 13 / 34 / 18 on the resting pile:
the warm start stays. Not kept (more iterations): Armijo backtracking from ``alpha = 1``
(54-72), the Hessian at the trial point (stalls), the stiction ``G`` for sliding contacts, all
of them (stalls) or those whose slip the Newton step reverses (40-132 instead of 9-13).

Drake's SapSolver defaults are ``rel_tolerance = 1e-6``, ``abs_tolerance = 1e-14`` and the
cost criterion ``1e-15``; ``tol`` here is tighter (1e-10) because the answers are compared
with Clarabel's to 1e-7 (at 1e-6 ``v`` is off by up to 1.5e-6 relative on the resting pile),
and costs about one more (full) Newton step (28.3 against 27.05 iterations on the pile).

Options: ``max_iter`` (100), ``tol`` (1e-10, relative, S10), ``tol_abs`` (1e-14),
``cost_tol`` (1e-15), ``alpha_max`` (1.5), ``ls_tol`` (1e-6), ``ls_max_iter`` (100),
``warm_start`` (``x`` of length n or ``v`` of length nv), ``history`` (False: with True the
solution's ``raw["history"]`` lists every iterate, see :func:`.newton_history.record`, and
:attr:`Solution.history` holds the uniform history of :mod:`contactopt.solvers.history`: per
iterate ``iteration``, ``time``, contactopt's residuals of the answer it stands for and the
objective, with Newton's own columns; the small problems of the dense compiled loop then run the
NumPy loop, same iterates, so that the default path records nothing).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.budgets import count_option
from contactopt.core.errors import OptionError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.programs.cone_projection import ConeLayout, regularizer_cost
from contactopt.programs.primal import PrimalProgram, why_not_primal
from contactopt.solvers.base import Program, SolverSpec, Stopwatch, Tolerance, believed, check_options, make_solution
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton import sparse as newton_sparse
from contactopt.solvers.newton.history import public_entries, record, record_step, uniform_history
from contactopt.solvers.newton.linalg import ActiveHessian

FloatArray = NDArray[np.float64]

SPEC = SolverSpec(
    name="newton", kinds=frozenset({"qp", "socp"}), module=__name__, requires="qdldl",
    install_hint="pip install qdldl",
    description="SAP primal Newton, exact line search, sparse LDL^T (ours; sap, regularized form=primal)",
    normalize=False, warm_start="warm_start", conversions=False, history=True,
    tolerances=(Tolerance("tol", 1e-10), Tolerance("tol_abs", 1e-14)),  # DEFAULTS below
)

DENSE_PRODUCTS = 40_000  # nv * (nv + m) up to which A and J are multiplied as dense arrays
DENSE_KERNEL_MAX = 48  # unknowns up to which the compiled loop factorizes H densely (as newton_linalg)

DEFAULTS: dict[str, Any] = {"max_iter": 100, "tol": 1e-10, "tol_abs": 1e-14, "cost_tol": 1e-15,
                            "alpha_max": 1.5, "ls_tol": 1e-6, "ls_max_iter": 100, "warm_start": None,
                            "history": False}


def accepts(program: Program) -> str | None:
    """Why ``program`` is not an unconstrained primal in conic form (S6), or None."""
    if not isinstance(program, ConicProgram):
        return "it takes the conic form of an unconstrained primal"
    return why_not_primal(program)


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    assert isinstance(program, ConicProgram)
    check_options("newton", options, set(DEFAULTS))
    opts = {**DEFAULTS, **options}
    opts["max_iter"] = count_option(opts, "max_iter", "newton", 100, minimum=0)
    opts["ls_max_iter"] = count_option(opts, "ls_max_iter", "newton", 100, minimum=1)
    for key in ("tol", "tol_abs", "cost_tol", "ls_tol"):
        if not (isinstance(opts[key], int | float) and opts[key] >= 0):
            raise OptionError(f"solver 'newton': {key} must be a number >= 0, got {opts[key]!r}")
    if not isinstance(opts["history"], bool):
        raise OptionError(f"solver 'newton': history must be true or false, got {opts['history']!r}")
    if not (isinstance(opts["alpha_max"], int | float) and opts["alpha_max"] >= 1):
        raise OptionError(f"solver 'newton': alpha_max must be a number >= 1, got {opts['alpha_max']!r}")
    watch = Stopwatch()
    with watch.time("setup"):
        primal = PrimalProgram.from_conic(program)
        layout = primal.cone_layout
        blocks = kernels.block_arrays(layout)  # without numba its kernels run as plain Python
        kernels.ensure_compiled()
        history: list[dict[str, Any]] | None = [] if opts["history"] else None
        dense = (kernels.AVAILABLE and history is None and primal.nv <= DENSE_KERNEL_MAX
                 and primal.nv * (primal.nv + primal.m) <= DENSE_PRODUCTS)
        compiled_sparse = (kernels.AVAILABLE and not dense
                           and newton_sparse.SparseNewton.fits(primal.J, blocks))
        if compiled_sparse:
            newton_sparse.ensure_compiled()
        hessian = None if dense or compiled_sparse else ActiveHessian(primal.A, primal.J, layout)
        v = _initial(primal, opts["warm_start"])
    with watch.time("solve"):
        start = time.perf_counter()
        gamma = None
        if hessian is None:
            status, v, gamma, iterations, message = _minimize_compiled(primal, blocks, v, opts, dense, history)
        else:
            status, v, iterations, message = _minimize(primal, layout, hessian, v, opts, blocks, history)
        if gamma is None or not np.all(np.isfinite(v)):
            gamma = primal.impulses(v) if np.all(np.isfinite(v)) else np.full(primal.m, np.nan)
        if status is Status.OPTIMAL and not believed(program, primal.conic_x(v, gamma), primal.dual(gamma)):
            # (S10) is one global norm: a row whose own terms are far below the largest (the
            # friction of a box at rest, 1e-14 N s next to m g h) can still be off; Newton goes
            # on to its rounding floor (cost_tol), and contactopt's judgement reads the result
            tight = {**opts, "tol": 0.0, "tol_abs": 0.0}
            if history:
                history.pop()  # the continuation records this iterate again, as its start
            if hessian is None:
                    more, v, gamma, extra, message = _minimize_compiled(primal, blocks, v, tight, dense, history)
            else:
                more, v, extra, message = _minimize(primal, layout, hessian, v, tight, blocks, history)
                gamma = primal.impulses(v) if np.all(np.isfinite(v)) else np.full(primal.m, np.nan)
            iterations += extra
            status = status if more is Status.MAX_ITERATIONS else more
    usable = status.usable
    return make_solution(program, solver="newton", status=status,
                         x=primal.conic_x(v, gamma) if usable else None,
                         y=primal.dual(gamma) if usable else None,
                         iterations=iterations, watch=watch, message=message,
                         raw=None if history is None else {"history": public_entries(history)},
                         history=None if history is None else uniform_history(program, primal, history, start))


def _initial(primal: PrimalProgram, warm_start: Any) -> FloatArray:
    if warm_start is None:
        return np.array(primal.v_star if primal.v_guess is None else primal.v_guess)
    start = np.asarray(warm_start, dtype=np.float64).reshape(-1)
    sizes = (primal.nv, primal.nv + primal.m + primal.box.shape[0])
    if start.shape[0] not in sizes or not np.all(np.isfinite(start)):
        raise OptionError(f"solver 'newton': warm_start must be {sizes[0]} (v) or {sizes[1]} (x) "
                          f"finite numbers, got {start.shape[0]}")
    return np.array(start[:primal.nv])


_MESSAGES = {
    kernels.CRITERION: (Status.OPTIMAL, "optimality criterion (S10) met"),
    kernels.COST_FLOOR: (Status.OPTIMAL, "cost decrease below cost_tol (rounding floor)"),
    kernels.NO_DESCENT: (Status.OPTIMAL, "no descent direction left (rounding floor)"),
    kernels.NONFINITE: (Status.NUMERICAL_ERROR, "non-finite cost"),
    kernels.NOT_PD: (Status.NUMERICAL_ERROR, "Hessian factorization failed: not positive definite"),
}


def kernel_status(code: int, max_iter: int) -> tuple[Status, str]:
    """The status and message of a compiled Newton loop's code (:mod:`.kernels`)."""
    if code == kernels.MAX_ITER:
        return Status.MAX_ITERATIONS, f"{max_iter} Newton iterations"
    return _MESSAGES[code]


def _minimize_compiled(primal: PrimalProgram, blocks: kernels.Blocks, v: FloatArray, opts: Mapping[str, Any],
                       dense: bool, history: list[dict[str, Any]] | None = None
                       ) -> tuple[Status, FloatArray, FloatArray, int, str]:
    """The compiled Newton loop: whole for small problems (:func:`.newton_kernels.dense_newton`),
    else around QDLDL (:func:`.newton_sparse.minimize`): (status, v, gamma(v), iterations, message)."""
    if dense:
        A, J = _dense_operators(primal)
        gamma = np.empty(primal.m)
        code, iterations = kernels.dense_newton(
            A, J, primal.R, primal.v_hat, primal.c, 1.0 / np.sqrt(np.diagonal(A)), *blocks, v, gamma,
            int(opts["max_iter"]), float(opts["tol"]), float(opts["tol_abs"]), float(opts["cost_tol"]),
            float(opts["alpha_max"]), float(opts["ls_tol"]), int(opts["ls_max_iter"]))
    else:
        code, v, gamma, iterations = newton_sparse.minimize(primal, blocks, v, opts, history)
    status, message = kernel_status(code, int(opts["max_iter"]))
    return status, v, gamma, iterations, message


def _minimize(primal: PrimalProgram, layout: ConeLayout, hessian: ActiveHessian, v: FloatArray,
              opts: Mapping[str, Any], blocks: kernels.Blocks,
              history: list[dict[str, Any]] | None = None) -> tuple[Status, FloatArray, int, str]:
    """Newton's method of the module docstring from ``v``: (status, v, iterations, message),
    factorizing with :class:`.ActiveHessian`. The projection and the line search are the
    kernels' (:func:`.kernels.project_blocks`, :func:`.kernels.line_search`: compiled with
    numba, plain Python loops without it), so each exists once."""
    A, J, R, v_hat, c = _operators(primal)
    box = primal.box.shape[0] > 0  # Huber rows: l_R is no longer 1/2 gamma' R gamma once clipped
    JT = J.T
    d_inv = 1.0 / np.sqrt(primal.A.diagonal())
    c_norm = float(np.linalg.norm(d_inv * c))
    project_step = _compiled_projection(layout, blocks, R)
    previous = np.inf
    last: tuple[float, float, FloatArray] | None = None  # (alpha, l'(0), dv) of the previous step
    for iteration in range(int(opts["max_iter"]) + 1):
        vc = J @ v
        y = (v_hat - vc) / R
        gamma = project_step(y, False)[0]  # G only when a step follows
        Av = A @ v
        jc = JT @ gamma
        gradient = Av + c - jc
        cost = float(0.5 * v @ Av + c @ v) + (regularizer_cost(layout, y, gamma, R) if box
                                               else 0.5 * float(gamma @ (R * gamma)))
        if not np.isfinite(cost):
            return Status.NUMERICAL_ERROR, v, iteration, "non-finite cost"
        size = max(float(np.linalg.norm(d_inv * Av)), c_norm, float(np.linalg.norm(d_inv * jc)))
        residual = float(np.linalg.norm(d_inv * gradient))
        if last is not None:
            record_step(history, last[0], last[1], float(last[2] @ gradient))
        record(history, layout, y, gamma, cost, residual, size, v)
        if residual <= opts["tol_abs"] + opts["tol"] * size:
            return Status.OPTIMAL, v, iteration, "optimality criterion (S10) met"
        if iteration and previous - cost <= opts["cost_tol"] * max(abs(cost), abs(previous)):
            return Status.OPTIMAL, v, iteration, "cost decrease below cost_tol (rounding floor)"
        if iteration == int(opts["max_iter"]):
            break
        try:
            hessian.factor(project_step(y, True)[1])
            step = -hessian.solve(gradient)
        except (ValueError, np.linalg.LinAlgError) as exc:  # qdldl raises ValueError on a zero pivot
            return Status.NUMERICAL_ERROR, v, iteration, f"Hessian factorization failed: {exc}"
        w = J @ step
        a, b, slope = float(step @ (A @ step)), float(step @ (Av + c)), float(step @ gradient)
        m, dmax = primal.m, int(blocks[1].max(initial=1))
        alpha = kernels.line_search(vc, w, R, v_hat, *blocks, a, b, slope, float(opts["alpha_max"]),
                                    float(opts["ls_tol"]), int(opts["ls_max_iter"]), np.empty(m),
                                    np.empty(m), np.zeros((dmax, dmax)))
        if alpha == 0.0:
            return Status.OPTIMAL, v, iteration, "no descent direction left (rounding floor)"
        v = v + alpha * step
        previous = cost
        last = (alpha, slope, step)
    return Status.MAX_ITERATIONS, v, int(opts["max_iter"]), f"{opts['max_iter']} Newton iterations"


def _compiled_projection(layout: ConeLayout, blocks: kernels.Blocks, R: FloatArray) -> Any:
    """``project(y, want_G) -> (gamma, G per group)`` through :func:`.newton_kernels.project_blocks`
    (blocks are in group order, so each group's G is a slice of one array)."""
    start, dim = blocks[0], blocks[1]
    G = np.zeros((start.shape[0], int(dim.max(initial=1)), int(dim.max(initial=1))))
    gamma = np.empty(layout.m)
    slices = []
    offset = 0
    for group in layout.groups:
        nb, d = group.rows.shape
        slices.append((offset, offset + nb, d))
        offset += nb

    def run(y: FloatArray, want_G: bool) -> tuple[FloatArray, list[FloatArray]]:
        kernels.project_blocks(y, R, *blocks, gamma, G, want_G)
        return gamma.copy(), [G[low:high, :d, :d] for low, high, d in slices] if want_G else []

    return run


def _dense_operators(primal: PrimalProgram) -> tuple[FloatArray, FloatArray]:
    return np.ascontiguousarray(primal.A.toarray()), np.ascontiguousarray(primal.J.toarray())


def _operators(primal: PrimalProgram) -> tuple[Any, Any, FloatArray, FloatArray, FloatArray]:
    """``A``, ``J`` as dense arrays when small (a dense product costs about a microsecond,
    scipy's sparse one tens of microseconds of call overhead), else sparse."""
    if primal.nv * (primal.nv + primal.m) <= DENSE_PRODUCTS:
        return primal.A.toarray(), primal.J.toarray(), primal.R, primal.v_hat, primal.c
    return primal.A, primal.J, primal.R, primal.v_hat, primal.c

