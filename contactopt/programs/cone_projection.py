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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.conic import Cone

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["ConeLayout", "Group", "cone_layout", "project"]


@dataclass(frozen=True)
class Group:
    """Blocks of one kind and size: ``rows`` (nb, d) row indices; ``mu`` (nb,) for ``soc``."""

    kind: str  # "free", "nonneg" or "soc"
    rows: IntArray
    mu: FloatArray

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
    an SOC block's friction coefficient is ``mu = scale_t / scale_n``. Returns a reason string
    when a block is outside what the analytic projection covers (unequal tangential ``R`` or
    ``scale``)."""
    free: list[int] = []
    nonneg: list[int] = []
    soc: dict[int, tuple[list[int], list[float]]] = {}
    row = 0
    for cone in cones:
        rows = list(range(row, row + cone.dim))
        row += cone.dim
        if cone.kind == "zero":
            free += rows
        elif cone.kind == "nonneg" or cone.dim == 1:
            nonneg += rows
        else:
            tangent = np.array(rows[1:])
            for values, what in ((R, "regularization R"), (scale, "row scale")):
                spread = np.ptp(values[tangent])
                if spread > rtol * np.abs(values[tangent]).max():
                    return (f"SOC block at row {rows[0]}: unequal tangential {what} "
                            f"{values[tangent].tolist()} (the analytic projection needs one value)")
            starts, mus = soc.setdefault(cone.dim, ([], []))
            starts.append(rows[0])
            mus.append(float(scale[rows[1]] / scale[rows[0]]))
    groups: list[Group] = []
    for kind, rows_list in (("free", free), ("nonneg", nonneg)):
        if rows_list:
            groups.append(Group(kind, np.array(rows_list, dtype=np.int_)[:, None], np.zeros(0)))
    for dim, (starts, mus) in sorted(soc.items()):
        rows_array = np.array(starts, dtype=np.int_)[:, None] + np.arange(dim)
        groups.append(Group("soc", rows_array, np.array(mus)))
    return ConeLayout(tuple(groups), row)


def project(layout: ConeLayout, y: FloatArray, R: FloatArray,
            hessian: bool = True) -> tuple[FloatArray, list[FloatArray]]:
    """``(gamma, G)``: the projection of ``y`` and, per group of ``layout``, the blocks of
    ``G = (d gamma / d y) R^{-1}`` as an (nb, d, d) array (empty list if not ``hessian``)."""
    gamma = np.empty(layout.m)
    blocks: list[FloatArray] = []
    for group in layout.groups:
        if group.kind != "soc":
            rows = group.rows[:, 0]
            values = y[rows] if group.kind == "free" else np.maximum(y[rows], 0.0)
            gamma[rows] = values
            if hessian:
                inverse = 1.0 / R[rows]
                if group.kind == "nonneg":
                    inverse = np.where(y[rows] > 0.0, inverse, 0.0)
                blocks.append(inverse[:, None, None])
            continue
        g, G = _project_soc(y[group.rows], R[group.rows], group.mu, hessian)
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
