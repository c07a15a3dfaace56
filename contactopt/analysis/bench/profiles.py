"""Tolerance profiles of ``contactopt bench`` and the backend options that ask for them
(the table is in :mod:`contactopt.analysis.bench`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contactopt.errors import OptionError
from contactopt.solvers import parse_name

__all__ = ["PROFILES", "Profile", "get_profile", "solver_options"]


@dataclass(frozen=True)
class Profile:
    """A named tolerance profile.

    Attributes:
        name: profile name.
        eps: the solver tolerance the backends are asked for, or None for their defaults.
        tolerance: the largest ``residuals.worst`` counted as a success.
        time_limit: seconds; slower solves fail, failures count at this time.
        description: one line.
    """

    name: str
    eps: float | None
    tolerance: float
    time_limit: float
    description: str


PROFILES: dict[str, Profile] = {
    profile.name: profile for profile in (
        Profile("default", None, 1e-6, 10.0, "backend defaults; success at residuals <= 1e-6"),
        Profile("high_accuracy", 1e-9, 1e-9, 10.0, "solver tolerances 1e-9; success at residuals <= 1e-9"),
        Profile("mid_accuracy", 1e-6, 1e-6, 10.0, "solver tolerances 1e-6; success at residuals <= 1e-6"),
        Profile("low_accuracy", 1e-3, 1e-3, 10.0, "solver tolerances 1e-3; success at residuals <= 1e-3"),
    )
}


def get_profile(name: str | Profile) -> Profile:
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name.strip().lower()]
    except KeyError:
        raise OptionError(f"unknown profile {name!r}; known profiles: {', '.join(PROFILES)}") from None


def _qpsolvers_options(inner: str, eps: float) -> dict[str, Any]:
    """Option names of qpsolvers' inner solvers for an absolute tolerance ``eps``."""
    gap = {"check_duality_gap": True, "eps_duality_gap_abs": eps, "eps_duality_gap_rel": 0.0}
    table: dict[str, dict[str, Any]] = {
        "clarabel": {"tol_feas": eps, "tol_gap_abs": eps, "tol_gap_rel": 0.0},
        "cvxopt": {"feastol": eps},
        "daqp": {"primal_tol": eps, "dual_tol": eps},
        "ecos": {"feastol": eps},
        "highs": {"primal_feasibility_tolerance": eps, "dual_feasibility_tolerance": eps},
        "osqp": {"eps_abs": eps, "eps_rel": 0.0},
        "piqp": {"eps_abs": eps, "eps_rel": 0.0, **gap},
        "proxqp": {"eps_abs": eps, "eps_rel": 0.0, **gap},
        "scs": {"eps_abs": eps, "eps_rel": 0.0},
    }
    return dict(table.get(inner, {}))  # quadprog and unknown solvers: their defaults


def _qpsolvers_time_limit(inner: str, limit: float) -> dict[str, Any]:
    names = {"highs": "time_limit", "osqp": "time_limit", "scs": "time_limit_secs"}
    return {names[inner]: limit} if inner in names else {}


def solver_options(solver: str, profile: str | Profile) -> dict[str, Any]:
    """The options that ask ``solver`` for ``profile``'s accuracy (and time limit).

    clarabel: ``tol_feas, tol_gap_abs = eps, tol_gap_rel = 0``; osqp: ``eps_abs = eps,
    eps_rel = 0``; pgs: ``tol = eps`` (pgs's own relative natural-map test); lemke and cvxpy:
    none (Lemke is exact pivoting; cvxpy's inner solvers name their tolerances differently);
    ``qpsolvers:INNER``: the inner solver's own names (proxqp/piqp ``eps_abs``, ``eps_rel = 0``
    and the duality-gap check; cvxopt/ecos ``feastol``; daqp ``primal_tol/dual_tol``; highs
    ``*_feasibility_tolerance``; osqp/scs ``eps_abs, eps_rel = 0``; quadprog none).
    """
    prof = get_profile(profile)
    base, variant = parse_name(solver)
    options: dict[str, Any] = {}
    if base == "clarabel":
        options["time_limit"] = prof.time_limit
        if prof.eps is not None:
            options.update(tol_feas=prof.eps, tol_gap_abs=prof.eps, tol_gap_rel=0.0)
    elif base == "osqp":
        options["time_limit"] = prof.time_limit
        if prof.eps is not None:
            options.update(eps_abs=prof.eps, eps_rel=0.0)
    elif base == "pgs":
        if prof.eps is not None:
            options["tol"] = prof.eps
    elif base == "qpsolvers":
        from contactopt.solvers.qpsolvers_ import default_variant

        inner = (variant or default_variant()).lower()
        options.update(_qpsolvers_time_limit(inner, prof.time_limit))
        if prof.eps is not None:
            options.update(_qpsolvers_options(inner, prof.eps))
    return options
