"""The Coulomb friction cone ``K_mu = {x : ||x_T|| <= mu x_N}`` (contact frame, normal first):
its Euclidean projection and the natural map of the cone complementarity ``K ∋ r ⟂ û ∈ K*``
with De Saxcé's modified velocity ``û = u + [mu ||u_T||, 0]`` (De Saxcé & Feng 1991; Acary,
Brémond & Huber 2018). One implementation for every user: FCLIB's error measure, the metrics,
projected Gauss-Seidel and the nonsmooth Gauss-Seidel's compiled sweeps.

The projection (as FCLIB's ``projectionOnCone``): ``x`` inside the cone stays; in the polar
cone (``mu ||x_T|| <= -x_N``) it is 0; otherwise it is ``(a, mu a x_T / ||x_T||)`` with
``a = (x_N + mu ||x_T||) / (1 + mu^2)``. ``mu = inf`` (only in :func:`project_cones` and
:func:`natural_map`) is the half-space ``x_N >= 0``, and drops De Saxcé's term.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["KERNELS", "natural_map", "project_cone", "project_cones"]

FloatArray = NDArray[np.float64]


def project_cone(x: Any, dim: int, mu: float) -> None:
    """In place: the projection of one contact's ``x[:dim]`` onto ``K_mu`` (``mu`` finite).
    Scalar loops, so that numba compiles it into the sweeps that call it."""
    n = x[0]
    squares = 0.0
    for k in range(1, dim):
        squares += x[k] * x[k]
    norm_t = math.sqrt(squares)
    if norm_t <= mu * n and n >= 0.0:  # mu = 0: the ray, which no negative normal is on
        return
    if mu * norm_t <= -n:
        for k in range(dim):
            x[k] = 0.0
        return
    alpha = (n + mu * norm_t) / (1.0 + mu * mu)
    ratio = alpha * mu / norm_t
    x[0] = alpha
    for k in range(1, dim):
        x[k] = ratio * x[k]


#: The functions a compiled caller replaces by numba dispatchers (:func:`contactopt.core.jit.jit_in_place`).
KERNELS = ("project_cone",)


def project_cones(x: ArrayLike, mu: ArrayLike) -> FloatArray:
    """The projection of each row of ``x`` (m, dim), normal first, onto ``K_mu`` (``mu`` per
    row or one number, ``mu >= 0``; ``inf``: the half-space ``x_N >= 0``)."""
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


def natural_map(r: ArrayLike, u: ArrayLike, mu: ArrayLike, dim: int, rho: float = 1.0) -> FloatArray:
    """(nc, dim) ``e_c = r_c - P_K(r_c - rho û_c)``: zero exactly at a solution of Coulomb's law
    with Signorini's condition, for any ``rho > 0`` (FCLIB's merit takes ``rho = 1``). ``r``
    impulses, ``u`` local velocities (flat or (nc, dim), normal first), ``mu`` per contact."""
    R = np.asarray(r, dtype=np.float64).reshape(-1, dim)
    hat = np.array(u, dtype=np.float64).reshape(-1, dim)
    mus = np.broadcast_to(np.asarray(mu, dtype=np.float64), (R.shape[0],))
    hat[:, 0] += np.where(np.isfinite(mus), mus, 0.0) * np.linalg.norm(hat[:, 1:], axis=1)
    return R - project_cones(R - rho * hat, mus)
