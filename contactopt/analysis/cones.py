"""The Coulomb cone's projection and De Saxcé's natural-map residual as the metrics name them
(:mod:`contactopt.analysis.metrics`), from their one implementation
(:mod:`contactopt.programs.coulomb_cone`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.programs.coulomb_cone import natural_map
from contactopt.programs.coulomb_cone import project_cones as project_cone

FloatArray = NDArray[np.float64]

__all__ = ["RHO", "desaxce_residual", "project_cone"]

#: The natural-map step ``rho`` [kg = N·s / (m/s)] that turns a local velocity into an impulse.
#: 1, as in FCLIB's merit function; the residual is zero at a solution for any ``rho > 0``.
RHO = 1.0


def desaxce_residual(r: ArrayLike, u: ArrayLike, mu: ArrayLike, rho: float = RHO) -> FloatArray:
    """(m, dim) natural-map residual ``r - P_K(r - rho û)`` per contact of ``r`` and ``u``
    (m, dim), normal first (:func:`contactopt.programs.coulomb_cone.natural_map`)."""
    r = np.asarray(r, dtype=np.float64)
    return natural_map(r, u, mu, r.shape[1], rho)
