"""Contact rows of a contact surface: the discrete hydroelastic model (Masterjohn et al. 2022,
"Velocity level approximation of pressure field contact patches", sections IV-V; the model of
Drake's discrete solvers).

Each quadrature point ``c_i`` of a surface (:mod:`.surface`, one per polygon of area ``A_i``)
becomes a point contact whose normal force is the pressure over its polygon,
``f_i = A_i p(c_i)``. Moving the rigid plane a distance ``x`` further into the soft body
raises the pressure at ``c_i`` by ``g_i x`` (``g_i = grad p . n``), so the point is a linear
spring of stiffness and rest separation

    k_i = A_i g_i        (N/m),        phi0_i = -p_i / g_i        (m),

with ``f_i = k_i (-phi_i)`` (``phi_i`` the separation, ``phi0_i`` at the surface's pose):
the pressure field reappears exactly at the state the surface was built at, and its
stiffness to first order. Points whose gradient along the normal is not positive
(``g_i <= 0``: a box's rim, where a side face is nearest, has ``g = 0``) have no such spring
and are left out, as in the paper's construction; so are polygons of zero area.

Between two soft bodies (:mod:`.pair`) ``g_i`` is the two fields' gradients along the
polygon's normal in series, ``g_A g_B / (g_A + g_B)`` (moving the bodies together by ``x``
raises the common pressure by that much), as Masterjohn et al. combine them.

Dissipation: the Hunt-Crossley law on each point, ``f_i = k_i x_i (1 + d xdot_i)``
(``d = hunt_crossley_dissipation``, s/m; Hunt & Crossley 1975, the dissipation Drake names
so), carried per row for the formulations to read (:attr:`Contacts.dissipation`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.hydroelastic.surface import ContactSurface

FloatArray = NDArray[np.float64]

__all__ = ["MIN_GRADIENT_FRACTION", "SurfaceRows", "surface_rows"]

#: A point's gradient along the normal must exceed this fraction of the field's largest
#: gradient ``E / d_max`` to make a row (``g > 0`` up to rounding).
MIN_GRADIENT_FRACTION = 1e-9


@dataclass(frozen=True)
class SurfaceRows:
    """The rows of one surface: ``keep`` (F,) which polygons made one, then per row the
    point (n, 3), separation ``phi`` (n,), stiffness ``k`` (n,), dissipation (n,) and frame
    ``[n_i; t1_i; t2_i]`` (n, 3, 3) (the polygon's normal first)."""

    keep: NDArray[np.bool_]
    points: FloatArray
    phi: FloatArray
    stiffness: FloatArray
    dissipation: FloatArray
    frames: FloatArray

    @property
    def count(self) -> int:
        return int(self.phi.shape[0])


def surface_rows(surface: ContactSurface, max_gradient: float, dissipation: float) -> SurfaceRows:
    """``k_i = A_i g_i`` and ``phi0_i = -p_i / g_i`` of the points with ``g_i > 0`` and
    ``A_i p_i > 0`` (module docstring); ``max_gradient`` is the field's ``E / d_max`` (two soft
    bodies: both fields' in series)."""
    if not (max_gradient > 0 and np.isfinite(max_gradient)):
        raise ValueError(f"surface_rows: max_gradient must be a finite number > 0, got {max_gradient}")
    if not (dissipation >= 0 and np.isfinite(dissipation)):
        raise ValueError(f"surface_rows: dissipation must be a finite number >= 0 (s/m), got {dissipation}")
    g = surface.gradients
    keep = (g > MIN_GRADIENT_FRACTION * max_gradient) & (surface.areas > 0) & (surface.pressures > 0)
    gk = g[keep]
    return SurfaceRows(keep=keep, points=surface.centroids[keep], phi=-surface.pressures[keep] / gk,
                       stiffness=surface.areas[keep] * gk, dissipation=np.full(gk.shape[0], float(dissipation)),
                       frames=surface.face_frames()[keep])
