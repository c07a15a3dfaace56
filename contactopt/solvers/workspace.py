"""Solver workspaces kept across time steps (issue 10).

Consecutive step programs usually have the same sparsity pattern (the same active contacts,
the same layout), only new numbers. A backend whose API can update data in place (OSQP's
``update``, Clarabel's ``update``) then skips its setup: no new symbolic analysis, no new
allocation, and for OSQP a warm start from the previous step's iterate. The cache holds
one workspace per backend and thread, keyed by the patterns of ``P`` (upper triangle) and
``A``, the cone layout and the settings; any difference means a fresh setup.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

_LOCAL = threading.local()


@dataclass
class Workspace:
    """A backend object and the data signature it was set up for."""

    backend: Any
    P_indptr: np.ndarray
    P_indices: np.ndarray
    A_indptr: np.ndarray
    A_indices: np.ndarray
    key: Hashable

    def matches(self, P: sp.csc_matrix, A: sp.csc_matrix, key: Hashable) -> bool:
        return (key == self.key and np.array_equal(P.indptr, self.P_indptr)
                and np.array_equal(P.indices, self.P_indices) and np.array_equal(A.indptr, self.A_indptr)
                and np.array_equal(A.indices, self.A_indices))


def cached(solver: str, P: sp.csc_matrix, A: sp.csc_matrix, key: Hashable) -> Any | None:
    """The backend object kept for ``solver`` if it was set up for the same patterns and key."""
    workspace: Workspace | None = getattr(_LOCAL, solver, None)
    if workspace is not None and workspace.matches(P, A, key):
        return workspace.backend
    return None


def keep(solver: str, backend: Any, P: sp.csc_matrix, A: sp.csc_matrix, key: Hashable) -> None:
    """Remember ``backend`` (set up for ``P``, ``A`` and ``key``) for the next program."""
    setattr(_LOCAL, solver, Workspace(backend, P.indptr.copy(), P.indices.copy(), A.indptr.copy(),
                                      A.indices.copy(), key))


def forget(solver: str) -> None:
    """Drop the kept workspace (after a failure, whose state should not seed the next solve)."""
    if hasattr(_LOCAL, solver):
        delattr(_LOCAL, solver)


def settings_key(settings: dict[str, Any]) -> Hashable:
    """A hashable form of a settings dict (values by ``repr``, so arrays and floats compare)."""
    return tuple(sorted((name, repr(value)) for name, value in settings.items()))
