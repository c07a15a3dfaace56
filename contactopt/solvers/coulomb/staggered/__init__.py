"""Staggered projections for the Coulomb problem: the solver and its compiled QP sweeps."""
