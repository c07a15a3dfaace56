"""MuJoCo contacts as a sparse contact Jacobian, for all contacts at once (issue 10).

For a point ``p`` on body ``b`` MuJoCo's ``mj_jac`` sums, over the degrees of freedom ``j``
on the kinematic chain from ``b`` (or its nearest ancestor that has degrees of freedom) to
the root (``dof_parentid``), the columns ``jacp[:, j] = cdof_lin_j + cdof_ang_j x (p -
subtree_com[root(b)])`` (``cdof`` the com-based motion axes of ``mj_fwdPosition``; Todorov's
MuJoCo documentation, "Computation"). Here the chains are computed once per model and every
(contact, body) term is expanded over its (padded) chain with array operations: a contact's rows are
``frame (J_p(body2, p) - J_p(body1, p))`` as in :mod:`contactopt.systems.mjcf.system`, written
directly as one CSR matrix, with no Python loop over contacts. Static bodies (the world, welded
geoms) have an empty chain and contribute nothing, as in ``mj_jac``.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.model.step import AngularFriction
from contactopt.programs.csc import csr

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


class Chains:
    """Per body, the degrees of freedom of its chain to the root (``mj_jac``'s walk),
    ascending (a dof's parent has a smaller index in MuJoCo's numbering, so this is the walk
    reversed), padded with ``-1`` to the longest chain (``dofs``: ``(nbody, L)``), and the
    body whose ``body_rootid`` sets the offset (``root``)."""

    def __init__(self, model: Any) -> None:
        nbody = int(model.nbody)
        chains: list[list[int]] = []
        moving = np.zeros(nbody, dtype=np.int_)
        for body in range(nbody):
            b = body
            while b > 0 and int(model.body_dofnum[b]) == 0:  # skip bodies without dofs
                b = int(model.body_parentid[b])
            moving[body] = b
            j = int(model.body_dofadr[b]) + int(model.body_dofnum[b]) - 1 if b > 0 else -1
            chain = []
            while j >= 0:
                chain.append(j)
                j = int(model.dof_parentid[j])
            chains.append(chain[::-1])
        self.dofs = np.full((nbody, max(1, max(map(len, chains)))), -1, dtype=np.int_)
        for body, chain in enumerate(chains):
            self.dofs[body, :len(chain)] = chain
        self.root = np.asarray(model.body_rootid, dtype=np.int_)[moving]


def contact_jacobian(chains: Chains, data: Any, nv: int, frames: FloatArray, points: FloatArray,
                     body1: IntArray, body2: IntArray, dense: bool = False) -> Any:
    """(3 nc, nv) CSR rows ``frame_c (J_p(body2_c, p_c) - J_p(body1_c, p_c))`` (a dense array
    with ``dense``).

    Per contact the two bodies' chains (padded to the longest, ``2 L`` columns) give the
    point-Jacobian columns ``X_c`` (3 x 2L: body2's, then minus body1's) and the products
    ``frame_c X_c`` give every entry; the real (unpadded) entries are written row by row into
    the CSR arrays. A dof on both chains (a shared ancestor) appears twice in a row and is
    summed (``sum_duplicates``): ``frame (jacp_2 - jacp_1)`` by the distributive law, exactly
    0 for a common ancestor dof since both terms are computed identically.

    Every entry is the same sequence of floating-point operations whatever the machine: the
    3-term frame products are written out (``(f_0 x + f_1 y) + f_2 z``) instead of a batched
    matrix product, whose BLAS kernel (FMA or not) would change the last bit with the CPU; so
    the compiled twin (:func:`_rows_loops`, numba, used for the sparse rows when installed)
    gives the same bits, and so do all CPUs (tested)."""
    nc = frames.shape[0]
    if nv == 0 or nc == 0:
        return np.zeros((3 * nc, nv)) if dense else sp.csr_matrix((3 * nc, nv))
    bodies = np.stack([body2, body1], axis=1)  # (nc, 2): J2 - J1
    dofs = chains.dofs[bodies].reshape(nc, -1)  # (nc, 2L), -1 padded
    width = dofs.shape[1] // 2
    offsets = points[:, None, :] - np.asarray(data.subtree_com)[chains.root[bodies]]  # (nc, 2, 3)
    if not dense and COMPILED:
        compiled = _compiled()
        if compiled is not None:
            indptr, indices, values = compiled(dofs.astype(np.int64), np.asarray(data.cdof, dtype=np.float64),
                                               offsets, np.ascontiguousarray(frames, dtype=np.float64), width)
            return csr(values, indices, indptr, (3 * nc, nv))
    real = dofs >= 0
    cdof = np.asarray(data.cdof)[dofs]  # (nc, 2L, 6): [angular; linear]; padding gathers junk, dropped below
    w, r = cdof[..., :3], np.repeat(offsets, width, axis=1)
    jacp = cdof[..., 3:] + np.stack([w[..., 1] * r[..., 2] - w[..., 2] * r[..., 1],
                                     w[..., 2] * r[..., 0] - w[..., 0] * r[..., 2],
                                     w[..., 0] * r[..., 1] - w[..., 1] * r[..., 0]], axis=-1)  # cdof_ang x r
    jacp[:, width:] *= -1.0  # body1's columns: -J1 (exact)
    values = (frames[:, :, 0, None] * jacp[:, None, :, 0] + frames[:, :, 1, None] * jacp[:, None, :, 1]
              + frames[:, :, 2, None] * jacp[:, None, :, 2])  # (nc, 3, 2L)
    mask = np.broadcast_to(real[:, None, :], values.shape)
    if dense:  # small models: entries summed into place (a shared ancestor's two terms, in order)
        rows = np.broadcast_to(np.arange(3 * nc).reshape(nc, 3, 1), values.shape)[mask]
        flat = rows * nv + np.broadcast_to(dofs[:, None, :], values.shape)[mask]
        return np.bincount(flat, weights=values[mask], minlength=3 * nc * nv).reshape(3 * nc, nv)
    counts = np.repeat(real.sum(axis=1), 3)
    J = sp.csr_matrix((values[mask], np.broadcast_to(dofs[:, None, :], values.shape)[mask],
                       np.concatenate([[0], np.cumsum(counts)])), shape=(3 * nc, nv))
    J.sum_duplicates()  # sorts each row's dofs; sums a shared ancestor's two entries
    return J


def rotational_rows(chains: Chains, data: Any, nv: int, axes: FloatArray, body1: IntArray,
                    body2: IntArray) -> FloatArray:
    """(nc * k, nv) dense rows ``axis_ci . (J_r(body2_c) - J_r(body1_c))`` of the relative
    angular velocity about ``k`` axes per contact (``axes``: (nc, k, 3)): the torsional row
    (``k = 1``, the normal) and the rolling rows (the tangents) of MuJoCo's condim 4 and 6
    contacts. ``mj_jac``'s rotational Jacobian is the angular part ``cdof_ang`` of every dof on
    the body's chain (no offset), so these rows are those of :func:`contact_jacobian` without
    the ``cdof_ang x r`` term."""
    nc, k = axes.shape[0], axes.shape[1]
    rows = np.zeros((nc * k, nv))
    if nc == 0 or nv == 0:
        return rows
    cdof = np.asarray(data.cdof)
    for sign, bodies in ((1.0, body2), (-1.0, body1)):
        dofs = chains.dofs[bodies]  # (nc, L), -1 padded
        real = dofs >= 0
        angular = np.where(real[..., None], cdof[np.maximum(dofs, 0), :3], 0.0)  # (nc, L, 3)
        values = sign * np.einsum("ckx,clx->ckl", axes, angular)  # (nc, k, L)
        flat = (np.arange(nc * k).reshape(nc, k, 1) * nv + np.maximum(dofs, 0)[:, None, :])[np.broadcast_to(
            real[:, None, :], values.shape)]
        np.add.at(rows.reshape(-1), flat, values[np.broadcast_to(real[:, None, :], values.shape)])
    return rows


def angular_friction(chains: Chains, data: Any, nv: int, found: Any, keep: IntArray, bodies: IntArray,
                     frames: FloatArray, mu: FloatArray, dense: bool) -> AngularFriction | None:
    """The torsional (condim 4 and 6) and rolling (condim 6) rows of the kept contacts
    ``keep`` of MuJoCo's ``data.contact`` (``found``), in contact order: per contact the axes
    ``n`` (then ``t1``, ``t2``) of its ``frames`` with coefficients ``friction[2]`` (then
    ``friction[3:5]``), the rows ``axis . (J_r(body2) - J_r(body1))`` (:func:`rotational_rows`,
    as MuJoCo's ``efc_J``). Rows with a zero coefficient, and those of a contact without
    sliding friction (``mu = 0``, whose cone has no tangential part), carry nothing: left out."""
    dims = np.asarray(found.dim)[keep]
    friction = np.asarray(found.friction)[keep]
    torsional, rolling = np.flatnonzero(dims >= 4), np.flatnonzero(dims == 6)
    rows_contact = np.concatenate([torsional, np.repeat(rolling, 2)])
    rows_axis = np.concatenate([np.zeros(torsional.shape[0], dtype=np.int_), np.tile([1, 2], rolling.shape[0])])
    coefficient = friction[rows_contact, 2 + rows_axis] if rows_contact.size else np.zeros(0)
    kept = np.flatnonzero((coefficient > 0) & (mu[rows_contact] > 0))
    if not kept.size:
        return None
    order = kept[np.lexsort((rows_axis[kept], rows_contact[kept]))]  # by contact, then axis
    rows_contact, rows_axis, coefficient = rows_contact[order], rows_axis[order], coefficient[order]
    axes = frames[rows_contact, rows_axis][:, None, :]  # (m, 1, 3): one axis per row
    J = rotational_rows(chains, data, nv, axes, bodies[rows_contact, 0], bodies[rows_contact, 1])
    return AngularFriction(J=J if dense else sp.csr_matrix(J), mu=coefficient, contact=rows_contact, axis=rows_axis)


def declared_condims(model: Any) -> list[int]:
    """The contact dimensionalities a model can produce: ``geom_condim`` of every geom that
    can collide (``contype`` or ``conaffinity`` set) and ``pair_dim`` of its explicit pairs,
    sorted; read at load, before any step."""
    colliding = (np.asarray(model.geom_contype) != 0) | (np.asarray(model.geom_conaffinity) != 0)
    dims = set(np.asarray(model.geom_condim)[colliding].tolist()) | set(np.asarray(model.pair_dim).tolist())
    return sorted(int(d) for d in dims)


#: The entries of MuJoCo's friction vectors, in order: a geom's three, a pair's five.
FRICTION_NAMES = {"geom": ("sliding", "torsional", "rolling"),
                  "pair": ("sliding", "sliding", "torsional", "rolling", "rolling")}


def friction_problem(model: Any) -> str | None:
    """Why a model's friction coefficients are unusable, or None: every ``geom_friction``
    (sliding, torsional, rolling) and ``pair_friction`` entry must be a finite number >= 0
    (MuJoCo accepts negative ones and combines geoms by their maximum, which would hide them)."""
    for kind, values, count in (("geom", np.asarray(model.geom_friction), int(model.ngeom)),
                                ("pair", np.asarray(model.pair_friction), int(model.npair))):
        bad = np.argwhere(~(np.isfinite(values) & (values >= 0)))
        if bad.size:
            index, entry = int(bad[0, 0]), int(bad[0, 1])
            name = (model.geom(index).name if kind == "geom" else model.pair(index).name) or f"{kind} {index}"
            return (f"{kind} {name!r} has {FRICTION_NAMES[kind][entry]} friction {values[index, entry]:g} "
                    f"(friction coefficients must be finite and >= 0; {count} {kind}s)")
    return None


def _rows_loops(dofs: IntArray, cdof: FloatArray, offsets: FloatArray, frames: FloatArray,
                width: int) -> tuple[IntArray, IntArray, FloatArray]:
    """:func:`contact_jacobian`'s sparse rows as loops (numba): per contact, the chain
    entries in the same operations and order, sorted by dof (insertion sort: at most ``2 L``
    entries), a dof met twice summed; ``(indptr, indices, data)`` of the canonical CSR."""
    nc, chain = dofs.shape[0], dofs.shape[1]
    counts = np.zeros(nc, np.int64)
    columns = np.empty((nc, chain), np.int64)
    values = np.empty((nc, 3, chain))
    found = np.empty(chain, np.int64)
    entry = np.empty((3, chain))
    order = np.empty(chain, np.int64)
    for c in range(nc):
        n = 0
        for k in range(chain):
            dof = dofs[c, k]
            if dof < 0:
                continue
            side = 0 if k < width else 1
            r0, r1, r2 = offsets[c, side, 0], offsets[c, side, 1], offsets[c, side, 2]
            w0, w1, w2 = cdof[dof, 0], cdof[dof, 1], cdof[dof, 2]
            x = cdof[dof, 3] + (w1 * r2 - w2 * r1)
            y = cdof[dof, 4] + (w2 * r0 - w0 * r2)
            z = cdof[dof, 5] + (w0 * r1 - w1 * r0)
            if side == 1:
                x, y, z = -x, -y, -z
            found[n] = dof
            for i in range(3):
                entry[i, n] = frames[c, i, 0] * x + frames[c, i, 1] * y + frames[c, i, 2] * z
            order[n] = n
            n += 1
        for a in range(1, n):  # stable insertion sort of the entries by dof
            key, b = order[a], a - 1
            while b >= 0 and found[order[b]] > found[key]:
                order[b + 1] = order[b]
                b -= 1
            order[b + 1] = key
        m = 0
        for e in range(n):
            at = order[e]
            if m > 0 and columns[c, m - 1] == found[at]:  # a shared ancestor: its two terms summed
                for i in range(3):
                    values[c, i, m - 1] = values[c, i, m - 1] + entry[i, at]
            else:
                columns[c, m] = found[at]
                for i in range(3):
                    values[c, i, m] = entry[i, at]
                m += 1
        counts[c] = m
    indptr = np.zeros(3 * nc + 1, np.int64)
    indices = np.empty(3 * int(counts.sum()), np.int64)
    data = np.empty(indices.shape[0])
    p = 0
    for c in range(nc):
        for i in range(3):
            for e in range(counts[c]):
                indices[p] = columns[c, e]
                data[p] = values[c, i, e]
                p += 1
            indptr[3 * c + i + 1] = p
    return indptr, indices, data


#: Whether the sparse rows are assembled by the compiled :func:`_rows_loops` (numba installed
#: and ``CONTACTOPT_NO_NUMBA`` unset; tests switch it off to compare the two paths).
COMPILED = jit.ENABLED
_KERNEL: Any = None
_LOCK = threading.Lock()


def _compiled() -> Any:
    """The numba dispatcher of :func:`_rows_loops` (compiled at its first call, cached on disk)."""
    global _KERNEL
    if _KERNEL is None:  # checked again under the lock: compiled once
        with _LOCK:
            if _KERNEL is None:
                _KERNEL = jit.njit(_rows_loops) if jit.ENABLED else False
    return _KERNEL or None
