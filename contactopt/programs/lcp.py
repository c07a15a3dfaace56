"""The linear complementarity problem.

``LCP(M, q)``: find ``z >= 0`` with ``w = M z + q >= 0`` and ``z^T w = 0`` (Tedrake 2022,
"Complementarity formulations"; Murty 1988). ``M`` is stored dense: the pivoting and
Gauss-Seidel solvers that take LCPs work on dense rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core import display
from contactopt.core.errors import ShapeError
from contactopt.programs.conic import Block, _check_blocks, _find

FloatArray = NDArray[np.float64]

__all__ = ["LCP"]


@dataclass(frozen=True)
class LCP:
    """``0 <= z  ⟂  M z + q >= 0``.

    Attributes:
        M: (n, n) matrix (dense).
        q: (n,) vector.
        variables: named blocks of z (e.g. ``impulse_normal``).
        metadata: JSON-serialisable description.
    """

    M: FloatArray
    q: FloatArray
    variables: tuple[Block, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        q = np.array(self.q, dtype=np.float64).reshape(-1)
        n = q.shape[0]
        M_in: Any = self.M
        if hasattr(M_in, "toarray"):  # scipy.sparse input
            M_in = M_in.toarray()
        M = np.array(M_in, dtype=np.float64)
        if n == 0:
            M = M.reshape(0, 0)
        if M.shape != (n, n):
            raise ShapeError(f"LCP.M: expected shape ({n}, {n}), got {M.shape}")
        if not (np.all(np.isfinite(M)) and np.all(np.isfinite(q))):
            raise ShapeError("LCP: M or q contains NaN or infinite entries")
        _check_blocks(tuple(self.variables), n, "variable")
        M.setflags(write=False)
        q.setflags(write=False)
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "metadata", dict(self.metadata))

    @property
    def kind(self) -> str:
        return "lcp"

    @property
    def n(self) -> int:
        return int(self.q.shape[0])

    def w(self, z: ArrayLike) -> FloatArray:
        """``w = M z + q``."""
        return self.M @ np.asarray(z, dtype=np.float64) + self.q

    def variable(self, z: ArrayLike, name: str) -> FloatArray:
        return np.asarray(z, dtype=np.float64)[_find(self.variables, name).slice]

    def is_symmetric(self, tol: float = 1e-10) -> bool:
        scale = max(1.0, float(np.abs(self.M).max(initial=0.0)))
        return bool(np.abs(self.M - self.M.T).max(initial=0.0) <= tol * scale)

    def summary(self) -> str:
        return f"LCP: n={self.n}"

    def __repr__(self) -> str:
        """One line: size, symmetry of M, the formulation (:mod:`contactopt.core.display`)."""
        return display.lcp_text(self)

    def _repr_html_(self) -> str:
        """Jupyter: a table of the layout, with M and q of a small LCP."""
        return display.lcp_html(self)
