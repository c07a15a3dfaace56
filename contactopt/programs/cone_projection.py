"""SAP's analytic projection onto the friction cone in the norm of the regularization ``R``,
and its derivative (Castro, Permenter & Han, "An Unconstrained Convex Formulation of
Compliant Contact", IEEE T-RO 2022, arXiv 2110.10107: the analytical inverse dynamics and
the projection onto the friction cone; equation labels (S..) are ours, shared with
:mod:`contactopt.programs.primal`).

For one constraint block with diagonal ``R > 0`` and constraint set ``F`` the impulse is the
projection in the ``R``-norm::

    (S3)  gamma(y) = argmin_{g in F} 1/2 ||g - y||_R^2,        y = -R^{-1} (v_c - v_hat),

and (S4) the regularizer cost is ``l_R = 1/2 gamma^T R gamma`` with ``d l_R / d v_c = -gamma``
and Hessian ``G = -d gamma / d v_c = (d gamma / d y) R^{-1}`` (symmetric, positive
semidefinite). The blocks are

* ``free`` rows (``F = R``; a bilateral constraint): ``gamma = y``, ``G = 1 / R``;
* ``nonneg`` rows (``F = R_+``): ``gamma = max(y, 0)``, ``G = 1 / R`` where ``y > 0`` else 0;
* ``soc`` blocks ``[n, t]`` with ``F = {||g_t|| <= mu g_n}`` and ``R = diag(R_n, R_t, ..., R_t)``
  (one tangential value, as in SAP, which makes the projection analytic). With
  ``y_r = ||y_t||`` and ``t = y_t / y_r`` there are three regimes:

  1. stiction, ``y_r <= mu y_n`` (``y`` in ``F``): ``gamma = y``, ``G = R^{-1}``;
  2. no contact, ``mu R_t y_r <= -R_n y_n`` (``y`` in the polar cone of ``F`` in the
     ``R`` inner product): ``gamma = 0``, ``G = 0``;
  3. sliding (otherwise): the nearest point of the boundary ray ``g_n (1, mu t)``::

         gamma_n = (R_n y_n + mu R_t y_r) / (R_n + mu^2 R_t),   gamma_t = mu gamma_n t,
         G = u u^T / (R_n + mu^2 R_t) + mu gamma_n / (R_t y_r) [0, 0; 0, I - t t^T],
         u = (1, mu t).

``gamma`` is continuous across the regimes and ``G`` is its (Clarke) derivative, so the
total cost is convex and piecewise twice differentiable.

* ``box`` rows (``F = [-f, f]``; dry friction, MuJoCo's ``frictionloss``, not a cone: declared
  apart from ``K``, :attr:`~contactopt.programs.primal.PrimalProgram.box`): ``gamma = clip(y,
  -f, f)``, ``G = 1 / R`` where ``|y| < f`` else 0. Their cost ``l_R`` is Huber's function of
  the row velocity (quadratic ``x^2 / (2 R)`` up to ``|x| = R f``, then ``f |x| - R f^2 / 2``;
  Todorov 2014, MuJoCo documentation "Computation: friction loss"), no longer
  ``1/2 gamma R gamma`` once clipped: :func:`regularizer_cost`.
* ``soc_scaled`` blocks: MuJoCo's elliptic cone ``g_n >= ||(g_i / mu_i)||`` with a coefficient
  per row (torsional and rolling friction, condim 4 and 6: :func:`_project_soc_scaled`), the
  conic form's SOC block with unequal tangential scale ``D_i = mu_i``.
* ``soc_general`` blocks: a friction cone whose tangential ``R`` entries differ (MuJoCo's
  elliptic regularization ``diag(W) / impratio`` per row, used by ``regularized`` with
  ``form = "primal"``) is not analytic in SAP's sense: the sliding regime solves a scalar
  equation for the cone's multiplier (:func:`_project_soc_general`, ours).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.conic import Cone

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["ConeLayout", "Group", "cone_layout", "project", "regularizer_cost", "with_box_rows"]


@dataclass(frozen=True)
class Group:
    """Blocks of one kind and size: ``rows`` (nb, d) row indices; ``mu`` (nb,): the friction
    coefficients of ``soc`` blocks, the bounds ``f`` of ``box`` rows."""

    kind: str  # "free", "nonneg", "box", "soc", "soc_general" or "soc_scaled"
    rows: IntArray
    mu: FloatArray
    #: (nb, d) per-row factors ``S = (1, D_i / D_0)`` of ``soc_scaled`` blocks; empty otherwise.
    scale: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def dim(self) -> int:
        return int(self.rows.shape[1])


@dataclass(frozen=True)
class ConeLayout:
    """The constraint rows grouped for vectorized projection (scalar rows as 1x1 blocks)."""

    groups: tuple[Group, ...]
    m: int


def cone_layout(cones: tuple[Cone, ...], scale: FloatArray, R: FloatArray,
                rtol: float = 1e-9) -> ConeLayout | str:
    """Group the rows of ``cones`` (the conic form's ``K``, see :mod:`contactopt.programs.primal`);
    an SOC block's friction coefficient is ``mu = scale_t / scale_n``; blocks with unequal
    tangential ``R`` go to ``soc_general``. Returns a reason string when a block is no friction
    cone (unequal tangential ``scale``). Vectorized over the cones of each size (a pile step
    has hundreds)."""
    dims = np.array([cone.dim for cone in cones], dtype=np.int_)
    starts = np.cumsum(dims) - dims
    m = int(dims.sum())
    free = np.array([cone.kind == "zero" for cone in cones], dtype=bool)
    scalar = ~free & (np.array([cone.kind == "nonneg" for cone in cones], dtype=bool) | (dims == 1))
    groups: list[Group] = []
    for kind, mask in (("free", free), ("nonneg", scalar)):
        if dims[mask].sum():
            groups.append(Group(kind, _expand(starts[mask], dims[mask])[:, None], np.zeros(0)))
    soc = ~(free | scalar)
    for dim in sorted(set(dims[soc].tolist())):
        first = starts[soc & (dims == dim)]
        rows = first[:, None] + np.arange(dim)
        tangent_scale, tangent_R = scale[rows[:, 1:]], R[rows[:, 1:]]
        if np.any(scale[rows] <= 0):
            return f"SOC block at row {int(first[np.argmin(scale[rows].min(axis=1))])}: row scale must be > 0"
        scaled = _spread(tangent_scale) > rtol * np.abs(tangent_scale).max(axis=1)  # MuJoCo's elliptic cone
        isotropic = _spread(tangent_R) <= rtol * np.abs(tangent_R).max(axis=1)
        mu = scale[first + 1] / scale[first]
        for kind, pick in (("soc", isotropic & ~scaled), ("soc_general", ~isotropic & ~scaled)):
            if pick.any():
                groups.append(Group(kind, rows[pick], mu[pick]))
        if scaled.any():
            factors = scale[rows[scaled]] / scale[first[scaled], None]
            groups.append(Group("soc_scaled", rows[scaled], np.ones(int(scaled.sum())), factors))
    groups.sort(key=lambda group: _ORDER[group.kind])
    return ConeLayout(tuple(groups), m)


_ORDER = {"free": 0, "nonneg": 1, "box": 2, "soc": 3, "soc_general": 4, "soc_scaled": 5}


def with_box_rows(layout: ConeLayout, bounds: FloatArray) -> ConeLayout:
    """``layout`` followed by ``bounds.shape[0]`` box rows ``|gamma| <= bounds`` (the last rows)."""
    if bounds.shape[0] == 0:
        return layout
    rows = layout.m + np.arange(bounds.shape[0])
    return ConeLayout((*layout.groups, Group("box", rows[:, None], np.asarray(bounds, dtype=np.float64))),
                      layout.m + bounds.shape[0])


def regularizer_cost(layout: ConeLayout, y: FloatArray, gamma: FloatArray, R: FloatArray) -> float:
    """``l_R = max_{g in F} g^T R y - 1/2 g^T R g`` at its maximizer ``gamma``: ``1/2 gamma^T R
    gamma`` on cones (where ``gamma^T R (y - gamma) = 0``), plus ``gamma R (y - gamma)`` on the
    clipped box rows (Huber's linear part)."""
    cost = 0.5 * float(gamma @ (R * gamma))
    for group in layout.groups:
        if group.kind == "box":
            rows = group.rows[:, 0]
            cost += float(gamma[rows] @ (R[rows] * (y[rows] - gamma[rows])))
    return cost  # stable sort keeps sizes ascending


def _spread(values: FloatArray) -> FloatArray:
    return np.asarray(values.max(axis=1) - values.min(axis=1))  # np.ptp without its wrapper cost


def _expand(starts: IntArray, dims: IntArray) -> IntArray:
    """The rows ``starts[i] .. starts[i] + dims[i]`` of every block, concatenated."""
    offsets = np.repeat(starts - (np.cumsum(dims) - dims), dims)
    return np.asarray(offsets + np.arange(int(dims.sum())), dtype=np.int_)


def project(layout: ConeLayout, y: FloatArray, R: FloatArray,
            hessian: bool = True) -> tuple[FloatArray, list[FloatArray]]:
    """``(gamma, G)``: the projection of ``y`` and, per group of ``layout``, the blocks of
    ``G = (d gamma / d y) R^{-1}`` as an (nb, d, d) array (empty list if not ``hessian``)."""
    gamma = np.empty(layout.m)
    blocks: list[FloatArray] = []
    for group in layout.groups:
        if group.kind not in ("soc", "soc_general", "soc_scaled"):
            rows = group.rows[:, 0]
            if group.kind == "box":
                values = np.clip(y[rows], -group.mu, group.mu)
            else:
                values = y[rows] if group.kind == "free" else np.maximum(y[rows], 0.0)
            gamma[rows] = values
            if hessian:
                inverse = 1.0 / R[rows]
                if group.kind == "nonneg":
                    inverse = np.where(y[rows] > 0.0, inverse, 0.0)
                elif group.kind == "box":
                    inverse = np.where(np.abs(y[rows]) < group.mu, inverse, 0.0)
                blocks.append(inverse[:, None, None])
            continue
        if group.kind == "soc_scaled":
            g, G = _project_soc_scaled(y[group.rows], R[group.rows], group.scale, hessian)
            gamma[group.rows] = g
            if hessian:
                blocks.append(G)
            continue
        solve = _project_soc if group.kind == "soc" else _project_soc_general
        g, G = solve(y[group.rows], R[group.rows], group.mu, hessian)
        gamma[group.rows] = g
        if hessian:
            blocks.append(G)
    return gamma, blocks


def _project_soc(Y: FloatArray, Rb: FloatArray, mu: FloatArray,
                 hessian: bool) -> tuple[FloatArray, FloatArray]:
    """The three regimes of the module docstring for (nb, d) blocks ``Y``. The no-contact
    test ``mu R_t y_r <= -R_n y_n`` is the sign of the sliding formula's numerator."""
    yn, yt = Y[:, 0], Y[:, 1:]
    Rn, Rt = Rb[:, 0], Rb[:, 1]
    yr = np.sqrt(np.einsum("bi,bi->b", yt, yt))
    stick = yr <= mu * yn
    denominator = Rn + mu * mu * Rt
    sliding_n = (Rn * yn + mu * Rt * yr) / denominator
    slide = (sliding_n > 0.0) & ~stick
    gamma = np.empty_like(Y)
    gamma[:, 0] = np.where(stick, yn, np.where(slide, sliding_n, 0.0))
    safe_r = np.where(slide, yr, 1.0)
    gamma[:, 1:] = np.where(stick, 1.0, np.where(slide, mu * sliding_n / safe_r, 0.0))[:, None] * yt
    if not hessian:
        return gamma, np.zeros((0, 0, 0))
    nb, d = Y.shape
    G = np.zeros((nb, d, d))
    G.reshape(nb, d * d)[:, :: d + 1] = stick[:, None] / Rb
    index = np.flatnonzero(slide)
    if index.size:
        t = yt[index] / yr[index, None]
        m = mu[index]
        u = np.concatenate([np.ones((index.size, 1)), m[:, None] * t], axis=1)
        Gs = u[:, :, None] * u[:, None, :] / denominator[index, None, None]
        curvature = m * sliding_n[index] / (Rt[index] * yr[index])
        Gs[:, 1:, 1:] += curvature[:, None, None] * (np.eye(d - 1)[None] - t[:, :, None] * t[:, None, :])
        G[index] = Gs
    return gamma, G


def _project_soc_scaled(Y: FloatArray, Rb: FloatArray, S: FloatArray,
                        hessian: bool) -> tuple[FloatArray, FloatArray]:
    """MuJoCo's elliptic cone ``g_n >= ||(g_i / s_i)||`` (``S = (1, s_1, ..)``: each row its own
    coefficient ratio). With ``g = S h`` it is the cone ``h_n >= ||h_t||`` (``mu = 1``) in the
    norm of ``R' = S^2 R``: ``gamma = S h(S^{-1} y)`` with ``h`` the :func:`_project_soc_general`
    projection, and ``G = S G' S`` (``G' = (dh / dy') R'^{-1}``)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # lanes of other regimes are computed, then dropped
        h, G = _project_soc_general(Y / S, Rb * S * S, np.ones(Y.shape[0]), hessian)
    if not hessian:
        return h * S, G
    return h * S, S[:, :, None] * G * S[:, None, :]


def _project_soc_general(Y: FloatArray, Rb: FloatArray, mu: FloatArray,
                         hessian: bool) -> tuple[FloatArray, FloatArray]:
    """Friction-cone blocks with unequal tangential ``R = diag(R_n, r_1, .., r_k)`` (MuJoCo's
    regularization of an elliptic cone). Stiction and no contact are as in the isotropic
    case (no contact: ``mu ||r o y_t|| <= -R_n y_n``). Otherwise the KKT conditions with a
    multiplier ``lambda > 0`` of ``||g_t||^2 <= mu^2 g_n^2`` give::

        gamma_n = R_n y_n / (R_n - lambda mu^2),    gamma_ti = r_i y_ti / (r_i + lambda),

    and ``lambda`` solves ``g(lambda) = ||gamma_t|| / gamma_n = mu``. With ``lambda_0 =
    R_n / mu^2``, ``g`` decreases on ``(0, lambda_0)`` when ``y_n > 0`` and increases on
    ``(lambda_0, inf)`` when ``y_n < 0``; in ``tau = lambda / lambda_0`` (resp. ``lambda_0 /
    lambda``) both are a decreasing function on (0, 1), solved to rounding by Newton's method
    on ``||gamma_t||^2 - mu^2 gamma_n^2`` kept inside the bracket (bisection otherwise).
    The derivative follows from implicit differentiation of ``q = ||gamma_t||^2 - mu^2
    gamma_n^2 = 0``: with ``a = (R_n / (R_n - lambda mu^2), r_i / (r_i + lambda))``,
    ``u = d gamma / d lambda = (gamma_n mu^2 a_n / R_n, -gamma_ti a_i / r_i)`` and
    ``kappa = dq / d lambda = 2 u . (-gamma_t, mu^2 gamma_n)`` (signs per component),
    ``G = diag(a / R) + 2 u u^T / kappa``."""
    nb, d = Y.shape
    yn, yt = Y[:, 0], Y[:, 1:]
    Rn, Rt = Rb[:, 0], Rb[:, 1:]
    yr = np.sqrt(np.einsum("bi,bi->b", yt, yt))
    stick = yr <= mu * yn
    polar = ~stick & (mu * np.sqrt(np.einsum("bi,bi->b", Rt * yt, Rt * yt)) <= -Rn * yn)
    boundary = ~(stick | polar)
    lam0 = Rn / (mu * mu)
    below = yn > 0  # root in (0, lambda_0); else in (lambda_0, inf)

    def multiplier(tau: FloatArray) -> FloatArray:
        return np.where(below, tau * lam0, lam0 / np.maximum(tau, 1e-300))

    def parts(lam: FloatArray) -> tuple[FloatArray, FloatArray]:
        gn = Rn * yn / (Rn - lam * mu * mu)
        gt = Rt * yt / (Rt + lam[:, None])
        return gn, gt

    low, high = np.zeros(nb), np.ones(nb)
    tau = np.full(nb, 0.5)
    for _ in range(64):  # safeguarded Newton on q(tau) = ||g_t||^2 - mu^2 g_n^2: bisection when it leaves the bracket
        lam = multiplier(tau)
        gn, gt = parts(lam)
        q = np.einsum("bi,bi->b", gt, gt) - mu * mu * gn * gn
        above = q > 0  # ratio above mu, decreasing in tau: the root lies above tau
        low = np.where(above, tau, low)
        high = np.where(above, high, tau)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dq = 2.0 * (-np.einsum("bi,bi->b", gt, gt / (Rt + lam[:, None])) - mu**4 * gn * gn / (Rn - lam * mu * mu))
            dq *= np.where(below, lam0, -lam0 / (tau * tau))
            newton = tau - q / dq
        inside = np.isfinite(newton) & (newton > low) & (newton < high)
        step = np.where(inside, newton, 0.5 * (low + high))
        done = (np.abs(step - tau) <= 4e-16 * tau) | (high - low <= 4e-16 * high) | (q == 0)
        tau = np.where(q == 0, tau, step)
        if np.all(done | ~boundary):
            break
    lam = multiplier(tau)
    at_pole = boundary & (yn == 0)  # y_n = 0: lambda = lambda_0, gamma_n from the cone
    lam = np.where(at_pole, lam0, lam)
    gn, gt = parts(np.where(at_pole, lam0 * 0.5, lam))
    gt = np.where(at_pole[:, None], Rt * yt / (Rt + lam0[:, None]), gt)
    gn = np.where(at_pole, np.sqrt(np.einsum("bi,bi->b", gt, gt)) / mu, gn)
    gamma = np.where(stick[:, None], Y, 0.0)
    gamma[boundary, 0] = gn[boundary]
    gamma[boundary, 1:] = gt[boundary]
    if not hessian:
        return gamma, np.zeros((0, 0, 0))
    G = np.zeros((nb, d, d))
    G.reshape(nb, d * d)[:, :: d + 1] = stick[:, None] / Rb
    index = np.flatnonzero(boundary & ~at_pole)
    if index.size:
        lb, m = lam[index], mu[index]
        a = np.concatenate([(Rn[index] / (Rn[index] - lb * m * m))[:, None], Rt[index] / (Rt[index] + lb[:, None])],
                           axis=1)
        g = gamma[index]
        u = np.concatenate([(g[:, 0] * m * m * a[:, 0] / Rn[index])[:, None], -g[:, 1:] * a[:, 1:] / Rt[index]],
                           axis=1)
        kappa = 2.0 * (np.einsum("bi,bi->b", g[:, 1:], u[:, 1:]) - m * m * g[:, 0] * u[:, 0])
        Gb = 2.0 * u[:, :, None] * u[:, None, :] / kappa[:, None, None]
        Gb.reshape(index.size, d * d)[:, :: d + 1] += a / Rb[index]
        G[index] = Gb
    return gamma, G
