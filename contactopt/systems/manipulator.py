"""Textbook systems in manipulator-equation form (Tedrake 2022, "Manipulator Equations"):

    M(q) vdot + C(q, v) v = tau_g(q) + B u + J^T lambda,

so ``Dynamics.tau = tau_g(q) + B u - C(q, v) v``. Subclasses give ``M``, ``C``, ``tau_g``,
``B`` and the potential energy; ``v = qdot`` (``N(q) = I``). ``C`` is any matrix with the
right product ``C v``; the one each system returns makes ``Mdot - 2C`` skew-symmetric.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]


class ManipulatorSystem(System):
    """Base of the textbook systems; no contacts unless a subclass adds them."""

    contact_dim = 2

    @abstractmethod
    def M(self, q: ArrayLike) -> FloatArray:
        """(nv, nv) mass matrix."""

    @abstractmethod
    def C(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """(nv, nv) Coriolis matrix with ``Mdot - 2C`` skew-symmetric."""

    @abstractmethod
    def tau_g(self, q: ArrayLike) -> FloatArray:
        """(nv,) gravity (potential) forces ``-dU/dq``."""

    @property
    @abstractmethod
    def B(self) -> FloatArray:
        """(nv, nu) input matrix."""

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        qv = as_vector(q, "q", self.nq)
        vv = as_vector(v, "v", self.nv)
        tau = self.tau_g(qv) - self.C(qv, vv) @ vv
        if u is None:
            u = self.control  # held by ``simulate`` from a controller (None: no input)
        if u is not None:
            tau = tau + self.B @ as_vector(u, "u", self.B.shape[1])
        return Dynamics(M=self.M(qv), tau=tau)

    @property
    def control_size(self) -> int:
        """``nu``: the columns of ``B``."""
        return int(self.B.shape[1])

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        vv = np.asarray(v, dtype=np.float64)
        return 0.5 * float(vv @ self.M(q) @ vv), self.potential_energy(q)

    def contacts(self, q: ArrayLike) -> Contacts:
        return Contacts.empty(self.nv, self.contact_dim)

    def has_friction(self) -> bool:
        """No contacts here, so no ``"mu"`` to differentiate by; subclasses with some say so."""
        return False
