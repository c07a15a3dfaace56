"""Torsional and rolling friction (MuJoCo's condim 4 and 6) in the contact cones.

MuJoCo documentation, "Computation: contact" and "Modeling: contact parameters": a contact of
condim 4 adds a torsional row (the relative angular velocity about the normal), condim 6 also
two rolling rows (about the tangents), each with its own coefficient ``mu_i`` (a length:
``contact.friction = [sliding, sliding, torsional, rolling, rolling]``), all sharing the
contact's normal impulse (:class:`contactopt.model.step.AngularFriction`).

**Elliptic cone** (``ccp``, ``sap``, ``regularized`` with ``cone = "elliptic"``): MuJoCo's ::

    lambda_n >= || (lambda_t1 / mu, lambda_t2 / mu, lambda_i / mu_i, ...) ||

a second-order cone of dimension ``3 + m_c`` (``m_c`` the contact's angular rows) with each
row scaled by its own coefficient: in conic terms the rows ``[n, t1, t2, e_1, ..]`` with
coefficients ``(1, mu, mu, mu_1, ..)`` (:func:`cone_rows`), a contact's frame rows followed by
its angular rows.

**Polyhedral** (``anitescu``, ``lcp``, ``regularized`` with ``cone = "pyramidal"``): as
MuJoCo's pyramidal cone does for every friction direction of condim > 3, each angular row
``e_i`` adds the two edges ``n +- mu_i e_i`` (:func:`angular_edges`) to the contact's sliding
edges; an edge impulse ``beta`` adds ``beta`` to the normal impulse and ``+- mu_i beta`` to the
row's. Every edge lies on the elliptic cone, so their hull is inside it (an inner
approximation, exact on each axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.formulations.common import ActiveContacts
from contactopt.model.step import Contacts, Matrix, is_sparse
from contactopt.programs import SOC, Cone, Nonneg, Zero
from contactopt.programs.csc import diagonal_csc, rows_of

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


@dataclass(frozen=True)
class ConeRows:
    """The rows of the elliptic cones, contact by contact: frame rows then angular rows.

    Attributes:
        rows: (3 na + m, nv) the rows in cone order (sparse when J is).
        coefficient: (3 na + m,) ``1`` (normal), ``mu`` (tangents), ``mu_i`` (angular rows).
        dims: (na,) each contact's cone dimension, ``3 + m_c``.
        frame: (na, 3) positions of each contact's frame rows in ``rows``.
        angular: (m,) positions of the angular rows.
        angular_scale: (m,) the factor the angular rows carry in ``rows``: 1, or ``mu_i`` when
            asked for rows in the units of the normal row (a dual's impulse on such a row is
            then ``lambda_i / mu_i``, of the normal impulse's size: a well-scaled program).
    """

    rows: Matrix
    coefficient: FloatArray
    dims: IntArray
    frame: IntArray
    angular: IntArray
    angular_scale: FloatArray


def cone_rows(active: ActiveContacts, normal_units: bool = False) -> ConeRows:
    """The rows of every contact's cone (module docstring), for contacts of ``dim = 3``; with
    ``normal_units`` the angular rows multiplied by their ``mu_i`` (``angular_scale``)."""
    na, angular = active.count, active.angular
    counts = np.zeros(na, dtype=np.int_)
    contact = np.zeros(0, dtype=np.int_) if angular is None else angular.contact
    np.add.at(counts, contact, 1)
    dims = 3 + counts
    starts = np.cumsum(dims) - dims
    frame = starts[:, None] + np.arange(3)
    first_row = np.cumsum(counts) - counts  # each contact's first angular row
    angular_at = starts[contact] + 3 + (np.arange(contact.shape[0]) - first_row[contact])
    total = int(dims.sum())
    source = np.empty(total, dtype=np.int_)  # row of [J; E] placed at each position
    source[frame.reshape(-1)] = np.arange(3 * na)
    source[angular_at] = 3 * na + np.arange(contact.shape[0])
    coefficient = np.empty(total)
    coefficient[frame.reshape(-1)] = np.column_stack([np.ones(na), active.mu, active.mu]).reshape(-1)
    if angular is None:
        return ConeRows(active.J, coefficient, dims, frame, angular_at, np.ones(0))
    coefficient[angular_at] = angular.mu
    angular_scale = angular.mu if normal_units else np.ones(angular.count)
    E = angular.J
    if normal_units:
        E = E.multiply(angular.mu[:, None]).tocsr() if is_sparse(E) else E * angular.mu[:, None]
    stacked = vstack_rows([active.J, E])
    return ConeRows(rows_of(stacked, source) if is_sparse(stacked) else stacked[source], coefficient, dims,
                    frame, angular_at, angular_scale)


def vstack_rows(blocks: list[Matrix]) -> Matrix:
    """Row blocks stacked: CSR when any block is sparse, dense otherwise."""
    if any(is_sparse(block) for block in blocks):
        return sp.vstack([sp.csr_matrix(block) for block in blocks], format="csr")
    return np.vstack(blocks)


def angular_edges(active: ActiveContacts) -> tuple[Matrix, IntArray]:
    """``(rows, contact)``: the edges ``n_c + mu_i e_i`` and ``n_c - mu_i e_i`` of every
    angular row, interleaved (``+`` first), and the contact of each edge."""
    angular = active.angular
    if angular is None:
        return np.zeros((0, active.nv)), np.zeros(0, dtype=np.int_)
    N = active.N
    normal = N[angular.contact] if not is_sparse(N) else N[angular.contact].tocsr()
    mu = angular.mu[:, None]
    scaled = angular.J.multiply(mu).tocsr() if is_sparse(angular.J) else angular.J * mu
    plus, minus = normal + scaled, normal - scaled
    m = angular.count
    order = np.arange(2 * m).reshape(2, m).T.reshape(-1)  # [+0, -0, +1, -1, ..]
    edges = vstack_rows([plus, minus])
    return (rows_of(edges, order) if is_sparse(edges) else edges[order]), np.repeat(angular.contact, 2)


def edge_impulses(active: ActiveContacts, beta: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(normal parts per contact, angular impulses)`` of the angular edges' impulses ``beta``
    (interleaved ``+, -`` per row, :func:`angular_edges`)."""
    angular = active.angular
    if angular is None:
        return np.zeros(active.count), np.zeros(0)
    pairs = np.asarray(beta, dtype=np.float64).reshape(angular.count, 2)
    normal = np.bincount(angular.contact, weights=pairs.sum(axis=1), minlength=active.count).astype(np.float64)
    return normal, angular.mu * (pairs[:, 0] - pairs[:, 1])


def scatter_angular(contacts: Contacts, active: ActiveContacts, impulses: FloatArray) -> FloatArray:
    """(m,) impulses of every candidate's angular rows: the active contacts' values, 0 elsewhere."""
    if contacts.angular is None:
        return np.zeros(0)
    out = np.zeros(contacts.angular.count)
    if active.angular is not None and active.angular.count:
        chosen = np.isin(contacts.angular.contact, active.index)  # the rows ``of`` kept, in order
        out[np.flatnonzero(chosen)] = impulses
    return out


def dual_cone(active: ActiveContacts, cone: ConeRows) -> tuple[sp.csc_matrix, tuple[Cone, ...]]:
    """``A`` and cones with ``-A lambda in K`` iff every contact's impulse (cone order) is in
    MuJoCo's elliptic cone: ``[mu lambda_n, lambda_t, mu lambda_i / mu_i] in SOC(3 + m_c)``
    (``mu x_i`` for the variable ``x_i = lambda_i / mu_i`` of rows in normal units); a
    contact without sliding friction (and so without angular rows) gets ``lambda_n >= 0``,
    ``lambda_t = 0``."""
    m = cone.coefficient.shape[0]
    scale = np.ones(m)
    sliding = active.mu > 0
    scale[cone.frame[:, 0]] = np.where(sliding, active.mu, 1.0)
    if active.angular is not None:
        scale[cone.angular] = active.mu[active.angular.contact] * cone.angular_scale / active.angular.mu
    cones = tuple(part for c, d in enumerate(cone.dims.tolist())
                  for part in ((SOC(d),) if sliding[c] else (Nonneg(1), Zero(d - 1))))
    return diagonal_csc(-scale), cones


@dataclass(frozen=True)
class PrimalCone:
    """The contact rows of a primal (S6) program with angular rows (:mod:`contactopt.programs.primal`):
    ``cone.rows[keep]`` (the tangents of contacts without sliding friction left out), the
    contact and kind of each kept row (0 normal, 1 tangent, 2 angular), its scale ``D``
    (``cone.coefficient``) and the cones."""

    cone: ConeRows
    keep: IntArray
    contact: IntArray
    kind: IntArray
    cones: tuple[Cone, ...]

    @property
    def rows(self) -> Matrix:
        return rows_of(self.cone.rows, self.keep) if is_sparse(self.cone.rows) else self.cone.rows[self.keep]

    @property
    def scale(self) -> FloatArray:
        return np.asarray(self.cone.coefficient[self.keep])

    def impulses(self, values: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(frame impulses (na, 3), angular impulses (m,))`` from the kept rows' values."""
        full = np.zeros(self.cone.coefficient.shape[0])
        full[self.keep] = values
        return full[self.cone.frame], full[self.cone.angular]


def primal_cone(active: ActiveContacts) -> PrimalCone:
    cone = cone_rows(active)
    m = cone.coefficient.shape[0]
    contact = np.repeat(np.arange(active.count), cone.dims)
    kind = np.full(m, 2)
    kind[cone.frame[:, 0]] = 0
    kind[cone.frame[:, 1:].reshape(-1)] = 1
    sliding = active.mu > 0
    keep = np.flatnonzero(sliding[contact] | (kind == 0))
    cones = tuple(SOC(d) if sliding[c] else Nonneg(1) for c, d in enumerate(cone.dims.tolist()))
    return PrimalCone(cone, keep, contact[keep], kind[keep], cones)
