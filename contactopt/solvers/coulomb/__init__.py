"""The solvers of FCLIB's local Coulomb problem (ours): nsgs, nsn, admm, staggered, fixed_point; their options."""
