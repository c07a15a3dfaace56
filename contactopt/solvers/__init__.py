"""Solver registry: ``names()``, ``available()``, ``spec(name)`` and ``solve(program, solver)``.

Each backend is one module of this package with a ``SPEC`` declaration and a ``solve``
function (see :mod:`contactopt.solvers.base`). A new solver is one module plus one entry in
``_BACKENDS``. ``solve`` dispatches on the program kind: a solver that does not take the kind
natively gets it through an explicit conversion from :mod:`contactopt.programs.convert`
(``QPToLCP``, ``LCPToQP``) when the conversion's conditions hold; otherwise one clear error
names the solvers that can take the program.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.core import plugins
from contactopt.core.arguments import check_mapping, check_name
from contactopt.core.errors import (
    OptionError,
    RegistrationError,
    SolverUnavailableError,
    UnknownNameError,
    UnsupportedProgramError,
)
from contactopt.programs import LCP, ConicProgram, LCPToQP, NonnegQPToLCP, QPToLCP, Solution, Status
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.coulomb_lcp import CoulombToLCP
from contactopt.programs.normalize import Normalize
from contactopt.programs.residuals import cone_violation
from contactopt.solvers import lemke
from contactopt.solvers.backends import clarabel as clarabel_
from contactopt.solvers.backends import cvxpy as cvxpy_
from contactopt.solvers.backends import osqp as osqp_
from contactopt.solvers.backends import qpsolvers as qpsolvers_
from contactopt.solvers.base import Program, SolverSpec, Stopwatch, judge, make_solution
from contactopt.solvers.coulomb import fixed_point, nsn
from contactopt.solvers.coulomb.admm import solver as admm
from contactopt.solvers.coulomb.nsgs import solver as nsgs
from contactopt.solvers.coulomb.staggered import solver as staggered
from contactopt.solvers.newton import solver as _newton
from contactopt.solvers.pgs import solver as pgs

__all__ = ["Solution", "SolverSpec", "Status", "available", "can_take", "can_take_kind", "comparison_defaults",
           "kinds", "names", "solve", "spec"]

# The backend modules import their third-party package only inside ``solve``.
_BACKENDS: dict[str, SolverSpec] = {
    module.SPEC.name: module.SPEC for module in (clarabel_, osqp_, cvxpy_, lemke, pgs, qpsolvers_)
}
_BACKENDS[_newton.SPEC.name] = _newton.SPEC  # SAP's primal Newton method (ours)
for _coulomb in (nsgs, nsn, admm, fixed_point, staggered):  # the Coulomb problem's own solvers (ours)
    _BACKENDS[_coulomb.SPEC.name] = _coulomb.SPEC

# Conversions tried, in order, when a solver lacks the program's kind: (from, to, reduction).
# The direct reading of x >= 0 QPs comes first: exact, and it needs no inverse of P. A Coulomb
# program goes to its pyramidal LCP (an approximation, judged on the Coulomb program).
_CONVERSIONS: tuple[tuple[str, str, Any], ...] = (
    ("qp", "lcp", NonnegQPToLCP()), ("qp", "lcp", QPToLCP()), ("lcp", "qp", LCPToQP()),
    ("coulomb", "lcp", CoulombToLCP()))


def _trivial(program: Program, solver: str) -> Solution:
    """The answer of a program without variables: ``s = b`` must lie in ``K``; ``y = 0``."""
    if isinstance(program, LCP | CoulombProgram):
        return make_solution(program, solver=solver, status=Status.OPTIMAL, x=np.zeros(0), y=None,
                             iterations=0, watch=Stopwatch(), message="no variables")
    feasible = cone_violation(program, program.b) == 0.0
    return make_solution(program, solver=solver, status=Status.OPTIMAL if feasible else Status.INFEASIBLE,
                         x=np.zeros(0), y=np.zeros(program.m), iterations=0, watch=Stopwatch(),
                         message="no variables" if feasible else "no variables and b is not in K")


def names() -> list[str]:
    """Every registered solver name (installed or not)."""
    return list(_BACKENDS)


def available() -> list[str]:
    """The registered solvers whose backend package is installed (detected without importing)."""
    return [name for name, spec_ in _BACKENDS.items() if spec_.is_available()]


def comparison_defaults() -> list[str]:
    """The installed solvers a comparison runs when none are named (those whose spec keeps
    ``default_comparison``)."""
    return [name for name, spec_ in _BACKENDS.items() if spec_.is_available() and spec_.default_comparison]


def parse_name(solver: str) -> tuple[str, str | None]:
    """``"cvxpy:SCS"`` -> ``("cvxpy", "SCS")``; checks the name is registered."""
    base, _, variant = solver.partition(":")
    base = base.strip().lower()
    if base not in _BACKENDS:
        raise UnknownNameError(f"unknown solver {solver!r}; known solvers: {', '.join(_BACKENDS)}")
    if variant and not _BACKENDS[base].variants:
        raise UnknownNameError(f"solver {base!r} takes no variant (got {solver!r})")
    if variant and _BACKENDS[base].is_available():
        inner = _installed_variants(base)
        if variant.strip().lower() not in {name.lower() for name in inner}:
            raise UnknownNameError(f"the {base} solver {variant!r} is unknown or not installed; "
                                   f"{base} solvers available: {', '.join(inner) or 'none'}")
    return base, (variant or None)


@functools.cache
def _installed_variants(base: str) -> tuple[str, ...]:
    """The inner solvers a gateway backend (cvxpy, qpsolvers) finds installed."""
    return tuple(importlib.import_module(_BACKENDS[base].module).installed_variants())


def spec(solver: str) -> SolverSpec:
    """The declaration of a solver (``cvxpy:SCS`` -> the cvxpy spec)."""
    return _BACKENDS[parse_name(solver)[0]]


def kinds(solver: str) -> frozenset[str]:
    """Program kinds ``solver`` takes natively; a variant (``cvxpy:OSQP``) may take fewer."""
    base, variant = parse_name(solver)
    spec_ = _BACKENDS[base]
    if variant is None or not spec_.is_available():
        return spec_.kinds
    backend = importlib.import_module(spec_.module)
    return frozenset(backend.variant_kinds(variant) & spec_.kinds)


def can_take(program: Program, solver: str) -> bool:
    """Whether ``solver`` takes ``program``, natively or through an applicable conversion."""
    return _route(program, parse_name(solver)[0], kinds(solver)) is not False


def can_take_kind(solver: str, kind: str, *, symmetric: bool = True) -> bool:
    """Whether ``solver`` can take some program of ``kind`` (``qp``, ``socp``, ``lcp``,
    ``coulomb``) at all: natively, or through a conversion from ``kind`` to one of its kinds
    (:data:`_CONVERSIONS`). ``symmetric=False`` says the LCPs in question never have a
    symmetric ``M`` (the Stewart-Trinkle LCP with friction rows), so that LCP -> QP, which
    needs one, cannot apply. Decided before any program exists (``compare`` refuses a
    formulation/solver pair whose programs no solve could take); a True here still leaves
    the conditions of a conversion to be checked on each program (:func:`can_take`)."""
    base = parse_name(solver)[0]
    native = kinds(solver)
    if kind in native:
        return True
    if not _BACKENDS[base].conversions:
        return False
    return any(source == kind and target in native and (symmetric or (source, target) != ("lcp", "qp"))
               for source, target, _ in _CONVERSIONS)


def _refusal(program: Program, base: str) -> str | None:
    """Why backend ``base`` refuses a program of a kind it declares (its ``accepts``), or None."""
    check = getattr(importlib.import_module(_BACKENDS[base].module), "accepts", None)
    return None if check is None else check(program)


def _route(program: Program, base: str, native: frozenset[str]) -> Any:
    """None for native, a reduction object, or False if no route exists."""
    if program.kind in native and _refusal(program, base) is None:
        return None
    if not _BACKENDS[base].conversions:
        return False
    for source, target, reduction in _CONVERSIONS:
        if program.kind == source and target in native and reduction.accepts(program) is None:
            if getattr(reduction, "check_target", False) and _refusal(reduction.apply(program)[0], base) is not None:
                continue  # the converted program has a shape the backend refuses (pgs: a zero diagonal)
            return reduction
    return False


def _who_can(program: Program) -> list[str]:
    return [name for name, spec_ in _BACKENDS.items()
            if _route(program, name, spec_.kinds) is not False]


def solve(program: Program, solver: str = "clarabel", options: Mapping[str, Any] | None = None,
          **kwargs: Any) -> Solution:
    """Solve ``program`` with ``solver`` and return a :class:`Solution`.

    ``options`` (or keyword arguments) go to the backend, except ``refine``: the active-set
    refinement of :mod:`contactopt.solvers.refine` (true: always, the default of interior-point
    backends; ``"auto"``, the others' default: when contactopt's judgement of the backend's
    claimed answer falls short of optimal, e.g. an ADMM iterate whose free rows carry its
    tolerance; false: never), and ``normalize``: the program handed over in its own units
    (:mod:`contactopt.programs.normalize`; exact, powers of two): ``"auto"`` (default) when the
    answer to the program as given falls short of optimal, keeping the better answer; true:
    always; false: never (the default of backends that read a formulation's structure). Residuals in the result are
    computed by contactopt against the program that was given, even after a conversion.
    """
    if not isinstance(program, ConicProgram | LCP | CoulombProgram):
        raise UnsupportedProgramError("solve() takes a ConicProgram, an LCP or a CoulombProgram, got "
                                      f"{type(program).__name__}")
    check_name(solver, "solver", "solve", "clarabel")
    options = check_mapping(options, "options", "solve")
    base, variant = parse_name(solver)
    spec_ = _BACKENDS[base]
    native = kinds(solver)
    route = _route(program, base, native)
    if route is False:
        reasons = [_refusal(program, base)] if program.kind in native else []
        reasons += [reduction.accepts(program) for src, tgt, reduction in _CONVERSIONS
                    if src == program.kind and tgt in native]
        why = f" ({'; '.join(r for r in reasons if r)})" if any(reasons) else ""
        raise UnsupportedProgramError(
            f"solver {solver!r} cannot take a {program.kind.upper()} program{why}; "
            f"solvers that can: {', '.join(_who_can(program)) or 'none'}")
    if not spec_.is_available():
        raise SolverUnavailableError(f"solver {base!r} is not installed: {spec_.install_hint}")
    if program.n == 0:  # no variables (e.g. no active contact): nothing to ask a backend
        return _trivial(program, solver)
    backend = importlib.import_module(spec_.module)
    merged = {**(options or {}), **kwargs}
    refine = merged.pop("refine", True if spec_.interior_point else "auto")
    normalize = merged.pop("normalize", "auto" if spec_.normalize else False)
    if isinstance(program, CoulombProgram) and route is None:  # no exact rescaling written for it: as given
        normalize = False  # (its pyramidal LCP, a conversion's program, is rescaled like any LCP)
    for name, value in (("refine", refine), ("normalize", normalize)):
        if not (isinstance(value, bool) or value == "auto"):
            raise OptionError(f"solver {solver!r}: option {name} must be true, false or 'auto', got {value!r}")
    own = spec_.module.startswith(_OWN_BACKENDS)
    if route is None:
        return _tightened_solve(program, backend, variant, merged, own, refine, normalize, spec_.warm_start)
    converted, data = route.apply(program)
    solution = _tightened_solve(converted, backend, variant, merged, own, refine, normalize, spec_.warm_start)
    return _rejudge(program, route.invert(solution, data))


def _tightened_solve(program: Program, backend: Any, variant: str | None, options: dict[str, Any], own: bool,
                     refine: bool | str, normalize: bool | str, warm_start: str | None) -> Solution:
    """:func:`_normalized_solve`, again with ``backend.tightened(options)`` (Clarabel's; None where the
    user set a tolerance) where the residuals refute the claim after refinement and own units."""
    solution = _normalized_solve(program, backend, variant, options, own, refine, normalize, warm_start)
    claim, tight = solution.claimed, getattr(backend, "tightened", lambda _: None)(options)
    if tight is None or solution.status is not Status.NUMERICAL_ERROR or claim is None or not claim.usable:
        return solution
    retry = _normalized_solve(program, backend, variant, tight, own, refine, normalize, warm_start)
    if _rank(retry) >= _rank(solution):
        return solution
    return dataclasses.replace(retry, message=f"{retry.message} (retried with tightened tolerances: residuals "
                                              f"{solution.residuals.relative:.1e} refuted the first answer)")


def _call(backend: Any, program: Program, variant: str | None, options: dict[str, Any]) -> Solution:
    """The backend's own ``solve``; a composite backend (``fixed_point``, ``staggered``) is handed
    this registry (its :func:`solve` for the programs it solves inside)."""
    if getattr(getattr(backend, "SPEC", None), "composite", False):
        return backend.solve(program, variant, options, registry=sys.modules[__name__])
    return backend.solve(program, variant, options)


def _normalized_solve(program: Program, backend: Any, variant: str | None, options: dict[str, Any], own: bool,
                      refine: bool | str, normalize: bool | str, warm_start: str | None) -> Solution:
    """The backend's answer to ``program``, refined and judged; solved in the program's own
    units (:mod:`contactopt.programs.normalize`) always (``normalize=True``), or again when
    the answer as given falls short of optimal (``"auto"``), keeping the better of the two."""
    if normalize is not True:
        first = _refined(program, _answer(program, _call(backend, program, variant, options), own), refine)
        claim = first.claimed or first.status
        # an answer, or the backend's numerical trouble; not a budget the backend ran out of,
        # nor its certificate of infeasibility (a rescaled, nearly infeasible program can
        # polish to a point that no judgement of its rows refutes)
        retried = claim.usable or claim is Status.NUMERICAL_ERROR
        if normalize is False or first.status is Status.OPTIMAL or not retried:
            return first
    assert not isinstance(program, CoulombProgram)  # solve() never normalizes one
    reduced = Normalize().apply(program)
    if reduced is None:
        return first if normalize == "auto" else _refined(
            program, _answer(program, _call(backend, program, variant, options), own), refine)
    scaled, scaling = reduced
    if warm_start is not None and options.get(warm_start) is not None:
        options = {**options, warm_start: scaling.x_to_scaled(options[warm_start])}
    solution = _refined(scaled, _answer(scaled, _call(backend, scaled, variant, options), own), refine)
    x, y = Normalize.invert(solution.x, solution.y, scaling)
    watch = Stopwatch()
    watch.setup, watch.solve = solution.setup_time, solution.solve_time
    back = make_solution(program, solver=solution.solver, status=solution.claimed or solution.status, x=x,
                         y=None if isinstance(program, LCP) else y, iterations=solution.iterations, watch=watch,
                         message=f"{solution.message} (solved in the program's own units)", raw=solution.raw)
    back = dataclasses.replace(back, conversion=solution.conversion, refined=solution.refined)
    if normalize == "auto" and _rank(first) <= _rank(back):
        return first
    return back


def _rank(solution: Solution) -> tuple[int, float]:
    """Order of preference between two answers to one program: optimal, inaccurate, any other
    status; then the smaller relative residual."""
    order = {Status.OPTIMAL: 0, Status.INACCURATE: 1}.get(solution.status, 2)
    relative = solution.residuals.relative
    return order, relative if relative == relative else float("inf")


#: contactopt's own backends assemble their Solution through :func:`.base.make_solution`,
#: which computes the residuals and judges the claim; any other backend's answer is judged
#: again, from its ``x`` and ``y`` alone.
_OWN_BACKENDS = "contactopt.solvers."


def _answer(program: Program, solution: Solution, own: bool) -> Solution:
    """A backend's Solution, its residuals and status recomputed by contactopt unless the
    backend is one of contactopt's own (a plugin's residuals and status are claims)."""
    if own:
        return solution
    if not isinstance(solution, Solution):
        raise UnsupportedProgramError(f"solver backend returned {type(solution).__name__}, not a Solution")
    watch = Stopwatch()
    watch.setup, watch.solve = solution.setup_time, solution.solve_time
    judged = make_solution(program, solver=solution.solver, status=solution.status, x=solution.x,
                           y=None if isinstance(program, LCP | CoulombProgram) else solution.y,
                           iterations=solution.iterations, watch=watch, message=solution.message, raw=solution.raw,
                           history=solution.history)
    return dataclasses.replace(judged, conversion=solution.conversion, refined=solution.refined)


def _refined(program: Program, solution: Solution, refine: bool | str) -> Solution:
    """The active-set refinement (:mod:`contactopt.solvers.refine`) of an interior-point answer
    on the program the backend solved (before a conversion is inverted). It runs on what the
    backend claimed (an interior-point iterate's barrier-sized multipliers of inactive rows
    can fail contactopt's row-wise judgement before refinement sets them to zero). The refined
    answer is contactopt's own KKT point, not the backend's iterate: contactopt's residuals
    judge it as an optimal answer, so that an ``inaccurate`` claim (Clarabel's AlmostSolved)
    refined to the optimal level is ``optimal`` (the claim stays in ``claimed``)."""
    claim = solution.claimed or solution.status
    if not (refine and isinstance(program, ConicProgram) and claim.usable):
        return solution
    if refine == "auto" and solution.status is Status.OPTIMAL:
        return solution
    from contactopt.solvers.refine import refine as refine_solution

    refined = refine_solution(program, dataclasses.replace(solution, status=claim))
    if not refined.refined:
        return dataclasses.replace(solution, message=refined.message)
    verdict = Status.OPTIMAL if claim is Status.INACCURATE else claim
    status, message = judge(program, refined.x, refined.y, refined.residuals, verdict, refined.message, refined.s)
    if status is Status.OPTIMAL and claim is Status.INACCURATE:
        message = f"{message}; optimal by contactopt's residuals ({refined.residuals.relative:.1e} relative)"
    return dataclasses.replace(refined, status=status, message=message, claimed=None if status is claim else claim)


def _rejudge(program: Program, solution: Solution) -> Solution:
    """A converted program's answer judged again on the program that was given: a status
    earned on the converted program does not carry over when the recovered answer's residuals
    contradict it (e.g. ``x = -P^{-1}(c + A'z)`` with ``P`` nearly singular)."""
    if not solution.status.usable:
        return solution
    status, message = judge(program, solution.x, solution.y, solution.residuals, solution.status, solution.message,
                            solution.s)
    if status is solution.status:
        return solution
    return dataclasses.replace(solution, status=status, message=message, claimed=solution.claimed or solution.status)


_KINDS = frozenset({"qp", "socp", "lcp", "coulomb"})


def _as_spec(obj: object) -> tuple[str, SolverSpec]:
    """A SolverSpec, or a backend module exposing ``SPEC``, checked without importing the
    backend's third-party package."""
    found = getattr(obj, "SPEC", obj)
    if not isinstance(found, SolverSpec):
        raise RegistrationError(f"expected a SolverSpec (or a module with SPEC), got {obj!r}")
    name = plugins.check_name(found.name, "solver")
    unknown = set(found.kinds) - _KINDS
    if not found.kinds or unknown:
        raise RegistrationError(f"solver {name!r}: kinds must be a non-empty subset of "
                                f"{sorted(_KINDS)}, got {sorted(found.kinds)}")
    try:  # a module already imported (a script's __main__ has no spec) counts as found
        backend_found = found.module in sys.modules or importlib.util.find_spec(found.module) is not None
    except (ImportError, ValueError):
        backend_found = False
    if not backend_found:
        raise RegistrationError(f"solver {name!r}: its module {found.module!r} cannot be found")
    return name, found


__all__ += ["register"]

_BACKENDS = plugins.Registry("solver", "contactopt.solvers", _BACKENDS, _as_spec)


def register(solver: SolverSpec) -> SolverSpec:
    """Make a solver available by name to ``solve``, ``simulate``, ``compare`` and the CLI.

    ``solver`` is a :class:`SolverSpec` (or the backend module itself, which exposes
    ``SPEC``) whose ``module`` defines ``solve(program, variant, options) -> Solution``
    (see :mod:`contactopt.solvers.base`); the module is imported when the solver is first
    used. Raises :class:`~contactopt.core.errors.RegistrationError` if the name is taken or the
    spec is malformed. Installed packages can instead declare the spec in the entry-point
    group ``contactopt.solvers`` (see ``docs/extending.md``).
    """
    name, found = _as_spec(solver)
    assert isinstance(_BACKENDS, plugins.Registry)  # made one just above
    _BACKENDS.add(name, found)
    return solver
