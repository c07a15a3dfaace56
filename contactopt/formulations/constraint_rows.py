"""The non-contact rows of a step, shared by every formulation (through
:mod:`contactopt.formulations.common`): bilateral rows ``H v' = r`` (equality constraints),
unilateral rows ``phi + h G v' >= 0`` without friction (joint and tendon limits) and
box-constrained rows ``|sigma| <= h bound`` (dry joint and tendon friction, MuJoCo's
``frictionloss``).

**Primal programs** (``x = [v', s]``; Tedrake 2022, "Time-stepping LCP: Normal force" for the
unilateral rows, the L1 term of dry friction as in Todorov 2014's frictionloss)::

    minimize    1/2 (v' - v_free)^T M (v' - v_free) + sum_i h bound_i s_i
    subject to  H v' = r                              (Zero;    impulse -y)
                formulation's contact rows
                phi_j / h + G_j v' >= 0               (Nonneg;  impulse  y, a limit)
                s_i - F_i v' >= 0,  s_i + F_i v' >= 0  (Nonneg;  impulse y- - y+)

``s_i = |F_i v'|`` at the optimum, and stationarity in ``s`` gives ``y+ + y- = h bound``, so the
friction impulse ``sigma = y- - y+`` lies in the box.

**Dual programs** (the formulation's contact variables, then free bilateral multipliers
``mu``, limit impulses ``lambda >= 0`` and box impulses ``-h bound <= sigma <= h bound``)::

    minimize 1/2 x^T (K M^{-1} K^T + R) x + x^T [c, H v_free - r, G v_free + phi / h, F v_free]

with ``K = [contact rows; H; G; F]`` and ``v' = v_free + M^{-1} K^T x``.

Unilateral rows with ``phi > epsilon`` (the formulation's active-set margin) stay out of the
program; ``metadata["limits"]`` records which entered. A violated limit's ``phi / h`` is capped
at ``-max_recovery_speed`` (the rigid formulations pass theirs;
:func:`contactopt.formulations.recovery.limit_target`), as their contacts' ``phi / h`` is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.formulations.recovery import limit_target
from contactopt.model.delassus import delassus
from contactopt.model.step import Dynamics, Matrix, StepProblem, is_sparse, to_dense
from contactopt.programs import Block, Cone, ConicProgram, Nonneg, Zero, delassus_kernel
from contactopt.programs.csc import (
    add_diagonal,
    attach_upper,
    coo_to_csc,
    csc,
    empty_csc,
    mark_symmetric,
    pad_columns,
    symmetric_part,
    to_csc,
    vstack_csc,
)

FloatArray = NDArray[np.float64]


def limit_index(problem: StepProblem, epsilon: float = np.inf) -> NDArray[np.int_]:
    """The unilateral rows that enter a program: ``phi <= epsilon``."""
    return np.flatnonzero(problem.unilateral.phi <= epsilon)


def primal_program(problem: StepProblem, A: Any, b: FloatArray, cones: tuple[Cone, ...],
                   blocks: tuple[Block, ...], metadata: Mapping[str, Any],
                   epsilon: float = np.inf, max_recovery_speed: float = np.inf) -> ConicProgram:
    """The primal over ``v'`` (plus the friction-loss slacks ``s``) with the formulation's
    rows ``A v' + slack = b, slack in cones`` (blocks ``blocks``) and every non-contact row
    (a violated limit driven back at ``max_recovery_speed`` at most)."""
    nv, h = problem.nv, problem.dt
    limits = limit_index(problem, epsilon)
    G = problem.unilateral.G[limits]
    friction = problem.friction_loss
    F, nf, nu = friction.F, friction.count, limits.shape[0]
    nh = problem.bilateral.count
    parts: list[Any] = [problem.bilateral.H] if nh else []
    parts.append(A)
    if nu:
        parts.append(-G)
    rows_v = vstack_csc(parts)
    m_contact = A.shape[0]
    b_all = [problem.bilateral_target, np.asarray(b, dtype=np.float64)]
    if nu:
        b_all.append(limit_target(problem, limits, max_recovery_speed))  # phi / h
    # the (possibly empty) bilateral block is kept: the layout of programs without rows is unchanged
    cone_list: list[Cone] = [Zero(nh), *cones] + ([Nonneg(nu)] if nu else [])
    constraint_blocks = [Block("bilateral", 0, nh),
                         *(Block(blk.name, blk.start + nh, blk.stop + nh, blk.per) for blk in blocks)]
    offset = nh + m_contact
    if nu:
        constraint_blocks.append(Block("limits", offset, offset + nu))
        offset += nu
    M = problem.dynamics.M
    P: Any = M
    c = -(M @ problem.v_free)
    variables = [Block("v_next", 0, nv)]
    if nf:
        # rows s - F v' >= 0 (A = [F, -I]) then s + F v' >= 0 (A = [-F, -I])
        upper = sp.hstack([sp.csc_matrix(F), -sp.identity(nf)])
        lower = sp.hstack([sp.csc_matrix(-F), -sp.identity(nf)])
        rows_v = sp.vstack([sp.hstack([rows_v, sp.csc_matrix((rows_v.shape[0], nf))]), upper, lower], format="csc")
        b_all += [np.zeros(nf), np.zeros(nf)]
        cone_list.append(Nonneg(2 * nf))
        constraint_blocks += [Block("friction_loss_upper", offset, offset + nf),
                              Block("friction_loss_lower", offset + nf, offset + 2 * nf)]
        P = sp.block_diag([sp.csc_matrix(M), sp.csc_matrix((nf, nf))], format="csc")
        c = np.concatenate([c, h * friction.bound])
        variables.append(Block("friction_loss_slack", nv, nv + nf))
    return ConicProgram(P=mass_hessian(problem.dynamics, P), c=c, A=to_csc(rows_v), b=np.concatenate(b_all),
                        cones=tuple(cone_list),
                        variables=tuple(variables), constraints=tuple(constraint_blocks),
                        metadata={**metadata, "limits": limits.tolist(), "friction_loss": nf})


def dual_program(problem: StepProblem, rows: Matrix, c: FloatArray, A: Any, cones: tuple[Cone, ...],
                 variables: tuple[Block, ...], constraints: tuple[Block, ...],
                 metadata: Mapping[str, Any], dynamics: Dynamics | None = None,
                 v_free: FloatArray | None = None, regularization: FloatArray | None = None,
                 bilateral_regularization: FloatArray | None = None, epsilon: float = np.inf,
                 limit_terms: tuple[FloatArray, FloatArray] | None = None,
                 friction_terms: tuple[FloatArray, FloatArray] | None = None,
                 max_recovery_speed: float = np.inf) -> ConicProgram:
    """``min 1/2 x^T (K M^{-1} K^T + R) x + c^T x`` over the contact variables (rows ``rows``
    of K, constrained by ``A x + s = 0, s in cones``), free bilateral multipliers (rows ``H``,
    linear term ``H v_free - r``), limit impulses ``>= 0`` (rows ``G``, linear term
    ``G v_free + phi / h``, ``phi / h`` capped at ``-max_recovery_speed``) and box impulses
    (rows ``F``, linear term ``F v_free``).
    ``limit_terms`` / ``friction_terms`` = ``(linear term, regularization)`` replace the
    defaults (``regularized`` gives them its reference velocities and ``R``)."""
    dynamics = problem.dynamics if dynamics is None else dynamics
    v_free = problem.v_free if v_free is None else v_free
    h = problem.dt
    H = problem.bilateral.H
    limits = limit_index(problem, epsilon)
    G = problem.unilateral.G[limits]
    friction = problem.friction_loss
    F = friction.F
    nh, n, nu, nf = H.shape[0], rows.shape[0], limits.shape[0], friction.count
    extra = [block for block in (H, G, F) if block.shape[0]]
    if extra:
        K = sp.vstack([rows, *map(sp.csr_matrix, extra)], format="csr") if is_sparse(rows) else \
            np.vstack([to_dense(rows), *extra])
    else:
        K = rows
    limit_c, limit_R = limit_terms if limit_terms is not None else (
        G @ v_free + limit_target(problem, limits, max_recovery_speed), np.zeros(nu))
    friction_c, friction_R = friction_terms if friction_terms is not None else (F @ v_free, np.zeros(nf))
    diagonal = np.concatenate([np.zeros(n) if regularization is None else regularization,
                               np.zeros(nh) if bilateral_regularization is None else bilateral_regularization,
                               limit_R, friction_R])
    total = n + nh + nu + nf
    P = _delassus_P(dynamics, K, diagonal if np.any(diagonal) else None)
    A_contacts = to_csc(A) if A.shape[0] else empty_csc(0, n)
    m_contacts = A_contacts.shape[0]
    A_all = pad_columns(A_contacts, total)
    b_parts = [np.zeros(m_contacts)]
    cone_list = list(cones)
    constraint_blocks = list(constraints)
    offset = m_contacts
    if nu or nf:
        # -lambda + s = 0, s >= 0 (limits); sigma + s = h bound and -sigma + s = h bound, s >= 0 (box)
        limit_rows, box_rows = np.arange(nu), np.arange(nf)
        rows = np.concatenate([limit_rows, nu + box_rows, nu + nf + box_rows])
        cols = np.concatenate([n + nh + limit_rows, n + nh + nu + box_rows, n + nh + nu + box_rows])
        values = np.concatenate([-np.ones(nu), np.ones(nf), -np.ones(nf)])
        A_all = vstack_csc([A_all, coo_to_csc(rows, cols, values, (nu + 2 * nf, total))])
    if nu:
        b_parts.append(np.zeros(nu))
        cone_list.append(Nonneg(nu))
        constraint_blocks.append(Block("limits_nonneg", offset, offset + nu))
        offset += nu
    if nf:
        b_parts.append(np.tile(h * friction.bound, 2))
        cone_list.append(Nonneg(2 * nf))
        constraint_blocks.append(Block("friction_loss_box", offset, offset + 2 * nf))
    variable_blocks = list(variables)
    for name, start, size in (("bilateral", n, nh), ("limits", n + nh, nu), ("friction_loss", n + nh + nu, nf)):
        if size:
            variable_blocks.append(Block(name, start, start + size))
    linear = np.concatenate([c, H @ v_free - problem.bilateral_target, limit_c, friction_c])
    return ConicProgram(
        P=P, c=linear, A=A_all,
        b=np.concatenate(b_parts), cones=tuple(cone_list), variables=tuple(variable_blocks),
        constraints=tuple(constraint_blocks),
        metadata={**metadata, "bilateral": nh, "limits": limits.tolist(), "friction_loss": nf})


def dual_velocity(problem: StepProblem, program: ConicProgram, x: FloatArray, rows: Matrix,
                  contact_x: FloatArray, dynamics: Dynamics | None = None,
                  v_free: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
    """``(v', mu)`` of a dual program: ``v' = v_free + M^{-1} (rows^T x_c + H^T mu + G^T lambda
    + F^T sigma)``."""
    dynamics = problem.dynamics if dynamics is None else dynamics
    v_free = problem.v_free if v_free is None else v_free
    mu = program.variable(x, "bilateral") if program.metadata.get("bilateral") else np.zeros(0)
    generalized = rows.T @ contact_x + problem.bilateral.H.T @ mu
    limits, friction = row_impulses(problem, program, x, None)
    generalized = generalized + problem.unilateral.G.T @ limits + problem.friction_loss.F.T @ friction
    return v_free + dynamics.solve_M(generalized), np.array(mu)


def row_impulses(problem: StepProblem, program: ConicProgram, x: FloatArray,
                 y: FloatArray | None) -> tuple[FloatArray, FloatArray]:
    """``(limit impulses, friction-loss impulses)`` of a primal (from the row duals ``y``) or a
    dual (from ``x``; pass ``y = None``) program; limits outside the program get 0."""
    limits = np.zeros(problem.unilateral.count)
    friction = np.zeros(problem.friction_loss.count)
    index = np.asarray(program.metadata.get("limits", []), dtype=np.int_)
    names = {block.name for block in program.variables}
    if y is None or "limits" in names or "friction_loss" in names:
        if index.size:
            limits[index] = program.variable(x, "limits")
        if friction.size:
            friction[:] = program.variable(x, "friction_loss")
        return limits, friction
    rows = {block.name for block in program.constraints}
    if index.size and "limits" in rows:
        limits[index] = program.row_block(y, "limits")
    if friction.size and "friction_loss_upper" in rows:
        friction[:] = program.row_block(y, "friction_loss_lower") - program.row_block(y, "friction_loss_upper")
    return limits, friction


def primal_bilateral_impulses(program: ConicProgram, y: FloatArray) -> FloatArray:
    """Bilateral impulses of a primal program: stationarity ``M (v' - v_free) + H^T y = ...``
    makes them ``-y`` on the equality rows."""
    if not any(block.name == "bilateral" for block in program.constraints):
        return np.zeros(0)
    return -program.row_block(y, "bilateral")


def require_no_friction_loss(problem: StepProblem, formulation: str, why: str) -> None:
    """Refuse box rows where a formulation cannot express them."""
    if problem.friction_loss.count:
        raise_refusal(formulation, f"{problem.friction_loss.count} dry-friction (frictionloss) row(s): {why}")


def raise_refusal(formulation: str, what: str) -> None:
    from contactopt.core.errors import ContactoptError

    raise ContactoptError(f"formulation {formulation!r} cannot take {what}")


def _delassus_P(dynamics: Dynamics, K: Matrix, diagonal: FloatArray | None) -> sp.csc_matrix:
    """``P = sym(K M^{-1} K^T + diag(diagonal))`` of a dual program: one compiled call for sparse
    rows and a sparse ``M^{-1}`` (:mod:`contactopt.programs.delassus_kernel`, the same arrays
    as the scipy steps below), else :func:`~contactopt.model.delassus.delassus`,
    :func:`~contactopt.programs.csc.add_diagonal` and :func:`~contactopt.programs.csc.symmetric_part`."""
    if is_sparse(K) and dynamics.inverse_matrix is not None:
        fused = delassus_kernel.delassus_symmetric(K, dynamics.inverse_matrix, diagonal)
        if fused is not None:
            (indptr, indices, data), (u_indptr, u_indices, u_data) = fused
            shape = (K.shape[0], K.shape[0])
            return attach_upper(mark_symmetric(csc(data, indices, indptr, shape)),
                                csc(u_data, u_indices, u_indptr, shape))
    W = delassus(dynamics, K)
    if diagonal is not None:
        if is_sparse(W):
            W = add_diagonal(W, diagonal)
        else:
            W[np.diag_indices(W.shape[0])] += diagonal
    if is_sparse(W):
        return symmetric_part(W)
    P = to_csc(0.5 * (W + W.T))
    # K M^-1 K^T plus a nonnegative diagonal: convex by construction where M is known definite
    return mark_symmetric(P) if dynamics.known_positive_definite and (diagonal is None or diagonal.min() >= 0) else P


def mass_hessian(dynamics: Dynamics, matrix: Matrix | None = None) -> sp.csc_matrix:
    """``matrix`` (default ``M``; ``M`` with zero blocks beside it) as a canonical CSC ``P``, marked
    convex by construction (:func:`~contactopt.programs.csc.mark_symmetric`) when ``dynamics``
    knows ``M`` positive definite (:attr:`~contactopt.model.step.Dynamics.known_positive_definite`),
    else left to the program's own check."""
    P = to_csc(dynamics.M if matrix is None else matrix)
    return mark_symmetric(P) if dynamics.known_positive_definite else P
