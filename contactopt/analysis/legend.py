"""What the columns of the printed tables mean: one line per column, printed under the table.

Every entry restates a definition made elsewhere, which it names: the run metrics of
:mod:`contactopt.analysis.metrics` (``run_metrics``), the observables of
:mod:`contactopt.analysis.observations`, the summary of ``contactopt run``
(:func:`contactopt.cli._summary_row`), the benchmark summary of
:mod:`contactopt.analysis.bench` (``display_summary``) and the columns of ``contactopt list``.
The compact tables of ``contactopt compare`` and ``run`` show some metrics under shorter
headers (:data:`COMPACT_HEADERS`); the legend gives both names, the long one being the
column of ``table.csv``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

__all__ = ["COMPACT_HEADERS", "DEFINITIONS", "fill", "legend", "wrapped"]

#: Column (as in the saved tables) -> its definition, unit first.
DEFINITIONS: dict[str, str] = {
    # the run and its solver
    "formulation": "the program posed each step (or the method: ode, compliant, hybrid, mujoco, ...)",
    "solver": "the solver that answered the steps, as the step records name it (qpsolvers:INNER: the "
              "QP solver qpsolvers ran; '-' or the integrator's name for a method that poses no program)",
    "dt": "time step [s]",
    "status": "completed: the run reached its duration; stopped: a step failed and the run ended there; "
              "error: the run raised or hit --cell-time-limit; refused: the solver cannot take the "
              "formulation's programs, decided before step 0 (no step run)",
    "steps": "steps recorded",
    "status_counts": "solver status of every step, most frequent first (optimal: converged to its "
                     "tolerance; inaccurate: stopped near it, answer used; the others gave no usable answer: "
                     "infeasible: the program has no solution; unbounded: its objective is unbounded below; "
                     "ray_termination: Lemke found no solution; max_iterations: the iteration limit came "
                     "first; numerical_error: the solver failed numerically or could not take the program)",
    "not\noptimal": "steps whose solver status was not optimal (each status: status_counts in table.csv, "
                   "or --wide)",
    # physics metrics (contactopt.analysis.metrics, run_metrics)
    "max_penetration": "[m] deepest penetration max(0, -phi) over the run (0: contacts never overlap)",
    "max_cone_violation": "[N·s] largest distance of a contact impulse outside the exact Coulomb cone "
                          "||r_t|| <= mu r_n (0: friction within the cone)",
    "max_ncp_desaxce": "[N·s] largest residual of Coulomb's law with Signorini's condition, "
                       "||r - P_K(r - û)|| with De Saxcé's û = u + mu||u_t|| n (0: exact Coulomb "
                       "contact; a relaxation that hydroplanes, like Anitescu's, is not 0 while sliding)",
    "max_signorini": "[J] largest normal complementarity product |r_n u_n|",
    "max_dissipation_violation": "[J] largest shortfall of friction from maximum dissipation",
    "max_fclib_natural_map": "FCLIB's normalized natural-map merit of the step (fclib_merit_local)",
    "max_abs_energy_balance": "[J] largest |E - E0 - energy friction and impacts dissipated - work of "
                              "actuators, dampers, applied forces, limits and dry friction| "
                              "(contactopt.analysis.energy; 0: every joule accounted for, to the step's own "
                              "error; positive contact work shows)",
    "max_constraint_error": "[m or m/s] largest bilateral-constraint violation (0 without joints "
                            "or loops closed by constraints)",
    "max_abs_energy_drift": "[J] largest |E - E0| (kinetic + potential)",
    "max_abs_linear_momentum_balance": "[kg m/s] largest |P - P0 - contact impulses| of the linear momentum "
                                       "the symmetry conserves (perpendicular to gravity; contactopt.analysis."
                                       "momentum; 0: the momentum law kept; NaN: no such symmetry declared)",
    "max_abs_angular_momentum_balance": "[kg m^2/s] largest |L - L0 - contact torque impulses| of the angular "
                                        "momentum about the vertical through the origin (rigid3d; "
                                        "contactopt.analysis.momentum)",
    "max_abs_linear_momentum_drift": "[kg m/s] largest |P - P0| of that linear momentum",
    "max_abs_angular_momentum_drift": "[kg m^2/s] largest |L - L0| of that angular momentum",
    "time_per_step": "[s] formulation build + solver setup + solve time per step (table.csv)",
    "ms/step": "formulation build + solver setup + solve time per step [ms] (time_per_step in table.csv, "
               "seconds)",
    "error": "what made the run fail",
    "dist_mujoco": "largest |q - q_mujoco| over the coordinates and the steps both runs recorded, against the "
                   "mujoco row of the same dt (MJCF and URDF scenes: mj_step on the model as written)",
    "dist_mujoco_t": "[s] when that distance first exceeds 1e-3 (blank: never)",
    "scene": "the scene's name", "method": "the formulation without its options",
    "duration": "[s] simulated time asked for",
    "solver_used": "the solver(s) the step records name (qpsolvers:INNER for qpsolvers)",
    "final_energy_balance": "[J] the energy balance at the end of the run",
    "final_energy_drift": "[J] E - E0 at the end of the run",
    "build_time_total": "[s] formulation build time of the run",
    "solve_time_total": "[s] solver setup + solve time of the run",
    "iterations_total": "solver iterations of the run (pivots for lemke, sweeps for pgs)",
    "iterations_mean": "solver iterations per step",
    "n_failed": "steps without a usable answer",
    "completed": "the run reached its duration",
    "wall_time": "[s] wall time of the run, metrics included",
    "message": "what the run said (why it stopped, an observable it could not measure)",
    "cached": "the row was loaded from the folder's stored cells (--resume), not computed",
    # contactopt run
    "t_final": "[s] time reached",
    "q_final": "configuration at t_final (first entries; trajectory.npz has all)",
    "min_phi": "[m] smallest contact separation recorded (< 0: penetration)",
    "max_normal_impulse": "[N·s] largest normal contact impulse of a step (force = impulse / dt)",
    "max_residual": "largest residual of a step's answer, computed by contactopt (primal, dual, gap, "
                    "complementarity)",
    "build_ms/step": "[ms] formulation build time per step",
    "solve_ms/step": "[ms] solver setup + solve time per step",
    # contactopt bench (contactopt.analysis.bench)
    "profile": "tolerance profile of the solves",
    "solved": "programs solved / programs: usable status and contactopt's residuals within the "
              "profile's tolerance and time limit",
    "success_rate": "solved / programs",
    "time_sgm_solved [s]": "shifted geometric mean (shift 10) of the time over the solved programs "
                           "((k/N): only k of N solved)",
    "time_score": "shifted geometric mean time with failures at the time limit, divided by the best "
                  "solver's (1 = best; qpbenchmark's ranking)",
    "median (IQR) [s]": "median time over the solved programs, and the interquartile range of those times",
    "residual_sgm": "shifted geometric mean of the worst residual (failures at the tolerance)",
    "unsupported": "programs the solver cannot take (counted as failures)",
}

#: Short headers of the compact tables -> the column of table.csv they show.
COMPACT_HEADERS: dict[str, str] = {
    "penetration\n[m]": "max_penetration",
    "cone viol.\n[N·s]": "max_cone_violation",
    "Coulomb\nres. [N·s]": "max_ncp_desaxce",
    "energy\nbal. [J]": "max_abs_energy_balance",
    "constraint\nerror": "max_constraint_error",
}


def _one_line(header: str) -> str:
    return header.replace("\n", " ")


def legend(columns: Iterable[str], width: int, *, title: str = "columns") -> str:
    """``title:`` and one wrapped line per column of ``columns`` that has a definition
    (compact headers say which saved column they show); empty when none has one."""
    lines: list[str] = []
    for column in dict.fromkeys(columns):
        name = COMPACT_HEADERS.get(column, column)
        text = DEFINITIONS.get(name)
        if text is None:
            continue
        shown = _one_line(column)
        label = shown if name == column else f"{shown} ({name})"
        if "[" in shown and text.startswith("["):  # the unit is in the header already
            text = text.split("] ", 1)[-1]
        lines.append(textwrap.fill(f"{label}: {text}", width=width, initial_indent="  ",
                                   subsequent_indent="      ", break_on_hyphens=False))
    return f"{title}:\n" + "\n".join(lines) if lines else ""


def fill(text: str, width: int) -> str:
    """One message wrapped to ``width``, its continuation lines indented by 2."""
    return textwrap.fill(text, width=width, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


def wrapped(items: Sequence[str], width: int, *, title: str) -> str:
    """``title:`` and one wrapped, indented line per item (footnotes under a table)."""
    if not items:
        return ""
    return f"{title}:\n" + "\n".join(textwrap.fill(item, width=width, initial_indent="  ", subsequent_indent="      ",
                                                   break_on_hyphens=False) for item in items)
