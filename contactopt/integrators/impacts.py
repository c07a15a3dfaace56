"""Impact laws: the post-impact velocity of an impulsive collision (Tedrake 2022,
"Impulsive Collisions"; Tedrake 2020, "Rigid Contact with Event Detection").

Over the (instantaneous) collision ``M``, ``tau`` and ``J`` are constant, so integrating the
manipulator equation gives the impulse-momentum balance

    M (v+ - v-) = J^T Lambda,                                            (Tedrake 2022)

``Lambda`` the contact impulses stacked per contact normal first (``[n, t]`` rows, or ``[n]``
for a normal-only contact). Three laws, for the contacts taking part in the impact:

The system's bilateral rows ``H v+ = b`` (a pendulum's rod), if any, hold through the impact
with free impulses in every law.

* **frictionless** (Newton restitution, ``n v+ = -e n v-``): with ``N`` the normal rows,

      v+ = [I - M^{-1} N^T [N M^{-1} N^T]^# (1 + E) N] v-,   E = diag(e_i),

  the reference's projection formula ``[I - (1+e) M^{-1} n^T [n M^{-1} n^T]^# n] v-`` for one
  contact and its stacked form for several (:func:`newton_impact`).
* **infinite friction** (sticking, ``J v+ = diag(-e, 0, 0) J v-``, :func:`sticking_impact`):
  solving ``J M^{-1} J^T Lambda = (D - I) J v-`` with ``D = blockdiag(diag(-e_i, 0, ...))``
  gives

      v+ = [I - M^{-1} J^T [J M^{-1} J^T]^# diag(1 + e, 1, 1) J] v-.

  The reference prints ``M^{-1} J^T diag(1+e, 1, 1) [J M^{-1} J^T]^# J``, with the diagonal
  *before* the pseudoinverse. Both orders agree whenever ``W = J M^{-1} J^T`` does not couple
  the normal and tangent rows (the spinning ball: ``W = diag(1/m, 5/(2m))``); when it does (a
  box corner, ``n M^{-1} t^T = -o_x o_z / I``) only the order above satisfies the reference's
  own condition ``J v+ = diag(-e, 0, 0) J v-`` (checked in tests/test_compliant_hybrid.py).
* **Coulomb friction** (the impulse restricted to the friction cone: "in general we have to
  solve an optimization", Tedrake 2022): the program of :func:`impact_program`,

      minimize    1/2 v+^T M v+                       (post-impact kinetic energy)
      over        v+, Lambda
      subject to  M v+ - J^T Lambda = M v-            (impulse-momentum balance)
                  n_i v+ = -e_i n_i v-                (Newton restitution, each impacting contact)
                  Lambda_i in K_mu_i = {|Lambda_t| <= mu_i Lambda_n}   (Coulomb cone)

  Among the impulses that obey Newton's law in the normal direction and Coulomb's cone, the
  friction impulse dissipates as much kinetic energy as it can: the maximum-dissipation
  principle (Stewart & Trinkle 1996) applied to the impulse. With ``mu = 0`` the program's
  only point is the frictionless law, with ``mu = inf`` (cone = half-space ``Lambda_n >= 0``)
  its minimizer makes ``t v+ = 0``: the sticking law. So one program covers the three laws,
  and the tests check that it reproduces both closed forms. (The normal rows are equalities on
  purpose: with ``n v+ >= -e n v-`` instead, minimizing the kinetic energy lets friction raise
  the normal impulse, and a sliding ball with ``e = 0`` would leave the ground; it is the
  dilation of the cone-complementarity relaxation.)

A contact whose Newton impulse would pull (multi-contact impacts, where some contacts should
separate) is removed from the impact set by :func:`select_impact_set` before the law is
applied; removed contacts get no impulse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt import solvers
from contactopt.core.errors import ContactoptError
from contactopt.programs import SOC, ConicProgram, Nonneg, Residuals, Zero
from contactopt.programs.conic import Cone, blocks_from_sizes

FloatArray = NDArray[np.float64]

__all__ = ["ImpactResult", "impact_program", "newton_impact", "reference_sticking_matrix", "select_impact_set",
           "solve_impact", "sticking_impact", "sticking_impact_matrix"]


@dataclass(frozen=True)
class ImpactResult:
    """The outcome of an impact law.

    Attributes:
        v_post: (nv,) post-impact velocity.
        impulses: (k, dim) impact impulses of the contacts taken in, normal first [N·s].
        law: ``"frictionless"``, ``"sticking"`` or ``"program"``.
        residuals: the program's residuals (NaN for the closed forms).
        iterations: solver iterations (0 for the closed forms).
    """

    v_post: FloatArray
    impulses: FloatArray
    law: str
    residuals: Residuals
    iterations: int = 0


_NO_RESIDUALS = Residuals(np.nan, np.nan, np.nan, np.nan)


def _rows(J: ArrayLike, dim: int) -> tuple[FloatArray, int]:
    """``J`` as a 2-D array and its number of contacts."""
    rows = np.atleast_2d(np.asarray(J, dtype=np.float64))
    if rows.shape[0] % dim:
        raise ContactoptError(f"impact: {rows.shape[0]} Jacobian rows are not a multiple of dim = {dim}")
    return rows, rows.shape[0] // dim


def _project(M: FloatArray, rows: FloatArray, v: FloatArray, target: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The impulse ``Lambda = [R M^{-1} R^T]^# (target - R v)`` that gives ``R v+ = target`` and
    ``v+ = v + M^{-1} R^T Lambda`` (the pseudoinverse form of Tedrake 2022's derivation)."""
    Mi_Rt = np.linalg.solve(M, rows.T)
    impulse = np.linalg.pinv(rows @ Mi_Rt) @ (target - rows @ v)
    return v + Mi_Rt @ impulse, impulse


def _bilateral(H: ArrayLike | None, b: ArrayLike | None, nv: int) -> tuple[FloatArray, FloatArray]:
    """The bilateral rows and targets (none if ``H`` is None)."""
    rows = np.zeros((0, nv)) if H is None else np.atleast_2d(np.asarray(H, dtype=np.float64)).reshape(-1, nv)
    target = np.zeros(rows.shape[0]) if b is None else np.asarray(b, dtype=np.float64).reshape(-1)
    return rows, target


def newton_impact(M: ArrayLike, N: ArrayLike, v_pre: ArrayLike, e: ArrayLike, H: ArrayLike | None = None,
                  b: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
    """Frictionless impact (Tedrake 2022, "Impulsive Collisions"):
    ``Lambda_n = -[N M^{-1} N^T]^# (1 + E) N v-``, ``v+ = v- + M^{-1} N^T Lambda_n``.

    ``N`` (k, nv) normal rows, ``e`` (k,) restitution coefficients. Bilateral rows ``H v+ = b``
    of the system (a pendulum's rod), if given, take part in the impact with free impulses:
    the stacked rows ``R = [N; H]`` reach ``R v+ = [-E N v-; b]``. Returns ``(v+, Lambda_n)``.
    """
    M = np.asarray(M, dtype=np.float64)
    N = np.atleast_2d(np.asarray(N, dtype=np.float64))
    v = np.asarray(v_pre, dtype=np.float64)
    e = np.broadcast_to(np.asarray(e, dtype=np.float64), (N.shape[0],))
    rows_h, target_h = _bilateral(H, b, M.shape[0])
    v_post, impulse = _project(M, np.vstack([N, rows_h]), v, np.concatenate([-e * (N @ v), target_h]))
    return v_post, impulse[:N.shape[0]]


def _sticking_gain(e: ArrayLike, k: int, dim: int) -> FloatArray:
    """``diag(1 + e_i, 1, ..., 1)`` per contact (normal first)."""
    gain = np.ones(k * dim)
    gain[::dim] = 1.0 + np.broadcast_to(np.asarray(e, dtype=np.float64), (k,))
    return gain


def sticking_impact_matrix(M: ArrayLike, J: ArrayLike, e: ArrayLike, dim: int) -> FloatArray:
    """``I - M^{-1} J^T [J M^{-1} J^T]^# diag(1 + e, 1, 1) J``: the infinite-friction impact
    map ``v+ = A v-`` with ``J v+ = diag(-e, 0, 0) J v-`` (see the module docstring for the
    order of the diagonal and the pseudoinverse)."""
    M = np.asarray(M, dtype=np.float64)
    rows, k = _rows(J, dim)
    Mi_Jt = np.linalg.solve(M, rows.T)
    gain = _sticking_gain(e, k, dim)
    return np.eye(M.shape[0]) - Mi_Jt @ np.linalg.pinv(rows @ Mi_Jt) @ (gain[:, None] * rows)


def reference_sticking_matrix(M: ArrayLike, J: ArrayLike, e: ArrayLike, dim: int) -> FloatArray:
    """The matrix as printed in Tedrake 2022: ``I - M^{-1} J^T diag(1+e, 1, 1) [J M^{-1} J^T]^# J``
    (for comparison only; equal to :func:`sticking_impact_matrix` when ``J M^{-1} J^T`` does
    not couple normal and tangent rows)."""
    M = np.asarray(M, dtype=np.float64)
    rows, k = _rows(J, dim)
    Mi_Jt = np.linalg.solve(M, rows.T)
    gain = _sticking_gain(e, k, dim)
    return np.eye(M.shape[0]) - (Mi_Jt * gain) @ np.linalg.pinv(rows @ Mi_Jt) @ rows


def sticking_impact(M: ArrayLike, J: ArrayLike, v_pre: ArrayLike, e: ArrayLike, dim: int,
                    H: ArrayLike | None = None, b: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
    """Infinite-friction impact: ``(v+, Lambda)`` with ``Lambda`` (k, dim) (Tedrake 2022):
    ``J v+ = diag(-e, 0, 0) J v-``; bilateral rows ``H v+ = b`` as in :func:`newton_impact`."""
    M = np.asarray(M, dtype=np.float64)
    rows, k = _rows(J, dim)
    v = np.asarray(v_pre, dtype=np.float64)
    rows_h, target_h = _bilateral(H, b, M.shape[0])
    target = (1.0 - _sticking_gain(e, k, dim)) * (rows @ v)  # diag(-e, 0, 0) J v-
    v_post, impulse = _project(M, np.vstack([rows, rows_h]), v, np.concatenate([target, target_h]))
    return v_post, impulse[:k * dim].reshape(k, dim)


def _cone_rows(mu: FloatArray, dim: int) -> tuple[list[FloatArray], list[Cone]]:
    """Per contact the rows ``G_i`` (dim columns) and cones with ``s_i = -G_i Lambda_i in K_i``:
    SOC ``(mu Lambda_n, Lambda_t)`` for ``0 < mu < inf``; ``Lambda_n >= 0`` with ``Lambda_t = 0``
    for ``mu = 0`` or free for ``mu = inf``; ``Lambda_n >= 0`` for a normal-only contact."""
    blocks: list[FloatArray] = []
    cones: list[Cone] = []
    for m in mu:
        if dim == 1 or np.isinf(m):
            G = np.zeros((1, dim))
            G[0, 0] = -1.0
            blocks.append(G)
            cones.append(Nonneg(1))
        elif m > 0:
            blocks.append(-np.diag([m, *([1.0] * (dim - 1))]))
            cones.append(SOC(dim))
        else:
            blocks.append(-np.eye(dim))
            cones += [Nonneg(1), Zero(dim - 1)]
    return blocks, cones


def impact_program(M: ArrayLike, J: ArrayLike, v_pre: ArrayLike, e: ArrayLike, mu: ArrayLike,
                   dim: int, H: ArrayLike | None = None, b: ArrayLike | None = None) -> ConicProgram:
    """The Coulomb impact program of the module docstring as a :class:`ConicProgram`.

    Variables ``x = [v+ (nv), Lambda (k dim), Lambda_H (nh)]``; rows ``momentum``
    (``M v+ - J^T Lambda - H^T Lambda_H = M v-``, Zero, nv), ``restitution`` (Zero, k),
    ``bilateral`` (``H v+ = b``, Zero, nh) and ``cone`` (per contact, see :func:`_cone_rows`).
    ``e`` and ``mu`` per contact (``mu`` may be 0 or inf); ``H``, ``b`` the system's bilateral
    rows (none by default).
    """
    M = np.asarray(M, dtype=np.float64)
    rows, k = _rows(J, dim)
    nv = M.shape[0]
    rows_h, target_h = _bilateral(H, b, nv)
    nh = rows_h.shape[0]
    v = np.asarray(v_pre, dtype=np.float64)
    e_arr = np.broadcast_to(np.asarray(e, dtype=np.float64), (k,))
    mu_arr = np.broadcast_to(np.asarray(mu, dtype=np.float64), (k,))
    N = rows[::dim]
    cone_blocks, cones = _cone_rows(mu_arr, dim)
    G = sp.block_diag([sp.csc_matrix(g) for g in cone_blocks], format="csc") if k else sp.csc_matrix((0, 0))
    A = sp.vstack([
        sp.hstack([sp.csc_matrix(M), sp.csc_matrix(-rows.T), sp.csc_matrix(-rows_h.T)]),
        sp.hstack([sp.csc_matrix(N), sp.csc_matrix((k, k * dim + nh))]),
        sp.hstack([sp.csc_matrix(rows_h), sp.csc_matrix((nh, k * dim + nh))]),
        sp.hstack([sp.csc_matrix((G.shape[0], nv)), G, sp.csc_matrix((G.shape[0], nh))]),
    ], format="csc")
    rhs = np.concatenate([M @ v, -e_arr * (N @ v), target_h, np.zeros(G.shape[0])])
    P = sp.csc_matrix(sp.block_diag([sp.csc_matrix(M), sp.csc_matrix((k * dim + nh, k * dim + nh))]))
    return ConicProgram(
        P=P, c=np.zeros(nv + k * dim + nh), A=A, b=rhs, cones=(Zero(nv), Zero(k), Zero(nh), *cones),
        variables=blocks_from_sizes([("v_plus", nv, 1), ("impulse", k * dim, dim), ("bilateral", nh, 1)]),
        constraints=blocks_from_sizes([("momentum", nv, 1), ("restitution", k, 1), ("bilateral", nh, 1),
                                       ("cone", G.shape[0], 1)]),
        metadata={"formulation": "impact", "reference": "000 Impulsive Collisions", "dim": dim,
                  "restitution": e_arr.tolist(), "mu": [float(x) if np.isfinite(x) else "inf" for x in mu_arr]})


def solve_impact(M: ArrayLike, J: ArrayLike, v_pre: ArrayLike, e: ArrayLike, mu: ArrayLike, dim: int,
                 law: str = "auto", solver: str = "clarabel", solver_options: Mapping[str, Any] | None = None,
                 H: ArrayLike | None = None, b: ArrayLike | None = None) -> ImpactResult:
    """Apply the impact law to the contacts whose rows are ``J`` (k contacts, ``dim`` rows each).

    ``law``: ``"auto"`` uses the closed forms when every contact is frictionless (``mu = 0`` or
    a normal-only frame) or every contact has ``mu = inf``, and the program otherwise;
    ``"program"`` always solves :func:`impact_program` with ``solver``. A program whose status
    is not usable raises :class:`ContactoptError`. ``H v+ = b``: the system's bilateral rows,
    kept through the impact. With the program, ``v+`` is recomputed from the impulses so that
    the momentum balance holds exactly.
    """
    M = np.asarray(M, dtype=np.float64)
    rows, k = _rows(J, dim)
    v = np.asarray(v_pre, dtype=np.float64)
    mu_arr = np.broadcast_to(np.asarray(mu, dtype=np.float64), (k,))
    e_arr = np.broadcast_to(np.asarray(e, dtype=np.float64), (k,))
    if k == 0:
        return ImpactResult(v.copy(), np.zeros((0, dim)), "none", _NO_RESIDUALS)
    if law == "auto" and (dim == 1 or np.all(mu_arr == 0.0)):
        v_post, normal = newton_impact(M, rows[::dim], v, e_arr, H, b)
        impulses = np.zeros((k, dim))
        impulses[:, 0] = normal
        return ImpactResult(v_post, impulses, "frictionless", _NO_RESIDUALS)
    if law == "auto" and np.all(np.isinf(mu_arr)):
        v_post, impulses = sticking_impact(M, rows, v, e_arr, dim, H, b)
        return ImpactResult(v_post, impulses, "sticking", _NO_RESIDUALS)
    program = impact_program(M, rows, v, e_arr, mu_arr, dim, H, b)
    solution = solvers.solve(program, solver, solver_options)
    if not solution.status.usable:
        raise ContactoptError(f"impact program: {solution.status} ({solution.message})")
    impulse = program.variable(solution.x, "impulse")
    generalized = rows.T @ impulse
    if program.variable(solution.x, "bilateral").size:
        rows_h, _ = _bilateral(H, b, M.shape[0])
        generalized = generalized + rows_h.T @ program.variable(solution.x, "bilateral")
    v_post = v + np.linalg.solve(M, generalized)
    return ImpactResult(v_post, impulse.reshape(k, dim), "program", solution.residuals, solution.iterations)


def select_impact_set(M: ArrayLike, N: ArrayLike, v_pre: ArrayLike, e: ArrayLike, tol: float = 1e-12,
                      H: ArrayLike | None = None, b: ArrayLike | None = None) -> NDArray[np.bool_]:
    """Which of ``k`` candidate contacts (normal rows ``N``) take part in a frictionless Newton
    impact: starting from all of them, the contact with the most negative (pulling) normal
    impulse of :func:`newton_impact` is dropped until none pulls (an active-set heuristic for
    simultaneous impacts; one contact is always kept)."""
    N = np.atleast_2d(np.asarray(N, dtype=np.float64))
    e_arr = np.broadcast_to(np.asarray(e, dtype=np.float64), (N.shape[0],))
    keep = np.ones(N.shape[0], dtype=bool)
    while keep.sum() > 1:
        index = np.flatnonzero(keep)
        _, impulse = newton_impact(M, N[index], v_pre, e_arr[index], H, b)
        scale = tol * max(1.0, float(np.abs(impulse).max()))
        worst = int(np.argmin(impulse))
        if impulse[worst] >= -scale:
            break
        keep[index[worst]] = False
    return keep
