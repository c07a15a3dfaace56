"""Core data types: the state, the dynamics, the contacts and the step problem.

All types are frozen dataclasses whose arrays are checked at construction (shape and
finiteness), following the conventions of docs/architecture.md:

* ``q`` configuration (nq), ``v`` generalized velocity (nv).
* Manipulator equation ``M(q) vdot = tau(q, v, u) + J(q)^T lambda`` with ``tau`` all
  non-contact generalized forces (Tedrake 2022, "Manipulator Equations").
* Contact frames are normal first: per contact the Jacobian rows are ``[n]`` (normal only),
  ``[n, t]`` in 2-D, ``[n, t1, t2]`` in 3-D.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import (
    _DENSE_CHECK_ENTRIES,
    FloatArray,
    Matrix,
    as_matrix,
    as_sparse,
    as_vector,
    debug_checks,
    is_sparse,
    is_symmetric_mass,
    to_dense,
)
from contactopt.core.errors import ShapeError
from contactopt.model.rows import Bilateral, FrictionLoss, NativeRows, Unilateral

__all__ = ["AngularFriction", "Bilateral", "Contacts", "Dynamics", "FrictionLoss", "NativeRows", "State", "StepProblem",
           "Unilateral", "as_matrix", "as_sparse", "as_vector", "debug_checks", "is_sparse", "to_dense"]


@dataclass(frozen=True)
class State:
    """Configuration and velocity at time ``t``, and the actuators' own states.

    Attributes:
        q: (nq,) configuration.
        v: (nv,) generalized velocity.
        t: time in seconds.
        act: (na,) actuator activations: MuJoCo's ``act`` (MuJoCo documentation, "Computation:
            Actuation model": filters, integrators, muscles), advanced by every step
            (:mod:`contactopt.systems.mjcf.activations`); empty for a system without them.
    """

    q: FloatArray
    v: FloatArray
    t: float = 0.0
    act: FloatArray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def checked(cls, q: FloatArray, v: FloatArray, t: float, act: FloatArray) -> State:
        """A State of arrays a step has already checked (finite float vectors from its own
        computation: the array step's), without converting them again; they are made read-only."""
        state = object.__new__(cls)
        for name, value in (("q", q), ("v", v), ("act", act)):
            value.setflags(write=False)
            object.__setattr__(state, name, value)
        object.__setattr__(state, "t", float(t))
        return state

    def __post_init__(self) -> None:
        object.__setattr__(self, "q", as_vector(self.q, "State.q"))
        object.__setattr__(self, "v", as_vector(self.v, "State.v"))
        object.__setattr__(self, "act", as_vector(self.act, "State.act"))
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

    Symmetry is checked for a dense M of at most 4096 entries (cheap), else under
    ``CONTACTOPT_DEBUG=1`` or before a mark (:attr:`known_positive_definite`): the systems build M
    symmetric (MuJoCo's own M), and the programs check what is not marked.
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
            if (M.size <= _DENSE_CHECK_ENTRIES or debug_checks()) and not is_symmetric_mass(M):
                raise ShapeError("Dynamics.M: mass matrix is not symmetric")
        if self.inverse_matrix is not None and tuple(np.shape(self.inverse_matrix)) != (nv, nv):
            raise ShapeError(f"Dynamics.inverse_matrix: expected shape ({nv}, {nv}), "
                             f"got {tuple(np.shape(self.inverse_matrix))}")
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

    @property
    def known_positive_definite(self) -> bool:
        """Whether M is known symmetric positive definite: a dense M with its Cholesky factor computed
        (:attr:`cholesky` raises otherwise) and its symmetry checked (the factor reads one triangle),
        or a system's own factorization (``inverse``, ``inverse_matrix``: MuJoCo's), which presumes
        it. The ``P`` built from M is then marked convex (:func:`contactopt.programs.csc.mark_symmetric`)."""
        if self.inverse is not None or self.inverse_matrix is not None:
            return True
        if "cholesky" not in self.__dict__ or self.is_sparse:
            return False
        return self.M.size <= _DENSE_CHECK_ENTRIES or debug_checks() or self._symmetric_past_check

    #: a dense M too large for ``__post_init__``'s symmetry check: its symmetry, checked once
    _symmetric_past_check = cached_property(lambda self: is_symmetric_mass(self.M))

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
class AngularFriction:
    """Torsional and rolling friction of contacts (MuJoCo's condim 4 and 6; MuJoCo
    documentation, "Computation: contact"): rows of the relative angular velocity about a
    contact's normal (torsional, ``axis = 0``) or its tangents (rolling, ``axis = 1, 2``), each
    with its own coefficient (a length, m), which share the contact's normal impulse: MuJoCo's
    elliptic cone ``lambda_n >= || (lambda_t1 / mu, lambda_t2 / mu, lambda_i / mu_i, ...) ||``.

    Attributes:
        J: (m, nv) the rows, dense or ``scipy.sparse`` (CSR).
        mu: (m,) their coefficients, > 0 (rows with 0 carry nothing and are left out).
        contact: (m,) the index of the contact each row belongs to, non-decreasing.
        axis: (m,) 0 (torsional, about the normal), 1 or 2 (rolling, about t1 or t2).
    """

    J: Matrix
    mu: FloatArray
    contact: NDArray[np.int_]
    axis: NDArray[np.int_]

    def __post_init__(self) -> None:
        mu = as_vector(self.mu, "AngularFriction.mu")
        m = mu.shape[0]
        if not np.all(mu > 0):
            raise ShapeError(f"AngularFriction.mu: must be > 0, got {mu}")
        J = as_sparse(self.J, "AngularFriction.J", None, "csr") if sp.issparse(self.J) else np.asarray(self.J)
        if J.ndim != 2 or J.shape[0] != m:
            raise ShapeError(f"AngularFriction.J: expected {m} rows, got shape {J.shape}")
        if not sp.issparse(J):
            J = as_matrix(J, "AngularFriction.J", J.shape)
        contact = np.array(self.contact, dtype=np.int_).reshape(-1)
        axis = np.array(self.axis, dtype=np.int_).reshape(-1)
        if contact.shape != (m,) or axis.shape != (m,) or np.any(np.diff(contact) < 0) or np.any(contact < 0):
            raise ShapeError(f"AngularFriction.contact/axis: expected {m} entries, contacts non-decreasing")
        if not np.all((axis >= 0) & (axis <= 2)):
            raise ShapeError(f"AngularFriction.axis: 0 (torsional), 1 or 2 (rolling), got {axis}")
        for array in (mu, contact, axis):
            array.setflags(write=False)
        for name, value in (("J", J), ("mu", mu), ("contact", contact), ("axis", axis)):
            object.__setattr__(self, name, value)

    @property
    def count(self) -> int:
        return int(self.mu.shape[0])

    def of(self, index: NDArray[np.int_]) -> AngularFriction:
        """The rows of the contacts ``index`` (ascending), renumbered by their position in it."""
        position = np.full(int(max(index.max(initial=-1), self.contact.max(initial=-1))) + 1, -1)
        position[index] = np.arange(index.shape[0])
        keep = np.flatnonzero(position[self.contact] >= 0) if self.count else np.zeros(0, dtype=np.int_)
        J = as_sparse(self.J, "AngularFriction.J", None, "csr")[keep] if sp.issparse(self.J) else \
            np.asarray(self.J)[keep]
        return AngularFriction(J=J, mu=self.mu[keep], contact=position[self.contact[keep]], axis=self.axis[keep])


@dataclass(frozen=True)
class Contacts:
    """Contact candidates at a configuration (Tedrake 2022, "Contact Jacobian").

    Attributes:
        phi: (nc,) signed separation, ``phi >= 0`` means not penetrating.
        J: (nc * dim, nv) contact Jacobian, dense or ``scipy.sparse`` (kept sparse, as CSR);
            rows per contact are normal first (``[n]`` for dim 1, ``[n, t]`` for dim 2,
            ``[n, t1, t2]`` for dim 3).
        mu: (nc,) Coulomb friction coefficients (may be ``inf`` for sticking contact).
        restitution: (nc,) coefficients of restitution in [0, 1].
        dim: rows per contact: 1 (normal only), 2 (planar) or 3 (spatial).
        angular: torsional and rolling friction rows of some contacts (``dim = 3``; MJCF
            condim 4 and 6), or None.
        stiffness: (nc,) the contact's own normal stiffness [N/m] (``inf``: none, the
            formulation's own model), or None: no contact has one. Hydroelastic patch rows
            carry it (:mod:`contactopt.systems.hydroelastic.rows`); ``sap``, ``regularized``
            and ``compliant`` read it.
        dissipation: (nc,) the contact's Hunt-Crossley dissipation [s/m] beside ``stiffness``
            (None with it).
    """

    phi: FloatArray
    J: Matrix
    mu: FloatArray
    restitution: FloatArray
    dim: int
    angular: AngularFriction | None = None
    stiffness: FloatArray | None = None
    dissipation: FloatArray | None = None

    def __post_init__(self) -> None:
        if self.dim not in (1, 2, 3):
            raise ShapeError(f"Contacts.dim: must be 1, 2 or 3, got {self.dim}")
        phi = as_vector(self.phi, "Contacts.phi")
        nc = phi.shape[0]
        J = as_sparse(self.J, "Contacts.J", None, "csr") if sp.issparse(self.J) else np.asarray(self.J)
        if J.ndim != 2 or J.shape[0] != nc * self.dim:
            raise ShapeError(
                f"Contacts.J: expected {nc * self.dim} rows ({nc} contacts x {self.dim}), "
                f"got shape {J.shape}"
            )
        if not sp.issparse(J):
            J = as_matrix(J, "Contacts.J", J.shape)
        mu = np.array(self.mu, dtype=np.float64).reshape(-1)
        if mu.shape != (nc,) or not (mu >= 0).all():  # NaN fails the comparison too
            raise ShapeError(f"Contacts.mu: expected {nc} non-negative values, got {mu}")
        mu.setflags(write=False)
        e = as_vector(self.restitution, "Contacts.restitution", nc)
        if not ((e >= 0) & (e <= 1)).all():
            raise ShapeError(f"Contacts.restitution: must lie in [0, 1], got {e}")
        for name, value in (("phi", phi), ("J", J), ("mu", mu), ("restitution", e)):
            object.__setattr__(self, name, value)
        if (self.stiffness is None) != (self.dissipation is None):
            raise ShapeError("Contacts.stiffness/dissipation: give both or neither")
        if self.stiffness is not None:
            k = np.array(self.stiffness, dtype=np.float64).reshape(-1)
            d = np.array(self.dissipation, dtype=np.float64).reshape(-1)
            if k.shape != (nc,) or not (k > 0).all():
                raise ShapeError(f"Contacts.stiffness: expected {nc} values > 0 (inf: none), got {k}")
            if d.shape != (nc,) or not (np.isfinite(d) & (d >= 0)).all():
                raise ShapeError(f"Contacts.dissipation: expected {nc} finite values >= 0, got {d}")
            for name, array in (("stiffness", k), ("dissipation", d)):
                array.setflags(write=False)
                object.__setattr__(self, name, array)
        angular = self.angular
        if angular is not None:
            columns, angular_columns = int(cast(Any, J).shape[1]), int(cast(Any, angular.J).shape[1])
            if self.dim != 3 or angular_columns != columns or np.any(angular.contact >= nc):
                raise ShapeError(f"Contacts.angular: rows of {nc} spatial contacts with {columns} columns expected")
            if not angular.count:
                object.__setattr__(self, "angular", None)

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
        unilateral: limit rows ``phi + h G v' >= 0`` (default: none).
        friction_loss: box rows, dry joint/tendon friction (default: none).
        native: the system's own constraint problem, when a formulation asked for it.
        max_recovery_speed: the system's default cap (m/s, ``inf``: none) on the speed at which
            rigid formulations remove a penetration (:mod:`contactopt.formulations.recovery`).
    """

    state: State
    dt: float
    dynamics: Dynamics
    contacts: Contacts
    bilateral: Bilateral
    bilateral_target: FloatArray = field(default_factory=lambda: np.zeros(0))
    unilateral: Unilateral = field(default_factory=lambda: Unilateral.empty(0))
    friction_loss: FrictionLoss = field(default_factory=lambda: FrictionLoss.empty(0))
    native: NativeRows | None = None
    max_recovery_speed: float = float("inf")

    def __post_init__(self) -> None:
        if not self.max_recovery_speed > 0:
            raise ShapeError(f"StepProblem.max_recovery_speed: must be > 0, got {self.max_recovery_speed}")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ShapeError(f"StepProblem.dt: must be a positive number, got {self.dt}")
        nv = self.dynamics.nv
        if self.state.v.shape[0] != nv:
            raise ShapeError(f"StepProblem: state.v has length {self.state.v.shape[0]}, M is {nv}x{nv}")
        if self.contacts.nv != nv:
            raise ShapeError(f"StepProblem: contact Jacobian has {self.contacts.nv} columns, nv = {nv}")
        if self.bilateral.H.shape[1] != nv:
            raise ShapeError(f"StepProblem: bilateral H has {self.bilateral.H.shape[1]} columns, nv = {nv}")
        for name, rows, matrix in (("unilateral", self.unilateral, self.unilateral.G),
                                   ("friction_loss", self.friction_loss, self.friction_loss.F)):
            if matrix.shape[1] != nv:
                if rows.count:
                    raise ShapeError(f"StepProblem: {name} rows have {matrix.shape[1]} columns, nv = {nv}")
                object.__setattr__(self, name, type(rows).empty(nv))
        target = self.bilateral.target if np.size(self.bilateral_target) == 0 else self.bilateral_target
        object.__setattr__(self, "bilateral_target",
                           as_vector(target, "StepProblem.bilateral_target", self.bilateral.count))

    @property
    def nv(self) -> int:
        return self.dynamics.nv

    @cached_property
    def v_free(self) -> FloatArray:
        """``v_free = v + h M^{-1} tau``: the next velocity before contact impulses
        (Tedrake 2022, "Time-stepping LCP: Normal force", written there ``v^-``)."""
        return self.state.v + self.dt * self.dynamics.solve_M(self.dynamics.tau)
