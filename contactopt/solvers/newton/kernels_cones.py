"""Compiled kernels of the ``newton`` solver (numba, optional) for the friction cones that are
not analytic: ``soc_general`` (unequal tangential ``R``, MuJoCo's elliptic regularization) and
``soc_scaled`` (MuJoCo's elliptic cone ``g_n >= ||(g_i / mu_i)||`` of condim 4 and 6 contacts)
blocks of :mod:`contactopt.programs.cone_projection`, one block at a time.

The math is that of :func:`contactopt.programs.cone_projection._project_soc_general` (ours,
from the KKT conditions of the projection (S3) of Castro, Permenter & Han, "An Unconstrained
Convex Formulation of Compliant Contact", IEEE T-RO 2022, arXiv 2110.10107) and of
:func:`~contactopt.programs.cone_projection._project_soc_scaled`, written per block for numba
with the same operations in the same order (same results to rounding, tested):

* both kinds are one kernel, :func:`general_block`, with a per-row scale ``S`` (``S = 1`` on
  ``soc_general`` rows, where multiplying and dividing by 1 is exact): ``y' = S^{-1} y``,
  ``R' = S^2 R``, ``h`` the projection onto ``{||h_t|| <= mu h_n}`` in the ``R'`` norm,
  ``gamma = S h`` and ``G = S G' S`` (MuJoCo's cone has ``mu = 1`` after scaling);
* regimes: stiction ``||y'_t|| <= mu y'_n`` (``gamma = y``, ``G = R^{-1}``); no contact
  ``mu ||R'_t o y'_t|| <= -R'_n y'_n`` (``gamma = 0``, ``G = 0``); otherwise the boundary,
  ``h_n = R'_n y'_n / (R'_n - lambda mu^2)``, ``h_i = r'_i y'_i / (r'_i + lambda)``, the
  multiplier ``lambda`` by safeguarded Newton in ``tau`` (``lambda = tau lambda_0`` when
  ``y'_n > 0``, ``lambda_0 / tau`` otherwise, ``lambda_0 = R'_n / mu^2``) with bisection when
  a step leaves the bracket, and ``G' = diag(a / R') + 2 u u^T / kappa``;
* the pole ``y'_n = 0`` on the boundary: ``lambda = lambda_0``, ``h_n = ||h_t|| / mu`` and
  ``G = 0``, as the NumPy projection leaves it.

A division by zero raises in numba's (and Python's) error model where NumPy gives inf or nan:
each one NumPy may meet on the way (a multiplier at the pole of ``h_n``, a zero derivative) is
tested first and takes the branch NumPy's inf or nan would (bisection, a nan ``G``).

When numba is missing these run as plain Python (no caller does: the solver then takes the
NumPy path; the tests run them either way).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.cone_projection import ConeLayout

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: The kernels :func:`contactopt.solvers.newton.kernels.ensure_compiled` compiles here.
KERNELS = ("_tangent_sums", "_multiplier", "general_block", "general_no_contact")
MAX_MULTIPLIER_STEPS = 64  # as the NumPy projection: bisection alone halves (0, 1) to rounding in 53


def row_scales(layout: ConeLayout) -> FloatArray:
    """Per row the factor ``S`` of its ``soc_scaled`` block (``S = (1, mu_i / mu_0)``), 1 on
    every other row."""
    scale = np.ones(layout.m)
    for group in layout.groups:
        if group.kind == "soc_scaled":
            scale[group.rows] = group.scale
    return scale


def _tangent_sums(y: FloatArray, R: FloatArray, scale: FloatArray, s: int, d: int,
                  lam: float) -> tuple[float, float]:
    """``(||h_t||^2, sum_i h_i^2 / (r'_i + lambda))`` at the multiplier ``lambda``."""
    squares = 0.0
    weighted = 0.0
    for i in range(1, d):
        scale_i = scale[s + i]
        r = R[s + i] * scale_i * scale_i
        h = r * (y[s + i] / scale_i) / (r + lam)
        squares += h * h
        weighted += h * (h / (r + lam))
    return squares, weighted


def _multiplier(y: FloatArray, R: FloatArray, scale: FloatArray, s: int, d: int, mu: float, yn: float,
                Rn: float) -> float:
    """The boundary regime's ``lambda``: the root of ``q = ||h_t||^2 - mu^2 h_n^2`` (decreasing
    in ``tau`` on (0, 1)) by Newton's method kept inside the bracket, bisection otherwise."""
    lam0 = Rn / (mu * mu)
    below = yn > 0.0  # the root lies in (0, lambda_0); else in (lambda_0, inf)
    low, high, tau = 0.0, 1.0, 0.5
    for _ in range(MAX_MULTIPLIER_STEPS):
        lam = tau * lam0 if below else lam0 / max(tau, 1e-300)
        denominator = Rn - lam * mu * mu
        if denominator == 0.0:  # h_n infinite: q = -inf, the root lies below tau (NumPy's inf)
            high = tau
            step = 0.5 * (low + high)
            done = abs(step - tau) <= 4e-16 * tau or high - low <= 4e-16 * high
            tau = step
            if done:
                break
            continue
        gn = Rn * yn / denominator
        squares, weighted = _tangent_sums(y, R, scale, s, d, lam)
        q = squares - mu * mu * gn * gn
        if q > 0.0:  # ratio above mu, decreasing in tau: the root lies above tau
            low = tau
        else:
            high = tau
        dq = 2.0 * (-weighted - mu**4 * gn * gn / denominator)
        square = tau * tau
        dq = dq * lam0 if below else (dq * (-lam0 / square) if square > 0.0 else math.nan)
        newton = tau - q / dq if dq != 0.0 and math.isfinite(dq) else math.nan
        step = newton if math.isfinite(newton) and low < newton < high else 0.5 * (low + high)
        done = abs(step - tau) <= 4e-16 * tau or high - low <= 4e-16 * high or q == 0.0
        if q != 0.0:
            tau = step
        if done:
            break
    return tau * lam0 if below else lam0 / max(tau, 1e-300)


def general_block(y: FloatArray, R: FloatArray, scale: FloatArray, s: int, d: int, mu: float,
                  gamma: FloatArray, G: FloatArray, want_G: bool) -> None:
    """One ``soc_general`` or ``soc_scaled`` block at rows ``s..s+d``: ``gamma[s:s+d]`` and,
    if ``want_G``, the (d, d) block ``G`` (the regimes of the module docstring)."""
    scale_n = scale[s]
    yn = y[s] / scale_n
    Rn = R[s] * scale_n * scale_n
    yr2 = 0.0
    weighted_r2 = 0.0
    for i in range(1, d):
        scale_i = scale[s + i]
        yi = y[s + i] / scale_i
        ri_yi = R[s + i] * scale_i * scale_i * yi
        yr2 += yi * yi
        weighted_r2 += ri_yi * ri_yi
    if want_G:
        for i in range(d):
            for j in range(d):
                G[i, j] = 0.0
    if math.sqrt(yr2) <= mu * yn:  # stiction
        for i in range(d):
            scale_i = scale[s + i]
            gamma[s + i] = y[s + i] / scale_i * scale_i
            if want_G:
                G[i, i] = scale_i * (1.0 / (R[s + i] * scale_i * scale_i)) * scale_i
        return
    if mu * math.sqrt(weighted_r2) <= -Rn * yn:  # no contact (the R'-polar cone)
        for i in range(d):
            gamma[s + i] = 0.0
        return
    lam0 = Rn / (mu * mu)
    at_pole = yn == 0.0  # h_n = 0 / 0 at lambda = lambda_0: h_n from the cone, G left 0
    lam = lam0 if at_pole else _multiplier(y, R, scale, s, d, mu, yn, Rn)
    tangent2 = 0.0
    for i in range(1, d):
        scale_i = scale[s + i]
        r = R[s + i] * scale_i * scale_i
        h = r * (y[s + i] / scale_i) / (r + lam)
        tangent2 += h * h
        gamma[s + i] = h * scale_i
    denominator = Rn - lam * mu * mu
    gn = math.sqrt(tangent2) / mu if at_pole else (Rn * yn / denominator if denominator != 0.0
                                                     else math.copysign(math.inf, yn))
    gamma[s] = gn * scale_n
    if not want_G or at_pole:
        return
    a_n = Rn / denominator if denominator != 0.0 else math.inf
    G[0, 0] = gn * mu * mu * a_n / Rn  # u = d h / d lambda, kept on G's diagonal until the end
    kappa = 0.0
    for i in range(1, d):
        scale_i = scale[s + i]
        r = R[s + i] * scale_i * scale_i
        h = r * (y[s + i] / scale_i) / (r + lam)
        G[i, i] = -h * (r / (r + lam)) / r
        kappa += h * G[i, i]
    kappa = 2.0 * (kappa - mu * mu * gn * G[0, 0])
    for i in range(d):  # off-diagonal first: the diagonal still holds u
        for j in range(d):
            if i != j:
                G[i, j] = 2.0 * G[i, i] * G[j, j] / kappa if kappa != 0.0 else math.nan
    for i in range(d):
        scale_i = scale[s + i]
        r = R[s + i] * scale_i * scale_i
        a = a_n if i == 0 else r / (r + lam)
        G[i, i] = (2.0 * G[i, i] * G[i, i] / kappa if kappa != 0.0 else math.nan) + a / r
    for i in range(d):  # G = S G' S
        for j in range(d):
            G[i, j] = scale[s + i] * G[i, j] * scale[s + j]


def general_no_contact(v_hat: FloatArray, vc: FloatArray, w: FloatArray, R: FloatArray, scale: FloatArray,
                       s: int, d: int, mu: float, alpha: float) -> bool:
    """Whether the block at ``s`` is in its no-contact regime (the ``R'``-polar cone, ``gamma =
    0``) at ``y = R^{-1} (v_hat - vc - alpha w)``: the line search of :mod:`.newton_sparse`
    leaves out the blocks that are at both ends of the segment (a convex cone)."""
    scale_n = scale[s]
    yn = (v_hat[s] - vc[s] - alpha * w[s]) / R[s] / scale_n
    weighted_r2 = 0.0
    for i in range(1, d):
        scale_i = scale[s + i]
        yi = (v_hat[s + i] - vc[s + i] - alpha * w[s + i]) / R[s + i] / scale_i
        ri_yi = R[s + i] * scale_i * scale_i * yi
        weighted_r2 += ri_yi * ri_yi
    return mu * math.sqrt(weighted_r2) <= -(R[s] * scale_n * scale_n) * yn
