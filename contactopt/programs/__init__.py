"""Explicit programs (ConicProgram, LCP), their residuals, conversions and file format."""

from contactopt.programs.conic import SOC, Block, Cone, ConicProgram, Nonneg, Zero
from contactopt.programs.convert import LCPToQP, NonnegQPToLCP, QPToLCP, lcp_to_qp, qp_to_lcp
from contactopt.programs.coulomb import CoulombProgram, coulomb_criteria, coulomb_residuals
from contactopt.programs.coulomb_error import fclib_merit
from contactopt.programs.fclib import FclibGlobal, FclibLocal, fclib_program, read_fclib
from contactopt.programs.io import load_program, save_program
from contactopt.programs.lcp import LCP
from contactopt.programs.residuals import conic_residuals, lcp_residuals, residuals
from contactopt.programs.solution import Residuals, Solution, Status

__all__ = [
    "LCP", "SOC", "Block", "Cone", "ConicProgram", "CoulombProgram", "FclibGlobal", "FclibLocal", "LCPToQP", "Nonneg",
    "NonnegQPToLCP", "QPToLCP", "Residuals",
    "Solution", "Status", "Zero", "conic_residuals", "coulomb_criteria", "coulomb_residuals",
    "fclib_merit", "fclib_program", "lcp_residuals", "lcp_to_qp",
    "load_program", "qp_to_lcp", "read_fclib", "residuals", "save_program",
]
