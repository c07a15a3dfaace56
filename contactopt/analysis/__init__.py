"""Analysis tools over trajectories and programs: metrics, comparison grids, reports, plots,
program export and solver benchmarks. Nothing in the simulation layers imports this package."""

from typing import Any


def __getattr__(name: str) -> Any:
    # ``co.analysis.view``: the 3-D viewer, loaded on first use (its meshcat is optional)
    if name == "view":
        from contactopt.analysis.viewer import view

        return view
    raise AttributeError(f"module 'contactopt.analysis' has no attribute {name!r}")
