"""Per-step time of contactopt's formulations and solvers against MuJoCo's ``mj_step`` on the
same model, in the same run, as ratios; and the scaling with the number of contacts.

Scenes: the rigid3d box (``box_slide``; its ``mj_step`` is that of the same box in MJCF,
``box_slide_mjcf``), the MJCF box and the 100-sphere MJCF pile. Per scene and row
(formulation/solver): wall time per step (median over ``--rounds`` rounds, each a full
``simulate`` of ``--steps`` steps), split into *build* (system evaluation + program
assembly, the records' ``build_time``), *solver* (the backend's setup + solve) and *rest*
(residuals, recovery, integration, records: wall - build - solver); and the ratio to
``mj_step`` timed in the same round.

Grid: N = 10, 30, 100, 300, 1000 spheres resting on a plane (rigid3d, one ground contact
each; sphere pairs through the k-d tree broad phase with ``pair_margin``), against
``mj_step`` on the same spheres in MJCF; the log-log slope of step time against contacts is
fitted over N >= 100, and the peak memory of a step is measured with ``tracemalloc``
(Python and NumPy allocations) next to the peak resident size of a fresh process that runs the
N = 1000 rows (:func:`run_peak_rss`: the memory target's measure; this process's own peak also
holds MuJoCo's 1000-sphere model, matplotlib and the smaller grids, and is printed too).

Targets: the speed targets of issues 10 and 11 are printed against the run (:func:`targets`;
``targets`` in summary.json), each with its *backend floor* (the value if only the solver's own
setup + solve cost anything) and the time the limit leaves for everything else.

Writes ``experiments/out/bench_step/{summary.json, summary.csv, scaling.png}``.

    python experiments/bench_step.py [--steps 100] [--pile-steps 20] [--rounds 3] [--grid 10,30,100,300,1000]
                                      [--scenes pile] [--only coulomb/]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's contactopt, not an installed one
import matplotlib.pyplot as plt  # noqa: E402
from common import OUT, print_table, write_results  # noqa: E402

import contactopt as co  # noqa: E402

Case = tuple[str, str, dict[str, Any]]
BOX_CASES: list[Case] = [("anitescu", "clarabel", {}), ("ccp", "clarabel", {}), ("regularized", "clarabel", {}),
                         ("anitescu", "osqp", {}), ("regularized", "clarabel", {"cone": "elliptic"}),
                         ("regularized", "pgs", {"cone": "elliptic"}), ("lcp", "lemke", {}), ("sap", "newton", {})]
PILE_CASES: list[Case] = [("regularized", "clarabel", {"cone": "elliptic"}), ("regularized", "clarabel", {}),
                          ("anitescu", "osqp", {}), ("regularized", "pgs", {"cone": "elliptic"}),
                          ("ccp", "clarabel", {"form": "dual"}), ("regularized", "newton", {"form": "primal"}),
                          ("sap", "newton", {}), ("sap", "newton", {"rows": "model"}), ("coulomb", "nsgs", {}),
                          ("coulomb", "nsn", {})]
GRID_CASES: list[Case] = [("anitescu", "clarabel", {}), ("regularized", "clarabel", {}), ("anitescu", "osqp", {})]
RADIUS, SPACING = 0.05, 0.2
BOX_LIMIT_MS, BOX_SAP_LIMIT_MS = 0.35, 0.15  # issue 10 (four rows, both boxes), issue 11 (sap/newton)
PILE_LIMITS = {"regularized/clarabel cone=elliptic": 6.0, "anitescu/osqp": 8.0,  # issue 10
               "regularized/newton form=primal": 2.0, "sap/newton": 2.0,  # issue 11
               "coulomb/nsgs": 5.0}  # issue 25
BOX_TARGET_ROWS = ("anitescu/clarabel", "ccp/clarabel", "regularized/clarabel", "anitescu/osqp")


def targets(rows: list[dict[str, Any]], grid_rows: list[dict[str, Any]], slopes: dict[str, float],
            rss_mb: float) -> list[dict[str, Any]]:
    """The speed targets of issues 10, 11 and 25 against this run: the measured value, the limit,
    whether it is met, and the *backend floor*: the value the row would have if everything but
    the solver's own setup + solve cost nothing (system evaluation, assembly, residual checks,
    recovery, integration, records), and the share of the limit that leaves for all of those
    (``budget_for_rest``, against ``rest_now`` = wall - solver). A floor above the limit, or a
    budget far below the measured rest, says what a target would take."""
    found: list[dict[str, Any]] = []

    def add(target: str, value: float, limit: float, floor: float, budget: float, rest: float) -> None:
        found.append({"target": target, "value": value, "limit": limit, "met": bool(value <= limit),
                      "backend_floor": floor, "budget_for_rest": budget, "rest_now": rest})

    for row in rows:
        wall, solver, mj = row["wall_ms"], row["solver_ms"], row["mj_step_ms"]
        where = f"{row['scene']} {row['method']}"
        if row["scene"].startswith("box") and row["method"] in BOX_TARGET_ROWS:
            add(f"{where}: ms/step", wall, BOX_LIMIT_MS, solver, BOX_LIMIT_MS - solver, wall - solver)
            add(f"{where}: wall / solver", wall / solver, 2.0, 1.0, solver, wall - solver)
        if row["scene"] == "box_slide" and row["method"] == "sap/newton":
            add(f"{where}: ms/step", wall, BOX_SAP_LIMIT_MS, solver, BOX_SAP_LIMIT_MS - solver, wall - solver)
        if row["scene"].startswith("sphere_pile") and row["method"] in PILE_LIMITS:
            limit = PILE_LIMITS[row["method"]]
            add(f"{where}: x mj_step", row["ratio_to_mj_step"], limit, solver / mj, limit * mj - solver,
                wall - solver)
    for method, slope in slopes.items():
        if method != "mujoco mj_step":
            add(f"grid {method}: slope N >= 100", slope, 1.15, float("nan"), float("nan"), float("nan"))
    largest = max((r["contacts"] for r in grid_rows), default=0)
    for row in (r for r in grid_rows if r["contacts"] == largest and largest >= 1000):
        add(f"grid {row['method']} N={largest}: build share", row["build_share"], 0.25, 0.0, float("nan"),
            float("nan"))
    if grid_rows and np.isfinite(rss_mb):
        add(f"grid N={largest}: peak RSS of a process running it [MB]", rss_mb, 300.0, float("nan"), float("nan"),
            float("nan"))
    return found


def own_peak_rss() -> float:
    """This process's peak resident size (MB): ``VmHWM`` of /proc/self/status where there is
    one (it starts afresh at ``exec``, while ``ru_maxrss`` keeps the peak of the process that
    forked it), else ``ru_maxrss``."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_peak_rss(count: int, steps: int = 3) -> float:
    """Peak resident size (MB) of a fresh process that imports contactopt and runs ``steps``
    steps of every grid row at ``count`` spheres: the memory of a run at that size (this
    benchmark's own process also holds MuJoCo's model of the same spheres for ``mj_step``,
    matplotlib, and every smaller grid's runs)."""
    code = ("import sys, warnings; sys.path.insert(0, sys.argv[1]); import bench_step as b; "
            "import contactopt as co; warnings.simplefilter('ignore'); scene, _ = b.grid_scene(int(sys.argv[2])); "
            "[co.simulate(scene, formulation=f, solver=s, options=o, duration=int(sys.argv[3]) * scene.dt) "
            "for f, s, o in b.GRID_CASES]; print(b.own_peak_rss())")
    done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(count), str(steps)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    if done.returncode != 0:
        print(f"peak RSS probe failed: {done.stderr[-500:]}")
        return float("nan")
    return float(done.stdout.strip().splitlines()[-1])


def mj_step_time(xml_path: Path | None, xml: str | None, q0: Any, v0: Any, dt: float, steps: int) -> tuple[float, int]:
    """Seconds per ``mj_step`` on MuJoCo's unmodified model and the mean contact count."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(xml_path)) if xml_path else mujoco.MjModel.from_xml_string(xml or "")
    model.opt.timestep = dt
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = q0, v0
    for _ in range(3):
        mujoco.mj_step(model, data)
    data.qpos[:], data.qvel[:] = q0, v0
    contacts = 0
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data)
        contacts += int(data.ncon)
    return (time.perf_counter() - start) / steps, round(contacts / steps)


def time_case(scene: co.Scene, case: Case, steps: int) -> dict[str, Any]:
    """One simulate of ``steps`` steps: wall, build, solver per step, contacts, status, and the
    largest generalized velocity reached (``max_speed``: a row that times an exploding scene
    says so; Anitescu's and the CCP's ``phi / h`` recovery throw the penetrating MJCF pile
    apart at ~11-20 m/s in one step, the compliant formulations stay below 1 m/s)."""
    formulation, solver, options = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        traj = co.simulate(scene, formulation=formulation, solver=solver, options=options,
                           duration=steps * scene.dt)
        wall = time.perf_counter() - start
    n = max(1, len(traj.steps))
    build = sum(s.build_time for s in traj.steps) / n
    solver_time = sum(s.setup_time + s.solve_time for s in traj.steps) / n
    return {"wall": wall / n, "build": build, "solver": solver_time,
            "contacts": float(np.mean([s.phi.shape[0] for s in traj.steps])) if traj.steps else 0.0,
            "iterations": float(np.mean([s.iterations for s in traj.steps])) if traj.steps else 0.0,
            "max_speed": float(np.abs(traj.v).max(initial=0.0)),
            "status": "completed" if traj.completed else f"stopped: {traj.message[:50]}"}


def label(case: Case) -> str:
    return f"{case[0]}/{case[1]}" + "".join(f" {k}={v}" for k, v in case[2].items())


def bench_scene(scene: co.Scene, cases: list[Case], mj: tuple[Path | None, str | None], steps: int,
                rounds: int) -> list[dict[str, Any]]:
    """Rows of one scene: medians over rounds, ``mj_step`` timed in each round; the spread of
    the per-round ratios (``ratio_low``, ``ratio_high``) says how far a target close to its
    limit can be read from one run (on this 2-core VM, ~10 %)."""
    rows = []
    for case in cases:
        if case[1] == "lemke" and scene.name.startswith(("sphere_pile", "grid")):
            continue  # dense pivoting: small scenes only
        samples, mj_times = [], []
        for _ in range(rounds):
            samples.append(time_case(scene, case, steps))
            mj_times.append(mj_step_time(mj[0], mj[1], *_mj_state(scene), scene.dt, max(steps, 200))[0])
        wall = float(np.median([s["wall"] for s in samples]))
        build = float(np.median([s["build"] for s in samples]))
        solver_time = float(np.median([s["solver"] for s in samples]))
        mj_time = float(np.median(mj_times))
        ratios = [sample["wall"] / mj_round for sample, mj_round in zip(samples, mj_times, strict=True)]
        rows.append({"scene": scene.name, "method": label(case), "contacts": samples[0]["contacts"],
                     "wall_ms": 1e3 * wall, "build_ms": 1e3 * build, "solver_ms": 1e3 * solver_time,
                     "rest_ms": 1e3 * (wall - build - solver_time), "wall_over_solver": wall / solver_time,
                     "mj_step_ms": 1e3 * mj_time, "ratio_to_mj_step": wall / mj_time,
                     "ratio_low": min(ratios), "ratio_high": max(ratios),
                     "iterations": samples[0]["iterations"], "max_speed": samples[0]["max_speed"],
                     "status": samples[0]["status"]})
        print(f"  {scene.name:18s} {label(case):40s} {1e3 * wall:8.3f} ms/step "
              f"(build {1e3 * build:.3f}, solver {1e3 * solver_time:.3f}) = {wall / mj_time:7.1f} x mj_step "
              f"(rounds {min(ratios):.1f}-{max(ratios):.1f})")
    return rows


_MJ_STATE: dict[str, tuple[Any, Any]] = {}


def _mj_state(scene: co.Scene) -> tuple[Any, Any]:
    """The MuJoCo initial state of the model ``mj_step`` runs for ``scene``."""
    return _MJ_STATE.get(scene.name, (scene.q0, scene.v0))


def grid_scene(count: int) -> tuple[co.Scene, str]:
    """``count`` spheres resting on z = 0 in a square grid (gaps 0.1 m: no pair contacts),
    as a rigid3d scene and as MJCF text (same spheres, a plane)."""
    side = int(np.ceil(np.sqrt(count)))
    bodies, xml_bodies = [], []
    for i in range(count):
        row, col = divmod(i, side)
        position = [SPACING * col, SPACING * row, RADIUS]
        bodies.append(co.systems.RigidBody(name=f"s{i}", shape="sphere", size=np.array([RADIUS]), mass=0.1,
                                           position=np.array(position), orientation=np.array([1.0, 0, 0, 0]),
                                           velocity=np.zeros(3), angular_velocity=np.zeros(3)))
        xml_bodies.append(f'<body pos="{position[0]} {position[1]} {position[2]}"><freejoint/>'
                          f'<geom type="sphere" size="{RADIUS}" mass="0.1"/></body>')
    system = co.systems.Rigid3D(bodies, {"mu": 0.5}, pair_margin=0.01)
    q0, v0 = system.default_state()
    scene = co.Scene(name=f"grid_{count}", system=system, q0=q0, v0=v0, dt=1e-3, duration=0.01,
                     formulation="anitescu", solver="clarabel")
    xml = ('<mujoco><option timestep="0.001"/><worldbody><geom type="plane" size="100 100 0.1"/>'
           + "".join(xml_bodies) + "</worldbody></mujoco>")
    _MJ_STATE[scene.name] = (q0, v0)
    return scene, xml


def peak_memory(scene: co.Scene, case: Case) -> float:
    """Peak traced allocation (MB) while simulating two steps of ``scene``."""
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        co.simulate(scene, formulation=case[0], solver=case[1], options=case[2], duration=2 * scene.dt)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="steps per run on the boxes")
    parser.add_argument("--pile-steps", type=int, default=20, help="steps per run on the 100-sphere pile")
    parser.add_argument("--only", default="", help="only the rows whose label contains this (e.g. coulomb/)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grid", default="10,30,100,300,1000")
    parser.add_argument("--scenes", default="box,box_mjcf,pile,grid",
                        help="comma-separated subset of box, box_mjcf, pile, grid (e.g. --scenes pile)")
    args = parser.parse_args()
    scenes = set(args.scenes.split(","))
    if scenes - {"box", "box_mjcf", "pile", "grid"}:
        parser.error(f"--scenes: unknown {', '.join(sorted(scenes - {'box', 'box_mjcf', 'pile', 'grid'}))}")
    problems = ROOT / "problems"
    box_mjcf = co.load_scene(problems / "box_slide_mjcf.toml")
    _MJ_STATE["box_slide"] = (box_mjcf.q0, box_mjcf.v0)
    rows: list[dict[str, Any]] = []
    if "box" in scenes:
        rows += bench_scene(co.load_scene(problems / "box_slide.toml"), BOX_CASES,
                            (box_mjcf.system.path, None), args.steps, args.rounds)  # type: ignore[attr-defined]
    if "box_mjcf" in scenes:
        rows += bench_scene(box_mjcf, BOX_CASES, (box_mjcf.system.path, None), args.steps, args.rounds)  # type: ignore[attr-defined]
    if "pile" in scenes:
        pile = co.load_scene(problems / "sphere_pile_mjcf.toml")
        rows += bench_scene(pile, [c for c in PILE_CASES if args.only in label(c)], (pile.system.path, None),
                            args.pile_steps, args.rounds)  # type: ignore[attr-defined]
    grid_rows: list[dict[str, Any]] = []
    for count in (int(c) for c in args.grid.split(",") if "grid" in scenes):
        scene, xml = grid_scene(count)
        steps = max(3, min(20, 2000 // count))
        found = bench_scene(scene, GRID_CASES, (None, xml), steps, args.rounds)
        for row in found:
            case = next(c for c in GRID_CASES if label(c) == row["method"])
            row["peak_traced_MB"] = peak_memory(scene, case)
            row["build_share"] = row["build_ms"] / row["wall_ms"]
        grid_rows += found
    slopes: dict[str, float] = {}
    for method in dict.fromkeys(r["method"] for r in grid_rows):
        points = [(r["contacts"], r["wall_ms"]) for r in grid_rows if r["method"] == method and r["contacts"] >= 100]
        if len(points) >= 2:
            slopes[method] = float(np.polyfit(np.log([p[0] for p in points]), np.log([p[1] for p in points]), 1)[0])
    mj_points = sorted({(r["contacts"], r["mj_step_ms"]) for r in grid_rows if r["contacts"] >= 100})
    if len(mj_points) >= 2:
        slopes["mujoco mj_step"] = float(np.polyfit(np.log([p[0] for p in mj_points]),
                                                    np.log([p[1] for p in mj_points]), 1)[0])
    for row in rows:
        row.update(peak_traced_MB=float("nan"), build_share=row["build_ms"] / row["wall_ms"])
    print_table(rows + grid_rows)
    print("log-log slope of step time against contacts, N >= 100:", {k: round(v, 3) for k, v in slopes.items()})
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"this benchmark's peak resident size: {rss:.0f} MB")
    largest = max((r["contacts"] for r in grid_rows), default=0)
    run_rss = run_peak_rss(int(largest)) if largest >= 1000 else float("nan")
    if np.isfinite(run_rss):
        print(f"peak resident size of a process running the N = {largest:.0f} grid rows: {run_rss:.0f} MB")
    goals = targets(rows, grid_rows, slopes, run_rss)
    print("\nspeed targets of issues 10 and 11 (ms, ratios; backend_floor: the value with only the solver's "
          "setup + solve; budget_for_rest: what the limit leaves for everything else, rest_now: what that costs now):")
    print_table(goals)
    folder = OUT / "bench_step"
    write_results(folder, rows + grid_rows, {"steps": args.steps, "rounds": args.rounds, "slopes": slopes,
                                             "process_peak_rss_MB": rss, "grid_run_peak_rss_MB": run_rss,
                                             "targets": goals,
                                             "note": "medians over rounds; ratio = wall per step / mj_step, "
                                                     "timed in the same round"})
    plot(grid_rows, slopes, folder / "scaling.png")
    print(f"wrote {folder}/summary.json, summary.csv, scaling.png")
    return 0


def plot(grid_rows: list[dict[str, Any]], slopes: dict[str, float], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
    for method in dict.fromkeys(r["method"] for r in grid_rows):
        points = sorted((r["contacts"], r["wall_ms"]) for r in grid_rows if r["method"] == method)
        ax.loglog([p[0] for p in points], [p[1] for p in points], "o-",
                  label=f"{method} (slope {slopes.get(method, float('nan')):.2f})")
    mj = sorted({(r["contacts"], r["mj_step_ms"]) for r in grid_rows})
    ax.loglog([p[0] for p in mj], [p[1] for p in mj], "k^--",
              label=f"mujoco mj_step (slope {slopes.get('mujoco mj_step', float('nan')):.2f})")
    ax.set_xlabel("contacts (spheres resting on a plane)")
    ax.set_ylabel("wall time per step [ms]")
    ax.set_title("Per-step time against the number of contacts")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
