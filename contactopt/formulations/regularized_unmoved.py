"""The rows of the ``regularized`` formulation's contacts that move nothing
(:mod:`contactopt.formulations.regularized`, :func:`.regularized_rows.soft_rows`): a tangent along a
locked direction, a pyramid edge ``n +- mu t`` whose lever arm about a hinge vanishes, a torsional
or rolling row of a body that cannot turn. Their Delassus diagonal is 0 or its rounding, so
MuJoCo's ``R = (1 - d)/d diag(A)`` (Todorov 2014; Tedrake 2022, "MuJoCo's convex formulation") is
too, and the step's program is not well posed without a positive ``R`` there."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.formulations.common import ZERO_BLOCK_RTOL, row_max

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


def unmoved_rows(rows: Any) -> NDArray[np.bool_]:
    """The contact rows that move nothing: every entry at most :data:`.common.ZERO_BLOCK_RTOL` of
    the rows' largest entry (the rounding of a lever arm that vanishes, as for a zero block)."""
    largest = row_max(rows)
    return largest <= ZERO_BLOCK_RTOL * float(largest.max(initial=0.0))


def unmoved_rows_regularized(R: FloatArray, unmoved: NDArray[np.bool_], owner: IntArray,
                              friction_row: NDArray[np.bool_], impratio: float) -> FloatArray:
    """``R`` where a row that moves nothing (``unmoved``: a tangent along a locked direction, or a
    pyramid edge ``n +- mu t`` whose lever arm about a hinge vanishes; ``J M^-1 J'`` is 0 or its
    rounding there, so ``R`` is too) takes a moving row of its contact's (``owner``) regularization:
    a friction row its normal row's ``R / impratio`` (the ``R`` of a friction row with that
    contact's unit Delassus ratio), any other row, or a friction row whose normal row moves
    nothing, its contact's largest ``R`` of a moving row. Its impulse changes no velocity, and
    a zero ``R`` would leave it unbounded (the dual's answer not unique, or no answer where its
    reference asks it to move: the pyramid edges of a penetrating contact at a hinge, step 0's
    "unbounded"; the primal's ``1/R`` infinite). With no reference on that row
    (:func:`.regularized_rows.soft_rows`: ``v_ref = J v``) its impulse is the rounding of 0, as the primal (which
    leaves such an edge out) and a zero block (:func:`.common.active_contacts`) give. A contact
    none of whose rows moves is not in the program (:func:`.common.moving_blocks`)."""
    moving = np.where(unmoved, 0.0, R)
    largest = np.zeros(int(owner.max(initial=-1)) + 1)
    np.maximum.at(largest, owner, moving)
    normal = np.zeros_like(largest)
    np.maximum.at(normal, owner, np.where(friction_row, 0.0, moving))
    fill = np.where(friction_row & (normal[owner] > 0.0), normal[owner] / impratio, largest[owner])
    return np.where(unmoved, fill, R)
