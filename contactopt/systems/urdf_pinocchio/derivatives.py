"""Analytic derivatives of the pinocchio backend's dynamics (:mod:`.system`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.model.rows import Unilateral
from contactopt.model.step import Contacts, Dynamics
from contactopt.systems.urdf_pinocchio.contact_tangents import ContactGeometry, StructureChange
from contactopt.systems.urdf_pinocchio.free_flyer import (
    Kinematics,
    base_rotation,
    free_flyer,
    integration_map,
    tangent_map,
)
from contactopt.systems.urdf_pinocchio.tree import skew

FloatArray = NDArray[np.float64]


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
    if system.mimic_joints:
        raise ValueError(f"inverse dynamics derivatives: {system.urdf.name} has mimic joints "
                         f"({', '.join(system.mimic_joints)}), which Pinocchio's derivative algorithms do not take")
    qp, vp, ap = system.pin_q(q), system.pin_v(v), system.pin_v(a)
    d = system._dofs
    if system._base is None:
        dq, dv, _ = pin.computeRNEADerivatives(system.model, system.data, qp, vp, ap)
        grid = _dof_grid(system)
        return np.array(dq)[grid], np.array(dv)[grid] + np.diag(system.damping)
    model, data = free_flyer(system)
    nv = system.nv
    R = base_rotation(system, qp)
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

    At the base ``(q, v)`` of ``problem``, per input direction ``(dq, dv, du, dmu)`` (``dq`` in
    the public coordinates, moving the tangent by ``G dq``: :attr:`coordinates`, ``G = I`` on a
    fixed base; every tangent below is along ``G dq``, a floating base's kinematic ones through
    the free-flyer tree, :mod:`.free_flyer`):

    * ``dM = sum_k dM/dq_k dq_k``, the tensor from ``pin.computeRNEADerivatives(q, 0, e_j)``,
      ``d(M e_j + g)/dq``, less ``pin.computeGeneralizedGravityDerivatives`` (Carpentier &
      Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018:
      ``rnea(q, 0, a) = M(q) a + g(q)``); a floating base's from the free flyer's Coriolis matrix
      along each tangent (:meth:`.free_flyer.Kinematics.mass_variation`); ``M + h D`` moves as
      ``M`` (``D`` constant);
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
      (:func:`.contact_tangents.cylinder_tangents`);
    * a self-collision pair of a sphere and a box (the tool pushing a box,
      problems/ur5_like_arm_push.toml): its separation, point, normal and frame in closed form
      (:mod:`.pair_tangents`), the row ``frame (J_2(pos) - J_1(pos))`` moving by
      ``dframe (J_2 - J_1) + frame (dJ_2(pos) - dJ_1(pos))``, each ``dJ_k`` as the ground's;
      every other pair (and capsules, hulls) keeps the system's central differences;
    * a joint limit's separation moves by its row ``G dq``; ``mu`` by ``dmu``; the step ``h`` by
      ``ddt``, and with it ``M + h D`` and the step's start ``n h``.

    The contact tangents along every dof (``dphi``, ``dJ``) are built on first use; a forward
    product along a few directions asks :meth:`contact_tangents_along` for them alone
    (:mod:`.contact_tangents`: one Jacobian time variation per direction, not one per dof).

    :meth:`problem_at` is ``problem + t * tangent``, the problem linearized at its base: its
    central differences in ``t`` are those of the step's formulation (``build``) alone. The
    contact structure is the base's (the candidates do not appear or leave along ``t``).
    """

    def __init__(self, system: Any, problem: Any) -> None:
        self.system, self.problem = system, problem
        nv = system.nv
        q, v = problem.state.q, problem.state.v
        self._qp = system.pin_q(q)
        #: ``G`` ((nv, nq)): a public direction's tangent (:func:`.free_flyer.tangent_map`), None: ``I``
        self.coordinates = tangent_map(system, q)
        self.kinematics = Kinematics(system, self._qp)
        self._dM: FloatArray | None = None
        dq, dv = inverse_dynamics(system, q, v, np.zeros(nv))
        self.dtau_dq, self.dtau_dv = -dq, -dv
        #: the contacts found at the base, checked against the problem's rows (a mismatch:
        #: :class:`.contact_tangents.StructureChange`, the system's differences)
        self.geometry = ContactGeometry(system, problem)
        self._contact: tuple[FloatArray, FloatArray] | None = None
        unilateral = problem.unilateral
        self.dphi_limits = np.array(unilateral.G, dtype=np.float64)

    @property
    def dM(self) -> FloatArray:
        """``dM/dq`` ((nv, nv, nv): row, column, tangent direction), from ``computeRNEADerivatives(q,
        0, e_j)`` less the gravity's, a floating base's along each tangent (class docstring); built
        on first use."""
        if self._dM is None and self.system._base is not None:  # along each tangent (the free flyer's)
            self._dM = np.stack([self.kinematics.mass_variation(unit) for unit in np.eye(self.system.nv)], axis=2)
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

    @property
    def dphi(self) -> FloatArray:
        """``d phi / dq`` ((nc, nv)) of the contacts, in the problem's order; built on first use."""
        return self._contact_tangents()[0]

    @property
    def dJ(self) -> FloatArray:
        """``dJ / dq`` ((nc * 3, nv, nv): row, column, direction); built on first use."""
        return self._contact_tangents()[1]

    def _contact_tangents(self) -> tuple[FloatArray, FloatArray]:
        if self._contact is None:
            self._contact = self.geometry.tangents()
        return self._contact

    def contact_tangents_along(self, directions: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(dphi D, dJ D)`` ((nc, p), (nc * 3, nv, p)) along the columns of ``directions`` ((nv, p)),
        without the per-dof tensors (their products where they are built already)."""
        if self._contact is not None:
            return self._contact[0] @ directions, self._contact[1] @ directions
        return self.geometry.tangents(directions)

    def dM_along(self, directions: FloatArray) -> FloatArray:
        """``sum_k dM/dq_k D_k`` per column of ``directions`` ((nv, p) -> (nv, nv, p)) without the
        tensor: ``dM/dt = C + C^T`` along the velocity ``D`` (``pin.computeCoriolisMatrix``, whose
        ``C`` makes ``dM/dt - 2 C`` skew: Carpentier et al., "The Pinocchio C++ library", 2019),
        one pass per column; the tensor's product where it is built already."""
        if self._dM is not None:
            return self._dM @ directions
        out = np.zeros((self.system.nv, self.system.nv, directions.shape[1]))
        for k in range(directions.shape[1]):
            out[:, :, k] = self.kinematics.mass_variation(directions[:, k])
        return out

    def integration(self, v_next: FloatArray, h: float) -> tuple[FloatArray, FloatArray] | None:
        """``(dq'/dq, dq'/dv')`` of ``q' = integrate(q, v', h)`` in public coordinates
        (:func:`.free_flyer.integration_map`); None on a fixed base (``(I, h I)``)."""
        if self.coordinates is None:
            return None
        return integration_map(self.system, self.problem.state.q, v_next, h)

    def problem_at(self, t: float, dq: FloatArray, dv: FloatArray, du: FloatArray, dmu: float,
                   ddt: float = 0.0) -> Any:
        """The base problem moved by ``t`` along ``(dq, dv, du, dmu, ddt)`` (class docstring)."""
        base = self.problem
        dynamics, contacts, limits = base.dynamics, base.contacts, base.unilateral
        tangent = dq if self.coordinates is None else self.coordinates @ dq
        dM = self.dM @ tangent
        dtau = self.dtau_dq @ tangent + self.dtau_dv @ dv + (du if du.size else 0.0)
        moved_contacts = contacts
        if contacts.phi.shape[0]:
            moved_contacts = Contacts(phi=contacts.phi + t * (self.dphi @ tangent),
                                      J=np.asarray(contacts.J) + t * (self.dJ @ tangent),
                                      mu=contacts.mu + t * dmu, restitution=contacts.restitution, dim=contacts.dim)
        moved_limits = limits if not limits.count else Unilateral(
            phi=limits.phi + t * (self.dphi_limits @ tangent), G=limits.G, labels=limits.labels)
        M = np.asarray(dynamics.M) + t * dM
        state = dataclasses.replace(base.state, q=base.state.q + t * dq, v=base.state.v + t * dv)
        if ddt:  # M + h D (step_dynamics) and the step's start n h move with h
            M = M + t * ddt * np.diag(self.system.damping)
            state = dataclasses.replace(state, t=state.t * (1.0 + t * ddt / base.dt))
        return dataclasses.replace(
            base, state=state, dt=base.dt + t * ddt, dynamics=Dynamics(M=0.5 * (M + M.T), tau=dynamics.tau + t * dtau),
            contacts=moved_contacts, unilateral=moved_limits)


def _dof_grid(system: Any) -> Any:
    """``np.ix_(dofs, dofs)``: a Pinocchio matrix's rows and columns in the public dof order (kept:
    the model does not change)."""
    grid = system.__dict__.get("_dof_grid")
    if grid is None:
        grid = system.__dict__["_dof_grid"] = np.ix_(system._dofs, system._dofs)
    return grid


def linearize(system: Any, problem: Any, parameters: tuple[str, ...]) -> StepLinearization | None:
    """The :class:`StepLinearization` of ``problem`` where it applies: parameters among ``mu`` and
    ``dt``, a problem without bilateral or native rows, a tree without mimic joints (Pinocchio's
    derivative algorithms refuse them); None otherwise (central differences of the system, as for
    every system)."""
    if set(parameters) - {"mu", "dt"}:
        return None
    if problem.bilateral.H.shape[0] or problem.native is not None or problem.contacts.angular is not None:
        return None
    if system.mimic_joints:  # pin 4.1's derivative algorithms refuse mimic joints (inverse_dynamics)
        return None
    try:
        return StepLinearization(system, problem)
    except StructureChange:  # the system's own differences say where the step is not differentiable
        return None
