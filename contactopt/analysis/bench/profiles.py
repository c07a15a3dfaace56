"""Tolerance profiles of ``contactopt bench`` and the backend options that ask for them
(the table is in :mod:`contactopt.analysis.bench`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contactopt.core.errors import OptionError
from contactopt.solvers import parse_name, spec
from contactopt.solvers.base import Tolerance

__all__ = ["INNER_TOLERANCES", "PROFILES", "Profile", "declared", "get_profile", "solver_options"]


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


#: Inner solvers of cvxpy and qpsolvers: their tolerance options and defaults. Where cvxpy and
#: the library differ (OSQP: cvxpy sets 1e-5, the library 1e-3) the smaller one is listed, so
#: that ``min(eps, default)`` is never looser than either route's default; an unsure default
#: errs the same way (smaller), which can only tighten the solve.
INNER_TOLERANCES: dict[str, tuple[Tolerance, ...]] = {
    "clarabel": (Tolerance("tol_feas", 1e-8), Tolerance("tol_gap_abs", 1e-8), Tolerance("tol_gap_rel", 1e-8, True)),
    "cvxopt": (Tolerance("feastol", 1e-7), Tolerance("abstol", 1e-7), Tolerance("reltol", 1e-6, True)),
    "daqp": (Tolerance("primal_tol", 1e-6), Tolerance("dual_tol", 1e-12)),
    "ecos": (Tolerance("feastol", 1e-8), Tolerance("abstol", 1e-8), Tolerance("reltol", 1e-8)),  # reltol > 0
    "highs": (Tolerance("primal_feasibility_tolerance", 1e-7), Tolerance("dual_feasibility_tolerance", 1e-7)),
    "osqp": (Tolerance("eps_abs", 1e-5), Tolerance("eps_rel", 1e-5, True)),
    "piqp": (Tolerance("eps_abs", 1e-8), Tolerance("eps_rel", 1e-9, True)),
    "proxqp": (Tolerance("eps_abs", 1e-8), Tolerance("eps_rel", 0.0, True)),
    "scs": (Tolerance("eps_abs", 1e-5), Tolerance("eps_rel", 1e-5, True)),
}
#: Their time-limit options (seconds).
INNER_TIME_LIMITS = {"clarabel": "time_limit", "highs": "time_limit", "osqp": "time_limit", "scs": "time_limit_secs"}


def _asked(tolerances: tuple[Tolerance, ...], eps: float) -> dict[str, Any]:
    """Each tolerance at ``min(eps, default)`` (relative ones at 0): never looser than the default."""
    return {t.option: 0.0 if t.relative else min(eps, t.default) for t in tolerances}


def _qpsolvers_inner(variant: str | None) -> str:
    from contactopt.solvers.backends.qpsolvers import default_variant

    return (variant or default_variant()).lower()


def declared(solver: str) -> tuple[tuple[Tolerance, ...], str | None]:
    """How ``solver`` takes tolerances and a time limit: its spec's declaration, or for
    ``cvxpy:INNER`` / ``qpsolvers:INNER`` the inner solver's (:data:`INNER_TOLERANCES`)."""
    base, variant = parse_name(solver)
    if base == "cvxpy":
        inner = (variant or "clarabel").lower()
    elif base == "qpsolvers":
        inner = _qpsolvers_inner(variant)
    else:
        declaration = spec(solver)
        return declaration.tolerances, declaration.time_limit
    return INNER_TOLERANCES.get(inner, ()), INNER_TIME_LIMITS.get(inner)


def solver_options(solver: str, profile: str | Profile) -> dict[str, Any]:
    """The options that ask ``solver`` for ``profile``'s accuracy (and time limit).

    Per solver, from what it declares (:class:`~contactopt.solvers.base.SolverSpec`
    ``tolerances`` and ``time_limit``; a plugin declares its own; cvxpy's and qpsolvers' inner
    solvers: :data:`INNER_TOLERANCES`): each absolute tolerance at ``min(eps, default)``, so
    a profile never asks a solver for less than its own default (pgs's 1e-10 stays 1e-10 at
    ``high_accuracy``), relative ones at 0. The ``default`` profile passes none. qpsolvers'
    proxqp and piqp also get their duality-gap check at ``eps``. A solver that declares no
    tolerance (lemke: exact pivoting) gets none.
    """
    prof = get_profile(profile)
    tolerances, time_limit = declared(solver)
    options: dict[str, Any] = {time_limit: prof.time_limit} if time_limit else {}
    if prof.eps is None:
        return options
    options.update(_asked(tolerances, prof.eps))
    base, variant = parse_name(solver)
    if base == "qpsolvers" and _qpsolvers_inner(variant) in ("piqp", "proxqp"):
        options.update(check_duality_gap=True, eps_duality_gap_abs=min(prof.eps, 1e-8), eps_duality_gap_rel=0.0)
    return options
