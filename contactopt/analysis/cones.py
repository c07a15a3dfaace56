"""Projection onto the Coulomb cone and the De Saxcé natural-map residual (used by
:mod:`contactopt.analysis.metrics`; definitions and sources in its docstring)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

__all__ = ["RHO", "desaxce_residual", "project_cone"]

#: The natural-map step ``rho`` [kg = N·s / (m/s)] that turns a local velocity into an impulse.
#: 1, as in FCLIB's merit function; the residual is zero at a solution for any ``rho > 0``.
RHO = 1.0


def project_cone(x: ArrayLike, mu: ArrayLike) -> FloatArray:
    """Euclidean projection of each row of ``x`` (m, dim), normal first, onto ``K_mu``.

    ``K_mu = {||x_t|| <= mu x_n}`` (``mu`` per row, ``mu >= 0``; ``inf`` gives the half-space
    ``x_n >= 0``). Cases, as in FCLIB's ``projectionOnCone``: in the polar cone
    (``mu ||x_t|| <= -x_n``) the projection is 0; in the cone it is ``x``; otherwise it is
    ``(a, mu a x_t / ||x_t||)`` with ``a = (x_n + mu ||x_t||) / (1 + mu^2)``.
    """
    x = np.asarray(x, dtype=np.float64)
    m = x.shape[0]
    mu_arr = np.broadcast_to(np.asarray(mu, dtype=np.float64), (m,))
    xn, xt = x[:, 0], x[:, 1:]
    nt = np.linalg.norm(xt, axis=1)
    finite = np.isfinite(mu_arr)
    mu_f = np.where(finite, mu_arr, 0.0)
    polar = mu_f * nt <= -xn
    inside = nt <= mu_f * xn
    a = (xn + mu_f * nt) / (1.0 + mu_f**2)
    normal = np.where(polar, 0.0, np.where(inside, xn, a))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(polar, 0.0, np.where(inside, 1.0, np.where(nt > 0, mu_f * a / nt, 0.0)))
    out = np.empty_like(x)
    out[:, 0] = np.where(finite, normal, np.maximum(xn, 0.0))
    out[:, 1:] = np.where(finite[:, None], scale[:, None] * xt, xt)
    return out


def desaxce_residual(r: ArrayLike, u: ArrayLike, mu: ArrayLike, rho: float = RHO) -> FloatArray:
    """(m, dim) natural-map residual ``r - P_K(r - rho û)`` per contact, ``û = u + [mu ||u_t||, 0]``.

    ``r`` impulses and ``u`` local velocities, (m, dim) normal first; ``mu`` per contact. Zero
    exactly when ``K ∋ r ⟂ û ∈ K*`` (Coulomb friction with Signorini's condition, De Saxcé's
    bipotential form; Acary, Brémond & Huber 2018). ``mu = inf`` drops the correction (see the
    module's definitions).
    """
    r = np.asarray(r, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    mu_arr = np.broadcast_to(np.asarray(mu, dtype=np.float64), (r.shape[0],))
    u_hat = u.copy()
    correction = np.where(np.isfinite(mu_arr), mu_arr, 0.0) * np.linalg.norm(u[:, 1:], axis=1)
    u_hat[:, 0] += correction
    return r - project_cone(r - rho * u_hat, mu_arr)
