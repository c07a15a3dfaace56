"""``contactopt render RUN_OR_SCENE --out video.mp4|.gif`` and ``contactopt compare --render``.

RUN_OR_SCENE is a saved run (a folder written by ``contactopt run --out DIR``, or its
``trajectory.npz``) or a scene (a file or a bundled problem name), which is simulated first with
its own formulation and solver or those given. A saved run is drawn with the system of the scene
it came from: the bundled problem of its recorded scene name whose system matches the recorded
description, or the scene given with ``--scene``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contactopt.analysis.render import MIN_SIZE, RENDERERS, Panel, RenderResult, render
from contactopt.cli.common import (
    add_keyframe_argument,
    add_max_steps_argument,
    formulation_options,
    load_scene_of,
    positive_float,
    with_max_steps,
)
from contactopt.core.errors import (
    ContactoptError,
    ContactoptWarning,
    OptionError,
    PartialTrajectoryWarning,
    SimulationError,
)
from contactopt.core.outputs import output_errors, safe_component, writable_file
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene, find_problem, load_scene, problems_dir
from contactopt.simulation import simulate
from contactopt.systems.base import System

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_compare_render_argument", "add_render_parser", "render_comparison"]

EXIT_STOPPED = 3
SIMULATION_FLAGS = ("formulation", "solver", "dt", "duration", "option", "keyframe", "system_option")


def _size(text: str) -> tuple[int, int]:
    """argparse type of ``--size``: ``WIDTHxHEIGHT`` in pixels."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (e.g. 480x360), got {text!r}") from None
    if not sep or not all(MIN_SIZE <= n <= 4096 for n in size):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT with each between {MIN_SIZE} and 4096, got {text!r}")
    return size


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_render_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contactopt render`` to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "render", help="write a video (.mp4 or .gif) of a saved run or of a scene",
        description="Write a video of RUN_OR_SCENE: a saved run (a folder written by 'contactopt run "
        "--out DIR' or its trajectory.npz) or a scene, simulated first. MJCF models are drawn by "
        "MuJoCo off screen (matplotlib when no OpenGL context can be made), every other system by "
        "matplotlib, with contact forces as red arrows. One frame per STRIDE samples plus the last "
        "sample.")
    parser.add_argument("target", metavar="RUN_OR_SCENE",
                        help="run folder, trajectory .npz, scene file or bundled problem name")
    parser.add_argument("--out", help="video file, .mp4 or .gif (default: RUN/video.mp4, or "
                        "runs/SCENE-FORMULATION-SOLVER/video.mp4 for a scene)")
    parser.add_argument("--scene", help="for a saved run: the scene it was simulated from (default: "
                        "the bundled problem of the run's scene name)")
    parser.add_argument("--formulation", "-f", help="for a scene: formulation or method (default: the scene's)")
    parser.add_argument("--solver", "-s", help="for a scene: solver (default: the scene's)")
    parser.add_argument("--dt", type=positive_float, help="for a scene: time step [s] (default: the scene's)")
    parser.add_argument("--duration", type=positive_float, help="for a scene: simulated time [s]")
    add_max_steps_argument(parser)
    add_keyframe_argument(parser)
    parser.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="for a scene: formulation option, repeatable")
    _add_video_arguments(parser)
    parser.set_defaults(func=_cmd_render)
    return parser


def _add_video_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fps", type=positive_float, default=30.0,
                        help="frames per second aimed at (default 30; adjusted so the stated speed is exact)")
    parser.add_argument("--speed", type=positive_float, metavar="X",
                        help="playback speed, 1 = real time (default: 1, or slow motion so that a run "
                        "shorter than 2 s lasts at least 3 s)")
    parser.add_argument("--size", type=_size, default=(480, 360), metavar="WxH",
                        help="pixels of each panel (default 480x360)")
    parser.add_argument("--stride", type=_positive_int, metavar="N",
                        help="show every N-th sample (default: the playback speed at the frame rate)")
    parser.add_argument("--renderer", choices=RENDERERS, default="auto",
                        help="mujoco (MJCF only, needs OpenGL), matplotlib, or auto (default: MuJoCo for "
                        "MJCF models when OpenGL works)")
    parser.add_argument("--no-forces", action="store_true", help="do not draw contact forces")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def add_compare_render_argument(parser: argparse.ArgumentParser) -> None:
    """``contactopt compare ... --render [VIDEO]``: the compared runs side by side."""
    parser.add_argument("--render", nargs="?", const="", metavar="VIDEO",
                        help="also write a video with one panel per run (formulation / solver); "
                        "default file OUT/compare.mp4; the runs are simulated again for it")


def _is_run(target: str) -> Path | None:
    path = Path(target)
    if path.is_dir():
        trajectory = path / "trajectory.npz"
        if not trajectory.exists():
            raise OptionError(f"{path}: a folder without trajectory.npz (expected one written by "
                              "'contactopt run --out DIR')")
        return trajectory
    if path.suffix.lower() == ".npz":
        if not path.exists():
            raise OptionError(f"{path}: no such trajectory file")
        return path
    return None


def system_of_run(traj: Trajectory, scene: str | None, where: Path) -> System:
    """The system a saved run was simulated with (module docstring)."""
    nq = traj.q.shape[1]
    name = str(traj.info.get("scene", ""))
    described = traj.info.get("system_description")
    if scene is not None:
        system = load_scene(scene).system
        kind = traj.info.get("system", system.type_name)
        if system.type_name != kind or system.nq != nq:
            raise OptionError(f"--scene {scene}: a {system.type_name} system with nq = {system.nq}; the run {where} "
                              f"is of a {kind} system with nq = {nq}")
        if described is not None and system.describe() != described:
            print(f"contactopt: note: --scene {scene} describes {system.describe()}; the run was simulated with "
                  f"{described}", file=sys.stderr)
        return system
    for candidate in (name, problems_dir() / "mjcf" / f"{name}.xml"):
        if name and find_problem(candidate).exists():
            found = load_scene(candidate).system
            if found.nq == nq and found.describe() == described:
                return found
    raise OptionError(f"{where}: cannot tell which scene this run was simulated from (scene {name!r}, "
                      f"system {described}); pass --scene FILE")


def _simulate(scene: Scene, formulation: str | None, solver: str | None, dt: float | None,
              duration: float | None, options: dict[str, Any], progress: bool) -> Trajectory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartialTrajectoryWarning)  # reported by the caller
        try:
            return simulate(scene, formulation=formulation or scene.formulation, solver=solver, dt=dt,
                            duration=duration, options=options, progress=progress)
        except SimulationError as exc:
            partial = exc.trajectory
            if not isinstance(partial, Trajectory) or partial.q.shape[0] < 2:
                raise
            print(f"contactopt: {exc}; rendering the {partial.q.shape[0] - 1} finished steps", file=sys.stderr)
            return partial


def _render(panels: Trajectory | list[Panel], system: System, out: Path, args: argparse.Namespace,
            title: str) -> RenderResult:
    writable_file(out, "video file")
    with warnings.catch_warnings(), output_errors(out, "video file"):
        warnings.simplefilter("ignore", ContactoptWarning)  # the fallback note is printed below
        result = render(panels, system, out, fps=args.fps, size=args.size, stride=args.stride,
                        renderer=args.renderer, forces=not args.no_forces, title=title,
                        progress=not args.no_progress, speed=getattr(args, "speed", None))
    if result.note:
        print(f"contactopt: note: {result.note}", file=sys.stderr)
    print(f"wrote {result.path} ({result.frames} frames, {result.renderer}, "
          f"{result.frames / result.fps:.3g} s at x{result.speed:.3g} speed)")
    return result


def _cmd_render(args: argparse.Namespace) -> int:
    run = _is_run(args.target)
    if run is not None:
        given = [f"--{flag.replace('_', '-')}" for flag in SIMULATION_FLAGS if getattr(args, flag) is not None]
        if given:
            raise OptionError(f"{', '.join(given)}: only for a scene; {args.target} is a saved run")
        traj = Trajectory.load(run)
        system = system_of_run(traj, args.scene, run)
        out = Path(args.out) if args.out else run.parent / "video.mp4"
        scene_name = str(traj.info.get("scene", run.stem))
    else:
        if args.scene is not None:
            raise OptionError(f"--scene: only for a saved run; {args.target} is a scene")
        scene = with_max_steps(load_scene_of(args.target, args), args.max_steps)
        if args.out:  # before simulating, so that an unwritable path costs nothing
            writable_file(args.out, "video file")
        options = formulation_options(args.option, scene)
        traj = _simulate(scene, args.formulation, args.solver, args.dt, args.duration, options, not args.no_progress)
        system, scene_name = scene.system, scene.name
        folder = safe_component(f"{scene.name}-{traj.info['formulation']}-{str(traj.info['solver']).replace(':', '_')}")
        out = Path(args.out) if args.out else Path("runs") / folder / "video.mp4"
    title = f"{scene_name}: {traj.info.get('formulation', '?')} / {traj.info.get('solver', '?')}"
    _render(traj, system, out, args, title)
    if not traj.completed:
        print(f"contactopt: the run stopped early: {traj.message}", file=sys.stderr)
        return EXIT_STOPPED
    return 0


def render_comparison(scene: Scene, table: pd.DataFrame, target: str, folder: Path, args: argparse.Namespace,
                      solver_options: dict[str, Any]) -> RenderResult | None:
    """``compare --render``: simulate each completed or stopped row of ``table`` again (the
    comparison keeps metrics, not trajectories) and render them side by side."""
    from contactopt.analysis.compare import NO_SOLVER, parse_formulation

    rows = table[table["status"].isin(["completed", "stopped"])]
    if not len(rows):
        print("contactopt: note: no run to render (every cell failed)", file=sys.stderr)
        return None
    several_dts = rows["dt"].nunique() > 1
    panels = []
    for _, row in rows.iterrows():
        method, options = parse_formulation(str(row["formulation"]))
        solver = None if row["solver"] == NO_SOLVER else str(row["solver"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                traj = simulate(scene, formulation=method, solver=solver, dt=float(row["dt"]),
                                duration=float(row["duration"]), options=options,
                                solver_options={**scene.solver_options, **solver_options})
            except ContactoptError as exc:
                print(f"contactopt: note: {row['formulation']} / {row['solver']} not rendered: {exc}",
                      file=sys.stderr)
                continue
        label = f"{row['formulation']} / {row['solver']}" + (f", dt {row['dt']:g}" if several_dts else "")
        panels.append(Panel(traj, label))
    if not panels:
        return None
    out = Path(target) if target else folder / "compare.mp4"
    return _render(panels, scene.system, out, _CompareVideo(args), scene.name)


class _CompareVideo(argparse.Namespace):
    """The video settings of ``compare --render`` (the defaults of ``render``)."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(fps=30.0, size=(320, 240), stride=None, renderer="auto", no_forces=False, speed=None,
                         no_progress=args.no_progress)
