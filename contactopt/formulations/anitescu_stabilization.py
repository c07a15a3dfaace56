"""Which penetrating contacts of Anitescu's program can be driven out at all: the stabilization
term ``phi / h`` kept where the contact's own cone edges can separate it, dropped where they
cannot (an otherwise infeasible program).

Anitescu 2006 (Tedrake 2022, "Anitescu's convex formulation") asks of each edge ``e_ci = n_c +
mu_c d_ci`` of contact ``c``::

    phi_c / h + e_ci v' >= 0,        i.e.   e_ci v' >= g_c := -phi_c / h      for every i,

(``g_c = min(-phi_c / h, v_max)`` with the recovery cap, :mod:`.recovery`). The term
``phi_c / h`` is the constraint stabilization of Anitescu & Hart 2004 ("A constraint-stabilized
time-stepping approach for rigid multibody dynamics with joints, contact and friction", Int. J.
Numer. Methods Eng. 60): it turns the velocity-level rows into the position-level condition
``phi_c(q') >= 0`` to first order, so that a penetration is removed instead of drifting. For a
separated contact (``g_c <= 0``) ``v' = 0`` satisfies the rows; a penetrating one (``g_c > 0``)
needs a ``v'`` with every edge strictly positive, and Anitescu's relaxed cone couples the normal
with the tangents: ``n_c v' >= g_c + mu_c |d_ci v'|`` for all ``i``.

**When no v' exists.** By homogeneity (``v' -> s v'``), some ``v'`` reaches ``E_c v' >= g_c 1``
with ``g_c > 0`` iff some ``v'`` has ``E_c v' > 0``, where ``E_c`` stacks the contact's edges
(its sliding edges and its angular edges ``n_c +- mu_i e_i``, :mod:`.angular_friction`). By
Gordan's theorem of the alternative this fails exactly when a nonzero ``beta >= 0`` has
``E_c^T beta = 0``: some impulse in the contact's cone moves nothing. Then the program is
infeasible whatever the other rows are, at any step length and any cap ``v_max > 0``. This
happens on a rigid chain whose normal row's lever is below ``mu`` times a tangent's along the
same degrees of freedom (the friction cone spans the joint's null motion: a wedge that jams);
``problems/mjcf/user_arm.xml``'s upper-link capsule 3 cm in its welded base has
``n v' = -3.75e-3 w`` and ``t2 v' = -0.085 w`` in the shoulder rate ``w`` alone, so the edges
``n +- mu t2`` have opposite signs at ``mu = 1``.

**The remedy.** The term is a stabilization, not part of the velocity-level contact law (at
``phi = 0`` the rows are Anitescu's cone itself; Anitescu & Hart add the position term only to
keep the drift bounded), so it may be weakened where it cannot be met: contact by contact we
scale it by the largest factor ``gamma_c in [0, 1]`` that the contact's own rows can meet
(``gamma_c phi_c / h``, as the recovery cap already weakens it to ``-v_max``). By the same
homogeneity ``gamma_c`` is 1 where some ``E_c v' > 0`` exists and 0 where none does: such a
contact keeps its rows with ``g_c = 0`` (``E_c v' >= 0``, met by ``v' = 0`` of its degrees of
freedom), so it still carries impulse
and blocks further penetration but is not asked to leave a depth it cannot leave. A program
whose every contact has such a ``v'`` is built bit for bit as before; only a program that the
reference's rows made infeasible by one of its contacts changes, and only in that contact's
constant term. (A program infeasible only through several contacts or the bilateral rows
together is left as the reference writes it.) With ``gamma_c = 0`` the contact has the rows
Anitescu's program gives the same geometry touching at ``phi = 0``; on the arm they lock the
shoulder (a motion keeps ``n v' >= mu |t v'|`` only at ``w = 0``), as they would at ``phi = 0``.

**The test.** With the rows normalized, ``e^_i = e_i / ||e_i||_2``, the contact's margin is
``t* = max { min_i e^_i v : ||v||_inf <= 1 }``; it is separable when ``t* > MARGIN``. First the
normal direction ``v = n_c / ||n_c||_inf`` (enough for nearly every contact: ``e_i n_c^T =
||n_c||^2 + mu d_i T_c n_c^T``), then, where that fails, the linear program over the edges'
columns (HiGHS through :func:`scipy.optimize.linprog`), whose answer is re-checked in NumPy:
where ``t* = 0`` exactly no ``v`` can give a positive minimum, so the solver's tolerances never
keep an unseparable contact. An edge at the rounding of the Jacobian (largest entry at most
:data:`.common.ZERO_BLOCK_RTOL` of the Jacobian's, as :func:`.common.moving_blocks` judges a
zero block) counts as zero: nothing separates it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptWarning
from contactopt.formulations.common import ZERO_BLOCK_RTOL, ActiveContacts
from contactopt.model.step import Contacts, Matrix, is_sparse

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]
BoolArray = NDArray[np.bool_]

#: The smallest margin ``t*`` (module docstring, "The test") of a separable contact. Its rows
#: then reach ``g_c`` with ``||v'||_inf <= g_c / (MARGIN min ||e_i||)``; a margin at the rounding
#: of the rows (1e-16 of them) is no separation, and 1e-9 is far above it and far below any
#: contact whose demanded speed is physical.
MARGIN = 1e-9


class UnstabilizedContactWarning(ContactoptWarning):
    """A penetrating contact whose cone edges cannot separate it kept its rows without the
    stabilization term ``phi / h`` (:mod:`contactopt.formulations.anitescu_stabilization`)."""


def _row_reduce(rows: Matrix, ufunc: np.ufunc, values: FloatArray) -> FloatArray:
    """``ufunc`` over each CSR row's stored ``values`` (0 for an empty row): scipy's own row
    maxima cost ~0.7 ms on a 2000-row program, ``reduceat`` on the stored entries 0.05 ms."""
    indptr = np.asarray(rows.indptr)
    out = np.zeros(rows.shape[0])
    filled = np.diff(indptr) > 0
    if filled.any():
        out[filled] = ufunc.reduceat(values, indptr[:-1][filled])
    return out


def _row_norms(rows: Matrix) -> FloatArray:
    if is_sparse(rows):
        return np.sqrt(_row_reduce(rows, np.add, np.asarray(rows.data, dtype=np.float64) ** 2))
    return np.asarray(np.linalg.norm(rows, axis=1), dtype=np.float64)


def _row_max(rows: Matrix) -> FloatArray:
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        return np.zeros(rows.shape[0])
    if is_sparse(rows):
        return _row_reduce(rows, np.maximum, np.abs(np.asarray(rows.data, dtype=np.float64)))
    return np.asarray(np.abs(rows).max(axis=1), dtype=np.float64)


def _dense(rows: Matrix) -> FloatArray:
    return np.asarray(rows.toarray() if is_sparse(rows) else rows, dtype=np.float64)


def margin(rows: Matrix) -> float:
    """``t* = max { min_i e^_i v : ||v||_inf <= 1 }`` of one contact's edge rows (module
    docstring, "The test"), as certified by the ``v`` the linear program returns: the minimum
    NumPy computes at that ``v`` (a lower bound of ``t*``, at most 0 where ``t* = 0``)."""
    from scipy.optimize import linprog  # only for the rare contact the normal direction fails

    E = _dense(rows)
    norms = np.linalg.norm(E, axis=1)
    if E.shape[0] == 0 or not (norms > 0).all():
        return 0.0 if E.shape[0] == 0 else -1.0
    columns = np.flatnonzero(np.abs(E).max(axis=0) > 0)
    unit = E[:, columns] / norms[:, None]
    m, n = unit.shape
    # variables (v, t): maximize t subject to t - e^_i v <= 0, -1 <= v <= 1, t <= 1
    result = linprog(np.r_[np.zeros(n), -1.0], A_ub=np.hstack([-unit, np.ones((m, 1))]), b_ub=np.zeros(m),
                     bounds=[(-1.0, 1.0)] * n + [(None, 1.0)], method="highs")
    if result.x is None:
        return 0.0
    v = np.asarray(result.x[:n], dtype=np.float64)
    return float((unit @ v).min())


def unseparable(edges: Matrix, contact: IntArray, normals: Matrix, penetrating: BoolArray,
                scale: float) -> BoolArray:
    """Which contacts (``penetrating`` marks the candidates, one entry per contact) have edge
    rows (``edges[contact == c]``) with no ``v`` making them all positive by more than
    :data:`MARGIN` (module docstring). ``normals``: (contacts, nv) the normal rows; ``scale``:
    the largest entry of the contact Jacobian (an edge at most ``ZERO_BLOCK_RTOL * scale`` in
    every entry counts as zero)."""
    out = np.zeros(penetrating.shape[0], dtype=bool)
    chosen = np.flatnonzero(penetrating[contact])
    if chosen.shape[0] == 0:
        return out
    owner = contact[chosen]
    E: Matrix
    if is_sparse(edges):
        E, N = sp.csr_matrix(edges)[chosen], sp.csr_matrix(normals)
        normal_max = _row_max(N)[owner]
        dots = np.asarray(E.multiply(N[owner]).sum(axis=1), dtype=np.float64).reshape(-1)
    else:
        dense_edges, dense_normals = _dense(edges)[chosen], _dense(normals)[owner]
        E = dense_edges
        normal_max = _row_max(dense_normals)
        dots = (dense_edges * dense_normals).sum(axis=1)
    zero = _row_max(E) <= ZERO_BLOCK_RTOL * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        value = dots / (_row_norms(E) * normal_max)
    passed = np.ones(penetrating.shape[0], dtype=bool)
    np.logical_and.at(passed, owner, ~zero & (value > MARGIN))
    for c in np.unique(owner):
        if passed[c]:
            continue
        mine = owner == c
        if zero[mine].any():
            out[c] = True
            continue
        rows = E[np.flatnonzero(mine)]
        out[c] = margin(rows) <= MARGIN
    return out


def feasible_target(active: ActiveContacts, edges: Matrix, contact: IntArray, target: FloatArray,
                    contacts: Contacts, metadata: dict[str, Any]) -> FloatArray:
    """The rows' constant terms ``phi_c / h`` (``target``, one per active contact; ``edges``
    and ``contact``: every edge row and its contact) with 0 in place of a penetrating
    contact's term where its edges cannot separate it (:func:`unseparable`). ``target`` itself
    when none is (every other program is built as before); otherwise those contacts' indices
    (in the system's list) are recorded in ``metadata["unstabilized"]`` and an
    :class:`UnstabilizedContactWarning` is issued."""
    penetrating = target < 0.0
    if not penetrating.any():
        return target
    J = contacts.J
    scale = float(np.abs(J.data if is_sparse(J) else J).max(initial=0.0))  # the Jacobian's largest entry
    lost = unseparable(edges, contact, active.N, penetrating, scale)
    if not lost.any():
        return target
    metadata["unstabilized"] = active.index[lost].tolist()
    warnings.warn(f"{int(lost.sum())} penetrating contact(s) keep their rows without phi/h: their cone edges "
                  "admit no velocity that separates them (the program would be infeasible)",
                  UnstabilizedContactWarning, stacklevel=4)
    return np.where(lost, 0.0, target)
