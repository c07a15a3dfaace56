"""Identifiable lumped parameters (Tedrake 2020, "Parameter Estimation", "Identifiable
lumped parameters"): the columns of the stacked regressor ``W`` (one ``Y(q_k, v_k, vdot_k)``
per sample) are in general linearly dependent, so only combinations of the lumped parameters
(the *base parameters*: Gautier and Khalil 1990, "Direct calculation of minimum set of inertial
parameters of serial robots"; by QR, Gautier 1991, "Numerical calculation of the base inertial
parameters of robots") are determined by data.

Pivoted QR of the column-equilibrated ``W`` (``W D P = Q R``, ``D`` scaling each column to unit
norm, so that the tolerance does not depend on units; a column below ``tolerance`` times the
largest column norm is rounding noise, a parameter the data do not excite) decides the rank
``r``: the number of ``|R_ii| > tolerance |R_00|`` (default ``tolerance = 1e-8``). The ``r``
independent columns are then chosen by the same criterion (distance from the span of those
kept) in a stated preference order (:func:`_preference`: an MJCF body's inertia before its
first moments before its mass, so that the names read as Gautier and Khalil write them; the
pivoted QR's own columns where the two disagree), and the rest regroup onto them,
``W_d = W_i beta`` (least squares on the scaled columns, rescaled).
The base parameters are ``alpha_i + beta alpha_d``, each named ``"alpha_i + c * alpha_d + ..."``;
the unidentifiable directions are the columns of ``[-beta; I]`` (``W`` times them is zero).
``condition`` is the 2-norm condition number of ``W_i`` (the base regressor, unscaled), the
measure that excitation design minimizes (Swevers et al. 1997).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from contactopt.identification.data import Samples, samples
from contactopt.identification.lumped import (
    IdentificationError,
    Lumped,
    _is_mjcf,
    check_system,
    lumped_parameters,
    regressor,
)
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["DEFAULT_TOLERANCE", "Basis", "identifiable", "stacked"]

DEFAULT_TOLERANCE = 1e-8


@dataclass(frozen=True)
class Basis:
    """The base (identifiable) parameters of a data set (module docstring).

    Attributes:
        lumped: the system's lumped parameters.
        independent: indices of the lumped parameters kept (one per base parameter).
        dependent: indices of those regrouped onto them.
        beta: (r, p - r), ``W[:, dependent] = W[:, independent] @ beta``.
        combination: (r, p), base parameters ``= combination @ lumped.values``.
        names: per base parameter its combination of lumped names.
        null: (p, p - r) the unidentifiable directions of the lumped parameters.
        rank, tolerance, condition: the rank, the relative tolerance that decided it, and the
            condition number of the base regressor.
    """

    lumped: Lumped
    independent: tuple[int, ...]
    dependent: tuple[int, ...]
    beta: FloatArray
    combination: FloatArray
    names: tuple[str, ...]
    null: FloatArray
    rank: int
    tolerance: float
    condition: float

    @property
    def values(self) -> FloatArray:
        """The base parameters at the system's own parameters (``combination @ lumped.values``)."""
        return np.asarray(self.combination @ self.lumped.values, dtype=np.float64)

    @property
    def unidentifiable(self) -> tuple[str, ...]:
        """The lumped parameters that were regrouped (dependent columns)."""
        return tuple(self.lumped.names[j] for j in self.dependent)


def _format(coefficient: float) -> str:
    return f"{coefficient:.6g}"


def _combination_name(names: tuple[str, ...], head: int, dependent: tuple[int, ...], row: FloatArray) -> str:
    text = names[head]
    for j, c in zip(dependent, row, strict=True):
        if abs(c) <= 1e-12:
            continue
        magnitude = abs(float(c))
        term = names[j] if abs(magnitude - 1.0) <= 1e-12 else f"{_format(magnitude)}*{names[j]}"
        text += f" {'+' if c > 0 else '-'} {term}"
    return text


def stacked(system: System, data: Samples) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(W, F, f0)``: the regressors of every sample stacked, (N nv, p), the force each needs
    and the part no parameter multiplies (springs of an MJCF model; zero otherwise), so that
    ``W alpha = F - f0``."""
    n, nv = len(data), system.nv
    rows: list[FloatArray] = []
    offsets = np.zeros((n, nv))
    if _is_mjcf(system):
        from contactopt.identification.mjcf import mjcf_regressor

        Y, f0 = mjcf_regressor(system).stack(data.q, data.v, data.vdot, data.v_damper)
        rows.append(Y)
        offsets = f0.reshape(n, nv)
    else:
        rows = [regressor(system, data.q[k], data.v[k], data.vdot[k]) for k in range(n)]
    return np.concatenate(rows, axis=0), data.F.reshape(-1), offsets.reshape(-1)


def _preference(names: tuple[str, ...]) -> list[int]:
    """The order in which columns are offered as base parameters: an MJCF body's inertia, then
    its first moments, then its mass, then the joints' parameters (so that a child's mass
    regroups onto its parent's inertia and first moment, ``I_yy + L^2 m``, ``m c_x + L m``, as
    Gautier and Khalil 1990 write the base parameters); the textbook systems' own order."""
    def rank(name: str) -> int:
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        return {"m": 2, "m*cx": 1, "m*cy": 1, "m*cz": 1}.get(suffix, 0 if suffix.startswith("I") else 3)
    return sorted(range(len(names)), key=lambda j: (rank(names[j]), j)) if any("." in n for n in names) \
        else list(range(len(names)))


def _preferred_columns(scaled: FloatArray, order: list[int], tolerance: float) -> list[int]:
    """Greedy Gram-Schmidt in ``order``: a column is kept when its distance from the span of the
    kept ones exceeds ``tolerance`` (unit columns: the pivoted QR's criterion)."""
    basis: list[FloatArray] = []
    kept: list[int] = []
    for j in order:
        column = scaled[:, j].copy()
        if not np.any(column):
            continue
        for _ in range(2):  # twice is enough (Gram-Schmidt, re-orthogonalized)
            for b in basis:
                column -= (b @ column) * b
        norm = float(np.linalg.norm(column))
        if norm > tolerance:
            basis.append(column / norm)
            kept.append(j)
    return sorted(kept, key=order.index)


def decompose(lumped: Lumped, W: FloatArray, tolerance: float) -> Basis:
    """The :class:`Basis` of the stacked regressor ``W`` (module docstring)."""
    p = W.shape[1]
    if W.shape[0] == 0 or p == 0:
        raise IdentificationError("identifiable: no samples")
    if not np.all(np.isfinite(W)):
        raise IdentificationError("identifiable: the stacked regressor has non-finite entries (accelerations?)")
    norms = np.linalg.norm(W, axis=0)
    excited = norms > tolerance * float(np.max(norms))  # a column of rounding noise is not excited
    scale = np.where(excited, norms, 1.0)
    _, R, perm = scipy.linalg.qr(np.where(excited, W, 0.0) / scale, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    top = diag[0] if diag.size else 0.0
    rank = int(np.sum(diag > tolerance * top)) if top > 0 else 0
    W = np.where(excited, W, 0.0)
    if rank == 0:
        raise IdentificationError("identifiable: the data excite no lumped parameter (the regressor is zero)")
    scaled = np.where(excited, W, 0.0) / scale
    chosen = _preferred_columns(scaled, _preference(lumped.names), tolerance)
    if len(chosen) != rank:  # a borderline column decided differently: keep the pivoted QR's choice
        chosen = [int(j) for j in perm[:rank]]
    independent = tuple(chosen)
    dependent = tuple(j for j in (int(i) for i in perm) if j not in independent)
    if dependent:
        beta_scaled = np.linalg.lstsq(scaled[:, list(independent)], scaled[:, list(dependent)], rcond=None)[0]
        beta = beta_scaled * scale[list(dependent)][None, :] / scale[list(independent)][:, None]
    else:
        beta = np.zeros((rank, 0))
    beta = np.where(np.abs(beta) > 1e-12 * max(1.0, float(np.max(np.abs(beta), initial=0.0))), beta, 0.0)
    combination = np.zeros((rank, p))
    combination[np.arange(rank), list(independent)] = 1.0
    if dependent:
        combination[:, list(dependent)] = beta
    null = np.zeros((p, len(dependent)))
    if dependent:
        null[list(independent), :] = -beta
        null[list(dependent), np.arange(len(dependent))] = 1.0
        null /= np.linalg.norm(null, axis=0)
    names = tuple(_combination_name(lumped.names, i, dependent, beta[r]) for r, i in enumerate(independent))
    condition = float(np.linalg.cond(W[:, list(independent)]))
    return Basis(lumped, independent, dependent, beta, combination, names, null, rank, float(tolerance), condition)


def identifiable(system: System, data: Any, tolerance: float = DEFAULT_TOLERANCE) -> Basis:
    """The identifiable combinations of the lumped parameters of ``system`` that ``data`` (a
    :class:`~contactopt.records.trajectory.Trajectory` or a mapping of arrays ``t, q, v, u``;
    :mod:`contactopt.identification.data`) determines: base parameters by pivoted QR with
    relative ``tolerance`` (Tedrake 2020, "Parameter Estimation", "Identifiable lumped
    parameters"; module docstring)."""
    check_system(system, "identifiable")
    if not (isinstance(tolerance, float | int) and 0.0 < float(tolerance) < 1.0):
        raise IdentificationError(f"identifiable: tolerance must be a number in (0, 1), got {tolerance!r}")
    W, _, _ = stacked(system, samples(system, data, "identifiable"))
    return decompose(lumped_parameters(system), W, float(tolerance))
