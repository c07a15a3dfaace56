"""Nonsmooth Gauss-Seidel (NSGS) for FCLIB's local Coulomb problem (ours; the method of Siconos's
``fc3d_nsgs`` and ContactBench's NCP-PGS).

The problem (:mod:`contactopt.programs.coulomb`; De Saxcé & Feng 1991): find impulses ``r``
with ``C*_mu ∋ û ⟂ r ∈ C_mu``, ``u = W r + q``, ``û_c = u_c + [mu_c ||u_cT||, 0, 0]``, the
friction cone being the one of Tedrake's "Multi-Body Dynamics" appendix (Tedrake 2022,
the SOCP friction cone ``FC(q)``; maximum dissipation in its "Time-stepping LCP: Coulomb
Friction"). One iteration is a sweep over the contacts that replaces each ``r_c`` by the exact
answer of its one-contact problem with the others held (Jean, "The non-smooth contact dynamics
method", CMAME 177, 1999; Acary & Brogliato, "Numerical methods for nonsmooth dynamical systems",
Springer 2008, ch. 13; Acary, Brémond & Huber, "On solving contact problems with Coulomb
friction: formulations and numerical comparisons", 2018): take-off, sticking or sliding, the
sliding impulse by a bracketed Newton search along one scalar (Alart & Curnier, CMAME 92, 1991,
for the cases of the law): :mod:`contactopt.solvers.coulomb.nsgs.local` has the formulas,
:mod:`contactopt.solvers.coulomb.nsgs.kernel` the sweeps (numba, or NumPy without it). It needs
nonsingular normal entries ``W_cc[0, 0] > 0`` only, not symmetry: a nonsymmetric ``W`` (files
of other tools) is solved as given. Gauss-Seidel has no convergence guarantee for Coulomb
friction (the problem is not the optimality condition of a convex program); it converges
linearly on the usual Delassus operators and is the field's reference method.

*Stopping.* Each sweep measures its change ``||r_new - r_old|| / (1 + sqrt ||q||)`` (FCLIB's
normalisation, as Siconos's light error); when that is at most a threshold (``tol`` at first),
FCLIB's error is computed (one more pass over ``W``'s rows) and, if it is above ``tol``, the
threshold is lowered by the ratio of the two (error and change shrink together in the linear
regime), so the costly check runs on few sweeps; it is also computed after sweeps 1, 2, 4, 8,
... of each run of the kernel whatever the change (Siconos's adaptive error evaluation, the
frequency doubled after each check that fails): a drift along ``W``'s null space keeps the
change constant, and a threshold lowered below it had left the error, met after two sweeps,
unchecked for 50000 (suite/walker's step 233). Such a drift (the sweeps' increment constant: a
singular ``W`` whose sticking rows have no solution) is extrapolated to where a contact's mode
changes (:mod:`contactopt.solvers.coulomb.nsgs.kernel`, "Drift"); ``raw`` counts
``drift_jumps`` and ``drift_sweeps_skipped`` (the sweeps a jump stands for; ``iterations``
counts the sweeps done). The solve is OPTIMAL when FCLIB's error is at
most ``tol`` and contactopt's relative residual confirms (``coulomb_believed``); a budget of
``max_iterations`` sweeps spent ends in MAX_ITERATIONS with the error reached; a non-finite
iterate in NUMERICAL_ERROR. With ``history=True`` every sweep is followed by
``coulomb_criteria`` (the stopping test is then that row), recorded with ``iteration`` and
``time`` (solve time before that row's bookkeeping).

Options: ``tol`` (FCLIB error to reach, default 1e-8), ``max_iterations`` (sweeps, default
50000: the 100-sphere pile's first step, 486 closing contacts on 600 velocities, needs about
12000 to FCLIB error 1e-8, as Siconos's NSGS needs 7500; dm_hopper's step 39 took 28334 before
the drift's extrapolation, its flat foot's two contacts making W singular: the sweeps drift
along W's null space, 1.3e-5 of the impulse a sweep at a constant FCLIB error, until the toe's
contact slides), ``history`` (default False), ``r0``
(warm start, projected onto the cones; an answer as warm start costs no sweep), ``symmetrize``
(solve with ``(W + W^T) / 2``, said in the message; NSGS itself needs no symmetry), ``omega``
(relaxation ``r_c <- omega r_c^local + (1 - omega) r_c``, in ``(0, 1]``, default 1),
``last_resort`` (``nsn+fixed_point``, default: a budget spent without convergence is continued
by the semismooth Newton method from the last iterate, then by De Saxcé's fixed point,
:mod:`contactopt.solvers.coulomb.last_resort`; one of them; or ``none``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.programs import Solution, Status
from contactopt.programs.coulomb import COULOMB_CONFIRM_LEVEL, CoulombProgram, coulomb_believed, coulomb_criteria
from contactopt.programs.coulomb_error import project_cones
from contactopt.solvers.base import Program, Registry, SolverSpec, Stopwatch, make_solution
from contactopt.solvers.coulomb import last_resort
from contactopt.solvers.coulomb.nsgs import kernel
from contactopt.solvers.coulomb.nsgs import local as nsgs_local
from contactopt.solvers.coulomb.options import COMMON_OPTIONS, DEFAULT_TOL, coulomb_program, integer_option, real_option

FloatArray = NDArray[np.float64]

SPEC = SolverSpec(
    name="nsgs", kinds=frozenset({"coulomb"}), module=__name__, requires=None, install_hint="(built in)",
    description="nonsmooth Gauss-Seidel over contacts with exact local solves, for the Coulomb problem (ours)",
    normalize=False, warm_start="r0", history=True, composite=True,  # composite: its last resort (last_resort)
)

OPTIONS = COMMON_OPTIONS | {"omega", "last_resort"}
DEFAULT_MAX_ITERATIONS = 50_000
Finish = Callable[[Status, int, float], Solution]  # (status, sweeps, FCLIB error) -> the answer


def solve(program: Program, variant: str | None, options: Mapping[str, Any], *,
          registry: Registry | None = None) -> Solution:
    """NSGS's answer, or, where it spends its budget, De Saxcé's fixed point's from its iterate
    (:mod:`contactopt.solvers.coulomb.last_resort`; ``registry``: the solver registry)."""
    last_resort.last_resort_option("nsgs", options)
    return last_resort.finish("nsgs", program, _solve(program, options), options, registry)


def _solve(program: Program, options: Mapping[str, Any]) -> Solution:
    watch = Stopwatch()
    with watch.time("setup"):
        # the options and start every Coulomb solver shares (contactopt.solvers.coulomb.options)
        work, start, note = coulomb_program("nsgs", program, options, OPTIONS, needs_symmetry=False)
        tol = real_option("nsgs", options, "tol", DEFAULT_TOL)
        max_iterations = integer_option("nsgs", options, "max_iterations", DEFAULT_MAX_ITERATIONS)
        omega = real_option("nsgs", options, "omega", 1.0)
        if omega > 1.0:
            raise OptionError(f"solver 'nsgs': omega (relaxation) must be in (0, 1], got {omega!r}")
        recording = options.get("history", False)
        if not isinstance(recording, bool | np.bool_):
            raise OptionError(f"solver 'nsgs': history must be true or false, got {recording!r}")
        symmetrize = bool(note)
        system = _System(work)
        r = project_cones(start.reshape(-1, work.dim), work.mu).reshape(-1)  # a copy, solved in place

    def finish(status: Status, sweeps: int, error: float, history: dict[str, FloatArray] | None = None) -> Solution:
        if status is Status.OPTIMAL:
            message = f"converged in {sweeps} sweeps (FCLIB error {error:.2e} <= {tol:.1e})"
        elif status is Status.MAX_ITERATIONS:
            message = f"not converged after {sweeps} sweeps (FCLIB error {error:.2e} > {tol:.1e})"
        else:
            message = f"non-finite iterate after {sweeps} sweeps"
        message += note
        raw = {"sweeps": sweeps, "fclib": error, "omega": omega, "compiled": system.compiled,
               "local_solves": dict(zip(nsgs_local.OUTCOMES, (int(n) for n in system.counts), strict=True)),
               "symmetrized": symmetrize, "drift_jumps": int(system.drift[kernel.JUMPS]),
               "drift_sweeps_skipped": float(system.drift[kernel.SKIPPED])}
        return make_solution(program, solver="nsgs", status=status, x=r.copy(), y=None, iterations=sweeps,
                             watch=watch, message=message, raw=raw, history=history)

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if recording:
            with watch.time("solve"):
                status, sweeps, history = _iterate_recorded(work, system, r, tol, max_iterations, omega)
            return finish(status, sweeps, float(history["fclib"][-1]), history)
        confirm = None if symmetrize else finish  # the answer's own residuals decide, computed once
        return _iterate(work, system, r, tol, max_iterations, omega, watch, finish, confirm)


class _System:
    """The arrays the sweeps read: ``W``'s CSR rows, its diagonal blocks, ``q``, ``mu``, the
    slip ratios of the sliding searches (warm across sweeps) and the outcome counts."""

    def __init__(self, program: CoulombProgram) -> None:
        self.compiled = kernel.COMPILED and kernel.AVAILABLE
        W = program.W
        if self.compiled:
            kernel.ensure_compiled()
            indptr, indices, data, blocks = kernel.rows_and_blocks(program.m, program.dim, W.indptr, W.indices, W.data)
            self.rows = (data, indices, indptr)  # CSR arrays (no scipy object: its checks cost ~30 us)
            self.blocks = blocks
            if "diagonal_blocks" not in vars(program):  # the program's cached property, the same entries:
                vars(program)["diagonal_blocks"] = blocks  # its residuals (local scaling) need not extract them again
        else:
            self.W = W.tocsr()
            self.W.sort_indices()
            self.rows = (self.W.data, self.W.indices, self.W.indptr)
            self.blocks = np.ascontiguousarray(program.diagonal_blocks)
        self.q = np.ascontiguousarray(program.q)
        self.mu = np.ascontiguousarray(program.mu)
        self.dim = program.dim
        self.q_scale = 1.0 + math.sqrt(float(np.linalg.norm(program.q)))
        self.slip = np.zeros(program.contacts)
        self.counts = np.zeros(len(nsgs_local.OUTCOMES), np.int64)
        self.last = np.zeros(program.m)  # the last sweep's increment and the drift's state (kernel.run)
        self.drift = kernel.drift_state()

    def run(self, r: FloatArray, omega: float, sweeps: int, change_tol: float, tol: float,
            periodic: bool = True) -> tuple[int, float, float]:
        """Up to ``sweeps`` sweeps (:func:`contactopt.solvers.coulomb.nsgs.kernel.run`)."""
        if self.compiled:
            return kernel.run(*self.rows, self.blocks, self.q, self.mu, self.dim, r, self.slip, omega, self.counts,
                              sweeps, change_tol, tol, self.q_scale, self.last, self.drift, periodic)
        return kernel.run_numpy(self.W, self.blocks, self.q, self.mu, self.dim, r, self.slip, omega, self.counts,
                                sweeps, change_tol, tol, self.q_scale, self.last, self.drift, periodic)

    def error(self, r: FloatArray) -> float:
        """FCLIB's error of ``r`` (the kernel's, as the sweeps' own checks)."""
        if self.compiled:
            return float(kernel.fclib_error(*self.rows, self.q, self.mu, self.dim, r, self.q_scale))
        return kernel.fclib_error_numpy(self.W, self.q, self.mu, self.dim, r, self.q_scale)


def sweeper(program: CoulombProgram, tol: float) -> Callable[[FloatArray, int], int]:
    """``sweeps(r, n)``: up to ``n`` sweeps on ``r`` in place (``omega = 1``), stopping early
    once FCLIB's error is at most a threshold, ``tol`` at first and, as in :func:`_iterate`,
    a tenth of the error an ``r`` given at or below it has (there the caller's relative
    residual did not confirm); returns the sweeps done (``nsn``'s stall fallback,
    :mod:`contactopt.solvers.coulomb.alart_curnier`)."""
    system = _System(program)
    threshold = tol

    def sweeps(r: FloatArray, n: int) -> int:
        nonlocal threshold
        error = system.error(r)
        if error <= threshold:
            threshold = 0.1 * error
        done, _, _ = system.run(r, 1.0, n, threshold, threshold, periodic=False)  # nsn checks after each block
        return done

    return sweeps


def _iterate(program: CoulombProgram, system: _System, r: FloatArray, tol: float, max_iterations: int,
             omega: float, watch: Stopwatch, finish: Finish, confirm: Finish | None) -> Solution:
    """Sweep (in the kernel, several per call) until converged or the budget is spent. When
    the kernel's FCLIB error passes, ``confirm`` builds the answer (its residuals computed
    once, by ``make_solution``) and the answer is returned if they pass too; without
    ``confirm`` (a symmetrized ``W``: the residuals of the program solved decide)
    ``coulomb_believed`` does."""
    sweeps = 0
    inner_tol = tol  # lowered when FCLIB's error passes but the relative residual does not
    change_tol = tol
    with watch.time("solve"):
        error = system.error(r) if np.any(r) else -1.0  # a warm start may be the answer; 0 rarely is
    while True:
        if not math.isfinite(error):
            return finish(Status.NUMERICAL_ERROR, sweeps, error)
        if 0.0 <= error <= inner_tol:
            if confirm is None:
                if coulomb_believed(program, r):
                    return finish(Status.OPTIMAL, sweeps, error)
            else:
                answer = confirm(Status.OPTIMAL, sweeps, error)
                if answer.residuals.fclib <= tol and answer.residuals.relative <= COULOMB_CONFIRM_LEVEL:
                    return answer
            inner_tol = 0.1 * error
            change_tol = min(change_tol, inner_tol)
        if sweeps >= max_iterations:
            return finish(Status.MAX_ITERATIONS, sweeps, system.error(r) if error < 0.0 else error)
        with watch.time("solve"):
            done, error, change_tol = system.run(r, omega, max_iterations - sweeps, change_tol, inner_tol)
        sweeps += done


def _iterate_recorded(program: CoulombProgram, system: _System, r: FloatArray, tol: float, max_iterations: int,
                      omega: float) -> tuple[Status, int, dict[str, FloatArray]]:
    """:func:`_iterate` one sweep at a time, with ``coulomb_criteria`` after each (row 0: the
    initial point); the time column leaves the criteria's own cost out."""
    rows: list[dict[str, float]] = []
    start = time.perf_counter()
    bookkeeping = 0.0
    sweeps = 0
    status = Status.MAX_ITERATIONS
    while True:
        elapsed = time.perf_counter() - start - bookkeeping
        row = coulomb_criteria(program, r)
        rows.append({**row, "iteration": float(sweeps), "time": elapsed})
        bookkeeping = time.perf_counter() - start - elapsed
        if not math.isfinite(row["fclib"]):
            status = Status.NUMERICAL_ERROR
            break
        if row["fclib"] <= tol and row["relative"] <= COULOMB_CONFIRM_LEVEL:
            status = Status.OPTIMAL
            break
        if sweeps >= max_iterations:
            break
        system.run(r, omega, 1, -1.0, tol)  # one sweep, no check of its own (change_tol < 0)
        sweeps += 1
    history = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    return status, sweeps, history
