"""Projected Gauss-Seidel (PGS) with over-relaxation, for LCPs and dual cone programs (ours).

Two program shapes are taken; :func:`accepts` says why any other one is refused.

**LCP(M, q)** with ``M_ii > 0`` for every ``i``: projected SOR, one sweep being, for
``i = 1..n`` in order, ::

    z_i <- max(0, z_i - omega (M z + q)_i / M_ii)

(Cottle, Pang & Stone, "The Linear Complementarity Problem", 1992, section 5.2; Mangasarian,
J. Optim. Theory Appl. 22, 1977). For symmetric ``M`` this is exact coordinate minimisation of
``f(z) = 1/2 z'Mz + q'z`` over ``z >= 0`` when ``omega = 1``; for symmetric positive
semidefinite ``M`` with positive diagonal and ``0 < omega < 2`` every update decreases ``f``
by ``M_ii (1/omega - 1/2) delta^2`` and every accumulation point of the iterates solves the
LCP (the whole sequence converges for positive definite ``M``). For nonsymmetric ``M`` there
is no such guarantee (``[[1, 2], [-2, 1]]`` with ``q = (-3, 1)`` cycles forever although it
is a P-matrix): the method then ends at the iteration cap and says so. ``M_ii <= 0`` (the
Stewart-Trinkle LCP has zero diagonal blocks) is refused: use ``lemke``.

**Dual cone programs**: a :class:`~contactopt.programs.ConicProgram` with ``A = -D``, ``D``
diagonal with positive entries, ``b = 0`` and cones Nonneg / SOC (and Zero), i.e. ::

    minimize 1/2 x'Px + c'x   subject to   D x in K,

which is a product of blocks ``x_b in C_b = {x_b : D_b x_b in K_b}``: each Nonneg row is a
block ``{x_i >= 0}``; each SOC cone is a block of ``dim`` variables, with
``D_b = diag(mu, 1, 1)`` a contact's friction cone ``{||x_t|| <= mu x_n}``; each Zero row
fixes ``x_i = 0`` (``formulations.ccp`` writes a contact with ``mu = 0`` as a Nonneg row for
``lambda_n`` and Zero rows for ``lambda_t``). ``D_b = diag(0, 1, 1)`` is refused: it is not the
friction cone of ``mu = 0`` (it leaves ``x_n`` free) and pgs has no free variables.

*Metric and step.* Each block is updated in its own scaled coordinates ``u_b = E_b x_b``
(positive diagonal ``E_b``) chosen so that ``C_b`` becomes a *circular* cone, whose Euclidean
projection has a closed form: ``E = 1`` on a Nonneg row, and ``E_b = diag(s, d_1..d_k)`` on an
SOC block with ``s`` the root mean square of ``d_1..d_k``, giving ``E_b C_b =
{||u_t|| <= m u_0}`` with ``m = d_0 / s``. For the friction cone (``D_b = diag(mu, 1, 1)``)
``E_b = I``: the update runs in the impulse coordinates themselves with ``m = mu``. (Scaling
all of ``y = D x`` instead would make the standard SOC but multiply the normal curvature by
``1/mu^2``, crippling the step for small ``mu``.) With ``H = E^-1 P E^-1``, ``f = E^-1 c`` and
``g = H u + f`` the gradient in ``u``, a sweep updates the blocks in order::

    Nonneg row i:  u_i <- max(0, u_i - omega g_i / H_ii)                 (exact GS when omega = 1)
    SOC block b:   u_b <- Proj_{E_b C_b}(u_b - (omega / L_b) g_b),  L_b = lambda_max(H_bb)

with the Euclidean projection in ``u_b`` (closed form for the cone ``{||u_t|| <= m u_0}``:
unchanged inside, 0 in the polar cone, otherwise
``(u_0 + m ||u_t||)/(1 + m^2) (1, m u_t/||u_t||)``, the nearest point of the boundary ray).
Every iterate is feasible, the last one included. Step and projection are in the same
metric, so a fixed point satisfies ``-g_b in N(u_b)``, i.e. ``-E_b^-1 (Px + c)_b`` lies in
the normal cone of ``E_b C_b`` at ``E_b x_b``, i.e. ``-(Px + c)_b in N_{C_b}(x_b)``; ``C``
being the product of the ``C_b``, that is exactly the optimality condition of the program.
Using a different (block-diagonal) metric per block changes the path, not the fixed point. The
descent lemma with ``L_b >= lambda_max(H_bb)`` gives ``f(u+) <= f(u) - L_b (1/omega - 1/2)
||delta||^2`` per block, so every update decreases the objective for ``0 < omega < 2``
(cyclic block coordinate gradient projection: Beck & Tetruashvili, SIAM J. Optim. 23, 2013;
for contact cones: Anitescu & Tasora, Comput. Optim. Appl. 47, 2010).

*Gradient bookkeeping.* ``g`` is kept up to date after every block update by
``g += H[:, b] delta`` (dense ``H``, formed once; untouched blocks cost nothing), and is
recomputed exactly every 50 sweeps and before convergence is declared.

*Convergence test* (computed by contactopt, every sweep, vectorised over the blocks): the
natural-map residual ``r = ||u - Proj_C(u - g)||_inf`` (for an LCP ``||min(z, Mz + q)||_inf``),
zero exactly at a solution; the solve stops with OPTIMAL when ``r <= tol * scale`` with
``scale = max(1, ||u||_inf, ||H u||_inf, ||f||_inf)`` (the magnitudes whose rounding
``r`` inherits), on an exactly recomputed ``g``. ``max_iter`` sweeps without that end in
MAX_ITERATIONS with the last (finite) iterate; a non-finite iterate ends in NUMERICAL_ERROR.
Iterations are sweeps. The duals returned for a cone program are ``y = D^-1 (P x + c)``
(stationarity ``P x + c + A'y = 0`` with ``A = -D``), in ``K*`` at a solution.

Options: ``max_iter`` (sweeps, default 1000), ``tol`` (default 1e-10, relative as above),
``omega`` (over-relaxation in (0, 2), default 1), ``warm_start`` (an initial ``x`` of length
n, e.g. the previous step's solution; it is projected onto the feasible set first, and the
residual is checked before the first sweep, so an exact warm start costs no sweep),
``history`` (False; True: :attr:`Solution.history` holds one row per sweep, the start
included, of contactopt's residuals of the iterate and the objective, and FCLIB's error for the
CCP of an FCLIB problem: :mod:`contactopt.solvers.history`; for a symmetric positive
semidefinite ``M`` or ``P`` the ``objective`` column is nonincreasing, by the decrease per
update above). Off, the sweep loop does no per-sweep work for it beyond one ``None`` test.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.programs.coulomb_cone import project_cones
from contactopt.solvers.base import (
    SolverSpec,
    Stopwatch,
    Tolerance,
    believed,
    check_options,
    make_solution,
)
from contactopt.solvers.history import Recorder, program_criteria
from contactopt.solvers.pgs import kernel as pgs_kernel
from contactopt.solvers.pgs.setup import Program, Setup, build_setup, check, refusal

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

SPEC = SolverSpec(
    name="pgs", kinds=frozenset({"lcp", "qp", "socp"}), module=__name__, requires=None,
    install_hint="(built in)",
    description="projected Gauss-Seidel/SOR for LCPs and dual cone programs (ours)",
    normalize=False, warm_start="warm_start", history=True,
    tolerances=(Tolerance("tol", 1e-10),),  # DEFAULT_TOL: its relative natural-map test
)

OPTIONS = {"max_iter", "tol", "omega", "warm_start", "history"}
#: Sweeps between two checks of the relative residual once the natural-map test passes.
CONFIRM_EVERY = 4
DEFAULT_MAX_ITER = 1000
DEFAULT_TOL = 1e-10
DEFAULT_OMEGA = 1.0
EXACT_GRADIENT_EVERY = 50  # sweeps between exact recomputations of g = H u + f

def accepts(program: Program) -> str | None:
    """None if pgs takes ``program``, else the reason it does not (for the registry's routing).

    Cheap (structure and diagonals, O(nnz)); the dense set-up happens in :func:`solve`.
    """
    return check(program)


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    check_options("pgs", options, OPTIONS)
    max_iter, tol, omega = _scalar_options(options)
    recorder = _recorder(options)
    watch = Stopwatch()
    with watch.time("setup"):
        reason = check(program)
        if reason is not None:
            raise UnsupportedProgramError(refusal(program, reason))
        setup = build_setup(program)
        u0 = _initial_point(setup, options.get("warm_start"), program.n)
    def believed_at(u: FloatArray) -> bool:  # contactopt's row-wise judgement, as make_solution will read it
        x = u / setup.E
        return believed(program, x, None if setup.D is None else _duals(program, setup, x))

    def criteria(u: FloatArray) -> dict[str, float]:  # one history row (option history)
        x = u / setup.E
        return program_criteria(program, x, None if setup.D is None else _duals(program, setup, x))

    def observe(sweep: int, u: FloatArray) -> None:
        assert recorder is not None
        recorder.add(sweep, lambda: criteria(u))

    with watch.time("solve"), np.errstate(over="ignore", invalid="ignore"):
        if recorder is not None:
            recorder.restart()  # times from the first sweep: set-up (and numba's compilation) excluded
        u, status, sweeps, residual, tol_abs = _iterate(setup, u0, max_iter, tol, omega, believed_at,
                                                        None if recorder is None else observe)
        x = u / setup.E
        y = None if setup.D is None else _duals(program, setup, x)
    if status is Status.OPTIMAL:
        message = f"converged in {sweeps} sweeps (residual {residual:.2e} <= {tol_abs:.2e})"
    elif status is Status.MAX_ITERATIONS:
        message = f"not converged after {sweeps} sweeps (residual {residual:.2e} > {tol_abs:.2e})"
    else:
        message = f"non-finite iterate after {sweeps} sweeps (the iteration diverged)"
    raw = {"residual": residual, "tol_abs": tol_abs, "omega": omega, "sweeps": sweeps,
           "warm_start": options.get("warm_start") is not None}
    with np.errstate(over="ignore", invalid="ignore"):
        return make_solution(program, solver="pgs", status=status, x=x, y=y, iterations=sweeps,
                             watch=watch, message=message, raw=raw,
                             history=None if recorder is None else recorder.arrays())


def _recorder(options: Mapping[str, Any]) -> Recorder | None:
    """A :class:`Recorder` when the option ``history`` is on, else None."""
    history = options.get("history", False)
    if not isinstance(history, bool | np.bool_):
        raise OptionError(f"solver 'pgs': history must be true or false, got {history!r}")
    return Recorder() if history else None


# --------------------------------------------------------------------------- options


def _scalar_options(options: Mapping[str, Any]) -> tuple[int, float, float]:
    try:
        if isinstance(options.get("max_iter"), bool):
            raise TypeError
        max_iter = operator.index(options.get("max_iter", DEFAULT_MAX_ITER))
    except TypeError:
        raise OptionError(f"solver 'pgs': max_iter must be an integer, got "
                          f"{options['max_iter']!r}") from None
    if max_iter < 0:
        raise OptionError(f"solver 'pgs': max_iter must be >= 0, got {max_iter}")
    tol = _real(options, "tol", DEFAULT_TOL)
    if not (math.isfinite(tol) and tol > 0):
        raise OptionError(f"solver 'pgs': tol must be a positive number, got {tol!r}")
    omega = _real(options, "omega", DEFAULT_OMEGA)
    if not 0.0 < omega < 2.0:
        raise OptionError(f"solver 'pgs': omega (over-relaxation) must be in (0, 2), got {omega!r}")
    return max_iter, tol, omega


def _real(options: Mapping[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool):
        raise OptionError(f"solver 'pgs': {key} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise OptionError(f"solver 'pgs': {key} must be a number, got {value!r}") from None


def _initial_point(setup: Setup, warm_start: Any, n: int) -> FloatArray:
    """The warm start (default 0) in ``u`` coordinates, projected onto the feasible set."""
    if warm_start is None:
        return np.zeros(n)
    try:
        x0 = np.array(warm_start, dtype=np.float64)
    except (TypeError, ValueError):
        raise OptionError("solver 'pgs': warm_start must be an array of numbers") from None
    if x0.shape != (n,):
        raise OptionError(f"solver 'pgs': warm_start must have shape ({n},) like the program's "
                          f"variables, got {x0.shape}")
    if not np.all(np.isfinite(x0)):
        raise OptionError("solver 'pgs': warm_start contains NaN or infinite entries")
    return _project(setup, setup.E * x0)


# --------------------------------------------------------------------------- iteration


def _iterate(setup: Setup, u: FloatArray, max_iter: int, tol: float, omega: float,
             believed: Callable[[FloatArray], bool] | None = None,
             observe: Callable[[int, FloatArray], None] | None = None
             ) -> tuple[FloatArray, Status, int, float, float]:
    """Sweep until converged, capped or non-finite: ``(u, status, sweeps, residual, tol_abs)``.
    Converged means the natural-map test and, when given, ``believed(u)``: contactopt's
    residuals relative to each row (a program whose numbers are all far below 1 passes the
    natural-map test at its first sweep); ``believed`` is asked again every
    :data:`CONFIRM_EVERY` sweeps while it says no. ``observe(sweeps, u)``, when given, sees the
    start and every sweep's iterate (the option ``history``)."""
    H, f = setup.H, setup.f
    g = H @ u + f
    f_norm = float(np.abs(f).max(initial=0.0))

    def converged(g_exact: FloatArray) -> tuple[bool, float, float]:
        residual = _residual(setup, u, g_exact)
        scale = max(1.0, f_norm, float(np.abs(u).max(initial=0.0)),
                    float(np.abs(g_exact - f).max(initial=0.0)))
        tol_abs = tol * scale
        return math.isfinite(tol_abs) and residual <= tol_abs, residual, tol_abs

    rejected_at = -CONFIRM_EVERY  # the sweep at which ``believed`` last said no
    sweeps = 0

    def confirmed(done: bool) -> bool:
        nonlocal rejected_at
        if not done or believed is None:
            return done
        if sweeps - rejected_at < CONFIRM_EVERY:
            return False
        if believed(u):
            return True
        rejected_at = sweeps
        return False

    done, residual, tol_abs = converged(g)
    done = confirmed(done)
    if observe is not None:
        observe(0, u)
    while not done:
        if not math.isfinite(residual):
            return u, Status.NUMERICAL_ERROR, sweeps, residual, tol_abs
        if sweeps >= max_iter:
            return u, Status.MAX_ITERATIONS, sweeps, residual, tol_abs
        _sweep(setup, u, g, omega)
        sweeps += 1
        if observe is not None:
            observe(sweeps, u)
        if sweeps % EXACT_GRADIENT_EVERY == 0:
            g = H @ u + f
        done, residual, tol_abs = converged(g)
        if done:  # confirm on the exact gradient (the incremental one carries rounding drift)
            g = H @ u + f
            done, residual, tol_abs = converged(g)
            done = confirmed(done)
    return u, Status.OPTIMAL, sweeps, residual, tol_abs


def _sweep(setup: Setup, u: FloatArray, g: FloatArray, omega: float) -> None:
    """One Gauss-Seidel sweep over the blocks, updating ``u`` and ``g = H u + f`` in place;
    compiled with numba when installed (:mod:`contactopt.solvers.pgs.kernel`)."""
    rows, starts, stops, slopes, steps = setup.arrays
    pgs_kernel.sweep(setup.HT, rows, u, g, starts, stops, slopes, steps, omega)


def _project(setup: Setup, v: FloatArray) -> FloatArray:
    """Projection onto the feasible set in ``u`` coordinates (all blocks at once)."""
    out = v.copy()
    out[setup.nonneg] = np.maximum(v[setup.nonneg], 0.0)
    out[setup.fixed] = 0.0
    for rows, slopes in setup.cone_groups:
        out[rows] = project_cones(v[rows], slopes)
    return out


def _residual(setup: Setup, u: FloatArray, g: FloatArray) -> float:
    """Natural-map residual ``||u - Proj(u - g)||_inf`` (NaN-propagating: inf if non-finite)."""
    if u.size == 0:
        return 0.0
    r = np.abs(u - _project(setup, u - g))
    return float(r.max()) if np.all(np.isfinite(r)) else math.inf


def _duals(program: Program, setup: Setup, x: FloatArray) -> FloatArray:
    """``y = D^-1 (P x + c)``: stationarity ``P x + c + A'y = 0`` with ``A = -D``."""
    assert isinstance(program, ConicProgram) and setup.D is not None
    return np.asarray(program.P @ x + program.c) / setup.D
