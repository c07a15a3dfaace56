"""OSQP's reused workspace and polishing (contactopt/solvers/backends/osqp.py): the kept iterate seeds
the next program only when it was a polished (exact) answer, a warm start that ends unpolished
is solved once more from a cold start, the reported iterations are those of every ADMM run
made for the program, and the message says how polishing ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.solvers import workspace

osqp = pytest.importorskip("osqp")

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _count_osqp_solves(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``info`` of every ``OSQP.solve`` call made from now on."""
    infos: list[Any] = []
    original = osqp.OSQP.solve

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        infos.append(result.info)
        return result

    monkeypatch.setattr(osqp.OSQP, "solve", counted)
    return infos


def _programs(scene_name: str, steps: int) -> list[co.ConicProgram]:
    """Anitescu's programs along ``steps`` steps of the scene simulated with OSQP."""
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    traj = co.simulate(scene, "anitescu", "osqp", duration=steps * scene.dt, on_failure="raise")
    return [co.formulate(scene.system, q, v, scene.dt, "anitescu")  # type: ignore[misc]
            for q, v in zip(traj.q, traj.v, strict=True)]


def _solve_all(programs: list[co.ConicProgram], monkeypatch: pytest.MonkeyPatch,
               **options: Any) -> tuple[list[co.Solution], list[list[Any]]]:
    """The programs solved in turn through one workspace, with the OSQP runs each one made."""
    workspace.forget("osqp")
    infos = _count_osqp_solves(monkeypatch)
    solutions, runs = [], []
    for program in programs:
        before = len(infos)
        solutions.append(co.solve(program, "osqp", **options))
        runs.append(infos[before:])
    return solutions, runs


def test_unpolished_iterates_do_not_seed_the_next_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """A box falling through the air: no constraint is active, OSQP skips polishing ("not
    needed"), so each reused workspace starts cold and runs ADMM once, at no more iterations in
    all than fresh setups. The updated workspace keeps the first program's scaling and rho, so
    the answers agree with fresh ones to the ADMM tolerance (about eps / lambda_min(P)), not
    bit for bit."""
    programs = _programs("box_drop", 30)
    solutions, runs = _solve_all(programs, monkeypatch)
    fresh = [co.solve(program, "osqp", reuse=False) for program in programs]
    assert all(len(r) == 1 and r[0].status_polish == 2 for r in runs)
    assert sum(s.iterations for s in solutions) <= sum(s.iterations for s in fresh)
    for reused, alone, program in zip(solutions, fresh, programs, strict=True):
        assert reused.status == alone.status == co.Status.OPTIMAL
        # OSQP skips polishing without active constraints; contactopt's refinement (on demand:
        # the ADMM iterate's free rows carry its tolerance) then solves the KKT system exactly
        assert reused.message.startswith("solved; polishing not needed (no active constraint)")
        smallest = float(np.linalg.eigvalsh(program.P.toarray()).min())
        bound = 2e-7 * max(1.0, float(np.abs(program.c).max())) / smallest
        np.testing.assert_allclose(reused.x, alone.x, rtol=0, atol=bound)


def test_failed_polish_after_a_warm_start_is_resolved_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stacked boxes: warm-started from the previous polished answer, the ADMM sometimes
    stops at an active set that polishing rejects; the cold re-solve then polishes. Every
    answer is exact (contactopt's own residuals below 1e-9), and the iterations reported per
    program are the sum over its ADMM runs."""
    solutions, runs = _solve_all(_programs("box_stack_mjcf", 30), monkeypatch)
    resolved = [r for r in runs if len(r) == 2]
    assert resolved and all(r[0].status_polish == -1 and r[1].status_polish == 1 for r in resolved)
    for solution, made in zip(solutions, runs, strict=True):
        assert solution.status == co.Status.OPTIMAL and solution.message == "solved; polishing successful"
        assert solution.iterations == sum(info.iter for info in made)
        assert solution.residuals.worst < 1e-9


def test_without_polishing_every_iterate_seeds_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``polishing`` off the message is OSQP's status alone, one ADMM run per program,
    each warm-started (fewer iterations in all than fresh setups), and the answers agree with
    the polished ones to the ADMM tolerance (about eps / lambda_min(P), as in test_fast_pipeline)."""
    programs = _programs("box_slide", 30)
    solutions, runs = _solve_all(programs, monkeypatch, polishing=False)
    fresh = [co.solve(program, "osqp", polishing=False, reuse=False) for program in programs]
    polished = [co.solve(program, "osqp", reuse=False) for program in programs]
    assert all(len(r) == 1 for r in runs)
    assert sum(s.iterations for s in solutions) < sum(s.iterations for s in fresh)
    for plain, exact, program in zip(solutions, polished, programs, strict=True):
        assert plain.status == co.Status.OPTIMAL and plain.message == "solved"
        smallest = float(np.linalg.eigvalsh(program.P.toarray()).min())
        bound = 2e-7 * max(1.0, float(np.abs(program.c).max())) / smallest
        np.testing.assert_allclose(plain.x, exact.x, rtol=0, atol=bound)


def test_a_kept_workspace_never_writes_into_a_solved_program(tmp_path: Path) -> None:
    """OSQP's workspace keeps the arrays it was set up with, and ``update`` writes new values into
    them: set up on a program's own arrays, the next program's update (here the same program
    again, retried in its own units: a 1 ug box, whose first answer falls short) overwrote the
    first program's ``A`` in place, and the verdict then read a matrix the answer was not for.
    The program's arrays are the same before and after, and its answer is optimal."""
    from tests.test_units import box_scene

    scene = box_scene(tmp_path, mass=1e-9, length=1.0, duration=0.25)
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation="anitescu")
    A, P, b, c = program.A.data.copy(), program.P.data.copy(), program.b.copy(), program.c.copy()
    workspace.forget("osqp")
    solution = co.solve(program, "osqp")
    for before, after in ((A, program.A.data), (P, program.P.data), (b, program.b), (c, program.c)):
        np.testing.assert_array_equal(after, before)
    assert solution.status is co.Status.OPTIMAL, solution.message


def test_a_kept_workspace_leaves_the_programs_it_was_set_up_on_as_they_were() -> None:
    """OSQP 1.x writes an update's ``P`` and ``A`` values into the buffers ``setup`` was given:
    the backend gives it copies, so solving a second program of the same pattern (a reused
    workspace) leaves the first program's matrices, and so its residuals, unchanged."""
    import scipy.sparse as sp

    from contactopt.programs import ConicProgram, Nonneg

    def program(scale: float) -> ConicProgram:
        return ConicProgram(P=sp.csc_matrix(np.diag([2.0, 3.0]) * scale), c=np.array([-1.0, 1.0]),
                            A=sp.csc_matrix(np.array([[1.0, 1.0], [0.0, -1.0]]) * scale), b=np.array([0.25, 0.0]),
                            cones=(Nonneg(2),))

    workspace.forget("osqp")  # a fresh setup on the first program's own matrices
    first, second = program(1.0), program(7.0)
    P_before, A_before = first.P_upper.toarray(), first.A.toarray()
    answer = co.solve(first, "osqp")
    co.solve(second, "osqp")  # the same pattern: the kept workspace is updated
    np.testing.assert_array_equal(first.P_upper.toarray(), P_before)
    np.testing.assert_array_equal(first.A.toarray(), A_before)
    again = co.solve(first, "osqp", reuse=False)
    np.testing.assert_allclose(again.x, answer.x, rtol=0, atol=1e-12)
