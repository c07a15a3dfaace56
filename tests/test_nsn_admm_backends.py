"""The ``nsn`` and ``admm`` backends through ``co.solve`` on CoulombPrograms: answers,
histories (the same columns as every Coulomb solver, ending at the reported residual,
monotone in Newton's merit), the CCP of admm without De Saxcé's term against Clarabel,
nonsymmetric W, warm starts, budgets and bad options."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from test_nsn_admm import box_problem, sphere_stack

import contactopt as co
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.programs import Status
from contactopt.programs.coulomb import CoulombProgram, coulomb_criteria
from contactopt.programs.fclib import fclib_program
from contactopt.programs.fclib_io import FclibLocal
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb

SOLVERS = ("nsn", "admm")


def as_program(problem: FclibLocal) -> CoulombProgram:
    return CoulombProgram(W=problem.W, q=problem.q, mu=problem.mu, dim=problem.spacedim)


STACK = sphere_stack([(0.5, 0.0, 0.0, 0.0, 3.0, 1.0), (-0.2, 0.3, 0.0, 1.0, 0.0, -2.0), (0.0, 0.0, -0.3, 0, 0, 0)])


@pytest.mark.parametrize("solver", SOLVERS)
def test_answer_and_history(solver: str) -> None:
    program = as_program(STACK)
    solution = co.solve(program, solver, history=True, tol=1e-12)  # FCLIB error 1e-8 leaves u 1e-7 off
    assert solution.status is Status.OPTIMAL, solution.message
    assert solution.residuals.fclib <= 1e-12
    reference = solve_coulomb(STACK, tol=1e-12)
    np.testing.assert_allclose(program.velocity(solution.x), reference.answer.u, rtol=0, atol=1e-8)
    history = solution.history
    assert history is not None
    columns = set(coulomb_criteria(program, solution.x)) | {"iteration", "time"}
    assert columns <= set(history)
    lengths = {len(values) for values in history.values()}
    assert lengths == {solution.iterations + 1}  # the start, then one row per iteration
    np.testing.assert_array_equal(history["iteration"], np.arange(solution.iterations + 1))
    assert np.all(np.diff(history["time"]) >= 0)
    assert history["fclib"][-1] == pytest.approx(solution.residuals.fclib, rel=1e-12)
    assert history["relative"][-1] == pytest.approx(solution.residuals.relative, rel=1e-12)


def test_nsn_merit_decreases_under_its_line_search() -> None:
    solution = co.solve(as_program(box_problem((0.3, -0.2, -0.5), 2.0)), "nsn", history=True, tol=1e-12)
    assert solution.status is Status.OPTIMAL and solution.raw["linesearch_failures"] == 0
    assert solution.history is not None
    assert np.all(np.diff(solution.history["merit"]) < 0)


def test_no_history_by_default() -> None:
    assert co.solve(as_program(STACK), "nsn").history is None


def test_admm_ccp_agrees_with_clarabel_and_says_what_it_solved() -> None:
    problem = box_problem((1.0, 0.0, 0.0))
    program = as_program(problem)
    solution = co.solve(program, "admm", desaxce=False, tol=1e-12)
    assert "CCP" in solution.message
    conic = fclib_program(problem)
    reference = co.solve(conic, "clarabel")
    u_reference = program.velocity(conic.variable(reference.x, "impulse"))
    np.testing.assert_allclose(program.velocity(solution.x), u_reference, rtol=0, atol=1e-7)
    # Judged as Coulomb's problem, the CCP's lift-off is not a solution of it.
    assert solution.residuals.fclib > 1e-4 and solution.status is not Status.OPTIMAL


def nonsymmetric() -> CoulombProgram:
    W = np.array([[2.0, 0.3, -0.2], [0.1, 1.5, 0.4], [-0.2, 0.6, 1.2]])
    return CoulombProgram(W=sp.csc_matrix(W), q=np.array([-1.0, 0.5, 0.2]), mu=np.array([0.3]), dim=3)


def test_nonsymmetric_W() -> None:
    program = nonsymmetric()
    with pytest.raises(UnsupportedProgramError, match="symmetrize"):
        co.solve(program, "admm")
    solution = co.solve(program, "nsn")  # Newton needs no symmetry
    assert solution.status is Status.OPTIMAL and solution.residuals.fclib <= 1e-8
    symmetrized = co.solve(program, "admm", symmetrize=True)
    assert "symmetric part" in symmetrized.message
    # Judged on the W it was given, the answer for (W + W^T) / 2 is not its solution.
    assert symmetrized.residuals.fclib > 1e-3


@pytest.mark.parametrize("solver", SOLVERS)
def test_warm_start_budget_and_planar_frictionless(solver: str) -> None:
    program = CoulombProgram(W=sp.csc_matrix(np.diag([1.0, 1.0, 0.5, 0.5])), q=np.array([-0.2, 3.0, -0.4, 1.0]),
                             mu=np.array([0.0, 0.25]), dim=2)
    solution = co.solve(program, solver)
    np.testing.assert_allclose(solution.x, [0.2, 0.0, 0.8, -0.2], atol=1e-9)
    again = co.solve(program, solver, r0=solution.x)
    assert again.iterations == 0 and again.status is Status.OPTIMAL
    bare = {"last_resort": "none"} if solver in ("nsgs", "nsn") else {}  # the budget's own outcome
    short = co.solve(as_program(STACK), solver, max_iterations=1, **bare)
    assert short.status is Status.MAX_ITERATIONS and "FCLIB error" in short.message


@pytest.mark.parametrize("solver, options, match", [
    ("nsn", {"linesearch": "wolfe"}, "linesearch"), ("nsn", {"rho": -1.0}, "rho"), ("nsn", {"rho": [1.0, 2.0]}, "rho"),
    ("nsn", {"r0": np.zeros(2)}, "r0"), ("nsn", {"max_iterations": 1.5}, "max_iterations"),
    ("admm", {"penalty": "magic"}, "penalty"), ("admm", {"desaxce": "yes"}, "desaxce"), ("admm", {"tol": 0}, "tol"),
    ("admm", {"omega": 1.0}, "unknown option"),
])
def test_bad_options_are_named(solver: str, options: dict[str, object], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        co.solve(as_program(STACK), solver, options)
