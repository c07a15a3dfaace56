"""MuJoCo's own solver as a method (``formulation="mujoco"``): the reference row of ``compare``.

Each step sets ``qpos``/``qvel``/``act`` (the state's actuator activations) and calls ``mj_step``
on an unmodified model loaded from the system's file: the system's ``detection_margin`` (0 by
default) raises geom margins and gaps for contactopt's own contact candidates only, and
MuJoCo's ``gap`` is not inert in its solver (a contact in the gap keeps its constraint row,
which lifts a resting box), so the reference row must not see it. The recorded contacts are
MuJoCo's own (``candidates`` those not between fused bodies, ``mujoco_contacts`` its ``ncon``),
the next state's ``act`` MuJoCo's own. The record holds MuJoCo's contact impulses
(``mj_contactForce`` times ``h``, normal first, zero for contacts MuJoCo did not activate), its
limit and dry-friction impulses on the system's rows (:func:`row_impulses`: the energy balance
counts their work), the
solver's iteration count, and residuals that contactopt computes for MuJoCo's answer on the
same constraint problem (:func:`contactopt.systems.mjcf.program.program_from_mujoco`), so MuJoCo
is judged like any other solver. Options set MuJoCo's own: ``cone`` ("pyramidal" | "elliptic"), ``solver`` ("Newton" |
"CG" | "PGS"), ``iterations``, ``tolerance`` (None keeps the model's).

**Time.** The record's ``solve_time`` is ``mj_step`` alone (MuJoCo's whole step: its
constraint problem built and solved, and the integration), comparable with the other rows'
``build_time + setup_time + solve_time``, which leave out contactopt's own residual check of
their answers too; the time of this row's residual check is in the record's ``message``
(``residuals=False`` skips it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.model.step import State
from contactopt.programs import ConicProgram, Residuals, Status, conic_residuals
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System
from contactopt.systems.mjcf import constraints as mj_rows

FloatArray = NDArray[np.float64]


class MujocoStepper:
    name: ClassVar[str] = "mujoco"
    description: ClassVar[str] = "MuJoCo's own mj_step on the same MJCF model (reference; mjcf systems only)"
    defaults: ClassVar[Mapping[str, Any]] = {"cone": None, "solver": None, "iterations": None, "tolerance": None,
                                             "residuals": True}

    def __init__(self, system: System, solver: str, dt: float, options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        from contactopt.systems.mjcf.system import MjcfSystem

        if not isinstance(system, MjcfSystem):
            hint = getattr(system, "mujoco_hint", "")  # a URDF on the pinocchio backend: where MuJoCo's model is
            raise OptionError(f"formulation 'mujoco' needs an mjcf system, not {system.type_name!r}"
                              + (f"; {hint}" if hint else ""))
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise OptionError(f"formulation 'mujoco': unknown option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(self.defaults)}")
        self.options = {**self.defaults, **given}
        self.system = system
        self.mujoco = system.mujoco
        from contactopt.systems.mjcf import compat

        # a fresh copy from the file: no detection margin, and our timestep/solver settings
        # below leave the system's own model untouched
        self.model = compat.model_from_file(self.mujoco, str(system.path))
        compat.enable_energy(self.mujoco, self.model)
        self.data = self.mujoco.MjData(self.model)
        self.dt = float(dt)
        self._configure()

    def _configure(self) -> None:
        mujoco, opt, options = self.mujoco, self.model.opt, self.options
        opt.timestep = self.dt
        cones = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}
        solvers = {"newton": mujoco.mjtSolver.mjSOL_NEWTON, "cg": mujoco.mjtSolver.mjSOL_CG,
                   "pgs": mujoco.mjtSolver.mjSOL_PGS}
        if options["cone"] is not None:
            if str(options["cone"]).lower() not in cones:
                raise OptionError(f"formulation 'mujoco': cone must be 'pyramidal' or 'elliptic', "
                                  f"got {options['cone']!r}")
            opt.cone = cones[str(options["cone"]).lower()]
        if options["solver"] is not None:
            if str(options["solver"]).lower() not in solvers:
                raise OptionError(f"formulation 'mujoco': solver must be Newton, CG or PGS, got {options['solver']!r}")
            opt.solver = solvers[str(options["solver"]).lower()]
        if options["iterations"] is not None:
            opt.iterations = int(options["iterations"])
        if options["tolerance"] is not None:
            opt.tolerance = float(options["tolerance"])

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        mujoco, model, data = self.mujoco, self.model, self.data
        data.qpos[:] = state.q
        data.qvel[:] = state.v
        data.act[:] = state.act
        data.time = state.t
        control = self.system.control  # the same held control as every other method
        data.ctrl[:] = 0.0 if control is None else control
        keys = mj_rows.limit_keys(mujoco, model, self.system._evaluate_position(state.q))
        start = time.perf_counter()
        mujoco.mj_step(model, data)
        elapsed = time.perf_counter() - start
        limits, friction_loss = row_impulses(mujoco, model, data, keys, self.dt)
        phi, impulses = [], []
        force = np.zeros(6)
        for index, contact in enumerate(data.contact[: data.ncon]):
            if contact.exclude > 1:
                continue
            phi.append(float(contact.dist))
            if contact.efc_address >= 0:
                mujoco.mj_contactForce(model, data, index, force)
                impulses.append(force[:3] * self.dt)
            else:
                impulses.append(np.zeros(3))
        start = time.perf_counter()
        residuals = self._residuals() if self.options["residuals"] else Residuals.undefined()
        residual_time = time.perf_counter() - start
        finite = bool(np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel)))
        record = StepRecord(
            t=state.t, impulses=np.array(impulses).reshape(-1, 3), phi=np.array(phi), build_time=0.0,
            setup_time=0.0, solve_time=elapsed, iterations=int(data.solver_niter[0]), residuals=residuals,
            status=Status.OPTIMAL if finite else Status.NUMERICAL_ERROR, solver="mujoco",
            candidates=len(phi), mujoco_contacts=int(data.ncon), limits=limits, friction_loss=friction_loss,
            message=f"mj_step, {int(data.nefc)} constraint rows; residuals checked in {1e3 * residual_time:.3g} ms "
                    "(not in the step's time)")
        if not finite:
            return None, record
        return State(np.array(data.qpos), np.array(data.qvel), state.t + self.dt, np.array(data.act)), record

    def _residuals(self) -> Residuals:
        """contactopt's residuals of MuJoCo's forces on the problem MuJoCo solved this step,
        with the duals that MuJoCo's forces imply (:func:`implied_duals`)."""
        from contactopt.systems.mjcf.program import program_from_mujoco

        if int(self.data.nefc) == 0:
            return Residuals(0.0, 0.0, 0.0, 0.0)
        program = program_from_mujoco(self.model, self.data)
        x = self.dt * np.array(self.data.efc_force)
        return conic_residuals(program, x, implied_duals(program, x))


def implied_duals(program: ConicProgram, x: FloatArray) -> FloatArray:
    """The cone multipliers ``y`` of MuJoCo's impulses ``x``: stationarity ``P x + c + A^T y = 0``
    row by row. Every row of ``A`` (:func:`contactopt.systems.mjcf.program.cone_rows`) has one entry:
    a row that is alone on its force row takes ``y = -g / a`` (``g = P x + c``); the two rows of a
    dry-friction box (``+x <= h F``, ``-x <= h F``) split ``-g`` by its sign, each ``>= 0`` (the
    least-squares split ``y = -+g/2`` would make one of them negative: a dual residual of
    ``|g|``, the spurious 3.4 of rows with ``frictionloss``). Equality rows have no cone row:
    their ``g`` stays in the dual residual (MuJoCo's solver tolerance)."""
    gradient = program.P @ x + program.c
    A = sp.coo_matrix(program.A)
    per_force_row = np.bincount(A.col, minlength=x.shape[0])
    y = np.zeros(A.shape[0])
    alone = per_force_row[A.col] == 1
    y[A.row[alone]] = -gradient[A.col[alone]] / A.data[alone]
    paired = ~alone
    y[A.row[paired]] = np.maximum(-gradient[A.col[paired]] / A.data[paired], 0.0)
    return y


def row_impulses(mujoco: Any, model: Any, data: Any, keys: list[Any], dt: float) -> tuple[FloatArray, FloatArray]:
    """MuJoCo's limit and dry-friction forces of the step ``data`` took, times ``dt``, on the
    system's limit rows (``keys``: :func:`.constraints.limit_keys` at the step's start, the
    nearer bound of each limited joint and tendon; a MuJoCo row at the other bound has no row
    there and is left out) and friction rows (:func:`.constraints.friction_rows`' order: dofs,
    then tendons, with ``frictionloss > 0``)."""
    types, ids = np.asarray(data.efc_type[:data.nefc]), np.asarray(data.efc_id[:data.nefc])
    force = np.asarray(data.efc_force[:data.nefc]) * dt
    kinds = mujoco.mjtConstraint
    limits = np.zeros(len(keys))
    limit_rows = np.flatnonzero((types == int(kinds.mjCNSTR_LIMIT_JOINT)) | (types == int(kinds.mjCNSTR_LIMIT_TENDON)))
    if limit_rows.size:
        from contactopt.systems.mjcf.compat import constraint_jacobian

        J = constraint_jacobian(model, data)
        where = {key: i for i, key in enumerate(keys)}
        for r in limit_rows:
            kind = "joint" if types[r] == int(kinds.mjCNSTR_LIMIT_JOINT) else "tendon"
            found = [i for key, i in where.items() if key[:2] == (kind, int(ids[r]))]
            if kind == "joint" and found and keys[found[0]][2] != 0:  # hinge/slide: the side by the row's sign
                dof = int(model.jnt_dofadr[int(ids[r])])
                found = [i for i in found if keys[i][2] == int(np.sign(J[r, dof]))]
            if found:
                limits[found[0]] += force[r]
    lossy_dofs = np.flatnonzero(np.asarray(model.dof_frictionloss) > 0)
    lossy_tendons = np.flatnonzero(np.asarray(model.tendon_frictionloss) > 0) if int(model.ntendon) else np.zeros(0)
    friction = np.zeros(lossy_dofs.shape[0] + lossy_tendons.shape[0])
    for r in np.flatnonzero(types == int(kinds.mjCNSTR_FRICTION_DOF)):
        friction[int(np.searchsorted(lossy_dofs, ids[r]))] += force[r]
    for r in np.flatnonzero(types == int(kinds.mjCNSTR_FRICTION_TENDON)):
        friction[lossy_dofs.shape[0] + int(np.searchsorted(lossy_tendons, ids[r]))] += force[r]
    return limits, friction
