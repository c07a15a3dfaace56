"""MuJoCo contacts as a sparse contact Jacobian, for all contacts at once (issue 10).

For a point ``p`` on body ``b`` MuJoCo's ``mj_jac`` sums, over the degrees of freedom ``j``
on the kinematic chain from ``b`` (or its nearest ancestor that has degrees of freedom) to
the root (``dof_parentid``), the columns ``jacp[:, j] = cdof_lin_j + cdof_ang_j x (p -
subtree_com[root(b)])`` (``cdof`` the com-based motion axes of ``mj_fwdPosition``; Todorov's
MuJoCo documentation, "Computation"). Here the chains are computed once per model and every
(contact, body) term is expanded over its chain with array operations: a contact's rows are
``frame (J_p(body2, p) - J_p(body1, p))`` as in :mod:`contactopt.mujoco.system`, assembled as
one COO -> CSR matrix, with no Python loop over contacts. Static bodies (the world, welded
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
    """Per body, the degrees of freedom of its chain to the root (``mj_jac``'s walk), stored
    CSR-like (``indptr``, ``dofs``), and the body whose ``body_rootid`` sets the offset."""

    def __init__(self, model: Any) -> None:
        nbody = int(model.nbody)
        dofs: list[int] = []
        indptr = [0]
        moving = np.zeros(nbody, dtype=np.int_)
        for body in range(nbody):
            b = body
            while b > 0 and int(model.body_dofnum[b]) == 0:  # skip bodies without dofs
                b = int(model.body_parentid[b])
            moving[body] = b
            j = int(model.body_dofadr[b]) + int(model.body_dofnum[b]) - 1 if b > 0 else -1
            while j >= 0:
                dofs.append(j)
                j = int(model.dof_parentid[j])
            indptr.append(len(dofs))
        self.indptr = np.array(indptr, dtype=np.int_)
        self.dofs = np.array(dofs, dtype=np.int_)
        self.root = np.asarray(model.body_rootid, dtype=np.int_)[moving]


def contact_jacobian(chains: Chains, data: Any, nv: int, frames: FloatArray, points: FloatArray,
                     body1: IntArray, body2: IntArray) -> sp.csr_matrix:
    """(3 nc, nv) CSR rows ``frame_c (J_p(body2_c, p_c) - J_p(body1_c, p_c))``.

    The point Jacobians are gathered per contact into compact blocks ``X_c`` (3 x the
    contact's degrees of freedom, ``J_p(body2) - J_p(body1)`` summed in that order) and
    multiplied by the frames in one batched product ``frame_c X_c``, the same arithmetic
    (and rounding) as the per-contact ``frame @ J`` it replaces."""
    nc = frames.shape[0]
    contact = np.concatenate([np.arange(nc), np.arange(nc)])
    body = np.concatenate([body2, body1])  # body2's terms first: J2 - J1 in that order
    sign = np.concatenate([np.ones(nc), -np.ones(nc)])
    lengths = chains.indptr[body + 1] - chains.indptr[body]
    term = np.repeat(np.arange(contact.shape[0]), lengths)
    position = np.arange(term.shape[0]) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    dof = chains.dofs[chains.indptr[body][term] + position]
    cdof = np.asarray(data.cdof)[dof]  # (E, 6): [angular; linear]
    offset = points[contact[term]] - np.asarray(data.subtree_com)[chains.root[body[term]]]
    jacp = (cdof[:, 3:] + np.cross(cdof[:, :3], offset)) * sign[term][:, None]  # (E, 3)
    owner = contact[term]
    keys, slot_of_entry = np.unique(owner * nv + dof, return_inverse=True)  # by contact, then dof
    key_contact, key_dof = keys // nv, keys % nv
    slot = np.arange(keys.shape[0]) - np.searchsorted(key_contact, key_contact)
    width = int(slot.max()) + 1 if slot.size else 0
    blocks = np.zeros((nc, width, 3))
    np.add.at(blocks, (owner, slot[slot_of_entry]), jacp)
    values = np.matmul(frames, np.ascontiguousarray(blocks.transpose(0, 2, 1)))  # (nc, 3, width)
    picked = values[key_contact, :, slot]  # (K, 3): the rows' values at each (contact, dof)
    rows = 3 * key_contact[:, None] + np.arange(3)
    return sp.csr_matrix((picked.reshape(-1), (rows.reshape(-1), np.repeat(key_dof, 3))), shape=(3 * nc, nv))
