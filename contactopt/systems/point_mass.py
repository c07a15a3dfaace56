"""A point mass in the vertical (x, z) plane above the ground line z = 0.

``q = [x, z]``, ``v = [vx, vz]``, ``M = m I``, ``tau = [0, -m g]``. One contact with the
ground: ``phi = z - radius``, frame rows normal first ``n = [0, 1]``, ``t = [1, 0]`` (dim 2).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems.base import Parameter, System


class PointMass2D(System):
    type_name: ClassVar[str] = "point_mass"
    description: ClassVar[str] = "2-D point mass (x, z) above the ground line z = 0"
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("g", "gravitational acceleration [m/s^2]", default=9.81),
        Parameter("radius", "contact offset: phi = z - radius [m]", default=0.0, minimum=0.0),
    )
    nq = 2
    nv = 2
    contact_dim = 2
    q_names = ("x", "z")
    v_names = ("vx", "vz")

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        m, g = self.params["m"], self.params["g"]
        tau = np.array([0.0, -m * g])
        if u is not None:
            tau = tau + as_vector(u, "u", 2)
        return Dynamics(M=m * np.eye(2), tau=tau)

    def contacts(self, q: ArrayLike) -> Contacts:
        z = as_vector(q, "q", 2)[1]
        return Contacts(phi=np.array([z - self.params["radius"]]),
                        J=np.array([[0.0, 1.0], [1.0, 0.0]]), mu=np.array([self.mu]),
                        restitution=np.array([self.restitution]), dim=2)

    def potential_energy(self, q: ArrayLike) -> float:
        return self.params["m"] * self.params["g"] * float(as_vector(q, "q", 2)[1])
