"""Budgets and bounds (issue "Verdicts that units cannot fool: ... loud limits"): step counts
that would never end, ``dt > duration``, pivot and iteration budgets, option sizes that would
allocate terabytes, comma lists with empty items, controllers returning text, and observables
whose reference is undefined for the scene's parameters (``mu = 0``)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from badinputs.base import GOOD, ROOT, Case, api_call, box_scene, cart_qp, cart_scene, cli_call, co

DRIVEN = ROOT / "problems" / "double_pendulum_driven.toml"
BOX = ROOT / "problems" / "box_slide.toml"


def scene_run(old: str, new: str) -> Callable[[Path], Any]:
    """GOOD with ``old`` replaced by ``new``, loaded and simulated (the budget is checked by
    the run, before its first step)."""
    def run(tmp: Path) -> Any:
        assert old in GOOD, old
        path = tmp / "scene.toml"
        path.write_text(GOOD.replace(old, new))
        return co.simulate(co.load_scene(path))
    return run


def mjcf_timestep(timestep: str, cli: bool = False) -> Callable[[Path], Any]:
    """The bundled box_plane model with ``opt.timestep`` edited, run without a duration."""
    def run(tmp: Path) -> Any:
        text = (ROOT / "problems" / "mjcf" / "box_plane.xml").read_text()
        assert 'timestep="0.001"' in text
        path = tmp / "tiny.xml"
        path.write_text(text.replace('timestep="0.001"', f'timestep="{timestep}"'))
        if cli:
            return cli_call("run", str(path), "--no-plot", "--no-progress")(tmp)
        return co.simulate(co.load_scene(path))
    return run


def three_by_three() -> co.LCP:
    """A 3x3 LCP (tridiagonal, q < 0) that Lemke solves in 4 pivots."""
    return co.LCP(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]]), [-1.0, -1.0, -1.0])


def status_is(expected: co.Status) -> Callable[[Any], str | None]:
    def check(result: Any) -> str | None:
        status = result.steps[-1].status if isinstance(result, co.Trajectory) else result.status
        return None if status is expected else f"status {status}, expected {expected}"
    return check


def quiet(call: Callable[[], Any]) -> Callable[[Path], Any]:
    """An API call whose PartialTrajectoryWarning is part of the expected answer."""
    def run(tmp: Path) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    return run


def run_steps(scene: co.Scene, **kwargs: Any) -> Callable[[], Any]:
    return lambda: co.simulate(scene, **kwargs)


def controlled(output: Any) -> Callable[[Path], Any]:
    def run(tmp: Path) -> Any:
        def returns_output(t: float, q: np.ndarray, v: np.ndarray) -> Any:
            return output
        return co.simulate(co.load_scene(DRIVEN), duration=0.01, controller=returns_output)
    return run


def frictionless_box(tmp: Path) -> Any:
    path = tmp / "box0.toml"
    path.write_text(BOX.read_text().replace("mu = 0.5", "mu = 0.0"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a NumPy divide-by-zero warning fails the case
        scene = co.load_scene(path)
    from contactopt.analysis.observations import measure_all

    traj = co.simulate(dataclasses.replace(scene, duration=0.01))
    return scene, measure_all(scene, traj, {}, scene.dt, 0.01)


def reported_undefined(result: Any) -> str | None:
    _scene, (values, problems) = result
    if not np.isinf(values["stop_distance_ref"]) or not np.isnan(values["stop_distance_err"]):
        return f"stop_distance reference {values['stop_distance_ref']}, error {values['stop_distance_err']}"
    if not any("undefined for mu = 0" in problem for problem in problems):
        return f"no note 'undefined for mu = 0' in {problems}"
    return None


def frictionless_reference(reference: str) -> Callable[[Path], Any]:
    """The box at mu = 0 with one more observable whose reference divides by mu."""
    def run(tmp: Path) -> Any:
        path = tmp / "box0.toml"
        path.write_text(BOX.read_text().replace("mu = 0.5", "mu = 0.0")
                        + f'\n[observables.slide]\nkind = "stop_time"\nreference = "{reference}"\n')
        scene = co.load_scene(path)
        observable = next(o for o in scene.observables if o.name == "slide")
        return observable.reference_value(scene.dt, scene.duration), observable.reference_note(scene.dt, 1.0)
    return run


def undefined_note(result: Any) -> str | None:
    value, note = result
    if np.isfinite(value) or not note or "mu = 0" not in note:
        return f"reference {value}, note {note!r}"
    return None


def pile_one_lemke_step(tmp: Path) -> Any:
    """One step of sphere_pile_mjcf by Lemke: the pivot budget ends it in seconds."""
    scene = co.load_scene("sphere_pile_mjcf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return co.simulate(scene, formulation="lcp", solver="lemke", duration=scene.dt)


def pile_without_lapack_noise(tmp: Path) -> Any:
    """The pile at dt = 0.05 (anitescu / clarabel, refinement on): fd 2 captured."""
    scene = co.load_scene("sphere_pile_mjcf")
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            traj = co.simulate(scene, formulation="anitescu", solver="clarabel", dt=0.05, duration=0.4)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return traj, sink.read().decode(errors="replace")


def no_lapack_message(result: Any) -> str | None:
    traj, err = result
    if "illegal value" in err:
        return f"LAPACK printed: {err.strip().splitlines()[0]}"
    if not traj.completed or not all(r.status.usable for r in traj.steps):  # optimal, or loudly inaccurate
        return f"run {traj.message!r}"
    return None


def cases() -> list[Case]:
    scene, cli, api = "scene file", "CLI", "API"
    box = box_scene()
    cart = cart_scene()
    max_iterations = status_is(co.Status.MAX_ITERATIONS)
    return [
        # --- step budget: scene files, MJCF --------------------------------------------------
        Case(scene, "dt = 1e-300 (steps over the budget)", scene_run("dt = 0.1", "dt = 1e-300"), timeout=20),
        Case(scene, "dt = 1e-9 (3e8 steps)", scene_run("dt = 0.1", "dt = 1e-9"), timeout=20),
        Case(scene, "duration = 1e300", scene_run("duration = 0.3", "duration = 1e300"), timeout=20),
        Case(scene, "dt larger than duration", scene_run("dt = 0.1", "dt = 0.5")),
        Case(scene, "max_steps = 0", scene_run('name = "bad"', 'name = "bad"\nmax_steps = 0')),
        Case(scene, "max_steps negative", scene_run('name = "bad"', 'name = "bad"\nmax_steps = -5')),
        Case(scene, "max_steps a string", scene_run('name = "bad"', 'name = "bad"\nmax_steps = "many"')),
        Case(scene, "max_steps a fraction", scene_run('name = "bad"', 'name = "bad"\nmax_steps = 2.5')),
        Case(scene, "max_steps a bool", scene_run('name = "bad"', 'name = "bad"\nmax_steps = true')),
        Case(scene, "max_steps below the run's 3 steps", scene_run('name = "bad"', 'name = "bad"\nmax_steps = 2')),
        Case(scene, "max_steps equal to the run's steps", scene_run('name = "bad"', 'name = "bad"\nmax_steps = 3'),
             expect="answer", check=lambda t: None if len(t.steps) == 3 and t.completed else t.message),
        Case(scene, "MJCF timestep 1e-12 run without duration", mjcf_timestep("1e-12"), timeout=20),
        Case(scene, "MJCF timestep 1e-300", mjcf_timestep("1e-300"), timeout=20),
        Case(scene, "box_slide with mu = 0 (observables undefined)", frictionless_box, expect="answer",
             check=reported_undefined),
        Case(scene, "mu = 0, reference 1 / (mu * g)", frictionless_reference("1 / (mu * g)"), expect="answer",
             check=undefined_note),
        Case(scene, "mu = 0, reference v0[0] / (mu * g)", frictionless_reference("v0[0] / (mu * g)"),
             expect="answer", check=undefined_note),
        # --- step budget, lists, options: the CLI ------------------------------------------
        Case(cli, "run --dt 1e-300", cli_call("run", "cart_wall", "--dt", "1e-300", "--no-plot"), timeout=20),
        Case(cli, "run --duration 1e300", cli_call("run", "cart_wall", "--duration", "1e300", "--no-plot"),
             timeout=20),
        Case(cli, "run --dt larger than duration", cli_call("run", "cart_wall", "--dt", "5", "--no-plot")),
        Case(cli, "run --max-steps 0", cli_call("run", "cart_wall", "--max-steps", "0", "--no-plot")),
        Case(cli, "run --max-steps -3", cli_call("run", "cart_wall", "--max-steps", "-3", "--no-plot")),
        Case(cli, "run --max-steps abc", cli_call("run", "cart_wall", "--max-steps", "abc", "--no-plot")),
        Case(cli, "run --max-steps below the steps", cli_call("run", "cart_wall", "--max-steps", "3", "--no-plot")),
        Case(cli, "run an MJCF file with timestep 1e-12", mjcf_timestep("1e-12", cli=True), timeout=20),
        Case(cli, "export --dt 1e-300", cli_call("export", "cart_wall", "--format", "npz", "--dt", "1e-300"),
             timeout=20),
        Case(cli, "render --dt 1e-300", cli_call("render", "cart_wall", "--dt", "1e-300", "--out", "{tmp}/v.gif"),
             timeout=20),
        Case(cli, "compare --dt 1e-3,,2e-3", cli_call("compare", "cart_wall", "--dt", "1e-3,,2e-3", "--no-plot")),
        Case(cli, "compare --dt trailing comma", cli_call("compare", "cart_wall", "--dt", "0.1,", "--no-plot")),
        Case(cli, "compare --dt leading comma", cli_call("compare", "cart_wall", "--dt", ",0.1", "--no-plot")),
        Case(cli, "compare --dt an item not a number", cli_call("compare", "cart_wall", "--dt", "0.1,abc",
                                                                 "--no-plot")),
        Case(cli, "compare --dt a negative item", cli_call("compare", "cart_wall", "--dt", "0.1,-0.2", "--no-plot")),
        Case(cli, "compare --dt 1e-300", cli_call("compare", "cart_wall", "--dt", "1e-300", "--no-plot"), timeout=20),
        Case(cli, "compare --dt larger than duration", cli_call("compare", "cart_wall", "--dt", "5", "--no-plot")),
        Case(cli, "compare --solvers a,,b", cli_call("compare", "cart_wall", "--solvers", "clarabel,,osqp",
                                                     "--no-plot")),
        Case(cli, "compare --solvers ,", cli_call("compare", "cart_wall", "--solvers", ",", "--no-plot")),
        Case(cli, "compare --formulations ,", cli_call("compare", "cart_wall", "--formulations", ",", "--no-plot")),
        Case(cli, "compare --formulations trailing comma", cli_call("compare", "cart_wall", "--formulations",
                                                                    "gauss,", "--no-plot")),
        Case(cli, "compare --formulations lcp:kk=3", cli_call("compare", "cart_wall", "--formulations", "lcp:kk=3",
                                                              "--executor", "serial", "--no-plot")),
        Case(cli, "compare --formulations anitescu:k=100000", cli_call(
            "compare", "box_slide", "--formulations", "anitescu:k=100000", "--executor", "serial", "--no-plot")),
        Case(cli, "bench --solvers a,,b", cli_call("bench", "{tmp}", "--solvers", "clarabel,,osqp",
                                                   "--out", "{tmp}/b")),
        Case(cli, "bench --profiles trailing comma", cli_call("bench", "{tmp}", "--profiles", "default,",
                                                              "--out", "{tmp}/b")),
        Case(cli, "export --format npz,", cli_call("export", "cart_wall", "--format", "npz,")),
        Case(cli, "run -f lcp -o k=100000", cli_call("run", "box_slide", "-f", "lcp", "-o", "k=100000",
                                                     "--no-plot"), timeout=20),
        Case(cli, "run -f anitescu -o k=100000", cli_call("run", "box_slide", "-f", "anitescu", "-o", "k=100000",
                                                          "--no-plot"), timeout=20),
        Case(cli, "run -f lcp -o k=-2", cli_call("run", "box_slide", "-f", "lcp", "-o", "k=-2", "--no-plot")),
        Case(cli, "run -f lcp -o k=0", cli_call("run", "box_slide", "-f", "lcp", "-o", "k=0", "--no-plot")),
        Case(cli, "run -f lcp -o k=2.5", cli_call("run", "box_slide", "-f", "lcp", "-o", "k=2.5", "--no-plot")),
        Case(cli, "run -f anitescu -o k=3", cli_call("run", "box_slide", "-f", "anitescu", "-o", "k=3",
                                                     "--no-plot")),
        Case(cli, "run lemke max_iter=-1", cli_call("run", "box_slide", "-f", "lcp", "-s", "lemke",
                                                    "--solver-option", "max_iter=-1", "--no-plot")),
        Case(cli, "run lemke max_iter=abc", cli_call("run", "box_slide", "-f", "lcp", "-s", "lemke",
                                                     "--solver-option", "max_iter=abc", "--no-plot")),
        Case(cli, "run pgs max_iter=-1", cli_call("run", "box_slide", "-f", "gauss", "-o", "form=dual", "-s", "pgs",
                                                  "--solver-option", "max_iter=-1", "--no-plot")),
        Case(cli, "run osqp max_iter=0", cli_call("run", "box_slide", "-f", "gauss", "-s", "osqp",
                                                  "--solver-option", "max_iter=0", "--no-plot")),
        Case(cli, "run clarabel max_iter=-1", cli_call("run", "box_slide", "--solver-option", "max_iter=-1",
                                                       "--no-plot")),
        Case(cli, "run newton max_iter=abc", cli_call("run", "box_slide", "-f", "sap", "-s", "newton",
                                                      "--solver-option", "max_iter=abc", "--no-plot")),
        Case(cli, "run newton ls_max_iter=0", cli_call("run", "box_slide", "-f", "sap", "-s", "newton",
                                                       "--solver-option", "ls_max_iter=0", "--no-plot")),
        # --- the API ---------------------------------------------------------------------------
        Case(api, "simulate dt = 1e-300", api_call(run_steps(cart, dt=1e-300)), timeout=20),
        Case(api, "simulate duration = 1e300", api_call(run_steps(cart, duration=1e300)), timeout=20),
        Case(api, "simulate dt > duration", api_call(run_steps(cart, dt=0.5, duration=0.3))),
        Case(api, "simulate max_steps = 0", api_call(run_steps(cart, max_steps=0))),
        Case(api, "simulate max_steps a string", api_call(run_steps(cart, max_steps="1e9"))),
        Case(api, "simulate max_steps raised on a tiny run", api_call(run_steps(cart, dt=0.1, duration=0.3,
                                                                                max_steps=3)),
             expect="answer", check=lambda t: None if len(t.steps) == 3 else f"{len(t.steps)} steps"),
        Case(api, "lemke pivot budget 1 on a 3x3 LCP", api_call(lambda: co.solve(three_by_three(), "lemke",
                                                                                  max_iter=1)),
             expect="answer", check=max_iterations),
        Case(api, "lemke pivot budget 0", api_call(lambda: co.solve(three_by_three(), "lemke", max_iter=0)),
             expect="answer", check=max_iterations),
        Case(api, "lemke pivot budget negative", api_call(lambda: co.solve(three_by_three(), "lemke", max_iter=-1))),
        Case(api, "lemke pivot budget a string", api_call(lambda: co.solve(three_by_three(), "lemke",
                                                                            max_iter="10"))),
        Case(api, "lemke refresh_every = 0", api_call(lambda: co.solve(three_by_three(), "lemke", refresh_every=0))),
        Case(api, "run lcp/lemke with max_iter = 1", quiet(run_steps(box, formulation="lcp", solver="lemke",
                                                                     solver_options={"max_iter": 1})),
             expect="answer", check=max_iterations),
        Case(api, "one lemke step of sphere_pile_mjcf", pile_one_lemke_step, expect="answer", check=max_iterations,
             timeout=40),
        Case(api, "pgs max_iter = 1", api_call(lambda: co.solve(three_by_three(), "pgs", max_iter=1)),
             expect="answer", check=max_iterations),
        Case(api, "osqp max_iter = 1", api_call(lambda: co.solve(cart_qp(), "osqp", max_iter=1, polishing=False)),
             expect="answer", check=max_iterations),
        Case(api, "clarabel max_iter = 1", quiet(run_steps(box, solver="clarabel", solver_options={"max_iter": 1})),
             expect="answer", check=max_iterations),
        Case(api, "newton max_iter = 0", quiet(run_steps(box, formulation="sap", solver="newton",
                                                         solver_options={"max_iter": 0})),
             expect="answer", check=max_iterations),
        Case(api, "pgs max_iter a string", api_call(lambda: co.solve(three_by_three(), "pgs", max_iter="x"))),
        Case(api, "osqp max_iter a fraction", api_call(lambda: co.solve(cart_qp(), "osqp", max_iter=2.5))),
        Case(api, "clarabel max_iter a string", api_call(lambda: co.solve(cart_qp(), "clarabel", max_iter="x"))),
        Case(api, "newton max_iter negative", api_call(run_steps(box, formulation="sap", solver="newton",
                                                                 solver_options={"max_iter": -1}))),
        Case(api, "lcp k = 100000", api_call(run_steps(box, formulation="lcp", options={"k": 100000}))),
        Case(api, "anitescu dual k = 100000", api_call(run_steps(box, formulation="anitescu",
                                                                 options={"k": 100000, "form": "dual"}))),
        Case(api, "controller returns the string '1.0'", controlled("1.0")),
        Case(api, "controller returns None", controlled(None)),
        Case(api, "controller returns bytes", controlled(b"1")),
        Case(api, "controller returns True", controlled(True)),
        Case(api, "controller returns a list of strings", controlled(["1", "2"])),
        Case(api, "controller returns a list with None", controlled([1.0, None])),
        Case(api, "controller returns the wrong length", controlled([1.0, 2.0, 3.0])),
        Case(api, "controller returns a 2-D array", controlled([[1.0, 2.0]])),
        Case(api, "controller returns NaN", controlled([float("nan"), 0.0])),
        Case(api, "formulate with control '1.0'", api_call(lambda: co.formulate(
            co.load_scene(DRIVEN).system, [0.0, 0.0], [0.0, 0.0], 0.01, control="1.0"))),
        Case(api, "pile at dt = 0.05: refinement prints no LAPACK message", pile_without_lapack_noise,
             expect="answer", check=no_lapack_message, timeout=40),
    ]
