"""MuJoCo contacts as a sparse contact Jacobian, for all contacts at once (issue 10).

For a point ``p`` on body ``b`` MuJoCo's ``mj_jac`` sums, over the degrees of freedom ``j``
on the kinematic chain from ``b`` (or its nearest ancestor that has degrees of freedom) to
the root (``dof_parentid``), the columns ``jacp[:, j] = cdof_lin_j + cdof_ang_j x (p -
subtree_com[root(b)])`` (``cdof`` the com-based motion axes of ``mj_fwdPosition``; Todorov's
MuJoCo documentation, "Computation"). Here the chains are computed once per model and every
(contact, body) term is expanded over its (padded) chain with array operations: a contact's rows are
``frame (J_p(body2, p) - J_p(body1, p))`` as in :mod:`contactopt.mujoco.system`, written
directly as one CSR matrix, with no Python loop over contacts. Static bodies (the world, welded
geoms) have an empty chain and contribute nothing, as in ``mj_jac``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

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
    point-Jacobian columns ``X_c`` (3 x 2L: body2's, then minus body1's) and one batched
    product ``frame_c X_c`` gives every entry; the real (unpadded) entries are written
    row by row into the CSR arrays. A dof on both chains (a shared ancestor) appears twice
    in a row and is summed (``sum_duplicates``): ``frame (jacp_2 - jacp_1)`` by the
    distributive law, exactly 0 for a common ancestor dof since both terms are computed
    identically."""
    nc = frames.shape[0]
    if nv == 0 or nc == 0:
        return np.zeros((3 * nc, nv)) if dense else sp.csr_matrix((3 * nc, nv))
    bodies = np.stack([body2, body1], axis=1)  # (nc, 2): J2 - J1
    dofs = chains.dofs[bodies].reshape(nc, -1)  # (nc, 2L), -1 padded
    real = dofs >= 0
    cdof = np.asarray(data.cdof)[dofs]  # (nc, 2L, 6): [angular; linear]; padding gathers junk, dropped below
    width = dofs.shape[1] // 2
    offset = np.repeat(points[:, None, :] - np.asarray(data.subtree_com)[chains.root[bodies]], width, axis=1)
    w, r = cdof[..., :3], offset
    jacp = cdof[..., 3:] + np.stack([w[..., 1] * r[..., 2] - w[..., 2] * r[..., 1],
                                     w[..., 2] * r[..., 0] - w[..., 0] * r[..., 2],
                                     w[..., 0] * r[..., 1] - w[..., 1] * r[..., 0]], axis=-1)  # cdof_ang x r
    jacp[:, width:] *= -1.0  # body1's columns: -J1 (exact)
    values = np.matmul(frames, jacp.transpose(0, 2, 1))  # (nc, 3, 2L)
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

