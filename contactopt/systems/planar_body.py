"""One rigid body (disk or box) in the vertical x-z plane above the ground line ``z = 0``.

``q = [x, z, theta]``, ``v = [vx, vz, omega]``, ``M = diag(m, m, I)``, ``tau = [0, -m g, 0]``
(plus ``u``, a generalized force, if given). Tedrake 2022, "A spinning ball bouncing on the
ground", writes exactly this model for a ball.

Sign convention: x points right, z up, and ``theta`` is **counterclockwise** in that picture
(a positive ``theta`` turns the body's ``+x`` axis toward ``+z``; the rotation axis is ``-y``
of a right-handed (x, y, z) frame). A body point at world offset ``o = (o_x, o_z)`` from the
centre therefore moves at ``v_c + omega (-o_z, o_x)``: the lowest point of a disk
(``o = (0, -r)``) moves at ``vx + r omega``, so rolling without slip to the right is
``vx = -r omega`` (``omega < 0``, clockwise). This matches the reference's Jacobian
``J = [[0, 1, 0], [1, 0, r]]`` (rows ``n``, ``t``).

Contacts (2-D frames, rows ``[n, t]`` with ``n = +z`` and ``t = +x``):

* disk: one contact at the lowest point, ``phi = z - r``, ``n = [0, 1, 0]``, ``t = [1, 0, r]``;
* box (half extents ``w``, ``h``): its 4 corners in the order of
  ``itertools.product((-1, 1), repeat=2)`` over the body-frame signs ``(sx w, sz h)``, i.e.
  ``(-,-), (-,+), (+,-), (+,+)``; with ``o = R(theta) (sx w, sz h)``: ``phi = z + o_z``,
  ``n = [0, 1, o_x]``, ``t = [1, 0, -o_z]`` (Tedrake 2022, "Beyond Point Contact").

Moments of inertia: a box is a uniform plate, ``I = m (w^2 + h^2) / 3``. A disk stands for
a **ball** (the reference's scene), so ``inertia = "solid"`` is a solid sphere,
``I = 2/5 m r^2``, and ``inertia = "hollow"`` a thin spherical shell, ``I = 2/3 m r^2`` (the
reference's "hollow-sphere"); they are *not* the flat-disk values ``m r^2 / 2`` or ``m r^2``.

Scene shape::

    [system]
    type = "planar_body"
    shape = "disk"          # or "box"; default "disk"
    inertia = "solid"       # disk only: "solid" (2/5 m r^2, default) or "hollow" (2/3 m r^2)
    [system.parameters]
    m = 1.0
    radius = 0.1            # disk; a box takes half_width and half_height

``planar_ball`` (:class:`PlanarBall`) is the same model with the shape fixed to a disk,
parameters ``m``, ``radius``, ``g`` and ``inertia`` defaulting to ``"hollow"`` as in the
reference's spinning ball.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System, resolve_parameters
from contactopt.systems.geometry import perp2, rot2

FloatArray = NDArray[np.float64]

__all__ = ["INERTIA_FACTORS", "PlanarBall", "PlanarBody"]

#: ``I / (m r^2)`` of the ball a disk stands for: solid sphere 2/5, hollow sphere 2/3.
INERTIA_FACTORS: dict[str, float] = {"solid": 2.0 / 5.0, "hollow": 2.0 / 3.0}
#: Which parameters belong to which shape (the others are rejected).
_SHAPE_PARAMETERS: dict[str, frozenset[str]] = {
    "disk": frozenset({"radius"}),
    "box": frozenset({"half_width", "half_height"}),
}
_CORNER_SIGNS: FloatArray = np.array(list(itertools.product((-1.0, 1.0), repeat=2)))


class PlanarBody(System):
    """A disk (ball) or box in the x-z plane; see the module docstring for the conventions."""

    type_name: ClassVar[str] = "planar_body"
    description: ClassVar[str] = ("ball (shape = \"disk\") or box in the x-z plane above z = 0, "
                                  "q = [x, z, theta], theta counterclockwise")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("g", "gravitational acceleration [m/s^2]", default=9.81),
        Parameter("radius", "disk radius [m]", default=0.1, minimum=0.0, exclusive=True),
        Parameter("half_width", "box half extent along its x axis [m]", default=0.1, minimum=0.0,
                  exclusive=True),
        Parameter("half_height", "box half extent along its z axis [m]", default=0.1, minimum=0.0,
                  exclusive=True),
    )
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters", "shape", "inertia"})
    #: Shapes this type accepts; the first is the default.
    shapes: ClassVar[tuple[str, ...]] = ("disk", "box")
    default_inertia: ClassVar[str] = "solid"
    nq = 3
    nv = 3
    contact_dim = 2
    q_names = ("x", "z", "theta")
    v_names = ("vx", "vz", "omega")

    def __init__(self, params: Mapping[str, float], contact: Mapping[str, float],
                 shape: str | None = None, inertia: str | None = None) -> None:
        """Resolved ``params`` and ``contact`` values, the shape and (disk) the inertia kind."""
        super().__init__(params, contact)
        self.shape = self.shapes[0] if shape is None else shape
        if self.shape not in self.shapes:
            raise ValueError(f"{self.type_name}: unknown shape {self.shape!r}; known: {self.shapes}")
        self.inertia_kind = self.default_inertia if inertia is None else inertia
        if self.shape == "disk" and self.inertia_kind not in INERTIA_FACTORS:
            raise ValueError(f"{self.type_name}: unknown inertia {self.inertia_kind!r}; "
                             f"known: {tuple(INERTIA_FACTORS)}")
        m = self.params["m"]
        if self.shape == "disk":
            self.inertia = INERTIA_FACTORS[self.inertia_kind] * m * self.params["radius"] ** 2
        else:
            w, h = self.params["half_width"], self.params["half_height"]
            self.inertia = m * (w * w + h * h) / 3.0

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> PlanarBody:
        """Build from a ``[system]`` table: ``shape`` and ``inertia`` strings and
        ``parameters``; parameters of the other shape are rejected. Errors name the key."""
        for key in table:
            if key not in cls.config_keys:
                raise ParameterError(f"system.{key}", f"system.{key}: unknown key for "
                                     f"{cls.type_name}; known: {', '.join(sorted(cls.config_keys))}")
        shape = table.get("shape", cls.shapes[0])
        if shape not in cls.shapes:
            raise ParameterError("system.shape", f"system.shape: unknown shape {shape!r}; known: "
                                 f"{', '.join(cls.shapes)}")
        inertia = table.get("inertia")
        if inertia is not None:
            if shape != "disk":
                raise ParameterError("system.inertia", "system.inertia: only a disk takes an inertia "
                                     "kind; a box is a uniform plate")
            if inertia not in INERTIA_FACTORS:
                raise ParameterError("system.inertia", f"system.inertia: unknown inertia {inertia!r}; "
                                     f"known: {', '.join(INERTIA_FACTORS)}")
        params = table.get("parameters", {})
        if not isinstance(params, Mapping):
            raise ParameterError("system.parameters", "system.parameters: expected a table")
        for other, names in _SHAPE_PARAMETERS.items():
            if other == shape:
                continue
            for name in sorted(names & set(params)):
                raise ParameterError(f"system.parameters.{name}",
                                     f"system.parameters.{name}: applies to a {other}, not a {shape}")
        return cls(resolve_parameters(cls.parameters, params, "system.parameters"),
                   resolve_parameters(CONTACT_PARAMETERS, contact, "contact"),
                   shape=shape, inertia=inertia)

    def _parameter_table(self) -> dict[str, tuple[Parameter, float]]:
        """``"mu"``, ``"m"``, ``"g"`` and the parameters of the body's own shape (a disk has
        no ``half_width``)."""
        own = {"m", "g"} | _SHAPE_PARAMETERS[self.shape]
        return {name: entry for name, entry in super()._parameter_table().items() if name == "mu" or name in own}

    def _replace_parameters(self, values: Mapping[str, float]) -> PlanarBody:
        """A fresh construction: the moment of inertia is derived from ``m`` and the size at
        construction."""
        new = type(self)(*self._replaced_values(values), shape=self.shape, inertia=self.inertia_kind)
        new.control = self.control
        return new

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        """``M = diag(m, m, I)``, ``tau = [0, -m g, 0]`` (+ ``u``, 3 generalized forces)."""
        m, g = self.params["m"], self.params["g"]
        tau = np.array([0.0, -m * g, 0.0])
        if u is not None:
            tau = tau + as_vector(u, "u", 3)
        return Dynamics(M=np.diag([m, m, self.inertia]), tau=tau)

    def _offsets(self, theta: float) -> FloatArray:
        """(nc, 2) world offsets ``(o_x, o_z)`` of the contact points from the centre."""
        if self.shape == "disk":
            return np.array([[0.0, -self.params["radius"]]])
        body = _CORNER_SIGNS * np.array([self.params["half_width"], self.params["half_height"]])
        return body @ rot2(theta).T

    def contact_points(self, q: ArrayLike) -> FloatArray:
        """(nc, 2) world ``(x, z)`` of the contact points, in the order of :meth:`contacts`."""
        qq = as_vector(q, "q", 3)
        return qq[:2] + self._offsets(float(qq[2]))

    def contacts(self, q: ArrayLike) -> Contacts:
        """Ground contacts (disk: 1, box: 4 corners); rows ``n = [0, 1, o_x]``,
        ``t = [1, 0, -o_z]`` for a point at offset ``o`` (Tedrake 2022, "Contact Jacobian")."""
        qq = as_vector(q, "q", 3)
        offsets = self._offsets(float(qq[2]))
        nc = offsets.shape[0]
        J = np.zeros((2 * nc, 3))
        for k, o in enumerate(offsets):
            rate = perp2(o)  # d o / d theta
            J[2 * k] = [0.0, 1.0, rate[1]]
            J[2 * k + 1] = [1.0, 0.0, rate[0]]
        return Contacts(phi=qq[1] + offsets[:, 1], J=J, mu=np.full(nc, self.mu),
                        restitution=np.full(nc, self.restitution), dim=2)

    def potential_energy(self, q: ArrayLike) -> float:
        """``m g z``."""
        return self.params["m"] * self.params["g"] * float(as_vector(q, "q", 3)[1])

    def describe(self) -> str:
        """One line: shape, inertia kind, parameters and contact parameters."""
        names = {"m", "g"} | _SHAPE_PARAMETERS[self.shape]
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items() if k in names)
        kind = f", inertia={self.inertia_kind}" if self.shape == "disk" else ""
        return (f"{self.type_name}({self.shape}{kind}, {params}; mu={self.mu:g}, "
                f"e={self.restitution:g})")


class PlanarBall(PlanarBody):
    """The reference's spinning ball: a :class:`PlanarBody` disk, ``inertia`` "hollow"
    (default, ``2/3 m r^2``) or "solid" (``2/5 m r^2``)."""

    type_name: ClassVar[str] = "planar_ball"
    description: ClassVar[str] = ("ball (inertia = \"hollow\" | \"solid\") in the x-z plane above "
                                  "z = 0, q = [x, z, theta]")
    parameters: ClassVar[tuple[Parameter, ...]] = (
        Parameter("m", "mass [kg]", minimum=0.0, exclusive=True),
        Parameter("radius", "ball radius [m]", minimum=0.0, exclusive=True),
        Parameter("g", "gravitational acceleration [m/s^2]", default=9.81),
    )
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters", "inertia"})
    shapes: ClassVar[tuple[str, ...]] = ("disk",)
    default_inertia: ClassVar[str] = "hollow"
