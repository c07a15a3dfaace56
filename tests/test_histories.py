"""Convergence histories of the iterative solvers ``pgs`` and ``newton`` (option ``history``,
:mod:`contactopt.solvers.history`): present only when asked, one row per iterate ending at the
reported answer's residuals, and monotone where the method guarantees it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import OptionError
from contactopt.programs.coulomb import CoulombProgram, coulomb_to_fclib
from contactopt.programs.coulomb_error import answer_of, fclib_merit
from contactopt.programs.fclib import fclib_program
from contactopt.solvers.history import Recorder, as_arrays


def _spd_lcp(seed: int, n: int = 12) -> co.LCP:
    """Symmetric positive semidefinite (rank n - 3) ``M = B B'`` with a positive diagonal."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, n - 3))
    return co.LCP(B @ B.T, rng.standard_normal(n))


def _check_shape(solution: co.Solution) -> dict[str, np.ndarray]:
    history = solution.history
    assert history is not None
    rows = solution.iterations + 1  # the start, then one row per iteration
    assert all(values.shape == (rows,) for values in history.values())
    np.testing.assert_array_equal(history["iteration"], np.arange(rows))
    assert history["time"][0] >= 0 and np.all(np.diff(history["time"]) >= 0)
    # the last row is the answer returned: its residual as make_solution computed it
    assert history["relative"][-1] == pytest.approx(solution.residuals.relative, rel=1e-9, abs=1e-300)
    return history


@pytest.mark.parametrize("omega", [1.0, 1.6])
def test_pgs_objective_never_increases_on_a_symmetric_psd_lcp(omega: float) -> None:
    # Cottle, Pang & Stone 1992, section 5.2: each projected SOR update with 0 < omega < 2
    # lowers 1/2 z'Mz + q'z by M_ii (1/omega - 1/2) delta^2 >= 0
    lcp = _spd_lcp(4)
    assert co.solve(lcp, "pgs").history is None
    solution = co.solve(lcp, "pgs", {"history": True, "omega": omega, "max_iter": 5000})
    assert solution.status is co.Status.OPTIMAL
    history = _check_shape(solution)
    objective = history["objective"]
    rounding = 1e-13 * (np.abs(lcp.M).max() * np.abs(solution.x).max() ** 2 + np.abs(lcp.q @ solution.x))
    assert np.all(np.diff(objective) <= rounding)
    assert objective[-1] < objective[0]
    assert {"primal", "dual", "complementarity", "gap"} <= set(history)


def test_pgs_history_of_an_fclib_ccp_reads_fclib_error() -> None:
    # the CCP of an FCLIB local problem: FCLIB's error of each iterate's impulses is recorded,
    # the last one that of the answer (computed here from FCLIB's own formula)
    rng = np.random.default_rng(11)
    B = rng.standard_normal((9, 6))
    W = B.T @ B / 6 + 0.2 * np.eye(6)
    coulomb = CoulombProgram(W=sp.csc_matrix(W), q=np.array([-1.0, 0.5, 0.2, -0.3, 0.0, 0.1]),
                             mu=np.array([0.4, 0.6]))
    problem = coulomb_to_fclib(coulomb)
    program = fclib_program(problem)
    solution = co.solve(program, "pgs", {"history": True, "max_iter": 20000})
    assert solution.status is co.Status.OPTIMAL
    history = _check_shape(solution)
    expected = fclib_merit(problem, answer_of(problem, program, solution))
    assert history["fclib"][-1] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    scale = np.abs(program.P).max() * np.abs(solution.x).max() ** 2 + np.abs(program.c @ solution.x)
    assert np.all(np.diff(history["objective"]) <= 1e-13 * scale)  # block descent (pgs docstring)


def test_pgs_history_option_is_checked() -> None:
    with pytest.raises(OptionError, match="history"):
        co.solve(_spd_lcp(1), "pgs", {"history": 1})


def test_newton_history_ends_at_the_answer_and_its_cost_decreases() -> None:
    scene = co.load_scene("box_slide")
    program = co.formulate(scene.system, scene.q0, scene.v0 + 0.3, scene.dt, "sap")
    plain = co.solve(program, "newton")
    assert plain.history is None
    solution = co.solve(program, "newton", {"history": True})
    assert solution.status is co.Status.OPTIMAL
    history = _check_shape(solution)
    assert {"objective", "primal", "dual", "cost", "residual", "alpha"} <= set(history)
    cost = history["cost"]  # l(v): exact line search on a convex function never raises it
    assert np.all(np.diff(cost) <= 1e-12 * np.abs(cost).max())
    assert np.isnan(history["alpha"][-1])  # no step from the answer
    assert len(solution.raw["history"]) == solution.iterations + 1
    assert "_v" not in solution.raw["history"][0]


def test_recorder_does_not_time_its_own_rows() -> None:
    recorder = Recorder()
    recorder.add(0, lambda: {"value": 1.0})
    recorder.add(1, lambda: {"value": 2.0, "extra": 3.0})
    history = recorder.arrays()
    assert set(history) == {"iteration", "time", "value", "extra"}
    assert np.isnan(history["extra"][0]) and history["extra"][1] == 3.0
    assert as_arrays([]) == {}
