"""Nonsmooth Gauss-Seidel for the Coulomb problem: the solver, its one-contact problem and its compiled sweeps."""
