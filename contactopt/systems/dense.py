"""A dense view of a system, for the continuous-time integrators (compliant ODE, hybrid
event-driven, ODE with constraints) whose small linear algebra (KKT blocks, row picks)
is written for dense arrays. Time-stepping formulations take the system's own sparse M and
J; these integrators serve small textbook-sized scenes, so a dense copy costs little."""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from contactopt.model.step import Contacts, Dynamics, to_dense


class DenseView:
    """Forwards everything to ``system`` except :meth:`dynamics` and :meth:`contacts`, whose
    ``M`` and ``J`` it returns dense (``M^{-1}`` still through the system's own inverse)."""

    def __init__(self, system: Any) -> None:
        self._system = system

    def __getattr__(self, name: str) -> Any:
        return getattr(self._system, name)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        dynamics = self._system.dynamics(q, v, u)
        if not dynamics.is_sparse:
            return dynamics
        return Dynamics(M=to_dense(dynamics.M), tau=dynamics.tau, inverse=dynamics.inverse)

    def contacts(self, q: ArrayLike) -> Contacts:
        contacts = self._system.contacts(q)
        if not contacts.is_sparse:
            return contacts
        return Contacts(phi=contacts.phi, J=to_dense(contacts.J), mu=contacts.mu,
                        restitution=contacts.restitution, dim=contacts.dim, stiffness=contacts.stiffness,
                        dissipation=contacts.dissipation)


def dense_view(system: Any) -> Any:
    """``system`` seen with dense ``M`` and ``J`` (see :class:`DenseView`)."""
    return system if isinstance(system, DenseView) else DenseView(system)
