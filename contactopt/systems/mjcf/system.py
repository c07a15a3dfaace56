"""The ``mjcf`` system: a MuJoCo model (MJCF file) as a contactopt system.

At a state ``(q, v)`` (MuJoCo's ``qpos``/``qvel`` layout) MuJoCo computes, through
``mj_fwdPosition``/``mj_fwdVelocity``/``mj_fwdActuation``:

* ``M``: the full mass matrix (``mj_fullM``);
* ``tau = -qfrc_bias + qfrc_passive + qfrc_actuator + qfrc_applied``: every non-contact
  generalized force (Coriolis, gravity, springs, dampers, actuators, applied);
* the contacts of its collision detection: per contact the frame rows ``[n, t1, t2]``
  (``contact.frame``, normal from geom1 to geom2), the Jacobian
  ``frame (J_p(body2, p) - J_p(body1, p))`` at the contact point ``p`` (``mj_jac``), the
  separation ``phi = contact.dist`` and ``mu = contact.friction[0]`` (sliding friction;
  ``condim = 1`` gives ``mu = 0``); the torsional (condim 4, 6) and rolling (condim 6) rows
  with their own coefficients ``contact.friction[2:5]`` as ``Contacts.angular``
  (:func:`.contacts.angular_friction`, MuJoCo's ``efc_J`` rows), which every formulation puts in
  its cone (:mod:`contactopt.formulations.angular_friction`); ``[system] extra_friction =
  "sliding"`` keeps their sliding friction only (said once by a
  :class:`~.candidates.UnmodelledFrictionWarning`).
  Negative or non-finite friction coefficients are refused at load;

and positions advance with MuJoCo's own ``mj_integratePos`` (quaternions for free and ball
joints). Friction comes from the geoms, so a scene's ``[contact]`` table is rejected.
Coordinates follow MuJoCo's ``qpos``/``qvel``: a free joint's velocity is ``[vx, vy, vz]`` in the
world frame and its angular velocity in the body's own frame, named ``wx_body, wy_body, wz_body``
(a ball joint's too), where a ``rigid3d`` body's ``wx, wy, wz`` are world-frame.

**Every other constraint MuJoCo builds** (:mod:`.constraints`): equality constraints as
bilateral rows (``constraints``), joint and tendon limits as unilateral rows (``limits``),
dof and tendon ``frictionloss`` as box rows (``friction_loss``); every formulation takes them
through :mod:`contactopt.formulations.constraint_rows`. **Passive forces**: springs, dampers,
gravity compensation and fluid forces are in ``qfrc_passive`` (hence ``tau``), armature is in
``M``; the step uses the step matrix of the model's integrator, ``M - h D`` with ``D`` the
velocity derivative of passive and actuator forces as MuJoCo takes it (:meth:`MjcfSystem.step_dynamics`,
:mod:`.derivatives`). **MuJoCo's own
constraint problem** on the model as written (``regularized -o params=model``):
:meth:`MjcfSystem.native_rows` (:mod:`.native`).

**Detection margin.** MuJoCo reports a contact once ``dist`` is below the pair's margin (plus
its gap, from MuJoCo 4.0), from the geoms' own ``margin``/``gap`` (0 unless the model sets them).
By default the candidates are exactly those contacts, the ones ``mj_step`` itself builds (a hand
in its keyframe: MuJoCo's 1, not 138 as with a fixed 1 cm), and those that touch exactly: the
default widening is 1e-8 of the model's extent (:data:`TOUCH_MARGIN`), since rigid formulations
close a contact to ``dist = 0`` and rounding would otherwise drop half of a gripper's resting
contacts (its load slips at 0.96 m/s under anitescu). ``[system] detection_margin = X`` (m;
``--system-option detection_margin=X``) widens it for formulations that want early candidates:
MuJoCo then *detects* every pair's contacts up to ``X`` farther while its own solver activates
the same ones (:func:`.compat.widen_detection`, through ``gap``), and the formulations receive
the near contacts (MuJoCo's ``exclude = 1``, "in the gap") as candidates with ``phi > 0``.
Each step records its candidate count and MuJoCo's own ``ncon`` at that state
with the model's margins (:meth:`MjcfSystem.reference_contact_count`, :mod:`.candidates`).
**Declared features**: the condim 4/6 geom pairs and the frictionloss dofs and tendons the
model declares (:meth:`MjcfSystem.declared_features`), by which a formulation that cannot hold
their rows refuses the model before step 0. **Actuator activations** (``na > 0``): ``data.act`` is
the state's (:meth:`set_activation`), advanced by :meth:`next_activation` (:mod:`.activations`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arrays import SPARSE_FROM_NV
from contactopt.core.errors import ContactoptError
from contactopt.model.step import Bilateral, Contacts, Dynamics, FrictionLoss, NativeRows, Unilateral, as_vector
from contactopt.systems.base import Parameter, ParameterError, System
from contactopt.systems.mjcf import activations, candidates, compat, copies, derivatives, keyframes, parameters
from contactopt.systems.mjcf import constraints as mj_rows
from contactopt.systems.mjcf.contacts import Chains, angular_friction, contact_jacobian, friction_problem
from contactopt.systems.mjcf.mass import MassLayout

FloatArray = NDArray[np.float64]

#: What the formulations do with contacts of condim 4/6: their torsional/rolling rows as
#: MuJoCo models them, or their sliding friction only.
EXTRA_FRICTION = ("model", "sliding")
TOUCH_MARGIN = 1e-8  # default detection widening per metre of the model's extent (module docstring)


class MjcfSystem(System):
    type_name: ClassVar[str] = "mjcf"
    description: ClassVar[str] = "a MuJoCo model (file = MJCF): M, forces, contacts and integration from MuJoCo"
    config_keys: ClassVar[frozenset[str]] = frozenset({"file", "detection_margin", "extra_friction", "keyframe"})
    contact_dim = 3
    default_max_recovery_speed: ClassVar[float] = 0.1  # m/s, why: contactopt.formulations.recovery
    nonpotential_force = derivatives.nonpotential_force  # the energy balance's actuators, dampers, applied forces

    def __init__(self, path: str | Path, detection_margin: float | None = None, extra_friction: str = "model",
                 sparse: bool | None = None, keyframe: str | None = None) -> None:
        """``sparse``: M, M^-1 and J as scipy.sparse matrices; by default from ``nv >= 60`` on
        (:data:`contactopt.core.arrays.SPARSE_FROM_NV`, MuJoCo's own threshold), dense below.
        ``keyframe``: the keyframe the default state is (:mod:`.keyframes`; default: keyframe 0)."""
        super().__init__({}, {})
        self.mujoco = compat.load()
        self.path = Path(path)
        try:
            self.model = compat.model_from_file(self.mujoco, str(self.path))
        except ValueError as exc:  # MuJoCo's parse errors name the file and the line
            reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())  # one line
            raise ParameterError("system.file", f"system.file: cannot load {self.path}: {reason}") from exc
        if int(self.model.nv) == 0:  # nothing to simulate (and no velocity vector to solve for)
            raise ParameterError("system.file", f"system.file: {self.path.name} has no degree of freedom (nv = 0: "
                                 "only static geoms, or bodies without a joint, which are welded to their parent); "
                                 "nothing can move: give a body a joint (e.g. <freejoint/>)")
        compat.enable_energy(self.mujoco, self.model)
        problem = friction_problem(self.model)
        if problem is not None:
            raise ParameterError("system.file", f"system.file: {self.path.name}: {problem}")
        self.detection_margin = (TOUCH_MARGIN * float(self.model.stat.extent) if detection_margin is None
                                 else float(detection_margin))
        compat.widen_detection(self.mujoco, self.model, self.detection_margin)  # detect earlier, activate as written
        self.data = self.mujoco.MjData(self.model)
        self.keyframe = keyframe
        self.keyframe_index = keyframes.keyframe_index(self.model, keyframe, self.path.name)
        self.nq, self.nv = int(self.model.nq), int(self.model.nv)
        self.sparse = bool(self.nv >= SPARSE_FROM_NV if sparse is None else sparse)
        self.params = {"nq": float(self.nq), "nv": float(self.nv), "nbody": float(self.model.nbody)}
        self.q_names, self.v_names = candidates.coordinate_names(self.mujoco, self.model)
        self.rotation_dofs = candidates.rotation_dofs(self.mujoco, self.model)  # ball and free joints' angular
        self.na = int(self.model.na)  # actuator activations (.activations)
        self._activation_law = activations.ActivationLaw(self.mujoco, self.model)
        self.activation = self.initial_activation()
        self._at: tuple[bytes, bytes, bytes, bytes] | None = None
        self._chains = Chains(self.model)
        self.mass_layout = MassLayout(self.model) if compat.has_sparse_mass(self.model, self.data) else None
        self._scratch: Any = None  # MjData for finite differences of the equality rows
        self.warned_implicit = False  # said once: implicit's step matrix is nonsymmetric
        self._native: tuple[Any, Any] | None = None  # the unmodified model, for params=model
        self.parameter_arrays: dict[str, FloatArray] | None = None  # set by with_parameters (.parameters)
        self._counting: Any = None  # MjData of the unmodified model: MuJoCo's ncon under a widened margin
        self.native_cone = 0
        if extra_friction not in EXTRA_FRICTION:
            raise ParameterError("system.extra_friction", f"system.extra_friction: one of "
                                 f"{', '.join(map(repr, EXTRA_FRICTION))}, got {extra_friction!r}")
        self.extra_friction = extra_friction
        self._extra_condims: list[int] = []
        self._warned_condim = False

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> System:
        if contact:
            raise ParameterError("contact", "contact: an MJCF scene takes friction from its geoms; "
                                 "remove the [contact] table")
        if "file" not in table or not isinstance(table["file"], str | Path):
            raise ParameterError("system.file", "system.file: missing (the MJCF file, relative to the scene)")
        path = Path(table["file"])
        if not path.exists():
            raise ParameterError("system.file", f"system.file: no such MJCF file {path}")
        if not path.is_file():  # a FIFO or a device would block MuJoCo's read, a folder cannot be read
            raise ParameterError("system.file", f"system.file: {path} is not a regular file (a folder, a FIFO or a "
                                 "device); expected an MJCF .xml file")
        margin = table.get("detection_margin")
        if margin is not None and (isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0):
            raise ParameterError("system.detection_margin",
                                 f"system.detection_margin: must be a number >= 0, got {margin!r}")
        extra = table.get("extra_friction", "model")
        if extra not in EXTRA_FRICTION:
            raise ParameterError("system.extra_friction", f"system.extra_friction: one of "
                                 f"{', '.join(map(repr, EXTRA_FRICTION))}, got {extra!r}")
        return cls(path, None if margin is None else float(margin), extra, keyframe=table.get("keyframe"))

    # --- MuJoCo evaluation (cached per state) ---------------------------------------------
    def _evaluate(self, q: ArrayLike, v: ArrayLike) -> Any:
        qv, vv = as_vector(q, "q", self.nq), as_vector(v, "v", self.nv)
        ctrl = np.zeros(self.model.nu) if self.control is None else self.control
        key = (qv.tobytes(), vv.tobytes(), ctrl.tobytes(), self.activation.tobytes())
        if key != self._at:
            data = self.data
            data.qpos[:] = qv
            data.qvel[:] = vv
            data.ctrl[:] = ctrl  # the held control: MuJoCo applies gains, biases and ctrlrange
            data.act[:] = self.activation  # the step's activations (set_activation)
            self.mujoco.mj_fwdPosition(self.model, data)
            self.mujoco.mj_fwdVelocity(self.model, data)
            self.mujoco.mj_fwdActuation(self.model, data)
            self._at = key
        return self.data

    @property
    def control_size(self) -> int:
        """``nu``: MuJoCo's actuators; a controller's output becomes ``data.ctrl``."""
        return int(self.model.nu)

    def control_names(self) -> tuple[str, ...]:
        return tuple(self.model.actuator(i).name or f"actuator{i}" for i in range(self.model.nu))

    def initial_activation(self) -> FloatArray:
        """The keyframe's ``act``, else zeros (:mod:`.activations`)."""
        return activations.initial_activation(self.model, self.keyframe_index)

    def activation_rate(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """MuJoCo's ``act_dot`` at ``(q, v)`` with the held ctrl and the set activations."""
        return np.array(self._evaluate(q, v).act_dot) if self.na else np.zeros(0)

    def advance_activation(self, act: ArrayLike, rate: ArrayLike, dt: float) -> FloatArray:
        """``act`` advanced at ``rate`` over ``dt`` as ``mj_advance`` does (:mod:`.activations`)."""
        return self._activation_law.advance(np.asarray(act, dtype=np.float64), np.asarray(rate, dtype=np.float64), dt)

    def native_integrator(self) -> str:
        return derivatives.integrator_name(self.mujoco, self.model)

    def check_activations(self, dt: float) -> None:
        activations.check(self.model, dt, self.path.name)

    def _evaluate_position(self, q: ArrayLike) -> Any:
        if self._at is not None and self._at[0] == as_vector(q, "q", self.nq).tobytes():
            return self.data
        return self._evaluate(q, np.zeros(self.nv))

    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        data = self._evaluate(q, v)
        tau = -data.qfrc_bias + data.qfrc_passive + data.qfrc_actuator + data.qfrc_applied
        if u is not None:
            tau = tau + as_vector(u, "u", self.nv)
        if self.mass_layout is None:
            return Dynamics(M=compat.sparse_mass_matrix(self.mujoco, self.model, data), tau=np.array(tau),
                            inverse=self._inverse_at(q, v))
        values = self.mass_layout.values(data.M)  # M and its block-diagonal inverse from MuJoCo's sparse M
        if not self.sparse:  # small models: dense (see contactopt.core.arrays.SPARSE_FROM_NV)
            return Dynamics(M=self.mass_layout.dense(values), tau=np.array(tau), inverse=self._inverse_at(q, v),
                            inverse_matrix=self.mass_layout.inverse_dense(values))
        return Dynamics(M=self.mass_layout.matrix(values), tau=np.array(tau), inverse=self._inverse_at(q, v),
                        inverse_matrix=self.mass_layout.inverse(values))

    def _inverse_at(self, q: ArrayLike, v: ArrayLike) -> Any:
        """``M(q)^{-1} rhs`` by MuJoCo's sparse factorization (``mj_solveM``, O(nnz) per
        right-hand side instead of a dense Cholesky); re-evaluates if the system moved on."""
        key = self._at

        def solve(rhs: FloatArray) -> FloatArray:
            if self._at != key:
                self._evaluate(q, v)
            rows = np.ascontiguousarray(rhs.reshape(self.nv, -1).T)
            out = np.zeros_like(rows)
            self.mujoco.mj_solveM(self.model, self.data, out, rows)
            return out.T.reshape(rhs.shape)

        return solve

    def contacts(self, q: ArrayLike) -> Contacts:
        """MuJoCo's contacts (``exclude > 1`` dropped: fused bodies, no degrees of freedom)
        with their rows assembled at once as a sparse CSR Jacobian (:mod:`.contacts`)."""
        data = self._evaluate_position(q)
        ncon = int(data.ncon)
        if ncon == 0:
            return Contacts.empty(self.nv, 3)
        found = data.contact
        keep = np.flatnonzero(np.asarray(found.exclude)[:ncon] <= 1)  # 1 = in the gap: kept
        geoms = np.asarray(found.geom)[:ncon][keep]
        bodies = np.asarray(self.model.geom_bodyid)[geoms]
        frames = np.asarray(found.frame)[:ncon][keep].reshape(-1, 3, 3)
        J = contact_jacobian(self._chains, data, self.nv, frames, np.asarray(found.pos)[:ncon][keep],
                             bodies[:, 0], bodies[:, 1], dense=not self.sparse)
        dims = np.asarray(found.dim)[:ncon][keep]
        self._extra_condims = sorted(set(dims[dims > 3].tolist()))
        if self._extra_condims and self.extra_friction == "sliding" and not self._warned_condim:
            self._warned_condim = True
            warnings.warn(f"{self.path.name}: contacts of condim {self._extra_condims}: their torsional/rolling "
                          "friction is left out (system.extra_friction = 'sliding'); regularized -o params=model "
                          "solves MuJoCo's own rows", candidates.UnmodelledFrictionWarning, stacklevel=2)
        mu = np.where(dims > 1, np.asarray(found.friction)[:ncon][keep, 0], 0.0)
        angular = (angular_friction(self._chains, data, self.nv, found, keep, bodies, frames, mu, not self.sparse)
                   if self._extra_condims and self.extra_friction == "model" else None)
        # J stays sparse (CSR) on large models: every formulation keeps its rows, Delassus products
        # and programs sparse, and no BLAS kernel touches them, so trajectories do not depend on
        # the CPU's; small models take it dense (contactopt.core.arrays.SPARSE_FROM_NV).
        return Contacts(phi=np.asarray(found.dist)[:ncon][keep].copy(), J=J, mu=mu,
                        restitution=np.zeros(keep.shape[0]), dim=3, angular=angular)

    def contact_names(self, q: ArrayLike) -> list[str]:
        """A label per contact of :meth:`contacts`, in its order (:func:`.candidates.contact_labels`)."""
        return candidates.contact_labels(self.model, self._evaluate_position(q))

    def reference_contact_count(self, q: ArrayLike) -> int:
        """MuJoCo's own ``ncon`` at ``q``, detected with the model's own geom margins: the
        contacts of :meth:`contacts` unless ``detection_margin`` widens them (:mod:`.candidates`)."""
        if not self.detection_margin:
            return int(self._evaluate_position(q).ncon)
        model = self.native_model_data()[0]
        if self._counting is None:
            self._counting = self.mujoco.MjData(model)
        return candidates.collision_count(self.mujoco, model, self._counting, as_vector(q, "q", self.nq))

    def declared_features(self) -> dict[str, list[str]]:
        """The rows the model can produce whatever the state: condim 4/6 geom pairs (unless
        ``extra_friction = "sliding"``) and frictionloss dofs and tendons (:mod:`.candidates`)."""
        return candidates.declared_features(self.mujoco, self.model, angular=self.extra_friction == "model")

    def step_dynamics(self, dynamics: Dynamics, dt: float) -> Dynamics:
        """The step matrix of MuJoCo's integrator of this model (:mod:`.derivatives`; MuJoCo
        documentation, "Computation: Numerical integration"): ``M - h D`` with ``tau`` unchanged
        (it holds the forces at ``v``), so that every formulation's ``M (v' - v_free) = J^T lambda``
        reads ``(M - h D)(v' - v) = h tau + J^T lambda``: damping and actuator ``kv`` at ``v'``.
        Euler: ``D = -diag(dof_damping)``; implicitfast: MuJoCo's ``qDeriv`` without the RNE
        term; implicit: the symmetric part of the full ``qDeriv`` (said once by a
        :class:`~.derivatives.NonsymmetricStepWarning`); RK4: ``M``."""
        return derivatives.step_dynamics(self, dynamics, dt)

    # --- non-contact rows (contactopt.systems.mjcf.constraints) and MuJoCo's own problem ---------
    def constraints(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Bilateral:
        """MuJoCo's equality constraints as bilateral rows (:mod:`.constraints`)."""
        data = self._evaluate(q, v)
        if not int(self.model.neq):
            return Bilateral.empty(self.nv)
        if self._scratch is None:
            self._scratch = self.mujoco.MjData(self.model)
        return mj_rows.bilateral(self.mujoco, self.model, data, self._scratch, np.array(data.qpos),
                                 np.array(data.qvel))

    def limits(self, q: ArrayLike) -> Unilateral:
        """Joint and tendon limits as unilateral rows (:mod:`.constraints`)."""
        return mj_rows.limit_rows(self.mujoco, self.model, self._evaluate_position(q))

    def limit_names(self, q: ArrayLike) -> list[str]:
        """A name per row of :meth:`limits`: ``"joint 'thumb' lower"``, ``"tendon 'split' upper"``."""
        entries = mj_rows.limit_entries(self.mujoco, self.model, self._evaluate_position(q))
        return [f"{key[0]} {label.rsplit(' ', 1)[0]!r} {label.rsplit(' ', 1)[1]}" for key, _, _, label in entries]

    def equality_violations(self, q: ArrayLike) -> list[tuple[str, float]]:
        """``(label, violation)`` of every active equality at ``q`` (:func:`.keyframes.equality_violations`)."""
        return keyframes.equality_violations(self.mujoco, self.model, self._evaluate_position(q))

    def friction_loss(self, q: ArrayLike) -> FrictionLoss:
        """Dof and tendon ``frictionloss`` as box rows (:mod:`.constraints`)."""
        return mj_rows.friction_rows(self.mujoco, self.model, self._evaluate_position(q))

    def native_rows(self, q: ArrayLike, v: ArrayLike, dt: float, **settings: Any) -> NativeRows:
        """MuJoCo's own constraint problem of the step on the unmodified model (:mod:`.native`)."""
        from contactopt.systems.mjcf.native_arrays import rows_with_arrays

        cone = settings.pop("cone", None)
        if settings:
            raise ContactoptError(f"mjcf native rows: unknown setting(s) {', '.join(map(repr, sorted(settings)))}")
        return rows_with_arrays(self, as_vector(q, "q", self.nq), as_vector(v, "v", self.nv), dt, cone)

    def native_model_data(self) -> tuple[Any, Any]:
        """The model as written (no detection margin) and its data, loaded once."""
        if self._native is None:
            model = compat.model_from_file(self.mujoco, str(self.path))
            parameters.restore(self, model, self.parameter_arrays)  # with_parameters' values
            self.native_cone = int(model.opt.cone)
            self._native = (model, self.mujoco.MjData(model))
        return self._native

    def data_at(self, q: ArrayLike) -> Any:
        """MuJoCo's data of this system's model at ``q`` (positions evaluated)."""
        return self._evaluate_position(q)

    def contact_keys(self, q: ArrayLike) -> tuple[NDArray[np.int_], FloatArray]:
        """``(geom pairs, positions)`` of the contact candidates of :meth:`contacts`, in order."""
        return candidates.contact_keys(self._evaluate_position(q))

    def integrate(self, q: ArrayLike, v_next: ArrayLike, dt: float) -> FloatArray:
        q_next = np.array(as_vector(q, "q", self.nq))
        self.mujoco.mj_integratePos(self.model, q_next, as_vector(v_next, "v", self.nv), dt)
        return q_next

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        data = self._evaluate(q, v)
        self.mujoco.mj_energyPos(self.model, data)
        self.mujoco.mj_energyVel(self.model, data)
        return float(data.energy[1]), float(data.energy[0])

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """The chosen keyframe's ``(qpos, qvel)`` (:mod:`.keyframes`), else MuJoCo's ``qpos0`` at rest."""
        if self.keyframe_index is not None:
            return keyframes.keyframe_state(self.model, self.keyframe_index)
        return np.array(self.model.qpos0), np.zeros(self.nv)

    def default_control(self) -> FloatArray | None:
        """The chosen keyframe's ``ctrl`` to hold when a scene has no ``[control]`` (:mod:`.keyframes`)."""
        return keyframes.keyframe_control(self.model, self.keyframe_index)

    def describe(self) -> str:
        return (f"mjcf({self.path.name}: nq={self.nq}, nv={self.nv}, bodies={self.model.nbody}, "
                f"detection margin {self.detection_margin:g} m)")

    # pickling (process pools, Dask), deep copies and a batch world's evaluation copy, without reading the file
    __getstate__, __setstate__, __deepcopy__ = copies.get_state, copies.set_state, copies.deep_copy
    evaluation_copy = copies.evaluation_copy

    def coordinate_units(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Units by joint type (:func:`.candidates.coordinate_units`); MuJoCo's joint names do not say."""
        return candidates.coordinate_units(self.mujoco, self.model, super().coordinate_units())

    def _parameter_table(self) -> dict[str, tuple[Parameter, float]]:  # "mu", "<body>.mass", ... (.parameters)
        return parameters.parameter_table(self)

    def _replace_parameters(self, values: Mapping[str, float]) -> MjcfSystem:
        return parameters.replaced(self, values)  # a copy of the model with the values
