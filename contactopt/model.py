"""Core data types: the state, the dynamics, the contacts and the step problem.

All types are frozen dataclasses whose arrays are checked at construction (shape and
finiteness), following the conventions of DESIGN.md:

* ``q`` configuration (nq), ``v`` generalized velocity (nv).
* Manipulator equation ``M(q) vdot = tau(q, v, u) + J(q)^T lambda`` with ``tau`` all
  non-contact generalized forces (reference 000, "Manipulator Equations").
* Contact frames are normal first: per contact the Jacobian rows are ``[n]`` (normal only),
  ``[n, t]`` in 2-D, ``[n, t1, t2]`` in 3-D.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from numpy.typing import ArrayLike, NDArray

from contactopt.errors import ShapeError

FloatArray = NDArray[np.float64]
Matrix = Any  # dense, or scipy.sparse (kept sparse throughout)

__all__ = ["Bilateral", "Contacts", "Dynamics", "State", "StepProblem", "as_vector", "debug_checks"]

#: Dense mass matrices up to this many entries are checked for symmetry every step (cheap);
#: larger dense and all sparse ones only under :func:`debug_checks` (see :class:`Dynamics`).
_DENSE_CHECK_ENTRIES = 4096


def debug_checks() -> bool:
    """Whether the costly matrix checks run (``CONTACTOPT_DEBUG=1``)."""
    return os.environ.get("CONTACTOPT_DEBUG", "") not in ("", "0")


def as_sparse(value: Any, name: str, shape: tuple[int, int] | None, fmt: str) -> Any:
    """A ``scipy.sparse`` matrix as float64 CSC/CSR with finite entries, checked in O(nnz)."""
    out = value.tocsc() if fmt == "csc" else value.tocsr()
    if out.dtype != np.float64:
        out = out.astype(np.float64)
    if shape is not None and out.shape != shape:
        raise ShapeError(f"{name}: expected shape {shape}, got {out.shape}")
    if not np.all(np.isfinite(out.data)):
        raise ShapeError(f"{name}: contains NaN or infinite entries")
    return out


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a scipy.sparse matrix (a plain bool: no type narrowing)."""
    return bool(sp.issparse(value))


def to_dense(value: Matrix) -> FloatArray:
    """A dense copy of a dense or sparse matrix (for the small-system integrators)."""
    return np.asarray(value.toarray()) if is_sparse(value) else np.asarray(value)


def as_vector(value: ArrayLike, name: str, length: int | None = None) -> FloatArray:
    """Return ``value`` as a finite 1-D float array, or raise :class:`ShapeError` naming it."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim != 1:
        raise ShapeError(f"{name}: expected a vector, got an array of shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ShapeError(f"{name}: expected length {length}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ShapeError(f"{name}: contains NaN or infinite entries: {arr}")
    arr.setflags(write=False)
    return arr


def as_matrix(value: ArrayLike, name: str, shape: tuple[int, int]) -> FloatArray:
    """Return ``value`` as a finite 2-D float array of ``shape``, or raise :class:`ShapeError`."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim == 1 and shape[0] == 0:
        arr = arr.reshape(0, shape[1])
    if arr.shape != shape:
        raise ShapeError(f"{name}: expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ShapeError(f"{name}: contains NaN or infinite entries")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class State:
    """Configuration and velocity at time ``t``.

    Attributes:
        q: (nq,) configuration.
        v: (nv,) generalized velocity.
        t: time in seconds.
    """

    q: FloatArray
    v: FloatArray
    t: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "q", as_vector(self.q, "State.q"))
        object.__setattr__(self, "v", as_vector(self.v, "State.v"))
        if not np.isfinite(self.t):
            raise ShapeError(f"State.t: must be finite, got {self.t}")
        object.__setattr__(self, "t", float(self.t))


@dataclass(frozen=True)
class Dynamics:
    """The manipulator equation's left and right sides without contact: ``M vdot = tau``.

    Attributes:
        M: (nv, nv) symmetric positive definite mass matrix, dense or ``scipy.sparse`` (kept
            sparse, as CSC: block-diagonal for free bodies, MuJoCo's sparse M for MJCF).
        tau: (nv,) all non-contact generalized forces, ``tau_g + B u - C(q, v) v``.
        inverse: optional fast ``M^{-1} rhs`` supplied by the system (e.g. MuJoCo's sparse
            factorization); by default a Cholesky factorization of a dense ``M``, a sparse LU
            factorization of a sparse one, computed once per ``Dynamics``.
        inverse_matrix: optional sparse ``M^{-1}`` (block-diagonal M has a block-diagonal
            inverse), which makes the Delassus matrix ``J M^{-1} J^T`` a sparse product.

    Symmetry is checked for a dense M of at most 4096 entries always (cheap); for a larger
    dense M (O(nv^2)) and for a sparse one (O(nnz), but several sparse operations per step)
    only under ``CONTACTOPT_DEBUG=1``: the systems build M symmetric by construction
    (symmetrized blocks, MuJoCo's own M), while user-given programs are checked by
    :class:`~contactopt.programs.ConicProgram` and :class:`~contactopt.programs.LCP`.
    """

    M: Matrix
    tau: FloatArray
    inverse: Callable[[FloatArray], FloatArray] | None = field(default=None, compare=False, repr=False)
    inverse_matrix: Matrix | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        tau = as_vector(self.tau, "Dynamics.tau")
        nv = tau.shape[0]
        if sp.issparse(self.M):
            M = as_sparse(self.M, "Dynamics.M", (nv, nv), "csc")
            if debug_checks() and M.nnz and abs(M - M.T).max() > 1e-10 * max(1.0, float(abs(M).max())):
                raise ShapeError("Dynamics.M: mass matrix is not symmetric")
        else:
            M = as_matrix(self.M, "Dynamics.M", (nv, nv))
            if (M.size <= _DENSE_CHECK_ENTRIES or debug_checks()) and not np.allclose(
                    M, M.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(M).max(initial=0.0)))):
                raise ShapeError("Dynamics.M: mass matrix is not symmetric")
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "tau", tau)

    @property
    def nv(self) -> int:
        return int(self.tau.shape[0])

    is_sparse = property(lambda self: is_sparse(self.M), doc="Whether M is scipy.sparse.")

    @property
    def M_dense(self) -> FloatArray:
        """M as a dense array (for the small-system integrators that need one)."""
        return to_dense(self.M)

    @cached_property
    def cholesky(self) -> Any:
        """Factor of M for ``M^{-1} x`` solves (dense Cholesky, or sparse LU of a sparse M);
        raises if M is not positive definite (dense) or singular (sparse)."""
        try:
            if self.is_sparse:
                return scipy.sparse.linalg.splu(self.M)
            return scipy.linalg.cho_factor(self.M)
        except (np.linalg.LinAlgError, RuntimeError) as exc:
            raise ShapeError("Dynamics.M: mass matrix is not positive definite") from exc

    def solve_M(self, rhs: ArrayLike) -> FloatArray:
        """``M^{-1} rhs`` for a vector or a matrix of columns (dense or sparse; the result is
        dense)."""
        if sp.issparse(rhs):
            if self.inverse_matrix is not None:
                return np.asarray((self.inverse_matrix @ rhs).toarray())
            rhs = rhs.toarray()
        values = np.asarray(rhs, dtype=np.float64)
        if self.inverse is not None:
            return self.inverse(values)
        if self.inverse_matrix is not None:
            return np.asarray(self.inverse_matrix @ values)
        if self.is_sparse:
            return np.asarray(self.cholesky.solve(values))
        return scipy.linalg.cho_solve(self.cholesky, values)


@dataclass(frozen=True)
class Contacts:
    """Contact candidates at a configuration (reference 000, "Contact Jacobian").

    Attributes:
        phi: (nc,) signed separation, ``phi >= 0`` means not penetrating.
        J: (nc * dim, nv) contact Jacobian, dense or ``scipy.sparse`` (kept sparse, as CSR);
           rows per contact are normal first (``[n]`` for dim 1, ``[n, t]`` for dim 2,
           ``[n, t1, t2]`` for dim 3).
        mu: (nc,) Coulomb friction coefficients (may be ``inf`` for sticking contact).
        restitution: (nc,) coefficients of restitution in [0, 1].
        dim: rows per contact: 1 (normal only), 2 (planar) or 3 (spatial).
    """

    phi: FloatArray
    J: Matrix
    mu: FloatArray
    restitution: FloatArray
    dim: int

    def __post_init__(self) -> None:
        if self.dim not in (1, 2, 3):
            raise ShapeError(f"Contacts.dim: must be 1, 2 or 3, got {self.dim}")
        phi = as_vector(self.phi, "Contacts.phi")
        nc = phi.shape[0]
        J = as_sparse(self.J, "Contacts.J", None, "csr") if sp.issparse(self.J) else np.array(
            self.J, dtype=np.float64)
        if J.ndim != 2 or J.shape[0] != nc * self.dim:
            raise ShapeError(
                f"Contacts.J: expected {nc * self.dim} rows ({nc} contacts x {self.dim}), "
                f"got shape {J.shape}"
            )
        if not sp.issparse(J):
            J = as_matrix(J, "Contacts.J", J.shape)
        mu = np.array(self.mu, dtype=np.float64).reshape(-1)
        if mu.shape != (nc,) or np.any(np.isnan(mu)) or np.any(mu < 0):
            raise ShapeError(f"Contacts.mu: expected {nc} non-negative values, got {mu}")
        mu.setflags(write=False)
        e = as_vector(self.restitution, "Contacts.restitution", nc)
        if np.any(e < 0) or np.any(e > 1):
            raise ShapeError(f"Contacts.restitution: must lie in [0, 1], got {e}")
        for name, value in (("phi", phi), ("J", J), ("mu", mu), ("restitution", e)):
            object.__setattr__(self, name, value)

    @property
    def count(self) -> int:
        """Number of contacts ``nc``."""
        return int(self.phi.shape[0])

    @property
    def nv(self) -> int:
        return int(self.J.shape[1])

    is_sparse = property(lambda self: is_sparse(self.J), doc="Whether J is scipy.sparse.")

    @property
    def J_dense(self) -> FloatArray:
        """J as a dense array (for the small-system integrators that need one)."""
        return to_dense(self.J)

    @property
    def J_normal(self) -> Matrix:
        """(nc, nv) normal rows ``n`` of every contact (sparse if J is)."""
        return self.J[np.arange(0, self.J.shape[0], self.dim)] if self.is_sparse else self.J[:: self.dim]

    @property
    def J_tangent(self) -> Matrix:
        """(nc * (dim - 1), nv) tangent rows, contact-major (sparse if J is)."""
        rows = np.flatnonzero(np.arange(self.J.shape[0]) % self.dim != 0)
        return self.J[rows]

    @staticmethod
    def empty(nv: int, dim: int) -> Contacts:
        """No contacts: zero-row arrays, never a special case."""
        return Contacts(np.zeros(0), np.zeros((0, nv)), np.zeros(0), np.zeros(0), dim)


@dataclass(frozen=True)
class Bilateral:
    """Bilateral (equality) constraints: position rows ``h(q) = 0`` and velocity rows
    ``H(q) v = b(t)`` (a joint driven through a prescribed motion).

    Reference 000, "Bilateral Position Constraints" and "Bilateral Velocity Constraints":
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
    def empty(nv: int) -> Bilateral:
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
class StepProblem:
    """Everything a time-stepping formulation needs for one step of length ``dt``.

    Attributes:
        state: the state at the start of the step.
        dt: step length h > 0.
        dynamics: M and tau at the state.
        contacts: contact candidates at ``state.q``.
        bilateral: bilateral constraints at the state (zero rows if none).
        bilateral_target: (nh,) the velocity ``H v'`` must reach at the end of the step:
            ``b`` on velocity rows; 0 on position rows, minus ``alpha h(q)`` with Baumgarte
            stabilization (set by the driver's drift treatment). Empty means ``bilateral.target``.
    """

    state: State
    dt: float
    dynamics: Dynamics
    contacts: Contacts
    bilateral: Bilateral
    bilateral_target: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ShapeError(f"StepProblem.dt: must be a positive number, got {self.dt}")
        nv = self.dynamics.nv
        if self.state.v.shape[0] != nv:
            raise ShapeError(f"StepProblem: state.v has length {self.state.v.shape[0]}, M is {nv}x{nv}")
        if self.contacts.nv != nv:
            raise ShapeError(f"StepProblem: contact Jacobian has {self.contacts.nv} columns, nv = {nv}")
        if self.bilateral.H.shape[1] != nv:
            raise ShapeError(f"StepProblem: bilateral H has {self.bilateral.H.shape[1]} columns, nv = {nv}")
        target = self.bilateral.target if np.size(self.bilateral_target) == 0 else self.bilateral_target
        object.__setattr__(self, "bilateral_target",
                           as_vector(target, "StepProblem.bilateral_target", self.bilateral.count))

    @property
    def nv(self) -> int:
        return self.dynamics.nv

    @cached_property
    def v_free(self) -> FloatArray:
        """``v_free = v + h M^{-1} tau``: the next velocity before contact impulses
        (reference 000, "Time-stepping LCP: Normal force", written there ``v^-``)."""
        return self.state.v + self.dt * self.dynamics.solve_M(self.dynamics.tau)
