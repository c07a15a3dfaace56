"""The minimum-norm solves of the refinement and the polish against NumPy's SVD: LAPACK gelsy
below 32 unknowns, iterated Tikhonov on a QDLDL factorization from 32 on."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from contactopt.solvers.polish import GELSY_LIMIT, min_norm_solve


@pytest.mark.parametrize("size", [1, 2, 5, 30, 31])
def test_min_norm_solve_equals_the_svd_solution(size: int) -> None:
    """gelsy's minimum-norm solution equals NumPy's SVD one, singular systems included."""
    rng = np.random.default_rng(size)
    for rank in {size, max(size - 1, 1)}:
        factor = rng.standard_normal((size, rank))
        K = factor @ factor.T
        rhs = K @ rng.standard_normal(size) + (0.0 if rank == size else 1e-3 * rng.standard_normal(size))
        np.testing.assert_allclose(min_norm_solve(K, rhs), np.linalg.lstsq(K, rhs, rcond=None)[0], atol=1e-9)


@pytest.mark.parametrize("size", [GELSY_LIMIT, 45, 80])
@pytest.mark.parametrize("sparse", [False, True])
def test_min_norm_solve_by_iterated_tikhonov_equals_the_svd_solution(size: int, sparse: bool) -> None:
    """Above gelsy's sizes, dense or sparse, symmetric or not, singular (consistent or not): the
    SVD's minimum-norm solution, for nonzero singular values above the regularization's cut
    (``sigma >> sqrt(1e-8) |K|``; below it a component is cut, as by a rank cut), to 1e-6
    relative: the rounding of an inconsistent right-hand side amplified by ``1 / delta``."""
    rng = np.random.default_rng(size)
    left, _ = np.linalg.qr(rng.standard_normal((size, size)))
    right, _ = np.linalg.qr(rng.standard_normal((size, size)))
    for rank in (size, size - 3):
        sigma = np.concatenate([np.logspace(0, -3, rank), np.zeros(size - rank)])
        for K in (left @ np.diag(sigma) @ left.T, left @ np.diag(sigma) @ right.T):
            rhs = K @ rng.standard_normal(size) + (0.0 if rank == size else 1e-3 * rng.standard_normal(size))
            z = min_norm_solve(sp.csc_matrix(K) if sparse else K, rhs)
            np.testing.assert_allclose(z, np.linalg.lstsq(K, rhs, rcond=None)[0], rtol=1e-6, atol=1e-9)
