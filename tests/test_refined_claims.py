"""A refined answer is contactopt's own KKT point (:mod:`contactopt.solvers.refine`), not the
backend's iterate: contactopt's residuals judge it as an optimal answer. An ``inaccurate``
claim (Clarabel's AlmostSolved) refined to the optimal level is ``optimal``, its claim kept in
``claimed`` (residuals that fall short still downgrade it: :func:`contactopt.solvers.base.judge`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

import contactopt as co
from contactopt.programs import Status
from contactopt.solvers import _refined


def _projection() -> co.ConicProgram:
    """``min 1/2 |x - p|^2, x >= 0``: the projection of ``p`` on the orthant, ``x = max(p, 0)``
    (rows 1 and 3 active, with multipliers ``-p_i``)."""
    p = np.array([-1.0, 2.0, -0.5, 3.0])
    return co.ConicProgram(P=sp.identity(4, format="csc"), c=-p, A=-sp.identity(4, format="csc"),
                           b=np.zeros(4), cones=(co.Nonneg(4),))


def test_an_inaccurate_claim_refined_to_the_optimum_is_optimal() -> None:
    program = _projection()
    answer = co.solve(program, "clarabel", refine=False)
    claimed = dataclasses.replace(answer, status=Status.INACCURATE)  # as if the backend said AlmostSolved
    refined = _refined(program, claimed, True)
    assert refined.refined and refined.status is Status.OPTIMAL and refined.claimed is Status.INACCURATE
    np.testing.assert_allclose(refined.x, [0.0, 2.0, 0.0, 3.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(refined.y, [1.0, 0.0, 0.5, 0.0], rtol=0, atol=1e-15)
    assert "optimal by contactopt's residuals" in refined.message


def test_an_optimal_claim_is_kept_and_a_failed_one_is_not_refined() -> None:
    program = _projection()
    answer = co.solve(program, "clarabel", refine=False)
    assert _refined(program, answer, True).status is Status.OPTIMAL
    failed = dataclasses.replace(answer, status=Status.MAX_ITERATIONS)  # not usable: left as it is
    assert _refined(program, failed, True) is failed
