"""What a trajectory gradient costs against the forward simulation (issue 26, "Must reach":
reverse mode at most 3x the forward run on the box slide and the 100-sphere pile, 100 steps;
issue 36: a URDF arm with contact on the Pinocchio backend, reverse at most 3x, forward
sensitivities at most 1.5x).

Per scene (``box_slide``: rigid3d cube, nq=7, nv=6; ``sphere_pile_mjcf``: 100 free spheres,
nq=700, nv=600, ~250-490 candidates; ``ur5_like_arm_floor``: a UR5-like URDF arm through
Pinocchio, nq=nv=6, falling onto the floor, 0-3 contacts a step, whose step derivative moves the
problem along Pinocchio's analytic derivatives, :mod:`contactopt.systems.urdf_pinocchio.derivatives`;
``ur5_like_arm_push``, ``--scenes push``: the same arm swinging into a 1.5 kg box on the floor
and pushing it, nq=nv=10 (the box on x, y, z and yaw joints), the tool-box pair's tangents in
closed form, :mod:`contactopt.systems.urdf_pinocchio.pair_tangents`; every one of its 100 steps
takes the analytic path, tests/test_urdf_push.py; ``box_tumble_urdf``, ``--scenes float``: a URDF box
on a floating base through Pinocchio, nq=7, nv=6, dropped spinning onto the floor, whose quaternion
coordinates and free-flyer tangents are :mod:`contactopt.systems.urdf_pinocchio.free_flyer`'s) and
formulation/solver, in the same process:

* ``forward_s``: ``co.simulate`` of the run;
* ``forward_mode_s``: ``co.simulate(..., sensitivities=["mu"])`` (one parameter's tangent);
* ``reverse_s``: ``co.gradient`` of a final-state loss with respect to ``q0``, ``v0``, ``mu``
  (the forward run, each step's derivative, and the adjoint sweep);

and their ratios to ``forward_s`` (after an untimed three-step run with sensitivities, so that no
one-time cost, numba's compilation or a first import, lands in one of them; with ``--repeat N``
each of the three is timed N times, interleaved, and its fastest kept: the machine may be
shared, and the fastest run is the one least disturbed). Each is timed twice over: wall clock
(``*_s``, ``*_ratio``) and this process's CPU time (``time.process_time``: ``*_cpu_s``,
``*_cpu_ratio``, which other processes' load disturbs less; the fastest of the repeats too). The floor of the
method (:mod:`contactopt.derivatives.step`: the program's solution differentiated exactly, the
smooth maps around it by central differences, one column per input coordinate for the reverse
product) is measured at the last step: ``eval_ms``, one evaluation of the smooth maps (half a
forward product along ``v``), ``derivative_ms``, the program derivative's construction,
``step_ms``, one forward step, and
``floor_ratio = 1 + (derivative_ms + 2 * columns * eval_ms) / step_ms``, what the reverse pass
costs per step relative to the forward one with ``columns = nq + nv + parameters`` evaluations
pairs. Where the step takes no difference (``sap`` and ``ccp`` on the URDF arm,
:mod:`contactopt.derivatives.analytic_step`) ``eval_ms`` is half a forward product and the floor
overstates the reverse pass, which is one reverse product per step there.

On the pile the runs are ``--pile-steps`` steps (the forward step alone takes seconds there) and
the ratios, per step, stand for 100 steps: the ``steps`` column says how many were timed and
``extrapolated`` marks it. ``--profile`` prints a cProfile of the first scene's first case's reverse pass
(cumulative time, the top ``--profile-lines``) and writes it to ``profile.txt``.

Writes ``experiments/out/gradient_cost/{summary.json, summary.csv[, profile.txt]}``.

    python experiments/gradient_cost.py [--steps 100] [--pile-steps 2] [--scenes box,pile,arm,push,float]
                                        [--repeat 1]
                                        [--only ccp] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's contactopt, not an installed one
from common import OUT, print_table, write_results  # noqa: E402

import contactopt as co  # noqa: E402
from contactopt.derivatives.trajectory import step_derivative  # noqa: E402

Case = tuple[str, str, dict[str, Any]]
#: regularized selects contacts by their gap (phi <= epsilon, 0 by default), and the box starts
#: exactly at phi = 0, where its step is discontinuous (lifting it drops its contacts): its
#: contacts are kept within 1 mm, as experiments/push_scenes.py does.
BOX_CASES: list[Case] = [("ccp", "clarabel", {}), ("anitescu", "clarabel", {}), ("anitescu", "osqp", {}),
                         ("lcp", "lemke", {}), ("sap", "newton", {}), ("regularized", "clarabel", {"epsilon": 1e-3})]
PILE_CASES: list[Case] = [("ccp", "clarabel", {"form": "dual"}), ("anitescu", "osqp", {}), ("sap", "newton", {}),
                          ("regularized", "clarabel", {})]
ARM_CASES: list[Case] = [("sap", "newton", {}), ("ccp", "clarabel", {})]
WRT = ("q0", "v0", "mu")


def label(case: Case) -> str:
    formulation, solver, options = case
    extra = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{formulation}/{solver}" + (f" ({extra})" if extra else "")


class _Floor:
    """Observer of ``simulate``: at step ``last``, times the pieces of the method's floor."""

    def __init__(self, last: int) -> None:
        self.last = last
        self.found: dict[str, float] = {}

    def advance(self, stepper: Any, state: Any, u: Any, index: int) -> None:
        if index != self.last:
            return
        start = time.perf_counter()
        derivative = step_derivative(stepper, state, u, ("mu",))
        self.found["derivative_ms"] = 1e3 * (time.perf_counter() - start)
        unit = np.zeros(stepper.system.nv)
        unit[0] = 1.0
        start = time.perf_counter()
        for _ in range(3):
            derivative.jvp(dv=unit)
        self.found["eval_ms"] = 1e3 * (time.perf_counter() - start) / 6.0  # two evaluations per product


_CPU: list[float] = []  # the CPU seconds of the last timed() call


def timed(function: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Wall-clock seconds of the call and its result; its CPU seconds (this process,
    ``time.process_time``: what other processes on a shared machine do not add) in ``_CPU[-1]``."""
    start, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    _CPU.append(time.process_time() - cpu)
    return time.perf_counter() - start, result


def _keep(row: dict[str, Any], key: str, seconds: float) -> None:
    """The fastest wall-clock and CPU time of ``key`` over the repeats."""
    row[f"{key}_s"] = min(seconds, row.get(f"{key}_s", np.inf))
    row[f"{key}_cpu_s"] = min(_CPU[-1], row.get(f"{key}_cpu_s", np.inf))


def bench_case(scene: co.Scene, case: Case, steps: int, extrapolated: bool,
               profile: cProfile.Profile | None, repeat: int = 1) -> dict[str, Any]:
    formulation, solver, options = case
    system = scene.system
    run = {"formulation": formulation, "solver": solver, "duration": steps * scene.dt, "options": dict(options)}
    row: dict[str, Any] = {"scene": scene.name, "method": label(case), "steps": steps, "extrapolated": extrapolated,
                           "repeat": repeat}
    # a short untimed run first: one-time costs (numba compilation, first imports) are not the run's
    co.simulate(scene, **{**run, "duration": min(steps, 3) * scene.dt}, sensitivities=["mu"])
    for attempt in range(repeat):  # interleaved; each time the fastest of the repeats (a shared machine)
        forward_s, trajectory = timed(co.simulate, scene, **run)
        if not trajectory.completed:
            return {**row, "note": f"forward run incomplete: {trajectory.message}"}
        _keep(row, "forward", forward_s)
        try:
            seconds, tangent = timed(co.simulate, scene, **run, sensitivities=["mu"])
            if np.isfinite(tangent.sensitivities["mu"]).all():
                _keep(row, "forward_mode", seconds)
            else:  # the sensitivities stopped at a step that is not differentiable (NaN from there)
                row["note"] = "forward mode: NaN sensitivities (a step is not differentiable)"
        except co.errors.ContactoptError as exc:
            row["note"] = f"forward mode: {type(exc).__name__}: {str(exc)[:120]}"
        loss = co.derivatives.final_state_loss(q_target=trajectory.q[-1] + 0.01, v_target=np.zeros(system.nv))
        use = profile if attempt == 0 else None
        try:
            if use is not None:
                use.enable()
            seconds, _ = timed(co.gradient, scene, loss, list(WRT), **run)
            _keep(row, "reverse", seconds)
        except co.errors.ContactoptError as exc:
            row["note"] = f"reverse: {type(exc).__name__}: {str(exc)[:120]}"
        finally:
            if use is not None:
                use.disable()
    forward_s = row["forward_s"]
    for key in ("forward_mode", "reverse"):
        if f"{key}_s" in row:
            row[f"{key}_ratio"] = row[f"{key}_s"] / forward_s
            row[f"{key}_cpu_ratio"] = row[f"{key}_cpu_s"] / row["forward_cpu_s"]
    floor = _Floor(steps - 1)
    try:
        co.simulate(scene, **run, _observer=floor)
    except co.errors.ContactoptError as exc:
        row.setdefault("note", f"floor: {type(exc).__name__}: {str(exc)[:120]}")
    if floor.found:
        step_ms = 1e3 * forward_s / steps
        columns = system.nq + system.nv + 1
        row.update(step_ms=step_ms, columns=columns, **floor.found)
        row["floor_ratio"] = 1.0 + (floor.found["derivative_ms"] + 2 * columns * floor.found["eval_ms"]) / step_ms
    return row


def profile_text(profile: cProfile.Profile, lines: int) -> str:
    buffer = io.StringIO()
    pstats.Stats(profile, stream=buffer).sort_stats("cumulative").print_stats(lines)
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="steps per run on the box slide")
    parser.add_argument("--pile-steps", type=int, default=2,
                        help="steps timed on the pile (its ratios stand for 100 steps: extrapolated)")
    parser.add_argument("--scenes", default="box,pile,arm,push,float",
                        help="comma-separated subset of box, pile, arm, push, float")
    parser.add_argument("--only", default="", help="only the rows whose method contains this (e.g. ccp)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time each run this many times, interleaved, and keep each one's fastest")
    parser.add_argument("--profile", action="store_true", help="cProfile the first scene's first case's reverse pass")
    parser.add_argument("--profile-lines", type=int, default=30)
    args = parser.parse_args()
    scenes = set(args.scenes.split(","))
    known = {"box", "pile", "arm", "push", "float"}
    if scenes - known:
        parser.error(f"--scenes: unknown {', '.join(sorted(scenes - known))}")
    plan: list[tuple[str, list[Case], int, bool]] = []
    if "box" in scenes:
        plan.append(("box_slide", BOX_CASES, args.steps, False))
    if "pile" in scenes:
        plan.append(("sphere_pile_mjcf", PILE_CASES, args.pile_steps, args.pile_steps < 100))
    if "arm" in scenes:
        plan.append(("ur5_like_arm_floor", ARM_CASES, args.steps, False))
    if "push" in scenes:
        plan.append(("ur5_like_arm_push", ARM_CASES, args.steps, False))
    if "float" in scenes:
        plan.append(("box_tumble_urdf", ARM_CASES, args.steps, False))
    rows: list[dict[str, Any]] = []
    profile = cProfile.Profile() if args.profile else None
    profiled = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # friction ignored, one-sided derivatives: counted, not the point here
        for name, cases, steps, extrapolated in plan:
            scene = co.load_scene(ROOT / "problems" / f"{name}.toml")
            for case in (c for c in cases if args.only in label(c)):
                use = profile if profile is not None and not profiled and name == plan[0][0] else None
                rows.append(bench_case(scene, case, steps, extrapolated, use, args.repeat))
                if use is not None:
                    profiled = profile_text(use, args.profile_lines)
                print_table([rows[-1]])
    columns = ["scene", "method", "steps", "extrapolated", "repeat", "forward_s", "forward_mode_ratio", "reverse_ratio",
               "forward_mode_cpu_ratio", "reverse_cpu_ratio",
               "step_ms", "eval_ms", "derivative_ms", "columns", "floor_ratio", "note"]
    table = [{key: row.get(key, "") for key in columns} for row in rows]
    print_table(table)
    folder = OUT / "gradient_cost"
    if rows:
        write_results(folder, [{key: row.get(key, "") for key in sorted({k for r in rows for k in r})}
                               for row in rows], {"wrt": list(WRT), "target": "reverse_ratio <= 3"})
    if profiled:
        (folder / "profile.txt").write_text(profiled)
        print(profiled)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
