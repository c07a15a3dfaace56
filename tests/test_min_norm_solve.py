"""The minimum-norm solves of the refinement and the polish (iterated Tikhonov on QDLDL) against NumPy's SVD."""

from __future__ import annotations

import numpy as np
import pytest

from contactopt.solvers.polish import min_norm_solve


@pytest.mark.parametrize("size", [1, 2, 5, 30])
def test_min_norm_solve_equals_the_svd_solution(size: int) -> None:
    """The minimum-norm solution equals NumPy's SVD one, singular systems included."""
    rng = np.random.default_rng(size)
    for rank in {size, max(size - 1, 1)}:
        factor = rng.standard_normal((size, rank))
        K = factor @ factor.T
        rhs = K @ rng.standard_normal(size) + (0.0 if rank == size else 1e-3 * rng.standard_normal(size))
        np.testing.assert_allclose(min_norm_solve(K, rhs), np.linalg.lstsq(K, rhs, rcond=None)[0], atol=1e-9)
