"""OSQP's reused workspace and polishing (contactopt/solvers/osqp_.py): a warm-started solve
whose polishing failed is solved once more from a cold start, one whose polishing had no
active constraint to work on is not, and the reported iterations are those of every ADMM
solve run for the program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.solvers import workspace

osqp = pytest.importorskip("osqp")

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _programs(scene_name: str, steps: int, solver: str) -> list[co.ConicProgram]:
    """Anitescu's programs along ``steps`` steps of the scene simulated with ``solver``."""
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    traj = co.simulate(scene, "anitescu", solver, duration=steps * scene.dt, on_failure="raise")
    programs = [co.formulate(scene.system, q, v, scene.dt, "anitescu") for q, v in zip(traj.q, traj.v, strict=True)]
    assert all(isinstance(program, co.ConicProgram) for program in programs)
    return programs  # type: ignore[return-value]


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


def test_no_cold_resolve_when_no_constraint_is_active(monkeypatch: pytest.MonkeyPatch) -> None:
    """A box falling through the air: its contact candidates are all separated, OSQP finds no
    active constraint and skips polishing ("not needed"), and a cold start would find none
    either, so each reused workspace runs ADMM once. The answers are those of fresh setups to
    the ADMM tolerance (as in test_fast_pipeline's reuse test: about eps / lambda_min(P))."""
    programs = _programs("box_drop", 30, "clarabel")
    fresh = [co.solve(program, "osqp", reuse=False) for program in programs]
    workspace.forget("osqp")
    infos = _count_osqp_solves(monkeypatch)
    reused = [co.solve(program, "osqp") for program in programs]
    assert len(infos) == len(programs)  # one ADMM run per program, none repeated cold
    for a, b, program in zip(reused, fresh, programs, strict=True):
        assert a.status == b.status == co.Status.OPTIMAL
        assert a.message.endswith("polishing not needed (no active constraint)")
        smallest = float(np.linalg.eigvalsh(program.P.toarray()).min())
        bound = 2e-7 * max(1.0, float(np.abs(program.c).max())) / smallest
        np.testing.assert_allclose(a.x, b.x, rtol=0, atol=bound)
    assert sum(s.iterations for s in reused) <= sum(s.iterations for s in fresh)


def test_failed_polish_is_resolved_cold_and_all_iterations_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stacked boxes: on some steps the warm-started ADMM stops at an active set that
    polishing rejects, and the cold re-solve then polishes. Every answer is polished (exact to
    rounding: contactopt's own residuals below 1e-9), and the iterations reported per program
    are the sum over the ADMM runs made for it."""
    programs = _programs("box_stack_mjcf", 30, "osqp")
    workspace.forget("osqp")
    infos = _count_osqp_solves(monkeypatch)
    runs, solutions = [], []
    for program in programs:
        before = len(infos)
        solutions.append(co.solve(program, "osqp"))
        runs.append(infos[before:])
    assert any(len(r) == 2 and r[0].status_polish == -1 for r in runs)  # the cold re-solve ran
    for solution, made in zip(solutions, runs, strict=True):
        assert solution.status == co.Status.OPTIMAL
        assert made[-1].status_polish == 1 and solution.message.endswith("polishing successful")
        assert solution.iterations == sum(info.iter for info in made)
        assert solution.residuals.worst < 1e-9
