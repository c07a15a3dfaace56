"""What ``nsgs`` and ``nsn`` do when their budget is spent without convergence: De Saxcé's fixed
point from their last iterate (option ``last_resort``, default ``"fixed_point"``; ``"none"``
keeps the bare method).

Gauss-Seidel and the semismooth Newton method have no convergence guarantee on Coulomb's problem
(Acary, Brémond & Huber, "On solving contact problems with Coulomb friction: formulations and
numerical comparisons", 2018, sec. 6: the robust strategies of their comparison combine a fast
local method with a slower, more robust one). The fixed point of Acary, Cadoux, Lemaréchal &
Malick (ZAMM 91, 2011, sec. 4; :mod:`.fixed_point`) solves a convex cone program per iteration
and so does not drift along ``W``'s null space as the sweeps do: on dm-control's humanoid (step
52, 27 dofs, 21 limits and 8 contacts) NSGS ends its 50000 sweeps at FCLIB error 1.7e-8, the
semismooth Newton method at 3.9e-6, and the fixed point from NSGS's iterate reaches 7.0e-9 in 3
convex solves (``tests/test_coulomb_last_resort.py``).

The answer keeps the calling solver's name and iteration count (its own sweeps or Newton steps);
the message says that the fixed point finished it and how, ``raw["last_resort"]`` holds the
fixed point's iterations and message, and the times add up. An answer the fixed point does not
improve to a usable one is the calling solver's own, unchanged but for the message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from contactopt.core.errors import OptionError
from contactopt.programs import Solution, Status
from contactopt.solvers.base import Program, Registry

#: The choices of the ``last_resort`` option.
LAST_RESORTS = ("fixed_point", "none")


def last_resort_option(solver: str, options: Mapping[str, Any]) -> str:
    """The ``last_resort`` option, checked."""
    choice = options.get("last_resort", "fixed_point")
    if choice not in LAST_RESORTS:
        raise OptionError(f"solver {solver!r}: last_resort must be one of {', '.join(LAST_RESORTS)}, got {choice!r}")
    return str(choice)


def finish(solver: str, program: Program, solution: Solution, options: Mapping[str, Any],
           registry: Registry | None) -> Solution:
    """``solution`` of ``solver``, or, where it spent its budget, the fixed point's from its iterate
    (module docstring)."""
    choice = last_resort_option(solver, options)
    if choice == "none" or registry is None or solution.status is not Status.MAX_ITERATIONS:
        return solution
    inner_options = {key: options[key] for key in ("tol", "symmetrize") if key in options}
    finished = registry.solve(program, "fixed_point", {**inner_options, "r0": solution.x})
    where = f"{solution.message}; then fixed_point from its last iterate: {finished.message}"
    if not finished.status.usable:
        return dataclasses.replace(solution, message=where)
    raw = {**(solution.raw if isinstance(solution.raw, dict) else {"raw": solution.raw}),
           "last_resort": {"solver": "fixed_point", "iterations": finished.iterations, "status": str(finished.status),
                           "message": finished.message}}
    return dataclasses.replace(finished, solver=solver, iterations=solution.iterations,
                               setup_time=solution.setup_time + finished.setup_time,
                               solve_time=solution.solve_time + finished.solve_time,
                               message=f"{solution.message}; finished by fixed_point from its last iterate "
                                       f"({finished.message})", raw=raw, history=solution.history)
