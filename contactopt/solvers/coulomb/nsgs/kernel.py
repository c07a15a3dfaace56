"""The sweeps of :mod:`contactopt.solvers.coulomb.nsgs.solver`, compiled with numba when it is installed
(``pip install 'contactopt[fast]'``), else run by the Python interpreter with NumPy row
products (selected automatically; :data:`COMPILED` says which; both do the same arithmetic).

**The problem** (FCLIB's local Coulomb problem; De Saxcé & Feng 1991): find ``r`` with
``C*_mu ∋ û ⟂ r ∈ C_mu``, ``u = W r + q``, ``û_c = u_c + [mu_c ||u_cT||, 0(, 0)]``, rows per
contact ``[n, t1(, t2)]``; the friction cone ``C_mu = {||r_T|| <= mu r_N}`` is the one of
Tedrake's "Multi-Body Dynamics" appendix (section "Time-stepping LCP: Coulomb Friction" and the
SOCP friction cone ``FC(q)``; Tedrake 2022, docs/references.md).

**A sweep** (nonsmooth Gauss-Seidel: Jean, "The non-smooth contact dynamics method", Comput.
Methods Appl. Mech. Engrg. 177, 1999; Acary & Brogliato, "Numerical methods for nonsmooth
dynamical systems", Springer 2008, ch. 13; Acary, Brémond & Huber, "On solving contact problems
with Coulomb friction: formulations and numerical comparisons", 2018, the NSGS with local
solvers) visits the contacts in order; for contact ``c`` it forms
``q'_c = q_c + sum_{d != c} W_cd r_d`` as the products with ``W``'s sparse rows (CSR) less the
diagonal block's (from the current ``r``: no running sum that drifts) and replaces ``r_c`` by
the exact solution of the one-contact problem ``u_c = W_cc r_c + q'_c``
(:func:`contactopt.solvers.coulomb.nsgs.local.local_solve`), relaxed by ``omega`` in ``(0, 1]`` (a
convex combination of two points of the cone stays in it).

**Drift.** While every contact keeps its mode (take-off, stick), a sweep is an affine map
``r <- T r + c``, Gauss-Seidel's on the rows ``W_SS r_S = -q_S`` of the sticking contacts. Where
``W_SS`` is singular (more contact rows than the rows' rank: a flat foot's two contacts, an
arm's link on a box edge, a humanoid's 21 joint limits and 8 contacts on 27 dofs) and ``q_S``
has a part outside its range, the system has no solution and the iterates do not converge: ``T``
has the eigenvalue 1 on ``W_SS``'s null space (semisimple, the others inside the unit circle:
the powers of ``T`` converge, Meyer & Plemmons, "Convergence of powers of a matrix with
applications to iterative methods for singular linear systems", SIAM J. Numer. Anal. 14, 1977),
and the part of ``c`` in that eigenspace adds one constant step ``d`` a sweep,
``r_k = r_* + k d + O(lambda^k)``, ``W d = 0``: the impulses move along the null space at a constant FCLIB error, ``u``
unchanged, until a contact's impulse reaches its cone's surface (its mode changes: it slides or
takes off), from where the sweeps converge. The drift's speed is the inconsistency's size
(suite/hopper's flat foot: 2.5e-6 of a unit impulse a sweep, 230229 sweeps to the toe's slide;
the user's arm: 3.6e-9 a sweep, 4.2e6 sweeps). :func:`run` detects it (DRIFT_SWEEPS increments
equal to DRIFT_TOL) and takes those sweeps at once: ``r + t d``, ``t`` the first exit of a
contact's ray ``r_c + t d_c`` from its cone (:func:`cone_exit`; a contact already on the surface,
sliding, is kept on it by the projection), kept when FCLIB's error is at most DRIFT_GROWTH times
the one it left and shortened by DRIFT_BACKTRACK otherwise (a drift with sliding contacts turns
their impulses on the cone's surface, and is linear only over a shorter range).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.core.jit import UNSIGNED as _u  # unsigned indexing: no wraparound test
from contactopt.core.jit import jit_in_place
from contactopt.solvers.coulomb.nsgs import local as nsgs_local
from contactopt.solvers.coulomb.nsgs.local import local_solve, project_cone

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

def rows_and_blocks(m: int, dim: int, Wp: Any, Wi: Any, Wx: Any) -> tuple[Any, Any, Any, Any]:
    """From ``W``'s CSC arrays: its CSR arrays ``(indptr, indices, data)`` (each row's columns
    ascending: the columns are visited in order) and its diagonal blocks (m / dim, dim, dim)."""
    nnz = Wp[m]
    Rp = np.zeros(m + 1, np.int64)
    for p in range(nnz):
        Rp[Wi[p] + 1] += 1
    for i in range(m):
        Rp[i + 1] += Rp[i]
    Ri = np.empty(nnz, np.int64)
    Rx = np.empty(nnz, np.float64)
    fill = Rp[:m].copy()
    blocks = np.zeros((m // dim, dim, dim))
    for c in range(m // dim):
        start = c * dim  # the block's rows are start..start + dim - 1 (no division per entry)
        for col in range(dim):
            j = start + col
            for p in range(Wp[j], Wp[j + 1]):
                i = Wi[p]
                Ri[fill[i]] = j
                Rx[fill[i]] = Wx[p]
                fill[i] += 1
                if start <= i < start + dim:
                    blocks[c, i - start, col] += Wx[p]
    return Rp, Ri, Rx, blocks


def sweep(data: Any, indices: Any, indptr: Any, blocks: Any, q: Any, mu: Any, dim: int, r: Any,
          slip: Any, omega: float, counts: Any) -> float:
    """One sweep over the contacts (module docstring), updating ``r`` and the slip ratios in
    place and adding each local outcome to ``counts``; returns ``||r_new - r_old||^2``. ``W`` is
    given by its CSR arrays and its diagonal blocks ``blocks`` (nc, dim, dim)."""
    nc = blocks.shape[0]
    qp = np.empty(dim)
    new = np.empty(dim)
    work = np.empty(dim)
    change = 0.0
    for c in range(nc):
        start = c * dim
        for k in range(dim):
            i = start + k
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * r[_u(indices[p])]
            for col in range(dim):  # less the diagonal block's part: q'_c
                acc -= blocks[c, k, col] * r[start + col]
            qp[k] = q[i] + acc
            new[k] = r[i]
        outcome, s = local_solve(blocks[c], dim, qp, mu[c], slip[c], new, work)
        slip[c] = s
        counts[outcome] += 1
        for k in range(dim):
            value = omega * new[k] + (1.0 - omega) * r[start + k]
            delta = value - r[start + k]
            change += delta * delta
            r[start + k] = value
    return change


def fclib_error(data: Any, indices: Any, indptr: Any, q: Any, mu: Any, dim: int, r: Any,
                q_scale: float) -> float:
    """FCLIB's error of ``r`` (``fclib_merit_local``: ``||r - P_C(r - û)|| / (1 + sqrt ||q||)``,
    ``q_scale`` being the denominator), with ``u = W r + q`` from the CSR rows."""
    nc = mu.shape[0]
    u = np.empty(dim)
    e = np.empty(dim)
    total = 0.0
    for c in range(nc):
        start = c * dim
        for k in range(dim):
            i = start + k
            acc = q[i]
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * r[_u(indices[p])]
            u[k] = acc
        u[0] += mu[c] * math.sqrt(u[1] * u[1] + (u[2] * u[2] if dim == 3 else 0.0))
        for k in range(dim):
            e[k] = r[start + k] - u[k]
        project_cone(e, dim, mu[c])
        for k in range(dim):
            d = r[start + k] - e[k]
            total += d * d
    return math.sqrt(total) / q_scale


#: The drift of the sweeps along ``W``'s null space (module docstring, "Drift"): increments
#: equal to DRIFT_TOL (relative) over DRIFT_SWEEPS sweeps in a row are a drift; a jump of fewer
#: than DRIFT_MIN sweeps is left to the sweeps; an extrapolated point is kept when its FCLIB
#: error is at most DRIFT_GROWTH times the one it left (``u`` does not move along the null space).
DRIFT_SWEEPS = 3
DRIFT_TOL = 1e-4
DRIFT_MIN = 2.0
DRIFT_GROWTH = 2.0
DRIFT_BACKTRACK = 0.25
SURFACE = 1e-9
#: The drift's state (a float array, :func:`drift_state`): the current streak of equal
#: increments, the streak asked for (doubled after a refused jump), jumps taken, sweeps skipped.
STREAK, NEEDED, JUMPS, SKIPPED = 0, 1, 2, 3


def drift_state() -> FloatArray:
    """A fresh drift state (no streak, DRIFT_SWEEPS asked, nothing jumped)."""
    state = np.zeros(4)
    state[NEEDED] = DRIFT_SWEEPS
    return state


def cone_exit(r: Any, d: Any, start: int, dim: int, mu: float) -> float:
    """The largest ``t >= 0`` with ``r_c + s d_c`` in ``C_mu`` for every ``s`` in ``[0, t]``
    (``inf`` if the ray stays in; 0 if it leaves at once), for the contact whose rows begin at
    ``start``: ``r_N + t d_N >= 0`` and ``g(t) = mu^2 (r_N + t d_N)^2 - ||r_T + t d_T||^2 >= 0``,
    a quadratic ``a t^2 + b t + c`` with ``c >= 0`` (``r_c`` in the cone). A contact on the
    cone's surface (``c`` within SURFACE of ``mu^2 r_N^2``: sliding) is bounded by its normal
    row only: the jump projects it back onto the surface, along which it slides."""
    rn, dn = r[start], d[start]
    exit_t = math.inf
    if dn < 0.0:
        exit_t = max(rn, 0.0) / -dn
    if mu == 0.0:
        return exit_t
    dd = 0.0
    rd = 0.0
    rr = 0.0
    for k in range(1, dim):
        dd += d[start + k] * d[start + k]
        rd += r[start + k] * d[start + k]
        rr += r[start + k] * r[start + k]
    a = mu * mu * dn * dn - dd
    b = 2.0 * (mu * mu * rn * dn - rd)
    c = mu * mu * rn * rn - rr
    if c <= SURFACE * mu * mu * rn * rn:
        return exit_t
    if a == 0.0:
        return min(exit_t, c / -b) if b < 0.0 else exit_t
    disc = b * b - 4.0 * a * c
    if disc < 0.0:  # a > 0 (a < 0 with c > 0 has real roots): g > 0 throughout
        return exit_t
    half = -0.5 * (b + math.copysign(math.sqrt(disc), b))
    lo, hi = min(half / a, c / half), max(half / a, c / half)  # half != 0: c > 0
    if a > 0.0:  # g < 0 between the roots (of one sign, c / a > 0)
        return exit_t if hi <= 0.0 else min(exit_t, max(lo, 0.0))
    return min(exit_t, max(hi, 0.0))  # a < 0: g >= 0 between the roots, lo < 0 < hi


def drift_length(r: Any, before: Any, last: Any, state: Any, mu: Any, dim: int) -> float:
    """After a sweep from ``before`` to ``r``: ``last`` becomes its increment and the streak of
    equal increments is counted in ``state``; when it reaches the streak asked for, the number
    of sweeps ``t`` the drift can go on before a contact's impulse leaves its cone (its mode
    changes), if finite and at least DRIFT_MIN, else 0."""
    m = r.shape[0]
    diff = 0.0
    norm = 0.0
    for i in range(m):
        d = r[i] - before[i]
        e = d - last[i]
        diff += e * e
        norm += d * d
        last[i] = d
    if norm > 0.0 and diff <= DRIFT_TOL * DRIFT_TOL * norm:
        state[STREAK] += 1.0
    else:
        state[STREAK] = 0.0
    if state[STREAK] < state[NEEDED]:
        return 0.0
    state[STREAK] = 0.0
    t = math.inf
    for c in range(mu.shape[0]):
        t = min(t, cone_exit(r, last, c * dim, dim, mu[c]))
    return t if DRIFT_MIN <= t < math.inf else 0.0


def drift_move(r: Any, origin: Any, last: Any, mu: Any, dim: int, t: float) -> None:
    """``r = origin + t last``, each contact projected onto its cone (the exit point is on its
    surface up to rounding, and a sliding contact is kept on it)."""
    x = np.empty(dim)
    for c in range(mu.shape[0]):
        start = c * dim
        for k in range(dim):
            x[k] = origin[start + k] + t * last[start + k]
        project_cone(x, dim, mu[c])
        for k in range(dim):
            r[start + k] = x[k]


def run(data: Any, indices: Any, indptr: Any, blocks: Any, q: Any, mu: Any, dim: int, r: Any,
        slip: Any, omega: float, counts: Any, max_sweeps: int, change_tol: float, tol: float,
        q_scale: float, last: Any, state: Any, periodic: bool) -> tuple[int, float, float]:
    """Sweep until FCLIB's error is at most ``tol`` or ``max_sweeps`` are done; returns
    ``(sweeps, error, change_tol)`` (error -1 when never computed). The error (as costly as a
    sweep) is computed after a sweep whose change ``||dr|| / q_scale`` is at most
    ``change_tol`` (when it is still above ``tol`` the change threshold is lowered in
    proportion: error and change shrink together once the sweeps converge linearly, so a
    second check usually succeeds), and, when ``periodic``, after sweeps 1, 2, 4, 8, ... of the
    call whatever the change (Siconos's adaptive error evaluation: a drift along ``W``'s null
    space keeps the change constant while the error may be met long before). ``last`` (m) and
    ``state`` (:func:`drift_state`) carry the drift detection across calls (module docstring,
    "Drift")."""
    error = -1.0
    before = np.empty(r.shape[0])
    next_check = 1 if periodic else max_sweeps + 1
    for done in range(1, max_sweeps + 1):
        for i in range(r.shape[0]):
            before[i] = r[i]
        change = math.sqrt(sweep(data, indices, indptr, blocks, q, mu, dim, r, slip, omega, counts)) / q_scale
        if not math.isfinite(change):
            return done, math.nan, change_tol
        t = drift_length(r, before, last, state, mu, dim)
        if t > 0.0:
            start_error = fclib_error(data, indices, indptr, q, mu, dim, r, q_scale)
            for i in range(r.shape[0]):
                before[i] = r[i]
            while t >= DRIFT_MIN:  # the drift's end, or a quarter of the way, ... (its error kept)
                drift_move(r, before, last, mu, dim, t)
                error = fclib_error(data, indices, indptr, q, mu, dim, r, q_scale)
                if error <= DRIFT_GROWTH * start_error:
                    state[JUMPS] += 1.0
                    state[SKIPPED] += t
                    break
                t *= DRIFT_BACKTRACK
            else:  # not a drift of the null space: back, and ask a longer streak next time
                for i in range(r.shape[0]):
                    r[i] = before[i]
                error = start_error
                state[NEEDED] *= 2.0
            if error <= tol:
                return done, error, change_tol
        if change <= change_tol or done == next_check:
            error = fclib_error(data, indices, indptr, q, mu, dim, r, q_scale)
            if error <= tol:
                return done, error, change_tol
            if change <= change_tol:
                change_tol = 0.5 * change * tol / error
            if done == next_check:
                next_check *= 2
    return max_sweeps, error, change_tol


def sweep_numpy(W: Any, blocks: FloatArray, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray,
                slip: FloatArray, omega: float, counts: IntArray) -> float:
    """:func:`sweep` without numba: ``q'_c`` by NumPy products with the CSR rows of ``W``
    (``W`` a scipy CSR matrix) less the diagonal block's, and the same local solve."""
    data, indices, indptr = W.data, W.indices, W.indptr
    work = np.empty(dim)
    change = 0.0
    for c in range(blocks.shape[0]):
        start, stop = c * dim, (c + 1) * dim
        lo, hi = indptr[start], indptr[stop]
        coupled = data[lo:hi] * r[indices[lo:hi]]
        own = (indices[lo:hi] >= start) & (indices[lo:hi] < stop)
        coupled[own] = 0.0
        rows = np.repeat(np.arange(dim), np.diff(indptr[start:stop + 1]))
        qp = q[start:stop] + np.bincount(rows, weights=coupled, minlength=dim)
        new = r[start:stop].copy()
        outcome, s = local_solve(blocks[c], dim, qp, float(mu[c]), float(slip[c]), new, work)
        slip[c] = s
        counts[outcome] += 1
        value = omega * new + (1.0 - omega) * r[start:stop]
        change += float(np.sum((value - r[start:stop]) ** 2))
        r[start:stop] = value
    return change


def fclib_error_numpy(W: Any, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray, q_scale: float) -> float:
    """:func:`fclib_error` in NumPy."""
    hat = np.asarray(W @ r + q).reshape(-1, dim)
    hat[:, 0] += mu * np.linalg.norm(hat[:, 1:], axis=1)
    R = r.reshape(-1, dim)
    trial = R - hat
    for c in range(trial.shape[0]):
        project_cone(trial[c], dim, float(mu[c]))
    return float(np.linalg.norm(R - trial)) / q_scale


def run_numpy(W: Any, blocks: FloatArray, q: FloatArray, mu: FloatArray, dim: int, r: FloatArray,
              slip: FloatArray, omega: float, counts: IntArray, max_sweeps: int, change_tol: float,
              tol: float, q_scale: float, last: FloatArray, state: FloatArray,
              periodic: bool) -> tuple[int, float, float]:
    """:func:`run` without numba (same decisions, NumPy sweeps)."""
    error = -1.0
    next_check = 1 if periodic else max_sweeps + 1
    for done in range(1, max_sweeps + 1):
        before = r.copy()
        change = math.sqrt(sweep_numpy(W, blocks, q, mu, dim, r, slip, omega, counts)) / q_scale
        if not math.isfinite(change):
            return done, math.nan, change_tol
        t = drift_length(r, before, last, state, mu, dim)
        if t > 0.0:
            start_error = fclib_error_numpy(W, q, mu, dim, r, q_scale)
            before = r.copy()
            while t >= DRIFT_MIN:
                drift_move(r, before, last, mu, dim, t)
                error = fclib_error_numpy(W, q, mu, dim, r, q_scale)
                if error <= DRIFT_GROWTH * start_error:
                    state[JUMPS] += 1.0
                    state[SKIPPED] += t
                    break
                t *= DRIFT_BACKTRACK
            else:
                r[:] = before
                error = start_error
                state[NEEDED] *= 2.0
            if error <= tol:
                return done, error, change_tol
        if change <= change_tol or done == next_check:
            error = fclib_error_numpy(W, q, mu, dim, r, q_scale)
            if error <= tol:
                return done, error, change_tol
            if change <= change_tol:
                change_tol = 0.5 * change * tol / error
            if done == next_check:
                next_check *= 2
    return max_sweeps, error, change_tol


# numba's disk cache keys each function on its own file only: a change to nsgs_local alone leaves
# the compiled sweeps of this file calling the old local solver (edit this file too, or clear the
# cache). numba is imported at the first compiled solve, not with contactopt (its import costs ~0.4 s);
# CONTACTOPT_NO_NUMBA=1 keeps the NumPy path.
AVAILABLE = jit.ENABLED
#: Whether solves run compiled (tests may switch it off to run the NumPy path).
COMPILED: bool = AVAILABLE
_KERNELS = ("sweep", "fclib_error", "cone_exit", "drift_length", "drift_move", "run", "rows_and_blocks")
_compiled = False


def ensure_compiled() -> None:
    """Replace the loop kernels here and in :mod:`~contactopt.solvers.coulomb.nsgs.local` by numba
    dispatchers (compiled at first call, cached on disk); this module's names of the local
    solver are pointed at its dispatchers, which :func:`sweep` then calls compiled."""
    global _compiled, local_solve, project_cone
    if _compiled or not AVAILABLE:
        return
    jit_in_place(vars(nsgs_local), nsgs_local.KERNELS)
    local_solve, project_cone = nsgs_local.local_solve, nsgs_local.project_cone
    jit_in_place(globals(), _KERNELS)
    _compiled = True
