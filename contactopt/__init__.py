"""contactopt: rigid multibody contact simulation, one explicit mathematical program per step.

Public API (docs/architecture.md)::

    scene = co.load_scene("problems/cart_wall.toml")
    traj = co.simulate(scene, formulation="gauss", solver="clarabel")
    prog = co.formulate(scene.system, q, v, dt, formulation="gauss")
    sol = co.solve(prog, solver="osqp")
    grad = co.gradient(scene, loss, wrt=["mu", "v0"], formulation="ccp")   # reverse mode
"""

from typing import Any

from contactopt import derivatives, formulations, programs, solvers, systems
from contactopt._version import __version__
from contactopt.core.errors import (
    ContactoptError,
    OptionError,
    SceneError,
    SimulationError,
    SolverUnavailableError,
    UnknownNameError,
    UnsupportedProgramError,
)
from contactopt.gradients import gradient
from contactopt.model.step import Bilateral, Contacts, Dynamics, State, StepProblem
from contactopt.programs import (
    LCP,
    SOC,
    Block,
    ConicProgram,
    CoulombProgram,
    Nonneg,
    Residuals,
    Solution,
    Status,
    Zero,
    lcp_to_qp,
    load_program,
    qp_to_lcp,
    save_program,
)
from contactopt.records.trajectory import StepRecord, Trajectory
from contactopt.scenes.loading import Scene, load_scene
from contactopt.simulation import formulate, simulate
from contactopt.solvers import solve


def __getattr__(name: str) -> Any:
    # The analysis tools import pandas and matplotlib; load them when first used.
    if name == "compare":
        from contactopt.analysis.compare import compare

        return compare
    if name == "analysis":
        import contactopt.analysis

        return contactopt.analysis
    raise AttributeError(f"module 'contactopt' has no attribute {name!r}")


#: Names :func:`__getattr__` provides on first use (tab completion and ``dir(co)`` list them).
_LAZY = ("analysis", "compare")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "LCP", "SOC", "Bilateral", "Block", "ConicProgram", "ContactoptError", "Contacts", "CoulombProgram", "Dynamics",
    "Nonneg", "OptionError", "Residuals", "Scene", "SceneError", "SimulationError", "Solution",
    "SolverUnavailableError", "State", "Status", "StepProblem", "StepRecord", "Trajectory",
    "UnknownNameError", "UnsupportedProgramError", "Zero", "__version__", "compare", "derivatives", "formulate",
    "formulations", "gradient", "lcp_to_qp", "load_program", "load_scene", "programs", "qp_to_lcp",
    "save_program", "simulate", "solve", "solvers", "systems",
]
