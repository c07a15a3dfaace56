"""The hydroelastic contact model of a ``rigid3d`` scene: its keys and what it builds per step.

Scene keys (Drake's names, "Hydroelastic Contact User Guide"):

* ``[contact] model = "point" | "hydroelastic"`` (default ``"point"``);
  ``[contact] patch_resolution = [rays, rings]`` (default ``[44, 8]``, :mod:`.surface`);
* per body (``[[system.bodies]]``): ``compliance = "rigid" | "soft"`` (default rigid),
  ``hydroelastic_modulus`` (Pa, > 0, soft bodies only, required there) and
  ``hunt_crossley_dissipation`` (s/m, >= 0, default 0, soft bodies only).

Under the hydroelastic model a soft body's ground contact is its contact surface against the
ground (a rigid half-space), and its contact with a rigid box the box's surface inside it
(:func:`.surface.box_surfaces`); a soft body against a second soft body has their
equal-pressure surface, and against a rigid sphere the sphere's surface inside it
(:func:`.pair.pair_surface`). Each surface is meshed and turned into rows (:mod:`.surface`,
:mod:`.pair`, :mod:`.rows`); a rigid body keeps its point contacts with rigid bodies (Drake too
has no hydroelastic contact between two rigid geometries). Soft bodies are boxes, spheres,
cylinders and capsules (the last two along the body's z axis, ``size = [radius, half
length]``, soft only: they have no point contacts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.base import ParameterError
from contactopt.systems.hydroelastic.fields import PressureField
from contactopt.systems.hydroelastic.pair import Solid, pair_surface
from contactopt.systems.hydroelastic.rows import SurfaceRows, surface_rows
from contactopt.systems.hydroelastic.surface import DEFAULT_RESOLUTION, ContactSurface, box_surfaces, plane_surface
from contactopt.systems.rigid3d_bodies import RigidBody

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["MODELS", "HydroelasticSetup", "check_scene", "parse_contact_keys"]

#: The values of ``[contact] model``.
MODELS: tuple[str, ...] = ("point", "hydroelastic")


def parse_contact_keys(contact: Mapping[str, Any]) -> tuple[str, tuple[int, int], dict[str, Any]]:
    """``(model, patch_resolution, the other keys)`` of a ``[contact]`` table; errors name the key."""
    rest = dict(contact)
    model = rest.pop("model", "point")
    if model not in MODELS:
        raise ParameterError("contact.model", f"contact.model: expected one of {', '.join(map(repr, MODELS))}, "
                             f"got {model!r}")
    resolution = rest.pop("patch_resolution", None)
    if resolution is None:
        return model, DEFAULT_RESOLUTION, rest
    if model != "hydroelastic":
        raise ParameterError("contact.patch_resolution", "contact.patch_resolution: only with "
                             "contact.model = \"hydroelastic\"")
    if (not isinstance(resolution, list | tuple) or len(resolution) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in resolution)
            or resolution[0] < 3 or resolution[1] < 1):
        raise ParameterError("contact.patch_resolution", "contact.patch_resolution: expected [rays, rings], "
                             f"integers, rays >= 3 and rings >= 1, got {resolution!r}")
    return model, (int(resolution[0]), int(resolution[1])), rest


def check_scene(bodies: Sequence[RigidBody], model: str, ground: bool) -> None:
    """A soft body needs the hydroelastic model, and the hydroelastic model a soft body on a
    ground: one line naming the body or the key otherwise."""
    soft = [i for i, body in enumerate(bodies) if body.compliance == "soft"]
    if model == "point" and soft:
        raise ParameterError(f"system.bodies[{soft[0]}].compliance",
                             f"system.bodies[{soft[0]}].compliance: a soft body needs [contact] model = "
                             "\"hydroelastic\" (the point model has no pressure field)")
    if model == "hydroelastic" and not soft:
        raise ParameterError("contact.model", "contact.model: \"hydroelastic\" needs at least one body with "
                             "compliance = \"soft\" (rigid bodies keep point contacts)")
    if model == "hydroelastic" and not ground:
        raise ParameterError("contact.model", "contact.model: \"hydroelastic\" contact surfaces are built "
                             "against the ground; turn [system] ground on")


class HydroelasticSetup:
    """The soft bodies of a ``rigid3d`` system and their surfaces against the ground, rigid
    boxes, rigid spheres and each other (module docstring)."""

    def __init__(self, bodies: Sequence[RigidBody], model: str, resolution: tuple[int, int], ground: bool) -> None:
        if model not in MODELS:
            raise ValueError(f"Rigid3D: contact_model must be one of {MODELS}, got {model!r}")
        rays, rings = resolution
        if not (isinstance(rays, int | np.integer) and isinstance(rings, int | np.integer) and rays >= 3
                and rings >= 1):
            raise ValueError(f"Rigid3D: patch_resolution must be integers (rays >= 3, rings >= 1), got {resolution}")
        self.model = model
        self.resolution = (int(rays), int(rings))
        self.bodies = tuple(bodies)
        self.active = model == "hydroelastic"
        soft = [b.compliance == "soft" for b in self.bodies]
        if any(soft) and not self.active:
            name = self.bodies[soft.index(True)].name
            raise ValueError(f"Rigid3D: body {name!r} is soft; a soft body needs contact_model='hydroelastic'")
        if self.active and not ground:
            raise ValueError("Rigid3D: the hydroelastic model builds surfaces against the ground; turn it on")
        self.soft_mask = np.array(soft, dtype=bool)
        self.fields: dict[int, PressureField] = {
            i: PressureField(b.shape, tuple(b.size), float(b.hydroelastic_modulus))
            for i, b in enumerate(self.bodies) if soft[i] and b.hydroelastic_modulus is not None}

    def point_pairs(self, collider: Sequence[tuple[int, int]], box_pairs: bool) -> list[tuple[int, int]]:
        """The body pairs left to point contact (``collider``'s pairs with a box, without those of
        a soft body), after taking each pair with a soft body as a contact surface: against a
        rigid box (:func:`.surface.box_surfaces`; when ``box_pairs``), against a second soft body
        or a rigid sphere (:func:`.pair.pair_surface`). With ``box_pairs = false`` only pairs of
        spheres can touch."""
        self.box_pairs: list[tuple[int, int]] = []
        self.solid_pairs: list[tuple[int, int]] = []
        if not self.active:
            return list(collider)
        n = len(self.bodies)
        spheres = [i for i, body in enumerate(self.bodies) if body.shape == "sphere"]
        every = [(a, b) for a in range(n) for b in range(a + 1, n)]
        # the pairs that can touch: every pair, or (box_pairs = false) the sphere pairs alone
        pairs = every if box_pairs else [(a, b) for a, b in every if a in spheres and b in spheres]
        for a, b in pairs:
            soft_a, soft_b = bool(self.soft_mask[a]), bool(self.soft_mask[b])
            if not (soft_a or soft_b):
                continue
            soft, other = (a, b) if soft_a else (b, a)
            if soft_a != soft_b and self.bodies[other].shape == "box":
                self.box_pairs.append((soft, other))
            else:  # a second soft body, or a rigid sphere (rigid cylinders and capsules do not exist)
                self.solid_pairs.append((soft, other))
        return [(a, b) for a, b in collider if not (self.soft_mask[a] or self.soft_mask[b])]

    def _solid(self, i: int, positions: FloatArray, rotations: FloatArray) -> Solid:
        body = self.bodies[i]
        return Solid(body.shape, tuple(float(x) for x in body.size), positions[i], rotations[i], self.fields.get(i))

    def surfaces(self, positions: FloatArray, rotations: FloatArray, plane: Any) -> list[ContactSurface]:
        """Each soft body's surface against the ground plane, in body order (those that touch),
        then those against rigid boxes, one per face reached, in pair order, then those against
        soft bodies and rigid spheres (:mod:`.pair`), in pair order."""
        out = []
        for i, field in self.fields.items():
            surface = plane_surface(field, positions[i], rotations[i], plane.normal, plane.offset, soft=i, rigid=-1,
                                    resolution=self.resolution)
            if surface is not None:
                out.append(surface)
        for soft, rigid in self.box_pairs:
            out += box_surfaces(self.fields[soft], positions[soft], rotations[soft], self.bodies[rigid].size,
                                positions[rigid], rotations[rigid], soft, rigid, self.resolution)
        for soft, other in self.solid_pairs:
            surface = pair_surface(self._solid(soft, positions, rotations), self._solid(other, positions, rotations),
                                   soft, other, self.resolution)
            if surface is not None:
                out.append(surface)
        return out

    def combined(self, surface: ContactSurface) -> tuple[float, float]:
        """``(max gradient, dissipation)`` of a surface's rows: the soft field's ``E / d_max``
        and ``hunt_crossley_dissipation``; between two soft bodies the gradients in series and
        the dissipation Drake combines, ``(E_B d_A + E_A d_B) / (E_A + E_B)`` (its rule for
        Hunt-Crossley dissipation, ``(k_B d_A + k_A d_B) / (k_A + k_B)``, with the hydroelastic
        moduli as the stiffnesses: "Contact Modeling in Drake", dissipation)."""
        field = self.fields[surface.soft]
        own = self.bodies[surface.soft].hunt_crossley_dissipation
        other = self.fields.get(surface.rigid) if surface.rigid >= 0 else None
        if other is None:
            return field.modulus / field.extent, own
        g_a, g_b = field.modulus / field.extent, other.modulus / other.extent
        d_b = self.bodies[surface.rigid].hunt_crossley_dissipation
        return g_a * g_b / (g_a + g_b), (other.modulus * own + field.modulus * d_b) / (field.modulus + other.modulus)

    def rows(self, positions: FloatArray, rotations: FloatArray,
             plane: Any) -> list[tuple[ContactSurface, SurfaceRows]]:
        """Each surface with its rows (:func:`.rows.surface_rows`); none under the point model."""
        out: list[tuple[ContactSurface, SurfaceRows]] = []
        for surface in self.surfaces(positions, rotations, plane):
            out.append((surface, surface_rows(surface, *self.combined(surface))))
        return out

    def row_names(self, pose: tuple[FloatArray, FloatArray] | None, plane: Any) -> list[str]:
        """``"<soft body>.patch[k]"`` per row, ``k`` the polygon of the mesh, at ``pose``
        (positions, rotations; needed under the hydroelastic model); none under the point model."""
        if not self.active:
            return []
        if pose is None:
            raise ValueError("Rigid3D.contact_names: hydroelastic patch rows depend on q; pass q")
        names: list[str] = []
        count: dict[str, int] = {}
        for surface, rows in self.rows(*pose, plane):
            pair = self.bodies[surface.soft].name + ("" if surface.rigid < 0 else f"|{self.bodies[surface.rigid].name}")
            start = count.get(pair, 0)
            names += [f"{pair}.patch[{start + k}]" for k in range(rows.count)]
            count[pair] = start + rows.count
        return names

    def points(self, points: FloatArray, positions: FloatArray, rotations: FloatArray, plane: Any) -> FloatArray:
        """The point contacts' ``points`` followed by the patch rows' quadrature points."""
        if not self.active:
            return points
        return np.concatenate([points, *[rows.points for _, rows in self.rows(positions, rotations, plane)]])

    def extend(self, phi: FloatArray, frames: FloatArray, contact: IntArray, body: IntArray, terms: FloatArray,
               positions: FloatArray, rotations: FloatArray, plane: Any, frame: FloatArray
               ) -> tuple[FloatArray, FloatArray, IntArray, IntArray, FloatArray, tuple[FloatArray, FloatArray]]:
        """The point contacts' geometry of :class:`~contactopt.systems.rigid3d.Rigid3D` (``phi``,
        frames, Jacobian terms ``(contact, body)`` and ``[r, sign]``) with the patch rows appended,
        one term each: the soft body's point ``c_i`` with the ground's ``frame``; and the rows'
        ``(stiffness, dissipation)``: ``inf`` and 0 for the point contacts, :mod:`.rows` for the patches."""
        patch = self.rows(positions, rotations, plane)
        npoint = phi.shape[0]
        index = npoint + np.arange(sum(rows.count for _, rows in patch))
        row_surface = np.repeat(np.arange(len(patch)), [rows.count for _, rows in patch]).astype(np.int_)
        soft = np.array([surface.soft for surface, _ in patch], dtype=np.int_)[row_surface]
        rigid = np.array([surface.rigid for surface, _ in patch], dtype=np.int_)[row_surface]
        points = np.concatenate([rows.points for _, rows in patch] + [np.zeros((0, 3))])
        pair = rigid >= 0  # a rigid box's term: the same point, sign -1 (J_soft - J_rigid)
        new_contact = np.concatenate([index, index[pair]])
        new_body = np.concatenate([soft, rigid[pair]])
        offsets = np.column_stack([np.concatenate([points - positions[soft], points[pair] - positions[rigid[pair]]]),
                                   np.concatenate([np.ones(soft.shape[0]), -np.ones(int(pair.sum()))])])
        row_frames = np.concatenate([rows.frames for _, rows in patch] + [np.zeros((0, 3, 3))])
        stiffness = np.concatenate([np.full(npoint, np.inf), *[rows.stiffness for _, rows in patch]])
        dissipation = np.concatenate([np.zeros(npoint), *[rows.dissipation for _, rows in patch]])
        return (np.concatenate([phi, *[rows.phi for _, rows in patch]]), np.concatenate([frames, row_frames]),
                np.concatenate([contact, new_contact]), np.concatenate([body, new_body]),
                np.concatenate([terms, offsets]), (stiffness, dissipation))

    def declared_features(self) -> dict[str, list[str]]:
        """``{"hydroelastic": soft body names}`` when the model is on."""
        if not self.active:
            return {}
        return {"hydroelastic": [self.bodies[i].name for i in self.fields]}
