"""Analysis tools over trajectories and programs: metrics, comparison grids, reports, plots,
program export and solver benchmarks. Nothing in the simulation layers imports this package."""
