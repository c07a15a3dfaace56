"""What ``nsgs`` and ``nsn`` do when their budget is spent without convergence: the other method
from their last iterate, then De Saxcé's fixed point (option ``last_resort``, default
``"nsn+fixed_point"`` for ``nsgs`` and ``"nsgs+fixed_point"`` for ``nsn``; ``"none"`` keeps the
bare method).

Gauss-Seidel and the semismooth Newton method have no convergence guarantee on Coulomb's problem
(Acary, Brémond & Huber, "On solving contact problems with Coulomb friction: formulations and
numerical comparisons", 2018, sec. 6: the robust strategies of their comparison combine a fast
local method with a slower, more robust one). The fixed point of Acary, Cadoux, Lemaréchal &
Malick (ZAMM 91, 2011, sec. 4; :mod:`.fixed_point`) solves a convex cone program per iteration
and so does not drift along ``W``'s null space as the sweeps do: on dm-control's humanoid (step
52, 27 dofs, 21 limits and 8 contacts) NSGS ends its 50000 sweeps at FCLIB error 1.7e-8, the
semismooth Newton method at 3.9e-6, and the fixed point from NSGS's iterate reaches 7.0e-9 in 3
convex solves (``tests/test_coulomb_last_resort.py``). At that humanoid's step 189 the semismooth
Newton method (with its interleaved NSGS blocks) ends at 1.2e-6 and the fixed point stalls at
2.6e-8 from there, while NSGS from the Newton iterate converges in 32 sweeps; on the CMU humanoid (``-o
max_recovery_speed=0.001``) at step 78 NSGS ends at 1.5e-5, the fixed point from there at 3.5e-6
after 100 convex solves (41 s), and one Newton step from NSGS's iterate reaches 2e-12: the two
local methods fail in different places, and each finishes the other's iterate.

The answer keeps the calling solver's name and iteration count (its own sweeps or Newton steps);
the message says which method finished it and how, ``raw["last_resort"]`` holds that method's
iterations and message and the chain run, and the times add up. An answer no method of the chain
makes usable is the calling solver's own, unchanged but for the message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from contactopt.core.errors import OptionError
from contactopt.programs import Solution, Status
from contactopt.solvers.base import Program, Registry

#: The methods a ``last_resort`` may name, and each solver's default chain.
METHODS = ("nsgs", "nsn", "fixed_point")
DEFAULTS = {"nsgs": ("nsn", "fixed_point"), "nsn": ("nsgs", "fixed_point")}


def last_resort_option(solver: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``last_resort`` chain, checked: ``"none"``, one method, or several (a list, or names
    joined by ``+``), each run in turn from the iterate the previous one ended with."""
    value = options.get("last_resort", DEFAULTS[solver])
    names = tuple(value.split("+")) if isinstance(value, str) else tuple(value) if isinstance(value, list | tuple) \
        else (value,)
    if names == ("none",):
        return ()
    if not names or any(name not in METHODS or name == solver for name in names):
        allowed = ", ".join(name for name in METHODS if name != solver)
        raise OptionError(f"solver {solver!r}: last_resort must be none or a chain of {allowed} (joined by '+'), "
                          f"got {value!r}")
    return names


def finish(solver: str, program: Program, solution: Solution, options: Mapping[str, Any],
           registry: Registry | None) -> Solution:
    """``solution`` of ``solver``, or, where it spent its budget, the answer of its last-resort
    chain from its iterate (module docstring)."""
    chain = last_resort_option(solver, options)
    if not chain or registry is None or solution.status is not Status.MAX_ITERATIONS:
        return solution
    inner_options = {key: options[key] for key in ("tol", "symmetrize") if key in options}
    current, story = solution, []
    for method in chain:
        extra = {"last_resort": "none"} if method in ("nsgs", "nsn") else {}  # the chain is run here, not nested
        finished = registry.solve(program, method, {**inner_options, **extra, "r0": current.x})
        story.append((method, finished))
        if finished.status.usable:
            break
        if np.isfinite(finished.residuals.fclib) and finished.residuals.fclib < current.residuals.fclib:
            current = finished  # the next method starts from the best iterate so far
    said = "; then ".join(f"{method} from the last iterate: {answer.message}" for method, answer in story)
    method, finished = story[-1]
    if not finished.status.usable:
        return dataclasses.replace(solution, message=f"{solution.message}; then {said}")
    raw = {**(solution.raw if isinstance(solution.raw, dict) else {"raw": solution.raw}),
           "last_resort": {"solver": method, "iterations": finished.iterations, "status": str(finished.status),
                           "message": finished.message, "chain": [name for name, _ in story]}}
    spent = sum(answer.setup_time + answer.solve_time for _, answer in story)
    return dataclasses.replace(finished, solver=solver, iterations=solution.iterations,
                               setup_time=solution.setup_time, solve_time=solution.solve_time + spent,
                               message=f"{solution.message}; then {said}; finished by {method}", raw=raw,
                               history=solution.history)
