"""The Alart-Curnier function of FCLIB's local Coulomb problem, its generalized Jacobian, and
the semismooth Newton method on it with a line search (the numerical core of ``nsn``, on plain
arrays ``W, q, mu, dim``).

**Function** (Alart & Curnier, "A mixed formulation for frictional contact problems prone to
Newton like solution methods", CMAME 92, 1991; the "standard" variant of Siconos's
``fc3d_AlartCurnierFunction``; Acary, Brémond & Huber, "On solving contact problems with
Coulomb friction: formulations and numerical comparisons", 2018, section 3.2). With
``u = W r + q`` and one parameter ``rho_c > 0`` per contact, ``z_c = r_c - rho_c u_c`` and ::

    Phi_N = r_N - max(0, z_N)
    Phi_T = r_T - P_{D(mu max(0, z_N))}(z_T)       (D(s): the disc of radius s)

``Phi(r) = 0`` is exactly Coulomb's law with Signorini's condition: the first row is
``0 <= r_N ⟂ u_N >= 0``; the second says ``||r_T|| <= mu r_N`` and, when ``u_T != 0``,
``r_T = -mu r_N u_T / ||u_T||`` (sliding at the cone's edge against the slip, with
``u_N = 0`` when ``r_N > 0``: no normal lift, unlike the CCP). These are the zeros of FCLIB's
natural map with De Saxcé's velocity (De Saxcé & Feng 1991), so FCLIB's error vanishes there.

**Generalized Jacobian.** ``Phi(r) = r - g(z)`` with ``g`` the piecewise smooth map above, so
an element of Clarke's Jacobian is ``I - G (I - diag(rho) W) = (I - G) + diag(rho) G W`` with
``G`` block diagonal, ``G_c`` an element of ``dg/dz`` at ``z_c`` (Alart & Curnier's
``I - A + B W`` with ``A = G``, ``B = diag(rho) G``)::

    z_N <= 0:                  G_c = 0                               (take-off)
    ||z_T|| <  s = mu z_N:     G_c = I                               (stick)
    ||z_T|| >= s, z_T != 0:    G_NN = 1,  G_TN = mu t,  G_TT = s / ||z_T|| (I - t t'),  t = z_T / ||z_T||   (slide)

(``z_T = 0`` with ``s = 0``, e.g. ``mu = 0``: ``G_TT = 0``, ``G_TN = 0``, so ``Phi_T = r_T``).

**Newton's method** (Qi & Sun, "A nonsmooth version of Newton's method", Math. Prog. 58,
1993: locally quadratic for a semismooth ``Phi`` with nonsingular Jacobians at the solution):
solve ``J d = -Phi`` and move ``r <- r + t d``, ``t`` from a line search on the merit
``theta = 1/2 ||Phi||^2`` along which ``theta'(0) = Phi'J d = -2 theta``: Armijo's rule
``theta(r + t d) <= (1 - 2 sigma t) theta(r)`` by halving from ``t = 1``, or Goldstein-Price's
pair ``(1 - 2 sigma_2 t) theta <= theta(r + t d) <= (1 - 2 sigma_1 t) theta`` by bisection
of ``[0, 1]`` (Siconos's NSN default), or the full step (``none``). A step the search cannot
accept is taken at the trial of least merit if that decreases ``theta``, else in full (a
nonmonotone escape, counted). The system is assembled once per iteration from ``W``'s
``dim x dim`` block pattern and factorized by SuperLU (``scipy.sparse.linalg.splu``); a singular
``J`` (possible where the De Saxcé problem has several solutions) is regularized with
``eps I``, ``eps`` growing from ``1e-12`` of its largest entry until the factorization succeeds.
Rows of contacts with ``z_N <= 0`` are ``d_c = -Phi_c = -r_c`` and are eliminated before the
factorization: only the other contacts' rows are solved.

**Globalization at stick-slip transitions** (with ``sweeps``; ``nsn``'s default). Where contacts
are redundant (a box's four corners, a flat foot's two ends) ``W`` is singular, and so is ``J``
while they all stick: the merit then has stationary points that are not zeros (in the sticking
region ``theta`` is a least-squares residual ``||W r + q||`` that ``q`` outside ``W``'s range
keeps positive), and Newton's and Levenberg-Marquardt's steps shrink there without end (the
box slide's stop: 100 steps for a merit ratio of 0.87). A stall (two Newton steps in a row
that leave more than half the merit, or one no direction can take) is answered as Siconos's
NSN with a fallback does, by NSGS sweeps from the current iterate (:func:`contactopt.solvers.
nsgs.sweeper`; Acary, Brémond & Huber 2018, the hybrid solvers), 10 at the first stall and
twice as many at each next one (at most ``sweep_budget`` in all): they move along ``W``'s null
space, where the merit is flat, and where Newton makes no progress at all they are NSGS.
Each stall from the second on also multiplies ``rho`` by 10 (three times at most):
``z = r - rho u`` then classifies a contact by its velocity rather than its impulse, so a
contact held inside its cone while it slips (the inconsistent sticking guess) is read as
sliding, and Newton's next steps converge in the right mode; the zeros of ``Phi`` do not depend
on ``rho``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.linalg import splu

__all__ = ["LINESEARCHES", "BlockPattern", "NewtonResult", "alart_curnier", "semismooth_newton"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Line searches :func:`semismooth_newton` knows.
LINESEARCHES = ("armijo", "goldstein", "none")
ARMIJO_SIGMA = 1e-4
GOLDSTEIN_SIGMAS = (1e-4, 0.9)
#: Halvings (bisections) a line search tries before it gives up: t down to 2^-30.
MAX_BACKTRACKS = 30
#: The stall fallback (module docstring, "Globalization"): a Newton step that leaves more than
#: STALL_RATIO of the merit is slow; STALL_STEPS slow steps in a row, or a step that no
#: direction can take, is a stall, answered by FALLBACK_SWEEPS NSGS sweeps, and from the
#: second stall on by rho times RHO_INCREASE (at most MAX_RHO_INCREASES times: 1e3 in two
#: jumps took suite/hopper's flat foot from NSGS's 9.5e-8 to 9.2e-3; by 10s it converges); the blocks
#: double, up to FALLBACK_SWEEPS * 2^MAX_GROWTHS (20480) sweeps (the pile's first step needs
#: about 10000 sweeps, which its Newton steps do not shorten).
STALL_RATIO = 0.5
STALL_STEPS = 2
FALLBACK_SWEEPS = 10
SWEEP_GROWTH = 2
MAX_GROWTHS = 11
RHO_INCREASE = 10.0
MAX_RHO_INCREASES = 3

#: ``sweeps(r, n)``: up to ``n`` NSGS sweeps on ``r`` in place; returns how many were done.
Sweeps = Callable[[FloatArray, int], int]


Trial = tuple[float, FloatArray, FloatArray, FloatArray, FloatArray]


def alart_curnier(r: FloatArray, u: FloatArray, mu: FloatArray, rho: FloatArray,
                  dim: int) -> tuple[FloatArray, FloatArray]:
    """``Phi(r)`` (``m``) and the blocks ``G_c`` (``nc, dim, dim``) of the module docstring, for
    impulses ``r`` and velocities ``u = W r + q`` (both ``m``)."""
    R = r.reshape(-1, dim)
    z = R - rho[:, None] * u.reshape(-1, dim)
    nc = R.shape[0]
    G = np.zeros((nc, dim, dim))
    g = np.zeros((nc, dim))
    active = z[:, 0] > 0.0
    g[active, 0] = z[active, 0]
    G[active, 0, 0] = 1.0
    radius = mu * g[:, 0]
    zt = z[:, 1:]
    norm = np.sqrt(np.einsum("ij,ij->i", zt, zt))
    stick = norm < radius
    g[stick, 1:] = zt[stick]
    G[stick, 1:, 1:] = np.eye(dim - 1)
    slide = ~stick & (norm > 0.0)
    if np.any(slide):
        t = zt[slide] / norm[slide, None]
        ratio = radius[slide] / norm[slide]
        g[slide, 1:] = ratio[:, None] * zt[slide]
        outer = t[:, :, None] * t[:, None, :]
        G[slide, 1:, 1:] = ratio[:, None, None] * (np.eye(dim - 1) - outer)
        G[slide, 1:, 0] = (mu[slide] * active[slide])[:, None] * t
    return (R - g).reshape(-1), G


class BlockPattern:
    """``W`` in ``dim x dim`` blocks (BSR) with every diagonal block stored, so that the
    Jacobian ``(I - G) + diag(rho) G W`` is one product per stored block (``G`` acts on
    block rows) plus the diagonal, without a sparse matrix product per iteration."""

    def __init__(self, W: sp.csr_matrix, dim: int) -> None:
        m = W.shape[0]
        nc = m // dim
        bsr = W.tobsr(blocksize=(dim, dim))
        bsr.sort_indices()
        rows = np.repeat(np.arange(nc), np.diff(bsr.indptr))
        cols = bsr.indices.astype(np.int64)
        keys = np.concatenate([rows * nc + cols, np.arange(nc) * (nc + 1)])
        unique = np.unique(keys)  # sorted by block row, then column
        self.rows = unique // nc
        self.cols = unique % nc
        self.data = np.zeros((unique.size, dim, dim))
        self.data[np.searchsorted(unique, rows * nc + cols)] = bsr.data
        self.diagonal = np.searchsorted(unique, np.arange(nc) * (nc + 1))
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.rows, minlength=nc))])
        self.dim, self.contacts = dim, nc

    def jacobian(self, G: FloatArray, rho: FloatArray, keep: NDArray[np.bool_] | None = None) -> sp.csc_matrix:
        """``(I - G) + diag(rho) G W`` (CSC), restricted to the contacts ``keep`` (rows and
        columns) when given."""
        scaled = rho[:, None, None] * G
        blocks = np.matmul(scaled[self.rows], self.data)
        blocks[self.diagonal] += np.eye(self.dim) - G
        dim = self.dim
        if keep is None:
            matrix = sp.bsr_matrix((blocks, self.cols, self.indptr), shape=(self.contacts * dim,) * 2)
            return matrix.tocsc()
        index = np.cumsum(keep) - 1
        inside = keep[self.rows] & keep[self.cols]
        size = int(np.count_nonzero(keep)) * dim
        offsets = np.arange(dim)
        row_index = (index[self.rows[inside]][:, None] * dim + offsets)[:, :, None]
        col_index = (index[self.cols[inside]][:, None] * dim + offsets)[:, None, :]
        shape = blocks[inside].shape
        return sp.csc_matrix((blocks[inside].reshape(-1), (np.broadcast_to(row_index, shape).reshape(-1),
                                                           np.broadcast_to(col_index, shape).reshape(-1))),
                             shape=(size, size))


@dataclass(frozen=True)
class NewtonResult:
    """The last iterate of :func:`semismooth_newton`, the Newton steps taken, whether the
    ``stop`` test accepted it, how many steps the line search could not accept (taken
    nonmonotonically), how many Jacobians needed regularizing, the fallback's NSGS sweeps and
    how many times it raised ``rho``."""

    r: FloatArray
    iterations: int
    stopped: bool
    linesearch_failures: int
    regularized: int
    sweeps: int = 0
    rho_increases: int = 0


def _factor_solve(J: sp.csc_matrix, rhs: FloatArray) -> tuple[FloatArray, bool]:
    """``J^-1 rhs`` by SuperLU; a singular ``J`` gets ``eps I`` added (module docstring)."""
    try:
        solution = splu(J).solve(rhs)
        if np.all(np.isfinite(solution)):
            return solution, False
    except RuntimeError:  # "Factor is exactly singular"
        pass
    scale = float(np.max(np.abs(J.data), initial=1.0))
    identity = sp.identity(J.shape[0], format="csc")
    eps = 1e-12 * scale
    while eps <= scale:
        try:
            solution = splu((J + eps * identity).tocsc()).solve(rhs)
            if np.all(np.isfinite(solution)):
                return solution, True
        except RuntimeError:
            pass
        eps *= 100.0
    return -rhs, True  # unreachable in practice: J + |J| I is diagonally dominant enough


def _newton_direction(pattern: BlockPattern, W: sp.csr_matrix, G: FloatArray, rho: FloatArray,
                      phi: FloatArray) -> tuple[FloatArray, bool]:
    """``d`` solving ``J d = -phi``, with the rows of separated contacts (``G_c = 0``:
    ``d_c = -phi_c``) eliminated first."""
    dim = pattern.dim
    coupled = np.any(G.reshape(G.shape[0], -1) != 0.0, axis=1)
    d = -phi.copy()
    if not np.any(coupled):
        return d, False
    if np.all(coupled):
        return _factor_solve(pattern.jacobian(G, rho), -phi)
    rows = np.repeat(coupled, dim)
    # The coupled rows see the separated contacts' steps through W: move them to the right.
    separated_step = np.where(rows, 0.0, d)
    through_W = W @ separated_step
    coupling = (rho[:, None] * np.einsum("cij,cj->ci", G, through_W.reshape(-1, dim))).reshape(-1)
    rhs = -phi[rows] - coupling[rows]
    d[rows], regularized = _factor_solve(pattern.jacobian(G, rho, coupled), rhs)
    return d, regularized


def semismooth_newton(W: sp.csc_matrix | sp.csr_matrix, q: FloatArray, mu: FloatArray, dim: int, rho: FloatArray,
                      r0: FloatArray, max_iterations: int, linesearch: str,
                      stop: Callable[[int, FloatArray, FloatArray, float], bool],
                      sweeps: Sweeps | None = None, sweep_budget: int = 0) -> NewtonResult:
    """Newton's method of the module docstring from ``r0``. ``stop(k, r, u, merit)`` is asked
    after every iterate (``k = 0`` for ``r0``) and ends the solve when it returns True.

    ``sweeps`` (``sweeps(r, n)``: up to ``n`` NSGS sweeps on ``r`` in place, the number done)
    turns on the stall fallback of the module docstring, for at most ``sweep_budget`` sweeps
    in all; ``stop`` is also asked after each block of sweeps (``k``: the Newton steps so far)."""
    if linesearch not in LINESEARCHES:
        raise ValueError(f"unknown line search {linesearch!r}")
    Wc = W.tocsr()
    pattern = BlockPattern(Wc, dim)
    rho = np.array(rho, dtype=np.float64)
    r = np.array(r0, dtype=np.float64)
    u = Wc @ r + q
    merit, _, _, phi, G = _evaluate(r, u, mu, rho, dim)
    failures = regularized = swept = blocks = increases = slow = 0
    k = 0
    while True:
        if stop(k, r, u, merit):
            return NewtonResult(r, k, True, failures, regularized, swept, increases)
        if k == max_iterations:
            break
        d, was_regularized = _newton_direction(pattern, Wc, G, rho, phi)
        regularized += was_regularized
        segment = _Segment(r, u, d, Wc @ d, mu, rho, dim)
        accepted, best = _line_search(segment, merit, linesearch)
        if not accepted:
            failures += 1
            accepted, best = _levenberg_marquardt(pattern, Wc, G, phi, segment, merit, linesearch)
        k += 1
        stuck = not accepted and best[0] >= merit  # no direction decreases theta
        if not stuck:
            # a merit already 0 in floating point (an answer one ulp from the exact one, which
            # contactopt's row-wise judgement refuses) cannot halve: a stall too, for the sweeps
            slow = slow + 1 if best[0] > STALL_RATIO * merit or best[0] >= merit else 0
            merit, r, u, phi, G = best
        if sweeps is None or swept >= sweep_budget:
            if stuck:
                return NewtonResult(r, k - 1, False, failures, regularized, swept, increases)
            continue
        if not (stuck or slow >= STALL_STEPS):
            continue
        # A stall (module docstring, "Globalization"): NSGS sweeps from here, and from the
        # second block on, rho raised so that the contacts' modes are read from their velocities.
        slow = 0
        if blocks and increases < MAX_RHO_INCREASES:
            rho *= RHO_INCREASE
            increases += 1
        swept += sweeps(r, min(FALLBACK_SWEEPS * SWEEP_GROWTH**min(blocks, MAX_GROWTHS), sweep_budget - swept))
        blocks += 1
        u = Wc @ r + q
        merit, _, _, phi, G = _evaluate(r, u, mu, rho, dim)
        if stop(k, r, u, merit):
            return NewtonResult(r, k, True, failures, regularized, swept, increases)
    return NewtonResult(r, max_iterations, False, failures, regularized, swept, increases)


def _evaluate(r: FloatArray, u: FloatArray, mu: FloatArray, rho: FloatArray, dim: int) -> Trial:
    phi, G = alart_curnier(r, u, mu, rho, dim)
    return 0.5 * float(phi @ phi), r, u, phi, G


@dataclass(frozen=True)
class _Segment:
    """The points ``r + t d`` (velocities ``u + t W d``) a line search tries."""

    r: FloatArray
    u: FloatArray
    d: FloatArray
    Wd: FloatArray
    mu: FloatArray
    rho: FloatArray
    dim: int

    def at(self, t: float) -> Trial:
        return _evaluate(self.r + t * self.d, self.u + t * self.Wd, self.mu, self.rho, self.dim)

    def along(self, d: FloatArray, Wd: FloatArray) -> _Segment:
        return _Segment(self.r, self.u, d, Wd, self.mu, self.rho, self.dim)


def _line_search(segment: _Segment, merit: float, linesearch: str) -> tuple[bool, Trial]:
    """(accepted, the accepted trial or the one of least merit) for the rule ``linesearch``."""
    t = 1.0
    best = current = segment.at(t)
    if linesearch == "none":
        return True, current
    if linesearch == "armijo":
        for _ in range(MAX_BACKTRACKS):
            if current[0] <= (1.0 - 2.0 * ARMIJO_SIGMA * t) * merit:
                return True, current
            t *= 0.5
            current = segment.at(t)
            best = current if current[0] < best[0] else best
        return False, best
    low, high = 0.0, 1.0
    sigma_1, sigma_2 = GOLDSTEIN_SIGMAS
    for _ in range(MAX_BACKTRACKS):
        if current[0] > (1.0 - 2.0 * sigma_1 * t) * merit:
            high = t  # too long a step: the decrease is too small
        elif current[0] < (1.0 - 2.0 * sigma_2 * t) * merit and t < 1.0:
            low = t  # too short (t = 1 is the Newton step itself: never lengthened)
        else:
            return True, current
        t = 0.5 * (low + high)
        current = segment.at(t)
        best = current if current[0] < best[0] else best
    return False, best


def _levenberg_marquardt(pattern: BlockPattern, W: sp.csr_matrix, G: FloatArray, phi: FloatArray,
                         segment: _Segment, merit: float, linesearch: str) -> tuple[bool, Trial]:
    """The fallback when the Newton step fails its line search: ``d = -(J'J + lambda I)^-1 J'Phi``,
    a descent direction of ``theta`` wherever it is differentiable (Levenberg-Marquardt; for
    semismooth systems with nonisolated solutions, Yamashita & Fukushima, Computing Suppl.
    15, 2001), ``lambda`` from ``1e-8`` of ``max diag J'J`` up by 100 to ``1e4`` of it until
    the line search accepts a step. ``(accepted, best trial)``."""
    J = pattern.jacobian(G, segment.rho)
    normal = (J.T @ J).tocsc()
    gradient = J.T @ phi
    scale = float(normal.diagonal().max(initial=1.0))
    identity = sp.identity(J.shape[0], format="csc")
    best: Trial | None = None
    damping = 1e-8 * scale
    while damping <= 1e4 * scale:
        d, _ = _factor_solve((normal + damping * identity).tocsc(), -gradient)
        accepted, found = _line_search(segment.along(d, W @ d), merit, linesearch)
        if accepted:
            return True, found
        best = found if best is None or found[0] < best[0] else best
        damping *= 100.0
    assert best is not None
    return False, best
