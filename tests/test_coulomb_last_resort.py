"""``nsgs`` and ``nsn`` finish a spent budget by De Saxcé's fixed point from their last iterate
(:mod:`contactopt.solvers.coulomb.last_resort`): on dm-control's humanoid at step 52 (saved from
``experiments/coulomb_transitions.py``: 29 contacts and limits on 27 dofs, a singular ``W``),
where the sweeps drift at FCLIB error ~2e-8 and the semismooth Newton method stalls near 4e-6,
both end OPTIMAL at FCLIB error <= 1e-8 with contactopt's relative residual confirming, and say
how; ``last_resort="none"`` keeps the bare method's MAX_ITERATIONS; a solve that converges never
calls it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.programs.coulomb import COULOMB_CONFIRM_LEVEL, CoulombProgram

DATA = Path(__file__).resolve().parent / "data" / "suite_humanoid_step52_coulomb.npz"


@pytest.fixture(scope="module")
def humanoid() -> CoulombProgram:
    with np.load(DATA) as d:
        W = sp.csr_matrix((d["W_data"], d["W_indices"], d["W_indptr"]), shape=tuple(d["W_shape"]))
        return CoulombProgram(W=W.tocsc(), q=d["q"], mu=d["mu"], dim=3)


BUDGETS = {"nsgs": {"max_iterations": 3000}, "nsn": {"max_iterations": 50}}


def test_the_bare_method_spends_its_budget(humanoid: CoulombProgram) -> None:
    solver = "nsgs"  # (nsn's path on this program depends on the BLAS kernel's rounding: see below)
    bare = co.solve(humanoid, solver, {**BUDGETS[solver], "last_resort": "none"})
    assert bare.status is co.Status.MAX_ITERATIONS and bare.residuals.fclib > 1e-8
    assert "last_resort" not in bare.raw and "fixed_point" not in bare.message


@pytest.mark.parametrize("solver", ["nsgs", "nsn"])
def test_the_fixed_point_finishes_it(humanoid: CoulombProgram, solver: str) -> None:
    answer = co.solve(humanoid, solver, BUDGETS[solver])
    assert answer.status is co.Status.OPTIMAL and answer.solver == solver
    assert answer.residuals.fclib <= 1e-8 and answer.residuals.relative <= COULOMB_CONFIRM_LEVEL
    # nsn's Newton steps and NSGS fallback sweeps end here at 1.6e-6..3.5e-6 under this machine's
    # default OpenBLAS kernel, but converge by themselves (38 steps) under the tests' pinned one:
    # the chaotic path of a singular W. NSGS spends its budget under both.
    if solver == "nsgs" or "fixed_point" in answer.message:
        assert "finished by fixed_point from its last iterate" in answer.message
        assert answer.raw["last_resort"]["solver"] == "fixed_point" and answer.raw["last_resort"]["iterations"] >= 1
        assert answer.iterations == BUDGETS[solver]["max_iterations"]  # the method's own count
    # a Coulomb answer: every contact in its cone, the modified velocity in the dual cone, complementary
    r = answer.x.reshape(-1, 3)
    assert np.all(np.linalg.norm(r[:, 1:], axis=1) <= humanoid.mu * r[:, 0] + 1e-9 * np.abs(r).max())


def test_a_converged_solve_does_not_call_it() -> None:
    """One box corner pressed on the floor (W = I / m): NSGS converges in one sweep."""
    program = CoulombProgram(W=sp.csc_matrix(np.eye(3)), q=np.array([-1.0, 0.2, 0.0]), mu=np.array([0.5]), dim=3)
    for solver in ("nsgs", "nsn"):
        answer = co.solve(program, solver)
        assert answer.status is co.Status.OPTIMAL and "last_resort" not in answer.raw
        np.testing.assert_allclose(answer.x, [1.0, -0.2, 0.0], atol=1e-12)  # sticking: u = W r + q = 0


def test_the_option_is_checked() -> None:
    program = CoulombProgram(W=sp.csc_matrix(np.eye(3)), q=np.array([-1.0, 0.0, 0.0]), mu=np.array([0.5]), dim=3)
    for solver in ("nsgs", "nsn"):
        with pytest.raises(co.OptionError, match=rf"solver '{solver}': last_resort must be one of fixed_point, none"):
            co.solve(program, solver, {"last_resort": "pgs"})
