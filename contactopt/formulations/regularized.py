"""MuJoCo's convex regularized formulation (Todorov 2014), as Tedrake 2022 presents it
("Todorov's regularization" and "Relaxed complementarity-free formulation").

One step is the dual program over contact impulses ``lambda`` in the friction cone::

    minimize    1/2 lambda^T (A + R) lambda + lambda^T (J v^- - v*)
    subject to  lambda in FC        (elliptic: SOC per contact;  pyramidal: edge impulses >= 0)

with

* implicit damping inertia ``b`` (the reference's cart: ``(m+b)(v'-v)/h = u + f - b v``):
  ``M~ = M + b I``, ``v^- = v + h M~^{-1} (tau - b v)``, ``A = J M~^{-1} J^T``;
* impedance ``d in (0, 1)`` from MuJoCo's ``solimp = (d0, dwidth, width, midpoint, power)``:
  ``d(r) = d0 + y(|r| / width) (dwidth - d0)`` with ``y`` MuJoCo's power sigmoid, ``d = dwidth``
  beyond ``width``; clamped to MuJoCo's [1e-4, 0.9999]; ``r = phi``;
* regularization ``R = (1 - d) / d * diag(A)`` (friction rows of elliptic cones divided by
  ``impratio``; pyramid edges use their own diagonal);
* reference velocity ``v* = J v + h a_ref`` with MuJoCo's ``a_ref = -b_ref J v - k_ref r``,
  ``b_ref = 2 / (dmax tc)``, ``k_ref = d(r) / (dmax^2 tc^2 zeta^2)`` from
  ``solref = (tc, zeta)`` (time constant, damping ratio), ``dmax = dwidth``; ``r = phi`` on
  normal rows and pyramid edges, 0 on friction rows. Negative ``solref = (-k, -b)`` gives the
  stiffness and damping directly (``k_ref = k / dmax^2``, ``b_ref = b / dmax``). With
  ``refsafe`` (MuJoCo's default) ``tc`` is raised to at least ``2 h``.

**Default solref.** ``None``, meaning ``(2 h, 1)``: the stiffest reference MuJoCo's refsafe
admits at the step ``h``. MuJoCo's own default ``(0.02, 1)`` (pass it explicitly) makes
friction visibly soft: friction rows aim at ``v*_t = (1 - 2h/(d tc)) v_t``, so once friction
stops saturating the slip decays exponentially with time constant ``~ d tc / 2`` (10 ms)
instead of stopping; a sliding box then stops ~15 % late (``experiments/box_slide.py``).

**Sliding contacts hop** (MuJoCo's behaviour too, not an energy gain). ``a_ref`` damps each
cone row's own velocity, and a sliding contact's active edge ``n - mu t`` (or the elliptic
cone's boundary) moves at ``v_n - mu |v_t|``; with ``h b_ref ~ 1`` (``tc = 2 h``) one step
brings that to about 0, launching the body at ``v_n ~ mu |v_t|`` (the velocity-level cone
relaxation's dilation; ``ccp`` hovers at ``h mu |v_t|``), and as contacts enter only at
``phi <= epsilon`` it flies ``~ (mu v_t)^2 / 2 g`` high. ``brick_push`` (8 N push) hops up to 1.8 cm within 0.5 s at
``h = 0.01`` (``v_x`` 1.6 m/s; 1.9 cm at ``h = 0.002``); ``solref = (0.1, 1)``: 2.9 mm, and
``(0.02, 1)`` at ``h = 0.002``: 1.7 mm. Its energy (the push's potential included) falls every
step, and ``mj_step`` on the equivalent MJCF (a sphere on x, z slide joints, timestep 0.01,
solref (0.02, 1)) gives the same trajectory to 1e-15 (``tests/test_regularized_hop.py``).

**Mapping to the reference's epsilon, kappa, b.** For a constant impedance
(``d0 = dwidth = d``) and ``zeta = 1``: ``epsilon = (1 - d) / d`` (so ``d = 1 / (1 + epsilon)``),
``kappa = tc``, and ``b`` is the ``b`` option. Then ``A + R = (1 + epsilon) / (m + b)`` and
``v* = v - 2 h (1 + epsilon) / kappa v - h (1 + epsilon) / kappa^2 q``: the reference's scalar
relaxed cart-and-wall program exactly (tested). MuJoCo's own implicit damping adds
``h * damping`` to M; the reference's ``b`` is that product.

**MuJoCo's own parameters** (``params = "model"``, mjcf systems): the program is MuJoCo's own
constraint problem at the state, on the model as written (every row MuJoCo builds, its
``efc_R`` and ``efc_aref`` from the per-row solref/solimp/margin, friction combined by its
rules, condim 1-6, the model's cone unless ``cone`` is given), and the velocity step is its
integrator's (Euler: ``(M + h D)^{-1}``; implicitfast: ``(M - h dtau/dv)^{-1}``):
:mod:`contactopt.systems.mjcf.native`. On an ``RK4`` model the step is MuJoCo's four stages, each
stage's constraint problem one program (:mod:`contactopt.integrators.runge_kutta`,
:meth:`stage_tableau`); only ``params=model`` follows RK4, every other formulation (and
``params=contactopt``) takes its semi-implicit Euler step on such a model. One step matches
``mj_step`` to 1e-14 where MuJoCo's solver converges (``tests/test_mjcf_rows.py``,
``tests/test_mjcf_rk4.py``). Options that MuJoCo's model sets are refused with it.

**Non-contact rows** (:mod:`contactopt.formulations.constraint_rows`): limit rows are treated
like frictionless normal rows (impedance and reference from their ``phi``, entering when
``phi <= epsilon``), dry-friction rows are boxes ``|sigma| <= h frictionloss`` with the
impedance ``d(0)`` and reference ``-b_ref F v`` (MuJoCo's frictionloss rows).
``max_recovery_speed`` caps the spring term at ``k_ref r >= -b_ref v_max`` (normal, edge and limit
rows; off except on MJCF models, not with ``params=model``): :mod:`contactopt.formulations.recovery`.

**Rows with their own stiffness** (:attr:`Contacts.stiffness`: hydroelastic quadrature points,
:mod:`contactopt.systems.hydroelastic`) take their ``R`` and ``v*`` from that stiffness and their
Hunt-Crossley dissipation instead of ``solref``/``solimp``
(:func:`~contactopt.formulations.regularized_rows.own_compliance_rows`): the same physical
spring-damper as under ``sap``.

**Forms.** ``form = "dual"`` (default) is the program above; ``form = "primal"`` is its
Lagrangian dual, SAP's unconstrained primal over ``v'``
(:mod:`contactopt.formulations.regularized_primal`), which the ``newton`` solver takes.

**Limit.** With ``solref = (2 h, 0.5)`` and ``d -> 1``, ``v* -> -phi / h`` on normal rows and
``R -> 0``: the program tends to the hard dual (``gauss``/``ccp`` dual). Contacts enter when
``phi <= epsilon`` (MuJoCo's margin; default 0: only touching or penetrating contacts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.formulations import regularized_angular
from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.ccp import friction_cone_rows
from contactopt.formulations.common import (
    active_contacts,
    dual_program,
    dual_velocity,
    require_finite_mu,
    row_impulses,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.regularized_model import model_primal_program, model_program, model_recover
from contactopt.formulations.regularized_rows import (
    damped_dynamics,
    impedance,
    own_compliance_rows,
    pyramid_edges,
    reference_gains,
    row_terms,
    soft_rows,
)
from contactopt.model.step import StepProblem
from contactopt.model.tableau import RK4, Tableau
from contactopt.programs import Block, ConicProgram, Nonneg, Solution
from contactopt.programs.csc import diagonal_csc, empty_csc
from contactopt.programs.primal import PrimalConicProgram
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]



class Regularized(Formulation):
    name: ClassVar[str] = "regularized"
    description: ClassVar[str] = "MuJoCo-style regularized dual (Todorov 2014), elliptic or pyramidal cone"
    defaults: ClassVar[Mapping[str, Any]] = {
        "cone": "pyramidal", "solref": None, "solimp": (0.9, 0.95, 0.001, 0.5, 2.0), "impratio": 1.0, "b": 0.0,
        "epsilon": 0.0, "refsafe": True, "form": "dual", "params": "contactopt", "max_recovery_speed": None,
    }
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {"cone": ("pyramidal", "elliptic", "model"),
                                                        "refsafe": (True, False), "form": ("dual", "primal"),
                                                        "params": ("contactopt", "model")}

    def resolve_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        given = dict(options or {})
        merged = super().resolve_options(options)
        if merged["params"] == "model":
            own = sorted(set(given) - {"cone", "params", "form"})  # every other option is a constraint parameter
            if own:
                raise OptionError(f"formulation {self.name!r}: params=model takes every constraint parameter "
                                  f"from the model; remove {', '.join(map(repr, own))}")
            merged.setdefault("cone", "model")
            if "cone" not in given:
                merged["cone"] = "model"
            return merged
        if merged["cone"] == "model":
            raise OptionError(f"formulation {self.name!r}: cone='model' needs params=model")
        solref = None if merged["solref"] is None else _numbers(merged["solref"], 2, "solref", self.name)
        signs_agree = solref is None or (solref[0] > 0 and solref[1] > 0) or (solref[0] < 0 and solref[1] < 0)
        if not signs_agree:
            raise OptionError(f"formulation {self.name!r}: solref must be (timeconst > 0, dampratio > 0) "
                              f"or (-stiffness, -damping), got {merged['solref']!r}")
        solimp = _numbers(merged["solimp"], 5, "solimp", self.name)
        d0, dwidth, width, midpoint, power = solimp
        if not (0 < d0 < 1 and 0 < dwidth < 1 and width >= 0 and 0 < midpoint < 1 and power >= 1):
            raise OptionError(f"formulation {self.name!r}: solimp must satisfy 0 < d0, dwidth < 1, "
                              f"width >= 0, 0 < midpoint < 1, power >= 1; got {merged['solimp']!r}")
        for key in ("impratio", "b"):
            value = merged[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or value < 0 or (key == "impratio" and value == 0):
                raise OptionError(f"formulation {self.name!r}: {key} must be a finite number "
                                  f"{'> 0' if key == 'impratio' else '>= 0'}, got {value!r}")
        merged["solref"], merged["solimp"] = solref, solimp
        return merged

    def native_request(self, options: Mapping[str, Any]) -> dict[str, Any] | None:
        if options.get("params") != "model":
            return None
        return {"cone": None if options["cone"] == "model" else options["cone"]}

    def stage_tableau(self, system: System, options: Mapping[str, Any]) -> Tableau | None:
        """MuJoCo's RK4 on an RK4 model under ``params=model``: MuJoCo's own step, stage by stage."""
        if options.get("params") == "model" and system.native_integrator() == "RK4":
            return RK4
        return None

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        if options.get("params") == "model":
            if options["form"] == "primal":  # MuJoCo's own primal: contactopt.formulations.model_primal
                return model_primal_program(problem, self.name)
            return model_program(problem, self.name)
        if options["form"] == "primal":  # SAP-shaped primal: contactopt.formulations.regularized_primal
            from contactopt.formulations import regularized_primal

            return regularized_primal.build(problem, options, self.name)
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"])
        require_finite_mu(active, self.name)
        if active.angular is not None:  # torsional/rolling rows (condim 4, 6)
            return regularized_angular.build_dual(problem, options, active, self.name)
        h = problem.dt
        damped, v_minus = damped_dynamics(problem, options["b"])
        d = impedance(active.phi, options["solimp"])
        solref = options["solref"] if options["solref"] is not None else (2.0 * h, 1.0)
        b_ref, k_ref = reference_gains(solref, options["solimp"][1], d, h, options["refsafe"])
        if options["cone"] == "elliptic":
            J = active.J
            per = contacts.dim
            position = np.zeros((active.count, per))
            position[:, 0] = active.phi
            friction_row = np.tile(np.arange(per) > 0, active.count)
            A_rows, cones = friction_cone_rows(active)
        else:
            J, per = pyramid_edges(active)
            position = np.repeat(active.phi, per).reshape(active.count, per)
            friction_row = np.zeros(J.shape[0], dtype=bool)
            A_rows, cones = diagonal_csc(-np.ones(J.shape[0])), (Nonneg(J.shape[0]),)
        rows = J.shape[0]
        R, v_star, R_eq = soft_rows(problem, options, damped, J, per, d, b_ref, k_ref, position, friction_row)
        own_compliance_rows(problem, active, damped, J, per, options["cone"] == "elliptic", options["impratio"],
                            R, v_star)
        metadata = {"formulation": self.name, "cone": options["cone"], "dt": h, "t": problem.state.t,
                    "solref": list(solref),
                    "contacts": active.index.tolist(), "nv": problem.nv, "per": per,
                    "impedance": d.tolist(), "b": options["b"]}
        name = "impulse" if options["cone"] == "elliptic" else "impulse_edges"
        limit_terms, friction_terms = row_terms(problem, options, damped, v_minus, solref)
        return dual_program(problem, J, J @ v_minus - v_star, A_rows if rows else empty_csc(0, 0),
                            cones, (Block(name, 0, rows, per),), (Block("impulse_in_cone", 0, rows, per),),
                            metadata, dynamics=damped, v_free=v_minus, regularization=R,
                            bilateral_regularization=R_eq, epsilon=options["epsilon"],
                            limit_terms=limit_terms, friction_terms=friction_terms)

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, ConicProgram)
        if program.metadata.get("params") == "model":
            if program.metadata.get("form") == "primal":
                from contactopt.formulations import model_primal

                assert isinstance(program, PrimalConicProgram)
                return model_primal.recover(problem, program, solution)
            return model_recover(problem, program, solution)
        if program.metadata.get("form") == "primal":
            from contactopt.formulations import regularized_primal

            return regularized_primal.recover(problem, program, solution)
        if "angular_rows" in program.metadata:
            return regularized_angular.recover_dual(problem, program, solution)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        damped, v_minus = damped_dynamics(problem, program.metadata["b"])
        if program.metadata["cone"] == "elliptic":
            frame = program.variable(solution.x, "impulse").reshape(active.count, contacts.dim)
        else:
            per = program.metadata["per"]
            beta = program.variable(solution.x, "impulse_edges").reshape(active.count, per)
            frame = np.zeros((active.count, contacts.dim))
            frame[:, 0] = beta.sum(axis=1)
            if contacts.dim > 1:  # edges ordered (n + mu t_j, n - mu t_j) for each tangent j
                frame[:, 1:] = active.mu[:, None] * (beta[:, 0::2] - beta[:, 1::2])
        v_next, bilateral = dual_velocity(problem, program, solution.x, active.J, frame.reshape(-1),
                                          dynamics=damped, v_free=v_minus)
        limits, friction = row_impulses(problem, program, solution.x, None)
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame),
                          bilateral=bilateral, limits=limits, friction_loss=friction)


def _numbers(value: Any, count: int, key: str, formulation: str) -> tuple[float, ...]:
    try:
        numbers = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != count or not all(math.isfinite(x) for x in numbers):
        raise OptionError(f"formulation {formulation!r}: {key} must be {count} finite numbers, got {value!r}")
    return numbers

