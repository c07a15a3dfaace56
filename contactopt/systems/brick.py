"""The brick on the ground with Coulomb friction (Tedrake 2022, "Time-stepping LCP: Coulomb
Friction"): ``m qddot = u + f`` with ``|f| <= mu m g``.

Modelled as a point mass in the vertical x-z plane resting on the ground line ``z = 0`` so
that the normal impulse is a variable of the step program rather than a given ``m g h``:
``q = [x, z]``, ``v = [vx, vz]``, ``M = m I``, ``tau = [u, -m g]`` with ``u`` a constant
horizontal push. One contact, ``phi = z``, frame rows normal first ``n = [0, 1]``,
``t = [1, 0]`` (dim 2). Started at rest on the ground (``z = 0``, ``vz = 0``), a time-stepping
formulation finds the normal impulse ``m g h`` and reproduces the reference's LCP
(``v[n+1] = v[n] + h/m (u + f+ - f-)``, ``f+ + f- <= mu m g``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems.base import Parameter
from contactopt.systems.point_mass import PointMass2D

__all__ = ["Brick"]


class Brick(PointMass2D):
    """Point-mass brick on the ground pushed horizontally by ``u``; see the module docstring."""

    type_name: ClassVar[str] = "brick"
    description: ClassVar[str] = ("brick on the ground with Coulomb friction, pushed by a constant "
                                  "horizontal force u; q = [x, z]")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("g", "gravitational acceleration [m/s^2]", default=9.81),
        Parameter("u", "constant horizontal push [N]", default=0.0),
    )

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        """``M = m I``, ``tau = [u, -m g]``; ``u`` (a scalar or one number) replaces the
        parameter ``u`` when given."""
        m, g = self.params["m"], self.params["g"]
        push = self.params["u"] if u is None else float(as_vector(np.reshape(u, -1), "u", 1)[0])
        return Dynamics(M=m * np.eye(2), tau=np.array([push, -m * g]))

    def contacts(self, q: ArrayLike) -> Contacts:
        """One ground contact: ``phi = z``, rows ``n = [0, 1]``, ``t = [1, 0]``."""
        z = as_vector(q, "q", 2)[1]
        return Contacts(phi=np.array([z]), J=np.array([[0.0, 1.0], [1.0, 0.0]]), mu=np.array([self.mu]),
                        restitution=np.array([self.restitution]), dim=2)

    def potential_energy(self, q: ArrayLike) -> float:
        """``m g z - u x`` (the constant push as a potential, as for the cart)."""
        x, z = as_vector(q, "q", 2)
        return self.params["m"] * self.params["g"] * float(z) - self.params["u"] * float(x)
