"""The ``newton`` solver's iteration record (option ``history``) and what it shows on the MJCF
sphere pile (issue 11): every step of the exact line search ends where ``l'(alpha) = 0``
(or at ``alpha_max`` with ``l'`` still negative), the cost decreases monotonically, the last
iterate meets (S10), and the number of Newton iterations per step stays bounded on the pile's
first steps, in SAP's near-rigid limit and with a dissipation time scale, at Clarabel's optimum
of the same programs."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from conftest import PROBLEMS
from test_sap import reference_solve, relative

import contactopt as co
from contactopt.programs.primal import PrimalProgram
from contactopt.solvers.newton.solver import DEFAULTS

# l'(alpha) / |l'(0)| where the search stops inside (0, alpha_max): ls_tol = 1e-6 plus rounding.
LINE_SLOPE = 1e-5


def check_history(program: co.ConicProgram, solution: co.Solution) -> list[dict[str, Any]]:
    """The record's invariants (see :func:`contactopt.solvers.newton.solver.record`)."""
    history = solution.raw["history"]
    assert len(history) == solution.iterations + 1
    primal = PrimalProgram.from_conic(program)
    blocks = sum(group.rows.shape[0] for group in primal.cone_layout.groups if group.kind != "free")
    for entry in history:
        assert entry["stiction"] + entry["sliding"] + entry["no_contact"] == blocks
    for before, after in itertools.pairwise(history):
        assert 0.0 < before["alpha"] <= DEFAULTS["alpha_max"]
        assert after["cost"] <= before["cost"] + 1e-12 * abs(before["cost"])
        if before["alpha"] < DEFAULTS["alpha_max"]:
            assert abs(before["line_slope"]) <= LINE_SLOPE
        else:
            assert before["line_slope"] <= LINE_SLOPE
    last = history[-1]
    assert "alpha" not in last
    assert last["residual"] <= DEFAULTS["tol_abs"] + DEFAULTS["tol"] * last["scale"]
    assert last["cost"] == pytest.approx(primal.cost(solution.x[:primal.nv]), rel=1e-12, abs=1e-15)
    return list(history)


@pytest.mark.parametrize("problem", ["box_slide.toml", "sphere_pile_mjcf.toml"])
def test_history_leaves_the_iterates_unchanged(problem: str) -> None:
    # The box runs the dense compiled loop without a record and the NumPy loop with one, the
    # pile the sparse compiled path either way: same iterates to rounding, same count.
    scene = co.load_scene(PROBLEMS / problem)
    program = co.formulate(scene.system, scene.q0, scene.v0 + 0.3, scene.dt, "sap")
    plain = co.solve(program, "newton")
    recorded = co.solve(program, "newton", {"history": True})
    assert plain.raw is None
    assert plain.status is recorded.status is co.solvers.Status.OPTIMAL
    assert plain.iterations == recorded.iterations
    assert relative(plain.x, recorded.x) <= 1e-12
    check_history(program, recorded)
    with pytest.raises(co.errors.OptionError, match="history"):
        co.solve(program, "newton", {"history": "yes"})


@pytest.mark.parametrize("numba", [True, False])
def test_pile_line_search_is_exact_and_iterations_bounded(numba: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # SAP's near-rigid defaults on the pile (MuJoCo's settled penetrations pushed out within a
    # step): 19-36 iterations per step over the first 20 steps, every line search exact. The
    # bound (45) is a regression guard with a margin, not a target.
    from contactopt.solvers.newton import kernels as newton_kernels

    if not numba:
        monkeypatch.setattr(newton_kernels, "AVAILABLE", False)
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    traj = co.simulate(scene, formulation="sap", solver="newton", duration=3 * scene.dt)
    assert traj.completed, traj.message
    for k in (0, 2):
        program = co.formulate(scene.system, traj.q[k], traj.v[k], scene.dt, "sap", t=float(traj.t[k]))
        solution = co.solve(program, "newton", {"history": True})
        assert solution.status is co.solvers.Status.OPTIMAL
        assert solution.iterations <= 45
        history = check_history(program, solution)
        if k == 0:  # from rest every penetrating contact starts in stiction (v = 0: y = v_hat / R)
            assert history[0]["sliding"] == 0 and history[0]["stiction"] > 200
        reference = program.objective(reference_solve(program).x)
        assert (program.objective(solution.x) - reference) / abs(reference) <= 1e-8


def test_pile_with_dissipation_takes_fewer_iterations() -> None:
    # With dissipation_time_scale = 0.05 (epsilon = 0) the penetrations are resolved over
    # h + tau_d, the pile stays at rest, and the warm-started steps take 8-16 iterations
    # (bounded here by 25), against 19-36 in the near-rigid limit; same optimum as Clarabel.
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    options = {"dissipation_time_scale": 0.05, "epsilon": 0.0}
    traj = co.simulate(scene, formulation="sap", solver="newton", options=options, duration=6 * scene.dt)
    assert traj.completed, traj.message
    iterations = [record.iterations for record in traj.steps]
    assert max(iterations) <= 25, iterations
    assert float(np.abs(traj.v[-1]).reshape(-1, 6)[:, :3].max()) < 0.05  # at rest (m/s)
    program = co.formulate(scene.system, traj.q[5], traj.v[5], scene.dt, "sap", options=options,
                           t=float(traj.t[5]))
    solution = co.solve(program, "newton", {"history": True})
    check_history(program, solution)
    reference = program.objective(reference_solve(program).x)
    assert (program.objective(solution.x) - reference) / abs(reference) <= 1e-8


def test_sparse_pattern_takes_all_blocks_only_when_they_share_columns() -> None:
    # The Hessian pattern of the sparse path (newton_sparse) takes every block once the active
    # ones span most column sets: on the pyramidal regularized pile (four edge blocks per
    # contact, one column set) it ends holding all blocks' entries; on SAP's pile, whose
    # candidate list keeps ~240 separated pairs, it keeps only what the solve used.
    from contactopt.solvers.newton import kernels as newton_kernels
    from contactopt.solvers.newton import sparse as newton_sparse

    if not newton_kernels.AVAILABLE:
        pytest.skip("numba is not installed: only the NumPy path exists")
    scene = co.load_scene(PROBLEMS / "sphere_pile_mjcf.toml")
    for formulation, options, takes_all in (("regularized", {"form": "primal"}, True), ("sap", {}, False)):
        newton_sparse._PATTERNS.clear()
        program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation, options=options)
        assert co.solve(program, "newton").status is co.solvers.Status.OPTIMAL
        primal = PrimalProgram.from_conic(program)
        blocks = newton_kernels.block_arrays(primal.cone_layout)
        assert blocks is not None
        run = newton_sparse.SparseNewton(primal.A, primal.J, blocks)
        every = newton_sparse.block_keys(run.cols, run.nv)
        kept = newton_sparse._PATTERNS[scene.system.nv].keys
        assert bool(np.isin(every, kept).all()) == takes_all
        if not takes_all:
            assert kept.shape[0] < 0.6 * every.shape[0]
