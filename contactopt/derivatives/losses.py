"""Scalar losses of a trajectory for :func:`contactopt.gradients.gradient` (``co.gradient``):
each is a function ``loss(q, v) -> (value, dL/dq, dL/dv)`` of the run's ``(N+1, nq)`` and
``(N+1, nv)`` arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ShapeError

__all__ = ["Loss", "final_state_loss", "tracking_loss"]

FloatArray = NDArray[np.float64]
Loss = Callable[[FloatArray, FloatArray], tuple[float, ArrayLike, ArrayLike]]


def final_state_loss(q_target: ArrayLike | None = None, v_target: ArrayLike | None = None,
                     q_weight: ArrayLike = 1.0, v_weight: ArrayLike = 1.0) -> Loss:
    """``L = 1/2 sum q_weight (q_N - q_target)^2 + 1/2 sum v_weight (v_N - v_target)^2`` (a
    None target leaves its term out)."""
    def loss(q: FloatArray, v: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        gq, gv = np.zeros_like(q), np.zeros_like(v)
        value = 0.0
        if q_target is not None:
            gq[-1] = np.asarray(q_weight) * (q[-1] - np.asarray(q_target, dtype=np.float64))
            value += 0.5 * float(np.sum(gq[-1] * (q[-1] - np.asarray(q_target, dtype=np.float64))))
        if v_target is not None:
            gv[-1] = np.asarray(v_weight) * (v[-1] - np.asarray(v_target, dtype=np.float64))
            value += 0.5 * float(np.sum(gv[-1] * (v[-1] - np.asarray(v_target, dtype=np.float64))))
        return value, gq, gv
    return loss


def tracking_loss(q_recorded: ArrayLike, v_recorded: ArrayLike | None = None, q_weight: ArrayLike = 1.0,
                  v_weight: ArrayLike = 1.0) -> Loss:
    """``L = 1/2 sum_n q_weight ||q_n - q_recorded_n||^2 (+ the same for v)``: least squares
    against a recorded trajectory of the same length (system identification)."""
    recorded_q = np.asarray(q_recorded, dtype=np.float64)
    recorded_v = None if v_recorded is None else np.asarray(v_recorded, dtype=np.float64)

    def loss(q: FloatArray, v: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        if recorded_q.shape != q.shape or (recorded_v is not None and recorded_v.shape != v.shape):
            raise ShapeError(f"tracking_loss: the recorded trajectory has shape {recorded_q.shape}, "
                             f"the simulated one {q.shape}")
        gq = np.asarray(q_weight) * (q - recorded_q)
        value = 0.5 * float(np.sum(gq * (q - recorded_q)))
        gv = np.zeros_like(v)
        if recorded_v is not None:
            gv = np.asarray(v_weight) * (v - recorded_v)
            value += 0.5 * float(np.sum(gv * (v - recorded_v)))
        return value, gq, gv
    return loss

