"""Public functions given arguments of the wrong type, and CLI arguments that name a key twice
or a step past the run (issue 35, items 5 and 6): each refused before any work in one line
naming the argument, what was given and what is expected; the friendlier forms that are
accepted on purpose (a scene by name, one comma-separated string of names, one step size:
:mod:`contactopt.core.arguments`) give the right answer."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from badinputs.base import Case, api_call, cart_qp, cart_scene, cli_call, co


def _system() -> Any:
    return cart_scene().system


def _cart_run_is_right(traj: Any) -> str | None:
    """``cart_wall`` (dt 0.1, 2 s): 20 steps, completed, the cart at rest against the wall at
    x = 0 (the scene's closed form: it reaches the wall in 5 steps and stays)."""
    if not isinstance(traj, co.Trajectory):
        return f"not a Trajectory: {type(traj).__name__}"
    if not traj.completed or len(traj.steps) != 20:
        return f"{len(traj.steps)} steps, completed={traj.completed}"
    if abs(float(traj.q[-1, 0])) > 1e-9 or abs(float(traj.v[-1, 0])) > 1e-9:
        return f"final state q={traj.q[-1, 0]:g}, v={traj.v[-1, 0]:g}, not at rest at the wall"
    return None


def _rows_are(expected: list[tuple[str, str, float]]) -> Any:
    """A check that a compare table has exactly these (formulation, solver, dt) rows, completed."""
    def check(table: Any) -> str | None:
        cells = table[["formulation", "solver", "dt"]].itertuples(index=False)
        rows = [(str(f), str(s), float(d)) for f, s, d in cells]
        if rows != expected:
            return f"rows {rows}, expected {expected}"
        if not (table["status"] == "completed").all():
            return f"statuses {list(table['status'])}"
        return None
    return check


def _short_cart() -> co.Scene:
    return dataclasses.replace(cart_scene(), duration=0.5)


def _hopper() -> co.Scene:
    """dm_hopper for 2 steps: it starts in the air, so step 0's programs have no contact rows
    and only the formulations' declared kinds refuse the pairs below."""
    scene = co.load_scene("dm_hopper")
    return dataclasses.replace(scene, duration=2 * scene.dt)


def cases() -> list[Case]:
    api, cli = "API", "CLI"
    scene = cart_scene
    return [
        # --- simulate ------------------------------------------------------------------------
        Case(api, "simulate a problem name (accepted: loaded as the CLI does)",
             api_call(lambda: co.simulate("cart_wall")), expect="answer", check=_cart_run_is_right),
        Case(api, "simulate a number as the scene", api_call(lambda: co.simulate(42))),  # type: ignore[arg-type]
        Case(api, "simulate formulation=3", api_call(lambda: co.simulate(scene(), formulation=3))),  # type: ignore[arg-type]
        Case(api, "simulate solver=3", api_call(lambda: co.simulate(scene(), solver=3))),  # type: ignore[arg-type]
        Case(api, "simulate fallback=['osqp']", api_call(lambda: co.simulate(scene(), fallback=["osqp"]))),  # type: ignore[arg-type]
        Case(api, "simulate options a list of pairs", api_call(
            lambda: co.simulate(scene(), options=[("form", "dual")]))),  # type: ignore[arg-type]
        Case(api, "simulate options with a non-str key", api_call(lambda: co.simulate(scene(), options={1: "dual"}))),  # type: ignore[dict-item]
        Case(api, "simulate solver_options a list", api_call(lambda: co.simulate(scene(), solver_options=[1]))),  # type: ignore[arg-type]
        Case(api, "simulate dt='0.1'", api_call(lambda: co.simulate(scene(), dt="0.1"))),  # type: ignore[arg-type]
        Case(api, "simulate dt=True", api_call(lambda: co.simulate(scene(), dt=True))),
        Case(api, "simulate dt=inf", api_call(lambda: co.simulate(scene(), dt=math.inf))),
        Case(api, "simulate duration='1'", api_call(lambda: co.simulate(scene(), duration="1"))),  # type: ignore[arg-type]
        # --- formulate and solve -------------------------------------------------------------
        Case(api, "formulate a system name", api_call(lambda: co.formulate("cart", [1.0], [0.0], 0.1))),  # type: ignore[arg-type]
        Case(api, "formulate dt='0.1'", api_call(lambda: co.formulate(_system(), [1.0], [0.0], "0.1"))),  # type: ignore[arg-type]
        Case(api, "formulate q of strings", api_call(lambda: co.formulate(_system(), "abc", [0.0], 0.1))),
        Case(api, "formulate formulation=3", api_call(lambda: co.formulate(_system(), [1.0], [0.0], 0.1, 3))),  # type: ignore[arg-type]
        Case(api, "formulate options a list", api_call(
            lambda: co.formulate(_system(), [1.0], [0.0], 0.1, "gauss", [("form", "dual")]))),  # type: ignore[arg-type]
        Case(api, "formulate t='0'", api_call(lambda: co.formulate(_system(), [1.0], [0.0], 0.1, t="0"))),  # type: ignore[arg-type]
        Case(api, "solve solver=3", api_call(lambda: co.solve(cart_qp(), 3))),  # type: ignore[arg-type]
        Case(api, "solve options a list", api_call(lambda: co.solve(cart_qp(), "clarabel", [("max_iter", 5)]))),  # type: ignore[arg-type]
        # --- compare -------------------------------------------------------------------------
        Case(api, "compare a dict as the scene", api_call(lambda: co.compare({"dt": 0.1}))),  # type: ignore[arg-type]
        Case(api, "compare formulations='gauss' (accepted: one name)", api_call(
            lambda: co.compare(_short_cart(), formulations="gauss", solvers="clarabel", executor="serial")),
             expect="answer", check=_rows_are([("gauss", "clarabel", 0.1)])),
        Case(api, "compare formulations='gauss,lcp' (accepted: a comma list)", api_call(
            lambda: co.compare(_short_cart(), formulations="gauss,lcp", solvers=["lemke"], executor="serial")),
             expect="answer", check=_rows_are([("gauss", "lemke", 0.1), ("lcp", "lemke", 0.1)])),
        Case(api, "compare dts=0.05 (accepted: one step size)", api_call(
            lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"], dts=0.05, executor="serial")),
             expect="answer", check=_rows_are([("gauss", "clarabel", 0.05)])),
        Case(api, "compare formulations=3", api_call(lambda: co.compare(scene(), formulations=3))),  # type: ignore[arg-type]
        Case(api, "compare solvers=[3]", api_call(lambda: co.compare(scene(), ["gauss"], [3]))),  # type: ignore[list-item]
        Case(api, "compare dts='0.1'", api_call(lambda: co.compare(scene(), ["gauss"], ["clarabel"], dts="0.1"))),  # type: ignore[arg-type]
        Case(api, "compare dts with a string item", api_call(
            lambda: co.compare(scene(), ["gauss"], ["clarabel"], dts=[0.1, "0.2"]))),  # type: ignore[list-item]
        Case(api, "compare duration='1'", api_call(lambda: co.compare(scene(), ["gauss"], ["clarabel"],
                                                                      duration="1"))),  # type: ignore[arg-type]
        Case(api, "compare out=3", api_call(lambda: co.compare(scene(), ["gauss"], ["clarabel"], out=3))),  # type: ignore[arg-type]
        Case(api, "compare executor=3", api_call(lambda: co.compare(scene(), ["gauss"], executor=3))),  # type: ignore[arg-type]
        Case(api, "compare solver_options a list", api_call(
            lambda: co.compare(scene(), ["gauss"], ["clarabel"], solver_options=[1]))),  # type: ignore[arg-type]
        Case(api, "compare pairs a string", api_call(lambda: co.compare(scene(), pairs="lcp/lemke"))),  # type: ignore[arg-type]
        Case(api, "compare pairs with a single name", api_call(lambda: co.compare(scene(), pairs=[("lcp",)]))),  # type: ignore[list-item]
        Case(api, "compare pairs and formulations", api_call(
            lambda: co.compare(scene(), ["gauss"], pairs=[("lcp", "lemke")]))),
        Case(api, "compare pairs naming a pair twice", api_call(
            lambda: co.compare(scene(), pairs=[("lcp", "lemke"), ("lcp", "lemke")]))),
        Case(api, "compare pairs: ode with a solver", api_call(lambda: co.compare(scene(), pairs=[("ode", "lemke")]))),
        Case(api, "compare pairs: unknown solver", api_call(lambda: co.compare(scene(), pairs=[("lcp", "lemk")]))),
        Case(api, "compare only pairs that can never run (before step 0)", api_call(
            lambda: co.compare(_hopper(), pairs=[("lcp", "clarabel"), ("ccp", "lemke"), ("sap", "lemke")],
                               executor="serial")), timeout=60.0),
        Case(api, "compare dts as a NumPy array (accepted)", api_call(
            lambda: co.compare(_short_cart(), ["gauss"], ["clarabel"], dts=np.array([0.1]), executor="serial")),
             expect="answer", check=_rows_are([("gauss", "clarabel", 0.1)])),
        # --- simulate_batch --------------------------------------------------------------------
        Case(api, "simulate_batch q0 of the wrong width", api_call(
            lambda: co.simulate_batch(scene(), q0=np.zeros((2, 5))))),
        Case(api, "simulate_batch q0 and v0 for different numbers of worlds", api_call(
            lambda: co.simulate_batch(scene(), q0=np.zeros((2, 1)), v0=np.zeros((3, 1))))),
        Case(api, "simulate_batch without a number of worlds", api_call(lambda: co.simulate_batch(scene()))),
        Case(api, "simulate_batch an unknown per-world parameter", api_call(
            lambda: co.simulate_batch(scene(), parameters={"mass": [1.0, 2.0]}))),
        Case(api, "simulate_batch parameters a list", api_call(
            lambda: co.simulate_batch(scene(), parameters=[("mu", [0.1])]))),  # type: ignore[arg-type]
        Case(api, "simulate_batch 3 controllers for 2 worlds", api_call(
            lambda: co.simulate_batch(scene(), v0=np.zeros((2, 1)), controllers=[None, None, None]))),
        Case(api, "simulate_batch a problem name, 2 worlds (accepted)", api_call(
            lambda: co.simulate_batch("cart_wall", size=2)), expect="answer",
             check=lambda batch: None if batch.completed.all() and batch.q.shape == (2, 21, 1)
             and abs(float(batch.q[1, -1, 0])) < 1e-9 else f"{batch.q.shape}, completed {batch.completed}"),
        Case(api, "simulate_batch workers=0", api_call(lambda: co.simulate_batch(scene(), size=2, workers=0))),
        Case(api, "simulate_batch workers=2 with a lambda controller", api_call(
            lambda: co.simulate_batch(scene(), size=2, workers=2, controllers=lambda t, q, v: np.zeros(1)))),
        Case(api, "simulate_batch workers=2, 2 worlds (accepted)", api_call(
            lambda: co.simulate_batch("cart_wall", size=2, workers=2)), expect="answer",
             check=lambda batch: None if batch.completed.all() and abs(float(batch.q[1, -1, 0])) < 1e-9
             else f"completed {batch.completed}"),
        # --- sap over the system's own rows -----------------------------------------------------
        Case(cli, "run: sap -o rows=model on a textbook scene", cli_call("run", "cart_wall", "--formulation", "sap",
                                                                          "--solver", "newton", "-o", "rows=model")),
        Case(cli, "run: sap -o rows=mujoco", cli_call("run", "cart_wall", "--formulation", "sap", "-o", "rows=mujoco")),
        Case(api, "sap rows=model with epsilon", api_call(
            lambda: co.simulate("box_slide_mjcf", formulation="sap", solver="newton",
                                options={"rows": "model", "epsilon": 0.01}, duration=0.01))),
        # --- the Coulomb solvers' last resort --------------------------------------------------
        Case(api, "nsgs last_resort='pgs'", api_call(
            lambda: co.solve(co.formulate(scene().system, [1.0], [-1.0], 0.1, "coulomb"), "nsgs",
                             {"last_resort": "pgs"}))),
        # --- CLI -----------------------------------------------------------------------------
        Case(cli, "run: -o form=dual -o form=primal", cli_call("run", "cart_wall", "-o", "form=dual",
                                                                "-o", "form=primal")),
        Case(cli, "run: --solver-option given twice", cli_call("run", "cart_wall", "--solver-option", "max_iter=5",
                                                               "--solver-option", "max_iter=50")),
        Case(cli, "run: --system-option given twice", cli_call("run", "cart_wall", "--system-option", "m=1",
                                                               "--system-option", "m=2")),
        Case(cli, "program: --step 1000000", cli_call("program", "cart_wall", "--step", "1000000"), timeout=20.0),
        Case(cli, "program: --step past the duration", cli_call("program", "cart_wall", "--step", "20")),
        Case(cli, "compare: --pairs item without a solver", cli_call(
            "compare", "cart_wall", "--pairs", "lcp/lemke,gauss", "--executor", "serial")),
        Case(cli, "compare: --pairs with --solvers", cli_call("compare", "cart_wall", "--pairs", "lcp/lemke",
                                                              "--solvers", "lemke", "--executor", "serial")),
        Case(cli, "compare: -o-like --solver-option twice", cli_call(
            "compare", "cart_wall", "--formulations", "gauss", "--solvers", "clarabel", "--solver-option",
            "max_iter=5", "--solver-option", "max_iter=6", "--executor", "serial")),
    ]
