"""Array kernels of :mod:`contactopt.systems.rigid3d`: rotations, the block-diagonal mass
matrix and the point contacts of every body at once, with no Python loop over bodies or
contacts (issue 10).

The formulas are those documented in :mod:`contactopt.systems.rigid3d` (Featherstone 2008,
eq. 2.67 for the dynamics; Tedrake 2022, "Contact Jacobian" for the rows
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

import functools

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from contactopt.programs.csc import csc, csr, mark_symmetric

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

#: Body-frame corner signs, ``itertools.product((-1, 1), repeat=3)`` order.
CORNER_SIGNS: FloatArray = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)
                                     for sz in (-1.0, 1.0)])
#: The ground frame rows ``[n; t1; t2] = [z; x; y]``.
GROUND_FRAME: FloatArray = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def _rotation_map() -> FloatArray:
    """(16, 9) constant ``C`` with ``vec(R) |q|^2 = vec(q q^T) C`` (scalar-first ``q = (w, x, y,
    z)``, row-major ``R``): every entry of the Hamilton formula is a linear combination of the
    products ``q_i q_j``, e.g. ``R_00 |q|^2 = ww + xx - yy - zz``, ``R_01 |q|^2 = 2 (xy - wz)``."""
    w, x, y, z = range(4)
    terms = {0: [(w, w, 1), (x, x, 1), (y, y, -1), (z, z, -1)], 1: [(x, y, 2), (w, z, -2)],
             2: [(x, z, 2), (w, y, 2)], 3: [(x, y, 2), (w, z, 2)],
             4: [(w, w, 1), (x, x, -1), (y, y, 1), (z, z, -1)], 5: [(y, z, 2), (w, x, -2)],
             6: [(x, z, 2), (w, y, -2)], 7: [(y, z, 2), (w, x, 2)],
             8: [(w, w, 1), (x, x, -1), (y, y, -1), (z, z, 1)]}
    C = np.zeros((16, 9))
    for entry, products in terms.items():
        for i, j, coefficient in products:
            C[4 * i + j, entry] += coefficient
    return C


_ROTATION_MAP = _rotation_map()
#: (3, 9) constant ``E`` with ``vec([r]x) = r E`` (row-major cross-product matrix, ``[r]x a = r x a``).
_SKEW_MAP: FloatArray = np.zeros((3, 9))
for _row, _col, _axis, _sign in ((0, 1, 2, -1), (0, 2, 1, 1), (1, 0, 2, 1), (1, 2, 0, -1), (2, 0, 1, -1), (2, 1, 0, 1)):
    _SKEW_MAP[_axis, 3 * _row + _col] = _sign


def rotations(quaternions: FloatArray) -> FloatArray:
    """(N, 3, 3) rotation matrices (body to world) of (N, 4) scalar-first quaternions: the
    Hamilton formula of the normalized quaternion, as ``vec(q q^T) C / |q|^2`` (three array
    operations whatever N)."""
    outer = (quaternions[:, :, None] * quaternions[:, None, :]).reshape(-1, 16)
    norm2 = outer[:, 0] + outer[:, 5] + outer[:, 10] + outer[:, 15]
    return ((outer @ _ROTATION_MAP) / norm2[:, None]).reshape(-1, 3, 3)


def skews(vectors: FloatArray) -> FloatArray:
    """(N, 3, 3) cross-product matrices ``[r_i]x`` of (N, 3) vectors (Featherstone 2008, eq. 2.23)."""
    return (vectors @ _SKEW_MAP).reshape(-1, 3, 3)


def cross_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """Row-wise ``a_i x b_i`` of (N, 3) arrays, as ``[a_i]x b_i`` (``np.cross`` costs ~15 us
    of argument handling on the few rows of a time step)."""
    return (skews(a) @ b[:, :, None])[:, :, 0]


def world_inertia(R: FloatArray, inertia: FloatArray) -> FloatArray:
    """(N, 3, 3) ``R_i I_i R_i^T`` (symmetrized against rounding) for principal moments (N, 3)."""
    Iw = (R * inertia[:, None, :]) @ R.transpose(0, 2, 1)
    return 0.5 * (Iw + Iw.transpose(0, 2, 1))


def block_diagonal(masses: FloatArray, rotational: FloatArray) -> sp.csc_matrix:
    """``blockdiag(m_i I3, B_i)`` as CSC from (N,) masses and (N, 3, 3) blocks ``B_i``,
    assembled directly in compressed-column form: per body, three columns holding ``m_i``
    on the diagonal, then three columns holding the columns of ``B_i`` (the index arrays
    depend on N only: made once). Marked symmetric when the blocks are (those of
    :func:`world_inertia` are, exactly)."""
    n = masses.shape[0]
    indices, indptr = _block_diagonal_pattern(n)
    data = np.concatenate([np.repeat(masses, 3).reshape(n, 3),
                           rotational.transpose(0, 2, 1).reshape(n, 9)], axis=1).reshape(-1)
    out = csc(data, indices, indptr, (6 * n, 6 * n))  # canonical by construction
    return mark_symmetric(out) if np.array_equal(rotational, rotational.transpose(0, 2, 1)) else out


@functools.lru_cache(maxsize=16)
def _block_diagonal_pattern(n: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """(indices, indptr) of :func:`block_diagonal` for ``n`` bodies (read-only, shared)."""
    base = 6 * np.arange(n)
    counts = np.tile([1, 1, 1, 3, 3, 3], n)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    linear = base[:, None] + np.arange(3)  # (n, 3)
    rotational_rows = np.tile(base[:, None] + 3 + np.arange(3), (1, 3))  # (n, 9)
    indices = np.concatenate([linear, rotational_rows], axis=1).reshape(-1).astype(np.int32)
    for array in (indices, indptr):
        array.setflags(write=False)
    return indices, indptr


def block_diagonal_dense(masses: FloatArray, rotational: FloatArray) -> FloatArray:
    """:func:`block_diagonal` as a dense array (for small systems, where scipy.sparse's
    per-object overhead costs more than the zeros)."""
    n = masses.shape[0]
    blocks = np.zeros((n, 6, 6))
    blocks[:, (0, 1, 2), (0, 1, 2)] = masses[:, None]
    blocks[:, 3:, 3:] = rotational
    if n == 1:
        return blocks[0]
    out = np.zeros((n, 6, n, 6))
    index = np.arange(n)
    out[index, :, index, :] = blocks
    return out.reshape(6 * n, 6 * n)


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
    # an unbalanced, uncompacted tree builds faster (1000 spheres: 0.10 -> 0.07 ms) and finds the
    # same pairs; their order is fixed by the sort below
    tree = cKDTree(centres, balanced_tree=False, compact_nodes=False)
    found = tree.query_pairs(2.0 * float(radii.max()) + margin, output_type="ndarray")
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
    t2 = cross_rows(normals, t1)
    return np.stack([normals, t1, t2], axis=1)


def _blocks(F: FloatArray, offset: FloatArray, sign: FloatArray) -> FloatArray:
    """(T, 3, 6) blocks ``sign [F, rows r x F_j]``; the rows ``(r x F_j)^T = F_j [r]x^T =
    -F_j [r]x`` for all three frame rows at once."""
    signed = F * sign[:, None, None]
    return np.concatenate([signed, -(signed @ skews(offset))], axis=2)


def jacobian_dense(contact: IntArray, body: IntArray, offset: FloatArray, sign: FloatArray,
                   frames: FloatArray, nc: int, nv: int) -> FloatArray:
    """:func:`jacobian` as a dense array (small systems); a contact's terms touch distinct
    bodies, so every entry is written once."""
    blocks = _blocks(frames[contact], offset, sign)
    if nv == 6 and contact.shape[0] == nc:  # one body, one term per contact, in contact order
        return blocks.reshape(3 * nc, 6)
    out = np.zeros((3 * nc, nv))
    rows = (3 * contact[:, None, None] + np.arange(3)[None, :, None]).repeat(6, axis=2)
    cols = np.broadcast_to((6 * body[:, None] + np.arange(6))[:, None, :], blocks.shape)
    out[rows, cols] = blocks
    return out


def jacobian(contact: IntArray, body: IntArray, offset: FloatArray, sign: FloatArray,
             frames: FloatArray, nc: int, nv: int) -> sp.csr_matrix:
    """(3 nc, nv) CSR Jacobian from terms (contact, body, offset r, sign): rows ``3 c + j``,
    columns of the body, values ``sign [F_j, r x F_j]`` (``F_j`` row ``j`` of the frame).

    Assembled directly in compressed-row form: the terms are sorted by (contact, body), so a
    contact's rows hold its bodies' six columns in increasing order; a contact with two
    terms (a sphere pair) has rows of 12 entries."""
    order = np.lexsort((body, contact))
    contact, body, offset, sign = contact[order], body[order], offset[order], sign[order]
    blocks = _blocks(frames[contact], offset, sign)
    terms_per_contact = np.bincount(contact, minlength=nc)
    start = np.concatenate([[0], np.cumsum(terms_per_contact)[:-1]])  # first term of each contact
    # entries of row (c, j): the terms of c in order, six columns each
    row_length = 6 * np.repeat(terms_per_contact, 3)
    indptr = np.concatenate([[0], np.cumsum(row_length)]).astype(np.int32)
    rank = np.arange(contact.shape[0]) - start[contact]  # position of a term within its contact
    # destination of entry (term t, row j, column k): indptr[3 c + j] + 6 rank + k
    dest = (indptr[:-1][3 * contact[:, None] + np.arange(3)][:, :, None]
            + 6 * rank[:, None, None] + np.arange(6)[None, None, :])
    data = np.empty(int(indptr[-1]))
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data[dest.reshape(-1)] = blocks.reshape(-1)
    indices[dest.reshape(-1)] = np.broadcast_to((6 * body[:, None] + np.arange(6))[:, None, :],
                                                blocks.shape).reshape(-1)
    return csr(data, indices, indptr, (3 * nc, nv))  # canonical: a contact's bodies in increasing order
