"""ADMM on the De Saxcé-corrected cone complementarity problem, with the spectral penalty
update (the numerical core of ``admm``, on plain arrays ``W, q, mu, dim``).

**Splitting** (Boyd, Parikh, Chu, Peleato & Eckstein, "Distributed Optimization and
Statistical Learning via the ADMM", Found. Trends ML 3, 2011, section 3, unscaled form; as
ContactBench's CCP-ADMM: Carpentier, Le Lidec, Montaut et al., "From Compliant to Rigid Contact
Simulation: a Unified and Efficient Approach", RSS 2024, Algorithm 1). With the De Saxcé shift
``s`` (``s_cN = mu_c ||u_cT||``, zero tangentially) held fixed the problem is the convex
program ``min 1/2 r'Wr + (q + s)'r  s.t.  r in K`` (``K`` the product of the friction cones
``||r_T|| <= mu r_N``); ADMM on ``r = z``, ``z in K``, with a proximal term ``eta/2 ||r - r^k||^2``::

    r^{k+1} = (W + (rho + eta) I)^-1 (eta r^k + rho z^k - y^k - (q + s^k))
    z^{k+1} = P_K(r^{k+1} + y^k / rho)
    y^{k+1} = y^k + rho (r^{k+1} - z^{k+1})
    s^{k+1} = mu ||y_T^{k+1}||                           (only with ``desaxce``)

At a fixed point ``y = -(W r + q + s) = -û`` lies in the normal cone of ``K`` at ``z = r``:
``K* ∋ û ⟂ r ∈ K``, De Saxcé's form of Coulomb's law (De Saxcé & Feng 1991; FCLIB's problem)
when ``s`` is the correction of ``u``, the Anitescu-Tasora CCP when ``s = 0``. The shift is
read from the multiplier (``-y_T`` tends to ``û_T = u_T``), as ContactBench reads it from its
dual variable: read from ``u = W z + q`` instead, the iteration cycles on a sliding box (FCLIB
error between 2e-4 and 6e-4 for 1000 iterations, against 1e-8 in under 100 from ``y``). The correction
makes the problem nonconvex: ADMM then has no convergence guarantee (it is a fixed point on
``s`` interleaved with ADMM's steps, as in ContactBench), the CCP has Boyd's section 3.2.

**Penalty.** Primal residual ``||r - z||``, dual residual ``rho ||z^{k+1} - z^k||`` (Boyd
section 3.3). ``spectral`` (ContactBench's rule): with ``L`` the largest eigenvalue of ``W``
(power iteration) and ``m = eta`` the smallest of ``W + eta I`` it can assume, ``rho`` starts at
``sqrt(L m) (L / m)^0.2`` and is multiplied (divided) by ``(L / m)^0.05`` when the primal
residual exceeds (falls below) ``10`` (``1/10``) times the dual one. ``residual_balancing``:
Boyd's section 3.4.1 rule (factor 2, ratio 10). ``constant``: never changed. ``eta`` is
``1e-6 L`` by default (relative, so the method does not depend on the units). The matrix
``W + (rho + eta) I`` is factorized (dense Cholesky up to ``DENSE_MAX`` rows, else SuperLU) and
refactorized only when ``rho`` changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.linalg import splu

from contactopt.programs.coulomb_error import project_cones

__all__ = ["PENALTY_RULES", "AdmmResult", "admm", "largest_eigenvalue"]

FloatArray = NDArray[np.float64]

PENALTY_RULES = ("spectral", "residual_balancing", "constant")
#: Largest problem factorized densely (Cholesky); larger ones by SuperLU on the sparse matrix.
DENSE_MAX = 300
#: Primal/dual residual imbalance that triggers a penalty change (both rules).
RATIO = 10.0
SPECTRAL_START, SPECTRAL_STEP = 0.2, 0.05


@dataclass(frozen=True)
class AdmmResult:
    """The last cone-feasible iterate ``z`` of :func:`admm`, iterations done, whether ``stop``
    accepted it, the factorizations made and the final penalty."""

    r: FloatArray
    iterations: int
    stopped: bool
    factorizations: int
    rho: float


def largest_eigenvalue(W: sp.csc_matrix, iterations: int = 50) -> float:
    """``lambda_max(W)`` of a symmetric positive semidefinite ``W`` by power iteration from a
    fixed start (deterministic), with a 5 % margin upward: the method needs a bound, not the value."""
    m = W.shape[0]
    if m == 0:
        return 1.0
    x = np.random.default_rng(0).standard_normal(m)
    estimate = 0.0
    for _ in range(iterations):
        y = W @ x
        norm = float(np.linalg.norm(y))
        if norm == 0.0:
            return float(np.max(np.abs(W.diagonal()), initial=1.0)) or 1.0
        estimate = float(x @ y) / float(x @ x)
        x = y / norm
    return 1.05 * max(estimate, float(np.max(W.diagonal(), initial=0.0)))


class _Factor:
    """``(W + shift I)^-1`` applied to vectors, for the current ``shift``."""

    def __init__(self, W: sp.csc_matrix) -> None:
        self.W = W
        self.dense = W.toarray() if W.shape[0] <= DENSE_MAX else None
        self.count = 0
        self.shift = np.nan
        self._solve: Callable[[FloatArray], FloatArray] = lambda b: b

    def set_shift(self, shift: float) -> None:
        if shift == self.shift:
            return
        self.shift = shift
        self.count += 1
        if self.dense is not None:
            factor = sla.cho_factor(self.dense + shift * np.eye(self.dense.shape[0]))
            self._solve = lambda b: sla.cho_solve(factor, b)
        else:
            lu = splu((self.W + shift * sp.identity(self.W.shape[0], format="csc")).tocsc(),
                      permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            self._solve = lu.solve

    def solve(self, b: FloatArray) -> FloatArray:
        return self._solve(b)


def _desaxce_shift(u: FloatArray, mu: FloatArray, dim: int) -> FloatArray:
    U = u.reshape(-1, dim)
    shift = np.zeros_like(U)
    shift[:, 0] = mu * np.sqrt(np.einsum("ij,ij->i", U[:, 1:], U[:, 1:]))
    return shift.reshape(-1)


def admm(W: sp.csc_matrix, q: FloatArray, mu: FloatArray, dim: int, r0: FloatArray, *, desaxce: bool,
         max_iterations: int, penalty: str, rho: float | None, prox: float,
         stop: Callable[[int, FloatArray, FloatArray, float], bool]) -> AdmmResult:
    """ADMM of the module docstring from ``r0`` (projected on ``K``) on a symmetric positive
    semidefinite ``W``. ``rho`` fixes the starting penalty (default: the spectral one),
    ``prox`` is ``eta / L``. ``stop(k, z, u, rho)`` is asked after every iterate (``k = 0``:
    the start; ``rho`` the penalty of the next step) and ends the solve when it returns True."""
    if penalty not in PENALTY_RULES:
        raise ValueError(f"unknown penalty rule {penalty!r}")
    W = W.tocsc()
    L = largest_eigenvalue(W)
    eta = prox * L
    floor = eta if eta > 0 else 1e-10 * L  # m of the spectral rule: the proximal term's curvature
    condition = L / floor
    rho_k = float(rho) if rho is not None else np.sqrt(L * floor) * condition ** SPECTRAL_START
    factor = _Factor(W)
    z = project_cones(np.asarray(r0, dtype=np.float64).reshape(-1, dim), mu).reshape(-1)
    u = W @ z + q
    s = _desaxce_shift(u, mu, dim) if desaxce else np.zeros_like(q)
    y = -(u + s)  # the multiplier a solution has: -û
    r = z.copy()
    for k in range(max_iterations + 1):
        if stop(k, z, u, rho_k):
            return AdmmResult(z, k, True, factor.count, rho_k)
        if k == max_iterations:
            break
        factor.set_shift(rho_k + eta)
        r = factor.solve(eta * r + rho_k * z - y - (q + s))
        z_previous = z
        z = project_cones((r + y / rho_k).reshape(-1, dim), mu).reshape(-1)
        y = y + rho_k * (r - z)
        u = W @ z + q
        if desaxce:
            s = _desaxce_shift(-y, mu, dim)
        primal = float(np.linalg.norm(r - z))
        dual = rho_k * float(np.linalg.norm(z - z_previous))
        rho_k = _update(penalty, rho_k, primal, dual, condition)
    return AdmmResult(z, max_iterations, False, factor.count, rho_k)


def _update(penalty: str, rho: float, primal: float, dual: float, condition: float) -> float:
    """The next penalty under ``penalty`` (module docstring)."""
    if penalty == "constant":
        return rho
    factor = condition ** SPECTRAL_STEP if penalty == "spectral" else 2.0
    if primal > RATIO * dual:
        return rho * factor
    if dual > RATIO * primal:
        return rho / factor
    return rho
