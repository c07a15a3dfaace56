"""NSGS's drift along W's null space and its extrapolation (issue 35: ``coulomb`` under nsn and
nsgs on every dm-control and gymnasium model; :mod:`contactopt.solvers.coulomb.nsgs.kernel`,
"Drift"). Each saved program is the first failing step of a run (``experiments/
coulomb_transitions.py``'s models from keyframe 0 with ctrl held; the user's arm at its
defaults), which stopped at max_iterations before: 50000 sweeps (nsgs) or 100 Newton steps and
50000 sweeps (nsn). ``W`` singular there (more contact rows than the rows' rank) and ``q`` with
a part outside ``W``'s range: the sweeps move the impulses by one constant step along the null
space per sweep, at a constant FCLIB error, until a contact's impulse reaches its cone's surface."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import contactopt as co
from contactopt.programs import Status
from contactopt.programs.coulomb import CoulombProgram
from contactopt.solvers.coulomb.nsgs import kernel

DATA = Path(__file__).resolve().parent / "data"
TOL = 1e-8  # the Coulomb solvers' default FCLIB tolerance


def saved(name: str) -> tuple[CoulombProgram, dict[str, np.ndarray]]:
    data = np.load(DATA / name)
    program = CoulombProgram(W=sp.csc_matrix(data["W"]), q=data["q"], mu=data["mu"], dim=3)
    return program, ({"r0": data["r0"]} if "r0" in data else {})


def assert_solved(solution: co.Solution) -> None:
    assert solution.status is Status.OPTIMAL, solution.message
    assert solution.residuals.fclib <= TOL


# -- the exit of a ray from the cone ------------------------------------------------------------
@pytest.mark.parametrize(("r", "d", "mu", "expected"), [
    ((1.0, 0.2, 0.0), (0.0, 0.1, 0.0), 0.5, 3.0),  # ||r_T + t d_T|| = 0.2 + 0.1 t reaches mu r_N = 0.5
    ((1.0, 0.0, 0.3), (0.0, 0.1, 0.0), 0.5, 4.0),  # across the cone: (0.1 t)^2 + 0.3^2 = 0.5^2 at t = 4
    ((1.0, 0.0, 0.0), (-0.25, 0.0, 0.0), 0.0, 4.0),  # frictionless: r_N = 1 - 0.25 t reaches 0
    ((1.0, 0.1, 0.0), (-0.5, 0.0, 0.0), 0.5, 1.6),  # the normal shrinks the cone: 0.5 (1 - 0.5 t) = 0.1
    ((1.0, 0.0, 0.0), (1.0, 0.1, 0.0), 0.5, math.inf),  # deeper into the cone for ever
    ((1.0, 0.5, 0.0), (0.0, 0.0, 0.1), 0.5, math.inf),  # on the surface (sliding): bounded by its normal only
    ((1.0, 0.5, 0.0), (-0.1, 0.0, 0.1), 0.5, 10.0),  # ... which reaches 0 at t = 10
])
def test_cone_exit(r: tuple[float, ...], d: tuple[float, ...], mu: float, expected: float) -> None:
    t = kernel.cone_exit(np.array(r), np.array(d), 0, 3, mu)
    assert t == pytest.approx(expected, rel=1e-12)


def test_a_drift_is_extrapolated_to_its_end_and_kept_in_the_cones() -> None:
    """DRIFT_SWEEPS increments equal to the one before are a drift; its length is the first
    exit over the contacts, and the point reached is in every cone (the exiting contact on its
    surface)."""
    mu = np.array([0.5, 0.0])
    before = np.array([1.0, 0.0, 0.0, 2.0, 0.0, 0.0])
    step = np.array([0.0, 0.01, 0.0, -0.02, 0.0, 0.0])
    last, state = np.zeros(6), kernel.drift_state()
    lengths = []
    for _ in range(kernel.DRIFT_SWEEPS + 1):  # the first increment has none before it to equal
        r = before + step
        lengths.append(kernel.drift_length(r, before, last, state, mu, 3))
        before = r
    # from r = (1, 0.04, 0 | 1.92, 0, 0): contact 0 reaches 0.5 after 46 more, contact 1 reaches 0 after 96
    assert lengths[:-1] == [0.0] * kernel.DRIFT_SWEEPS and lengths[-1] == pytest.approx(46.0, rel=1e-12)
    moved = np.empty(6)
    kernel.drift_move(moved, r, last, mu, 3, lengths[-1])
    np.testing.assert_allclose(moved, [1.0, 0.5, 0.0, 1.0, 0.0, 0.0], rtol=0, atol=1e-14)


# -- the stalls of the runs ---------------------------------------------------------------------
def test_user_arm_forearm_on_the_box() -> None:
    """The user's arm at step 140 (``problems/mjcf/user_arm.xml``, the forearm on the box): three
    contacts, W of rank 7 for 9 rows, and q 1.1e-8 outside its range (two contacts' depths 5e-11 m
    apart where their rows are dependent). With all three sticking the sweeps drift at 3.6e-9 a
    sweep at FCLIB error 2.5e-8; the drift's end (4.2e6 sweeps on) has the third contact at its
    cone's edge, sliding, and there the sweeps converge: an exact solution, to 1e-12 too."""
    program, _ = saved("user_arm_forearm_box.npz")
    U, S, _ = np.linalg.svd(program.W.toarray())
    null = U[:, S / S[0] < 1e-10]
    assert null.shape[1] == 2
    assert np.linalg.norm(null.T @ program.q) == pytest.approx(1.145e-8, rel=1e-2)
    solution = co.solve(program, "nsgs")
    assert_solved(solution)
    assert solution.iterations <= 500 and solution.raw["drift_jumps"] >= 1  # measured 51 sweeps (was 50000)
    exact = co.solve(program, "nsgs", {"tol": 1e-12})
    assert exact.status is Status.OPTIMAL, exact.message
    r = exact.x.reshape(-1, 3)
    assert np.linalg.norm(r[2, 1:]) == pytest.approx(program.mu[2] * r[2, 0], rel=1e-9)  # at the cone's edge
    assert_solved(co.solve(program, "nsn"))


def test_suite_hopper_flat_foot_nsgs_jumps_the_sweeps_it_took() -> None:
    """dm-control's hopper at step 105 (the saved program of test_nsn_stick_slip): NSGS took
    230229 sweeps to reach the toe's sliding, drifting at a constant error of 9.5e-8. The drift
    is extrapolated to that exit: about as many sweeps skipped, and a few dozen swept."""
    program, _ = saved("suite_hopper_flat_foot.npz")
    solution = co.solve(program, "nsgs")
    assert_solved(solution)
    assert solution.iterations <= 1000  # measured 54
    assert solution.raw["drift_sweeps_skipped"] == pytest.approx(230229, rel=1e-2)  # measured 230175


def test_suite_walker_error_check_is_not_starved() -> None:
    """suite/walker at step 233, warm-started: two sweeps meet the tolerance (FCLIB 2.2e-9), but
    the change-gated error check had lowered its threshold below the drift's constant change
    after sweep 1, so FCLIB's error was never computed again (50000 sweeps, max_iterations at an
    error of 1.6e-9). The error is now also computed after sweeps 1, 2, 4, 8, ..."""
    program, warm = saved("suite_walker_drift_stop.npz")
    solution = co.solve(program, "nsgs", warm)
    assert_solved(solution)
    assert solution.iterations <= 10  # measured 2


def test_suite_humanoid_drift_with_sliding_contacts() -> None:
    """suite/humanoid: 29 contacts (21 joint limits) on 27 dofs, W of rank 27 for 87 rows. At
    step 54 both feet drift with a sliding contact each (its impulse turning on the cone's
    surface), so the increments agree to 1e-6 only and a jump to the next exit is refused until
    it is shortened (measured: 28 jumps, 3356 sweeps; before, 50000 sweeps at 6.7e-8). At step
    52 nsn's Newton steps failed their line search 100 times from the warm start and its
    fallback sweeps drifted (2.7e-6); with the extrapolating sweeps it converges."""
    program, _ = saved("suite_humanoid_sliding_drift.npz")
    solution = co.solve(program, "nsgs")
    assert_solved(solution)
    assert solution.iterations <= 20000
    program, warm = saved("suite_humanoid_nsn_stall.npz")
    assert_solved(co.solve(program, "nsn", warm))  # measured 32 Newton steps and 10147 sweeps
    assert_solved(co.solve(program, "nsgs", warm))


def test_gym_humanoidstandup_step_26() -> None:
    """gym/humanoidstandup at step 26 (lying on the floor: W of rank 23 for 87 rows): nsgs drifted
    at 2.1e-8 for 50000 sweeps and nsn's fallback at 2.6e-7 (measured now: 166 sweeps; 26 Newton
    steps and 662 sweeps)."""
    program, _ = saved("gym_humanoidstandup_drift.npz")
    assert_solved(co.solve(program, "nsgs"))
    assert_solved(co.solve(program, "nsn"))


def test_humanoid_cmu_step_10_has_no_solution() -> None:
    """dm-control's CMU humanoid (standalone: its root welded) at step 10: no impulse at all, in
    the cone or not, gives every contact and limit row ``u_N >= 0`` -- the linear program
    ``max_r min_c (W r + q)_N`` has the value -0.0654 (the welded root overlaps the femurs and the
    lower back, and the joint limits forbid opening them at max_recovery_speed). Since at any
    ``r`` the natural map ``F`` has ``u_cN >= F_cN - mu_c ||F_cT||``, ``||F|| >= 0.0654 /
    sqrt(1 + mu^2)`` and FCLIB's error is at least 1.2e-3: no solver can reach 1e-8, and
    neither claims it."""
    program, _ = saved("dm_humanoid_CMU_infeasible.npz")
    W, q, dim = program.W.toarray(), program.q, program.dim
    normal = np.arange(program.contacts) * dim
    # maximize t subject to (W r + q)_N >= t, r free (t capped at 1 to bound the program)
    objective = np.r_[np.zeros(program.m), -1.0]
    rows = np.hstack([-W[normal], np.ones((normal.size, 1))])
    result = linprog(objective, A_ub=rows, b_ub=q[normal], bounds=[(None, None)] * program.m + [(None, 1.0)],
                     method="highs")
    assert result.status == 0 and result.fun is not None
    best = -float(result.fun)
    assert best == pytest.approx(-0.0654, abs=1e-3)
    bound = -best / math.sqrt(1.0 + float(program.mu.max()) ** 2) / (1.0 + math.sqrt(float(np.linalg.norm(q))))
    assert bound >= 1e-3
    for solver, budget in (("nsgs", 5000), ("nsn", 10)):  # any budget: the bound holds at every r
        solution = co.solve(program, solver, {"max_iterations": budget})
        assert solution.status is Status.MAX_ITERATIONS, solution.message
        assert solution.residuals.fclib >= bound * (1 - 1e-9)
