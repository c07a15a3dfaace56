"""A system's own constraint problem of one step as flat arrays (:class:`NativeArrays`): the
fixed-layout bundle a compiled step reads (issue "The step at MuJoCo's speed", item 1).

MuJoCo's constraint solve (Todorov 2014; MuJoCo documentation, "Computation: Constraint model")
is, in forces ``f`` over its rows ``J`` with regularization ``R`` and reference acceleration
``a_ref``::

    minimize_f  1/2 f^T (J M^{-1} J^T + R) f + f^T (J a0 - a_ref)   subject to  f in K,

with ``a0 = M^{-1} smooth_force``; the next velocity is ``v' = v + S^{-1} (h smooth_force + J^T x)``
with the impulses ``x = h f`` and ``S`` the step matrix of the system's integrator. The rows keep
the system's order; :data:`ROW_KINDS` names what each row is, with contactopt's own codes (not
MuJoCo's enum), so that the formulation layer reads them without knowing MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["CONE", "EDGE", "EQUALITY", "FRICTION_LOSS", "LIMIT", "ROW_KINDS", "NativeArrays"]

#: Row kinds: an equality row (free impulse), a dry-friction row (``|f| <= frictionloss``), a
#: limit row (``f >= 0``), a contact row whose impulse is ``>= 0`` alone (a pyramid's edge, a
#: frictionless normal), a row of an elliptic contact's cone (``[n, t1, ...]``).
EQUALITY, FRICTION_LOSS, LIMIT, EDGE, CONE = 0, 1, 2, 3, 4
ROW_KINDS = {"equality": EQUALITY, "friction_loss": FRICTION_LOSS, "limit": LIMIT, "edge": EDGE, "cone": CONE}


@dataclass(frozen=True)
class NativeArrays:
    """One step's own constraint problem of a system, as arrays (module docstring).

    Attributes:
        dt: the step ``h``.
        v: (nv,) the velocity at the start of the step.
        M: (nv, nv) the mass matrix (dense).
        step_matrix: (nv, nv) ``S`` of the velocity update (``M`` plus the implicit part of the
            integrator; not symmetric for MuJoCo's ``implicit``).
        smooth_force: (nv,) every non-constraint generalized force.
        acceleration_free: (nv,) ``a0 = M^{-1} smooth_force``.
        J: (m, nv) the constraint rows (dense).
        R: (m,) the rows' regularization (> 0).
        a_ref: (m,) the reference acceleration of each row.
        position: (m,) each row's position (MuJoCo's ``efc_pos``: a contact's distance, a limit's
            distance to its bound, an equality's violation).
        kind: (m,) :data:`ROW_KINDS` code of each row.
        bound: (m,) a dry-friction row's force bound (``frictionloss``), 0 on other rows.
        cone_scale: (m,) on the rows of an elliptic contact, ``(1, mu_1, ..., mu_k)``: the cone
            ``f_n >= ||(f_i / mu_i)_i||`` is ``||(f_i / D_i)|| <= f_n / D_0``; 1 elsewhere.
        contact: (m,) the contact a contact row belongs to (-1 for other rows).
        contact_address: (nc,) each contact's first row.
        contact_dim: (nc,) each contact's row count in the cone (``condim``; a pyramid has
            ``2 (condim - 1)`` edge rows, a frictionless contact 1).
        contact_friction: (nc, 5) each contact's friction coefficients (MuJoCo's ``friction``).
        contact_distance: (nc,) each contact's signed distance.
        pyramidal: whether the contacts' rows are pyramid edges (else elliptic cones).
    """

    dt: float
    v: FloatArray
    M: FloatArray
    step_matrix: FloatArray
    smooth_force: FloatArray
    acceleration_free: FloatArray
    J: FloatArray
    R: FloatArray
    a_ref: FloatArray
    position: FloatArray
    kind: IntArray
    bound: FloatArray
    cone_scale: FloatArray
    contact: IntArray
    contact_address: IntArray
    contact_dim: IntArray
    contact_friction: FloatArray
    contact_distance: FloatArray
    pyramidal: bool

    @property
    def nv(self) -> int:
        return int(self.v.shape[0])

    @property
    def m(self) -> int:
        return int(self.R.shape[0])

    @property
    def contact_count(self) -> int:
        return int(self.contact_address.shape[0])

    def v_star(self) -> FloatArray:
        """``v + h a0``: the velocity the constraint solve starts from (its primal's ``v*``)."""
        return self.v + self.dt * self.acceleration_free
