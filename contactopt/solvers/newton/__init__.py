"""``newton``: SAP's primal Newton method (ours): the solver, its compiled kernels, Hessian pattern and record."""
