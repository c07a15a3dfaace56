"""The verdict of an array step's answer: contactopt's row-wise residuals of the primal's
conic form (S6) (:mod:`contactopt.programs.primal`, :mod:`contactopt.programs.relative`) at
``x = [v, gamma, t]``, ``y = D^{-1} gamma`` (with the box rows' two duals), computed on the
step's arrays."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactopt.formulations.model_primal import PrimalRows
from contactopt.programs import Residuals
from contactopt.programs.csc import to_csc, to_csr
from contactopt.programs.primal import PrimalProgram
from contactopt.programs.relative import conic_data_violation
from contactopt.programs.residuals import conic_check

FloatArray = NDArray[np.float64]


def verdict(A: FloatArray, J: FloatArray, rows: PrimalRows, c: FloatArray, v: FloatArray,
            gamma: FloatArray) -> tuple[Residuals, float]:
    """``(residuals, data violation)`` of ``(v, gamma)`` for the primal over ``(A, J, rows)``
    with linear cost ``c = -A v*`` (:func:`contactopt.solvers.base.judge` reads both)."""
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(gamma))):
        return Residuals(np.inf, np.inf, np.inf, np.inf, np.inf), np.inf
    from contactopt.formulations.model_primal import cones, constraint_blocks

    v_star = np.linalg.solve(A, -c)
    primal = PrimalProgram(A=to_csc(A), v_star=v_star, J=to_csr(J), R=rows.R, v_hat=rows.v_hat, scale=rows.scale,
                           cones=cones(rows), constraints=constraint_blocks(rows), box=rows.box_bound)
    program = primal.to_conic()
    x, y = primal.conic_x(v, gamma), primal.dual(gamma)
    residuals, s = conic_check(program, x, y)
    return residuals, conic_data_violation(program, x, s)
