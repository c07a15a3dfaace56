"""Projected Gauss-Seidel (ours): the solver, its setup and its compiled sweep."""
