"""OSQP's reused workspace and polishing (contactopt/solvers/osqp_.py): a warm-started solve
that ends unpolished is solved once more from a cold start, the reported iterations are those
of every ADMM run made for the program, and the message says how polishing ended."""

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


@pytest.mark.parametrize(("scene_name", "first", "last", "ending"), [
    ("box_drop", 2, 2, "polishing not needed (no active constraint)"),
    ("box_stack_mjcf", -1, 1, "polishing successful")], ids=["free-fall", "stack"])
def test_unpolished_warm_solve_is_resolved_cold_and_all_iterations_count(
        monkeypatch: pytest.MonkeyPatch, scene_name: str, first: int, last: int, ending: str) -> None:
    """A box falling through the air (no constraint active: OSQP skips polishing) and two
    stacked boxes (on some steps the warm-started ADMM stops at an active set that polishing
    rejects). Along 30 steps of the scene simulated with OSQP, each such warm solve is followed
    by a cold one (OSQP's ``status_polish`` ``first``, then ``last``); the iterations reported
    per program are the sum over its ADMM runs; the answers reach contactopt's own residual
    check, exactly (below 1e-9) where they were polished."""
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    traj = co.simulate(scene, "anitescu", "osqp", duration=30 * scene.dt, on_failure="raise")
    programs = [co.formulate(scene.system, q, v, scene.dt, "anitescu") for q, v in zip(traj.q, traj.v, strict=True)]
    workspace.forget("osqp")
    infos = _count_osqp_solves(monkeypatch)
    runs, solutions = [], []
    for program in programs:
        before = len(infos)
        solutions.append(co.solve(program, "osqp"))
        runs.append(infos[before:])
    resolved = [r for r in runs if len(r) == 2]
    assert resolved and all(r[0].status_polish == first and r[1].status_polish == last for r in resolved)
    for solution, made in zip(solutions, runs, strict=True):
        assert solution.status == co.Status.OPTIMAL
        assert solution.iterations == sum(info.iter for info in made)
        assert max(solution.residuals.primal, solution.residuals.dual) <= 1e-5
        if made[-1].status_polish == 1:
            assert solution.message == "solved; polishing successful" and solution.residuals.worst < 1e-9
    assert all(s.message.endswith(ending) for s, r in zip(solutions, runs, strict=True) if len(r) == 2)


def test_message_without_polishing() -> None:
    """With ``polishing`` off the message is OSQP's status alone; the answer agrees with the
    polished one to the ADMM tolerance (about eps / lambda_min(P), as in test_fast_pipeline)."""
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, "anitescu")
    plain = co.solve(program, "osqp", polishing=False, reuse=False)
    polished = co.solve(program, "osqp", reuse=False)
    assert plain.message == "solved" and polished.message.startswith("solved; polishing ")
    bound = 2e-7 * max(1.0, float(np.abs(program.c).max())) / float(np.linalg.eigvalsh(program.P.toarray()).min())
    np.testing.assert_allclose(plain.x, polished.x, rtol=0, atol=bound)
