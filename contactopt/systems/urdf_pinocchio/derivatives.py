"""Analytic derivatives of the pinocchio backend's dynamics (:mod:`.system`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.rows import Unilateral
from contactopt.model.step import Contacts, Dynamics
from contactopt.systems.urdf_pinocchio import ground, pair_tangents
from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]
_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0


def inverse_dynamics(system: Any, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(d/dq, d/dv)`` of ``M(q) a - tau(q, v) = rnea(q, v, a) + D v``, analytically
    (Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS
    2018: ``pin.computeRNEADerivatives``), in the public dof order; ``d/dq`` along the
    tangent that :meth:`~.system.PinocchioUrdfSystem.integrate` moves ``q`` by (the base:
    world translation, body-frame rotation; scalar joints: their coordinate). With ``a = (v' - v) / h`` these are the
    smooth part of a step's derivative (``M (v' - v) = h tau + J^T lambda``).

    A floating base is differentiated through Pinocchio's free-flyer joint (through the
    composite translation-spherical joint, ``pin.computeRNEADerivatives`` of pin 4.1
    disagrees with central differences in the rotation columns, by up to 31 on the tests'
    walker, in Pinocchio's own tangent): with ``T = diag(R^T, I)``, ``v_f = T v`` and
    ``a_f = T a + Tdot v`` (``Tdot v = -w x R^T pdot``), the public residual is
    ``T^T rnea_f(q, v_f, a_f)``, whose derivatives follow by the chain rule (``d(R^T x)/dphi
    = [R^T x]x``, ``d(R f)/dphi = -R [f]x`` for a body-frame rotation ``phi``)."""
    pin = system.pin
    qp, vp, ap = system.pin_q(q), system.pin_v(v), system.pin_v(a)
    d = system._dofs
    if system._base is None:
        dq, dv, _ = pin.computeRNEADerivatives(system.model, system.data, qp, vp, ap)
        return np.array(dq)[np.ix_(d, d)], np.array(dv)[np.ix_(d, d)] + np.diag(system.damping)
    if system._free_flyer is None:
        model = pin.buildModelFromUrdf(str(system.urdf), pin.JointModelFreeFlyer())
        system._free_flyer = (model, model.createData())
    model, data = system._free_flyer
    nv = system.nv
    R = np.array(pin.Quaternion(qp[6], qp[3], qp[4], qp[5]).normalized().toRotationMatrix())
    T = np.eye(nv)
    T[:3, :3] = R.T
    pdot, omega, pddot = vp[:3], vp[3:6], ap[:3]
    w = R.T @ pdot
    vf, af = T @ vp, T @ ap
    af[:3] -= np.cross(omega, w)
    dq_f, dv_f, da_f = (np.array(x) for x in pin.computeRNEADerivatives(model, data, qp, vf, af))
    da_f = np.triu(da_f) + np.triu(da_f, 1).T  # M: its upper triangle is filled
    force = np.array(pin.rnea(model, data, qp, vf, af))
    Vq, Aq, Av = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    Vq[:3, 3:6] = skew(w)
    Aq[:3, 3:6] = skew(R.T @ pddot) - skew(omega) @ skew(w)
    Av[:3, :3] = -skew(omega) @ R.T
    Av[:3, 3:6] = skew(w)
    dq = T.T @ (dq_f @ T + dv_f @ Vq + da_f @ Aq)
    dq[:3, 3:6] -= R @ skew(force[:3])
    dv = T.T @ (dv_f @ T + da_f @ Av)
    return dq[np.ix_(d, d)], dv[np.ix_(d, d)] + np.diag(system.damping)


class StepLinearization:
    """A step problem of the pinocchio backend moved along its analytic tangents: what
    :class:`~contactopt.derivatives.linearized_step.LinearizedStepDerivative` differentiates
    through in place of asking the system again at each point of its central differences
    (``problem_at``), and what :mod:`contactopt.derivatives.analytic_step` builds on.

    At the base ``(q, v)`` of ``problem`` (fixed base: public ``q`` and Pinocchio's tangent
    coincide, one coordinate per dof), per input direction ``(dq, dv, du, dmu)``:

    * ``dM = sum_k dM/dq_k dq_k``, the tensor from ``pin.computeRNEADerivatives(q, 0, e_j)``,
      ``d(M e_j + g)/dq``, less ``pin.computeGeneralizedGravityDerivatives`` (Carpentier &
      Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018:
      ``rnea(q, 0, a) = M(q) a + g(q)``); ``M + h D`` moves as ``M`` (``D`` constant);
    * ``dtau = -(drnea/dq) dq - (drnea/dv + D) dv + du`` at ``a = 0``
      (``tau = -rnea(q, v, 0) - D v``: :func:`inverse_dynamics`);
    * a ground contact's row ``frame (J_o - [p - o]x J_w)`` (``J_o``, ``J_w`` the joint's
      ``LOCAL_WORLD_ALIGNED`` Jacobian, ``o`` its origin, ``p`` the contact point) moves by
      ``frame (dJ_o - [dp - do]x J_w - [p - o]x dJ_w)``, with ``dJ`` the Jacobian's variation
      along ``dq`` (``pin.getJointJacobianTimeVariation`` with velocity ``dq``: ``Jdot = sum_k
      dJ/dq_k qdot_k`` by the chain rule, which Pinocchio's recursion computes: Carpentier &
      Mansard 2018),
      ``do = J_o dq``; the contact's separation and point move with the geometry's placement,
      whose first-order motion is the rigid one, ``dc = J_o dq + w x (c - o)``, ``dR = [w]x R``
      (``w = J_w dq``): a box corner ``c + r`` and a sphere's lowest point move with
      ``dc + w x r`` (``r = 0`` for the sphere's, which stays below the centre), ``d(dist)`` is
      that motion's normal part and ``dp`` the motion less half of it along the normal
      (``p = x - n dist / 2``, :mod:`.ground`); a cylinder's rim points slide round the rim as it
      turns, and their ``d(dist)``, ``dp`` follow MuJoCo's construction term by term
      (:func:`_cylinder_tangents`);
    * a self-collision pair of a sphere and a box (the tool pushing a box,
      problems/ur5_like_arm_push.toml): its separation, point, normal and frame in closed form
      (:mod:`.pair_tangents`), the row ``frame (J_2(pos) - J_1(pos))`` moving by
      ``dframe (J_2 - J_1) + frame (dJ_2(pos) - dJ_1(pos))``, each ``dJ_k`` as the ground's;
      every other pair (and capsules, hulls) keeps the system's central differences;
    * a joint limit's separation moves by its row ``G dq``; ``mu`` by ``dmu``.

    :meth:`problem_at` is ``problem + t * tangent``, the problem linearized at its base: its
    central differences in ``t`` are those of the step's formulation (``build``) alone. The
    contact structure is the base's (the candidates do not appear or leave along ``t``).
    """

    def __init__(self, system: Any, problem: Any) -> None:
        self.system, self.problem = system, problem
        nv = system.nv
        q, v = problem.state.q, problem.state.v
        self._qp = system.pin_q(q)
        self._dM: FloatArray | None = None
        dq, dv = inverse_dynamics(system, q, v, np.zeros(nv))
        self.dtau_dq, self.dtau_dv = -dq, -dv
        self.dphi, self.dJ = self._contact_tangents()
        unilateral = problem.unilateral
        self.dphi_limits = np.array(unilateral.G, dtype=np.float64)

    @property
    def dM(self) -> FloatArray:
        """``dM/dq`` ((nv, nv, nv): row, column, direction), from ``computeRNEADerivatives(q, 0,
        e_j)`` less the gravity's (class docstring); built on first use."""
        if self._dM is None:
            system = self.system
            pin, model, data, d = system.pin, system.model, system.data, system._dofs
            zero = np.zeros(model.nv)
            gravity = np.array(pin.computeGeneralizedGravityDerivatives(model, data, self._qp))
            tensor = np.zeros((model.nv, model.nv, model.nv))
            for j in range(model.nv):
                unit = np.zeros(model.nv)
                unit[j] = 1.0
                tensor[:, j, :] = np.array(pin.computeRNEADerivatives(model, data, self._qp, zero, unit)[0]) - gravity
            self._dM = tensor[np.ix_(d, d, d)]
        return self._dM

    def dM_along(self, directions: FloatArray) -> FloatArray:
        """``sum_k dM/dq_k D_k`` per column of ``directions`` ((nv, p) -> (nv, nv, p)) without the
        tensor: ``dM/dt = C + C^T`` along the velocity ``D`` (``pin.computeCoriolisMatrix``, whose
        ``C`` makes ``dM/dt - 2 C`` skew: Carpentier et al., "The Pinocchio C++ library", 2019),
        one pass per column; the tensor's product where it is built already."""
        if self._dM is not None:
            return self._dM @ directions
        system = self.system
        pin, model, data, d = system.pin, system.model, system.data, system._dofs
        out = np.zeros((system.nv, system.nv, directions.shape[1]))
        for k in range(directions.shape[1]):
            C = np.array(pin.computeCoriolisMatrix(model, data, self._qp, system.pin_v(directions[:, k])))[np.ix_(d, d)]
            out[:, :, k] = C + C.T
        return out

    def _contact_tangents(self) -> tuple[FloatArray, FloatArray]:
        """``d phi / dq`` ((nc, nv)) and ``dJ / dq`` ((nc * 3, nv, nv): row, column, direction)
        of the ground contacts, in :meth:`~.system.PinocchioUrdfSystem._ground_contacts`' order."""
        system, problem = self.system, self.problem
        pin, model, data = system.pin, system.model, system.data
        d, nv = system._dofs, system.nv
        contacts = problem.contacts
        nc = contacts.phi.shape[0]
        dphi, dJ = np.zeros((nc, nv)), np.zeros((3 * nc, nv, nv))
        if not nc:
            return dphi, dJ
        q = problem.state.q
        if any(item.kind not in ("box", "sphere", "cylinder") for item in system._shapes):
            raise _StructureChange  # capsules and hulls: their tangents are not derived here (differences)
        placed = [(centre, R, None, k) for k, (centre, R) in system._placed(q)
                  if system._shapes[k].joint != 0]  # fixed to the world: never tested (the system's rule)
        qp = system.pin_q(q)
        pin.computeJointJacobians(model, data, qp)
        frame = ground.contact_frame(ground.NORMAL)
        margin = system.detection_margin

        def touches(k: int, centre: FloatArray, R: FloatArray) -> list[Any]:
            kind, size = system._shapes[k].kind, system._shapes[k].size
            if kind == "box":
                return ground.box(centre, R, size, margin)
            if kind == "sphere":
                return ground.sphere(centre, float(size[0]), margin)
            return ground.cylinder(centre, R, float(size[0]), float(size[1]), margin)

        touching = [(centre, R, shape, found) for centre, R, _, shape in placed
                    if (found := touches(shape, centre, R))]
        parent = {shape: int(system.geometry.geometryObjects[system._shapes[shape].index].parentJoint)
                  for _, _, shape, _ in touching}
        grounded = sum(len(found) for *_, found in touching)
        pairs = [c for c in system.contact_list(q) if c.first >= 0] if nc > grounded else []
        if grounded + len(pairs) != nc:
            raise _StructureChange  # another count than the problem's: differences
        joints = sorted(set(parent.values()) | {system._shapes[k].joint for c in pairs for k in (c.first, c.second)})
        bases = {joint: (np.array(pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED))[:, d],
                         np.array(data.oMi[joint].translation)) for joint in joints}
        variations = {joint: np.zeros((6, nv, nv)) for joint in joints}  # (row, column, direction)
        for k in _supporting(system, joints):  # the joint Jacobians' variation along each dof that moves them
            direction = np.zeros(nv)
            direction[k] = 1.0
            pin.computeJointJacobiansTimeVariation(model, data, qp, system.pin_v(direction))
            for joint in joints:
                variations[joint][:, :, k] = np.array(pin.getJointJacobianTimeVariation(
                    model, data, joint, pin.LOCAL_WORLD_ALIGNED))[:, d]
        for joint in joints:  # the world (geometry fixed to it): no motion
            if joint == 0:
                bases[joint], variations[joint] = (np.zeros((6, nv)), np.zeros(3)), np.zeros((6, nv, nv))
        if pairs:
            self._pair_tangents(pairs, dict(system._placed(q)), bases, variations, grounded, dphi, dJ)
        row = 0
        for centre, R, shape, found in touching:
            jacobian, origin = bases[parent[shape]]
            J_o, J_w = jacobian[:3], jacobian[3:]
            variation = variations[parent[shape]]
            dc = J_o - skew(centre - origin) @ J_w  # the centre's motion per dof, (3, nv)
            if system._shapes[shape].kind == "cylinder":
                size = system._shapes[shape].size
                ddists, dposes = _cylinder_tangents(centre, R, float(size[0]), float(size[1]), margin, dc, J_w,
                                                    len(found))
            else:  # a box corner (r from the centre) or a sphere's lowest point (r = 0 in the motion)
                box = system._shapes[shape].kind == "box"
                velocities = np.array([dc - skew(touch.pos - centre + ground.NORMAL * (touch.dist / 2)) @ J_w
                                       if box else dc for touch in found])  # (touches, 3, nv)
                ddists = np.einsum("i,civ->cv", ground.NORMAL, velocities)
                dposes = velocities - ground.NORMAL[None, :, None] * (ddists[:, None, :] / 2)
            for c, touch in enumerate(found):
                dphi[row + c] = ddists[c]
                # column k: dJ_o - [dp - do]x J_w - [p - o]x dJ_w, with do = J_o e_k
                turning = np.einsum("ijl,jk,lv->ivk", _LEVI_CIVITA, dposes[c] - J_o, J_w)
                point = variation[:3] - turning - np.einsum("ij,jvk->ivk", skew(touch.pos - origin), variation[3:])
                dJ[3 * (row + c):3 * (row + c + 1)] = np.einsum("ai,ivk->avk", frame, point)
            row += len(found)
        if row != grounded:
            raise _StructureChange
        return dphi, dJ

    def _pair_tangents(self, pairs: list[Any], placed: dict[int, tuple[FloatArray, FloatArray]],
                       bases: dict[int, tuple[FloatArray, FloatArray]], variations: dict[int, FloatArray],
                       start: int, dphi: FloatArray, dJ: FloatArray) -> None:
        """Fill the rows from ``start`` on with the self-collision pairs' tangents: sphere-box
        pairs in closed form (:mod:`.pair_tangents`), each checked against the problem's row
        (``phi`` to 1e-12, ``J`` to 1e-10 of its size); any other pair, or a row that differs,
        leaves the step to central differences."""
        system, contacts = self.system, self.problem.contacts
        shapes = system._shapes

        def point(joint: int, x: FloatArray, dx: FloatArray) -> tuple[FloatArray, FloatArray]:
            """``J(x)`` ((3, nv)) of the point fixed to ``joint`` at ``x`` and its variation
            ((3, nv, nv)) as ``x`` moves by ``dx`` ((3, nv), per direction)."""
            jacobian, origin = bases[joint]
            J_o, J_w, variation = jacobian[:3], jacobian[3:], variations[joint]
            turning = np.einsum("ijl,jk,lv->ivk", _LEVI_CIVITA, dx - J_o, J_w)
            return (J_o - skew(x - origin) @ J_w,
                    variation[:3] - turning - np.einsum("ij,jvk->ivk", skew(x - origin), variation[3:]))

        def centre_motion(shape: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
            centre, R = placed[shape]
            jacobian, origin = bases[shapes[shape].joint]
            return centre, R, jacobian[:3] - skew(centre - origin) @ jacobian[3:], jacobian[3:]

        for row, contact in enumerate(pairs, start):
            kinds = (shapes[contact.first].kind, shapes[contact.second].kind)
            if sorted(kinds) != ["box", "sphere"]:
                raise _StructureChange  # other pairs' tangents are not derived here (differences)
            ball, box = (contact.first, contact.second) if kinds[0] == "sphere" else (contact.second, contact.first)
            s, _, ds, _ = centre_motion(ball)
            c, R, dc, spin = centre_motion(box)
            motion = pair_tangents.sphere_box(s, float(shapes[ball].size[0]), ds, c, R, shapes[box].size, dc, spin,
                                              sphere_first=ball == contact.first)
            if motion is None:
                raise _StructureChange
            frame, dframe = pair_tangents.frame_tangent(motion.normal, motion.dnormal)
            J2, dJ2 = point(shapes[contact.second].joint, motion.pos, motion.dpos)
            J1, dJ1 = point(shapes[contact.first].joint, motion.pos, motion.dpos)
            rows = frame @ (J2 - J1)
            given = np.asarray(contacts.J)[3 * row:3 * row + 3]
            if (abs(motion.dist - contacts.phi[row]) > 1e-12
                    or np.abs(rows - given).max() > 1e-10 * max(1.0, float(np.abs(given).max()))):
                raise _StructureChange  # not the problem's contact: its own differences
            dphi[row] = motion.ddist
            dJ[3 * row:3 * row + 3] = (np.einsum("ai,ivk->avk", frame, dJ2 - dJ1)
                                       + np.einsum("aik,iv->avk", dframe, J2 - J1))

    def problem_at(self, t: float, dq: FloatArray, dv: FloatArray, du: FloatArray, dmu: float) -> Any:
        """The base problem moved by ``t`` along ``(dq, dv, du, dmu)`` (class docstring)."""
        base = self.problem
        dynamics, contacts, limits = base.dynamics, base.contacts, base.unilateral
        dM = self.dM @ dq
        dtau = self.dtau_dq @ dq + self.dtau_dv @ dv + (du if du.size else 0.0)
        moved_contacts = contacts
        if contacts.phi.shape[0]:
            moved_contacts = Contacts(phi=contacts.phi + t * (self.dphi @ dq),
                                      J=np.asarray(contacts.J) + t * (self.dJ @ dq),
                                      mu=contacts.mu + t * dmu, restitution=contacts.restitution, dim=contacts.dim)
        moved_limits = limits if not limits.count else Unilateral(
            phi=limits.phi + t * (self.dphi_limits @ dq), G=limits.G, labels=limits.labels)
        M = np.asarray(dynamics.M) + t * dM
        return dataclasses.replace(
            base, state=dataclasses.replace(base.state, q=base.state.q + t * dq, v=base.state.v + t * dv),
            dynamics=Dynamics(M=0.5 * (M + M.T), tau=dynamics.tau + t * dtau), contacts=moved_contacts,
            unilateral=moved_limits)


def _cylinder_tangents(centre: FloatArray, R: FloatArray, radius: float, half_length: float, margin: float,
                       dc: FloatArray, w: FloatArray, count: int) -> tuple[FloatArray, FloatArray]:
    """``d dist`` ((count, nv)) and ``d pos`` ((count, 3, nv)) of a cylinder's contacts
    (:func:`.ground.cylinder`, whose construction is differentiated term by term) along the
    placement's motion per dof, ``dc`` (3, nv) and ``[w]x R`` (``w`` (3, nv)): the axis ``a`` moves by
    ``w x a``, the rim direction ``u = p / |p|`` with ``p = a (a.n) - n`` by ``(dp - u (u.dp)) / |p|``,
    the side direction likewise; a contact's point ``x - n dist / 2`` by ``dx - n d(dist) / 2``."""
    n = ground.NORMAL
    a = R[:, 2].copy()
    if n @ a > 0:
        a = -a
    da = -skew(a) @ w  # (3, nv): w x a
    an, dan = float(n @ a), n @ da
    p = a * an - n
    length = float(np.linalg.norm(p))
    if length < ground._MINVAL:  # a disk parallel to the plane: its rim point is the x axis' (not smooth)
        raise _StructureChange
    u = p / length
    dp = da * an + a[:, None] * dan[None, :]
    du = (dp - u[:, None] * (u @ dp)[None, :]) / length
    rim, drim = radius * u, radius * du
    drop, ddrop = float(rim @ n), n @ drim
    axis, daxis = half_length * a, half_length * da
    along, dalong = half_length * an, half_length * dan
    dist0, ddist0 = float(n @ centre), n @ dc
    first = dist0 + along + drop
    dists, ddists, dposes = [first], [ddist0 + dalong + ddrop], [dc + drim + daxis]
    if dist0 - along + drop <= margin:
        dists.append(dist0 - along + drop)
        ddists.append(ddist0 - dalong + ddrop)
        dposes.append(dc + drim - daxis)
    third = dist0 + along - drop / 2
    if third <= margin:
        side = np.cross(rim, axis)
        dside = -skew(axis) @ drim + skew(rim) @ daxis
        size = float(np.linalg.norm(side))
        unit = side / size
        dunit = (dside - unit[:, None] * (unit @ dside)[None, :]) / size
        reach = radius * np.sqrt(3.0) / 2
        for sign in (1.0, -1.0):
            dists.append(third)
            ddists.append(ddist0 + dalong - ddrop / 2)
            dposes.append(dc + sign * reach * dunit + daxis - drim / 2)
    if len(dists) != count:
        raise _StructureChange
    ddist = np.array(ddists)
    return ddist, np.array(dposes) - n[None, :, None] * (ddist[:, None, :] / 2)


def _supporting(system: Any, joints: list[int]) -> list[int]:
    """The public dofs whose coordinate moves a Jacobian of ``joints``: those of the joints on
    their paths to the root (Pinocchio's ``model.supports``; a joint's Jacobian depends on its
    ancestors' coordinates only, Featherstone, "Rigid Body Dynamics Algorithms", sec. 4.1); every
    dof where mimic joints couple coordinates across branches."""
    model, nv = system.model, system.nv
    if system.mimic_joints:
        return list(range(nv))
    cache = system.__dict__.setdefault("_supporting_dofs", {})  # per joint set: the model does not change
    key = tuple(joints)
    if key not in cache:
        moving = {int(model.idx_vs[j]) + i for joint in joints for j in model.supports[joint] if j > 0
                  for i in range(int(model.nvs[j]))}
        cache[key] = [k for k in range(nv) if int(system._dofs[k]) in moving]
    return list(cache[key])


def linearize(system: Any, problem: Any, parameters: tuple[str, ...]) -> StepLinearization | None:
    """The :class:`StepLinearization` of ``problem`` where it applies: a fixed base (a floating
    base's quaternion coordinates are not its tangent), parameters among ``mu``, a problem without
    bilateral or native rows; None otherwise (central differences of the system, as for every system)."""
    if system._base is not None or set(parameters) - {"mu"}:
        return None
    if problem.bilateral.H.shape[0] or problem.native is not None or problem.contacts.angular is not None:
        return None
    try:
        return StepLinearization(system, problem)
    except _StructureChange:  # the system's own differences say where the step is not differentiable
        return None


class _StructureChange(Exception):
    """The ground contacts found again at the base differ from the problem's, or a cylinder's
    disk lies parallel to the ground (its rim point is not a smooth function of the placement)."""
