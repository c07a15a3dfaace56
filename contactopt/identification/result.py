"""The answer of :func:`contactopt.identification.estimate` (its module docstring says how each
method fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.identification.basis import Basis
from contactopt.identification.lumped import IdentificationError, _is_mjcf, regressor
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["Estimate"]


@dataclass(frozen=True)
class Estimate:
    """The estimated base parameters (module docstring).

    Attributes:
        values: the base parameters, in the order of ``names``.
        names: their combinations of lumped names (``identifiable.names``).
        identifiable: the :class:`~contactopt.identification.basis.Basis` of the data.
        covariance: (r, r) of ``values``.
        condition: condition number of the regression matrix.
        method: ``"equation_error"``, ``"energy"`` or ``"simulation_error"``; for the last,
            ``values`` and ``names`` are the fitted physical parameters, ``identifiable`` the
            Basis of the sensitivity Jacobian over those names (identity combinations when it has
            full rank), ``system`` the system with the fitted values, and :meth:`predict` raises.
        sigma: the noise standard deviation used in ``covariance``.
        residual: root-mean-square residual of the fit.
        consistent: per check its outcome (:mod:`contactopt.identification.consistency`).
        consistency: ``"report"`` or ``"enforce"`` (the constrained fit).
        lumped: ``"enforce"``: a physically consistent lumped vector whose base parameters are
            ``values`` (``identifiable.combination @ lumped``); None otherwise.
    """

    values: FloatArray
    names: tuple[str, ...]
    identifiable: Basis
    covariance: FloatArray
    condition: float
    method: str
    sigma: float
    residual: float
    system: System = field(repr=False)
    consistent: dict[str, bool] = field(default_factory=dict)
    consistency: str = "report"
    lumped: FloatArray | None = None

    @property
    def standard_errors(self) -> FloatArray:
        """``sqrt(diag(covariance))``."""
        return np.sqrt(np.diag(self.covariance))

    def predict(self, q: ArrayLike, v: ArrayLike, vdot: ArrayLike) -> FloatArray:
        """The generalized force ``Y_i(q, v, vdot) theta`` the motion needs; arrays of states
        ``(N, nq)``, ``(N, nv)``, ``(N, nv)`` give ``(N, nv)``. Not for ``method="simulation_error"``
        (its values are physical parameters, not the base parameters the regressor multiplies):
        it raises :class:`~contactopt.identification.lumped.IdentificationError`; simulate
        ``system`` (the fitted one) instead, or use ``method="equation_error"``."""
        if self.method == "simulation_error":
            raise IdentificationError("Estimate.predict: a method='simulation_error' estimate holds physical "
                                      f"parameters {self.names}, not base parameters of the regressor; simulate "
                                      "estimate.system (the fitted system) instead, or estimate by "
                                      "method='equation_error'")
        qa, va, aa = (np.asarray(x, dtype=np.float64) for x in (q, v, vdot))
        single = qa.ndim == 1
        qa, va, aa = np.atleast_2d(qa), np.atleast_2d(va), np.atleast_2d(aa)
        columns = list(self.identifiable.independent)
        out = np.array([regressor(self.system, qa[k], va[k], aa[k])[:, columns] @ self.values
                        for k in range(qa.shape[0])])
        if _is_mjcf(self.system):  # the forces no parameter multiplies (springs)
            from contactopt.identification.mjcf import mjcf_regressor

            layout = mjcf_regressor(self.system)
            out += np.array([layout.at(qa[k], va[k], aa[k])[1] for k in range(qa.shape[0])])
        return out[0] if single else out
