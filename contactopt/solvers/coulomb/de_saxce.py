"""Coulomb's law solved exactly as a sequence of convex programs: the fixed point on De Saxcé's
term, shared by :func:`~contactopt.solvers.coulomb.fclib_solve.solve_coulomb` (FCLIB files) and
the ``fixed_point`` solver (:mod:`contactopt.solvers.coulomb.fixed_point`).

**Coulomb's law**: the fixed point on De Saxcé's term of Acary, Cadoux,
Lemaréchal & Malick, "A formulation of the linear discrete Coulomb friction problem via convex
optimization", ZAMM 91 (2011). With ``s_c`` fixed, the CCP of the problem with ``q_cN`` (local)
or ``w_cN`` (global) raised by ``s_c`` is convex; its solution solves FCLIB's problem when
``s_c = mu_c ||u_cT||`` for the ``u`` it produces. Iterate ``s <- mu ||u_T||`` from ``s = 0`` (the
plain CCP) until FCLIB's error is below ``tol``; each iteration is one solve by any cone solver.
The iteration converges linearly for small ``mu`` (a contraction; for one contact with
``W = I/m`` the factor is ``mu^2 / (1 + mu^2)``), not in general.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from contactopt.programs.solution import Status

__all__ = ["FixedPointRun", "de_saxce_fixed_point", "de_saxce_shift"]

FloatArray = NDArray[np.float64]


Answer = TypeVar("Answer")


@dataclass(frozen=True)
class FixedPointRun(Generic[Answer]):
    """What :func:`de_saxce_fixed_point` ends with: the answer that stopped it (or the one of
    smallest error when none did), its error, the iterations taken, the status of that
    answer's convex solve, and whether the stopping test passed."""

    answer: Answer
    error: float
    iterations: int
    status: Status
    converged: bool


def de_saxce_shift(u: FloatArray, mu: FloatArray, dim: int) -> FloatArray:
    """(contacts,) De Saxcé's term ``s_c = mu_c ||u_cT||`` of the local velocities ``u``."""
    return np.asarray(mu * np.linalg.norm(np.asarray(u).reshape(-1, dim)[:, 1:], axis=1), dtype=np.float64)


def de_saxce_fixed_point(convex_solve: Callable[[FloatArray], tuple[Answer, FloatArray, Status]],
                         judge: Callable[[Answer, int], tuple[float, bool]], mu: FloatArray, dim: int,
                         max_iterations: int, shift: FloatArray | None = None) -> FixedPointRun[Answer]:
    """The fixed point of the module docstring (its users there).

    ``convex_solve(s)`` solves the CCP whose normal velocities are raised by ``s`` and returns
    ``(answer, u, status)`` with ``u`` the local velocity of the problem *without* ``s``;
    ``judge(answer, iteration)`` returns ``(error, stop)``. Starting from ``shift`` (default 0:
    the plain CCP), ``s <- mu ||u_T||`` until ``stop`` or ``max_iterations`` solves."""
    s = np.zeros(mu.shape[0]) if shift is None else np.asarray(shift, dtype=np.float64)
    best: FixedPointRun[Answer] | None = None
    for iteration in range(1, max_iterations + 1):
        answer, u, status = convex_solve(s)
        error, stop = judge(answer, iteration)
        if stop:
            return FixedPointRun(answer, error, iteration, status, True)
        if best is None or error < best.error:
            best = FixedPointRun(answer, error, iteration, status, False)
        s = de_saxce_shift(u, mu, dim)
    assert best is not None
    return dataclasses.replace(best, iterations=max_iterations)
