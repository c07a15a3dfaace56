"""The 1-D cart against a wall (Tedrake 2022, "Time-stepping LCP: Normal force").

``m qddot = u + f`` with the wall at ``x = 0``: ``q = [x]``, ``phi(q) = x >= 0``, contact
normal ``n = [1]`` (normal-only frame, dim 1), ``M = [m]``, ``tau = [u]`` with ``u`` a
constant horizontal force.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems.base import Parameter, System


class Cart(System):
    type_name: ClassVar[str] = "cart"
    description: ClassVar[str] = "1-D cart of mass m pushed by a constant force u, wall at x = 0"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("u", "constant horizontal force [N]", default=0.0),
    )
    nq = 1
    nv = 1
    contact_dim = 1
    q_names = ("x",)
    v_names = ("vx",)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        force = self.params["u"] if u is None else float(np.asarray(u).reshape(-1)[0])
        return Dynamics(M=np.array([[self.params["m"]]]), tau=np.array([force]))

    def contacts(self, q: ArrayLike) -> Contacts:
        x = as_vector(q, "q", 1)[0]
        return Contacts(phi=np.array([x]), J=np.array([[1.0]]), mu=np.array([self.mu]),
                        restitution=np.array([self.restitution]), dim=1)

    def potential_energy(self, q: ArrayLike) -> float:
        return -self.params["u"] * float(as_vector(q, "q", 1)[0])
