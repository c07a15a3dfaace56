"""An interactive 3-D viewer of runs: ``view(trajectory, system)`` writes one self-contained
HTML page (meshcat's three.js viewer, its script inlined: it opens from a file, offline) with
the bodies, the contact points and force arrows, and a time slider; several runs of one scene
(formulations, solvers) stand side by side, each labelled.

**What is drawn.** The system's own drawing (:func:`contactopt.systems.drawings.drawing_of`,
the geometry the offline videos use: rigid3d boxes and spheres, MJCF geoms posed by MuJoCo,
textbook systems as simple shapes in the vertical plane ``y = 0``), made of meshcat objects
by :mod:`.viewer_shapes`. Every run has its own body colour; runs are set apart along the
horizontal axis in which the scene is narrower. Hydroelastic contact surfaces are drawn over the
bodies as meshes coloured by pressure (``viridis`` from 0 to the page's largest pressure, in the
page's metadata as ``pressure_top``; :mod:`.viewer_shapes`). Contacts that carry a force in a frame show a
dark point and a red arrow along the force on the body, ``F = frames^T lambda / h`` (the
step's impulse over its length, docs/architecture.md, "Conventions"), with one length scale for the page
(that of the videos, :mod:`.render`: the median of the frames' largest forces spans 30 % of the
view's diagonal, longer arrows are cut at twice that), stated on the page in metres per newton.
The last sample, which starts no step, shows the forces of the step that led to it.

**Time.** The slider (meshcat's "Animations" panel: play, pause, time) runs in simulated
seconds; each frame holds until the next sample (no interpolation between samples). A run
shows its samples ``0, s, 2s, ...`` and its last (``s`` the smallest stride giving at most
``max_frames`` frames). Playback is slowed so that a run lasts at least ``MIN_PLAYBACK`` seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.analysis.render import Panel, _bounds, frame_indices
from contactopt.analysis.render_frames import arrow_scale as _arrow_scale
from contactopt.analysis.render_frames import clip as _clip
from contactopt.analysis.render_frames import contact_arrows as _arrows
from contactopt.analysis.render_mpl import pressure_top
from contactopt.analysis.viewer_page import ViewPage, page_html
from contactopt.analysis.viewer_shapes import (
    ShapeModel,
    lift,
    model_shapes,
    patch_keyframes,
    patch_object,
    rotation_onto,
)
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene
from contactopt.systems.base import System
from contactopt.systems.drawing import Drawing
from contactopt.systems.drawings import drawing_of

FloatArray = NDArray[np.float64]

__all__ = ["INSTALL_HINT", "RUN_COLOURS", "ViewPage", "view"]

INSTALL_HINT = "pip install 'contactopt[viewer]' (or: pip install meshcat)"
#: Body colour of each run in turn (matplotlib's tab10 without its red, which marks forces).
RUN_COLOURS = (0x1F77B4, 0x2CA02C, 0x9467BD, 0xFF7F0E, 0x8C564B, 0x17BECF, 0xE377C2, 0x7F7F7F, 0xBCBD22)
ARROW_COLOUR = 0xD62728
POINT_COLOUR = 0x222222
#: Shortest playback [s] at the default speed: shorter runs play in slow motion.
MIN_PLAYBACK = 4.0
#: three.js ``InterpolateDiscrete``: a keyframe holds until the next one.
DISCRETE = 2300


def _meshcat() -> tuple[Any, Any, Any, Any]:
    """meshcat's geometry, commands, animation and path modules (the optional dependency)."""
    try:
        import meshcat.animation
        import meshcat.commands
        import meshcat.geometry
        import meshcat.path
    except ImportError as exc:
        raise ContactoptError(f"the 3-D viewer needs meshcat, which is not installed: {INSTALL_HINT}") from exc
    return meshcat.geometry, meshcat.commands, meshcat.animation, meshcat.path


@dataclass(frozen=True)
class _Run:
    """One run as drawn: its frames (sample indices), drawings and force arrows per frame."""

    title: str
    trajectory: Trajectory
    frames: NDArray[np.int64]
    drawings: list[Drawing]
    arrows: list[list[tuple[FloatArray, FloatArray]]]


def _frames(samples: int, max_frames: int) -> NDArray[np.int64]:
    return frame_indices(samples, max(1, math.ceil((samples - 1) / max_frames)))


def _run(panel: Panel, system: System, max_frames: int, forces: bool) -> _Run:
    traj = panel.trajectory
    frames = _frames(traj.q.shape[0], max_frames)
    drawings = [_drawing(system, traj.q[i]) for i in frames]
    arrows: list[list[tuple[FloatArray, FloatArray]]] = []
    for drawing, index in zip(drawings, frames, strict=True):
        if not forces:
            arrows.append([])
        elif index < len(traj.steps):
            arrows.append(_arrows(drawing, traj, int(index)))
        else:  # the last sample: the forces of the step that led to it, where they acted
            last = len(traj.steps) - 1
            arrows.append(_arrows(_drawing(system, traj.q[last]), traj, last) if last >= 0 else [])
    return _Run(panel.title, traj, frames, drawings, arrows)


def _drawing(system: System, q: FloatArray) -> Drawing:
    drawing = drawing_of(system, q)
    if drawing is None:
        raise ContactoptError(f"the {system.type_name} system has no drawing (System.drawing), so the 3-D viewer "
                              "cannot show it; 'contactopt render' plots its coordinates instead")
    return drawing


def _panels(runs: Trajectory | Sequence[Trajectory | Panel]) -> list[Panel]:
    items = [runs] if isinstance(runs, Trajectory) else list(runs)
    if not items:
        raise OptionError("nothing to view: no trajectories given")
    panels = []
    for item in items:
        if isinstance(item, Panel):
            panels.append(item)
        elif isinstance(item, Trajectory):
            info = item.info
            panels.append(Panel(item, f"{info.get('formulation', '?')} / {info.get('solver', '?')}"))
        else:
            raise OptionError(f"view takes trajectories (or Panel(trajectory, title)); got a {type(item).__name__}")
    return panels


def view(runs: Trajectory | Sequence[Trajectory | Panel], system: System | Scene, path: str | Path | None = None, *,
         title: str = "", max_frames: int = 600, forces: bool = True) -> ViewPage:
    """The interactive 3-D page of one trajectory of ``system`` (or of several, side by side:
    trajectories are titled "formulation / solver", a :class:`Panel` carries its own title),
    written to ``path`` when one is given. See the module docstring for what is drawn.
    Raises :class:`ContactoptError` when meshcat is missing, :class:`OptionError` for bad options."""
    if isinstance(system, Scene):
        system = system.system
    if isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 1:
        raise OptionError(f"max_frames must be a positive integer, got {max_frames!r}")
    panels = _panels(runs)
    for panel in panels:
        q = panel.trajectory.q
        if q.ndim != 2 or q.shape[1] != system.nq or q.shape[0] == 0:
            raise ContactoptError(f"trajectory {panel.title!r} has states of shape {q.shape}; the "
                                  f"{system.type_name} system has nq = {system.nq}")
    g, commands, animation, paths = _meshcat()
    drawn = [_run(panel, system, max_frames, forces) for panel in panels]
    dim = drawn[0].drawings[0].dim
    box = _bounds([d for run in drawn for d in run.drawings], dim)
    low, high = (lift(box[0], dim), lift(box[1], dim))
    if dim == 2:  # the plane's bodies are 0.08 diagonals thick (viewer_shapes)
        low[1], high[1] = -0.1 * float(np.linalg.norm(box[1] - box[0])), 0.1 * float(np.linalg.norm(box[1] - box[0]))
    size = float(np.linalg.norm(high - low))
    scale, longest = _arrow_scale([run.arrows for run in drawn], size)
    top = pressure_top([d for run in drawn for d in run.drawings])
    axis = 1 if dim == 3 and high[1] - low[1] <= high[0] - low[0] else 0
    spacing = 1.25 * float(high[axis] - low[axis]) + 0.1 * size
    offsets = [np.eye(3)[axis] * spacing * k for k in range(len(drawn))]
    centre = 0.5 * (low + high) + 0.5 * offsets[-1]
    scene = _Commands(commands, paths)
    scene.transform("/contactopt", _matrix(-centre))
    clips: dict[str, dict[str, list[tuple[float, Any]]]] = {}
    summary = []
    for k, (run, offset) in enumerate(zip(drawn, offsets, strict=True)):
        colour = RUN_COLOURS[k % len(RUN_COLOURS)]
        root = f"/contactopt/run{k}"
        scene.transform(root, _matrix(offset))
        times = run.trajectory.t[run.frames] - run.trajectory.t[0]
        models = model_shapes(run.drawings, g, size, colour)
        for j, model in enumerate(models):
            _add_shape(scene, clips, f"{root}/{'scenery' if model.scenery else 'bodies'}/shape{j}", model, times)
        patches = _add_patches(scene, clips, g, f"{root}/patches", run.drawings, times, size, top)
        counts = _add_arrows(scene, clips, g, f"{root}/forces", run.arrows, times, scale, longest, size)
        label_at = np.array([0.5 * (low[0] + high[0]), 0.5 * (low[1] + high[1]), high[2] + 0.08 * size])
        scene.sprite(g, f"{root}/label", run.title, label_at, 0.1 * size, colour)
        summary.append({"title": run.title, "colour": f"#{colour:06x}", "times": [float(t) for t in times],
                        "bodies": sum(not m.scenery for m in models), "forces": counts, "patches": patches,
                        "completed": bool(run.trajectory.completed), "message": run.trajectory.message})
    duration = max(float(run.trajectory.t[-1] - run.trajectory.t[0]) for run in drawn)
    layout = float(np.linalg.norm(high - low + np.abs(offsets[-1])))
    # 2-D: nearly head-on to the plane; 3-D: from the front, above, across the row of runs
    eye = np.array([0.15, -1.0, 0.3]) if dim == 2 else (np.array([0.35, -1.0, 0.55]) if axis == 0
                                                         else np.array([1.0, -0.45, 0.55]))
    scene.camera(eye / np.linalg.norm(eye) * 0.95 * layout)
    scene.animation(animation, clips)
    meta = {"title": title, "runs": summary, "arrow_scale": scale, "longest_arrow": longest, "pressure_top": top,
            "speed": min(1.0, duration / MIN_PLAYBACK) if duration > 0 else 1.0, "duration": duration}
    page = ViewPage(page_html(scene.encoded, meta), meta)
    if path is not None:
        page.save(path)
    return page


def _matrix(position: FloatArray, rotation: FloatArray | None = None) -> FloatArray:
    matrix = np.eye(4)
    matrix[:3, 3] = position
    if rotation is not None:
        matrix[:3, :3] = rotation
    return matrix


def _quaternion(rotation: FloatArray) -> list[float]:
    """three.js order ``[x, y, z, w]`` of a rotation matrix (meshcat's transformations)."""
    from meshcat.transformations import quaternion_from_matrix

    w, x, y, z = quaternion_from_matrix(_matrix(np.zeros(3), rotation))
    return [float(x), float(y), float(z), float(w)]


def _key(clips: dict[str, dict[str, list[tuple[float, Any]]]], path: str, prop: str, time: float, value: Any) -> None:
    clips.setdefault(path, {}).setdefault(prop, []).append((time, value))


def _add_shape(scene: _Commands, clips: dict[str, dict[str, list[tuple[float, Any]]]], path: str,
               model: ShapeModel, times: FloatArray) -> None:
    for name, obj in model.objects:
        scene.object(f"{path}/{name}", obj)
    if model.scenery:
        pose = model.poses[0]
        scene.transform(path, _matrix(pose.position, pose.rotation))  # scenery is never scaled
        return
    for time, pose in zip(times, model.poses, strict=True):
        _key(clips, path, "position", float(time), [float(x) for x in pose.position])
        _key(clips, path, "quaternion", float(time), _quaternion(pose.rotation))
        _key(clips, path, "scale", float(time), [float(x) for x in pose.scale])


def _add_arrows(scene: _Commands, clips: dict[str, dict[str, list[tuple[float, Any]]]], g: Any, path: str,
                arrows: list[list[tuple[FloatArray, FloatArray]]], times: FloatArray, scale: float, longest: float,
                size: float) -> list[int]:
    """One slot per simultaneous force: a point and a unit arrow along local ``+y`` (shaft 80 %,
    head 20 %) scaled to the force's length; slots without a force in a frame are hidden."""
    slots = max((len(frame) for frame in arrows), default=0)
    radius = 0.008 * size  # the width of the videos' arrows (render_gl)

    def overlay(colour: int) -> Any:
        # unlit, and drawn over the bodies (no depth test; three.js draws transparent materials
        # after opaque ones): the arrows on a body's far side, or inside it, stay in sight
        return g.MeshBasicMaterial(color=colour, transparent=True, opacity=1.0, depthTest=False)

    for s in range(slots):
        slot = f"{path}/slot{s}"
        scene.object(f"{slot}/point", g.Mesh(g.Sphere(1.6 * radius), overlay(POINT_COLOUR)))
        scene.object(f"{slot}/arrow/shaft", _shifted(g.Mesh(g.Cylinder(0.8, radius), overlay(ARROW_COLOUR)), 0.4))
        scene.object(f"{slot}/arrow/head", _shifted(g.Mesh(g.Cylinder(0.2, radiusTop=0.0, radiusBottom=2.5 * radius),
                                                           overlay(ARROW_COLOUR)), 0.9))
    for time, frame in zip(times, arrows, strict=True):
        for s in range(slots):
            slot = f"{path}/slot{s}"
            shown = s < len(frame) and scale > 0
            _key(clips, slot, "visible", float(time), shown)
            point, force = (frame[s] if shown else (np.zeros(3), np.zeros(3)))
            vector = _clip(scale * lift(force, len(force)), longest) if shown else np.zeros(3)
            _key(clips, slot, "position", float(time), [float(x) for x in lift(point, len(point))])
            _key(clips, f"{slot}/arrow", "quaternion", float(time), _quaternion(rotation_onto(vector)))
            _key(clips, f"{slot}/arrow", "scale", float(time), [1.0, max(float(np.linalg.norm(vector)), 1e-9), 1.0])
    return [len(frame) if scale > 0 else 0 for frame in arrows]


def _add_patches(scene: _Commands, clips: dict[str, dict[str, list[tuple[float, Any]]]], g: Any, path: str,
                 drawings: list[Drawing], times: FloatArray, size: float, top: float) -> int:
    """The contact patches of a run: one mesh per keyframe (:func:`.viewer_shapes.patch_keyframes`),
    shown from its time to the next keyframe's; the number of meshes."""
    keys = patch_keyframes(drawings, size, top)
    made = 0
    for j, frame in enumerate(keys):
        mesh = patch_object(g, drawings[frame], top)
        if mesh is None:
            continue
        made += 1
        slot = f"{path}/k{j}"
        scene.object(f"{slot}/surface", mesh)
        if times[frame] > times[0]:
            _key(clips, slot, "visible", float(times[0]), False)
        _key(clips, slot, "visible", float(times[frame]), True)
        if j + 1 < len(keys):
            _key(clips, slot, "visible", float(times[keys[j + 1]]), False)
    return made


def _shifted(mesh: Any, along_y: float) -> Any:
    """``mesh`` whose geometry sits ``along_y`` up its local y axis (an arrow's shaft and head)."""
    from contactopt.analysis.viewer_shapes import _Offset

    return _Offset(mesh, np.array([0.0, along_y, 0.0]))


class _Commands:
    """meshcat commands, lowered and packed (msgpack) in the order the page replays them."""

    def __init__(self, commands: Any, paths: Any) -> None:
        import umsgpack

        self.c, self.paths, self.pack = commands, paths, umsgpack.packb
        self.encoded: list[bytes] = []
        self.send({"type": "set_property", "path": "/Grid", "property": "visible", "value": False})
        self.send({"type": "set_property", "path": "/Axes", "property": "visible", "value": False})

    def path(self, text: str) -> Any:
        return self.paths.Path(tuple(text.strip("/").split("/")))

    def send(self, lowered: dict[str, Any]) -> None:
        self.encoded.append(self.pack(lowered))

    def object(self, path: str, obj: Any) -> None:
        self.send({"type": "set_object", "object": obj.lower(), "path": path})

    def transform(self, path: str, matrix: FloatArray) -> None:
        self.send(self.c.SetTransform(np.asarray(matrix, dtype=np.float64), self.path(path)).lower())

    def camera(self, position: FloatArray) -> None:
        x, y, z = (float(v) for v in position)  # the camera node is y-up: world (x, y, z) is (x, z, -y)
        self.send({"type": "set_property", "path": "/Cameras/default/rotated/<object>", "property": "position",
                   "value": [x, z, -y]})

    def sprite(self, g: Any, path: str, text: str, at: FloatArray, height: float, colour: int) -> None:
        from contactopt.analysis.viewer_page import label_png

        png, aspect = label_png(text, colour)
        material = g.MeshBasicMaterial(map=g.ImageTexture(g.PngImage(png)), transparent=True)
        material._type = "SpriteMaterial"
        sprite = g.Mesh(g.Box([1.0, 1.0, 1.0]), material)
        sprite._type = "Sprite"
        self.object(f"{path}/text", sprite)
        matrix = _matrix(at)
        matrix[:3, :3] = np.diag([height * aspect, height, 1.0])
        self.transform(path, matrix)

    def animation(self, animation: Any, clips: dict[str, dict[str, list[tuple[float, Any]]]]) -> None:
        if not clips:
            return
        anim = animation.Animation(default_framerate=1)
        types = {"position": "vector3", "scale": "vector3", "quaternion": "quaternion", "visible": "boolean"}
        for path, tracks in clips.items():
            clip = animation.AnimationClip(fps=1)  # key times in seconds
            for prop, keys in tracks.items():
                clip.tracks[prop] = animation.AnimationTrack(prop, types[prop], [t for t, _ in keys],
                                                             [v for _, v in keys])
            anim.clips[self.path(path)] = clip
        lowered = self.c.SetAnimation(anim, play=True, repetitions=1).lower()
        for item in lowered["animations"]:
            for track in item["clip"]["tracks"]:
                track["interpolation"] = DISCRETE
        self.send(lowered)
