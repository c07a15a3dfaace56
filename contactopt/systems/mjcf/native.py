"""MuJoCo's own constraint problem of a step, for ``regularized -o params=model``.

At ``(q, v)`` the **unmodified** model (no detection margin: margins, gaps, solref, solimp,
friction and condim as the file writes them) is evaluated by ``mj_forward``; its constraint
rows (``efc_J``, ``efc_R``, ``efc_aref``, ``efc_type``, contact dims and friction, cone
``opt.cone``) give the regularized dual of :func:`contactopt.systems.mjcf.program.program_from_mujoco`:
the same convex program MuJoCo's solver minimizes (Todorov 2014; MuJoCo documentation,
"Computation: Constraint model" and "Solver"), in impulses ``x = h f``.

**Integrators** (MuJoCo documentation, "Computation: Numerical integration"). MuJoCo solves
the constraint problem with ``M`` and the smooth acceleration ``a0 = M^{-1} qfrc_smooth`` (joint
damping explicit in ``qfrc_passive``), then takes the velocity step with the implicit part of
its integrator:

* ``v' = v + h S^{-1} (qfrc_smooth + J^T f)`` with ``S = M - h D`` the step matrix of the
  model's integrator (:mod:`.derivatives`: ``Euler`` joint damping; ``implicitfast`` MuJoCo's
  ``qDeriv`` without the RNE term, its lower triangle mirrored; ``implicit`` the full,
  nonsymmetric ``qDeriv``, exactly);
* ``RK4``: ``S = M`` (explicit), and the step is MuJoCo's four stages, each one such program at
  its stage state (:mod:`contactopt.integrators.runge_kutta`): ``v' = v + S^{-1}(...)`` above is
  then a stage's velocity step, ``qacc_i = M^{-1} (qfrc_smooth + J^T x / h)``;
* other integrators (MuJoCo's ``discrete``) are refused.

MuJoCo's **noslip** pass (``opt.noslip_iterations > 0``: Gauss-Seidel sweeps over the friction
rows after the main solve) is not part of the program: a model that sets it is run as MuJoCo's
main solve, with one :class:`NoslipNotReproducedWarning` (``tests/test_mjcf_noslip.py``).

Checked against ``mj_step`` from random states of MuJoCo's control-suite models and of
``problems/mjcf/limited_arm.xml``, pyramidal and elliptic (``tests/test_mjcf_rows.py``), and over
RK4 steps (``tests/test_mjcf_rk4.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, ContactoptWarning
from contactopt.model.step import NativeRows
from contactopt.systems.mjcf import compat, derivatives
from contactopt.systems.mjcf.constraints import disabled, limit_keys, tendon_jacobian
from contactopt.systems.mjcf.program import program_from_mujoco

FloatArray = NDArray[np.float64]


def step_matrix(system: Any, model: Any, data: Any, M: FloatArray, dt: float) -> FloatArray:
    """The matrix of MuJoCo's velocity update (module docstring; :mod:`.derivatives`)."""
    mujoco = system.mujoco
    name = derivatives.integrator_name(mujoco, model)
    if name not in ("Euler", "implicitfast", "implicit", "RK4"):
        raise ContactoptError(f"params=model reproduces MuJoCo's Euler, implicitfast, implicit and RK4 integrators; "
                              f"this model uses {name} (set <option integrator=\"implicitfast\"/>)")
    return derivatives.step_matrix(mujoco, model, data, M, dt)


class NoslipNotReproducedWarning(ContactoptWarning):
    """The model runs MuJoCo's noslip solver after its main solve (``opt.noslip_iterations >
    0``: a few unregularized Gauss-Seidel sweeps over the friction rows with the normal forces
    held; MuJoCo documentation, "Computation: Solver", noslip), which is not part of the convex
    program ``params=model`` solves: its friction forces, and so its steps, differ from
    ``mj_step``'s where contacts slip under the regularization."""


def warn_noslip(system: Any, model: Any) -> None:
    """One :class:`NoslipNotReproducedWarning` per system whose model sets ``noslip_iterations``."""
    iterations = int(model.opt.noslip_iterations)
    if iterations > 0 and not getattr(system, "_warned_noslip", False):
        system._warned_noslip = True
        warnings.warn(f"{system.path.name}: <option noslip_iterations=\"{iterations}\"/>: MuJoCo's noslip "
                      "pass over the friction rows is not part of the program params=model solves; its steps "
                      "follow MuJoCo's main solve only (set noslip_iterations=\"0\" to compare with mj_step)",
                      NoslipNotReproducedWarning, stacklevel=3)


def set_inputs(system: Any, model: Any, data: Any, dt: float, cone: str | None = None) -> None:
    """The step's inputs on the system's native ``(model, data)``, from the system itself (not from
    whatever its data last evaluated): step ``dt``, the model's cone unless ``cone`` names one,
    the system's control, activations and applied forces."""
    mujoco = system.mujoco
    warn_noslip(system, model)
    model.opt.timestep = float(dt)
    cones = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}
    model.opt.cone = cones[cone] if cone is not None else system.native_cone  # the file's, unless overridden
    data.ctrl[:] = 0.0 if system.control is None else system.control
    data.act[:] = system.activation
    for name in ("qfrc_applied", "xfrc_applied"):
        getattr(data, name)[:] = getattr(system.data, name)


def evaluate(system: Any, q: FloatArray, v: FloatArray, dt: float, cone: str | None = None) -> tuple[Any, Any]:
    """``(model, data)`` of the unmodified model evaluated as ``mj_forward`` does at ``(q, v)`` with step
    ``dt``, the system's control, activations and applied forces (the model's cone unless
    ``cone`` names one)."""
    mujoco = system.mujoco
    model, data = system.native_model_data()
    set_inputs(system, model, data, dt, cone)
    data.qpos[:] = q
    data.qvel[:] = v
    # mj_forward's stages up to the constraint rows and the smooth acceleration; its constraint
    # solve (mj_fwdConstraint) is the program this problem poses, not an input to it
    mujoco.mj_fwdPosition(model, data)
    mujoco.mj_fwdVelocity(model, data)
    mujoco.mj_fwdActuation(model, data)
    mujoco.mj_fwdAcceleration(model, data)
    return model, data


def native_rows(system: Any, q: FloatArray, v: FloatArray, dt: float, cone: str | None = None) -> NativeRows:
    """MuJoCo's constraint problem at ``(q, v)`` with step ``dt`` (the model's integrator,
    the model's cone unless ``cone`` names one), mapped onto the system's own rows."""
    mujoco = system.mujoco
    model, data = evaluate(system, q, v, dt, cone)
    program = program_from_mujoco(model, data)
    M = compat.full_mass_matrix(mujoco, model, data)
    nefc = int(data.nefc)
    J = compat.constraint_jacobian(model, data)
    maps = {"contacts": contact_map(system, q, model, data),
            **row_maps(system, q, model, data, J)}
    kinds = np.asarray(data.efc_type)[:nefc]
    info = {"rows": nefc, "cone": "elliptic" if int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_ELLIPTIC)
            else "pyramidal", "integrator": int(model.opt.integrator),
            "equality": int(np.sum(kinds == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)))}
    return NativeRows(program=program, J=J, smooth_force=np.array(data.qfrc_smooth),
                      step_matrix=step_matrix(system, model, data, M, dt), maps=maps, info=info)


def contact_map(system: Any, q: FloatArray, model: Any, data: Any) -> sp.csr_matrix:
    """(nc * 3, nefc): MuJoCo's contact rows to the frame impulses ``[n, t1, t2]`` of the
    system's candidates (matched by geom pair and position; torsional and rolling rows have
    no place in the 3-row frame and are left out)."""
    mujoco = system.mujoco
    geoms, positions = system.contact_keys(q)
    nefc, ncon = int(data.nefc), int(data.ncon)
    shape = (3 * geoms.shape[0], nefc)
    address = np.asarray(data.contact.efc_address, dtype=np.int_)[:ncon]
    keep = np.flatnonzero(address >= 0)
    if not keep.size or not geoms.shape[0]:
        return sp.csr_matrix(shape)
    pair = np.asarray(data.contact.geom, dtype=np.int_)[keep]
    same = (pair[:, None, 0] == geoms[None, :, 0]) & (pair[:, None, 1] == geoms[None, :, 1])  # (contact, candidate)
    distance = np.linalg.norm(np.asarray(data.contact.pos)[keep][:, None, :] - positions[None, :, :], axis=2)
    matched = same.any(axis=1)
    target = np.argmin(np.where(same, distance, np.inf), axis=1)[matched]  # the nearest candidate of the pair
    keep, address = keep[matched], address[keep][matched]
    dim = np.asarray(data.contact.dim, dtype=np.int_)[keep]
    pyramidal = np.asarray(data.efc_type)[address] == int(mujoco.mjtConstraint.mjCNSTR_CONTACT_PYRAMIDAL)
    rows: list[NDArray[np.int_]] = []
    cols: list[NDArray[np.int_]] = []
    values: list[FloatArray] = []
    # pyramidal edges e = 0..2(dim-1)-1 (pairs n + mu_i t_i, n - mu_i t_i): each adds to n, edges of
    # the first two axes to t1, t2 with +-mu_i; torsional and rolling axes have no place in the frame
    edges = np.where(pyramidal, 2 * (dim - 1), 0)
    contact = np.repeat(np.arange(keep.size), edges)
    edge = np.arange(int(edges.sum())) - np.repeat(np.cumsum(edges) - edges, edges)
    column = address[contact] + edge
    rows.append(3 * target[contact])
    cols.append(column)
    values.append(np.ones(column.size))
    axis = edge // 2
    tangent = axis < 2
    mu = np.asarray(data.contact.friction, dtype=np.float64)[keep]
    rows.append((3 * target[contact] + 1 + axis)[tangent])
    cols.append(column[tangent])
    values.append((mu[contact, np.minimum(axis, 4)] * (1 - 2 * (edge % 2)))[tangent])
    # elliptic or frictionless: rows [n, t1, t2, ...], the first three in the frame
    width = np.where(pyramidal, 0, np.minimum(dim, 3))
    contact = np.repeat(np.arange(keep.size), width)
    j = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    rows.append(3 * target[contact] + j)
    cols.append(address[contact] + j)
    values.append(np.ones(j.size))
    return sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=shape)


def row_maps(system: Any, q: FloatArray, model: Any, data: Any, J: FloatArray) -> dict[str, sp.csr_matrix]:
    """MuJoCo's equality, limit and dry-friction rows to the system's bilateral, limit and
    friction-loss rows (the same constraints, in the system's order)."""
    mujoco = system.mujoco
    kinds = mujoco.mjtConstraint
    nefc = int(data.nefc)
    efc_type = np.asarray(data.efc_type)[:nefc]
    efc_id = np.asarray(data.efc_id)[:nefc]
    equality = np.flatnonzero(efc_type == int(kinds.mjCNSTR_EQUALITY))
    maps = {"bilateral": sp.csr_matrix((np.ones(equality.size), (np.arange(equality.size), equality)),
                                       shape=(equality.size, nefc))}
    keys = {key: row for row, key in enumerate(limit_keys(system.mujoco, system.model, system.data_at(q)))}
    tendon_J = tendon_jacobian(model, data) if int(model.ntendon) else np.zeros((0, int(model.nv)))
    limit_entries: list[tuple[int, int]] = []
    for row in np.flatnonzero((efc_type == int(kinds.mjCNSTR_LIMIT_JOINT))
                              | (efc_type == int(kinds.mjCNSTR_LIMIT_TENDON))):
        ident = int(efc_id[row])
        if efc_type[row] == int(kinds.mjCNSTR_LIMIT_JOINT):
            joint_kind = int(model.jnt_type[ident])
            if joint_kind == int(mujoco.mjtJoint.mjJNT_BALL):
                key: tuple[str, int, int] = ("joint", ident, 0)
            else:
                key = ("joint", ident, 1 if J[row, int(model.jnt_dofadr[ident])] > 0 else -1)
        else:
            key = ("tendon", ident, 1 if float(J[row] @ tendon_J[ident]) > 0 else -1)
        if key in keys:
            limit_entries.append((keys[key], int(row)))
    friction_keys = friction_order(mujoco, model)
    friction_entries = []
    for row in np.flatnonzero((efc_type == int(kinds.mjCNSTR_FRICTION_DOF))
                              | (efc_type == int(kinds.mjCNSTR_FRICTION_TENDON))):
        kind = "dof" if efc_type[row] == int(kinds.mjCNSTR_FRICTION_DOF) else "tendon"
        position = friction_keys.get((kind, int(efc_id[row])))
        if position is not None:
            friction_entries.append((position, int(row)))
    for name, entries, count in (("limits", limit_entries, len(keys)), ("friction_loss", friction_entries,
                                                                          len(friction_keys))):
        r = np.array([e[0] for e in entries], dtype=np.int_)
        c = np.array([e[1] for e in entries], dtype=np.int_)
        maps[name] = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(count, nefc))
    return maps


def friction_order(mujoco: Any, model: Any) -> dict[tuple[str, int], int]:
    """The order of :func:`contactopt.systems.mjcf.constraints.friction_rows`: dofs, then tendons."""
    if disabled(mujoco, model, "mjDSBL_FRICTIONLOSS"):
        return {}
    order = [("dof", int(d)) for d in np.flatnonzero(np.asarray(model.dof_frictionloss) > 0)]
    if int(model.ntendon):
        order += [("tendon", int(t)) for t in np.flatnonzero(np.asarray(model.tendon_frictionloss) > 0)]
    return {key: i for i, key in enumerate(order)}
