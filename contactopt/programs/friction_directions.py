"""The directions of a polyhedral friction cone: ``k`` unit tangent directions ``d_i`` per
contact, closed under negation (Tedrake 2022, "Anitescu's convex formulation", after Stewart &
Trinkle 1996). In 3-D ``d_i = cos(2 pi i / k) t1 + sin(2 pi i / k) t2`` (``k`` even); in 2-D
``k = 2``: ``+t, -t``. Shared by the polyhedral formulations and the Coulomb problem's
pyramidal LCP (:mod:`contactopt.programs.coulomb_lcp`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError

__all__ = ["MAX_DIRECTIONS", "check_directions", "default_directions", "tangent_directions"]

FloatArray = NDArray[np.float64]


def default_directions(dim: int) -> int:
    """Default number of friction directions: 4 in 3-D, 2 in 2-D, 0 without tangents."""
    return {1: 0, 2: 2, 3: 4}[dim]


#: Most friction directions ``k`` accepted: a 1024-gon is within 5e-6 (relative) of the circle,
#: so more only costs memory and time (the program's size also is checked before it is made,
#: :func:`contactopt.core.budgets.check_allocation`).
MAX_DIRECTIONS = 1024


def check_directions(k: Any, dim: int, formulation: str) -> int:
    """Validate the ``k`` option for contacts of frame dimension ``dim``: an even integer in
    ``[2, MAX_DIRECTIONS]``."""
    if k is None:
        return default_directions(dim)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise OptionError(f"formulation {formulation!r}: k must be an even integer >= 2, got {k!r}")
    if k > MAX_DIRECTIONS:
        raise OptionError(f"formulation {formulation!r}: k = {k} friction directions is more than the "
                          f"{MAX_DIRECTIONS} allowed (a {MAX_DIRECTIONS}-gon is within 5e-6 of the circle)")
    if dim == 2 and k != 2:
        raise OptionError(f"formulation {formulation!r}: planar contacts have k = 2 directions (+t, -t), "
                          f"got k = {k}")
    return k if dim > 1 else 0



@functools.lru_cache(maxsize=32)
def tangent_directions(dim: int, k: int) -> FloatArray:
    """(k, dim - 1) coefficients of ``d_i`` in the tangent basis of the contact frame
    (read-only: made once per ``(dim, k)``)."""
    if dim == 1 or k == 0:
        out = np.zeros((0, max(dim - 1, 0)))
    elif dim == 2:
        out = np.array([[1.0], [-1.0]])
    else:
        angles = 2.0 * np.pi * np.arange(k) / k
        out = np.column_stack([np.cos(angles), np.sin(angles)])
    out.setflags(write=False)
    return out
