"""The records of the step as arrays (:mod:`.native_step`, :mod:`.native_run`): a compiled step's
Newton code and verdict numbers judged into a status and message (:func:`verdict`), one step's
:class:`~contactopt.records.step.StepRecord` (:func:`record_of`), and the steps of a compiled run
appended to a run's :class:`~contactopt.records.columns.StepColumns` from the run's columns at
once (:func:`extend_columns`), with the same statuses, messages and arrays as :func:`record_of`'s.

**Records.** The contacts of a record are MuJoCo's own contacts of the step (``data.contact``,
the model as written: ``phi`` their ``dist``, ``impulses`` their frame impulses ``[n, t1, t2]``,
``candidates`` and ``mujoco_contacts`` their count); the equality, limit and dry-friction rows'
impulses are MuJoCo's rows of the step, in MuJoCo's order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.model.native import EQUALITY, FRICTION_LOSS, LIMIT
from contactopt.programs import Residuals, Status
from contactopt.records.columns import STATUSES, StepColumns
from contactopt.records.step import StepRecord
from contactopt.solvers.base import INACCURATE_LEVEL, WRONG_LEVEL, judge
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton.solver import kernel_status

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["extend_columns", "judge_arrays", "record_of", "verdict"]

#: The Newton codes whose status is usable as they stand (optimal, each with its own message).
_CONVERGED = (kernels.CRITERION, kernels.COST_FLOOR, kernels.NO_DESCENT)
_KINDS = {"bilateral": EQUALITY, "limits": LIMIT, "friction_loss": FRICTION_LOSS}


def record_of(t: float, status: Status, message: str, residuals: Residuals, x: FloatArray, frame: FloatArray,
              kind: IntArray, distance: FloatArray, iterations: int, build_time: float, solve_time: float,
              control: FloatArray | None) -> StepRecord:
    """The record of a step at time ``t`` (module docstring, "Records"): the rows' impulses ``x``
    (m,) of kinds ``kind``, the contacts' frame impulses (nc, 3) and distances (nc,); NaN
    impulses where the solve gave no usable answer."""
    count = distance.shape[0]
    fields: dict[str, Any] = dict(t=t, phi=distance, status=status, build_time=build_time,
                                  setup_time=0.0, solve_time=solve_time, iterations=iterations, residuals=residuals,
                                  solver="newton", message=message, candidates=count, mujoco_contacts=count)
    if control is not None:
        fields["control"] = control
    if not status.usable:
        return StepRecord(impulses=np.full((count, 3), np.nan), **fields)
    return StepRecord(impulses=frame, bilateral=x[kind == EQUALITY], limits=x[kind == LIMIT],
                      friction_loss=x[kind == FRICTION_LOSS], **fields)


def verdict(code: int, numbers: FloatArray, max_iter: int) -> tuple[Status, str, Residuals]:
    """``(status, message, residuals)`` of a compiled step's Newton ``code`` and its verdict's six
    numbers (:func:`.native_kernel.native_step`), judged at :mod:`contactopt.solvers.base`'s levels."""
    status, message = kernel_status(code, max_iter)
    residuals = Residuals(*numbers[:5].tolist())
    if status.usable and not math.isfinite(residuals.relative):  # inf: a non-finite iterate (the kernel's verdict)
        return Status.NUMERICAL_ERROR, f"{message}; solver returned a non-finite iterate", residuals
    if status.usable:
        status, message = judge_arrays(residuals, float(numbers[5]), status, message)
    return status, message, residuals


def judge_arrays(residuals: Residuals, data: float, status: Status, message: str) -> tuple[Status, str]:
    """:func:`contactopt.solvers.base.judge` on residuals already computed (no program object)."""
    return judge(None, np.zeros(0), np.zeros(0), residuals, status, message, None, data_violation=data)


def plain(codes: IntArray, numbers: FloatArray) -> NDArray[np.bool_]:
    """(n,) the steps :func:`verdict` leaves as the kernel says (optimal, the code's own message):
    a converged code, a finite relative residual at most :data:`~contactopt.solvers.base.INACCURATE_LEVEL`,
    a measurable gap and a data reading not above :data:`~contactopt.solvers.base.WRONG_LEVEL`
    (:func:`~contactopt.solvers.base.judge` changes nothing then). The others go through
    :func:`verdict` one by one."""
    relative, gap, data = numbers[:, 4], numbers[:, 2], numbers[:, 5]
    with np.errstate(invalid="ignore"):
        return (np.isin(codes, _CONVERGED) & np.isfinite(relative) & ~np.isnan(gap) & (relative <= INACCURATE_LEVEL)
                & ~(data > WRONG_LEVEL))


def extend_columns(steps: StepColumns, t: FloatArray, codes: IntArray, iterations: IntArray, numbers: FloatArray,
                   times: FloatArray, contact_start: IntArray, row_start: IntArray, frames: FloatArray,
                   distances: FloatArray, xs: FloatArray, kinds: IntArray, controls: FloatArray | None,
                   max_iter: int) -> int:
    """Append a compiled run's steps (``t`` (n,) their times; the other arrays the run's columns
    for those steps, ``contact_start`` and ``row_start`` (n + 1,) their ragged offsets, ``controls``
    (n, nu) their inputs or None) to ``steps``
    with the records :func:`record_of` would make; a step judged unusable is the last one appended
    (its impulses NaN), and its index among the ``n`` is returned, else -1."""
    n = t.shape[0]
    simple = plain(codes, numbers)
    judged = [(Status.OPTIMAL, kernel_status(int(code), max_iter)[1]) if fine else
              verdict(int(code), numbers[i], max_iter)[:2] for i, (code, fine) in enumerate(zip(codes, simple,
                                                                                                  strict=True))]
    failed = next((i for i, (status, _) in enumerate(judged) if not status.usable), -1)
    kept = n if failed < 0 else failed
    c0, r0 = int(contact_start[0]), int(row_start[0])
    contact_counts = np.diff(contact_start[:kept + 1])
    rows = slice(r0, int(row_start[kept]))
    ragged: dict[str, tuple[Any, Any]] = {"phi": (contact_counts, distances[c0:int(contact_start[kept])])}
    for name, kind in _KINDS.items():
        mask = kinds[rows] == kind
        ends = np.concatenate([[0], np.cumsum(mask)])
        ragged[name] = (ends[row_start[1:kept + 1] - r0] - ends[row_start[:kept] - r0], xs[rows][mask])
    if controls is not None:
        ragged["control"] = (np.full(kept, controls.shape[1]), controls[:kept].reshape(-1))
    steps.extend_steps(t=t[:kept], status=np.array([STATUSES.index(status) for status, _ in judged[:kept]],
                                                   dtype=np.int64),
                       build_time=times[:kept, 0], solve_time=times[:kept, 1], iterations=iterations[:kept],
                       residuals=np.column_stack([numbers[:kept, :5], np.full(kept, np.nan)]),
                       messages=[message for _, message in judged[:kept]], solver="newton",
                       impulses=frames[c0:int(contact_start[kept])], contact_counts=contact_counts, ragged=ragged,
                       candidates=contact_counts, mujoco_contacts=contact_counts)
    if failed >= 0:
        status, message = judged[failed]
        c, r = slice(int(contact_start[failed]), int(contact_start[failed + 1])), \
            slice(int(row_start[failed]), int(row_start[failed + 1]))
        steps.append(record_of(float(t[failed]), status, message, Residuals(*numbers[failed, :5].tolist()),
                               xs[r].copy(), frames[c].copy(), kinds[r], distances[c].copy(),
                               int(iterations[failed]), float(times[failed, 0]), float(times[failed, 1]),
                               None if controls is None else controls[failed]))
    return failed
