"""``contactopt view RUN_OR_SCENE [--formulations F1,F2] [--out page.html] [--port P]``.

Writes the interactive 3-D page of :mod:`contactopt.analysis.viewer` (one self-contained HTML
file) and, with ``--port``, serves it on this machine until interrupted. RUN_OR_SCENE is a saved
run (a folder written by ``contactopt run --out DIR``, or its ``trajectory.npz``), drawn with
the system of its scene as ``contactopt render`` finds it, or a scene (a file or a bundled
problem name), simulated first under each formulation of ``--formulations`` (default: the
scene's), the runs side by side. ``--mujoco`` replays an MJCF run in MuJoCo's own viewer
(``mujoco.viewer``) instead, where a display exists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from contactopt.analysis.render import Panel
from contactopt.cli.common import (
    add_keyframe_argument,
    add_max_steps_argument,
    formulation_options,
    load_scene_of,
    positive_float,
    with_max_steps,
)
from contactopt.cli.grid import split_list
from contactopt.cli.render import _is_run, _simulate, system_of_run
from contactopt.core.errors import OptionError
from contactopt.core.outputs import safe_component, writable_file
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System

__all__ = ["add_view_parser"]

SCENE_FLAGS = ("formulations", "solver", "dt", "duration", "option", "keyframe", "system_option", "max_steps")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number (0 to 65535; 0: any free port), got {text!r}"
                                         ) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number between 0 and 65535, got {text!r}")
    return port


def add_view_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contactopt view`` to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "view", help="write (and serve) an interactive 3-D page of a saved run or of a scene's runs",
        description="Write an interactive 3-D page (one self-contained HTML file, meshcat's viewer) of "
        "RUN_OR_SCENE: a saved run, or a scene simulated under each of --formulations, side by side. "
        "Bodies, contact points and force arrows (force = impulse / dt, the scale printed on the page), "
        "a time slider. Needs the viewer extra: pip install 'contactopt[viewer]'.")
    parser.add_argument("target", metavar="RUN_OR_SCENE",
                        help="run folder, trajectory .npz, scene file or bundled problem name")
    parser.add_argument("--out", help="page to write (default: RUN/view.html, or runs/SCENE-view/view.html "
                        "for a scene)")
    parser.add_argument("--port", type=_port, help="also serve the page at http://127.0.0.1:PORT/ until "
                        "interrupted (0: any free port)")
    parser.add_argument("--scene", help="for a saved run: the scene it was simulated from (default: the bundled "
                        "problem of the run's scene name)")
    parser.add_argument("--formulations", "-f", help="for a scene: formulations to simulate and show side by "
                        "side, comma separated (default: the scene's)")
    parser.add_argument("--solver", "-s", help="for a scene: solver (default: each formulation's)")
    parser.add_argument("--dt", type=positive_float, help="for a scene: time step [s] (default: the scene's)")
    parser.add_argument("--duration", type=positive_float, help="for a scene: simulated time [s]")
    add_max_steps_argument(parser)
    add_keyframe_argument(parser)
    parser.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="for a scene: formulation option, repeatable")
    parser.add_argument("--max-frames", type=int, default=600, metavar="N",
                        help="at most N frames per run on the time slider (default 600)")
    parser.add_argument("--no-forces", action="store_true", help="do not draw contact forces")
    parser.add_argument("--mujoco", action="store_true", help="replay an MJCF run in MuJoCo's own viewer "
                        "(needs a display) instead of writing a page")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.set_defaults(func=_cmd_view)
    return parser


def _runs(args: argparse.Namespace) -> tuple[list[Panel], System, str, Path]:
    """The runs to show, their system, the scene's name and the default page."""
    run = _is_run(args.target)
    if run is not None:
        given = [f"--{flag.replace('_', '-')}" for flag in SCENE_FLAGS if getattr(args, flag) is not None]
        if given:
            raise OptionError(f"{', '.join(given)}: only for a scene; {args.target} is a saved run")
        traj = Trajectory.load(run)
        title = f"{traj.info.get('formulation', '?')} / {traj.info.get('solver', '?')}"
        return [Panel(traj, title)], system_of_run(traj, args.scene, run), str(traj.info.get("scene", run.stem)), \
            run.parent / "view.html"
    if args.scene is not None:
        raise OptionError(f"--scene: only for a saved run; {args.target} is a scene")
    scene = with_max_steps(load_scene_of(args.target, args), args.max_steps)
    if args.out:  # before simulating, so that an unwritable path costs nothing
        writable_file(args.out, "viewer page")
    from contactopt.analysis.compare import parse_formulation

    panels = []
    for spec in split_list(args.formulations, "--formulations") or [scene.formulation]:
        method, options = parse_formulation(spec)
        traj = _simulate(scene, method, args.solver, args.dt, args.duration,
                         {**options, **formulation_options(args.option, scene)}, not args.no_progress)
        panels.append(Panel(traj, f"{spec} / {traj.info.get('solver', '?')}"))
    return panels, scene.system, scene.name, Path("runs") / safe_component(f"{scene.name}-view") / "view.html"


def _cmd_view(args: argparse.Namespace) -> int:
    if args.max_frames < 1:
        raise OptionError(f"--max-frames must be a positive integer, got {args.max_frames}")
    panels, system, scene_name, default = _runs(args)
    if args.mujoco:
        from contactopt.analysis.viewer_mujoco import replay

        replay(panels[0].trajectory, system)
        return 0
    from contactopt.analysis.viewer import view

    out = writable_file(args.out or default, "viewer page")
    page = view(panels, system, out, title=scene_name, max_frames=args.max_frames, forces=not args.no_forces)
    print(f"wrote {out} ({', '.join(panel.title for panel in panels)}; open it in a browser)")
    for panel in panels:
        if not panel.trajectory.completed:
            print(f"contactopt: note: {panel.title} stopped early: {panel.trajectory.message}", file=sys.stderr)
    if args.port is None:
        return 0
    from contactopt.analysis.viewer_page import make_server

    server = make_server(page.html, "127.0.0.1", args.port)
    host, port = server.server_address[:2]
    print(f"serving at http://{host!s}:{port}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
