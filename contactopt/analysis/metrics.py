"""Physics and solver metrics of a :class:`~contactopt.records.trajectory.Trajectory`, per step and per run.

Notation (per step ``i``, from ``t[i]`` to ``t[i+1]``, step length ``h``; per contact ``c``):

* ``r_c = (r_n, r_t)`` the contact impulse of the record [N·s], normal first (``r_t`` has
  ``dim - 1`` entries: 2 in 3-D, 1 in 2-D, none for a normal-only contact);
* ``v'`` the next velocity ``traj.v[i+1]`` and ``J_c, phi_c`` the contact frame rows and the
  separation recomputed with ``scene.system.contacts(traj.q[i])`` (the configuration the step's
  program was built at);
* ``u_c = J_c v' + [phi_c / h, 0, 0]`` the **local velocity** [m/s]. The normal offset
  ``phi_c / h`` is the one every time-stepping program here uses (``phi/h + n v' >= 0``):
  ``h u_n`` is the linearized gap at the end of the step, so a contact resting at a small
  ``phi > 0`` is exact. ``u_t`` is the end-of-step sliding velocity;
* ``q_c = J_c v_free + [phi_c / h, 0, 0]`` the **free local velocity** (no contact impulse),
  ``v_free = v + h M^{-1} tau`` at ``(traj.q[i], traj.v[i])``: FCLIB's ``q`` in ``u = W r + q``;
* ``K_mu = {r : ||r_t|| <= mu r_n}`` the **exact** Coulomb cone (an interval
  ``|r_t| <= mu r_n`` in 2-D, the half-line ``r_n >= 0`` for a normal-only contact);
  ``mu = inf`` (sticking contact) makes it the half-space ``r_n >= 0``.

=========================  =======  ============================================================
column (step_metrics)      unit     definition (max over the step's contacts; 0 with none)
=========================  =======  ============================================================
``penetration``            m        ``max(0, -min_c phi_c)`` at the start of the step (record)
``signorini``              J        ``max_c |r_n u_n|``: normal complementarity product
``cone_violation``         N·s      ``max_c max(0, ||r_t|| - mu r_n, -r_n)`` (exact cone)
``dissipation_violation``  J        ``max_c max(0, r_t·u_t + mu r_n ||u_t||)`` (max. dissipation)
``ncp_desaxce``            N·s      ``max_c ||r - P_K(r - rho û)||``, ``û = u + [mu||u_t||, 0, 0]``
``fclib_natural_map``      (mixed)  ``sqrt(sum_c ||r - P_K(r - û)||^2) / (1 + sqrt(||q||_2))``
``energy``                 J        kinetic + potential at the start of the step
``energy_drift``           J        ``energy - energy(t = 0)``
``contact_work``           J        ``sum_c r_c·J_c (v + v')/2``: the impulses' work over the step
``dissipation``            J        its admissible part (friction, impact loss; <= 0)
``energy_balance``         J        ``energy - energy(0) - sum of dissipation`` and of the work
                                    of actuators, dampers, applied forces, limit and dry-friction
                                    rows so far (:mod:`contactopt.analysis.energy`: 0 for a
                                    correct run)
``constraint_error``       m, m/s   the record's bilateral-constraint violation
``build_time``             s        the record's formulation build time
``solve_time``             s        the record's setup + solve time
``iterations``             —        the record's solver iterations
=========================  =======  ============================================================

Metrics that need ``v'`` are NaN for a step without one (the failed last record of a run
that stopped early) and for a record whose contact count disagrees with the recomputed
contacts. :func:`run_metrics` aggregates a run (maxima ignore NaN; see its docstring).

Each metric's definition, units and source are in the "definitions" comment block below;
see also :func:`project_cone`, :func:`desaxce_residual`, :func:`step_metrics` and
:func:`run_metrics` (which lists the aggregates).
Sources: Acary, Brémond & Huber, "On solving contact problems with Coulomb friction:
formulations and numerical comparisons" (2018) for the De Saxcé-corrected natural map;
the FCLIB library (``fclib_merit_local``, ``src/fcmer.c``) for its normalized natural-map
merit; Le Lidec et al., "Contact models in robotics: a comparative analysis" (IEEE T-RO 2024)
for the Signorini, Coulomb-cone and maximum-dissipation criteria; Stewart & Trinkle (1996) for
the discrete maximum-dissipation principle.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contactopt.analysis.cones import RHO, desaxce_residual, project_cone
from contactopt.analysis.energy import balance as energy_balance
from contactopt.analysis.energy import impacts, knot_mean_velocity, step_applied_work
from contactopt.analysis.momentum import momentum_metrics
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["RHO", "STEP_COLUMNS", "desaxce_residual", "evaluate", "project_cone", "run_metrics", "step_metrics"]

#: Columns of :func:`step_metrics`, in order.
STEP_COLUMNS = (
    "step", "t", "status", "n_contacts", "penetration", "signorini", "cone_violation",
    "dissipation_violation", "ncp_desaxce", "fclib_natural_map", "energy", "energy_drift",
    "contact_work", "dissipation", "energy_balance", "constraint_error", "build_time", "solve_time", "iterations",
)

# --- definitions ---------------------------------------------------------------------------
#
# penetration [m]: ``max(0, -min_c phi_c)`` with ``phi`` the record's separations at the start
#   of the step (0 without contacts). Rigid contact requires ``phi >= 0`` (Signorini's
#   position-level condition); every formulation here enforces it only through the
#   linearized ``phi/h + n v' >= 0``, so curvature, soft (regularized) contact and solver
#   tolerance show up here. Source: the unilateral condition as in Le Lidec et al. (2024).
#
# signorini [J = N·s · m/s]: ``max_c |r_n u_n|`` with ``u_n = phi/h + n v'``. Signorini's
#   velocity-level complementarity ``0 <= r_n ⟂ u_n >= 0`` holds iff the product is 0 (the
#   signs are checked by cone_violation and penetration). The product is the work the normal
#   impulse does across the end-of-step gap rate; Anitescu's relaxation "hydroplanes" at a
#   sliding contact with ``u_n = mu |u_t|`` (a gap ``h mu |u_t|``), so it reads
#   ``r_n mu |u_t|`` there. Source: Le Lidec et al. (2024), Signorini criterion.
#
# cone_violation [N·s]: ``max_c max(0, ||r_t|| - mu r_n, -r_n)``, measured against the EXACT
#   Coulomb cone. Polyhedral cones built as the hull of k edges (the Stewart-Trinkle LCP,
#   Anitescu, MuJoCo's pyramidal cone) lie inside it and never trigger this metric; box-shaped
#   approximations (``|r_ti| <= mu r_n`` per tangent direction) may legitimately exceed it in
#   their corners, by up to ``(sqrt(2) - 1) mu r_n``, and this metric reports that. The ``-r_n``
#   term catches a pulling normal impulse (the only term when mu = inf, where the cone is the
#   half-space ``r_n >= 0``: 0 for any non-negative normal impulse, i.e. 0 by definition for a
#   valid answer). Source: Coulomb's law, Le Lidec et al. (2024).
#
# dissipation_violation [J]: ``max_c max(0, r_t·u_t + mu r_n ||u_t||)``. The maximum-
#   dissipation principle (discrete form of Stewart & Trinkle 1996, Le Lidec et al. 2024):
#   ``r_t`` minimizes ``r_t·u_t`` over ``||r_t|| <= mu r_n``, whose minimum is
#   ``-mu r_n ||u_t||`` (friction opposing the slip at full strength). For ``r`` in the cone
#   the quantity is >= 0 and 0 exactly at the principle: sticking contacts (``u_t = 0``) give 0,
#   a sliding contact with weak or misdirected friction gives the energy per step that
#   friction fails to dissipate. (Values below 0 mean ``r`` left the cone, reported by
#   cone_violation, and are clipped.) Measured with the exact cone: a k = 4 polyhedral cone
#   sliding along one of its directions is exact, sliding diagonally at 45 degrees it can
#   dissipate only ``mu r_n ||u_t|| / sqrt(2)`` and reads ``(1 - 1/sqrt(2)) mu r_n ||u_t||``.
#   mu = inf: 0 by definition (any tangential impulse is admissible).
#
# ncp_desaxce [N·s]: ``max_c ||r_c - P_K(r_c - rho û_c)||`` with De Saxcé's modified velocity
#   ``û = u + [mu ||u_t||, 0, 0]`` and ``rho = RHO = 1 kg``. Coulomb's law with Signorini's
#   condition is the cone complementarity ``K ∋ r ⟂ û ∈ K*`` (De Saxcé & Feng 1991), and
#   ``r = P_K(r - rho û)`` (the natural map of Acary, Brémond & Huber 2018) is equivalent
#   for any rho > 0. Without the correction, the same map is the CCP/Anitescu relaxation's
#   optimality condition: the correction is what exposes hydroplaning. mu = inf: K is the
#   half-space ``r_n >= 0``, K* the ray ``{u_t = 0, u_n >= 0}`` and the correction is dropped,
#   giving ``||(min(r_n, u_n), u_t)||``. A normal-only contact gives ``|min(r_n, u_n)|``.
#
# fclib_natural_map [mixed units, as FCLIB computes it]: FCLIB's ``fclib_merit_local``
#   (MERIT_1, ``src/fcmer.c``) for the local problem ``u = W r + q``:
#   ``sqrt(sum_c ||r_c - P_K(r_c - û_c)||^2) / (1 + sqrt(||q||_2))`` with rho = 1, the sum over
#   every contact of the step, and ``q`` the free local velocity stacked over the contacts
#   (FCLIB divides by ``1 + sqrt(||q||)``, not ``1 + ||q||``; we reproduce its code). FCLIB adds
#   an equality residual ``||V^T r + R l + s|| / (1 + ||s||)`` for bilateral rows; here those are
#   reported separately as constraint_error. FCLIB defines the merit in 3-D only; planar and
#   normal-only contacts use the same formula with their cones.
#
# energy, energy_drift [J]: ``sum(scene.system.energy(q, v))`` (kinetic + potential; a constant
#   push counts as a potential where the system says so) at the start of the step, and its
#   change since ``t = 0``. Time stepping with inelastic contact dissipates; a gain is a bug or
#   an artefact (e.g. Anitescu's gap lifting the body).
#
# constraint_error [m or m/s]: the record's ``max |h(q)|`` over position rows and
#   ``|H v - b|`` over velocity rows at the start of the step (bilateral-constraint drift).
#
# build_time, solve_time [s], iterations: the record's formulation build time, solver setup +
#   solve time, and solver iterations (pivots for Lemke, sweeps for PGS).


@dataclass(frozen=True)
class _ContactData:
    """Every contact of every step with a next velocity, stacked (contact-major per step)."""

    step: IntArray  # (m,) index of the step each row belongs to
    r: FloatArray  # (m, 3) impulses, normal first, zero-padded to 3 columns
    u: FloatArray  # (m, 3) local velocities
    u_mid: FloatArray  # (m, 3) J (v + v') / 2, the velocity the impulse works at (energy balance)
    mu: FloatArray  # (m,)
    evaluated: NDArray[np.bool_]  # (n,) steps whose v'-based metrics are defined
    q_norm: FloatArray  # (n,) ||q||_2 of the free local velocity (FCLIB normalization)
    energy: FloatArray  # (n + 1,) or fewer: energy of every state of the trajectory
    r_work: FloatArray  # (m, 3) the impulses less the recorded impacts' (those work at v̄: energy balance)
    impact_work: FloatArray  # (n, 2) per step: the impacts' work and its admissible part (energy.impacts)
    applied_work: FloatArray  # (n,) per step: the work of the forces the energy does not hold (energy.applied_work)


def _step_length(scene: Scene, traj: Trajectory) -> float:
    dt = traj.dt
    return dt if math.isfinite(dt) and dt > 0 else float(scene.dt)


def _pad(a: FloatArray, dim: int) -> FloatArray:
    out = np.zeros((a.shape[0], 3))
    out[:, :dim] = a
    return out


def _gather(scene: Scene, traj: Trajectory) -> _ContactData:
    system = scene.system
    h = _step_length(scene, traj)
    n = len(traj.steps)
    n_states = min(traj.q.shape[0], traj.v.shape[0])
    energy = np.array([sum(system.energy(traj.q[j], traj.v[j])) for j in range(n_states)], dtype=np.float64)
    evaluated = np.zeros(n, dtype=bool)
    q_norm = np.full(n, np.nan)
    steps: list[IntArray] = []
    rs: list[FloatArray] = []
    us: list[FloatArray] = []
    mids: list[FloatArray] = []
    mus: list[FloatArray] = []
    works: list[FloatArray] = []
    impact_work = np.zeros((n, 2))
    applied_work = np.zeros(n)
    held = system.control
    knot = traj.info.get("formulation") == "variational"
    for i, record in enumerate(traj.steps):
        if i + 1 >= n_states:
            continue  # no v': the failed last record of a run that stopped
        nc = record.phi.shape[0]
        q, v, v_next = traj.q[i], traj.v[i], traj.v[i + 1]
        applied_work[i] = step_applied_work(system, record, q, v, v_next, h)
        if nc == 0:
            evaluated[i], q_norm[i] = True, 0.0
            continue
        contacts = system.contacts(q)
        dim = contacts.dim
        if contacts.count != nc or record.impulses.shape != (nc, dim) or not np.all(np.isfinite(record.impulses)):
            continue
        dynamics = system.dynamics(q, v)
        v_free = v + h * dynamics.solve_M(dynamics.tau)
        offset = np.zeros((nc, dim))
        offset[:, 0] = contacts.phi / h
        u = (contacts.J @ v_next).reshape(nc, dim) + offset
        q_local = (contacts.J @ v_free).reshape(nc, dim) + offset
        evaluated[i], q_norm[i] = True, float(np.linalg.norm(q_local))
        steps.append(np.full(nc, i, dtype=np.int_))
        rs.append(_pad(record.impulses, dim))
        us.append(_pad(u, dim))
        mean = knot_mean_velocity(dynamics.solve_M, contacts.J, record.impulses, v) if knot \
            else 0.5 * (v + v_next)  # a variational step's impulse works at its knot (energy's doc)
        mids.append(_pad((contacts.J @ mean).reshape(nc, dim), dim))
        mus.append(np.asarray(contacts.mu, dtype=np.float64))
        rest, impact_work[i] = impacts(record, dynamics.M)
        works.append(_pad(rest, dim))
    system.set_control(held)
    if steps:
        return _ContactData(np.concatenate(steps), np.vstack(rs), np.vstack(us), np.vstack(mids),
                            np.concatenate(mus), evaluated, q_norm, energy, np.vstack(works), impact_work,
                            applied_work)
    empty = np.zeros((0, 3))
    return _ContactData(np.zeros(0, dtype=np.int_), empty, empty.copy(), empty.copy(), np.zeros(0), evaluated,
                        q_norm, energy, empty.copy(), impact_work, applied_work)


def _per_contact(data: _ContactData) -> dict[str, FloatArray]:
    """The contact-level quantities of the module's definitions, one value per row."""
    r, u, mu = data.r, data.u, data.mu
    rn, rt = r[:, 0], r[:, 1:]
    un, ut = u[:, 0], u[:, 1:]
    rt_norm = np.linalg.norm(rt, axis=1)
    ut_norm = np.linalg.norm(ut, axis=1)
    finite = np.isfinite(mu)
    mu_f = np.where(finite, mu, 0.0)
    cone = np.maximum.reduce([np.zeros_like(rn), np.where(finite, rt_norm - mu_f * rn, 0.0), -rn])
    dissipation = np.where(finite, np.maximum(0.0, np.einsum("ij,ij->i", rt, ut) + mu_f * rn * ut_norm), 0.0)
    natural = np.linalg.norm(desaxce_residual(r, u, mu), axis=1)
    return {"signorini": np.abs(rn * un), "cone_violation": cone,
            "dissipation_violation": dissipation, "ncp_desaxce": natural}


def _reduce_max(n: int, index: IntArray, values: FloatArray, evaluated: NDArray[np.bool_]) -> FloatArray:
    out = np.zeros(n)
    np.maximum.at(out, index, values)
    out[~evaluated] = np.nan
    return out + 0.0  # -0.0 (e.g. from -r_n with r_n = 0) reads as 0


def step_metrics(scene: Scene, traj: Trajectory) -> pd.DataFrame:
    """One row per :class:`~contactopt.records.trajectory.StepRecord` of ``traj`` (columns
    :data:`STEP_COLUMNS`; definitions, units and sources in the module docstring).

    Step ``i`` uses its record (``phi``, impulses, status, times, iterations,
    constraint_error), the state ``(traj.q[i], traj.v[i])`` (contacts and ``v_free``
    recomputed with ``scene.system``; the energy) and the next velocity ``traj.v[i+1]``, which
    is the program's ``v'`` unless the drift treatment projected it. The step length is the
    run's ``traj.info["dt"]`` (``scene.dt`` if absent). Metrics needing ``v'`` are NaN where it
    is missing (the failed last record) or the record's contact count disagrees with the
    system's.
    """
    return _step_table(scene, traj)[0]


def _step_table(scene: Scene, traj: Trajectory) -> tuple[pd.DataFrame, _ContactData]:
    n = len(traj.steps)
    data = _gather(scene, traj)
    columns: dict[str, object] = {
        "step": np.arange(n, dtype=np.int_),
        "t": np.array([record.t for record in traj.steps], dtype=np.float64),
        "status": [str(record.status) for record in traj.steps],
        "n_contacts": np.array([record.phi.shape[0] for record in traj.steps], dtype=np.int_),
        "penetration": np.array([max(0.0, -float(record.phi.min())) if record.phi.size else 0.0
                                 for record in traj.steps], dtype=np.float64),
    }
    for name, values in _per_contact(data).items():
        columns[name] = _reduce_max(n, data.step, values, data.evaluated)
    # FCLIB: squared natural-map residuals (rho = 1) summed over the step's contacts.
    residual = desaxce_residual(data.r, data.u, data.mu, rho=1.0)
    sums = np.zeros(n)
    np.add.at(sums, data.step, np.einsum("ij,ij->i", residual, residual))
    fclib = np.sqrt(sums) / (1.0 + np.sqrt(data.q_norm))
    fclib[~data.evaluated] = np.nan
    columns["fclib_natural_map"] = fclib
    energy = np.full(n, np.nan)
    known = min(n, data.energy.shape[0])
    energy[:known] = data.energy[:known]
    columns["energy"] = energy
    columns["energy_drift"] = energy - (data.energy[0] if data.energy.size else np.nan)
    work, dissipated, balance = energy_balance(data.energy, n, data.step, data.r_work, data.u_mid, data.evaluated,
                                               data.impact_work, data.applied_work)
    columns["contact_work"], columns["dissipation"] = work, dissipated
    balance_at_start = np.full(n, np.nan)
    balance_at_start[:known] = balance[:known]
    columns["energy_balance"] = balance_at_start
    columns["constraint_error"] = np.array([record.constraint_error for record in traj.steps], dtype=np.float64)
    columns["build_time"] = np.array([record.build_time for record in traj.steps], dtype=np.float64)
    columns["solve_time"] = np.array([record.setup_time + record.solve_time for record in traj.steps],
                                     dtype=np.float64)
    columns["iterations"] = np.array([record.iterations for record in traj.steps], dtype=np.int_)
    return pd.DataFrame({name: columns[name] for name in STEP_COLUMNS}), data


def _nanmax(values: FloatArray) -> float:
    """Largest value ignoring NaN; 0 for no values, NaN if every value is NaN."""
    if values.size == 0:
        return 0.0
    if np.all(np.isnan(values)):
        return math.nan
    return float(np.nanmax(values))


def run_metrics(scene: Scene, traj: Trajectory) -> dict[str, float | int | str]:
    """Aggregates of :func:`step_metrics` over a run.

    * ``max_penetration``: the largest penetration at the start of any step and at the final
      state (contacts recomputed there) [m];
    * ``max_signorini``, ``max_cone_violation``, ``max_dissipation_violation``,
      ``max_ncp_desaxce``, ``max_fclib_natural_map``: maxima over the steps, ignoring steps
      where they are undefined (NaN only if undefined everywhere; 0 for a run without steps);
    * ``max_abs_energy_balance``, ``final_energy_balance``: the energy balance
      (:mod:`contactopt.analysis.energy`) over every state, final state included [J];
    * ``max_abs_energy_drift``, ``final_energy_drift``: over every state of the trajectory,
      final state included [J];
    * ``max_constraint_error``: over the records and the final state;
    * ``build_time_total``, ``solve_time_total`` (setup + solve) [s]; ``time_per_step``:
      (build + setup + solve) / steps [s];
    * ``iterations_total``, ``iterations_mean`` (per step); ``steps``: number of records;
    * ``status_counts``: e.g. ``"optimal:400,inaccurate:2"`` (most frequent first);
    * ``n_failed``: records whose status is not usable (no answer); ``completed``: the run
      reached its duration;
    * ``max_abs_linear_momentum_balance``, ``max_abs_angular_momentum_balance`` and their
      ``_drift``: the momenta the scene's symmetry conserves (:mod:`contactopt.analysis.momentum`).
    """
    return evaluate(scene, traj)[1]


def evaluate(scene: Scene, traj: Trajectory) -> tuple[pd.DataFrame, dict[str, float | int | str]]:
    """``(step_metrics(scene, traj), run_metrics(scene, traj))`` computed once (the per-step
    contact evaluation is the costly part; calling both functions does it twice)."""
    table, data = _step_table(scene, traj)
    return table, _aggregate(scene, traj, table, data)


def _aggregate(scene: Scene, traj: Trajectory, table: pd.DataFrame,
               data: _ContactData) -> dict[str, float | int | str]:
    system = scene.system
    steps = len(traj.steps)
    final_q, final_v = traj.q[-1], traj.v[-1]
    final_contacts = system.contacts(final_q)
    final_penetration = max(0.0, -float(final_contacts.phi.min())) if final_contacts.count else 0.0
    final_t = float(traj.t[-1]) if traj.t.size else 0.0
    final_constraint = system.constraints(final_q, final_v, final_t).violation(final_v)
    drift = data.energy - data.energy[0] if data.energy.size else np.zeros(0)
    balance = energy_balance(data.energy, steps, data.step, data.r_work, data.u_mid, data.evaluated,
                             data.impact_work, data.applied_work)[2]
    build = float(table["build_time"].sum())
    solve = float(table["solve_time"].sum())
    iterations = int(table["iterations"].sum())
    counts = Counter(str(record.status) for record in traj.steps)
    result: dict[str, float | int | str] = {
        "max_penetration": max(_nanmax(table["penetration"].to_numpy(dtype=np.float64)), final_penetration),
    }
    for name in ("signorini", "cone_violation", "dissipation_violation", "ncp_desaxce", "fclib_natural_map"):
        result[f"max_{name}"] = _nanmax(table[name].to_numpy(dtype=np.float64))
    result.update({
        "max_abs_energy_balance": _nanmax(np.abs(balance)) if balance.size else 0.0,
        "final_energy_balance": float(balance[-1]) if balance.size else 0.0,
        "max_abs_energy_drift": float(np.abs(drift).max()) if drift.size else 0.0,
        "final_energy_drift": float(drift[-1]) if drift.size else 0.0,
        "max_constraint_error": max(_nanmax(table["constraint_error"].to_numpy(dtype=np.float64)),
                                    float(final_constraint)),
        "build_time_total": build,
        "solve_time_total": solve,
        "time_per_step": (build + solve) / steps if steps else math.nan,
        "iterations_total": iterations,
        "iterations_mean": iterations / steps if steps else math.nan,
        "steps": steps,
        "status_counts": ",".join(f"{name}:{count}" for name, count in counts.most_common()),
        "n_failed": sum(1 for record in traj.steps if not record.status.usable),
        "completed": traj.completed,
    })
    result.update(momentum_metrics(scene, traj))  # the conserved momenta (contactopt.analysis.momentum)
    return result
