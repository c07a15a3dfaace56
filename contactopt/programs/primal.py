"""The unconstrained convex primal of SAP (Castro, Permenter & Han, "An Unconstrained Convex
Formulation of Compliant Contact", IEEE T-RO 2022, arXiv 2110.10107) and its conic form.

A step is the unconstrained program over the next velocity ``v`` (labels (S..) are ours)::

    (S1)  minimize  l(v) = 1/2 ||v - v*||_A^2 + l_R(J v),        A > 0 (the mass matrix),
    (S2)  l_R(v_c) = max_{gamma in F} -gamma^T (v_c - v_hat) - 1/2 gamma^T R gamma
                   = 1/2 gamma(v_c)^T R gamma(v_c),

with ``R > 0`` diagonal, ``F`` a product of friction cones ``{||g_t|| <= mu g_n}``, half
lines ``g >= 0`` and free rows, ``gamma(v_c)`` the projection (S3) of
``y = -R^{-1} (v_c - v_hat)`` onto ``F`` in the ``R``-norm (:mod:`.cone_projection`), and

    (S5)  grad l(v) = A (v - v*) - J^T gamma,        hess l(v) = A + J^T G J.

Its optimum satisfies the momentum balance ``A (v - v*) = J^T gamma`` with ``gamma`` the
impulses. Its Lagrangian dual is the regularized dual of Todorov's and MuJoCo's formulation,
``min_{gamma in F} 1/2 gamma^T (J A^{-1} J^T + R) gamma + gamma^T (J v* - v_hat)``.

**Conic form** (:meth:`PrimalProgram.to_conic`; ``l_R`` written with its minimizing
multiplier, by Lagrangian duality of the max in (S2))::

    (S6)  minimize   1/2 (v - v*)^T A (v - v*) + 1/2 sigma^T R sigma
          subject to D (J v + R sigma - v_hat) in K

over ``x = [v, sigma]``: ``K = F*`` written in Clarabel's cones with the positive row scale
``D`` (``D = (1, mu, .., mu)`` on a friction cone, whose dual ``{g_n >= mu ||g_t||}`` becomes
the standard SOC; Zero rows for free ``F``). In :class:`~contactopt.programs.ConicProgram`
terms ``P = diag(A, R)``, ``c = [-A v*, 0]``, ``A_conic = -D [J, R]``, ``b = -D v_hat``. At
a solution ``sigma = gamma`` and the row duals are ``y = D^{-1} gamma``; conversely for
``v`` the pair ``x = [v, gamma(v)]``, ``y = D^{-1} gamma(v)`` is primal feasible and
complementary exactly, and its stationarity residual is ``grad l(v)``: the conic residuals
judge a primal solver's answer like any other. :meth:`PrimalProgram.from_conic` reads the
primal back from a conic program of this shape (e.g. one loaded from a file).

**Box rows** (dry friction, MuJoCo's ``frictionloss``; the last ``nb`` rows, ``F = [-f, f]``,
``f = box``): ``l_R`` of such a row is Huber's function of ``x = J_i v - v_hat_i``, the
infimal convolution ``min_sigma 1/2 R sigma^2 + f |x + R sigma|`` (Todorov 2014; MuJoCo
documentation, "Computation: friction loss"). Its conic form adds a slack ``t_i >= |x + R sigma|``
per box row, cost ``f t``, and two ``Nonneg`` rows ``t -+ (J v + R sigma - v_hat) >= 0``
(duals ``y_up, y_lo``): stationarity in ``t`` and ``sigma`` gives ``y_up + y_lo = f`` and
``sigma = y_lo - y_up``, so ``|sigma| <= f`` with ``sigma = gamma`` at the optimum. Such a
program keeps its primal (:class:`PrimalConicProgram`); a file holds only its conic form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ShapeError
from contactopt.programs.cone_projection import ConeLayout, cone_layout, project, regularizer_cost, with_box_rows
from contactopt.programs.conic import Block, Cone, ConicProgram, Nonneg
from contactopt.programs.csc import csc, csr, csr_to_csc, mark_symmetric, symmetric_by_construction, to_csc, to_csr

FloatArray = NDArray[np.float64]

__all__ = ["PrimalConicProgram", "PrimalProgram", "primal_of", "why_not_primal"]

VELOCITY, MULTIPLIER, BOX_SLACK = "v_next", "sigma", "friction_loss_slack"


@dataclass(frozen=True)
class PrimalProgram:
    """The unconstrained primal (S1) of one step.

    Attributes:
        A: (nv, nv) symmetric positive definite, CSC.
        v_star: (nv,) the velocity without constraint impulses (``v*``).
        J: (m, nv) constraint rows, CSR (``v_c = J v``).
        R: (m,) positive regularization.
        v_hat: (m,) the velocity each row tends to (``y = -R^{-1} (J v - v_hat)``).
        scale: (m,) positive row scale ``D`` of the conic form.
        cones: ``K`` of the conic form, in row order (fixes ``F``, see module docstring), for
            every row but the box rows.
        constraints: named blocks of the rows (carried to the conic form).
        metadata: carried to the conic form.
        v_guess: optional (nv,) starting point for a primal solver without a warm start: the
            velocity at the start of the step, i.e. the previous step's answer (SAP's and
            Drake's initial guess); ``v*`` when None.
        box: (nb,) bounds ``f >= 0`` of the last ``nb`` rows, box rows ``|gamma_i| <= f_i``
            (dry friction; module docstring); none by default.
    """

    A: sp.csc_matrix
    v_star: FloatArray
    J: sp.csr_matrix
    R: FloatArray
    v_hat: FloatArray
    scale: FloatArray
    cones: tuple[Cone, ...]
    constraints: tuple[Block, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    v_guess: FloatArray | None = None
    box: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        A = to_csc(self.A)
        v_star = np.array(self.v_star, dtype=np.float64).reshape(-1)
        nv = v_star.shape[0]
        if A.shape != (nv, nv):
            raise ShapeError(f"PrimalProgram.A: expected shape ({nv}, {nv}), got {A.shape}")
        J = to_csr(self.J) if self.J.shape[0] else csr(np.zeros(0), np.zeros(0), np.zeros(nv and 1), (0, nv))
        m = J.shape[0]
        if J.shape[1] != nv:
            raise ShapeError(f"PrimalProgram.J: expected {nv} columns, got {J.shape[1]}")
        arrays = {}
        for name in ("R", "v_hat", "scale"):
            value = np.array(getattr(self, name), dtype=np.float64).reshape(-1)
            if value.shape != (m,):
                raise ShapeError(f"PrimalProgram.{name}: expected {m} entries, got {value.shape[0]}")
            arrays[name] = value
        for name, values in (("A", A.data), ("v_star", v_star), ("J", J.data), *arrays.items()):
            if not np.isfinite(values).all():
                raise ShapeError(f"PrimalProgram.{name}: contains NaN or infinite entries")
        if self.v_guess is not None:
            guess = np.array(self.v_guess, dtype=np.float64).reshape(-1)
            if guess.shape != (nv,) or not np.all(np.isfinite(guess)):
                raise ShapeError(f"PrimalProgram.v_guess: expected {nv} finite entries")
            object.__setattr__(self, "v_guess", guess)
        for name in ("R", "scale"):
            if m and arrays[name].min() <= 0:
                raise ShapeError(f"PrimalProgram.{name}: must be positive, smallest is {arrays[name].min():g}")
        box = np.array(self.box, dtype=np.float64).reshape(-1)
        if not (np.all(np.isfinite(box)) and np.all(box >= 0)):
            raise ShapeError("PrimalProgram.box: bounds must be finite and >= 0")
        object.__setattr__(self, "box", box)
        if sum(cone.dim for cone in self.cones) + box.shape[0] != m:
            raise ShapeError(f"PrimalProgram.cones: dims sum to {sum(k.dim for k in self.cones)} with "
                             f"{box.shape[0]} box rows, J has {m} rows")
        for name, item in (("A", A), ("v_star", v_star), ("J", J), ("cones", tuple(self.cones)),
                           ("constraints", tuple(self.constraints)), ("metadata", dict(self.metadata)),
                           *arrays.items()):
            object.__setattr__(self, name, item)

    @property
    def nv(self) -> int:
        return int(self.v_star.shape[0])

    @property
    def m(self) -> int:
        return int(self.R.shape[0])

    @cached_property
    def c(self) -> FloatArray:
        """The linear cost ``-A v*`` (the cost is ``1/2 v'Av + c'v + l_R`` up to a constant)."""
        return np.asarray(-(self.A @ self.v_star))

    @cached_property
    def layout(self) -> ConeLayout | str:
        """The rows grouped for the projection, or why it does not apply (an SOC block with
        unequal tangential ``scale`` is no friction cone; the conic form is still fine for
        other solvers)."""
        cones = self.m - self.box.shape[0]
        layout = cone_layout(self.cones, self.scale[:cones], self.R[:cones])
        return layout if isinstance(layout, str) else with_box_rows(layout, self.box)

    @property
    def cone_layout(self) -> ConeLayout:
        if isinstance(self.layout, str):
            raise ShapeError(f"PrimalProgram: {self.layout}")
        return self.layout

    def impulses(self, v: ArrayLike) -> FloatArray:
        """``gamma(J v)`` (S3): the constraint impulses that go with ``v``."""
        y = (self.v_hat - self.J @ np.asarray(v, dtype=np.float64)) / self.R
        return project(self.cone_layout, y, self.R, hessian=False)[0]

    def cost(self, v: ArrayLike) -> float:
        """``l(v) - 1/2 v*'A v*`` (S1): the value the conic form's objective takes at its optimum."""
        vv = np.asarray(v, dtype=np.float64)
        y = (self.v_hat - self.J @ vv) / self.R
        gamma = project(self.cone_layout, y, self.R, hessian=False)[0]
        return float(0.5 * vv @ (self.A @ vv) + self.c @ vv) + regularizer_cost(self.cone_layout, y, gamma, self.R)

    def gradient(self, v: ArrayLike) -> FloatArray:
        """``A (v - v*) - J^T gamma(J v)`` (S5)."""
        vv = np.asarray(v, dtype=np.float64)
        return np.asarray(self.A @ vv + self.c - self.J.T @ self.impulses(vv))

    def dual(self, gamma: ArrayLike) -> FloatArray:
        """Row duals of the conic form: ``y = D^{-1} gamma`` on the cone rows, then
        ``y_up = (f - gamma) / 2`` and ``y_lo = (f + gamma) / 2`` of the box rows."""
        g = np.asarray(gamma, dtype=np.float64)
        nb = self.box.shape[0]
        if not nb:
            return g / self.scale
        cones, box = g[:self.m - nb], g[self.m - nb:]
        return np.concatenate([cones / self.scale[:self.m - nb], 0.5 * (self.box - box), 0.5 * (self.box + box)])

    def conic_x(self, v: ArrayLike, gamma: ArrayLike) -> FloatArray:
        """The conic form's ``x = [v, sigma = gamma, t]`` (``t = |J v + R gamma - v_hat|`` on box rows)."""
        vv, g = np.asarray(v, dtype=np.float64), np.asarray(gamma, dtype=np.float64)
        nb = self.box.shape[0]
        if not nb:
            return np.concatenate([vv, g])
        rows = slice(self.m - nb, self.m)
        slack = np.abs(self.J[rows] @ vv + self.R[rows] * g[rows] - self.v_hat[rows])
        return np.concatenate([vv, g, slack])

    def to_conic(self) -> PrimalConicProgram:
        """The conic form (S6), which keeps this program for primal solvers. ``P`` and ``A``
        are assembled as CSC arrays directly (scipy's block constructors cost milliseconds
        of checks per step on a box with six unknowns)."""
        nv, m = self.nv, self.m
        diagonal = np.arange(1, m + 1)
        P = csc(np.concatenate([self.A.data, self.R]), np.concatenate([self.A.indices, nv + np.arange(m)]),
                np.concatenate([self.A.indptr, self.A.nnz + diagonal]), (nv + m, nv + m))
        if symmetric_by_construction(self.A):  # diag(A, R), R > 0 (checked): convex as A is
            mark_symmetric(P)
        J = self.J
        DJ = csr_to_csc(csr(J.data * np.repeat(self.scale, np.diff(J.indptr)), J.indices, J.indptr, J.shape))
        A_conic = csc(-np.concatenate([DJ.data, self.scale * self.R]), np.concatenate([DJ.indices, np.arange(m)]),
                      np.concatenate([DJ.indptr, DJ.nnz + diagonal]), (m, nv + m))
        if self.box.shape[0]:
            return self._box_conic(P, A_conic)
        return PrimalConicProgram(
            P=P, c=np.concatenate([self.c, np.zeros(m)]), A=A_conic, b=-self.scale * self.v_hat,
            cones=self.cones, variables=(Block(VELOCITY, 0, nv), Block(MULTIPLIER, nv, nv + m)),
            constraints=self.constraints, metadata={**self.metadata, "program": "sap_primal"},
            primal=self)

    def _box_conic(self, P: sp.csc_matrix, A_rows: sp.csc_matrix) -> PrimalConicProgram:
        """The conic form with box rows (module docstring): ``x = [v, sigma, t]``; the box rows'
        ``-[J, R] x <= -v_hat`` of (S6) become ``t -+ (J v + R sigma - v_hat) >= 0``. Assembled
        as canonical CSC arrays (scipy's block constructors were 2.6 ms of a 3.9 ms step)."""
        nv, m, nb = self.nv, self.m, self.box.shape[0]
        cones_m, columns = m - nb, nv + m + nb
        # entries of A_rows by (row, column); the box rows' [J, R] = -A_rows[cones_m:] go up
        # as they are (upper) and again negated nb rows below (lower), each with -1 on its slack
        row = A_rows.indices.astype(np.int64)
        column = np.repeat(np.arange(nv + m), np.diff(A_rows.indptr))
        box = row >= cones_m
        slack_column = nv + m + np.arange(nb)
        rows = np.concatenate([row, row[box] + nb, cones_m + np.arange(nb), m + np.arange(nb)])
        cols = np.concatenate([column, column[box], slack_column, slack_column])
        data = np.concatenate([np.where(box, -A_rows.data, A_rows.data), A_rows.data[box], -np.ones(2 * nb)])
        order = np.lexsort((rows, cols))  # column-major, rows sorted within a column: canonical CSC
        indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=columns))])
        A = csc(data[order], rows[order], indptr, (m + nb, columns))
        P_box = csc(P.data, P.indices, np.concatenate([P.indptr, np.full(nb, P.indptr[-1])]), (columns, columns))
        if symmetric_by_construction(P):  # zero columns for the slacks
            mark_symmetric(P_box)
        v_hat_box = self.v_hat[cones_m:]
        blocks = (Block("friction_loss_upper", cones_m, m), Block("friction_loss_lower", m, m + nb))
        return PrimalConicProgram(
            P=P_box, c=np.concatenate([self.c, np.zeros(m), self.box]), A=A,
            b=np.concatenate([-self.scale[:cones_m] * self.v_hat[:cones_m], v_hat_box, -v_hat_box]),
            cones=(*self.cones, Nonneg(2 * nb)),
            variables=(Block(VELOCITY, 0, nv), Block(MULTIPLIER, nv, nv + m), Block(BOX_SLACK, nv + m, nv + m + nb)),
            constraints=(*self.constraints, *blocks), metadata={**self.metadata, "program": "sap_primal"},
            primal=self)

    @staticmethod
    def from_conic(program: ConicProgram) -> PrimalProgram:
        """The primal a conic program of the form (S6) came from; ShapeError says why not."""
        if isinstance(program, PrimalConicProgram) and program.primal is not None:
            return program.primal
        reason = why_not_primal(program)
        if reason is not None:
            raise ShapeError(f"not the conic form of an unconstrained primal: {reason}")
        nv = _velocity_size(program)
        P, A_c = program.P, program.A
        R = P.diagonal()[nv:]
        scale = -A_c[:, nv:].diagonal() / R
        J = sp.diags(1.0 / scale) @ (-A_c[:, :nv])
        A = P[:nv, :nv].tocsc()
        v_star = spla.spsolve(A, -program.c[:nv]) if nv else np.zeros(0)
        return PrimalProgram(A=A, v_star=np.atleast_1d(v_star), J=J, R=R, v_hat=-program.b / scale,
                             scale=scale, cones=program.cones, constraints=program.constraints,
                             metadata=program.metadata)


@dataclass(frozen=True)
class PrimalConicProgram(ConicProgram):
    """The conic form (S6) of a :class:`PrimalProgram`, which it keeps (``primal``) so that a
    primal solver needs no conversion. Every tool treats it as the ConicProgram it is; saved
    and loaded it is a plain ConicProgram, from which :meth:`PrimalProgram.from_conic` reads
    the primal back."""

    primal: PrimalProgram | None = field(default=None, compare=False, repr=False)


def _velocity_size(program: ConicProgram) -> int:
    names = [block.name for block in program.variables]
    return program.variables[0].size if names == [VELOCITY, MULTIPLIER] else -1


def why_not_primal(program: ConicProgram) -> str | None:
    """Why ``program`` is not of the form (S6) with friction-cone blocks, or None."""
    if isinstance(program, PrimalConicProgram) and program.primal is not None:
        layout = program.primal.layout
        return layout if isinstance(layout, str) else None
    nv = _velocity_size(program)
    if nv < 0:
        return (f"its variables must be the blocks {VELOCITY!r} and {MULTIPLIER!r} (the 'sap' formulation and "
                f"'regularized' with form=primal build it), got {[b.name for b in program.variables]}")
    m = program.m
    if program.n != nv + m:
        return f"{program.n - nv} multipliers for {m} constraint rows"
    P, A_c = program.P.tocsc(), program.A.tocsc()
    lower = P[:, nv:]
    if lower.nnz != m or np.any(lower.indices != np.arange(nv, nv + m)) or np.any(P[nv:, :nv].data != 0):
        return "P must be block diagonal [A, diag(R)]"
    R = lower.data
    multiplier_rows = A_c[:, nv:]
    if (multiplier_rows.nnz != m or np.any(multiplier_rows.indices != np.arange(m))
            or R.min(initial=1.0) <= 0 or np.any(multiplier_rows.data >= 0)):
        return "the multiplier columns of A must be -D R with D > 0 and R > 0 diagonal"
    if np.any(program.c[nv:] != 0):
        return "the multipliers must have no linear cost"
    scale = -multiplier_rows.data / R
    layout = cone_layout(program.cones, scale, R)
    return layout if isinstance(layout, str) else None


def primal_of(program: ConicProgram) -> PrimalProgram:
    """The :class:`PrimalProgram` of a conic program of the form (S6)."""
    return PrimalProgram.from_conic(program)
