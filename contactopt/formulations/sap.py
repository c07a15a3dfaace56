"""SAP: the unconstrained convex formulation of compliant contact (Castro, Permenter & Han,
"An Unconstrained Convex Formulation of Compliant Contact", IEEE T-RO 2022, arXiv
2110.10107), the contact model of Drake's SAP solver and the next step of the Todorov /
MuJoCo line of work that Tedrake 2022 presents ("Todorov's regularization").

One step is the primal (S1) of :mod:`contactopt.programs.primal` with ``A = M``,
``v* = v_free`` and, per active contact ``i`` (frame rows ``[n, t1, t2]``, ``phi_i`` the
separation, negative in penetration), the regularization and bias (labels ours)::

    (S7)  R_n = max(beta^2 / (4 pi^2) w_i,  1 / (h k (h + tau_d))),     R_t = sigma w_i,
    (S8)  v_hat_n = -phi_i / (h + tau_d),                                 v_hat_t = 0,
    (S9)  w_i = ||W_ii||_F / dim,   W_ii = J_i M^{-1} J_i^T   (the paper's RMS norm of the
                                                                 Delassus diagonal block)

* ``k`` (``stiffness``, N/m) and ``tau_d`` (``dissipation_time_scale``, s) give the compliant
  normal impulse ``gamma_n = h (-k phi - tau_d k v_n)_+`` with ``phi = phi_i + h v_n`` the
  next separation (Kelvin-Voigt with dissipation ``d = tau_d k``): indeed with (S7)-(S8)
  ``y_n = -(v_n - v_hat_n) / R_n = -h k (phi_i + (h + tau_d) v_n)``.
* ``beta`` (near-rigid parameter, option ``near_rigid_threshold``, Drake's name; the
  option ``beta`` belongs to the driver's Baumgarte drift correction): a contact stiffer than
  the step resolves (period ``2 pi sqrt(m / k)`` below ``beta h``) is clamped to the
  near-rigid value ``beta^2 / (4 pi^2) w_i``; ``k = inf`` is that rigid limit.
* ``sigma``: friction regularization; in stiction ``gamma_t = -v_t / R_t``, a residual slip
  of order ``sigma h g`` (about 1e-5 m/s at h = 1 ms).
* A candidate whose Jacobian block is zero (``w_i = 0``: it moves no degree of freedom,
  e.g. two geoms of one welded chain) gets no row: skipped by
  :func:`contactopt.formulations.common.active_contacts`, as in every formulation.
* Torsional and rolling rows (MJCF condim 4 and 6) join their contact's cone (MuJoCo's
  elliptic cone, :mod:`contactopt.formulations.angular_friction`) with ``R = sigma w_i``
  (``w_i`` their Delassus diagonal; the contact's ``w`` where that is 0, a row that moves no
  degree of freedom and so carries no impulse) and ``v_hat = 0``, as friction rows.
* Friction: Coulomb's cone, ``||gamma_t|| <= mu gamma_n``, with the analytic projection of
  :mod:`contactopt.programs.cone_projection`; ``mu = 0`` (or ``dim = 1``) keeps only the
  normal row with ``gamma_n >= 0``.

**Rows with their own stiffness** (:attr:`Contacts.stiffness`, the quadrature points of
hydroelastic contact surfaces, :mod:`contactopt.systems.hydroelastic`): (S7)-(S8) take the
row's ``k_i`` and a Hunt-Crossley dissipation time scale ``tau_i = d_i x_i``
(:func:`own_compliance`) in place of the options' ``stiffness`` and ``dissipation_time_scale``.

Defaults as in the paper and Drake: ``near_rigid_threshold = beta = 1``, ``sigma = 1e-3``;
``stiffness = inf`` and ``dissipation_time_scale = 0`` (the near-rigid regime, SAP's rigid approximation), so that
scenes without compliance data behave like rigid contact. Contacts enter when
``phi <= epsilon``; the default ``inf`` keeps every candidate: with ``tau_d = 0`` (S8) gives a
separated contact no impulse unless it closes within the step. Like the cone
complementarity relaxation it regularizes (``ccp``, its ``R -> 0`` limit), a sliding contact
in the near-rigid regime gets a normal velocity of up to ``mu |v_t|`` (``gamma_n`` grows by
``mu |v_t| / R_n`` in the sliding regime): the box launched at 1 m/s hops 8 mm on its first
step exactly as under ``ccp`` (same stop distance, 0.1014 m), then hovers at a gap of about
``h mu |v_t|``; with ``epsilon = 0`` the hovering contact would leave the program. With
``tau_d > 0`` (S8) acts ``tau_d`` early on separated contacts: use ``epsilon = 0`` there,
as Drake's point contact reports only overlapping pairs.
**Scenes that start in penetration** (MJCF scenes settled under MuJoCo's soft contacts,
e.g. the sphere pile at up to 0.7 mm): in the rigid limit with ``tau_d = 0`` (S8) removes the
penetration within one step, ``v_hat_n = -phi / h`` (0.3 m/s for the pile; ``max_recovery_speed``,
below, caps it), which throws the spheres apart (0.5 m/s, spinning at 10 rad/s) and makes every
step a sliding-to-stiction problem for ``newton`` (about 28 iterations; why:
:mod:`contactopt.solvers.newton.solver`, "Iteration counts"). Pick ``dissipation_time_scale = 0.05``
(``epsilon = 0``): the penetration is resolved over ``h + tau_d`` instead, the pile stays at
rest (6 mm/s, 0.2 rad/s over 40 steps; MuJoCo's own mj_step: 0.03 m/s, 0.8 rad/s) and newton
takes about 10 iterations. A finite ``stiffness`` (1e4-1e5 N/m) with that ``tau_d`` behaves
the same way on the pile.
**Recovery cap.** ``max_recovery_speed`` (``v_max``; :mod:`contactopt.formulations.recovery`,
the rigid formulations' option) caps (S8) at ``v_hat_n = min(-phi_i / (h + tau_d), v_max)``, on
contacts and limit rows alike. Its default is the system's: off for textbook and TOML scenes
(the paper's (S8) exactly), 0.1 m/s on MJCF models, whose keyframes often start millimetres
in penetration or outside a joint's range (gymnasium's humanoidstandup starts 3.6 cm in the
floor: (S8) alone throws its arms at 40 rad/s, MuJoCo's soft contacts lift them at 2 rad/s).
In the near-rigid regime the contact then leaves its penetration at about ``v_max``.
Bilateral rows ``H v' = r`` enter as SAP's holonomic constraints: free impulses (no cone),
near-rigid ``R = beta^2 / (4 pi^2) diag(H M^{-1} H^T)``, ``v_hat = r``. Dry-friction rows ``F``
(MuJoCo's ``frictionloss``) are box rows ``|gamma| <= h f`` regularized like friction,
``R = sigma diag(F M^{-1} F^T)``, ``v_hat = 0``: Huber terms of ``F v`` in (S1)
(:mod:`contactopt.programs.primal`, "Box rows"), so a joint driven below its frictionloss
creeps at ``sigma`` times the speed one step would give it.

**The system's own rows** (``rows = "model"``, MJCF systems; default ``"own"``): (S7)-(S9) over
MuJoCo's constraint rows of the model as written, read with elliptic cones (a contact's rows
are its frame ``[n, t1, t2]`` and its torsional and rolling rows), instead of the system's contact
candidates (:mod:`contactopt.formulations.sap_rows`, where the two differ). With ``newton`` the
step then runs as compiled arrays (:mod:`contactopt.integrators.native_step`), and
``co.formulate`` gives the program of the same arrays. Contacts enter where MuJoCo makes them
rows (within the geoms' own margin), so ``epsilon`` does not apply.

The program is the conic form (S6) (a :class:`~contactopt.programs.primal.PrimalConicProgram`):
clarabel, cvxpy and the others solve it as an SOCP, ``newton`` solves (S1) directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from contactopt.core.errors import ContactoptError, OptionError
from contactopt.formulations import model_primal, sap_rows
from contactopt.formulations.angular_friction import PrimalCone, primal_cone, scatter_angular
from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    ActiveContacts,
    active_contacts,
    delassus_blocks,
    limit_index,
    require_finite_mu,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.constraint_rows import mass_hessian
from contactopt.formulations.recovery import normal_target, recovery_speed
from contactopt.model.step import Contacts, Dynamics, StepProblem
from contactopt.programs import SOC, Block, Cone, ConicProgram, Nonneg, Solution, Zero
from contactopt.programs.csc import rows_of, to_csr
from contactopt.programs.primal import PrimalConicProgram, PrimalProgram

FloatArray = np.ndarray


def contact_rows(mu: FloatArray, dim: int) -> tuple[FloatArray, FloatArray, tuple[Cone, ...]]:
    """Which frame rows enter, their conic scale ``D`` and cones: a friction cone
    ``SOC(dim)`` with ``D = (1, mu, .., mu)`` per contact with ``mu > 0`` and ``dim > 1``,
    else the normal row alone (``Nonneg``)."""
    keep = np.zeros((mu.shape[0], dim), dtype=bool)
    keep[:, 0] = True
    cone = (mu > 0) & (dim > 1)
    keep[cone, 1:] = True
    scale = np.where(np.arange(dim) > 0, mu[:, None], 1.0)[keep]
    choices = (Nonneg(1), SOC(dim))  # shared instances: the tuple holds references only
    cones = tuple(choices[has_cone] for has_cone in cone.astype(np.int_).tolist())
    return np.flatnonzero(keep.reshape(-1)), scale, cones


def merge_nonneg(cones: tuple[Cone, ...]) -> tuple[Cone, ...]:
    """Consecutive ``Nonneg`` cones as one (the same set; per-cone loops stay short)."""
    merged: list[Cone] = []
    for cone in cones:
        if cone.kind == "nonneg" and merged and merged[-1].kind == "nonneg":
            merged[-1] = Nonneg(merged[-1].dim + cone.dim)
        else:
            merged.append(cone)
    return tuple(merged)


def vstack_rows(blocks: list[Any]) -> Any:
    """Row blocks stacked: CSR when any block is sparse, dense otherwise."""
    if any(sp.issparse(block) for block in blocks):
        return sp.vstack([sp.csr_matrix(block) for block in blocks], format="csr")
    return np.vstack(blocks)


def primal_step(problem: StepProblem, dynamics: Dynamics, v_star: FloatArray, J: FloatArray,
                R: FloatArray, v_hat: FloatArray, scale: FloatArray, cones: tuple[Cone, ...],
                bilateral_R: FloatArray, metadata: Mapping[str, Any],
                limits: tuple[Any, FloatArray, FloatArray] | None = None,
                friction: tuple[FloatArray, FloatArray] | None = None) -> PrimalConicProgram:
    """The conic form (S6) of a step: bilateral rows (free, ``v_hat = r``), limit rows
    (``limits = (index, R, v_hat)``: one ``Nonneg`` row each, like a frictionless normal row),
    contact rows, then the dry-friction rows ``F`` (``friction = (R, v_hat)``): box rows
    ``|gamma| <= h frictionloss`` (:mod:`contactopt.programs.primal`, "Box rows")."""
    H = problem.bilateral.H
    index, R_u, v_hat_u = limits if limits is not None else (np.zeros(0, dtype=np.int_), np.zeros(0), np.zeros(0))
    G = problem.unilateral.G[np.asarray(index, dtype=np.int_)]
    F = problem.friction_loss.F
    R_f, v_hat_f = friction if friction is not None else (np.zeros(0), np.zeros(0))
    if F.shape[0] and friction is None:
        raise ContactoptError(f"{F.shape[0]} dry-friction row(s) without their regularization")
    nh, nu, m, nf = H.shape[0], G.shape[0], J.shape[0], F.shape[0]
    primal = PrimalProgram(
        A=mass_hessian(dynamics), v_star=v_star, J=to_csr(vstack_rows([H, G, J, F]) if nh + nu + nf else J),
        R=np.concatenate([bilateral_R, R_u, R, R_f]),
        v_hat=np.concatenate([problem.bilateral_target, v_hat_u, v_hat, v_hat_f]),
        scale=np.concatenate([np.ones(nh + nu), scale, np.ones(nf)]),
        cones=((Zero(nh),) if nh else ()) + merge_nonneg(((Nonneg(nu),) if nu else ()) + cones),
        constraints=((Block("bilateral", 0, nh),) if nh else ()) + ((Block("limits", nh, nh + nu),) if nu else ())
        + (Block("contacts", nh + nu, nh + nu + m),),
        metadata={**metadata, "bilateral": nh, "limits": [int(i) for i in index], "friction_loss": nf},
        v_guess=problem.state.v, box=problem.dt * problem.friction_loss.bound)
    return primal.to_conic()


class SAP(Formulation):
    name: ClassVar[str] = "sap"
    description: ClassVar[str] = "SAP unconstrained convex compliant contact (Castro et al. 2022; Drake)"
    #: Opt-in for ``compare`` (``--formulations ...,sap``), which says why under its table
    #: (:data:`comparison_note`): SAP is a compliant model whose stiffness and dissipation are the
    #: scene's to choose, near-rigid by default, where the box slide's cells repeat anitescu's
    #: relaxation (the same hover, 0.008 m); ``regularized`` stands for the soft models there.
    default_comparison: ClassVar[bool] = False
    comparison_note: ClassVar[str] = (
        "Drake's compliant SAP (Castro et al. 2022): its stiffness and dissipation are the scene's to "
        "choose; at its near-rigid default it hovers as anitescu does")
    defaults: ClassVar[Mapping[str, Any]] = {"stiffness": math.inf, "dissipation_time_scale": 0.0,
                                             "near_rigid_threshold": 1.0, "sigma": 1e-3,
                                             "epsilon": math.inf, "max_recovery_speed": None, "rows": "own"}

    def resolve_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = super().resolve_options(options)
        for key, low, strict in (("stiffness", 0.0, True), ("dissipation_time_scale", 0.0, False),
                                 ("near_rigid_threshold", 0.0, True), ("sigma", 0.0, True)):
            value = merged[key]
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if (not number or math.isnan(value) or (value <= low if strict else value < low)
                    or (key != "stiffness" and math.isinf(value))):
                raise OptionError(f"formulation {self.name!r}: {key} must be a number "
                                  f"{'> 0' if strict else '>= 0'}{' (inf allowed)' if key == 'stiffness' else ''}, "
                                  f"got {value!r}")
            merged[key] = float(value)
        if merged["rows"] not in ("own", "model"):
            raise OptionError(f"formulation {self.name!r}: rows must be 'own' (the system's contact candidates) or "
                              f"'model' (the system's own constraint rows: MJCF), got {merged['rows']!r}")
        if merged["rows"] == "model" and not math.isinf(merged["epsilon"]):
            raise OptionError(f"formulation {self.name!r}: rows=model takes the system's own active rows; "
                              f"epsilon does not apply (got {merged['epsilon']!r})")
        return merged

    def native_request(self, options: Mapping[str, Any]) -> dict[str, Any] | None:
        """``rows=model``: the system's own rows, read with elliptic cones (:mod:`.sap_rows`)."""
        return {"cone": "elliptic"} if options.get("rows") == "model" else None

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        if options.get("rows") == "model":
            return model_rows_program(problem, options, self.name)
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"])
        require_finite_mu(active, self.name)
        h, dim = problem.dt, contacts.dim
        k, tau_d = options["stiffness"], options["dissipation_time_scale"]
        near_rigid = options["near_rigid_threshold"] ** 2 / (4.0 * math.pi**2)
        W = delassus_blocks(problem.dynamics, active.J, dim)
        w = np.sqrt(np.einsum("cij,cij->c", W, W)) / dim  # (S9)
        compliant = 0.0 if math.isinf(k) else 1.0 / (h * k * (h + tau_d))
        R_frame = np.empty((active.count, dim))
        R_frame[:, 0] = np.maximum(near_rigid * w, compliant)  # (S7)
        R_frame[:, 1:] = options["sigma"] * w[:, None]
        v_hat = np.zeros((active.count, dim))
        v_max = recovery_speed(problem, options)
        v_hat[:, 0] = -normal_target(active.phi, h + tau_d, v_max)  # (S8), at most v_max
        if contacts.stiffness is not None:  # rows with their own stiffness (hydroelastic patches)
            own_R, own_v_hat, own = own_compliance(contacts, active, h, near_rigid * w, v_max)
            R_frame[own, 0], v_hat[own, 0] = own_R, own_v_hat
        rows, scale, cones = contact_rows(active.mu, dim)
        H = problem.bilateral.H
        w_h = np.einsum("ij,ji->i", H, problem.dynamics.solve_M(H.T)) if H.shape[0] else np.zeros(0)
        index = limit_index(problem, options["epsilon"])
        G = problem.unilateral.G[index]
        w_u = np.einsum("ij,ji->i", G, problem.dynamics.solve_M(G.T)) if G.shape[0] else np.zeros(0)
        limits = (index, np.maximum(near_rigid * w_u, compliant),
                  -normal_target(problem.unilateral.phi[index], h + tau_d, v_max))
        metadata = {"formulation": self.name, "dt": h, "t": problem.state.t, "contacts": active.index.tolist(),
                    "nv": problem.nv, "stiffness": k, "dissipation_time_scale": tau_d,
                    "near_rigid_threshold": options["near_rigid_threshold"], "sigma": options["sigma"]}
        F = problem.friction_loss.F  # dry friction regularized like friction: R = sigma w, v_hat = 0
        w_f = np.einsum("ij,ji->i", F, problem.dynamics.solve_M(F.T)) if F.shape[0] else np.zeros(0)
        J, R, v_hat_rows = rows_of(active.J, rows), R_frame.reshape(-1)[rows], v_hat.reshape(-1)[rows]
        if active.angular is not None:  # MuJoCo's elliptic cone of 3 + m_c rows: R = sigma w_i, v_hat = 0
            cone = primal_cone(active)
            angular_w = delassus_blocks(problem.dynamics, active.angular.J, 1)[:, 0, 0]
            # a row that moves no dof (W_ii = 0: a sphere's torsion on a chain of y hinges) takes its
            # contact's w: any R > 0 leaves an inert row's impulse 0, and R = 0 is no program
            angular_w = np.where(angular_w > 0, angular_w, w[active.angular.contact])
            R, v_hat_rows = cone_values(cone, R_frame, options["sigma"] * angular_w), cone_values(cone, v_hat, 0.0)
            J, scale, cones, metadata = cone.rows, cone.scale, cone.cones, {**metadata, "angular_rows": True}
        return primal_step(problem, problem.dynamics, problem.v_free, J, R, v_hat_rows, scale, cones,
                           near_rigid * w_h, metadata, limits, (options["sigma"] * w_f, np.zeros(F.shape[0])))

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, ConicProgram)
        if program.metadata.get("rows") == "model":
            assert isinstance(program, PrimalConicProgram) and problem.native is not None
            assert problem.native.arrays is not None
            return model_primal.recover(problem, program, solution, sap_rows.sap_arrays(problem.native.arrays))
        active = select_contacts(problem.contacts, program.metadata["contacts"])
        return recover_primal(problem, program, solution, active.index,
                              contact_rows(active.mu, problem.contacts.dim)[0])


def model_rows_program(problem: StepProblem, options: Mapping[str, Any], name: str) -> PrimalConicProgram:
    """``rows=model``: SAP's primal over the system's own rows (:mod:`.sap_rows`), the program
    the compiled step (:mod:`contactopt.integrators.native_step`) solves from the same arrays."""
    native = problem.native
    if native is None or native.arrays is None:
        raise OptionError(f"formulation {name!r}: rows=model needs the system's own constraint rows as arrays "
                          "(an mjcf system, built through simulate/formulate)")
    arrays = sap_rows.sap_arrays(native.arrays)
    values = sap_rows.sap_values(arrays, sap_rows.parameters(options, problem.dt, recovery_speed(problem, options)))
    metadata = {"formulation": name, "rows": "model", "dt": problem.dt, "t": problem.state.t, "nv": problem.nv,
                "native": dict(native.info)}
    return model_primal.program(arrays, model_primal.primal_rows(arrays, values), metadata)


def own_compliance(contacts: Contacts, active: ActiveContacts, h: float, near_rigid_R: FloatArray,
                   v_max: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(R_n, v_hat_n, which)`` of the active contacts with their own finite stiffness ``k_i``
    and Hunt-Crossley dissipation ``d_i`` (:attr:`Contacts.stiffness`: hydroelastic patch rows,
    Masterjohn et al. 2022, "Velocity level approximation of pressure field contact patches",
    where each quadrature point is such a contact): (S7)-(S8) with ``k_i`` and the dissipation
    time scale ``tau_i = d_i x_i``, ``x_i = max(-phi_i, 0)``, so that the impulse
    ``h k_i (x_i - h v_n) - h k_i tau_i v_n = h k_i x_i (1 - d_i v_n) - h^2 k_i v_n`` is the
    Hunt-Crossley ``h k x (1 - d v_n)`` at the next penetration ``x = x_i - h v_n``, but for
    the term ``h^2 k_i d_i v_n^2`` (the damping of the penetration at the step's start, as
    Drake's "lagged" approximation takes it). ``R_n`` keeps SAP's near-rigid floor."""
    assert contacts.stiffness is not None and contacts.dissipation is not None
    k = contacts.stiffness[active.index]
    which = np.flatnonzero(np.isfinite(k))
    k = k[which]
    phi = active.phi[which]
    tau = contacts.dissipation[active.index][which] * np.maximum(-phi, 0.0)
    R = np.maximum(near_rigid_R[which], 1.0 / (h * k * (h + tau)))
    v_hat = -(phi / (h + tau))
    return R, (v_hat if math.isinf(v_max) else np.minimum(v_hat, v_max)), which


def cone_values(cone: PrimalCone, frame: FloatArray, angular: FloatArray | float) -> FloatArray:
    """Per kept row of ``cone``, the value of its frame row (``frame``: (na, 3)) or angular row."""
    full = np.zeros(cone.cone.coefficient.shape[0])
    full[cone.cone.frame] = frame
    full[cone.cone.angular] = angular
    return full[cone.keep]


def recover_primal(problem: StepProblem, program: ConicProgram, solution: Solution, index: Any,
                   frame_rows: FloatArray,
                   split: Callable[[FloatArray], tuple[FloatArray, FloatArray]] | None = None) -> StepResult:
    """``v'`` and the impulses of a solution of (S6): ``x = [v', sigma]``, ``sigma = gamma``
    at the optimum; ``frame_rows`` places the contact rows in the (na, dim) frame array, or
    ``split`` maps them to ``(frame impulses, angular impulses)``."""
    contacts = problem.contacts
    active = select_contacts(contacts, index)
    nh = program.metadata.get("bilateral", 0)
    sigma = program.variable(solution.x, "sigma")
    limit_rows = np.asarray(program.metadata.get("limits", []), dtype=np.int_)
    nu = limit_rows.shape[0]
    limits = np.zeros(problem.unilateral.count)
    limits[limit_rows] = sigma[nh:nh + nu]
    nf = int(program.metadata.get("friction_loss", 0))
    values = sigma[nh + nu:sigma.shape[0] - nf]
    angular = np.zeros(0)
    if split is not None:
        frame, angular = split(values)
    elif program.metadata.get("angular_rows"):  # rows in cone order (.angular_friction.primal_cone)
        frame, angular = primal_cone(active).impulses(values)
    else:
        frame = np.zeros(active.count * contacts.dim)
        frame[np.asarray(frame_rows, dtype=np.int_)] = values
    return StepResult(v_next=np.array(program.variable(solution.x, "v_next")),
                      impulses=scatter_impulses(contacts, active, frame), bilateral=np.array(sigma[:nh]),
                      limits=limits, friction_loss=np.array(sigma[sigma.shape[0] - nf:]),
                      angular_friction=scatter_angular(contacts, active, angular))
