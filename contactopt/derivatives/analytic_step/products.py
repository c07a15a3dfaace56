"""The step's forward and reverse products from the program derivative's right-hand side
``r`` (:mod:`contactopt.derivatives.analytic_step`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


class AnalyticStep:
    """The step's products from ``r`` of the module docstring for every input column
    (``first`` (n, nx), ``second`` (m, nx)) and the program derivative at the solution."""

    def __init__(self, derivative: Any, first: FloatArray, second: FloatArray, nv: int, h: float,
                 consistent: bool) -> None:
        self.derivative, self.first, self.second = derivative, first, second
        self.nv, self.nx, self.h, self.consistent = nv, first.shape[1], h, consistent
        #: the input directions ``r``'s columns are along ((nx, p)), None: every input column
        self.directions: FloatArray | None = None
        #: ``(dq'/dq, dq'/dv')`` of a floating base's ``q' = integrate(q, v', h)``; None: ``(I, h I)``
        self.integration: tuple[FloatArray, FloatArray] | None = None

    def jvp(self, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(dq', dv')`` along the input ``direction`` ((nx,): ``[dq, dv, dparams]``; built
        along :attr:`directions`, one of them)."""
        if self.directions is None:
            first, second = self.first @ direction, self.second @ direction
        else:
            match = [k for k in range(self.directions.shape[1]) if np.array_equal(self.directions[:, k], direction)]
            if not match:
                raise ValueError("AnalyticStep.jvp: the direction is not one this linearization was built along")
            first, second = self.first[:, match[0]], self.second[:, match[0]]
        tangent = self.derivative.jvp(dc=first, db=-second)
        dv_next = tangent.x[:self.nv]
        if self.integration is not None:
            q_of_q, q_of_v = self.integration
            return q_of_q @ direction[:q_of_q.shape[0]] + q_of_v @ dv_next, dv_next
        return direction[:self.nv] + self.h * dv_next, dv_next

    def vjp(self, gq: FloatArray, gv: FloatArray) -> FloatArray:
        """The gradient of ``<gq, q'> + <gv, v'>`` over the inputs ((nx,), ``[q, v, params]``)."""
        if self.directions is not None:
            raise ValueError("AnalyticStep.vjp: built along given directions, not every input column")
        seed = np.zeros(self.first.shape[0])
        if self.integration is None:
            seed[:self.nv] = gv + self.h * gq
        else:
            seed[:self.nv] = gv + self.integration[1].T @ gq
        gradient = self.derivative.vjp(gx=seed, dense=False)
        out = gradient.c @ self.first - gradient.b @ self.second
        if self.integration is None:
            out[:self.nv] += gq
        else:
            out[:gq.shape[0]] += self.integration[0].T @ gq
        return np.asarray(out)

    def jacobian(self) -> FloatArray:
        """((nq + nv, nx)): the step's Jacobian, column by column through :meth:`jvp`."""
        if self.directions is not None:
            raise ValueError("AnalyticStep.jacobian: built along given directions, not every input column")
        columns = [np.concatenate(self.jvp(unit)) for unit in np.eye(self.nx)]
        return np.stack(columns, axis=1)
