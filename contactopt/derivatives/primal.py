"""Derivative of the solution of SAP's unconstrained primal (the ``sap`` formulation and
``regularized`` with ``form = "primal"``) through its Newton Hessian.

Castro, Permenter & Han, "An Unconstrained Convex Formulation of Compliant Contact", IEEE
T-RO 2022 (arXiv 2110.10107), §V (the unconstrained primal and its analytic projection) and
§VI (its Hessian ``A + J^T G J``), with labels (S..) of :mod:`contactopt.programs.primal`; the
implicit function theorem on the optimality condition ``grad l(v) = 0`` (S5), as
:mod:`.conic` applies it to the general conic optimality conditions (Agrawal et al. 2019).

A :class:`~contactopt.programs.primal.PrimalConicProgram` is the conic form (S6) of
``min_v l(v) = 1/2 ||v - v*||_A^2 + l_R(J v)``: ``x = [v, sigma]``, ``P = diag(A, R)``,
``A_conic = -S [J, R]``, ``b = -S v_hat`` with the row scale ``S`` (``D`` in
:mod:`~contactopt.programs.primal`), ``y = S^{-1} gamma``. The general derivative
(:class:`~.conic.ConicDerivative`) factors the ``(n + m)``-sized Jacobian of the residual map
``[[P, A_conic' DPi], [A_conic, DPi - I]]``; eliminating ``sigma`` and the row variable
``w = y - s`` block by block (each block is one cone's rows) leaves its Schur complement on
``v``, which is SAP's Hessian ``H = A + J^T G J``: with ``K = DPi T^{-1}``,
``T = I - DPi + S R S DPi`` (invertible: ``DPi`` is symmetric with eigenvalues in [0, 1]),

    ``G = S K S``    and    ``T^{-1} = I + (I - S R S) K``,

the ``R``-norm projection's derivative ``G = (d gamma / d y) R^{-1}`` of (S4), computed by
:func:`contactopt.programs.cone_projection.project` exactly as the ``newton`` solver does
(the identity follows from ``gamma = S Pi(w)`` along the map ``y -> w = S^{-1} gamma - S R
(gamma - y)`` that takes SAP's ``y`` to the conic form's). For the data perturbation
``(dP, dc, dA, db)`` let ``r = (r_v, r_sigma, r_w) = (dP x + dc + dA' y, dA x - db)`` (how it
moves the optimality conditions, :func:`~.conic.data_residual`) and ``q = S^{-1} r_w +
r_sigma``; then (JVP)::

    H dv = -r_v + J^T G q,          e = q - J dv,
    dsigma = G e - R^{-1} r_sigma,  dy = S^{-1} G e,  ds = S (R G e - e),

``H dv = -d(grad l)`` being the implicit function theorem on (S5). The VJP is its adjoint, one
solve with the same factorization: for the cotangents ``(g_v, g_sigma, g_y, g_s)`` ::

    g_e = G (g_sigma + S^{-1} g_y + R S g_s) - S g_s,   H z = g_v - J^T g_e,   u = g_e + G J z,

and the data gradient pairs ``w1 = (-z, u - R^{-1} g_sigma)``, ``w2 = S^{-1} u`` with ``r``
(:func:`~.conic.data_gradient`: the same dense or pattern-shaped ``P`` and ``A`` gradients as
:class:`~.conic.ConicDerivative`). ``H`` (``nv x nv``, positive definite) is assembled by
:class:`contactopt.solvers.newton.linalg.Hessian` over the blocks with ``G != 0`` and factored
once (LAPACK's Cholesky when small or nearly full, else QDLDL's sparse LDL^T), against the
``(n + m)``-sized sparse LU of the general derivative.

**Non-differentiable points** are those of :mod:`.projection` at ``w = y - s`` (a cone with
``y`` or ``s`` on the boundary with the other zero: a contact exactly at the stick/slip or
slip/separation boundary, at the tip ``gamma = 0`` with ``v_c = v_hat``; a half line with
``gamma = 0`` at ``y = 0``), found by the same tests, reported in ``degenerate`` in the same
form (with :class:`~.conic.NondifferentiableWarning`), and given ``branch``'s one-sided
derivative: that block's ``G`` is replaced by ``S K S`` from the one-sided ``DPi``. The two
derivatives are then the same linear map (tested to rounding).

**Not covered** (:func:`why_not_primal_derivative`; :func:`~contactopt.derivatives.program_derivative`
then falls back to :class:`~.conic.ConicDerivative`): a program with box rows (MuJoCo's
``frictionloss``, whose conic form adds a slack per row and two ``Nonneg`` rows), a conic
program of the form (S6) that does not carry its primal (one loaded from a file), and layouts
the projection does not take (an SOC block that is no friction cone).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.derivatives.conic import (
    ConicGradient,
    ConicTangent,
    NondifferentiableWarning,
    NotDifferentiableError,
    _vector,
    data_gradient,
    data_residual,
)
from contactopt.derivatives.projection import BRANCHES, DegeneratePoint, soc_block_derivative
from contactopt.programs.cone_projection import ConeLayout, Group, project
from contactopt.programs.conic import ConicProgram
from contactopt.programs.primal import PrimalConicProgram, PrimalProgram
from contactopt.programs.solution import Solution, Status
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton.linalg import Hessian
from contactopt.solvers.newton.solver import _compiled_projection

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["PrimalDerivative", "why_not_primal_derivative"]

DENSE_SIZE = 48  # unknowns up to which H is factored densely (newton_linalg's crossover)
#: rows up to which, with at most DENSE_SIZE unknowns, G, J and H are dense arrays (a sparse
#: assembly costs ~0.1 ms of scipy overhead, a dense (m, m) G with m = 200 about 0.3 MB)
DENSE_ROWS = 200


def why_not_primal_derivative(program: ConicProgram) -> str | None:
    """Why :class:`PrimalDerivative` does not take ``program`` (module docstring), or None."""
    if not isinstance(program, PrimalConicProgram) or program.primal is None:
        return ("it is not a PrimalConicProgram carrying its primal (the 'sap' formulation and 'regularized' "
                "with form=primal build one)")
    primal = program.primal
    if isinstance(primal.layout, str):
        return primal.layout
    if primal.box.shape[0]:
        return f"its {primal.box.shape[0]} box (friction loss) rows are differentiated through the conic form"
    return None


class PrimalDerivative:
    """The derivative of a :class:`~contactopt.programs.primal.PrimalConicProgram`'s solution
    with respect to its conic data ``(P, c, A, b)`` through the Newton Hessian (module
    docstring); the same interface and conventions as :class:`~.conic.ConicDerivative`.

    Attributes:
        degenerate: the points where strict complementarity is lost, each with the one-sided
            derivative used (``branch``); empty at a differentiable solution.
    """

    def __init__(self, program: ConicProgram, solution: Solution, branch: str = "active",
                 tol: float = 1e-8) -> None:
        if branch not in BRANCHES:
            raise OptionError(f"derivatives: branch must be one of {BRANCHES}, got {branch!r}")
        reason = why_not_primal_derivative(program)
        if reason is not None:
            raise UnsupportedProgramError(f"derivatives: PrimalDerivative does not take this program: {reason} "
                                          "(program_derivative(..., method='conic') differentiates any ConicProgram)")
        if solution.status is not Status.OPTIMAL:
            raise NotDifferentiableError(f"derivatives: the solution's status is {solution.status.value!r}; "
                                         "only a solution contactopt judged optimal is differentiated")
        assert isinstance(program, PrimalConicProgram) and program.primal is not None
        primal: PrimalProgram = program.primal
        n, m = program.n, program.m
        self.program, self.primal, self.branch = program, primal, branch
        self.x = _vector(solution.x, n, "solution.x")
        self.y = _vector(solution.y, m, "solution.y")
        self.s = _vector(solution.s, m, "solution.s")
        self.v = self.y - self.s
        layout = primal.cone_layout
        y_sap = (primal.v_hat - primal.J @ self.x[:primal.nv]) / primal.R  # (S3)'s y at the solution's velocity
        if kernels.AVAILABLE:  # the newton solver's compiled projection (numba): the same G, a fraction of the time
            blocks = _compiled_projection(layout, kernels.block_arrays(layout), primal.R)(y_sap, True)[1]
        else:
            blocks = project(layout, y_sap, primal.R)[1]
        self.degenerate: tuple[DegeneratePoint, ...] = _one_sided(program, layout, blocks, self.v, branch, tol)
        if self.degenerate:
            warnings.warn(f"derivatives: strict complementarity is lost at {len(self.degenerate)} point(s) "
                          f"(first: cone {self.degenerate[0].cone}, {self.degenerate[0].kind}); the "
                          f"{branch!r} one-sided derivative is used (PrimalDerivative.degenerate lists them)",
                          NondifferentiableWarning, stacklevel=2)
        self._J: Any = primal.J
        self._G: Any
        if primal.nv <= DENSE_SIZE and primal.m <= DENSE_ROWS:  # dense arrays: no sparse assembly
            self._G, self._J = _dense_blocks(layout, blocks), primal.J.toarray()
            self._solve = _dense_factor(primal, self._J, self._G)
        else:
            self._G = _block_matrix(layout, blocks)
            self._solve = _factor(primal, layout, blocks)

    def coupled_rows(self) -> NDArray[np.bool_]:
        """Per row, whether its ``G`` block row is not zero: the rows whose data move ``v``
        (``H dv = -r_v + J^T G q``; a separated contact's, an unreached limit's do not)."""
        G: Any = self._G
        if not isinstance(G, np.ndarray):  # sparse
            return np.asarray(G.multiply(G).sum(axis=1)).reshape(-1) > 0.0
        return np.asarray(np.any(G != 0.0, axis=1))

    def jvp(self, dP: Any = None, dc: ArrayLike | None = None, dA: Any = None,
            db: ArrayLike | None = None) -> ConicTangent:
        """``(dx, dy, ds)`` for the data perturbation ``(dP, dc, dA, db)`` (None: zero; ``dP``
        and ``dA`` dense arrays or scipy sparse matrices, ``dP`` symmetric)."""
        primal, G = self.primal, self._G
        nv, m = primal.nv, primal.m
        residual = data_residual(self.program, self.x, self.y, dP, dc, dA, db)
        r_v, r_sigma, r_w = residual[:nv], residual[nv:nv + m], residual[nv + m:]
        q = r_w / primal.scale + r_sigma
        dv = self._solve(-r_v + self._J.T @ (G @ q))
        e = q - self._J @ dv
        Ge = G @ e
        return ConicTangent(np.concatenate([dv, Ge - r_sigma / primal.R]), Ge / primal.scale,
                            primal.scale * (primal.R * Ge - e))

    def vjp(self, gx: ArrayLike | None = None, gy: ArrayLike | None = None, gs: ArrayLike | None = None,
            dense: bool | None = None) -> ConicGradient:
        """The gradient with respect to ``(P, c, A, b)`` of ``<gx, x> + <gy, y> + <gs, s>``,
        shaped as :meth:`~.conic.ConicDerivative.vjp`'s (``dense`` likewise)."""
        primal, G = self.primal, self._G
        nv, m, S, R = primal.nv, primal.m, primal.scale, primal.R
        g = _vector(gx, nv + m, "gx")
        g_v, g_sigma = g[:nv], g[nv:]
        g_y, g_s = _vector(gy, m, "gy"), _vector(gs, m, "gs")
        g_e = G @ (g_sigma + g_y / S + R * S * g_s) - S * g_s
        z = self._solve(g_v - self._J.T @ g_e)
        u = g_e + G @ (self._J @ z)
        return data_gradient(self.program, self.x, self.y, np.concatenate([-z, u - g_sigma / R]), u / S, dense)


def _one_sided(program: ConicProgram, layout: ConeLayout, blocks: list[FloatArray], w: FloatArray, branch: str,
               tol: float) -> tuple[DegeneratePoint, ...]:
    """The degenerate points of ``Pi`` at ``w = y - s`` by :mod:`.projection`'s tests (same
    threshold ``tol ||w||_inf``), whose ``G`` blocks in ``blocks`` are replaced by ``S K S``
    of ``branch``'s one-sided ``DPi`` (module docstring). Vectorized over the cones: only
    the few candidates near a boundary go through :func:`.projection.soc_block_derivative`."""
    cones = program.cones
    if not cones:
        return ()
    active = branch == "active"
    threshold = tol * float(np.abs(w).max(initial=0.0))
    dims, starts, row_cone, nonneg_rows, soc_cones = _cone_structure(cones)
    tangential = w * w
    tangential[starts] = 0.0
    radius = np.sqrt(np.add.reduceat(tangential, starts))
    near = np.abs(radius - np.abs(w[starts])) <= 2.0 * threshold + 1e-15 * np.abs(w[starts])  # rounding margin
    found: list[tuple[DegeneratePoint, FloatArray]] = []
    for row in np.flatnonzero(nonneg_rows & (np.abs(w) <= threshold)):
        point = DegeneratePoint(int(row_cone[row]), (int(row), int(row) + 1), "nonneg", branch)
        found.append((point, np.full((1, 1), float(active))))
    for cone in np.flatnonzero(soc_cones & near):
        rows = (int(starts[cone]), int(starts[cone] + dims[cone]))
        block, kind = soc_block_derivative(w[rows[0]:rows[1]], threshold, active)
        if kind:
            one_sided = np.zeros((rows[1] - rows[0],) * 2) if block is None else block
            found.append((DegeneratePoint(int(cone), rows, kind, branch), one_sided))
    if found:
        _replace_blocks(program, layout, blocks, found)
    return tuple(point for point, _ in sorted(found, key=lambda item: (item[0].cone, item[0].rows)))


@functools.lru_cache(maxsize=256)
def _cone_structure(cones: tuple[Any, ...]) -> tuple[IntArray, IntArray, IntArray, Any, Any]:
    """Per cone its size and first row, per row its cone, which rows are ``Nonneg`` and which
    cones ``SOC`` (read-only: shared by the programs of one layout; cones hash once)."""
    dims = np.array([cone.dim for cone in cones], dtype=np.int_)
    kinds = np.array([cone.kind for cone in cones])
    row_cone = np.repeat(np.arange(dims.shape[0]), dims)
    out = (dims, np.cumsum(dims) - dims, row_cone, kinds[row_cone] == "nonneg", kinds == "soc")
    for array in out:
        array.setflags(write=False)
    return out


def _replace_blocks(program: ConicProgram, layout: ConeLayout, blocks: list[FloatArray],
                    found: list[tuple[DegeneratePoint, FloatArray]]) -> None:
    """Each degenerate block's ``G = S K S``, ``K = DPi T^{-1}``, ``T = I - DPi + S R S DPi``."""
    assert isinstance(program, PrimalConicProgram) and program.primal is not None
    S, R = program.primal.scale, program.primal.R
    group_of, block_of = np.empty(layout.m, dtype=np.int_), np.empty(layout.m, dtype=np.int_)
    for index, group in enumerate(layout.groups):
        group_of[group.rows[:, 0]] = index
        block_of[group.rows[:, 0]] = np.arange(group.rows.shape[0])
    for point, D in found:
        rows = np.arange(*point.rows)
        T = np.eye(rows.shape[0]) - D + (S[rows] * R[rows] * S[rows])[:, None] * D
        K = np.linalg.solve(T.T, D.T).T
        blocks[group_of[rows[0]]][block_of[rows[0]]] = S[rows, None] * K * S[None, rows]


def _block_matrix(layout: ConeLayout, blocks: list[FloatArray]) -> sp.csr_matrix:
    """The block-diagonal ``G`` as an (m, m) sparse matrix."""
    rows, cols, values = [np.zeros(0, dtype=np.int_)], [np.zeros(0, dtype=np.int_)], [np.zeros(0)]
    for group, block in zip(layout.groups, blocks, strict=True):
        d = group.dim
        rows.append(np.repeat(group.rows, d, axis=1).reshape(-1))
        cols.append(np.tile(group.rows, (1, d)).reshape(-1))
        values.append(block.reshape(-1))
    return sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(layout.m, layout.m))


def _dense_blocks(layout: ConeLayout, blocks: list[FloatArray]) -> FloatArray:
    """The block-diagonal ``G`` as a dense (m, m) array."""
    G = np.zeros((layout.m, layout.m))
    for group, block in zip(layout.groups, blocks, strict=True):
        G[group.rows[:, :, None], group.rows[:, None, :]] = block
    return G


def _dense_factor(primal: PrimalProgram, J: FloatArray, G: FloatArray) -> Any:
    """``rhs -> H^{-1} rhs`` for ``H = A + J^T G J`` (S5) assembled and factored densely
    (LAPACK's Cholesky), for small programs: the same matrix as :func:`_factor`'s, without its
    sparse assembly."""
    H = primal.A.toarray()
    if G.any():  # no row coupled (every contact apart): H = A
        H = H + J.T @ (G @ J)
    # LAPACK's potrf/potrs as scipy.linalg.cho_factor/cho_solve call them, without their wrappers
    upper, info = scipy.linalg.lapack.dpotrf(0.5 * (H + H.T), lower=0, clean=0)
    if info != 0:
        raise NotDifferentiableError(f"derivatives: the Hessian A + J^T G J ({primal.nv} x {primal.nv}) is not "
                                     f"positive definite (LAPACK potrf info {info})")
    return lambda rhs: np.asarray(scipy.linalg.lapack.dpotrs(upper, rhs, lower=0)[0])


def _factor(primal: PrimalProgram, layout: ConeLayout, blocks: list[FloatArray]) -> Any:
    """``rhs -> H^{-1} rhs`` for ``H = A + J^T G J`` (S5) assembled by :class:`.newton_linalg.Hessian`
    over the blocks with ``G != 0`` (a separated contact adds nothing). The factorization is
    this derivative's own: the pattern's cached QDLDL solver and value buffer are shared with
    the ``newton`` solver, which refactors them at its next solve."""
    kept_groups: list[Group] = []
    kept_blocks: list[FloatArray] = []
    for group, block in zip(layout.groups, blocks, strict=True):
        keep = np.any(block.reshape(block.shape[0], -1) != 0.0, axis=1)
        if keep.any():
            kept_groups.append(Group(group.kind, group.rows[keep], group.mu[keep] if group.mu.size else group.mu,
                                     group.scale[keep] if group.scale.size else group.scale))
            kept_blocks.append(block[keep])
    hessian = Hessian(primal.A, primal.J, ConeLayout(tuple(kept_groups), layout.m))
    upper = hessian.matrix(kept_blocks).copy()
    try:
        if hessian.pattern.dense or primal.nv <= DENSE_SIZE:
            factor = scipy.linalg.cho_factor(upper.toarray(), lower=False, check_finite=False)
            return lambda rhs: np.asarray(scipy.linalg.cho_solve(factor, rhs, check_finite=False))
        import qdldl  # type: ignore[import-not-found]

        solver = qdldl.Solver(upper, upper=True)
    except (np.linalg.LinAlgError, ValueError) as error:
        raise NotDifferentiableError(f"derivatives: the Hessian A + J^T G J ({primal.nv} x {primal.nv}) is not "
                                     f"positive definite ({error})") from None
    return lambda rhs: np.asarray(solver.solve(rhs))
