"""An example contactopt plugin (see docs/extending.md): a formulation, a solver, a system."""
