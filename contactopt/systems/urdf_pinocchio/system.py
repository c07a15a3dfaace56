"""A URDF robot through Pinocchio's recursive algorithms (``[system] type = "urdf"``,
``backend = "pinocchio"``).

Featherstone, "Rigid Body Dynamics Algorithms" (the references' "Recursive Dynamics
Algorithms"), as Pinocchio implements them (Carpentier et al., "The Pinocchio C++ library",
2019): the composite-rigid-body algorithm for ``M(q)`` (``pin.crba``, upper triangle, mirrored
here), the recursive Newton-Euler algorithm for the bias ``C(q, v) v + g(q) = rnea(q, v, 0)``,
joint Jacobians for the contact rows. The manipulator equation of docs/architecture.md,
``M vdot = tau + J^T lambda``, with ``tau = -rnea(q, v, 0) - D v`` (``D`` the URDF's
``<dynamics damping>``; no actuators: URDF declares none).

**Coordinates are the ``mujoco`` backend's** (MuJoCo's ``qpos``/``qvel``), so that a scene's
``[initial]`` table means the same under both backends: the floating base is Pinocchio's
composite joint translation-then-spherical, whose velocity is ``[v_world, w_body]`` as MuJoCo's
free joint's, with its quaternion stored ``[w, x, y, z]`` (Pinocchio: ``[x, y, z, w]``);
``continuous`` joints are an angle (Pinocchio: ``(cos, sin)``). Positions advance by
``pin.integrate`` (the base: ``p + h v``, ``quat exp(h w)``, as MuJoCo's ``mj_integratePos``) and,
for scalar joints, ``q + h v`` (not wrapped).

**What the URDF says** (ROS wiki "urdf/XML") and where it goes, as in the ``mujoco`` backend
(:mod:`contactopt.systems.mjcf.urdf`, MuJoCo's ``limited``/``damping``/``frictionloss``):

* ``<limit lower upper>`` of a revolute or prismatic joint: a unilateral row at the nearer bound
  (``phi`` the distance, ``G = +-e_dof``), every limited joint a candidate, as
  :func:`contactopt.systems.mjcf.constraints.limit_rows`;
* ``<dynamics damping>``: in ``tau`` and, as MuJoCo's Euler integrator takes it, implicit in the
  step (``M + h D``, :meth:`PinocchioUrdfSystem.step_dynamics`);
* ``<dynamics friction>``: a dry-friction box row per dof (``bound = friction``);
* ``effort``: kept (``effort_limits``); it bounds actuators, and a URDF has none (MuJoCo's
  importer makes it ``actfrcrange``, which acts on actuators only: no effect there either);
* ``floating``/``planar`` joints are refused in one line, as by the ``mujoco`` backend;
* ``<mimic joint multiplier offset>``: Pinocchio's mimic joint (``buildModelFromXML(...,
  mimic=True)``: the follower has no coordinate of its own, ``q_f = multiplier q_leader + offset``
  in every algorithm), so the follower is not in ``q``/``v``, and its own ``<limit>``,
  ``<dynamics>`` and ``effort`` are not carried (the leader's are); the ``mujoco`` backend refuses
  ``<mimic>`` (MuJoCo's importer drops it);
* a joint that moves no mass (``M`` singular at the neutral configuration: a massless leaf link
  on a joint) is refused in one line, as MuJoCo's compiler refuses a massless moving body.

**Contacts** (:mod:`.collision`): the URDF's collision geometry, boxes, spheres, cylinders and
meshes (their convex hulls, by coal), ``package://`` meshes found through ``package_dirs``; with
``ground = true`` each shape of a moving link against the plane ``z = 0`` (primitives as MuJoCo's
plane collisions, :mod:`.ground`); with ``self_collisions = true`` (the default) the pairs of
shapes on links that are not parent and child, less an optional ``srdf``'s disabled pairs,
through coal's signed distance; ``mu = ground_friction`` for all. Rows ``frame (J_2 - J_1)`` at
the contact point, each ``J_k = J_lin - [r]x J_ang`` from the joint Jacobian in
``LOCAL_WORLD_ALIGNED`` with ``r`` the point less the joint origin; the order and frames are
:mod:`.collision`'s. ``detection_margin`` (m) as in the ``mujoco`` backend; by default 1e-8 of
the geometry's extent (the diagonal of its bounding box at the neutral configuration, an
approximation of MuJoCo's ``stat.extent``).
"""

from __future__ import annotations

import importlib
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.step import Contacts, Dynamics, FrictionLoss, Unilateral, as_vector
from contactopt.systems.base import ParameterError, System
from contactopt.systems.urdf_pinocchio import collision, derivatives, rows, tree
from contactopt.systems.urdf_pinocchio.tree import joint_limits, load_checked, load_pinocchio, read_urdf, tree_order

FloatArray = NDArray[np.float64]
TOUCH_MARGIN = 1e-8  # per metre of extent, as contactopt.systems.mjcf.system.TOUCH_MARGIN
FRICTION_LOSS = "friction_loss"  # contactopt.systems.mjcf.candidates.FRICTION_LOSS


class PinocchioUrdfSystem(System):
    """A URDF robot through Pinocchio (module docstring); built by
    :class:`contactopt.systems.mjcf.urdf.UrdfSystem` for ``backend = "pinocchio"``."""

    type_name: ClassVar[str] = "urdf"
    description: ClassVar[str] = "a URDF robot through Pinocchio's CRBA, RNEA and joint Jacobians"
    contact_dim = 3
    default_max_recovery_speed: ClassVar[float] = 0.1  # m/s, as the mujoco backend (MjcfSystem)
    mujoco_hint: ClassVar[str] = ("this URDF runs on the pinocchio backend (the default): --system-option "
                                  "backend=mujoco (backend = \"mujoco\" in [system]) runs it on MuJoCo's model")

    def __init__(self, path: str | Path, floating_base: bool = False, ground: bool = False,
                 ground_friction: float = 1.0, package_dirs: Sequence[str | Path] = (),
                 detection_margin: float | None = None, self_collisions: bool = True,
                 srdf: str | Path | None = None) -> None:
        super().__init__({}, {"mu": ground_friction})
        pin = self.pin = load_pinocchio()
        self.urdf = Path(path)
        self.floating_base, self.ground, self.ground_friction = floating_base, ground, ground_friction
        self.package_dirs = tuple(Path(d) for d in package_dirs)
        self.self_collisions, self.srdf = bool(self_collisions), None if srdf is None else Path(srdf)
        root = read_urdf(self.urdf, self.package_dirs)
        xml = self._xml = ET.tostring(root, encoding="unicode")  # kept: the free-flyer tree reads it too
        if floating_base:
            base = pin.JointModelComposite()
            base.addJoint(pin.JointModelTranslation())
            base.addJoint(pin.JointModelSpherical())
            self.model = load_checked(self.urdf, lambda: pin.buildModelFromXML(xml, base, True))
        else:
            self.model = load_checked(self.urdf, lambda: pin.buildModelFromXML(xml, True))
        self.geometry = load_checked(self.urdf, lambda: pin.buildGeomFromUrdfString(
            self.model, xml, pin.GeometryType.COLLISION, package_dirs=[str(d) for d in self.package_dirs]))
        self.data, self.geometry_data = self.model.createData(), self.geometry.createData()
        self._layout(root)
        if self.nv == 0:  # as the mujoco backend (MjcfSystem): nothing to simulate
            raise ParameterError("system.file", f"system.file: {self.urdf.name} has no degree of freedom (only fixed "
                                 "joints and no floating base): nothing can move (floating_base = true frees its root)")
        rows.check_masses(self)
        self.params = {"nq": float(self.nq), "nv": float(self.nv), "nbody": float(self.model.nbodies)}
        self.damping = np.array(self.model.damping, dtype=np.float64)[self._dofs]  # public dof order
        self.dry_friction = np.array(self.model.friction, dtype=np.float64)[self._dofs]
        self.effort_limits = np.array(self.model.effortLimit, dtype=np.float64)
        self._shapes = collision.shapes(pin, self.model, self.geometry, self._link_order, self.urdf.name)
        disabled = collision.disabled_pairs(self.srdf) if self.srdf is not None else set()
        self._pairs = collision.pairs(self.model, self._shapes, disabled) if self.self_collisions else []
        self._coal: Any = None
        self.detection_margin = (TOUCH_MARGIN * self._extent() if detection_margin is None
                                 else float(detection_margin))
        self._at: tuple[bytes, float] | None = None
        self._contacts: Contacts | None = None
        self._free_flyer: tuple[Any, Any] | None = None  # the free-flyer model, for derivatives

    # --- coordinates ---------------------------------------------------------------------------
    def _layout(self, root: ET.Element) -> None:
        """Public (MuJoCo's) coordinates against Pinocchio's, joint by joint (module docstring)."""
        model = self.model
        q_names: list[str] = []
        self._scalar: list[tuple[int, int, int, bool]] = []  # (public q, pin q, public dof, (cos, sin))
        self._base: tuple[int, int] | None = None
        limits = joint_limits(root)
        self._limited: list[tuple[str, int, int, float, float]] = []  # (name, public q, dof, lower, upper)
        self._prismatic: list[bool] = []
        dofs: list[int] = []  # per public dof, Pinocchio's
        ids = {model.names[j]: j for j in range(1, model.njoints)}
        joints, self._link_order = tree_order(root)
        order = [ids[name] for name in joints if name in ids]
        order = [j for j in range(1, model.njoints) if model.nqs[j] == 7] + order
        if sorted(order) != list(range(1, model.njoints)):
            raise ParameterError("system.file", f"system.file: {self.urdf.name}: Pinocchio's joints "
                                 f"{sorted(ids)} do not match the URDF's tree")
        public = 0
        self.mimic_joints: tuple[str, ...] = ()
        for j in order:
            name, iq, iv, nq = model.names[j], model.idx_qs[j], model.idx_vs[j], model.nqs[j]
            if nq == 0 and model.nvs[j] == 0 and "Mimic" in model.joints[j].shortname():
                self.mimic_joints += (name,)  # a follower: no coordinate of its own
                continue
            if nq == 7:  # the composite floating base
                self._base = (public, iq)
                q_names += [f"joint0.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
                dofs += list(range(iv, iv + 6))
                public += 7
                continue
            if model.nvs[j] != 1 or nq not in (1, 2):
                raise ParameterError("system.file", f"system.file: {self.urdf.name}: joint {name!r} "
                                     f"({model.joints[j].shortname()}) is not mapped by the pinocchio backend")
            dof = len(dofs)
            dofs.append(iv)
            self._scalar.append((public, iq, dof, nq == 2))
            self._prismatic.append(model.joints[j].shortname().replace("JointModel", "").startswith("P"))
            if name in limits:
                self._limited.append((name, public, dof, *limits[name]))
            q_names.append(name)
            public += 1
        self._dofs = np.array(dofs, dtype=np.int_)
        self.nq, self.nv = public, int(model.nv)
        self.q_names = tuple(q_names)
        self.v_names = (tuple(f"joint0.{c}" for c in ("vx", "vy", "vz", "wx_body", "wy_body", "wz_body"))
                        * (self._base is not None) + tuple(q_names[7 if self._base else 0:]))
        self.rotation_dofs = (np.array([[3, 4, 5]], dtype=np.int_) if self._base is not None
                              else np.zeros((0, 3), dtype=np.int_))

    def pin_q(self, q: ArrayLike) -> FloatArray:
        """Pinocchio's configuration of the public ``q``."""
        qv = as_vector(q, "q", self.nq)
        out = np.zeros(self.model.nq)
        if self._base is not None:
            p, i = self._base
            quaternion = tree.unit_quaternion(qv[p + 3:p + 7], p + 3)  # as MuJoCo's mj_kinematics
            out[i:i + 3], out[i + 3:i + 6], out[i + 6] = qv[p:p + 3], quaternion[1:], quaternion[0]
        for p, i, _, trig in self._scalar:
            if trig:
                out[i], out[i + 1] = math.cos(qv[p]), math.sin(qv[p])
            else:
                out[i] = qv[p]
        return out

    def pin_v(self, v: ArrayLike) -> FloatArray:
        """Pinocchio's velocity of the public ``v`` (the same numbers, Pinocchio's dof order)."""
        out = np.zeros(self.nv)
        out[self._dofs] = as_vector(v, "v", self.nv)
        return out

    def _public_base(self, q_pin: FloatArray, out: FloatArray) -> None:
        if self._base is not None:
            p, i = self._base
            out[p:p + 3] = q_pin[i:i + 3]
            out[p + 3], out[p + 4:p + 7] = q_pin[i + 6], q_pin[i + 3:i + 6]

    # --- dynamics --------------------------------------------------------------------------------
    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        pin, qp = self.pin, self.pin_q(q)
        vv = as_vector(v, "v", self.nv)
        upper = np.array(pin.crba(self.model, self.data, qp))
        M = (np.triu(upper) + np.triu(upper, 1).T)[np.ix_(self._dofs, self._dofs)]
        bias = np.array(pin.rnea(self.model, self.data, qp, self.pin_v(vv), np.zeros(self.nv)))[self._dofs]
        tau = -bias - self.damping * vv
        if u is not None:
            tau = tau + as_vector(u, "u", self.nv)
        return Dynamics(M=M, tau=tau)

    def inverse_dynamics_derivatives(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """``(d/dq, d/dv)`` of ``M(q) a - tau(q, v)``, analytically (:func:`.derivatives.inverse_dynamics`)."""
        return derivatives.inverse_dynamics(self, q, v, a)

    def linearize_step_problem(self, problem: Any, parameters: Sequence[str]) -> Any:
        """The step problem's analytic tangents (:func:`.derivatives.linearize`), or None where they
        do not apply; :class:`~contactopt.derivatives.step.StepDerivative` asks for them."""
        return derivatives.linearize(self, problem, tuple(parameters))

    def step_dynamics(self, dynamics: Dynamics, dt: float) -> Dynamics:
        """``M + h D`` with ``tau`` unchanged: the damping implicit, as MuJoCo's Euler integrator
        takes it (MuJoCo documentation, "Computation: Numerical integration"; the ``mujoco``
        backend's :func:`contactopt.systems.mjcf.derivatives.step_dynamics`)."""
        if not np.any(self.damping):
            return dynamics
        return Dynamics(M=np.asarray(dynamics.M) + dt * np.diag(self.damping), tau=dynamics.tau)

    def integrate(self, q: ArrayLike, v_next: ArrayLike, dt: float) -> FloatArray:
        qv, vv = as_vector(q, "q", self.nq), as_vector(v_next, "v", self.nv)
        out = np.array(qv)
        if self._base is not None:
            self._public_base(np.array(self.pin.integrate(self.model, self.pin_q(qv), dt * self.pin_v(vv))), out)
        for p, _, iv, _ in self._scalar:
            out[p] = qv[p] + dt * vv[iv]
        return out

    def qdot(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``N(q) v``: the base's ``[v_world, quat (0, w) / 2]``, scalar joints' rates."""
        qv, vv = as_vector(q, "q", self.nq), as_vector(v, "v", self.nv)
        out = np.zeros(self.nq)
        if self._base is not None:
            p = self._base[0]
            w, x, y, z = qv[p + 3:p + 7]
            a, b, c = vv[3:6]
            out[p:p + 3] = vv[:3]
            out[p + 3:p + 7] = 0.5 * np.array([-x * a - y * b - z * c, w * a + y * c - z * b,
                                               w * b + z * a - x * c, w * c + x * b - y * a])
        for p, _, iv, _ in self._scalar:
            out[p] = vv[iv]
        return out

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """Every joint at 0, the base at the origin unrotated; with ``floating_base`` and ``ground``
        raised until the collision geometry's bounding boxes clear ``z = 0`` (as the ``mujoco``
        backend's :meth:`~contactopt.systems.mjcf.urdf.UrdfSystem.default_state`)."""
        q = np.zeros(self.nq)
        if self._base is not None:
            q[self._base[0] + 3] = 1.0
            if self.ground:
                low = min((collision.lowest_point(self._shapes[k], c, R) for k, (c, R) in self._placed(q)
                           if self._shapes[k].joint != 0), default=0.0)
                q[self._base[0] + 2] -= low
        return q, np.zeros(self.nv)

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        vv = as_vector(v, "v", self.nv)
        kinetic = 0.5 * float(vv @ self.dynamics(q, vv).M @ vv)
        return kinetic, self.potential_energy(q)

    def potential_energy(self, q: ArrayLike) -> float:
        return float(self.pin.computePotentialEnergy(self.model, self.data, self.pin_q(q)))

    # --- contacts ----------------------------------------------------------------------------------
    def _placed(self, q: ArrayLike) -> list[tuple[int, tuple[FloatArray, FloatArray]]]:
        """``(shape number, (centre, rotation))`` of each shape at ``q``."""
        pin, qp = self.pin, self.pin_q(q)
        pin.forwardKinematics(self.model, self.data, qp)
        pin.updateGeometryPlacements(self.model, self.data, self.geometry, self.geometry_data)
        out = []
        for k, item in enumerate(self._shapes):
            placement = self.geometry_data.oMg[item.index]
            out.append((k, (np.array(placement.translation), np.array(placement.rotation))))
        return out

    def _extent(self) -> float:
        placed = [(k, at) for k, at in self._placed(self._neutral()) if self._shapes[k].joint != 0]
        if not placed:
            return 1.0
        points = np.vstack([collision.corners(self._shapes[k], c, R) for k, (c, R) in placed])
        return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) or 1.0

    def _neutral(self) -> FloatArray:
        q = np.zeros(self.nq)
        if self._base is not None:
            q[self._base[0] + 3] = 1.0
        return q

    def contacts(self, q: ArrayLike) -> Contacts:
        qv = as_vector(q, "q", self.nq)
        key = (qv.tobytes(), self.mu)  # with_parameters' copies share the cache, not mu
        if key == self._at and self._contacts is not None:
            return self._contacts
        contacts = self._ground_contacts(qv)
        self._at, self._contacts = key, contacts
        return contacts

    def contact_list(self, q: ArrayLike) -> list[collision.Contact]:
        """The contacts at ``q`` in :mod:`.collision`'s order (the ground's, then the pairs')."""
        qv = as_vector(q, "q", self.nq)
        if not (self.ground or self._pairs):
            return []
        placed = [at for _, at in self._placed(qv)]
        margin = self.detection_margin
        out: list[collision.Contact] = []
        if self.ground:
            for k, item in enumerate(self._shapes):
                if item.joint != 0:  # fixed to the world: not tested, as MuJoCo's world body is not
                    out += collision.ground_contacts(item, k, placed[k][0], placed[k][1], margin)
        if self._pairs:
            if self._coal is None:
                self._coal = importlib.import_module("coal")  # pin's collision library (pin depends on it)
            for a, b in collision.near_pairs(self._pairs, self._shapes, placed, margin):
                found = collision.pair_contact(self._coal, self._shapes[a], self._shapes[b], a, b, placed, margin)
                if found is not None:
                    out.append(found)
        return out

    def disable_pairs_in_contact(self, q: ArrayLike) -> list[tuple[str, str]]:
        """Leave out the self-collision pairs in contact at ``q`` (within the detection margin), as
        MoveIt's setup assistant disables the pairs in collision at the default configuration;
        the pairs' shape names."""
        touching = {(c.first, c.second) for c in self.contact_list(q) if c.first >= 0}
        self._pairs = [pair for pair in self._pairs if pair not in touching]
        self._at, self._contacts = None, None
        return [(self._shapes[a].name, self._shapes[b].name) for a, b in sorted(touching)]

    def _ground_contacts(self, q: FloatArray) -> Contacts:
        return rows.contact_rows(self, q, self.contact_list(q))

    # --- other rows ----------------------------------------------------------------------------------
    def limits(self, q: ArrayLike) -> Unilateral:
        """A row per limited joint at its nearer bound (module docstring)."""
        if not self._limited:
            return Unilateral.empty(self.nv)
        qv = as_vector(q, "q", self.nq)
        phi, G, labels = [], np.zeros((len(self._limited), self.nv)), []
        for row, (name, p, iv, lower, upper) in enumerate(self._limited):
            below, above = qv[p] - lower, upper - qv[p]
            at_lower = below <= above
            phi.append(below if at_lower else above)
            G[row, iv] = 1.0 if at_lower else -1.0
            labels.append(f"{name} {'lower' if at_lower else 'upper'}")
        return Unilateral(phi=np.array(phi), G=G, labels=tuple(labels))

    def friction_loss(self, q: ArrayLike) -> FrictionLoss:
        """A box row per dof with URDF ``<dynamics friction> > 0``."""
        dofs = np.flatnonzero(self.dry_friction > 0)
        if not dofs.size:
            return FrictionLoss.empty(self.nv)
        F = np.zeros((dofs.size, self.nv))
        F[np.arange(dofs.size), dofs] = 1.0
        return FrictionLoss(F=F, bound=self.dry_friction[dofs], labels=tuple(f"dof{d}" for d in dofs.tolist()))

    def declared_features(self) -> dict[str, list[str]]:
        losses = [f"dof {self.v_names[d]} (frictionloss {self.dry_friction[d]:g})"
                  for d in np.flatnonzero(self.dry_friction > 0)]
        return {FRICTION_LOSS: losses} if losses else {}

    def coordinate_units(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        q_units: list[str] = []
        v_units: list[str] = []
        if self._base is not None:
            q_units += ["m"] * 3 + ["1"] * 4
            v_units += ["m/s"] * 3 + ["rad/s"] * 3
        for prismatic in self._prismatic:
            q_units.append("m" if prismatic else "rad")
            v_units.append("m/s" if prismatic else "rad/s")
        return tuple(q_units), tuple(v_units)

    def __getstate__(self) -> dict[str, Any]:
        return {"urdf": str(self.urdf), "floating_base": self.floating_base, "ground": self.ground,
                "ground_friction": self.ground_friction, "package_dirs": [str(d) for d in self.package_dirs],
                "detection_margin": self.detection_margin, "self_collisions": self.self_collisions,
                "srdf": None if self.srdf is None else str(self.srdf)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["urdf"], state["floating_base"], state["ground"],  # type: ignore[misc]
                      state["ground_friction"], state["package_dirs"], state["detection_margin"],
                      state.get("self_collisions", True), state.get("srdf"))

    def describe(self) -> str:
        return (f"URDF {self.urdf.name} through Pinocchio (floating_base={self.floating_base}, "
                f"ground={self.ground}): nq={self.nq}, nv={self.nv}")

