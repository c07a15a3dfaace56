"""Pieces every contact formulation shares: which contacts enter a program, the friction
directions of polyhedral cones, and the assembly of impulses in contact frames.

Polyhedral cones (Tedrake 2022, "Anitescu's convex formulation", after Stewart & Trinkle
1996): ``k`` unit tangent directions ``d_i`` per contact, closed under negation. In 3-D
``d_i = cos(2 pi i / k) t1 + sin(2 pi i / k) t2`` (``k`` even); in 2-D ``k = 2``: ``+t, -t``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, OptionError, SkippedContactWarning
from contactopt.formulations import combine_kernel
from contactopt.formulations.constraint_rows import (
    dual_program,
    dual_velocity,
    limit_index,
    primal_bilateral_impulses,
    primal_program,
    require_no_friction_loss,
    row_impulses,
)
from contactopt.model.delassus import delassus
from contactopt.model.step import AngularFriction, Contacts, Dynamics, Matrix, is_sparse, to_dense
from contactopt.programs.csc import csr, rows_of, to_csr
from contactopt.programs.friction_directions import (
    check_directions,
    default_directions,
    tangent_directions,
)

__all__ = ["ActiveContacts", "active_contacts", "check_directions", "check_margin", "default_directions",
           "delassus", "delassus_blocks", "dual_program", "dual_velocity", "limit_index", "moving_blocks",
           "polyhedral_frame_impulses", "primal_bilateral_impulses", "primal_program", "require_finite_mu",
           "require_no_friction_loss",
           "row_impulses", "scatter_impulses", "select_contacts", "tangent_directions"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


def check_margin(options: Mapping[str, Any], formulation: str) -> float:
    epsilon = options["epsilon"]
    number = isinstance(epsilon, int | float) and not isinstance(epsilon, bool)
    if not number or math.isnan(epsilon) or epsilon < 0:
        raise OptionError(f"formulation {formulation!r}: epsilon must be a number >= 0 (inf: every "
                          f"candidate contact), got {epsilon!r}")
    return float(epsilon)


@dataclass(frozen=True)
class ActiveContacts:
    """The contacts that enter a program (``phi <= epsilon``) and their Jacobian rows.

    Attributes:
        index: (na,) indices into the system's contact list.
        phi: (na,) separations; mu: (na,) friction coefficients.
        J: (na * dim, nv) the frame rows, normal first, contact-major; ``scipy.sparse`` (CSR)
            when the system's Jacobian is, and then every row set derived from it is too.
        dim: rows per contact frame.
        angular: the torsional/rolling rows of these contacts (numbered by position in
            ``index``), or None (:mod:`contactopt.formulations.angular_friction`).
    """

    index: IntArray
    phi: FloatArray
    mu: FloatArray
    J: Matrix
    dim: int
    angular: AngularFriction | None = None

    @property
    def count(self) -> int:
        return int(self.index.shape[0])

    @property
    def nv(self) -> int:
        return int(self.J.shape[1])

    @property
    def is_sparse(self) -> bool:
        return is_sparse(self.J)

    @property
    def N(self) -> Matrix:
        """(na, nv) normal rows (sparse if J is)."""
        if self.is_sparse:
            return rows_of(self.J, np.arange(0, self.J.shape[0], self.dim))
        return self.J[:: self.dim]

    @property
    def T(self) -> FloatArray:
        """(na, dim - 1, nv) tangent rows, dense (kept for callers that index per contact)."""
        return to_dense(self.J).reshape(self.count, self.dim, self.nv)[:, 1:, :]

    def combine(self, coefficients: FloatArray) -> Matrix:
        """Rows ``sum_j C[c, r, j] J_cj`` (contact-major, ``r`` fastest): ``(na * R, nv)`` for
        coefficients ``C`` of shape ``(na, R, dim)``; one sparse product ``S J`` with the
        block-diagonal ``S = blockdiag(C_c)``, so it stays sparse when J is."""
        compiled = combine_kernel.combine(coefficients, self.J)  # the same arrays as the product below
        if compiled is not None:
            return compiled
        na, per, dim = coefficients.shape
        rows = np.repeat(np.arange(na * per), dim)
        cols = (np.arange(na)[:, None, None] * dim + np.arange(dim)[None, None, :]).repeat(per, axis=1)
        S = sp.csr_matrix((coefficients.reshape(-1), (rows, cols.reshape(-1))), shape=(na * per, na * dim))
        out = S @ self.J
        return out.tocsr() if is_sparse(out) else np.asarray(out)

    def directions(self, k: int) -> Matrix:
        """(na * k, nv) rows ``d_i`` (contact-major), in joint coordinates."""
        coefficients = tangent_directions(self.dim, k)
        if coefficients.shape[0] == 0:
            return self.combine(np.zeros((self.count, 0, self.dim)))
        if not self.is_sparse:
            return np.einsum("ij,cjv->civ", coefficients, self.T).reshape(-1, self.nv)
        full = np.zeros((self.count, k, self.dim))
        full[:, :, 1:] = coefficients
        return self.combine(full)

    def scaled_rows(self, scale: FloatArray) -> Matrix:
        """The rows of J multiplied by ``scale`` (one factor per row)."""
        if is_sparse(self.J):
            return (sp.diags(scale) @ self.J).tocsr()
        return self.J * scale[:, None]


#: A contact's Jacobian block counts as zero when its largest entry is at most this fraction of
#: the largest entry of the whole contact Jacobian: the rounding of ``J = J_1 - J_2`` for two
#: points of one rigid chain (a few ulps of the terms subtracted), far below any real lever arm.
ZERO_BLOCK_RTOL = 1e-12


def row_max(rows: Matrix) -> NDArray[np.float64]:
    """The largest absolute entry of each row."""
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        return np.zeros(rows.shape[0])
    return np.asarray(abs(rows).max(axis=1).toarray()).reshape(-1) if is_sparse(rows) else np.abs(rows).max(axis=1)


def active_contacts(contacts: Contacts, epsilon: float, rigid: bool = False) -> ActiveContacts:
    """Contacts with ``phi <= epsilon`` (Anitescu's epsilon-active set; inf keeps all) whose
    Jacobian block is not zero (:func:`moving_blocks`). A zero block moves no degree of freedom
    (two overlapping geoms of one welded body): no impulse can act through it and no velocity
    can separate it, so a rigid row ``0 >= -phi/h`` would make the step infeasible; it is
    skipped (zero impulse in the record: a zero block transmits nothing in any reference's
    model, since the impulse enters only as ``J^T lambda``) with a :class:`SkippedContactWarning`
    (shown once per count and call site by Python's default filter). ``rigid``: the caller's
    contacts are rigid (lcp, anitescu, ccp, coulomb), where the block is the normal row alone."""
    candidates = np.flatnonzero(contacts.phi <= epsilon)
    moving = candidates[moving_blocks(contacts, candidates, rigid)]
    if moving.shape[0] < candidates.shape[0]:
        skipped = candidates.shape[0] - moving.shape[0]
        warnings.warn(f"{skipped} contact candidate(s) skipped: their Jacobian block is zero (they move no "
                      "degree of freedom, e.g. overlapping geoms of one welded body), so they get zero impulse",
                      SkippedContactWarning, stacklevel=3)
    return select_contacts(contacts, moving)


def moving_blocks(contacts: Contacts, index: IntArray, rigid: bool = False) -> NDArray[np.bool_]:
    """Which contacts at ``index`` have a Jacobian block above :data:`ZERO_BLOCK_RTOL` of the
    Jacobian's largest entry. The block is the rows that can carry an impulse:

    * the normal row, the tangent rows where ``mu > 0`` and the torsional/rolling rows (soft
      contacts: regularized, sap). A frictionless contact whose normal row alone is zero moves
      nothing through ``J^T lambda`` (gymnasium's pusher: a puck on two horizontal slide joints
      resting on the table, MJCF condim 1), and its tangent rows carry no impulse.
    * ``rigid``: the normal row alone. Its impulse acts only as ``n^T lambda_n = 0``, so the
      row ``0 <= phi/h + n v'  _|_  lambda_n >= 0`` is infeasible for ``phi < 0`` (the round-off
      ``phi = -3.5e-15 h`` of own/tendon_gripper's finger tops against the palm they slide
      under) and leaves ``lambda_n``, and the friction ``mu lambda_n`` it bounds, arbitrary for
      ``phi = 0`` (a rigid cone with ``phi = 0`` locks the slide): the load that would press
      it is carried by the joints. A soft contact's normal impulse is set by its own
      regularization instead (MuJoCo's, which ``params=model`` reproduces), so it stays."""
    J = contacts.J
    if index.shape[0] == 0 or J.shape[1] == 0:
        return np.ones(index.shape[0], dtype=bool)
    row_max = (abs(J).max(axis=1).toarray().reshape(-1) if is_sparse(J) else np.abs(J).max(axis=1))
    rows = row_max.reshape(contacts.count, contacts.dim)
    scale = float(rows.max(initial=0.0))
    carrying = rows.copy()
    carrying[(contacts.mu == 0.0) | rigid, 1:] = 0.0
    block_max = carrying.max(axis=1)
    angular = contacts.angular
    if angular is not None:  # rows with coefficients > 0 only (AngularFriction)
        angular_max = (abs(angular.J).max(axis=1).toarray().reshape(-1) if is_sparse(angular.J)
                       else np.abs(angular.J).max(axis=1))
        scale = max(scale, float(angular_max.max(initial=0.0)))
        if not rigid:
            np.maximum.at(block_max, angular.contact, angular_max)
    return cast(NDArray[np.bool_], block_max[index] > ZERO_BLOCK_RTOL * scale)


def select_contacts(contacts: Contacts, index: Any) -> ActiveContacts:
    """The contacts at ``index``; ``recover`` re-selects the set recorded in the program. The
    last selection is kept on ``contacts`` (both are frozen): ``recover`` asking for the set
    ``build`` chose gets the same object back (gathering the pile's rows again costs ~50 us).
    Its ``index``, ``phi`` and ``mu`` are read-only copies, so no caller can change what a
    later call gets; values of ``contacts`` changed in place afterwards are not detected (as
    for :func:`contactopt.programs.csc.mark_symmetric`; nothing in contactopt does it)."""
    index = np.array(index, dtype=np.int_).reshape(-1)  # a copy: the caller's array may change
    last = contacts.__dict__.get("_last_selection")
    if last is not None and np.array_equal(last.index, index):
        return cast(ActiveContacts, last)
    dim = contacts.dim
    if index.shape[0] == contacts.count and np.array_equal(index, np.arange(contacts.count)):
        J = contacts.J
    else:
        J = rows_of(contacts.J, (index[:, None] * dim + np.arange(dim)).reshape(-1))
    phi, mu = contacts.phi[index], contacts.mu[index]
    for array in (index, phi, mu):
        array.setflags(write=False)
    angular = contacts.angular.of(index) if contacts.angular is not None else None
    active = ActiveContacts(index=index, phi=phi, mu=mu, J=J, dim=dim,
                            angular=angular if angular is not None and angular.count else None)
    object.__setattr__(contacts, "_last_selection", active)  # a cache on a frozen object
    return active


def scatter_impulses(contacts: Contacts, active: ActiveContacts, frame_impulses: FloatArray) -> FloatArray:
    """(nc, dim) impulses of every candidate contact: the active ones' values, zeros elsewhere."""
    impulses = np.zeros((contacts.count, contacts.dim))
    impulses[active.index] = np.asarray(frame_impulses).reshape(active.count, contacts.dim)
    return impulses


def polyhedral_frame_impulses(active: ActiveContacts, normal: FloatArray, beta: FloatArray, k: int,
                              scale: FloatArray | None = None) -> FloatArray:
    """(na, dim) frame impulses from normal parts and edge magnitudes ``beta`` (na * k):
    tangential part ``sum_i scale_c beta_ci d_i`` in the tangent basis."""
    frame = np.zeros((active.count, active.dim))
    frame[:, 0] = normal
    if k and active.count:
        coefficients = tangent_directions(active.dim, k)
        weights = beta.reshape(active.count, k)
        if scale is not None:
            weights = weights * scale[:, None]
        frame[:, 1:] = weights @ coefficients
    return frame


# --- non-contact rows (bilateral, limits, dry friction): contactopt.formulations.constraint_rows


def delassus_blocks(dynamics: Dynamics, J: Matrix, dim: int) -> FloatArray:
    """(n, dim, dim) diagonal blocks ``J_i M^{-1} J_i^T`` of the Delassus operator (contact ``i``'s
    ``dim`` rows ``J_i``; SAP's (S9) and MuJoCo's diagonal approximation). A sparse ``J`` stays
    sparse: ``Y = J M^{-1}`` (a sparse product with ``M^{-1}`` where the system gives it, else one
    solve per row), then ``block_i = J_i Y_i^T`` over the columns of ``J_i`` only
    (:func:`_local_products`), linear in the contacts."""
    n = J.shape[0] // dim if dim else 0
    if n == 0:
        return np.zeros((0, dim, dim))
    if not is_sparse(J):
        solved = dynamics.solve_M(J.T).T.reshape(n, dim, -1)
        return np.einsum("civ,cjv->cij", J.reshape(n, dim, -1), solved)
    J = to_csr(J)
    inverse = dynamics.inverse_matrix
    if inverse is not None and is_sparse(inverse) and is_diagonal(inverse):  # J_ik (J_ik / m_k)
        Y = csr(J.data * inverse.diagonal()[J.indices], J.indices, J.indptr, J.shape)
    elif inverse is not None:
        Y = (J @ inverse).tocsr()
        Y.sort_indices()
    else:
        Y = sp.csr_matrix(dynamics.solve_M(J.T.toarray()).T)
    local = _local_products(J, Y, n, dim)
    if local is not None:
        return local
    blocks = np.empty((n, dim, dim))
    for a in range(dim):  # dim <= 3: at most nine sparse elementwise products
        for b in range(dim):
            blocks[:, a, b] = np.asarray(J[a::dim].multiply(Y[b::dim]).sum(axis=1)).reshape(-1)
    return blocks


def is_diagonal(matrix: Any) -> bool:
    """Whether a sparse square matrix stores its diagonal only (free bodies' ``M^{-1}``)."""
    csc = sp.csc_matrix(matrix)
    n = csc.shape[0]
    return bool(csc.nnz == n and np.array_equal(csc.indices, np.arange(n))
                and np.array_equal(csc.indptr, np.arange(n + 1)))


def _local_products(J: sp.csr_matrix, Y: sp.csr_matrix, n: int, dim: int) -> FloatArray | None:
    """``block_i[a, b] = sum_k J[dim i + a, k] Y[dim i + b, k]`` when ``J`` and ``Y`` (sorted
    CSR) have one column pattern within each contact's ``dim`` rows (free bodies, as MuJoCo's
    chains and rigid3d's bodies give): the ``t``-th entries of a contact's rows share a column,
    so ``J_i`` and ``Y_i`` are ``(dim, count_i)`` arrays, padded to the widest and multiplied
    in one batch. ``None`` where the patterns differ (articulated chains: ``Y`` fills a
    whole tree)."""
    if Y.nnz != J.nnz or not np.array_equal(Y.indptr, J.indptr) or not np.array_equal(Y.indices, J.indices):
        return None
    counts = np.diff(J.indptr).reshape(n, dim)
    if not (counts == counts[:, :1]).all():
        return None
    row = np.repeat(np.arange(J.shape[0]), np.diff(J.indptr))
    slot = np.arange(J.nnz) - J.indptr[row]
    first_row = J.indptr[row - row % dim]
    if not np.array_equal(J.indices, J.indices[first_row + slot]):
        return None
    width = int(counts[:, 0].max(initial=1))
    place = row * width + slot  # (contact, row of the contact, slot), flat
    J_flat, Y_flat = np.zeros(n * dim * width), np.zeros(n * dim * width)
    J_flat[place], Y_flat[place] = J.data, Y.data
    return np.asarray(np.matmul(J_flat.reshape(n, dim, width), Y_flat.reshape(n, dim, width).transpose(0, 2, 1)))


def require_finite_mu(active: ActiveContacts, formulation: str) -> None:
    if active.count and not np.all(np.isfinite(active.mu)):
        raise ContactoptError(f"formulation {formulation!r} needs finite friction coefficients "
                              "(mu = inf is the impulsive sticking model)")
