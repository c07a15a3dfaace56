"""Why a cell of a comparison is ``OFF`` (outside the observable's tolerance) or ``n/a`` (not
measured), and why a run did not complete: the notes printed under ``contactopt compare``'s
and ``run``'s tables and written in the report's findings.

A cause is read from the row itself where the row holds it (a failed run's error, an
observable the run could not measure and said why in ``message``, a run whose solver steps
were not optimal), and otherwise from what the method is known to change from rigid Coulomb
contact (:data:`CAVEATS`, each with its source). ``n/a`` of an observable whose event never
happened names the event (:data:`MISSING`: a body that never came to rest in the simulated
time, a bounce without the apex asked for).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["CAVEATS", "MISSING", "STATUS_MEANINGS", "cell_notes", "not_optimal", "run_notes", "shown_solver",
           "status_meaning"]

_HYDROPLANING = ("Anitescu's convex relaxation (Anitescu 2006; ccp with the exact cone) lets a sliding contact "
                 "separate at the rate mu |u_t| (hydroplaning): the body hovers and part of the friction work "
                 "lifts it instead of being dissipated")

#: Per method: what it changes from rigid Coulomb contact, the usual cause of an ``OFF`` cell.
CAVEATS: dict[str, str] = {
    "gauss": "gauss is frictionless by construction (Gauss's principle of least constraint with the "
             "normal rows only: mu is ignored), so nothing slows a slide",
    "lcp": "the Stewart-Trinkle LCP replaces the friction cone by a pyramid of k directions (Stewart & "
           "Trinkle 1996): friction is exact along those directions only",
    "anitescu": _HYDROPLANING,
    "ccp": _HYDROPLANING,
    "regularized": "regularized (soft) constraints as MuJoCo's (Todorov 2014; solref, solimp) on a convex "
                   "model like Anitescu's: contacts penetrate, friction creeps (a slide ends late, a resting "
                   "body sinks slightly) and a sliding contact separates slightly (the body hovers)",
    "mujoco": "MuJoCo's constraints are soft (by default solref = 0.02 s and solimp 0.9-0.95, the model's "
              "own where it sets them), friction regularized like the normal (impratio = 1 by default), on a "
              "convex model like Anitescu's: a sliding body creeps before it rests (it stops late), contacts "
              "penetrate slightly, and a sliding contact separates slightly",
    "sap": "SAP (Castro et al. 2022) is a convex, compliant approximation of contact: near-rigid "
           "regularization and Anitescu-like gliding at sliding contacts",
    "compliant": "compliant contact: the spring-damper penetrates about m g / k at rest and regularized "
                 "friction creeps below its stiction speed",
}

#: Observables of a body coming to rest, and the methods whose model keeps it from resting on
#: time (frictionless, or friction that creeps): their n/a names the method's caveat too.
STOP_KINDS = ("stop_time", "stop_distance")
SLOW_TO_STOP = ("gauss", "regularized", "mujoco", "compliant", "sap")

#: Per observable kind: the event a NaN value means did not happen.
MISSING: dict[str, str] = {
    "stop_time": "never came to rest (every velocity within the threshold) in the {T:g} s simulated",
    "stop_distance": "never came to rest (every velocity within the threshold) in the {T:g} s simulated",
    "apex_height": "the coordinate did not reach the apex asked for (too few local maxima) in {T:g} s",
    "apex_ratio": "the coordinate did not reach the two apexes asked for in {T:g} s",
    "period": "fewer than two local maxima of the coordinate in {T:g} s",
    "contact_time": "no contact impulse in the {T:g} s simulated",
}


#: Per solver status (:class:`contactopt.programs.Status`) other than ``optimal``: what it says
#: about a step, for the notes on a run with such steps. Only ``inaccurate`` steps were used
#: (an answer meant as one); a step with any other status has no usable answer, so the run
#: stopped there unless a ``fallback`` solver answered it.
STATUS_MEANINGS: dict[str, str] = {
    "inaccurate": "the solver stopped near its tolerance and the step used that answer; the metrics show "
                  "what it cost",
    "infeasible": "the solver certified that the step's program has no solution (its rows cannot all hold: "
                  "e.g. bilateral constraints, limits or a prescribed motion that contradict each other)",
    "unbounded": "the solver certified that the step's objective is unbounded below (a direction that no row "
                 "restrains and the objective does not curve, e.g. a singular mass matrix along a free "
                 "direction)",
    "ray_termination": "Lemke's pivoting ended on a secondary ray: no solution of the LCP was found (it may "
                       "have none, or the pivots lost precision)",
    "max_iterations": "the solver used up its iteration limit before reaching its tolerance (a larger "
                      "max_iter, a looser tolerance or another solver may answer)",
    "numerical_error": "the solver failed numerically (a factorization broke down, a non-finite iterate) or "
                       "could not take the step's program (its message says which)",
}


def status_meaning(status: str) -> str:
    """What a step with this solver status means (:data:`STATUS_MEANINGS`); a status not
    listed there (a plugin solver's) is said as itself."""
    return STATUS_MEANINGS.get(status, f"the solver ended with status {status!r}")


def shown_solver(row: Mapping[str, Any]) -> str:
    """The solver of a row as printed: the cell's solver, or what the step records name when
    they say more (``qpsolvers`` -> ``qpsolvers:proxqp``: ``solver_used``); ``-`` for a method
    that takes no solver (``compliant``, ``mujoco``, ...)."""
    solver = str(row.get("solver", ""))
    used = row.get("solver_used")
    if solver == "-" or not isinstance(used, str) or not used:
        return solver
    specific = [name for name in used.split("+") if name.startswith(f"{solver}:")]  # a step without
    return "+".join(dict.fromkeys(specific)) or solver  # contacts may record the bare name


def _first_line(text: Any, limit: int = 160) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _method(row: Mapping[str, Any]) -> str:
    return str(row.get("method") or str(row.get("formulation", "")).split(":")[0])


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


def not_optimal(row: Mapping[str, Any]) -> str:
    """``"196 inaccurate"`` from ``status_counts`` (empty when every step was optimal)."""
    return ", ".join(f"{count} {name}" for name, count in _not_optimal_counts(row))


def _not_optimal_counts(row: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``[("inaccurate", 196), ...]`` from ``status_counts``: the statuses other than optimal."""
    counts = []
    for item in str(row.get("status_counts") or "").split(","):
        name, _, count = item.strip().partition(":")
        if name and name != "optimal" and count.isdigit():
            counts.append((name, int(count)))
    return counts


def _missing_cause(row: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    name = str(meta["name"])
    if row.get("status") == "refused":
        return f"the run was refused before step 0: {_first_line(row.get('message'), 240)}"
    if row.get("status") == "error":
        return f"the run failed: {_first_line(row.get('error'))}"
    said = [part.strip() for part in str(row.get("message") or "").split(";")
            if part.strip().startswith(f"observable {name}:")]
    if said:
        return _first_line(said[0].split(":", 1)[1])
    kind = str(meta.get("kind", ""))
    cause = MISSING.get(kind, "the run does not show what it measures").format(T=_finite(row.get("duration")))
    caveat = CAVEATS.get(_method(row))  # when the method is why a body does not come to rest
    return f"{cause}: {caveat}" if caveat and kind in STOP_KINDS and _method(row) in SLOW_TO_STOP else cause


def _off_cause(row: Mapping[str, Any]) -> str:
    """The method's known deviation, else steps the solver did not solve to its tolerance, else
    a pointer to the findings (which say by how much)."""
    caveat = CAVEATS.get(_method(row))
    if caveat:
        return caveat
    failing = not_optimal(row)
    if failing:
        return f"steps not solved to the solver's tolerance: {failing}"
    return "the run differs from the reference by more than the tolerance (the report's findings give by how much)"


def _labels(rows: Sequence[tuple[str, str]], table: pd.DataFrame) -> str:
    """``anitescu (every solver), lcp/lemke``: rows grouped by formulation."""
    solvers_of: dict[str, set[str]] = {}
    for formulation, solver in table[["formulation", "solver"]].astype(str).itertuples(index=False):
        solvers_of.setdefault(formulation, set()).add(solver)
    picked: dict[str, list[str]] = {}
    for formulation, solver in rows:
        picked.setdefault(formulation, [])
        if solver not in picked[formulation]:
            picked[formulation].append(solver)
    parts = []
    for formulation, solvers in picked.items():
        if set(solvers) == solvers_of.get(formulation, set()) and len(solvers) > 1:
            parts.append(f"{formulation} (every solver)")
        else:
            parts += [formulation if solver in ("-", "") else f"{formulation}/{solver}" for solver in solvers]
    return ", ".join(parts)


def cell_notes(table: pd.DataFrame, meta: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """One line per cause of ``OFF`` and ``n/a`` cells of the observables: which observables,
    which runs, and why. ``meta`` defaults to ``table.attrs["observables"]``."""
    found = [m for m in (meta if meta is not None else table.attrs.get("observables", [])) if m["name"] in table]
    groups: dict[tuple[str, str], tuple[list[str], list[tuple[str, str]]]] = {}
    for _, row in table.iterrows():
        record = row.to_dict()
        for m in found:
            name = str(m["name"])
            value, error = _finite(record.get(name)), _finite(record.get(f"{name}_err"))
            if math.isnan(value):
                key = ("n/a", _missing_cause(record, m))
            elif not math.isnan(error) and abs(error) > float(m["tolerance"]):
                key = ("OFF", _off_cause(record))
            else:
                continue
            names, rows = groups.setdefault(key, ([], []))
            if name not in names:
                names.append(name)
            label = (str(record["formulation"]), str(record["solver"]))
            if label not in rows:
                rows.append(label)
    return [f"{mark} {', '.join(names)} of {_labels(rows, table)}: {cause}."
            for (mark, cause), (names, rows) in sorted(groups.items(), key=lambda item: item[0][0] != "n/a")]


def run_notes(table: pd.DataFrame) -> list[str]:
    """One line per run that did not complete (stopped or error: what happened) and per run
    with steps not solved to the solver's tolerance."""
    lines = []
    refused: dict[str, dict[str, str]] = {}  # formulation -> solver -> why (one per pair, whatever the dt)
    for _, row in table.iterrows():
        record = row.to_dict()
        label = str(record["formulation"]) + ("" if str(record.get("solver")) in ("-", "") else
                                              f"/{shown_solver(record)}")
        status = str(record.get("status", ""))
        if status == "refused":
            refused.setdefault(str(record["formulation"]), {}).setdefault(
                shown_solver(record), _first_line(record.get("message"), 240))
            continue
        if "dt" in record and table["dt"].nunique() > 1:
            label += f" dt={float(record['dt']):g}"
        if status == "error":
            lines.append(f"{label}: error: {_first_line(record.get('error'))}")
        elif status == "stopped":
            lines.append(f"{label}: stopped: {_first_line(record.get('message'))}")
        counts = _not_optimal_counts(record)
        if counts and status != "error":
            said = "; ".join(f"{name}: {status_meaning(name)}" for name, _ in counts)
            lines.append(f"{label}: steps not optimal: {not_optimal(record)} ({said})")
    return lines + _refused_lines(refused)


#: A formulation refused with more solvers than this gets one line for all of them.
REFUSED_PER_PAIR = 3


def _refused_lines(refused: dict[str, dict[str, str]]) -> list[str]:
    """The pairs refused before step 0: a line each, or one line per formulation naming its
    solvers (and the first one's reason) when it has more than :data:`REFUSED_PER_PAIR`."""
    lines = []
    for formulation, why in refused.items():
        if len(why) <= REFUSED_PER_PAIR:
            lines += [f"{formulation}/{solver}: refused before step 0, no step run: {reason}"
                      for solver, reason in why.items()]
            continue
        first, reason = next(iter(why.items()))
        lines.append(f"{formulation}: refused before step 0 with {len(why)} solvers that cannot take its programs "
                     f"({', '.join(why)}), no step run; {first}: {reason}")
    return lines
