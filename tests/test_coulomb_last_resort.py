"""``nsgs`` and ``nsn`` finish a spent budget by their last-resort chain from their last iterate
(:mod:`contactopt.solvers.coulomb.last_resort`: the other method, then De Saxcé's fixed point).
On dm-control's humanoid at step 52 (saved from ``experiments/coulomb_transitions.py``: 29
contacts and limits on 27 dofs, a singular ``W``), where the sweeps drift at FCLIB error ~2e-8 and
the semismooth Newton method stalls near 4e-6, and at step 189, where the semismooth Newton method
ends at 1.2e-6 and the fixed point from its iterate stalls at 2.6e-8 while NSGS from it converges,
both end OPTIMAL at FCLIB error <= 1e-8 with contactopt's relative residual confirming, and say
how; ``last_resort="none"`` keeps the bare method's MAX_ITERATIONS; a solve that converges never
calls it. On dm-control's CMU humanoid (``max_recovery_speed=0.001``, step 78) NSGS ends at 1.5e-5
and one Newton step from its iterate reaches 2e-12."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.programs.coulomb import COULOMB_CONFIRM_LEVEL, CoulombProgram

DATA = Path(__file__).resolve().parent / "data"


def saved(name: str) -> CoulombProgram:
    with np.load(DATA / name) as d:
        W = sp.csr_matrix((d["W_data"], d["W_indices"], d["W_indptr"]), shape=tuple(d["W_shape"]))
        return CoulombProgram(W=W.tocsc(), q=d["q"], mu=d["mu"], dim=3)


@pytest.fixture(scope="module")
def humanoid() -> CoulombProgram:
    return saved("suite_humanoid_step52_coulomb.npz")


BUDGETS = {"nsgs": {"max_iterations": 3000}, "nsn": {"max_iterations": 50}}


def test_the_bare_method_spends_its_budget(humanoid: CoulombProgram) -> None:
    solver = "nsgs"  # (nsn's path on this program depends on the BLAS kernel's rounding: see below)
    bare = co.solve(humanoid, solver, {**BUDGETS[solver], "last_resort": "none"})
    assert bare.status is co.Status.MAX_ITERATIONS and bare.residuals.fclib > 1e-8
    assert "last_resort" not in bare.raw and "fixed_point" not in bare.message


@pytest.mark.parametrize("solver", ["nsgs", "nsn"])
def test_the_chain_finishes_it(humanoid: CoulombProgram, solver: str) -> None:
    answer = co.solve(humanoid, solver, BUDGETS[solver])
    assert answer.status is co.Status.OPTIMAL and answer.solver == solver
    assert answer.residuals.fclib <= 1e-8 and answer.residuals.relative <= COULOMB_CONFIRM_LEVEL
    # nsn's Newton steps and NSGS fallback sweeps end here at 1.6e-6..3.5e-6 under this machine's
    # default OpenBLAS kernel, but converge by themselves (38 steps) under the tests' pinned one:
    # the chaotic path of a singular W. NSGS spends its budget under both.
    if solver == "nsgs" or "finished by" in answer.message:
        method = answer.raw["last_resort"]["solver"]
        assert answer.message.endswith(f"; finished by {method}") and f"then {method} from the last iterate" in \
            answer.message
        assert method in ("nsgs", "nsn", "fixed_point") and method != solver
        assert answer.raw["last_resort"]["iterations"] >= 1
        assert answer.iterations == BUDGETS[solver]["max_iterations"]  # the method's own count
    r = answer.x.reshape(-1, 3)  # every contact's impulse in its friction cone
    assert np.all(np.linalg.norm(r[:, 1:], axis=1) <= humanoid.mu * r[:, 0] + 1e-9 * np.abs(r).max())


def test_nsn_is_finished_by_nsgs_where_the_fixed_point_stalls() -> None:
    program = saved("suite_humanoid_step189_coulomb.npz")
    fixed = co.solve(program, "fixed_point")
    assert fixed.status is co.Status.MAX_ITERATIONS and fixed.residuals.fclib > 1e-8  # why nsgs comes first
    answer = co.solve(program, "nsn")
    assert answer.status is co.Status.OPTIMAL and answer.residuals.fclib <= 1e-8
    assert answer.residuals.relative <= COULOMB_CONFIRM_LEVEL
    if "finished by" in answer.message:  # (the path depends on the BLAS kernel's rounding, as above)
        assert answer.raw["last_resort"]["chain"][0] == "nsgs"
    r = answer.x.reshape(-1, 3)  # every contact's impulse in its friction cone
    assert np.all(np.linalg.norm(r[:, 1:], axis=1) <= program.mu * r[:, 0] + 1e-9 * np.abs(r).max())


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
        with pytest.raises(co.OptionError, match=rf"solver .{solver}.: last_resort must be none or a chain of"):
            co.solve(program, solver, {"last_resort": "pgs"})


def test_nsgs_is_finished_by_nsn() -> None:
    program = saved("humanoid_cmu_step78_coulomb.npz")
    bare = co.solve(program, "nsgs", {"last_resort": "none"})
    assert bare.status is co.Status.MAX_ITERATIONS and bare.residuals.fclib > 1e-6
    answer = co.solve(program, "nsgs")
    assert answer.status is co.Status.OPTIMAL and answer.residuals.fclib <= 1e-8
    assert answer.raw["last_resort"]["chain"] == ["nsn"] and answer.iterations == bare.iterations
