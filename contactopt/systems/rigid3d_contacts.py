"""Array kernels of :mod:`contactopt.systems.rigid3d`: rotations, the block-diagonal mass
matrix and the point contacts of every body at once, with no Python loop over bodies or
contacts (issue 10).

The formulas are those documented in :mod:`contactopt.systems.rigid3d` (Featherstone 2008,
eq. 2.67 for the dynamics; reference 000, "Contact Jacobian" for the rows
``[d^T, (r x d)^T]``); here they are evaluated on stacked arrays:

* rotations ``R_i`` from the quaternions (the Hamilton formula, normalized first);
* ``M = blockdiag(m_i I3, R_i I_i R_i^T)`` as a sparse CSC matrix, and its inverse
  ``blockdiag(I3 / m_i, R_i I_i^{-1} R_i^T)``, also sparse, so that Delassus products are
  sparse and linear in the number of contacts;
* contact rows as one COO assembly: per (contact, body) term with sign ``s`` and offset
  ``r``, the 3 x 6 block ``s [F, F (r x)^T]`` with ``F`` the frame rows ``[n; t1; t2]``.

Sphere pairs come from a broad phase (``scipy.spatial.cKDTree.query_pairs``) when a finite
pair margin is set; the pairs are then sorted into the documented order (``A`` before
``B``, lexicographic), so the result is the all-pairs list restricted to gaps ``<= margin``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.spatial import cKDTree

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

#: Body-frame corner signs, ``itertools.product((-1, 1), repeat=3)`` order.
CORNER_SIGNS: FloatArray = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)
                                     for sz in (-1.0, 1.0)])
#: The ground frame rows ``[n; t1; t2] = [z; x; y]``.
GROUND_FRAME: FloatArray = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def rotations(quaternions: FloatArray) -> FloatArray:
    """(N, 3, 3) rotation matrices (body to world) of (N, 4) scalar-first quaternions."""
    q = quaternions / np.linalg.norm(quaternions, axis=1)[:, None]
    w, x, y, z = q.T
    R = np.empty((q.shape[0], 3, 3))
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - w * z)
    R[:, 0, 2] = 2 * (x * z + w * y)
    R[:, 1, 0] = 2 * (x * y + w * z)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - w * x)
    R[:, 2, 0] = 2 * (x * z - w * y)
    R[:, 2, 1] = 2 * (y * z + w * x)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def world_inertia(R: FloatArray, inertia: FloatArray) -> FloatArray:
    """(N, 3, 3) ``R_i I_i R_i^T`` (symmetrized against rounding) for principal moments (N, 3)."""
    Iw = (R * inertia[:, None, :]) @ R.transpose(0, 2, 1)
    return 0.5 * (Iw + Iw.transpose(0, 2, 1))


def block_diagonal(masses: FloatArray, rotational: FloatArray) -> sp.csc_matrix:
    """``blockdiag(m_i I3, B_i)`` as CSC from (N,) masses and (N, 3, 3) blocks ``B_i``."""
    n = masses.shape[0]
    base = 6 * np.arange(n)
    lin_rows = (base[:, None] + np.arange(3)).reshape(-1)
    rot_rows = np.repeat(base + 3, 9) + np.tile(np.repeat(np.arange(3), 3), n)
    rot_cols = np.repeat(base + 3, 9) + np.tile(np.tile(np.arange(3), 3), n)
    rows = np.concatenate([lin_rows, rot_rows])
    cols = np.concatenate([lin_rows, rot_cols])
    data = np.concatenate([np.repeat(masses, 3), rotational.reshape(-1)])
    return sp.csc_matrix((data, (rows, cols)), shape=(6 * n, 6 * n))


def sphere_pairs(centres: FloatArray, radii: FloatArray, margin: float) -> tuple[IntArray, IntArray]:
    """Index pairs ``(a, b)``, ``a < b``, into the sphere list, in lexicographic order: all of
    them for ``margin = inf``, else those with gap ``|c_b - c_a| - r_a - r_b <= margin``
    (broad phase: a k-d tree query within ``2 max r + margin``)."""
    count = centres.shape[0]
    if count < 2:
        empty = np.zeros(0, dtype=np.int_)
        return empty, empty.copy()
    if not np.isfinite(margin):
        a, b = np.triu_indices(count, k=1)
        return a.astype(np.int_), b.astype(np.int_)
    found = cKDTree(centres).query_pairs(2.0 * float(radii.max()) + margin, output_type="ndarray")
    if found.shape[0] == 0:
        empty = np.zeros(0, dtype=np.int_)
        return empty, empty.copy()
    a, b = np.minimum(found[:, 0], found[:, 1]), np.maximum(found[:, 0], found[:, 1])
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    gap = np.linalg.norm(centres[b] - centres[a], axis=1) - radii[a] - radii[b]
    keep = gap <= margin
    return a[keep].astype(np.int_), b[keep].astype(np.int_)


def pair_frames(normals: FloatArray) -> FloatArray:
    """(P, 3, 3) frames ``[n; t1; t2]`` of :func:`~contactopt.systems.geometry.tangent_basis`,
    vectorized: ``t1`` the axis least aligned with ``n`` (lowest index on ties) made
    orthogonal to ``n`` and normalized, ``t2 = n x t1``."""
    count = normals.shape[0]
    axes = np.zeros((count, 3))
    axes[np.arange(count), np.argmin(np.abs(normals), axis=1)] = 1.0
    t1 = axes - np.sum(axes * normals, axis=1)[:, None] * normals
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    t2 = np.cross(normals, t1)
    return np.stack([normals, t1, t2], axis=1)


def jacobian(contact: IntArray, body: IntArray, offset: FloatArray, sign: FloatArray,
             frames: FloatArray, nc: int, nv: int) -> sp.csr_matrix:
    """(3 nc, nv) CSR Jacobian from terms (contact, body, offset r, sign): rows ``3 c + j``,
    columns of the body, values ``sign [F_j, r x F_j]`` (``F_j`` row ``j`` of the frame)."""
    F = frames[contact]  # (T, 3, 3)
    blocks = np.concatenate([F, np.cross(offset[:, None, :], F)], axis=2) * sign[:, None, None]
    rows = np.repeat(3 * contact[:, None] + np.arange(3), 6, axis=1).reshape(-1)
    cols = np.tile(6 * body[:, None] + np.arange(6), (1, 3)).reshape(-1)
    return sp.csr_matrix((blocks.reshape(-1), (rows, cols)), shape=(3 * nc, nv))
