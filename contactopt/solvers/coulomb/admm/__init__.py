"""ADMM on the De Saxcé-corrected cone complementarity problem: the solver and its compiled kernel."""
