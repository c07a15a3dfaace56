"""The projection onto the dual cone ``K*`` of a :class:`~contactopt.programs.ConicProgram` and
its derivative, with the choice made at the points where it is not differentiable.

Cones (Agrawal, Barratt, Boyd, Busseti, Moursi, "Differentiating through a cone program",
J. Appl. Numer. Optim. 2019, §3 "Derivative of the projection", and Parikh & Boyd,
"Proximal algorithms", 2014, §6.3.2 for the second-order cone), for ``v`` one cone's rows:

* ``Zero`` rows: ``K* = R^d`` (free), ``Pi(v) = v``, ``DPi = I``;
* ``Nonneg`` rows: ``Pi(v) = max(v, 0)``, ``DPi = 1`` where ``v > 0``, ``0`` where ``v < 0``;
* ``SOC`` blocks ``v = (t, z)``, ``r = ||z||``:

  - ``r <= t`` (inside the cone): ``Pi(v) = v``, ``DPi = I``;
  - ``r <= -t`` (inside the polar cone): ``Pi(v) = 0``, ``DPi = 0``;
  - otherwise ``Pi(v) = (t + r) / (2 r) (r, z)`` and ::

        DPi = 1 / (2 r) [[r, z'], [z, (t + r) I - t z z' / r^2]].

At a solution ``v = y - s`` (Moreau: ``y = Pi(v)``, ``s = Pi(v) - v``), ``Pi`` fails to be
differentiable exactly where strict complementarity fails: a Nonneg row with ``s_i = y_i = 0``
(``v_i = 0``), an SOC block with ``r = |t|`` (``y`` or ``s`` zero while the other is on the
boundary, or both zero: the tip). There both one-sided derivatives exist (the two regions'
formulas, Clarke's generalized Jacobian holds both); ``branch`` picks one:

* ``"active"``: the larger one, the constraint kept tight (``s`` stays 0, ``y`` free to move:
  a contact that stays closed, a sticking contact that stays sticking);
* ``"inactive"``: the smaller one (``y`` kept where the region with fewer active directions
  keeps it: a contact that opens, a sticking contact that slides).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.programs.conic import Cone

FloatArray = NDArray[np.float64]

__all__ = ["BRANCHES", "DegeneratePoint", "ProjectionDerivative", "projection_derivative", "soc_block_derivative"]

#: The one-sided derivatives a non-differentiable point can take (see the module docstring).
BRANCHES = ("active", "inactive")


@dataclass(frozen=True)
class DegeneratePoint:
    """One cone (or one Nonneg row) at which strict complementarity is lost.

    Attributes:
        cone: index of the cone in the program's ``cones``.
        rows: the rows ``(start, stop)`` of the degenerate part (one row of a Nonneg cone).
        kind: ``"nonneg"`` (``s_i = y_i = 0``), ``"soc_tip"`` (``s = y = 0``),
            ``"soc_s_zero"`` (``s = 0``, ``y`` on the boundary) or ``"soc_y_zero"``
            (``y = 0``, ``s`` on the boundary).
        branch: the one-sided derivative used: ``"active"`` or ``"inactive"``.
    """

    cone: int
    rows: tuple[int, int]
    kind: str
    branch: str


@dataclass(frozen=True)
class ProjectionDerivative:
    """``DPi`` at ``v`` as a block-diagonal matrix (sparse, or dense where asked for), with the
    degenerate points found."""

    matrix: sp.csc_matrix | FloatArray
    degenerate: tuple[DegeneratePoint, ...]


def project(cones: tuple[Cone, ...], v: FloatArray) -> FloatArray:
    """``Pi_{K*}(v)`` (the module docstring's formulas)."""
    out = np.array(v, dtype=np.float64)
    row = 0
    for cone in cones:
        part = out[row:row + cone.dim]
        if cone.kind == "nonneg":
            np.maximum(part, 0.0, out=part)
        elif cone.kind == "soc":
            t, radius = part[0], float(np.linalg.norm(part[1:]))
            if radius <= -t:
                part[:] = 0.0
            elif radius > t:
                scale = (t + radius) / (2.0 * radius)
                part[0] = scale * radius
                part[1:] *= scale
        row += cone.dim
    return out


def _soc_boundary(t: float, z: FloatArray) -> FloatArray:
    """The third regime's ``DPi`` (module docstring); ``r > 0`` required."""
    radius = float(np.linalg.norm(z))
    d = z.shape[0] + 1
    block = np.empty((d, d))
    block[0, 0] = radius
    block[0, 1:] = z
    block[1:, 0] = z
    block[1:, 1:] = (t + radius) * np.eye(d - 1) - t * np.outer(z, z) / radius**2
    return block / (2.0 * radius)


def projection_derivative(cones: tuple[Cone, ...], v: FloatArray, branch: str = "active",
                          tol: float = 1e-8, dense: bool = False) -> ProjectionDerivative:
    """``DPi_{K*}(v)`` with the degenerate points (``|v_i| <= tol scale`` on a Nonneg row,
    ``||z|| - |t| <= tol scale`` on an SOC block; ``scale = ||v||_inf``) given ``branch``'s
    one-sided derivative; ``dense``: the matrix as a dense array (small programs: no sparse
    assembly)."""
    if branch not in BRANCHES:
        raise OptionError(f"derivatives: branch must be one of {BRANCHES}, got {branch!r}")
    active = branch == "active"
    threshold = tol * float(np.abs(v).max(initial=0.0))
    diagonal = np.zeros(v.shape[0])
    soc_rows: list[NDArray[np.int_]] = []
    soc_cols: list[NDArray[np.int_]] = []
    soc_vals: list[FloatArray] = []
    degenerate: list[DegeneratePoint] = []
    row = 0
    for index, cone in enumerate(cones):
        part = v[row:row + cone.dim]
        if cone.kind == "zero":
            diagonal[row:row + cone.dim] = 1.0
        elif cone.kind == "nonneg":
            ones = part > 0.0
            ties = np.flatnonzero(np.abs(part) <= threshold)
            ones[ties] = active
            diagonal[row:row + cone.dim] = ones
            degenerate.extend(DegeneratePoint(index, (row + int(i), row + int(i) + 1), "nonneg", branch)
                              for i in ties)
        else:
            block, kind = soc_block_derivative(part, threshold, active)
            if kind:
                degenerate.append(DegeneratePoint(index, (row, row + cone.dim), kind, branch))
            if block is not None and dense:
                soc_vals.append(block)
                soc_rows.append(np.array([row]))
            elif block is not None:
                rows = np.arange(row, row + cone.dim)
                soc_rows.append(np.repeat(rows, cone.dim))
                soc_cols.append(np.tile(rows, cone.dim))
                soc_vals.append(block.reshape(-1))
        row += cone.dim
    if dense:
        full = np.diag(diagonal)
        for start, block in zip(soc_rows, soc_vals, strict=True):
            size = block.shape[0]
            full[int(start[0]):int(start[0]) + size, int(start[0]):int(start[0]) + size] = block
        return ProjectionDerivative(full, tuple(degenerate))
    keep = np.flatnonzero(diagonal)
    rows_all = np.concatenate([keep, *soc_rows])
    cols_all = np.concatenate([keep, *soc_cols])
    vals_all = np.concatenate([diagonal[keep], *soc_vals])
    matrix = sp.csc_matrix((vals_all, (rows_all, cols_all)), shape=(v.shape[0], v.shape[0]))
    return ProjectionDerivative(matrix, tuple(degenerate))


def soc_block_derivative(part: FloatArray, threshold: float, active: bool) -> tuple[FloatArray | None, str]:
    """One SOC block's ``DPi`` (None for zero) and the kind of degeneracy ("" if none)."""
    t, z = float(part[0]), part[1:]
    radius = float(np.linalg.norm(z))
    identity = np.eye(part.shape[0])
    if radius - abs(t) > threshold:  # strictly in the third regime: differentiable
        return _soc_boundary(t, z), ""
    if abs(t) <= threshold and radius <= threshold:
        return (identity if active else None), "soc_tip"
    if t > 0:  # s = 0, y on or inside the boundary
        if radius < t - threshold:
            return identity, ""
        return (identity if active or radius == 0.0 else _soc_boundary(t, z)), "soc_s_zero"
    if radius < -t - threshold:
        return None, ""
    return (_soc_boundary(t, z) if active and radius > 0.0 else None), "soc_y_zero"
