"""Videos of runs: ``render(trajectory, system, "run.mp4")``, or several runs of one scene side
by side (``panels``), each a panel titled with its formulation and solver;
:func:`video_frames` gives the frames without writing a file.

**Frames.** A video shows the samples ``0, s, 2s, ...`` of the (first) trajectory's time grid
and always its last sample, so it has ``ceil((N - 1) / s) + 1`` frames for ``N`` samples and
stride ``s`` (``N`` frames with ``s = 1``). The default stride plays the run at its playback
speed (real time, or slow motion for a short run: :mod:`.render_frames`) at about ``fps``
(``s = round(speed / (fps h))``, at least 1; the frame rate is then set to ``speed / (s h)``
so the speed each frame states is exact). Other panels show, at each frame's time, their
last sample at or before it (a run that stopped early stays at its last state). Every frame
carries its time (``t = ... s`` at the left of the heading line, with enough decimals to tell
consecutive frames apart), the playback speed (``x0.25``) and the arrows' scale, so no two
consecutive frames are identical and a GIF (whose writer merges identical frames) keeps them all.

**Pictures.** MJCF systems are drawn by MuJoCo (:mod:`.render_gl`, off screen) when an
OpenGL context can be made; otherwise, with one note saying why, and for every other system,
by matplotlib from the system's drawing (:func:`contactopt.systems.drawings.drawing_of`), or
as a plot of its coordinates when it has none. Contact forces (the step's impulses over its
length, at the contact points of the drawing; docs/architecture.md, "Conventions") are arrows with one
length scale per video, on every frame (:mod:`.render_frames`).

**Files.** ``.mp4`` through imageio's ffmpeg plugin (H.264; needs ``imageio-ffmpeg``), ``.gif``
through imageio's Pillow plugin.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.analysis.render_encode import VideoWriter, check_video_path
from contactopt.analysis.render_frames import (
    Frame,
    arrow_legend,
    arrow_scale,
    contact_arrows,
    paint_frames,
    playback_speed,
)
from contactopt.core.errors import ContactoptError, ContactoptWarning, OptionError
from contactopt.records.trajectory import Trajectory
from contactopt.systems.base import System
from contactopt.systems.drawing import Drawing, Plane
from contactopt.systems.drawings import drawing_of

FloatArray = NDArray[np.float64]

__all__ = ["Frame", "Panel", "RenderResult", "VideoFrames", "default_stride", "frame_indices", "render",
           "video_frames"]

RENDERERS = ("auto", "mujoco", "matplotlib")
DPI = 100
#: Height [px] of the line at the top of every frame that holds the heading and the time.
HEADING = 22
#: Smallest panel width and height [px]: the time (left in the heading line) stays readable.
MIN_SIZE = 64


@dataclass(frozen=True)
class Panel:
    """One run in a video and its title (e.g. ``"anitescu / clarabel"``)."""

    trajectory: Trajectory
    title: str = ""


@dataclass(frozen=True)
class RenderResult:
    """What was written: the file, its frame count, the renderer used, any note (why
    MuJoCo's renderer was not used), the playback speed (1: real time) and frame rate."""

    path: Path
    frames: int
    renderer: str
    note: str = ""
    speed: float = 1.0
    fps: float = 30.0


def frame_indices(samples: int, stride: int) -> NDArray[np.int64]:
    """Samples shown: ``0, stride, 2 stride, ...`` plus the last one (module docstring)."""
    if samples < 1:
        raise ContactoptError("the trajectory has no samples to render")
    indices = np.arange(0, samples, stride, dtype=np.int64)
    return indices if indices[-1] == samples - 1 else np.append(indices, samples - 1)


def default_stride(t: FloatArray, fps: float, speed: float = 1.0) -> int:
    """The stride that plays the samples ``t`` at ``speed`` times real time at ``fps``."""
    steps = np.diff(np.asarray(t, dtype=np.float64))
    steps = steps[steps > 0]
    if not steps.size:
        return 1
    return max(1, round(speed / (fps * float(np.median(steps)))))


def _check(fps: float, size: tuple[int, int], stride: int | None, renderer: str) -> None:
    if not (isinstance(fps, int | float) and math.isfinite(fps) and fps > 0):
        raise OptionError(f"fps must be a positive number, got {fps!r}")
    if len(size) != 2 or not all(isinstance(n, int) and MIN_SIZE <= n <= 4096 for n in size):
        raise OptionError(f"size must be two integers between {MIN_SIZE} and 4096 pixels (width, height), "
                          f"got {size!r}")
    if stride is not None and (isinstance(stride, bool) or not isinstance(stride, int) or stride < 1):
        raise OptionError(f"stride must be a positive integer, got {stride!r}")
    if renderer not in RENDERERS:
        raise OptionError(f"renderer must be one of {', '.join(RENDERERS)}, got {renderer!r}")


def _bounds(drawings: list[Drawing], dim: int) -> FloatArray:
    """(2, dim) view box around every drawing, 15 % margin, at least 0.2 m wide per axis (in
    3-D at least 60 % of the widest, so that the ground shows); in 3-D it reaches down to the
    ground plane."""
    points = np.concatenate([d.extent() for d in drawings]) if drawings else np.zeros((0, dim))
    points = points[np.all(np.isfinite(points), axis=1)] if points.size else points
    if not points.size:
        points = np.zeros((1, dim))
    low, high = points.min(axis=0), points.max(axis=0)
    if dim == 3:
        heights = [s.height for d in drawings for s in d.shapes if isinstance(s, Plane)]
        if heights:
            low[2] = min(low[2], min(heights))
    centre, half = 0.5 * (low + high), 0.5 * (high - low)
    half = np.maximum(1.15 * half, max(0.1, (0.6 if dim == 3 else 0.15) * float(half.max())))
    return np.array([centre - half, centre + half])


def render(panels: Trajectory | Sequence[Panel], system: System, path: str | Path, *, fps: float = 30.0,
           size: tuple[int, int] = (480, 360), stride: int | None = None, renderer: str = "auto",
           forces: bool = True, title: str = "", progress: bool = False, speed: float | None = None) -> RenderResult:
    """Write the video of one trajectory (or of ``panels`` side by side) of ``system`` to
    ``path`` (``.mp4`` or ``.gif``); the options are :func:`video_frames`'s. See the module
    docstring for the frames and the pictures. Raises :class:`OptionError` for bad options."""
    path = check_video_path(path)
    frames = video_frames(panels, system, fps=fps, size=size, stride=stride, renderer=renderer, forces=forces,
                          title=title, speed=speed)
    try:
        with VideoWriter(path, frames.fps) as writer:
            for frame in frames.paint(progress):
                writer.append(frame.image)
    finally:
        frames.close()
    return RenderResult(path, len(frames.times), frames.renderer, frames.note, frames.speed, frames.fps)


@dataclass
class VideoFrames:
    """What a video shows (:func:`video_frames`): the panels, the sample of each panel per frame,
    the frame times, the drawings, the view, the arrows and their scale, the playback ``speed``
    and frame rate ``fps``; :meth:`paint` draws the frames one by one."""

    items: list[Panel]
    samples: list[NDArray[np.int64]]
    times: FloatArray
    drawings: list[list[Drawing]] | None
    layout: _Layout
    painter: Any
    heading: str
    speed: float
    fps: float
    renderer: str
    note: str = ""
    bounds: FloatArray | None = None
    arrows: list[list[list[tuple[FloatArray, FloatArray]]]] = field(default_factory=list)
    scale: float = 0.0
    longest: float = 0.0
    diagonal: float = 0.0
    legend_length: float = 0.0
    legend: str = ""
    dpi: int = DPI

    def paint(self, progress: bool = False) -> Iterator[Frame]:
        """The frames, drawn one at a time (:func:`contactopt.analysis.render_frames.paint_frames`)."""
        yield from paint_frames(self, progress)

    def close(self) -> None:
        """Release MuJoCo's renderer, if one was opened."""
        if self.painter is not None:
            self.painter.close()
            self.painter = None


def _timing(t: FloatArray, fps: float, stride: int | None, speed: float | None) -> tuple[int, float, float]:
    """(stride, speed, fps) of a video of the samples ``t`` (module docstring): a given stride
    keeps ``fps`` and states the speed it gives; otherwise the speed (given or by
    :func:`~contactopt.analysis.render_frames.playback_speed`) is kept exact by the frame rate."""
    steps = np.diff(np.asarray(t, dtype=np.float64))
    h = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0
    if h <= 0:
        return stride or 1, 1.0 if speed is None else speed, fps
    if stride is not None:
        return stride, stride * h * fps, fps
    wanted = playback_speed(float(t[-1] - t[0])) if speed is None else speed
    chosen = default_stride(t, fps, wanted)
    return chosen, wanted, wanted / (chosen * h)


def video_frames(panels: Trajectory | Sequence[Panel], system: System, *, fps: float = 30.0,
                 size: tuple[int, int] = (480, 360), stride: int | None = None, renderer: str = "auto",
                 forces: bool = True, title: str = "", speed: float | None = None) -> VideoFrames:
    """The frames of the video of one trajectory (or of ``panels`` side by side) of ``system``:
    ``size`` is the pixel size of each panel, ``title`` the heading after the time, ``speed``
    the playback speed (None: real time, slow motion for short runs), ``fps`` the frame rate
    aimed at. Call ``.paint()`` for the frames and ``.close()`` after."""
    _check(fps, size, stride, renderer)
    if speed is not None and not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        raise OptionError(f"speed must be a positive number (1: real time), got {speed!r}")
    items = [Panel(panels)] if isinstance(panels, Trajectory) else list(panels)
    if not items:
        raise OptionError("nothing to render: no trajectories given")
    for item in items:
        q = item.trajectory.q
        if q.ndim != 2 or q.shape[1] != system.nq or q.shape[0] == 0:
            raise ContactoptError(f"trajectory {item.title or ''!s} has states of shape {q.shape}; the "
                                  f"{system.type_name} system has nq = {system.nq}")
    if renderer == "mujoco" and system.type_name not in ("mjcf", "urdf"):
        raise OptionError(f"renderer 'mujoco' draws MJCF models; this is a {system.type_name} system "
                          "(use 'auto' or 'matplotlib')")
    t_ref = items[0].trajectory.t
    chosen, shown_speed, video_fps = _timing(t_ref, float(fps), stride, speed)
    shown = frame_indices(len(t_ref), chosen)
    times = t_ref[shown]
    samples = [np.clip(np.searchsorted(p.trajectory.t, times + 1e-12, side="right") - 1, 0,
                       len(p.trajectory.t) - 1) for p in items]
    drawings: list[list[Drawing]] | None = None
    if drawing_of(system, items[0].trajectory.q[0]) is not None:
        drawings = [[_drawing(system, p.trajectory.q[i]) for i in idx] for p, idx in zip(items, samples, strict=True)]
    note = ""
    painter = None
    kind = "plot" if drawings is None else ("image" if system.type_name in ("mjcf", "urdf") and renderer != "matplotlib"
                                            else f"{drawings[0][0].dim}d")
    layout = _Layout(len(items), size, kind, len(items) > 1 and any(item.title for item in items))
    if kind == "image":
        from contactopt.analysis.render_gl import NoOpenGL, open_painter

        assert drawings is not None
        try:
            painter = open_painter(system, *layout.inner, _bounds([d for row in drawings for d in row], 3))
        except NoOpenGL as exc:
            if renderer == "mujoco":
                raise ContactoptError(f"MuJoCo's renderer needs an OpenGL context and none could be made ({exc})"
                                      ) from exc
            note = (f"no OpenGL context for MuJoCo's renderer ({exc}); drawing with matplotlib instead "
                    "(MUJOCO_GL=egl or osmesa selects a headless OpenGL)")
            warnings.warn(note, ContactoptWarning, stacklevel=3)
            layout = _Layout(len(items), size, "3d", layout.titled)
    frames = VideoFrames(items, samples, times, drawings, layout, painter,
                         title or (items[0].title if len(items) == 1 else ""), shown_speed, video_fps,
                         "mujoco" if painter is not None else "matplotlib", note)
    if drawings is not None:
        frames.bounds = _bounds([d for row in drawings for d in row], drawings[0][0].dim)
        frames.diagonal = float(np.linalg.norm(frames.bounds[1] - frames.bounds[0]))
        frames.arrows = [[_arrows_at(system, p.trajectory, d, int(i)) if forces else []
                          for d, i in zip(row, idx, strict=True)]
                         for p, row, idx in zip(items, drawings, samples, strict=True)]
        frames.scale, frames.longest = arrow_scale(frames.arrows, frames.diagonal)
        frames.legend_length, frames.legend = arrow_legend(frames.scale, frames.diagonal)
    return frames


def _arrows_at(system: System, traj: Trajectory, drawing: Drawing, index: int) -> list[tuple[FloatArray, FloatArray]]:
    """The force arrows of the frame of state ``index``: its step's; for the final state (which
    starts no step) the last step's, at the contacts where they acted."""
    if index < len(traj.steps):
        return contact_arrows(drawing, traj, index)
    last = len(traj.steps) - 1
    return contact_arrows(_drawing(system, traj.q[last]), traj, last) if last >= 0 else []


def _drawing(system: System, q: FloatArray) -> Drawing:
    drawing = drawing_of(system, q)
    if drawing is None:
        raise ContactoptError(f"{system.type_name}: drawing() returned None for some states but not others")
    return drawing


class _Layout:
    """Pixel layout of a video: a grid of panels of ``size`` each, under a line for the time;
    ``kind`` is "2d" (axes with ticks), "3d", "image" (MuJoCo pictures) or "plot"."""

    TITLE = 16

    def __init__(self, n: int, size: tuple[int, int], kind: str, titled: bool) -> None:
        self.n, self.kind, self.titled = n, kind, titled
        self.cols = math.ceil(math.sqrt(n))
        self.rows = math.ceil(n / self.cols)
        self.size = size
        width, height = self.cols * size[0], self.rows * size[1] + HEADING
        self.width, self.height = width + width % 2, height + height % 2  # H.264 needs even sizes
        ticks = kind in ("2d", "plot")
        title = self.TITLE if titled else 0
        self.margins = (44 if ticks else 4, 8 if ticks else 4, title + 4, 30 if ticks else 4)  # left right top bottom
        left, right, top, bottom = self.margins
        self.inner = (max(16, size[0] - left - right), max(16, size[1] - top - bottom))

    def rect(self, k: int) -> tuple[float, float, float, float]:
        """Axes rectangle of panel ``k`` in figure fractions."""
        row, col = divmod(k, self.cols)
        left, _right, top, _bottom = self.margins
        x0 = col * self.size[0] + left
        y_top = HEADING + row * self.size[1] + top
        return (x0 / self.width, 1.0 - (y_top + self.inner[1]) / self.height,
                self.inner[0] / self.width, self.inner[1] / self.height)
