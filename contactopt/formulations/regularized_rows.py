"""The soft rows of the ``regularized`` (MuJoCo-style) formulation, shared by its dual
(:mod:`.regularized`), its primal (:mod:`.regularized_primal`) and its torsional and rolling
rows (:mod:`.regularized_angular`): MuJoCo's impedance ``d(r)`` (``solimp``), the reference
acceleration's gains (``solref``), the regularization ``R = (1 - d) / d * diag(A)`` with
``A`` the Delassus diagonal of the damped dynamics, and the pyramid edges ``n +- mu t``
(Todorov 2014; MuJoCo documentation, "Computation: Soft constraints"; Tedrake 2022,
"MuJoCo's convex formulation").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.formulations.common import (
    ActiveContacts,
    is_diagonal,
    limit_index,
)
from contactopt.formulations.recovery import capped_spring, recovery_speed
from contactopt.formulations.regularized_unmoved import unmoved_rows, unmoved_rows_regularized
from contactopt.model.step import Dynamics, StepProblem, is_sparse
from contactopt.programs.csc import rows_of

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

MIN_IMPEDANCE, MAX_IMPEDANCE = 1e-4, 0.9999  # MuJoCo's mjMINIMP, mjMAXIMP


def impedance(r: FloatArray, solimp: tuple[float, float, float, float, float]) -> FloatArray:
    """MuJoCo's impedance ``d(r)`` for constraint violations ``r`` (elementwise)."""
    r = np.asarray(r, dtype=np.float64)
    if r.size == 0:  # a kind of row the step does not have (asked for every kind, every step)
        return np.zeros(r.shape)
    d0, dwidth, width, midpoint, power = solimp
    x = np.abs(r) / width if width > 0 else np.ones_like(r)
    x = np.minimum(x, 1.0)
    if power == 1:
        y = x
    else:
        low = x <= midpoint
        y = np.where(low, x**power / max(midpoint, 1e-15) ** (power - 1),
                     1.0 - (1.0 - x) ** power / max(1.0 - midpoint, 1e-15) ** (power - 1))
    d = d0 + y * (dwidth - d0)
    return np.clip(d, MIN_IMPEDANCE, MAX_IMPEDANCE)


def reference_gains(solref: tuple[float, float], dmax: float, d: FloatArray, dt: float,
                    refsafe: bool) -> tuple[float, FloatArray]:
    """MuJoCo's ``(b_ref, k_ref)`` of ``a_ref = -b_ref J v - k_ref r``."""
    timeconst, dampratio = solref
    if timeconst < 0 and dampratio < 0:  # direct (stiffness, damping)
        return -dampratio / dmax, np.full_like(d, -timeconst / dmax**2)
    if refsafe:
        timeconst = max(timeconst, 2.0 * dt)
    return 2.0 / (dmax * timeconst), d / (dmax**2 * timeconst**2 * dampratio**2)


def row_terms(problem: StepProblem, options: Mapping[str, Any], damped: Dynamics, v_minus: FloatArray,
              solref: tuple[float, float]) -> tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]:
    """``(linear term, R)`` of the limit rows and of the dry-friction rows, as MuJoCo treats
    them: a limit row is a frictionless normal row (impedance and reference from its ``phi``);
    a dry-friction row has violation 0 (impedance ``d(0)``, reference ``a_ref = -b_ref F v``)."""
    h, v, v_max = problem.dt, problem.state.v, recovery_speed(problem, options)
    limits = limit_index(problem, options["epsilon"])
    G, phi = problem.unilateral.G[limits], problem.unilateral.phi[limits]
    F = problem.friction_loss.F
    terms = []
    for rows, violation in ((G, phi), (F, np.zeros(F.shape[0]))):
        if rows.shape[0] == 0:  # no rows of this kind at this step
            terms.append((np.zeros(0), np.zeros(0)))
            continue
        d = impedance(violation, options["solimp"])
        b_ref, k_ref = reference_gains(solref, options["solimp"][1], d, h, options["refsafe"])
        v_star = rows @ v + h * (-b_ref * (rows @ v) - capped_spring(k_ref, violation, b_ref, v_max))
        R = (1.0 - d) / d * delassus_diagonal(damped, rows)
        terms.append((rows @ v_minus - v_star, R))
    return terms[0], terms[1]


def soft_rows(problem: StepProblem, options: Mapping[str, Any], damped: Dynamics, J: Any, per: int,
              d: FloatArray, b_ref: float, k_ref: FloatArray, position: FloatArray,
              friction_row: NDArray[np.bool_], owner: IntArray | None = None
              ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(R, v_ref, R_eq)`` of the contact rows ``J`` (``per`` rows a contact, or each row's
    contact in ``owner``) and the bilateral rows, shared by the dual and the primal form:
    ``R = (1 - d)/d diag(J M~^-1 J^T)`` (divided by ``impratio`` on friction rows),
    ``v_ref = J v + h a_ref`` with ``a_ref = -b J v - k position``; a row that moves nothing
    keeps a positive ``R`` and has no reference (:mod:`.regularized_unmoved`); bilateral
    rows are soft too, with the impedance of their violation (their target velocity is the
    driver's, drift treatment included)."""
    h, v, v_max = problem.dt, problem.state.v, recovery_speed(problem, options)
    row_impedance = np.repeat(d, per)
    R = (1.0 - row_impedance) / row_impedance * delassus_diagonal(damped, J)
    R = np.where(friction_row, R / options["impratio"], R)
    v_ref = J @ v + h * (-b_ref * (J @ v) - capped_spring(np.repeat(k_ref, per), position.reshape(-1), b_ref, v_max))
    unmoved = unmoved_rows(J)
    if unmoved.any():
        owner = np.repeat(np.arange(R.shape[0] // per), per) if owner is None else owner
        R = unmoved_rows_regularized(R, unmoved, owner, friction_row, options["impratio"])
        v_ref = np.where(unmoved, J @ v, v_ref)
    d_eq = impedance(problem.bilateral.position_error, options["solimp"])
    R_eq = (1.0 - d_eq) / d_eq * delassus_diagonal(damped, problem.bilateral.H)
    return R, v_ref, R_eq


def pyramid_edges(active: ActiveContacts) -> tuple[Any, int]:
    """MuJoCo's pyramidal cone: rows ``n + mu t_j`` and ``n - mu t_j`` for each tangent ``t_j``
    (``2 (dim - 1)`` edges per contact; one row ``n`` for normal-only frames); sparse when the
    contact Jacobian is."""
    if active.dim == 1:
        return active.N, 1
    per = 2 * (active.dim - 1)
    if not active.is_sparse:  # dense rows: the arithmetic of the reference trajectories
        edges = np.empty((active.count, per, active.nv))
        scaled = active.mu[:, None, None] * active.T
        edges[:, 0::2, :] = active.N[:, None, :] + scaled
        edges[:, 1::2, :] = active.N[:, None, :] - scaled
        return edges.reshape(active.count * per, active.nv), per
    coefficients = np.zeros((active.count, per, active.dim))
    coefficients[:, :, 0] = 1.0
    for j in range(active.dim - 1):  # the tangents of a frame: at most two
        coefficients[:, 2 * j, j + 1] = active.mu
        coefficients[:, 2 * j + 1, j + 1] = -active.mu
    return active.combine(coefficients), per


def delassus_diagonal(dynamics: Dynamics, rows: Any) -> FloatArray:
    """``diag(rows M^{-1} rows^T)`` (MuJoCo's diagonal approximation used for R)."""
    if rows.shape[0] == 0:
        return np.zeros(0)
    inverse = dynamics.inverse_matrix
    if is_sparse(rows) and inverse is not None and is_diagonal(inverse):  # J_ik (J_ik m_k), summed in order
        rows = sp.csr_matrix(rows)
        solved = rows.data * inverse.diagonal()[rows.indices]
        owner = np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))
        return np.asarray(np.bincount(owner, weights=rows.data * solved, minlength=rows.shape[0]), dtype=np.float64)
    if is_sparse(rows):
        solved = (rows @ dynamics.inverse_matrix if dynamics.inverse_matrix is not None
                  else dynamics.solve_M(rows.T.toarray()).T)
        return np.asarray(rows.multiply(solved).sum(axis=1)).reshape(-1)
    return np.einsum("ij,ji->i", rows, dynamics.solve_M(rows.T))


def damped_dynamics(problem: StepProblem, b: float) -> tuple[Dynamics, FloatArray]:
    """``M~ = M + b I`` and ``v^- = v + h M~^{-1} (tau - b v)`` (implicit damping inertia);
    without damping the problem's own ``M`` and ``v_free`` (the same expression, computed once
    per step for build and recover)."""
    dynamics = problem.dynamics
    if not b:
        return dynamics, problem.v_free
    identity = sp.identity(problem.nv, format="csc") if dynamics.is_sparse else np.eye(problem.nv)
    dynamics = Dynamics(dynamics.M + b * identity, dynamics.tau - b * problem.state.v)
    return dynamics, problem.state.v + problem.dt * dynamics.solve_M(dynamics.tau)


def own_compliance_rows(problem: StepProblem, active: ActiveContacts, damped: Dynamics, J: Any, per: int,
                        elliptic: bool, impratio: float, R: FloatArray, v_ref: FloatArray) -> None:
    """Overwrite, in place, ``R`` and ``v_ref`` of the rows of the active contacts that carry
    their own finite stiffness ``k_i`` and Hunt-Crossley dissipation ``d_i``
    (:attr:`Contacts.stiffness`: hydroelastic quadrature points, Masterjohn et al. 2022): the
    physical spring-damper in this program's terms. With the dissipation time scale
    ``tau_i = d_i x_i`` (``x_i = max(-phi_i, 0)``, as in :func:`.sap.own_compliance`), the
    normal row gets ``R_n = 1 / (h k_i (h + tau_i))`` and ``v_ref = -phi_i / (h + tau_i)``:
    MuJoCo's ``R = (1 - d)/d A_nn`` and ``v_ref = J v + h a_ref`` with the impedance
    ``d = A_nn / (A_nn + R_n)`` and the gains ``b_ref = 1/h``, ``k_ref = 1 / (h (h + tau_i))``,
    so that an isolated row's impulse is ``h k_i (x_i - h v_n) - h k_i tau_i v_n``. Elliptic
    friction rows share the contact's impedance (``R_t = (1 - d)/d A_tt / impratio``,
    ``v_ref = 0``); the ``n_e`` pyramid edges get ``R_e = n_e R_n`` and the normal row's
    ``v_ref``, so that at rest their impulses sum to ``h k_i x_i`` as the normal row's does."""
    contacts = problem.contacts
    if contacts.stiffness is None or contacts.dissipation is None or active.count == 0:
        return
    k = contacts.stiffness[active.index]
    own = np.flatnonzero(np.isfinite(k))
    if own.shape[0] == 0:
        return
    h = problem.dt
    phi = active.phi[own]
    tau = contacts.dissipation[active.index][own] * np.maximum(-phi, 0.0)
    R_n = 1.0 / (h * k[own] * (h + tau))
    target = -phi / (h + tau)
    rows = (per * own[:, None] + np.arange(per)[None, :])  # (n_own, per)
    if elliptic:
        diagonal = delassus_diagonal(damped, rows_of(J, rows.reshape(-1))).reshape(-1, per)
        ratio = R_n / np.maximum(diagonal[:, 0], 1e-300)  # (1 - d) / d
        R[rows[:, 0]] = R_n
        v_ref[rows[:, 0]] = target
        R[rows[:, 1:]] = ratio[:, None] * diagonal[:, 1:] / impratio
        v_ref[rows[:, 1:]] = 0.0
    else:
        R[rows] = per * R_n[:, None]
        v_ref[rows] = target[:, None]
