"""The first-order motion of the pinocchio backend's contact rows (the ground's and the
sphere-box pairs'), for :class:`.derivatives.StepLinearization`: the contacts found once at the
base, their tangents along every dof (the reverse product's columns) or along a few given
directions only (a forward product: one Jacobian time variation per direction instead of one
per dof).

The formulas are :class:`.derivatives.StepLinearization`'s (its docstring). A tangent is linear
in the direction ``D`` ((nv, p)): every quantity the old per-dof form indexed by the dof that
moves (the joints' motion ``J_o``, ``J_w``, a point's ``dc``) is here that Jacobian times
``D``, and the Jacobians' variation along column ``k`` is ``pin.computeJointJacobiansTimeVariation``
with velocity ``D_k`` (``Jdot = sum_j dJ/dq_j qdot_j``, Carpentier & Mansard, "Analytical
derivatives of rigid body dynamics algorithms", RSS 2018; a floating base's through the free-flyer
tree, :mod:`.free_flyer`); ``D = I`` gives the per-dof tensors. Directions are tangents (a floating
base: ``[dp_world, dphi_body]``, :mod:`.free_flyer`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.urdf_pinocchio import ground, pair_tangents
from contactopt.systems.urdf_pinocchio.free_flyer import Kinematics
from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]
_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0
_GROUND_FRAME = ground.contact_frame(ground.NORMAL)


class StructureChange(Exception):
    """The contacts found again at the base differ from the problem's, a pair the closed forms
    do not cover, or a cylinder's disk parallel to the ground (its rim point is not a smooth
    function of the placement): the system's own central differences then."""


class ContactGeometry:
    """The problem's contacts at its base (``system.contact_list``, once), checked against its
    rows, with the joints' Jacobians there; :meth:`tangents` moves them along directions."""

    def __init__(self, system: Any, problem: Any) -> None:
        self.system = system
        contacts = problem.contacts
        self.count = count = int(contacts.phi.shape[0])
        #: per shape touching the ground: (first row, shape, joint, centre, rotation, its contacts)
        self.ground: list[tuple[int, int, int, FloatArray, FloatArray, list[Any]]] = []
        #: per pair: (row, the collision contact, its closed-form motion and frame motion per dof)
        self.pairs: list[tuple[int, Any, Any, tuple[FloatArray, FloatArray]]] = []
        self.bases: dict[int, tuple[FloatArray, FloatArray]] = {}
        self.joints: list[int] = []
        if not count:
            return
        shapes = system._shapes
        if any(item.kind not in ("box", "sphere", "cylinder") for item in shapes):
            raise StructureChange  # capsules and hulls: their tangents are not derived here (differences)
        q = problem.state.q
        # the collision contacts behind the problem's rows (:func:`.rows.contact_rows`), else found again
        listed = contacts.__dict__.get("_touches") or system.contact_list(q)
        if len(listed) != count:
            raise StructureChange  # another count than the problem's: differences
        self.placed = placed = dict(system._placed(q))
        pin, model, data = system.pin, system.model, system.data
        self.qp = system.pin_q(q)
        pairs: list[tuple[int, Any]] = []
        for row, contact in enumerate(listed):
            if contact.first >= 0:
                pairs.append((row, contact))
                continue
            shape = contact.second
            if self.ground and self.ground[-1][1] == shape:
                self.ground[-1][5].append(contact)
                continue
            self.ground.append((row, shape, shapes[shape].joint, *placed[shape], [contact]))
        self.joints = sorted({joint for _, _, joint, *_ in self.ground}
                             | {shapes[k].joint for _, c in pairs for k in (c.first, c.second)})
        d, nv = system._dofs, system.nv
        known = contacts.__dict__.get("_joint_jacobians", {})  # the rows' own (:func:`.rows.contact_rows`)
        if any(joint and joint not in known for joint in self.joints):
            known = {}
            pin.computeJointJacobians(model, data, self.qp)
        for joint in self.joints:
            self.bases[joint] = ((np.zeros((6, nv)), np.zeros(3)) if joint == 0 else known.get(joint) or
                                 (np.array(pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED))[:, d],
                                  np.array(data.oMi[joint].translation)))
        for row, contact in pairs:  # each checked against the problem's row
            kinds = (shapes[contact.first].kind, shapes[contact.second].kind)
            if sorted(kinds) != ["box", "sphere"]:
                raise StructureChange  # other pairs' tangents are not derived here (differences)
            ball, box = (contact.first, contact.second) if kinds[0] == "sphere" else (contact.second, contact.first)
            # per dof: the closed forms are linear in the shapes' motion, so along D they are these times D
            s, _, ds, _ = self._motion(ball)
            c, R, dc, spin = self._motion(box)
            motion = pair_tangents.sphere_box(s, float(shapes[ball].size[0]), ds, c, R, shapes[box].size, dc, spin,
                                              sphere_first=ball == contact.first)
            if motion is None:
                raise StructureChange
            frame, dframe = pair_tangents.frame_tangent(motion.normal, motion.dnormal)
            rows = frame @ (self._point(shapes[contact.second].joint, motion.pos)
                            - self._point(shapes[contact.first].joint, motion.pos))
            given = np.asarray(contacts.J)[3 * row:3 * row + 3]
            if (abs(motion.dist - contacts.phi[row]) > 1e-12
                    or np.abs(rows - given).max() > 1e-10 * max(1.0, float(np.abs(given).max()))):
                raise StructureChange  # not the problem's contact: its own differences
            self.pairs.append((row, contact, motion, (frame, dframe)))

    def _point(self, joint: int, x: FloatArray) -> FloatArray:
        """``J(x)`` ((3, nv)) of the point fixed to ``joint`` at ``x``."""
        jacobian, origin = self.bases[joint]
        return jacobian[:3] - skew(x - origin) @ jacobian[3:]

    def _motion(self, shape: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The shape's centre, rotation, the centre's motion and the angular motion per dof ((3, nv))."""
        centre, R = self.placed[shape]
        jacobian, origin = self.bases[self.system._shapes[shape].joint]
        return centre, R, jacobian[:3] - skew(centre - origin) @ jacobian[3:], jacobian[3:]

    def tangents(self, directions: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """``d phi`` ((nc, p)) and ``dJ`` ((nc * 3, nv, p): row, column, direction) along the
        columns of ``directions`` ((nv, p); None: every dof, ``p = nv``)."""
        system = self.system
        nv = system.nv
        D = np.eye(nv) if directions is None else np.asarray(directions, dtype=np.float64)
        p = D.shape[1]
        dphi, dJ = np.zeros((self.count, p)), np.zeros((3 * self.count, nv, p))
        if not self.count:
            return dphi, dJ
        variations = {joint: np.zeros((6, nv, p)) for joint in self.joints}  # (row, column, direction)
        moving = [joint for joint in self.joints if joint != 0]  # the world (geometry fixed to it): no motion
        if directions is None:  # the dofs that move the Jacobians: :func:`_supporting`'s
            columns = [int(k) for k in supporting(system, self.joints)]
        else:
            columns = [k for k in range(p) if np.any(D[:, k])]
        kinematics = Kinematics(system, self.qp)  # a floating base's through the free flyer
        for k in columns:
            for joint, variation in kinematics.jacobian_variations(moving, D[:, k]).items():
                variations[joint][:, :, k] = variation

        def point_motion(joint: int, x: FloatArray, dx: FloatArray) -> FloatArray:
            """The variation ((3, nv, p)) of ``J(x)`` of the point fixed to ``joint`` as ``x``
            moves by ``dx`` ((3, p)): ``dJ_o - [dx - do]x J_w - [x - o]x dJ_w``, ``do = J_o D``."""
            jacobian, origin = self.bases[joint]
            turning = np.einsum("ijl,jk,lv->ivk", _LEVI_CIVITA, dx - jacobian[:3] @ D, jacobian[3:])
            variation = variations[joint]
            return variation[:3] - turning - np.einsum("ij,jvk->ivk", skew(x - origin), variation[3:])

        margin = system.detection_margin
        for row, shape, joint, centre, R, found in self.ground:
            jacobian, origin = self.bases[joint]
            J_o, J_w = jacobian[:3], jacobian[3:]
            dc, w = (J_o - skew(centre - origin) @ J_w) @ D, J_w @ D  # the centre's and the turn's motion
            item = system._shapes[shape]
            if item.kind == "cylinder":
                ddists, dposes = cylinder_tangents(centre, R, float(item.size[0]), float(item.size[1]), margin,
                                                   dc, w, len(found))
            else:  # a box corner (r from the centre) or a sphere's lowest point (r = 0 in the motion)
                box = item.kind == "box"
                velocities = np.array([dc - skew(touch.pos - centre + ground.NORMAL * (touch.dist / 2)) @ w
                                       if box else dc for touch in found])  # (touches, 3, p)
                ddists = np.einsum("i,civ->cv", ground.NORMAL, velocities)
                dposes = velocities - ground.NORMAL[None, :, None] * (ddists[:, None, :] / 2)
            for c, touch in enumerate(found):
                dphi[row + c] = ddists[c]
                dJ[3 * (row + c):3 * (row + c + 1)] = np.einsum("ai,ivk->avk", _GROUND_FRAME,
                                                                point_motion(joint, touch.pos, dposes[c]))
        shapes = system._shapes
        for row, contact, motion, (frame, dframe) in self.pairs:
            second, first = shapes[contact.second].joint, shapes[contact.first].joint
            relative = self._point(second, motion.pos) - self._point(first, motion.pos)
            dpos = motion.dpos @ D
            moved = point_motion(second, motion.pos, dpos) - point_motion(first, motion.pos, dpos)
            dphi[row] = motion.ddist @ D
            dJ[3 * row:3 * row + 3] = (np.einsum("ai,ivk->avk", frame, moved)
                                       + np.einsum("aik,iv->avk", dframe @ D, relative))
        return dphi, dJ


def cylinder_tangents(centre: FloatArray, R: FloatArray, radius: float, half_length: float, margin: float,
                      dc: FloatArray, w: FloatArray, count: int) -> tuple[FloatArray, FloatArray]:
    """``d dist`` ((count, p)) and ``d pos`` ((count, 3, p)) of a cylinder's contacts
    (:func:`.ground.cylinder`, whose construction is differentiated term by term) along the
    placement's motion per direction, ``dc`` (3, p) and ``[w]x R`` (``w`` (3, p)): the axis ``a`` moves by
    ``w x a``, the rim direction ``u = p / |p|`` with ``p = a (a.n) - n`` by ``(dp - u (u.dp)) / |p|``,
    the side direction likewise; a contact's point ``x - n dist / 2`` by ``dx - n d(dist) / 2``."""
    n = ground.NORMAL
    a = R[:, 2].copy()
    if n @ a > 0:
        a = -a
    da = -skew(a) @ w  # (3, p): w x a
    an, dan = float(n @ a), n @ da
    p = a * an - n
    length = float(np.linalg.norm(p))
    if length < ground._MINVAL:  # a disk parallel to the plane: its rim point is the x axis' (not smooth)
        raise StructureChange
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
        raise StructureChange
    ddist = np.array(ddists)
    return ddist, np.array(dposes) - n[None, :, None] * (ddist[:, None, :] / 2)


def supporting(system: Any, joints: list[int]) -> list[int]:
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
