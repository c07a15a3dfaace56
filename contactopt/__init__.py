"""contactopt: rigid multibody contact simulation, one explicit mathematical program per step.

Public API (docs/architecture.md, "Public API")::

    scene = co.load_scene("problems/cart_wall.toml")
    traj = co.simulate(scene, formulation="gauss", solver="clarabel")
    prog = co.formulate(scene.system, q, v, dt, formulation="gauss")
    sol = co.solve(prog, solver="osqp")
    grad = co.gradient(scene, loss, wrt=["mu", "v0"], formulation="ccp")   # reverse mode
    co.plot(traj); co.view(traj, scene)                                     # figure, 3-D page

This package is the facade above every layer: each name is imported from its layer on first
use, so that importing a lower layer (``contactopt.programs``, say) never loads the layers
above it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from contactopt._version import __version__

#: Public name -> (module, attribute in it; None: the module itself).
_PUBLIC: dict[str, tuple[str, str | None]] = {
    **{name: ("contactopt.core.errors", name) for name in (
        "ContactoptError", "OptionError", "SceneError", "SimulationError", "SolverUnavailableError",
        "UnknownNameError", "UnsupportedProgramError")},
    **{name: ("contactopt.model.step", name) for name in ("Bilateral", "Contacts", "Dynamics", "State", "StepProblem")},
    **{name: ("contactopt.programs", name) for name in (
        "LCP", "SOC", "Block", "ConicProgram", "CoulombProgram", "Nonneg", "Residuals", "Solution", "Status", "Zero",
        "lcp_to_qp", "load_program", "qp_to_lcp", "save_program")},
    **{name: ("contactopt.records.trajectory", name) for name in ("StepRecord", "Trajectory")},
    **{name: ("contactopt.scenes.loading", name) for name in ("Scene", "load_scene")},
    **{name: (f"contactopt.{name}", None) for name in (
        "analysis", "derivatives", "formulations", "identification", "programs", "solvers", "systems")},
    "errors": ("contactopt.core.errors", None),
    "formulate": ("contactopt.simulation", "formulate"),
    "simulate": ("contactopt.simulation", "simulate"),
    "simulate_batch": ("contactopt.batch", "simulate_batch"),
    "BatchTrajectory": ("contactopt.batch", "BatchTrajectory"),
    "solve": ("contactopt.solvers", "solve"),
    "gradient": ("contactopt.gradients", "gradient"),
    "compare": ("contactopt.analysis.compare", "compare"),
    "plot": ("contactopt.analysis.plotting", "plot_trajectory"),
    "view": ("contactopt.analysis.viewer", "view"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'contactopt' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = [
    "LCP",
    "SOC",
    "BatchTrajectory",
    "Bilateral",
    "Block",
    "ConicProgram",
    "ContactoptError",
    "Contacts",
    "CoulombProgram",
    "Dynamics",
    "Nonneg",
    "OptionError",
    "Residuals",
    "Scene",
    "SceneError",
    "SimulationError",
    "Solution",
    "SolverUnavailableError",
    "State",
    "Status",
    "StepProblem",
    "StepRecord",
    "Trajectory",
    "UnknownNameError",
    "UnsupportedProgramError",
    "Zero",
    "__version__",
    "analysis",
    "compare",
    "derivatives",
    "errors",
    "formulate",
    "formulations",
    "gradient",
    "identification",
    "lcp_to_qp",
    "load_program",
    "load_scene",
    "plot",
    "programs",
    "qp_to_lcp",
    "save_program",
    "simulate",
    "simulate_batch",
    "solve",
    "solvers",
    "systems",
    "view",
]

if TYPE_CHECKING:  # what type checkers and editors see: the same names, imported eagerly
    from contactopt import analysis, derivatives, formulations, identification, programs, solvers, systems
    from contactopt.analysis.compare import compare
    from contactopt.analysis.plotting import plot_trajectory as plot
    from contactopt.analysis.viewer import view
    from contactopt.batch import BatchTrajectory, simulate_batch
    from contactopt.core import errors
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
