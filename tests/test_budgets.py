"""Budgets and bounds (contactopt.core.budgets): loud limits instead of hangs, huge allocations and
silent acceptance.

* A run over the step budget (``duration / dt`` > 10**6 by default) or with ``dt > duration``
  is refused before any work, from the API, a scene file, an MJCF timestep and the CLI; the
  budget can be raised (``max_steps``, ``--max-steps``, ``[scene] max_steps``).
* Lemke stops at its pivot budget with ``max_iterations`` (and the run's record says so);
  every iterative solver's bound ends in a loud status and invalid bounds are refused.
* ``k`` friction directions: bounded, and the size they imply is checked before allocating.
* CLI comma lists without empty items; ``compare`` refuses an unknown formulation option.
* Controllers must return numbers; references undefined for the scene's parameters (``mu = 0``)
  are reported, not fatal; refinement prints no LAPACK message.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core import budgets
from contactopt.core.errors import BudgetError, OptionError

ROOT = Path(__file__).resolve().parents[1]


def cart() -> co.Scene:
    return co.load_scene(ROOT / "problems" / "cart_wall.toml")


def box(duration: float = 0.002) -> co.Scene:
    return dataclasses.replace(co.load_scene(ROOT / "problems" / "box_slide.toml"), duration=duration)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


# --------------------------------------------------------------------------- step budget


@pytest.mark.parametrize(("dt", "duration"), [(1e-300, 1.0), (1e-3, 1e300), (1e-7, 1.0)])
def test_a_run_over_the_step_budget_is_refused_before_running(dt: float, duration: float) -> None:
    with pytest.raises(BudgetError, match="exceeds the step budget of 1000000"):
        co.simulate(cart(), dt=dt, duration=duration)


def test_the_step_budget_can_be_raised_and_lowered() -> None:
    with pytest.raises(BudgetError, match="step budget of 2"):
        co.simulate(cart(), dt=0.1, duration=0.3, max_steps=2)
    traj = co.simulate(cart(), dt=0.1, duration=0.3, max_steps=3)
    assert len(traj.steps) == 3 and traj.completed
    assert budgets.plan_steps(1e-7, 1.0, max_steps=10**7) == 10**7  # raised: accepted


def test_dt_larger_than_duration_is_an_error() -> None:
    with pytest.raises(BudgetError, match="larger than duration"):
        co.simulate(cart(), dt=0.5, duration=0.3)


@pytest.mark.parametrize("value", [0, -1, 2.5, "10", True])
def test_invalid_max_steps_is_an_option_error(value: Any) -> None:
    with pytest.raises(OptionError, match="max_steps"):
        co.simulate(cart(), max_steps=value)


def test_scene_key_max_steps(tmp_path: Path) -> None:
    text = (ROOT / "problems" / "cart_wall.toml").read_text().replace("[scene]\n", "[scene]\nmax_steps = 5\n", 1)
    path = tmp_path / "cart.toml"
    path.write_text(text)
    scene = co.load_scene(path)
    assert scene.max_steps == 5
    with pytest.raises(BudgetError, match="step budget of 5"):
        co.simulate(scene)
    path.write_text(text.replace("max_steps = 5", 'max_steps = "many"'))
    with pytest.raises(co.ContactoptError, match=r"scene\.max_steps"):
        co.load_scene(path)


def test_mjcf_timestep_tiny_is_refused(tmp_path: Path) -> None:
    model = (ROOT / "problems" / "mjcf" / "box_plane.xml").read_text()
    assert 'timestep="0.001"' in model
    text = model.replace('timestep="0.001"', 'timestep="1e-12"')
    path = tmp_path / "tiny.xml"
    path.write_text(text)
    with pytest.raises(BudgetError, match="step budget"):
        co.simulate(co.load_scene(path))


def test_cli_step_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = cli(capsys, "run", "cart_wall", "--dt", "1e-300", "--out", str(tmp_path / "a"))
    assert code == 1 and err.count("\n") == 1 and "step budget" in err
    code, err = cli(capsys, "run", "cart_wall", "--max-steps", "3", "--out", str(tmp_path / "b"))
    assert code == 1 and "step budget of 3" in err
    code, err = cli(capsys, "compare", "cart_wall", "--dt", "5", "--out", str(tmp_path / "c"), "--no-plot")
    assert code == 1 and "larger than duration" in err


# --------------------------------------------------------------------------- iteration budgets


def test_lemke_stops_at_its_pivot_budget_with_max_iterations() -> None:
    lcp = co.LCP(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]]), [-1.0, -1.0, -1.0])
    solved = co.solve(lcp, "lemke")
    assert solved.status is co.Status.OPTIMAL and solved.iterations >= 3
    capped = co.solve(lcp, "lemke", max_iter=1)
    assert capped.status is co.Status.MAX_ITERATIONS and "pivot budget" in capped.message
    assert "max_iter" in capped.message


def test_lemke_default_budget_is_bounded_by_work() -> None:
    from contactopt.solvers.lemke import default_pivot_budget

    assert default_pivot_budget(3) == 1000 and default_pivot_budget(168) == 8400
    assert default_pivot_budget(2916) == 58  # one step of sphere_pile_mjcf: seconds, not hours


def test_simulate_records_lemke_max_iterations() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(box(), formulation="lcp", solver="lemke", solver_options={"max_iter": 1})
    assert not traj.completed and traj.steps[-1].status is co.Status.MAX_ITERATIONS
    assert "max_iterations" in traj.message


@pytest.mark.parametrize(("solver", "key", "value"), [
    ("lemke", "max_iter", -1), ("lemke", "max_iter", "many"), ("lemke", "refresh_every", 0),
    ("osqp", "max_iter", 0), ("osqp", "max_iter", "x"), ("clarabel", "max_iter", -1),
    ("clarabel", "max_iter", 2.5), ("pgs", "max_iter", -1),
])
def test_invalid_iteration_bounds_are_option_errors(solver: str, key: str, value: Any) -> None:
    program: Any = co.LCP(np.eye(2), [-1.0, -1.0]) if solver in ("lemke", "pgs") else \
        co.formulate(cart().system, q=[0.2], v=[-2.0], dt=0.1, formulation="gauss")
    with pytest.raises(OptionError, match=key):
        co.solve(program, solver, **{key: value})


@pytest.mark.parametrize(("formulation", "solver", "options"), [
    ("gauss:dual", "pgs", {"max_iter": 1}), ("gauss", "clarabel", {"max_iter": 1}),
    ("gauss", "osqp", {"max_iter": 1, "polishing": False}), ("sap", "newton", {"max_iter": 0}),
    ("lcp", "lemke", {"max_iter": 1}),
])
def test_every_iteration_bound_ends_in_a_loud_status(formulation: str, solver: str, options: dict[str, Any]) -> None:
    name, _, form = formulation.partition(":")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(box(0.01), formulation=name, solver=solver, solver_options=options,
                           options={"form": form} if form else None)
    assert not traj.completed and traj.steps[-1].status is co.Status.MAX_ITERATIONS, traj.message


def test_newton_iteration_options_are_counts() -> None:
    with pytest.raises(OptionError, match="ls_max_iter"):
        co.simulate(box(), formulation="sap", solver="newton", solver_options={"ls_max_iter": "x"})


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize("formulation", ["lcp", "anitescu"])
def test_friction_directions_are_bounded(formulation: str) -> None:
    with pytest.raises(OptionError, match="k = 100000"):
        co.simulate(box(), formulation=formulation, options={"k": 100000})


def test_the_size_k_implies_is_checked_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budgets, "MAX_ALLOCATION_BYTES", 2**20)  # 1 MiB: k = 64 on 8 corners is 2.1 MiB
    for formulation in ("lcp", "anitescu"):
        options = {"k": 64, **({"form": "dual"} if formulation == "anitescu" else {})}
        with pytest.raises(BudgetError, match=r"k = 64 implies .* MiB"):
            co.simulate(box(), formulation=formulation, options=options)


# --------------------------------------------------------------------------- CLI lists


@pytest.mark.parametrize(("args", "fragment"), [
    (["--formulations", "lcp:kk=3"], "unknown option(s) 'kk'"),
    (["--dt", "1e-3,,2e-3"], "item 2 of 3 is empty"),
    (["--solvers", "clarabel,,osqp"], "--solvers"),
    (["--formulations", ","], "item 1 of 2 is empty"),
    (["--solvers", "clarabel,"], "item 2 of 2 is empty"),
    (["--dt", "0.1,abc"], "'abc' is not a number"),
])
def test_compare_lists_are_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str],
                                   fragment: str) -> None:
    code, err = cli(capsys, "compare", "cart_wall", *args, "--executor", "serial", "--no-plot",
                    "--out", str(tmp_path))
    assert code == 1 and err.count("\n") == 1 and err.startswith("contactopt: error:") and fragment in err


def test_bench_and_export_lists_are_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = cli(capsys, "bench", str(tmp_path), "--solvers", "clarabel,,osqp", "--out", str(tmp_path / "b"))
    assert code == 1 and "--solvers 'clarabel,,osqp': item 2 of 3 is empty" in err
    code, err = cli(capsys, "export", "cart_wall", "--format", "npz,", "--out", str(tmp_path / "e"))
    assert code == 1 and "an empty item" in err


# --------------------------------------------------------------------------- controllers


@pytest.mark.parametrize("output", ["1.0", None, b"1", True, ["1", "2"], [1.0, None]])
def test_a_controller_must_return_numbers(output: Any) -> None:
    scene = co.load_scene(ROOT / "problems" / "double_pendulum_driven.toml")

    def string_controller(t: float, q: np.ndarray, v: np.ndarray) -> Any:
        return output

    with pytest.raises(co.ContactoptError, match=r"string_controller output at step 0.*not an array of numbers"):
        co.simulate(scene, duration=0.01, controller=string_controller)


# --------------------------------------------------------------------------- observables


def test_frictionless_box_slide_loads_runs_and_reports_the_reference_undefined(tmp_path: Path) -> None:
    path = tmp_path / "box0.toml"
    path.write_text((ROOT / "problems" / "box_slide.toml").read_text().replace("mu = 0.5", "mu = 0.0"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy divide-by-zero warning
        scene = co.load_scene(path)
    stop = next(o for o in scene.observables if o.name == "stop_distance")
    assert stop.reference_value(scene.dt, scene.duration) == np.inf
    assert stop.reference_note(scene.dt, scene.duration).endswith("undefined for mu = 0")
    from contactopt.analysis.observations import measure_all

    traj = co.simulate(dataclasses.replace(scene, duration=0.01))
    values, problems = measure_all(scene, traj, {}, scene.dt, 0.01)
    assert np.isnan(values["stop_distance_err"]) and any("undefined for mu = 0" in p for p in problems)


def test_a_reference_dividing_by_zero_is_reported_not_fatal(tmp_path: Path) -> None:
    text = (ROOT / "problems" / "cart_wall.toml").read_text()
    path = tmp_path / "cart.toml"
    path.write_text(text + '\n[observables.a]\nkind = "stop_time"\nreference = "1 / (h - dt)"\n')
    scene = co.load_scene(path)
    observable = next(o for o in scene.observables if o.name == "a")
    assert np.isnan(observable.reference_value(scene.dt, 1.0))
    assert "undefined" in str(observable.reference_note(scene.dt, 1.0))


# --------------------------------------------------------------------------- LAPACK


def test_refinement_prints_no_lapack_message(capfd: pytest.CaptureFixture[str]) -> None:
    scene = co.load_scene(ROOT / "problems" / "sphere_pile_mjcf.toml")
    traj = co.simulate(scene, formulation="anitescu", solver="clarabel", dt=0.05, duration=0.4)
    err = capfd.readouterr().err
    assert "DTRSV" not in err and "illegal value" not in err
    # optimal, or inaccurate where an edge's impulse and velocity are both a sliver of their
    # own scales (the row-wise judgement of issue 24)
    assert traj.completed and all(r.status.usable for r in traj.steps)
    # KKT systems with more active rows than unknowns (~700 for 600) are singular: the regularized
    # sparse LDL^T (contactopt.solvers.polish.regularized_kkt_solve) refines them, SuperLU is not called
    active = [int(r.message.rsplit("refined on ", 1)[1].split()[0]) for r in traj.steps if r.refined]
    assert len(active) >= 6 and max(active) > 600
