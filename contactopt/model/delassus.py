"""The Delassus operator ``rows M^{-1} rows^T`` of a step's constraint rows (the matrix of every
dual program; Tedrake 2022, "Anitescu's convex formulation": ``J M^{-1} J^T``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from contactopt.model.step import Dynamics, Matrix, is_sparse

__all__ = ["delassus"]


def delassus(dynamics: Dynamics, rows: Matrix) -> Matrix:
    """``rows M^{-1} rows^T``. Contact rows touch few degrees of freedom: with sparse rows and
    a sparse ``M^{-1}`` (block-diagonal M) it is a sparse product, linear in the contacts;
    with sparse rows and a factorization only, one solve per row; for large dense rows the
    outer product goes through the sparse rows (O(nnz(rows) x n) instead of O(n^2 nv))."""
    if is_sparse(rows):
        if dynamics.inverse_matrix is not None:
            return (rows @ dynamics.inverse_matrix @ rows.T).tocsc()
        return np.asarray(rows @ dynamics.solve_M(rows.T.toarray()))
    solved = dynamics.solve_M(rows.T)
    if rows.shape[0] * rows.shape[1] > 20_000:
        sparse_rows = sp.csr_matrix(rows)
        if sparse_rows.nnz < 0.25 * rows.size:
            sparse_solved = sp.csr_matrix(solved)
            if sparse_solved.nnz < 0.25 * solved.size:
                # Sparse times sparse sums each entry's products in the same order as sparse
                # times dense (only exact zeros are skipped): the same numbers, stored sparse.
                W = (sparse_rows @ sparse_solved).tocsc()
                W.eliminate_zeros()
                return W
            return np.asarray(sparse_rows @ solved)
    return rows @ solved
