"""``admm``: ADMM on the De Saxcé-corrected cone complementarity problem with spectral penalty
updates, for FCLIB's local Coulomb problem (ours; as ContactBench's CCP-ADMM: Carpentier, Le
Lidec, Montaut et al., "From Compliant to Rigid Contact Simulation: a Unified and Efficient
Approach", RSS 2024; Boyd et al. 2011). The iteration, the penalty rules and the
factorization are in :mod:`contactopt.solvers.coulomb.admm.kernel`.

Options (besides the common ``tol``, ``max_iterations`` (default 2000), ``history``, ``r0``,
``symmetrize`` of :mod:`contactopt.solvers.coulomb.options`):

- ``desaxce`` (default true): add De Saxcé's correction each iteration, solving Coulomb's law.
  False solves the convex CCP of Anitescu & Tasora (``K ∋ r ⟂ W r + q ∈ K*``, the ``ccp``
  formulation's problem, whose sliding contacts lift off): the solve then stops on the CCP's
  own natural map (FCLIB's normalization, at most ``tol``, and the same map per contact against
  its terms at most ``COULOMB_CONFIRM_LEVEL``), claims optimal for it and says so in the message; the
  residuals, as always, are the Coulomb problem's, which judge the claim.
- ``penalty``: ``spectral`` (default), ``residual_balancing`` or ``constant``; ``rho``: the
  starting penalty (default the spectral one); ``prox``: the proximal weight relative to the
  largest eigenvalue of W (default 1e-6).

W must be symmetric (the x-update minimizes a quadratic): a nonsymmetric W is refused unless
``symmetrize`` is true. The history adds the column ``penalty`` (the rho used next).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.core.errors import OptionError
from contactopt.programs import Solution
from contactopt.programs.coulomb import COULOMB_CONFIRM_LEVEL, CoulombProgram, natural_map_relative
from contactopt.programs.coulomb_error import project_cones
from contactopt.solvers.base import Program, SolverSpec, Stopwatch
from contactopt.solvers.coulomb.admm.kernel import PENALTY_RULES, admm
from contactopt.solvers.coulomb.options import (
    COMMON_OPTIONS,
    Monitor,
    coulomb_program,
    finish,
    integer_option,
    real_option,
)

SPEC = SolverSpec(
    name="admm",
    kinds=frozenset({"coulomb"}),
    module="contactopt.solvers.coulomb.admm.solver",
    requires=None,
    install_hint="",
    description="ADMM on the De Saxce-corrected cone complementarity problem, spectral penalty (ours, as "
                "ContactBench)",
    warm_start="r0",
    normalize=False,
    history=True,
)

OPTIONS = COMMON_OPTIONS | {"desaxce", "penalty", "rho", "prox"}
DEFAULT_MAX_ITERATIONS = 2000


def solve(program: Program, variant: str | None, options: Mapping[str, Any]) -> Solution:
    watch = Stopwatch()
    with watch.time("setup"):
        solved, r0, note = coulomb_program("admm", program, options, OPTIONS, needs_symmetry=True)
        max_iterations = integer_option("admm", options, "max_iterations", DEFAULT_MAX_ITERATIONS)
        desaxce = options.get("desaxce", True)
        if not isinstance(desaxce, bool | np.bool_):
            raise OptionError(f"solver 'admm': desaxce must be true or false, got {desaxce!r}")
        penalty = options.get("penalty", "spectral")
        if penalty not in PENALTY_RULES:
            raise OptionError(f"solver 'admm': penalty must be one of {', '.join(PENALTY_RULES)}, got {penalty!r}")
        rho = None if options.get("rho") is None else real_option("admm", options, "rho", 1.0)
        prox = real_option("admm", options, "prox", 1e-6, positive=False)
        monitor = Monitor("admm", solved, options)
        if not desaxce:
            tol = monitor.tol
            monitor.accept = lambda r, u: _ccp_solved(solved, r, u, tol)
            note = "; the CCP (desaxce=false), not Coulomb's law" + note

    def stop(k: int, r: np.ndarray, u: np.ndarray, penalty_now: float) -> bool:
        return monitor.stop(k, r, u, penalty=penalty_now)

    with watch.time("solve"), np.errstate(over="ignore", invalid="ignore"):
        result = admm(solved.W, solved.q, solved.mu, solved.dim, r0, desaxce=bool(desaxce),
                      max_iterations=max_iterations, penalty=penalty, rho=rho, prox=prox, stop=stop)
    raw = {"penalty": penalty, "rho": result.rho, "factorizations": result.factorizations, "desaxce": bool(desaxce)}
    return finish("admm", program, monitor, result.r, result.iterations, result.stopped, watch, "iterations",
                  note, raw)


def _ccp_solved(program: CoulombProgram, r: np.ndarray, u: np.ndarray, tol: float) -> bool:
    """The CCP's natural map ``e = r - P_K(r - u)`` at most ``tol`` in FCLIB's normalization, and
    per contact (``rho_c`` scaled) at most ``COULOMB_CONFIRM_LEVEL`` of its terms, as the Coulomb
    problem's relative residual (:mod:`contactopt.programs.coulomb`) without De Saxcé's term."""
    dim = program.dim
    R, U = r.reshape(-1, dim), u.reshape(-1, dim)
    error = float(np.linalg.norm(R - project_cones(R - U, program.mu)))
    if error > tol * (1.0 + np.sqrt(np.linalg.norm(program.q))):
        return False
    return natural_map_relative(program, r, U) <= COULOMB_CONFIRM_LEVEL
