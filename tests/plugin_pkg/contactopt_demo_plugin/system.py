"""A 1-D cart on a linear spring in front of a wall.

``m qddot = -k (x - a) + f`` with the wall at ``x = 0`` and the spring's rest position ``a``:
``q = [x]``, ``phi(q) = x``, contact normal ``[1]``, ``M = [m]``, ``tau = [-k (x - a)]``.
With ``a < 0`` the spring holds the cart against the wall, where it rests with the contact
force ``k |a|`` (an impulse ``h k |a|`` per step).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems import Parameter, System


class SpringCart(System):
    type_name: ClassVar[str] = "spring_cart"
    description: ClassVar[str] = "1-D cart on a spring (stiffness k, rest position a), wall at x = 0 (demo plugin)"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("k", "spring stiffness [N/m]", minimum=0.0),
        Parameter("a", "rest position of the spring [m]", default=0.0),
    )
    nq = 1
    nv = 1
    contact_dim = 1
    q_names = ("x",)
    v_names = ("vx",)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        x = as_vector(q, "q", 1)[0]
        return Dynamics(M=np.array([[self.params["m"]]]), tau=np.array([-self.params["k"] * (x - self.params["a"])]))

    def contacts(self, q: ArrayLike) -> Contacts:
        x = as_vector(q, "q", 1)[0]
        return Contacts(phi=np.array([x]), J=np.array([[1.0]]), mu=np.array([self.mu]),
                        restitution=np.array([self.restitution]), dim=1)

    def potential_energy(self, q: ArrayLike) -> float:
        x = as_vector(q, "q", 1)[0]
        return 0.5 * self.params["k"] * (x - self.params["a"]) ** 2
