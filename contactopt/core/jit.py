"""The one switch for contactopt's numba-compiled kernels, and the ways they are compiled.

numba is optional (the ``fast`` extra). :data:`ENABLED` is true when it is installed and
``CONTACTOPT_NO_NUMBA`` is unset; every kernel module reads it, and where it is false the same
loops run as NumPy or plain Python (the results are the same numbers). numba itself is imported
on a kernel's first use, never with contactopt (it costs ~0.4 s of import time); the first
compilation of a kernel takes seconds and is cached on disk (``cache=True``, in __pycache__).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ENABLED", "UNSIGNED", "LazyKernel", "compile_sparse_helpers", "gather_row", "jit_in_place", "njit",
           "scatter_add", "sort_small"]

#: Whether kernels run compiled: numba installed and ``CONTACTOPT_NO_NUMBA`` unset.
ENABLED: bool = importlib.util.find_spec("numba") is not None and not os.environ.get("CONTACTOPT_NO_NUMBA")

#: Index type for the kernels' hot loops: read as unsigned, numba skips its negative-index
#: (wraparound) handling, which doubled a sparse product's time (172 -> 90 us on the MJCF pile).
UNSIGNED = np.uint64

_LOCK = threading.RLock()


def scatter_add(weight: float, Bp: Any, Bj: Any, Bx: Any, k: int, low: int, row: int, sums: Any, mark: Any,
                touched: Any, n: int) -> int:
    """``sums += weight * B[k]`` over the entries of row ``k`` of compressed ``B`` with column
    ``>= low`` (a sparse accumulator: Gilbert, Moler & Schreiber, "Sparse matrices in MATLAB",
    1992): a column first touched for output row ``row`` is zeroed, marked and listed in
    ``touched``; returns the new count ``n``. For ``low > 0`` the row is read from its end and its
    columns must be ascending (the search stops below ``low``)."""
    first, end = UNSIGNED(Bp[k]), UNSIGNED(Bp[k + 1])  # unsigned: numba skips its wraparound test
    if low == 0:
        for kk in range(first, end):
            col: Any = UNSIGNED(Bj[kk])
            if mark[col] != row:
                mark[col] = row
                sums[col] = 0.0
                touched[n] = col
                n += 1
            sums[col] += weight * Bx[kk]
        return n
    bound = UNSIGNED(low)  # compared with unsigned columns (mixed signs would compare as floats)
    position: Any = end
    while position > first:  # from the end: the columns past ``low`` only
        position -= UNSIGNED(1)
        col = UNSIGNED(Bj[position])
        if col < bound:
            break
        if mark[col] != row:
            mark[col] = row
            sums[col] = 0.0
            touched[n] = col
            n += 1
        sums[col] += weight * Bx[position]
    return n


def gather_row(sums: Any, touched: Any, n: int, out_j: Any, out_x: Any, nnz: int) -> int:
    """The accumulated row of :func:`scatter_add` written at ``nnz`` of ``(out_j, out_x)``, columns
    ascending, exact zeros left out; returns the new ``nnz``."""
    sort_small(touched, n)
    for a in range(n):
        col = touched[a]
        if sums[col] != 0.0:
            out_j[nnz] = col
            out_x[nnz] = sums[col]
            nnz += 1
    return nnz


def sort_small(values: Any, n: int) -> None:
    """Sort ``values[:n]`` in place: insertion sort for the few dozen column indices of a sparse
    row (numba's general sort costs ~0.7 us of set-up per call, more than the row's own work),
    the library sort past 32 entries. Plain Python without numba; kernels that call it compile
    it with themselves (:func:`jit_in_place`)."""
    if n > 32:
        values[:n].sort()
        return
    for a in range(1, n):
        key = values[a]
        b = a - 1
        while b >= 0 and values[b] > key:
            values[b + 1] = values[b]
            b -= 1
        values[b + 1] = key


def njit(function: Callable[..., Any], **options: Any) -> Any:
    """numba's dispatcher of ``function`` (compiled at its first call, cached on disk, without
    the GIL); ``options`` go to ``numba.njit`` (``inline="always"`` for small inner loops)."""
    import numba

    return numba.njit(cache=True, nogil=True, **options)(function)


def jit_in_place(namespace: dict[str, Any], names: tuple[str, ...], **options: Any) -> None:
    """Replace each ``namespace[name]`` by its numba dispatcher, once: under a lock, and a name
    already replaced is left alone (two threads' first calls must not wrap a dispatcher again,
    which raises). Kernels that call each other are replaced together, callees first: numba
    resolves a kernel's globals when it compiles it."""
    from numba.core.dispatcher import Dispatcher

    with _LOCK:
        for name in names:
            if not isinstance(namespace[name], Dispatcher):
                namespace[name] = njit(namespace[name], **options)


def in_place_once(namespace: dict[str, Any], names: tuple[str, ...],
                  before: tuple[Callable[[], None], ...] = ()) -> Callable[[], None]:
    """A module's ``ensure_compiled``: its kernels ``names`` replaced by numba dispatchers
    (:func:`jit_in_place`) at the first call, after ``before`` (the ``ensure_compiled`` of the
    modules whose kernels they call: numba resolves a kernel's globals when it compiles it);
    without numba, nothing (the kernels run as plain Python)."""
    done = [False]

    def ensure_compiled() -> None:
        if done[0] or not ENABLED:
            return
        for callee in before:
            callee()
        jit_in_place(namespace, names)
        done[0] = True

    return ensure_compiled


class LazyKernel:
    """A kernel's loop function, compiled by numba at the first call of this object, once: under
    a lock, as two threads' first calls would otherwise compile it twice. ``before`` runs first
    (a module's own in-place compilation of the helpers the loops call)."""

    def __init__(self, loops: Callable[..., Any], before: Callable[[], None] | None = None) -> None:
        self._loops = loops
        self._before = before
        self._kernel: Any = None
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        """The dispatcher."""
        if self._kernel is None:  # checked again under the lock
            if self._before is not None:
                self._before()
            with self._lock:
                if self._kernel is None:
                    self._kernel = njit(self._loops)
        return self._kernel


def compile_sparse_helpers() -> None:
    """Replace :func:`sort_small`, :func:`scatter_add` and :func:`gather_row` here by their numba
    dispatchers (callees first), before a kernel that calls them compiles; a kernel module then
    reads them from this module (``jit.scatter_add``) after this call."""
    jit_in_place(globals(), ("sort_small", "scatter_add", "gather_row"), inline="always")  # in the hot loops
