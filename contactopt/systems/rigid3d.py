"""Free rigid bodies in 3-D (boxes and spheres) with point contacts.

Coordinates, per body ``i`` in the order the scene lists them:

* ``q_i = [x, y, z, qw, qx, qy, qz]``: centre of mass in the world frame and the unit
  quaternion (scalar first) of the rotation ``R`` from body to world (``nq = 7 N``);
* ``v_i = [vx, vy, vz, wx, wy, wz]``: centre-of-mass velocity and angular velocity, both in
  the **world** frame (``nv = 6 N``). Hence ``qdot != v`` (``N(q)`` is not the identity).

Dynamics (Newton-Euler about the centre of mass, world frame; Featherstone, *Rigid Body
Dynamics Algorithms*, 2008, section 2.14 and eq. 2.67)::

    M(q) = blockdiag(m_i I3, R_i I_i R_i^T)
    tau  = [m_i g ; -w_i x (R_i I_i R_i^T w_i)]  (+ u, a generalized wrench, if given)

``-w x (I w)`` is the gyroscopic term: with ``I_world = R I R^T`` it is the
``-Idot_world w`` that keeps the angular momentum ``I_world w`` constant without torque.
Inertia: solid box with half extents ``(a, b, c)``: ``m/3 (b^2 + c^2), m/3 (a^2 + c^2),
m/3 (a^2 + b^2)``; solid sphere ``2/5 m r^2``.

Integration (semi-implicit Euler): ``x' = x + h v'`` and ``quat' = exp(h w'/2) * quat``
(world-frame angular velocity multiplies on the **left**), renormalized to ``|quat| = 1``.

Contacts are point contacts (Tedrake 2022, "Contact Jacobian" and "Beyond Point Contact":
point contacts at the corners of a box), in this order:

1. for each body in order, if ``ground`` is on (the plane ``n . (p - p0) = 0``; by default
   ``z = 0`` with ``n = +z``; ``[system] ground_normal = [nx, ny, nz]`` (normalized) and
   ``ground_point = [x, y, z]`` tilt or move it), all candidates whatever their distance:
   a box gives its 8 corners, in the order of ``itertools.product((-1, 1), repeat=3)``
   over the signs of the body-frame half extents ``(sx a, sy b, sz c)``, i.e. corner
   ``k = 4 i_x + 2 i_y + i_z`` with sign ``-1`` for ``i = 0`` and ``+1`` for ``i = 1``;
   ``phi = n . (corner - p0)``, frame ``[n; t1; t2]`` of
   :func:`~contactopt.systems.geometry.tangent_basis` (``[z; x; y]`` for the default ground).
   A sphere gives one contact at its point nearest to the plane, ``phi = n . (c - p0) - r``.
   Named ``"box.corner(-,-,+)"`` and ``"ball.ground"``.
2. then the body pairs ``(A, B)``, ``A`` before ``B`` in scene order, lexicographic:
   a pair of spheres gives one contact (every pair, or those with gap ``<= pair_margin``):
   ``phi = |c_B - c_A| - r_A - r_B``, ``n`` the unit vector from ``A`` to ``B``, contact point
   in the middle of the gap; named ``"A|B"``. A pair with a box (box-box, box-sphere; unless
   ``[system] box_pairs = false``) gives MuJoCo's contacts within the pair's collision margin
   (``[system] collision_margin`` in m, default half the smaller body's smallest half extent
   or radius), 0 to 8 of them, named ``"A|B[k]"``
   (:mod:`~contactopt.systems.rigid3d_collision`: their number depends on ``q``).
   Pair frames: ``n`` first, tangents from ``tangent_basis`` (``t1 x t2 = n``); the rows are
   ``J_B - J_A`` so that ``J v`` is the velocity of ``B``'s material point relative to ``A``'s.

The row of a point ``p`` on body ``i`` for a world direction ``d`` is ``[d^T, (r x d)^T]`` in
body ``i``'s six columns, ``r = p - x_i``.

Limitations: there is no torsional or rolling friction; bodies are uniform solids; box pairs
need the ``mujoco`` package (``pip install 'contactopt[mujoco]'``), refused in one line without it,
and their varying number of contacts stops a ``compliant`` run (a failed step) when it changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import SPARSE_FROM_NV
from contactopt.core.errors import ShapeError
from contactopt.model.step import Contacts, Dynamics, as_vector
from contactopt.systems import rigid3d_contacts as kernels
from contactopt.systems import rigid3d_parameters
from contactopt.systems import validation as validate
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter, ParameterError, System, resolve_parameters
from contactopt.systems.geometry import quat_exp_rows, quat_multiply_rows
from contactopt.systems.hydroelastic import model as hydro_model
from contactopt.systems.hydroelastic.surface import DEFAULT_RESOLUTION, ContactSurface
from contactopt.systems.rigid3d_bodies import BODY_KEYS, SHAPES, RigidBody, parse_body
from contactopt.systems.rigid3d_collision import (
    HORIZONTAL_GROUND,
    GroundPlane,
    PairCollider,
    body_pairs,
    collider_pairs,
    parse_collision_keys,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["BODY_KEYS", "SHAPES", "Rigid3D", "RigidBody"]


class Rigid3D(System):
    """Free rigid bodies (boxes, spheres) with point contacts; see the module docstring."""

    type_name: ClassVar[str] = "rigid3d"
    description: ClassVar[str] = ("free boxes and spheres ([[system.bodies]]); point contacts: box "
                                  "corners and spheres on a ground plane, every body pair")
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters", "bodies", "gravity", "ground", "ground_normal",
                                                       "ground_point", "box_pairs", "collision_margin"})
    contact_dim = 3

    def __init__(self, bodies: Sequence[RigidBody], contact: Mapping[str, float] | None = None,
                 gravity: ArrayLike = (0.0, 0.0, -9.81), ground: bool = True,
                 pair_margin: float = math.inf, sparse: bool | None = None, *,
                 plane: GroundPlane = HORIZONTAL_GROUND, box_pairs: bool = True,
                 collision_margin: float | None = None, contact_model: str = "point",
                 patch_resolution: tuple[int, int] = DEFAULT_RESOLUTION) -> None:
        """Bodies in order, contact parameters (``mu``, ``restitution``), gravity, ground on/off,
        and the largest gap at which a sphere pair is a candidate (``inf``: every pair; a
        finite margin selects the pairs through a k-d tree broad phase, linear in the bodies).
        ``plane``: the ground's plane; ``box_pairs``: contacts of the pairs with a box through
        MuJoCo (:mod:`.rigid3d_collision`), within ``collision_margin`` (None: per pair).
        ``sparse``: M, M^-1 and J as scipy.sparse matrices; by default from 10 bodies on
        (``nv >= 60``, MuJoCo's own threshold for sparse Jacobians), dense below, where
        scipy.sparse's per-object overhead costs more than the zeros it skips. ``contact_model``,
        ``patch_resolution``: :mod:`contactopt.systems.hydroelastic.model`."""
        super().__init__({}, contact or {})
        if not bodies:
            raise ValueError("Rigid3D: needs at least one body")
        names = [body.name for body in bodies]
        if len(set(names)) != len(names):
            raise ValueError(f"Rigid3D: body names must be unique, got {names}")
        self.bodies: tuple[RigidBody, ...] = tuple(bodies)
        self.hydro = hydro_model.HydroelasticSetup(self.bodies, contact_model, patch_resolution, bool(ground))
        self.gravity: FloatArray = as_vector(gravity, "Rigid3D.gravity", 3)
        self.ground = bool(ground)
        n = len(self.bodies)
        self.nq = 7 * n
        self.nv = 6 * n
        self.q_names = tuple(f"{b.name}.{c}" for b in self.bodies
                             for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
        self.v_names = tuple(f"{b.name}.{c}" for b in self.bodies
                             for c in ("vx", "vy", "vz", "wx", "wy", "wz"))
        self.sparse = bool(6 * len(bodies) >= SPARSE_FROM_NV if sparse is None else sparse)
        self.pair_margin = float(pair_margin)
        if not self.pair_margin >= 0:
            raise ValueError(f"Rigid3D: pair_margin must be >= 0 (inf: every sphere pair), got {pair_margin}")
        self._inertia = np.array([b.inertia for b in self.bodies])
        self._masses = np.array([b.mass for b in self.bodies])
        self._spheres = [i for i, b in enumerate(self.bodies) if b.shape == "sphere" and b.compliance == "rigid"]
        self._is_box = np.array([b.shape == "box" for b in self.bodies])
        self._radii = np.array([0.0 if b.shape == "box" else float(b.size[0]) for b in self.bodies])
        self._ground_counts = np.where(self._is_box, 8, 1).astype(np.int_)
        self.plane = plane
        self._horizontal = plane.is_horizontal_origin
        # body-frame corners of a box; the world offset -r n of a sphere's lowest point
        lowest = ((lambda r: np.array([[0.0, 0.0, -r]])) if self._horizontal
                  else (lambda r: -r * plane.normal[None, :]))
        self._ground_local = np.concatenate([kernels.CORNER_SIGNS * b.size if b.shape == "box"
                                             else lowest(float(b.size[0])) for b in self.bodies])
        self._ground_frame = kernels.GROUND_FRAME if self._horizontal else plane.frame
        if collision_margin is not None and not (math.isfinite(collision_margin) and collision_margin >= 0):
            raise ValueError(f"Rigid3D: collision_margin must be a finite number >= 0, got {collision_margin}")
        pairs = collider_pairs(self.bodies) if box_pairs else []
        pairs = self.hydro.point_pairs(pairs, box_pairs)
        self.box_pairs = bool(box_pairs)
        self._collider = PairCollider(self.bodies, pairs, collision_margin) if pairs else None
        self._last_split: tuple[bytes, tuple[FloatArray, FloatArray]] = (b"", (np.zeros((0, 3)), np.zeros((0, 3, 3))))
        # (body, body-frame offset, is a box corner) of every ground contact, in contact order
        counts = np.where(self.hydro.soft_mask, 0, self._ground_counts) if self.ground else np.zeros(n, dtype=np.int_)
        ground_body = np.repeat(np.arange(n), counts)
        self._ground_terms = (ground_body, self._ground_local[np.repeat(counts > 0, self._ground_counts)] if self.ground
                              else np.zeros((0, 3)), self._is_box[ground_body])

    # ------------------------------------------------------------------ configuration

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> Rigid3D:
        """Build from a ``[system]`` table with ``bodies`` (list of tables), optional
        ``gravity`` (3 numbers, default ``[0, 0, -9.81]``), ``ground`` (bool, default true),
        ``ground_normal`` / ``ground_point`` (the plane, default ``z = 0``), ``box_pairs``
        (bool, default true), ``collision_margin`` (m, default per pair) and an empty
        ``parameters``; raises :class:`ParameterError` naming the key."""
        resolve_parameters(cls.parameters, validate.table(table, "parameters", "system"), "system.parameters")
        contact_model, resolution, contact = hydro_model.parse_contact_keys(contact)
        contact_values = resolve_parameters(CONTACT_PARAMETERS, contact, "contact")
        gravity = (validate.vector(table["gravity"], "system.gravity", 3) if "gravity" in table
                   else np.array([0.0, 0.0, -9.81]))
        ground = table.get("ground", True)
        if not isinstance(ground, bool):
            raise ParameterError("system.ground", f"system.ground: expected true or false, got {ground!r}")
        plane, box_pairs, margin = parse_collision_keys(table, ground)
        if "bodies" not in table:
            raise ParameterError("system.bodies", "system.bodies: missing; give at least one "
                                 "[[system.bodies]] table")
        tables = table["bodies"]
        if not isinstance(tables, list) or not tables:
            raise ParameterError("system.bodies", "system.bodies: expected a non-empty list of "
                                 f"tables ([[system.bodies]]), got {tables!r}")
        bodies = [parse_body(body, f"system.bodies[{i}]", i) for i, body in enumerate(tables)]
        seen: dict[str, int] = {}
        for i, body in enumerate(bodies):
            if body.name in seen:
                raise ParameterError(f"system.bodies[{i}].name",
                                     f"system.bodies[{i}].name: duplicate body name {body.name!r} "
                                     f"(also system.bodies[{seen[body.name]}])")
            seen[body.name] = i
        hydro_model.check_scene(bodies, contact_model, ground)
        return cls(bodies, contact_values, gravity=gravity, ground=ground, plane=plane, box_pairs=box_pairs,
                   collision_margin=margin, contact_model=contact_model, patch_resolution=resolution)

    def _parameter_table(self) -> dict[str, tuple[Parameter, float]]:
        """``"mu"``, ``"gravity"`` and ``"<body>.mass"`` (:mod:`.rigid3d_parameters`)."""
        return rigid3d_parameters.parameter_table(self, super()._parameter_table())

    def _replace_parameters(self, values: Mapping[str, float]) -> Rigid3D:
        """A copy with new ``mu``, gravity and masses (:mod:`.rigid3d_parameters`)."""
        return rigid3d_parameters.replaced(self, values)

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """(q0, v0) from the bodies' positions, orientations and velocities."""
        q0 = np.concatenate([np.concatenate((b.position, b.orientation)) for b in self.bodies])
        v0 = np.concatenate([np.concatenate((b.velocity, b.angular_velocity)) for b in self.bodies])
        return q0, v0

    # ------------------------------------------------------------------ kinematics

    def _split(self, q: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Positions (N, 3) and rotation matrices (N, 3, 3) of every body at ``q``."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        key = qq.tobytes()
        if self._last_split[0] != key:  # dynamics() and contacts() of a step ask for the same q
            rotations = kernels.rotations(qq[:, 3:])
            rotations.setflags(write=False)  # shared by the callers of this q
            self._last_split = (key, (qq[:, :3], rotations))
        return self._last_split[1]

    def inertia_world(self, q: ArrayLike) -> FloatArray:
        """(N, 3, 3) ``R_i I_i R_i^T`` of every body (symmetrized against rounding)."""
        return kernels.world_inertia(self._split(q)[1], self._inertia)

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        """``M = blockdiag(m I3, R I R^T)`` (sparse, with its block-diagonal sparse inverse
        ``blockdiag(I3 / m, R I^{-1} R^T)``), ``tau = [m g; -w x (R I R^T w)] (+ u)``
        (Featherstone 2008, eq. 2.67, expressed about the centre of mass in world axes)."""
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        _, R = self._split(q)
        Iw = kernels.world_inertia(R, self._inertia)
        w = vv[:, 3:]
        tau = np.empty((len(self.bodies), 6))
        tau[:, :3] = self._masses[:, None] * self.gravity
        tau[:, 3:] = -kernels.cross_rows(w, (Iw @ w[:, :, None])[:, :, 0])
        tau_flat = tau.reshape(-1)
        if u is not None:
            tau_flat = tau_flat + as_vector(u, "u", self.nv)
        assemble = kernels.block_diagonal if self.sparse else kernels.block_diagonal_dense
        inverse = assemble(1.0 / self._masses, kernels.world_inertia(R, 1.0 / self._inertia))
        return Dynamics(M=assemble(self._masses, Iw), tau=tau_flat, inverse_matrix=inverse)

    def integrate(self, q: ArrayLike, v_next: ArrayLike, dt: float) -> FloatArray:
        """``x' = x + h v'``, ``quat' = exp(h w'/2) * quat`` (world-frame ``w'`` on the left),
        normalized to unit length."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        vv = as_vector(v_next, "v_next", self.nv).reshape(-1, 6)
        out = np.empty_like(qq)
        out[:, :3] = qq[:, :3] + dt * vv[:, :3]
        rotated = quat_multiply_rows(quat_exp_rows(dt * vv[:, 3:]), qq[:, 3:])
        norms = np.sqrt(np.einsum("ij,ij->i", rotated, rotated))
        if not (norms > 1e-300).all() or not np.isfinite(norms).all():
            raise ShapeError(f"q: cannot normalize a zero or non-finite quaternion {rotated}")
        out[:, 3:] = rotated / norms[:, None]
        return out.reshape(-1)

    def qdot(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``qdot = N(q) v`` per body: ``xdot = v`` and ``quat_dot = 1/2 [0, w] * quat``
        (world-frame ``w`` on the left, the derivative of :meth:`integrate`'s
        ``exp(h w / 2) * quat`` at ``h = 0``). Used by the continuous-time integrators."""
        qq = as_vector(q, "q", self.nq).reshape(-1, 7)
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        out = np.empty_like(qq)
        out[:, :3] = vv[:, :3]
        pure = np.concatenate([np.zeros((qq.shape[0], 1)), vv[:, 3:]], axis=1)
        out[:, 3:] = 0.5 * quat_multiply_rows(pure, qq[:, 3:])
        return out.reshape(-1)

    # ------------------------------------------------------------------ contacts

    def _pairs(self, positions: FloatArray | None) -> tuple[IntArray, IntArray]:
        """Sphere pairs (body indices) in the documented order; a finite ``pair_margin``
        keeps those with gap ``<= pair_margin`` (which needs the positions)."""
        spheres = np.array(self._spheres, dtype=np.int_)
        if positions is None:
            if np.isfinite(self.pair_margin):
                raise ValueError("Rigid3D.contact_names: with a finite pair_margin the sphere pairs "
                                 "depend on q; pass q")
            positions = np.zeros((len(self.bodies), 3))
        a, b = kernels.sphere_pairs(positions[spheres], self._radii[spheres], self.pair_margin)
        return spheres[a], spheres[b]

    def contact_names(self, q: ArrayLike | None = None) -> list[str]:
        """A label per contact, in the order of :meth:`contacts` (``q`` is needed with a finite
        ``pair_margin`` or with box pairs, whose contacts depend on it)."""
        names: list[str] = []
        if self.ground:
            for body in self.bodies:
                if body.compliance == "soft" and self.hydro.active:
                    continue  # its patch rows come last
                if body.shape == "box":
                    names.extend(f"{body.name}.corner({','.join('-' if s < 0 else '+' for s in signs)})"
                                 for signs in kernels.CORNER_SIGNS)
                else:
                    names.append(f"{body.name}.ground")
        if q is None:
            if self._collider is not None:
                raise ValueError("Rigid3D.contact_names: the contacts of box pairs depend on q; pass q")
            a, b = self._pairs(None)
            rank = np.full(a.shape[0], -1)
        else:
            a, b, *_, rank = body_pairs(self, q)
        names.extend(f"{self.bodies[i].name}|{self.bodies[j].name}" + (f"[{k}]" if k >= 0 else "")
                     for i, j, k in zip(a, b, rank, strict=True))
        return names + self.hydro.row_names(None if q is None else self._split(q), self.plane)

    def _geometry(self, q: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray, tuple[IntArray, ...],
                                               FloatArray]:
        """Every contact at once: ``phi`` (nc,), points (nc, 3), frames (nc, 3, 3) and the
        Jacobian terms ``(contact, body, sign)`` with their offsets ``r`` (T, 3)."""
        positions, R = self._split(q)
        body_of, local, is_box = self._ground_terms
        ng = body_of.shape[0]
        # body-frame offsets of the ground points: corners (sign * half extent) or the world -r n
        ground_r = (R[body_of] @ local[:, :, None])[:, :, 0]
        if not is_box.all():
            ground_r = np.where(is_box[:, None], ground_r, local)
        ground_points = positions[body_of] + ground_r
        ground_phi = (ground_points[:, 2].copy() if self._horizontal
                      else ground_points @ self.plane.normal - self.plane.offset)
        ground_frames = np.broadcast_to(self._ground_frame, (ng, 3, 3))
        if len(self._spheres) > 1 or self._collider is not None:
            a, b, pair_phi, pair_points, normals, _ = body_pairs(self, q)
        else:
            a = b = body_of[:0]
        if a.shape[0] == 0:  # ground contacts only: one term each
            terms = np.column_stack([ground_r, np.ones(ng)])
            return ground_phi, ground_points, ground_frames, (np.arange(ng), body_of), terms
        npair = a.shape[0]
        phi = np.concatenate([ground_phi, pair_phi])
        points = np.concatenate([ground_points, pair_points])
        frames = np.concatenate([ground_frames, kernels.pair_frames(normals)])
        pair_index = ng + np.arange(npair)
        contact = np.concatenate([np.arange(ng), pair_index, pair_index])
        body = np.concatenate([body_of, b, a])
        sign = np.concatenate([np.ones(ng + npair), -np.ones(npair)])
        offsets = np.concatenate([ground_r, pair_points - positions[b], pair_points - positions[a]])
        return phi, points, frames, (contact, body), np.column_stack([offsets, sign])

    def contact_points(self, q: ArrayLike) -> FloatArray:
        """(nc, 3) world positions of the contact points, in the order of :meth:`contacts`
        (hydroelastic patch rows last: their quadrature points)."""
        return self.hydro.points(self._geometry(q)[1], *self._split(q), self.plane)

    def contact_surfaces(self, q: ArrayLike) -> list[ContactSurface]:
        """The soft bodies' contact surfaces at ``q`` (:mod:`.hydroelastic.surface`; none: point model)."""
        return [surface for surface, _ in self.hydro.rows(*self._split(q), self.plane)]

    def declared_features(self) -> dict[str, list[str]]:
        """``{"hydroelastic": [soft bodies]}`` under the hydroelastic model (:mod:`.hydroelastic.model`)."""
        return self.hydro.declared_features()

    def contacts(self, q: ArrayLike) -> Contacts:
        """All point-contact candidates (see the module docstring for their order); rows per
        contact ``[n, t1, t2]``, each ``sum_body sign [d^T, (r x d)^T]`` (Tedrake 2022,
        "Contact Jacobian"), assembled at once as a sparse CSR matrix."""
        phi, _points, frames, (contact, body), terms = self._geometry(q)
        own: tuple[FloatArray, FloatArray] | None = None
        if self.hydro.active:  # the patch rows after the point contacts (:mod:`.hydroelastic.model`)
            phi, frames, contact, body, terms, own = self.hydro.extend(phi, frames, contact, body, terms,
                                                                       *self._split(q), self.plane, self._ground_frame)
        nc = phi.shape[0]
        if nc == 0:
            return Contacts.empty(self.nv, 3)
        assemble = kernels.jacobian if self.sparse else kernels.jacobian_dense
        J = assemble(contact, body, terms[:, :3], terms[:, 3], frames, nc, self.nv)
        return Contacts(phi=phi, J=J, mu=np.full(nc, self.mu), restitution=np.full(nc, self.restitution), dim=3,
                        stiffness=None if own is None else own[0], dissipation=None if own is None else own[1])

    # ------------------------------------------------------------------ energy

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        """(kinetic, potential): ``sum 1/2 m |v|^2 + 1/2 w . (R I R^T w)`` and ``-sum m g . x``."""
        vv = as_vector(v, "v", self.nv).reshape(-1, 6)
        Iw = self.inertia_world(q)
        w = vv[:, 3:]
        kinetic = 0.5 * float(self._masses @ np.sum(vv[:, :3] ** 2, axis=1))
        kinetic += 0.5 * float(np.einsum("bi,bij,bj->", w, Iw, w))
        return kinetic, self.potential_energy(q)

    def potential_energy(self, q: ArrayLike) -> float:
        """``-sum_i m_i g . x_i`` (zero at the origin)."""
        positions = as_vector(q, "q", self.nq).reshape(-1, 7)[:, :3]
        return -float(self._masses @ (positions @ self.gravity))

    def describe(self) -> str:
        """One line: the bodies, gravity, ground and contact parameters."""
        bodies = ", ".join(f"{b.name}:{b.shape}(m={b.mass:g})" for b in self.bodies)
        gravity = ", ".join(f"{g:g}" for g in self.gravity)
        normal, point = (", ".join(f"{x:g}" for x in vector) for vector in (self.plane.normal, self.plane.point))
        plane = "" if self._horizontal else f" n=[{normal}] p0=[{point}]"
        return (f"{self.type_name}({bodies}; g=[{gravity}], ground={self.ground}{plane}; "
                f"mu={self.mu:g}, e={self.restitution:g}{', model=hydroelastic' if self.hydro.active else ''})")
