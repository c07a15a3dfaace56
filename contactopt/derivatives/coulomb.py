"""Derivative of a :class:`~contactopt.programs.coulomb.CoulombProgram`'s solution with respect to
its data ``(W, q, mu)``, by the implicit function theorem on the Alart-Curnier function.

The exact Coulomb problem is the optimality condition of no convex program, but its solutions
are the zeros of the Alart-Curnier function (Alart & Curnier, "A mixed formulation for
frictional contact problems prone to Newton like solution methods", CMAME 92, 1991), ``Phi(r)
= r - g(z)``, ``z_c = r_c - rho_c u_c``, ``u = W r + q``, with ``g`` the piecewise smooth map of
:mod:`contactopt.solvers.coulomb.alart_curnier` (whose ``alart_curnier`` gives ``Phi`` and the blocks
``G_c`` of an element of its generalized Jacobian, reused here). Differentiating
``Phi(r; W, q, mu) = 0`` (``G = dg/dz``, ``g_mu = dg/dmu``) ::

    J dr = -diag(rho) G (dW r + dq) + g_mu dmu,      J = (I - G) + diag(rho) G W,
    du = dW r + W dr + dq,

``g_mu`` nonzero only on a sliding contact's tangent rows: ``g_T = mu g_N z_T / ||z_T||``, so
``dg_T / dmu = r_N t`` (``g = r`` at a solution, ``t = z_T / ||z_T||``). For the reverse
product of ``<gr, r> + <gu, u>``, with ``a = J^-T (gr + W' gu)`` and ``w = gu - diag(rho) G' a``
::

    grad_q = w,     grad_W = w r'  (W need not be symmetric: every entry),     grad_mu_c = a_cT . (r_cN t_c).

``g`` is differentiable at ``z`` except on the boundaries of its pieces: ``z_N = 0`` and
``||z_T|| = mu z_N``. At a solution these are exactly the points where strict complementarity
is lost, and they do not depend on ``rho``: ``z_cN = 0`` means ``r_cN = u_cN = 0`` (``"tip"``
when also ``u_cT = 0``, ``"take_off"`` for a contact that slides with no normal impulse), and
``||z_cT|| = mu_c z_cN`` with ``r_cN > 0`` means ``u_cT = 0`` with ``||r_cT|| = mu_c r_cN`` (a
sticking contact at the edge of its cone, ``"stick_slip"``). Elsewhere ``Phi`` is continuously
differentiable near the solution, and where ``J`` is nonsingular the implicit function theorem
gives the solution map's derivative exactly; since every ``rho > 0`` has the same zeros, the
derivative is the same for every ``rho`` (``rho`` is the solver's ``local_scaling`` unless
given). At the boundary points ``Phi`` is semismooth and Clarke's generalized Jacobian holds the
Jacobians of the pieces that meet there (Clarke, *Optimization and Nonsmooth Analysis*, 1983,
§2.6; the implicit function theorem for such ``Phi``: §7.1), each the one-sided derivative of
the solution along the directions that stay in its piece; ``branch`` picks one, as for the
conic programs (:mod:`.projection`):

* ``"active"``: the contact stays closed and sticks (``G_c = I``); a ``take_off`` contact stays
  closed and slides (the slide piece at ``z_N = 0^+``: ``G_NN = 1``, ``G_TN = mu t``, ``G_TT = 0``);
* ``"inactive"``: a ``tip`` or ``take_off`` contact opens (``G_c = 0``); a ``stick_slip`` contact
  slides (the slide piece at ``||z_T|| = mu z_N``: ``G_NN = 1``, ``G_TN = mu t``, ``G_TT = I - t t'``).

The boundary is detected with the unit-free per-contact scale ``rho0_c = 1 / max diag W_cc``
(:func:`~contactopt.programs.coulomb.local_scaling`): a pair (``r_cN``, ``rho0_c u_cN``) or
(``mu_c r_cN - ||r_cT||``, ``rho0_c ||u_cT||``) with both members within ``tol`` of the largest
``|r|``, ``rho0 |u|`` of the program. A singular ``J`` (impulses not unique: a box resting on
four corners) gives the minimum-norm derivative (:mod:`.linear`). Its velocities ``du`` are the
unique ones along the changes a step's data make (``dW``, ``dq`` in ``W``'s range, one ``mu`` for
the redundant contacts); a change that lifts the redundancy (different ``dmu`` on the four
corners) selects one of the many solutions, and ``du`` then depends on which. ``J`` is
assembled by :class:`~contactopt.solvers.coulomb.alart_curnier.BlockPattern` and factored once per
:class:`CoulombDerivative`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import OptionError, ShapeError
from contactopt.derivatives.conic import (
    NondifferentiableWarning,
    _matrix_product,
    _on_pattern,
    _pattern,
    _vector,
)
from contactopt.derivatives.linear import LinearSolve, NotDifferentiableError
from contactopt.derivatives.projection import BRANCHES, DegeneratePoint
from contactopt.programs.conic import DENSE_PRODUCT_ENTRIES
from contactopt.programs.coulomb import CoulombProgram, local_scaling
from contactopt.programs.solution import Solution, Status
from contactopt.solvers.coulomb.alart_curnier import BlockPattern, alart_curnier

FloatArray = NDArray[np.float64]

__all__ = ["COULOMB_DEGENERACIES", "CoulombDerivative", "CoulombGradient", "CoulombTangent"]

#: The kinds of boundary point a contact of a Coulomb solution can sit on (module docstring).
COULOMB_DEGENERACIES = ("tip", "take_off", "stick_slip")


@dataclass(frozen=True)
class CoulombTangent:
    """A JVP's answer: ``dr`` (the impulses, m) and ``du`` (the velocities ``W r + q``, m)."""

    r: FloatArray
    u: FloatArray


@dataclass(frozen=True)
class CoulombGradient:
    """A VJP's answer: the gradients with respect to ``W`` (dense (m, m), or CSC on ``W``'s
    sparsity pattern, as :class:`~contactopt.derivatives.ConicGradient`), ``q`` (m,) and
    ``mu`` (contacts,)."""

    W: Any
    q: FloatArray
    mu: FloatArray


class CoulombDerivative:
    """The derivative of a Coulomb problem's solution with respect to ``(W, q, mu)`` (module
    docstring), built once from ``(program, solution)``.

    Args:
        program: the Coulomb problem.
        solution: its solution, judged optimal by contactopt (the impulses ``r`` in ``x``).
        branch: the one-sided derivative at boundary points, ``"active"`` or ``"inactive"``.
        tol: relative size below which both members of a complementary pair count as zero.
        rho: the Alart-Curnier parameter (a positive number or one per contact; None: the
            solver's ``local_scaling``). The derivative does not depend on it.

    Attributes:
        degenerate: the contacts on a boundary, as :class:`DegeneratePoint` (``cone``: the
            contact, ``rows``: its rows, ``kind``: one of :data:`COULOMB_DEGENERACIES`, ``branch``).
        rank_deficient: True when ``J`` is singular and the minimum-norm derivative is used.
    """

    def __init__(self, program: CoulombProgram, solution: Solution, branch: str = "active", tol: float = 1e-8,
                 rho: ArrayLike | None = None) -> None:
        if solution.status is not Status.OPTIMAL:
            raise NotDifferentiableError(f"derivatives: the solution's status is {solution.status.value!r}; "
                                         "only a solution contactopt judged optimal is differentiated")
        if branch not in BRANCHES:
            raise OptionError(f"derivatives: branch must be one of {BRANCHES}, got {branch!r}")
        self.program, self.branch, dim = program, branch, program.dim
        self.r = _vector(solution.x, program.m, "solution.x")
        self.u = program.velocity(self.r)
        self.rho = _rho(program, rho)
        R, U = self.r.reshape(-1, dim), self.u.reshape(-1, dim)
        z = R - self.rho[:, None] * U
        _, G = alart_curnier(self.r, self.u, program.mu, self.rho, dim)
        self.degenerate = _boundary_points(program, R, U, tol, branch)
        for point in self.degenerate:
            G[point.cone] = _one_sided_block(point.kind, branch, z[point.cone], float(program.mu[point.cone]))
        self._G = G
        self._mu_rows = _mu_derivative(G, R, z)
        if self.degenerate:
            first = self.degenerate[0]
            warnings.warn(f"derivatives: strict complementarity is lost at {len(self.degenerate)} contact(s) "
                          f"(first: contact {first.cone}, {first.kind}); the {branch!r} one-sided derivative is "
                          "used (CoulombDerivative.degenerate lists them)", NondifferentiableWarning, stacklevel=2)
        self._W = program.W.tocsr()
        jacobian = BlockPattern(self._W, dim).jacobian(G, self.rho)
        self._lu = LinearSolve(jacobian, "the Alart-Curnier function's Jacobian")
        self.rank_deficient = self._lu.rank_deficient

    def _scaled_G(self, vector: FloatArray) -> FloatArray:
        """``diag(rho) G vector``."""
        dim = self.program.dim
        return (self.rho[:, None] * np.einsum("cij,cj->ci", self._G, vector.reshape(-1, dim))).reshape(-1)

    def _scaled_G_T(self, vector: FloatArray) -> FloatArray:
        """``G' diag(rho) vector``."""
        dim = self.program.dim
        return np.einsum("cji,cj->ci", self._G, self.rho[:, None] * vector.reshape(-1, dim)).reshape(-1)

    def jvp(self, dW: Any = None, dq: ArrayLike | None = None, dmu: ArrayLike | None = None) -> CoulombTangent:
        """``(dr, du)`` for the data perturbation ``(dW, dq, dmu)`` (None: zero; ``dW`` a dense
        array or a scipy sparse matrix)."""
        program = self.program
        m = program.m
        moved = _matrix_product(dW, self.r, (m, m), "dW") + _vector(dq, m, "dq")
        dmu_v = _vector(dmu, program.contacts, "dmu")
        rhs = -self._scaled_G(moved) + (self._mu_rows * dmu_v[:, None]).reshape(-1)
        dr = self._lu.solve(rhs)
        return CoulombTangent(dr, moved + np.asarray(self._W @ dr))

    def vjp(self, gr: ArrayLike | None = None, gu: ArrayLike | None = None,
            dense: bool | None = None) -> CoulombGradient:
        """The gradient with respect to ``(W, q, mu)`` of ``<gr, r> + <gu, u>``; ``dense`` as
        :meth:`ConicDerivative.vjp` (None: dense for at most ``DENSE_PRODUCT_ENTRIES`` entries)."""
        program = self.program
        m, dim = program.m, program.dim
        gu_v = _vector(gu, m, "gu")
        a = self._lu.solve(_vector(gr, m, "gr") + np.asarray(self._W.T @ gu_v), transpose=True)
        w = gu_v - self._scaled_G_T(a)
        grad_mu = np.einsum("cj,cj->c", a.reshape(-1, dim), self._mu_rows)
        W = program.W
        if dense if dense is not None else m * m <= DENSE_PRODUCT_ENTRIES:
            grad_W: Any = np.outer(w, self.r)
        else:
            rows, cols = _pattern(W)
            grad_W = _on_pattern(W, w[rows] * self.r[cols])
        return CoulombGradient(grad_W, w, grad_mu)


def _rho(program: CoulombProgram, rho: ArrayLike | None) -> FloatArray:
    if rho is None:
        return local_scaling(program)
    try:
        values = np.broadcast_to(np.asarray(rho, dtype=np.float64), (program.contacts,)).copy()
    except ValueError:
        raise ShapeError(f"derivatives: rho must be one number or {program.contacts} (one per contact), "
                         f"got shape {np.shape(rho)}") from None
    if not (np.all(np.isfinite(values)) and np.all(values > 0)):
        raise OptionError("derivatives: rho must be positive and finite")
    return values


def _boundary_points(program: CoulombProgram, R: FloatArray, U: FloatArray, tol: float,
                     branch: str) -> tuple[DegeneratePoint, ...]:
    """The contacts on a boundary of ``g``'s pieces (module docstring), judged with ``rho0``."""
    scaled = local_scaling(program)[:, None] * U
    threshold = tol * max(float(np.abs(R).max(initial=0.0)), float(np.abs(scaled).max(initial=0.0)))
    slip = np.linalg.norm(scaled[:, 1:], axis=1)
    normal_tie = (np.abs(R[:, 0]) <= threshold) & (np.abs(scaled[:, 0]) <= threshold)
    margin = program.mu * R[:, 0] - np.linalg.norm(R[:, 1:], axis=1)
    edge_tie = (R[:, 0] > threshold) & (program.mu > 0) & (np.abs(margin) <= threshold) & (slip <= threshold)
    dim = program.dim
    points = []
    for c in np.flatnonzero(normal_tie | edge_tie):
        kind = "stick_slip" if edge_tie[c] else ("tip" if slip[c] <= threshold else "take_off")
        points.append(DegeneratePoint(int(c), (int(c) * dim, (int(c) + 1) * dim), kind, branch))
    return tuple(points)


def _one_sided_block(kind: str, branch: str, z: FloatArray, mu: float) -> FloatArray:
    """``G_c`` of the piece ``branch`` picks at a boundary point (module docstring): the stick,
    take-off or slide formula of :mod:`contactopt.solvers.coulomb.alart_curnier` at the boundary."""
    dim = z.shape[0]
    if branch == "active" and kind != "take_off":
        return np.eye(dim)  # closed and sticking
    if branch == "inactive" and kind != "stick_slip":
        return np.zeros((dim, dim))  # open
    block = np.zeros((dim, dim))
    block[0, 0] = 1.0
    norm = float(np.linalg.norm(z[1:]))
    if norm > 0.0:
        t = z[1:] / norm
        block[1:, 0] = mu * t
        if kind == "stick_slip":  # ratio s / ||z_T|| = 1 at the cone's edge; 0 at z_N = 0+
            block[1:, 1:] = np.eye(dim - 1) - np.outer(t, t)
    return block


def _mu_derivative(G: FloatArray, R: FloatArray, z: FloatArray) -> FloatArray:
    """(contacts, dim) ``dg_c / dmu_c``: ``(0, r_N t)`` on a sliding contact (``G_NN = 1`` and
    ``G_TT != I``), zero on the others (module docstring)."""
    dim = R.shape[1]
    sliding = (G[:, 0, 0] == 1.0) & ~np.all(G[:, 1:, 1:] == np.eye(dim - 1), axis=(1, 2))
    norm = np.linalg.norm(z[:, 1:], axis=1)
    rows = np.zeros_like(R)
    moving = sliding & (norm > 0.0)
    rows[moving, 1:] = (R[moving, 0] / norm[moving])[:, None] * z[moving, 1:]
    return rows
