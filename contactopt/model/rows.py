"""Constraint rows other than contacts: bilateral (equality) rows, unilateral rows without
friction (limits), box-constrained rows (dry joint friction), and a system's own constraint
problem (:class:`NativeRows`). Frozen, shape-checked like :mod:`contactopt.model.step`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import as_matrix, as_vector
from contactopt.core.errors import ShapeError

FloatArray = NDArray[np.float64]

__all__ = ["Bilateral", "FrictionLoss", "NativeRows", "Unilateral"]

@dataclass(frozen=True)
class Bilateral:
    """Bilateral (equality) constraints: position rows ``h(q) = 0`` and velocity rows
    ``H(q) v = b(t)`` (a joint driven through a prescribed motion).

    Tedrake 2022, "Bilateral Position Constraints" and "Bilateral Velocity Constraints":
    with ``H = dh/dq`` a position row holds at velocity level as ``H v = 0`` and at
    acceleration level as ``H vdot + Hdot v = 0``; a velocity row ``H v = b(t)`` holds at
    acceleration level as ``H vdot + Hdot v = bdot(t)``.

    Attributes:
        h: (nh,) position-constraint values (0 on velocity rows).
        H: (nh, nv) constraint Jacobian.
        Hdot_v: (nh,) the velocity product term ``Hdot v``.
        target: (nh,) ``b(t)`` of velocity rows ``H v = b`` (0 on position rows).
        target_rate: (nh,) ``bdot(t)`` (0 on position rows).
        velocity_rows: (nh,) True for velocity rows, False for position rows.
    """

    h: FloatArray
    H: FloatArray
    Hdot_v: FloatArray
    target: FloatArray = field(default_factory=lambda: np.zeros(0))
    target_rate: FloatArray = field(default_factory=lambda: np.zeros(0))
    velocity_rows: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __post_init__(self) -> None:
        h = as_vector(self.h, "Bilateral.h")
        nh = h.shape[0]
        H = np.array(self.H, dtype=np.float64)
        if H.ndim != 2 or H.shape[0] != nh:
            raise ShapeError(f"Bilateral.H: expected {nh} rows, got shape {H.shape}")
        H = as_matrix(H, "Bilateral.H", H.shape)
        Hdot_v = as_vector(self.Hdot_v, "Bilateral.Hdot_v", nh)
        def given(value: ArrayLike) -> ArrayLike:  # empty means zeros
            return np.zeros(nh) if np.size(value) == 0 else value

        target = as_vector(given(self.target), "Bilateral.target", nh)
        rate = as_vector(given(self.target_rate), "Bilateral.target_rate", nh)
        rows = np.array(self.velocity_rows, dtype=bool).reshape(-1)
        if rows.size == 0:
            rows = np.zeros(nh, dtype=bool)
        if rows.shape != (nh,):
            raise ShapeError(f"Bilateral.velocity_rows: expected {nh} flags, got shape {rows.shape}")
        rows.setflags(write=False)
        for name, value in (("h", h), ("H", H), ("Hdot_v", Hdot_v), ("target", target),
                            ("target_rate", rate), ("velocity_rows", rows)):
            object.__setattr__(self, name, value)

    @property
    def count(self) -> int:
        return int(self.h.shape[0])

    @property
    def position_error(self) -> FloatArray:
        """``h(q)`` on position rows, 0 on velocity rows."""
        return np.where(self.velocity_rows, 0.0, self.h)

    def velocity_error(self, v: ArrayLike) -> FloatArray:
        """``H v - b``: ``hdot`` on position rows, the tracking error on velocity rows."""
        return self.H @ np.asarray(v, dtype=np.float64) - self.target

    def violation(self, v: ArrayLike) -> float:
        """Largest ``|h(q)|`` over position rows and ``|H v - b|`` over velocity rows."""
        if not self.count:
            return 0.0
        error = np.where(self.velocity_rows, self.velocity_error(v), self.h)
        return float(np.abs(error).max())

    @staticmethod
    @functools.lru_cache(maxsize=32)
    def empty(nv: int) -> Bilateral:
        """No rows (one shared instance per ``nv``: asked for at every step, and immutable)."""
        return Bilateral(np.zeros(0), np.zeros((0, nv)), np.zeros(0))

    @staticmethod
    def stack(parts: list[Bilateral], nv: int) -> Bilateral:
        """Rows of several constraint sets, in order."""
        if not parts:
            return Bilateral.empty(nv)
        return Bilateral(h=np.concatenate([p.h for p in parts]), H=np.vstack([p.H for p in parts]),
                         Hdot_v=np.concatenate([p.Hdot_v for p in parts]),
                         target=np.concatenate([p.target for p in parts]),
                         target_rate=np.concatenate([p.target_rate for p in parts]),
                         velocity_rows=np.concatenate([p.velocity_rows for p in parts]))

@dataclass(frozen=True)
class Unilateral:
    """Unilateral rows without friction (joint and tendon limits): ``phi(q) >= 0``.

    A time step keeps ``phi + h G v' >= 0`` with impulses ``lambda >= 0`` complementary to it,
    exactly like a frictionless contact's normal row (Tedrake 2022, "Time-stepping LCP:
    Normal force"), but the rows are not contacts: they have no frame, no friction and no
    restitution, and the contact metrics do not count them.

    Attributes:
        phi: (n,) separations (for a limit: distance to the bound less its margin).
        G: (n, nv) Jacobian ``d phi / dq`` in velocity coordinates.
        labels: optional names of the rows ("shoulder lower", ...).
    """

    phi: FloatArray
    G: FloatArray
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        phi = as_vector(self.phi, "Unilateral.phi")
        G = np.array(self.G, dtype=np.float64)
        if G.ndim != 2 or G.shape[0] != phi.shape[0]:
            raise ShapeError(f"Unilateral.G: expected {phi.shape[0]} rows, got shape {G.shape}")
        labels = tuple(str(label) for label in self.labels)
        if labels and len(labels) != phi.shape[0]:
            raise ShapeError(f"Unilateral.labels: expected {phi.shape[0]} names, got {len(labels)}")
        for name, value in (("phi", phi), ("G", as_matrix(G, "Unilateral.G", G.shape)), ("labels", labels)):
            object.__setattr__(self, name, value)

    @property
    def count(self) -> int:
        return int(self.phi.shape[0])

    @staticmethod
    @functools.lru_cache(maxsize=32)
    def empty(nv: int) -> Unilateral:
        """No rows (one shared instance per ``nv``: asked for at every step, and immutable)."""
        return Unilateral(np.zeros(0), np.zeros((0, nv)))


@dataclass(frozen=True)
class FrictionLoss:
    """Dry friction on joints and tendons (MuJoCo's ``frictionloss``): box-constrained rows.

    Over a step the row impulse ``sigma_i`` opposes the row velocity ``F_i v'`` with
    ``|sigma_i| <= h bound_i`` (maximum dissipation: ``sigma_i = -h bound_i sign(F_i v')``
    while slipping, ``F_i v' = 0`` while stuck).

    Attributes:
        F: (n, nv) row Jacobian (a unit row per joint degree of freedom, the tendon
            Jacobian per tendon).
        bound: (n,) largest friction force (N or N m), >= 0.
        labels: optional names of the rows.
    """

    F: FloatArray
    bound: FloatArray
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bound = as_vector(self.bound, "FrictionLoss.bound")
        if np.any(bound < 0):
            raise ShapeError(f"FrictionLoss.bound: must be >= 0, got {bound}")
        F = np.array(self.F, dtype=np.float64)
        if F.ndim != 2 or F.shape[0] != bound.shape[0]:
            raise ShapeError(f"FrictionLoss.F: expected {bound.shape[0]} rows, got shape {F.shape}")
        labels = tuple(str(label) for label in self.labels)
        if labels and len(labels) != bound.shape[0]:
            raise ShapeError(f"FrictionLoss.labels: expected {bound.shape[0]} names, got {len(labels)}")
        for name, value in (("F", as_matrix(F, "FrictionLoss.F", F.shape)), ("bound", bound), ("labels", labels)):
            object.__setattr__(self, name, value)

    @property
    def count(self) -> int:
        return int(self.bound.shape[0])

    @staticmethod
    @functools.lru_cache(maxsize=32)
    def empty(nv: int) -> FrictionLoss:
        """No rows (one shared instance per ``nv``: asked for at every step, and immutable)."""
        return FrictionLoss(np.zeros((0, nv)), np.zeros(0))


@dataclass(frozen=True)
class NativeRows:
    """A system's own constraint problem of a step, when it has one (MuJoCo's, for
    ``regularized -o params=model``): the regularized dual in impulses ``x = h f``,
    ``min 1/2 x^T (J M^{-1} J^T + R) x + x^T h (J a0 - a_ref)`` over the system's cone, with
    ``a0 = M^{-1} smooth_force``, and the next velocity
    ``v' = v + step_matrix^{-1} (h smooth_force + J^T x)`` (``step_matrix`` is ``M`` plus the
    implicit part of the system's integrator, e.g. ``M + h diag(damping)``).

    Attributes:
        program: the ConicProgram (variables: the impulses of every row, block "impulse").
        J: (nrows, nv) constraint Jacobian.
        smooth_force: (nv,) every non-constraint generalized force.
        step_matrix: (nv, nv) the matrix of the velocity update.
        maps: matrices taking the row impulses to the step's own impulse arrays:
            ``"contacts"`` (nc * dim, nrows) to the frame impulses of the contact candidates,
            ``"bilateral"``, ``"limits"``, ``"friction_loss"`` to those rows (zero rows for
            rows the system did not activate).
        info: what the rows are (counts per kind, cone, integrator).
        arrays: the same problem as flat arrays (:class:`contactopt.model.native.NativeArrays`),
            where the system gives them.
    """

    program: Any
    J: FloatArray
    smooth_force: FloatArray
    step_matrix: FloatArray
    maps: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    arrays: Any = None

