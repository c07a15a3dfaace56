"""Videos of runs: ``render(trajectory, system, "run.mp4")``, or several runs of one scene side
by side (``panels``), each a panel titled with its formulation and solver.

**Frames.** A video shows the samples ``0, s, 2s, ...`` of the (first) trajectory's time grid
and always its last sample, so it has ``ceil((N - 1) / s) + 1`` frames for ``N`` samples and
stride ``s`` (``N`` frames with ``s = 1``). The default stride plays the run in real time at
``fps`` (``s = round(1 / (fps h))``, at least 1). Other panels show, at each frame's time, their
last sample at or before it (a run that stopped early stays at its last state). Every frame
carries its time (``t = ... s`` at the left of the heading line, with enough decimals to tell
consecutive frames apart), so no two consecutive frames are identical and a GIF (whose writer
merges identical frames) keeps them all.

**Pictures.** MJCF systems are drawn by MuJoCo (:mod:`.render_gl`, off screen) when an
OpenGL context can be made; otherwise, with one note saying why, and for every other system,
by matplotlib from the system's drawing (:func:`contactopt.systems.drawings.drawing_of`), or
as a plot of its coordinates when it has none. Contact forces (the step's impulses over its
length, at the contact points of the drawing; DESIGN.md "Contacts") are arrows with one
length scale per video: the median of the frames' largest forces spans 30 % of the
view's diagonal, and longer arrows (impacts, a launch) are cut at twice that.

**Files.** ``.mp4`` through imageio's ffmpeg plugin (H.264; needs ``imageio-ffmpeg``), ``.gif``
through imageio's Pillow plugin.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.analysis.render_encode import VideoWriter, check_video_path
from contactopt.errors import ContactoptError, ContactoptWarning, OptionError
from contactopt.records import Trajectory
from contactopt.systems.base import System
from contactopt.systems.drawing import Drawing, Plane
from contactopt.systems.drawings import drawing_of

FloatArray = NDArray[np.float64]

__all__ = ["Panel", "RenderResult", "default_stride", "frame_indices", "render"]

RENDERERS = ("auto", "mujoco", "matplotlib")
DPI = 100
#: Height [px] of the line at the top of every frame that holds the heading and the time.
HEADING = 22
#: Smallest panel width and height [px]: the time (left in the heading line) stays readable.
MIN_SIZE = 64
#: Longest force arrow as a fraction of the view's diagonal.
ARROW_FRACTION = 0.3


@dataclass(frozen=True)
class Panel:
    """One run in a video and its title (e.g. ``"anitescu / clarabel"``)."""

    trajectory: Trajectory
    title: str = ""


@dataclass(frozen=True)
class RenderResult:
    """What was written: the file, its frame count, the renderer used and any note (why
    MuJoCo's renderer was not used)."""

    path: Path
    frames: int
    renderer: str
    note: str = ""


def frame_indices(samples: int, stride: int) -> NDArray[np.int64]:
    """Samples shown: ``0, stride, 2 stride, ...`` plus the last one (module docstring)."""
    if samples < 1:
        raise ContactoptError("the trajectory has no samples to render")
    indices = np.arange(0, samples, stride, dtype=np.int64)
    return indices if indices[-1] == samples - 1 else np.append(indices, samples - 1)


def default_stride(t: FloatArray, fps: float) -> int:
    """The stride that plays the samples ``t`` in real time at ``fps``."""
    steps = np.diff(np.asarray(t, dtype=np.float64))
    steps = steps[steps > 0]
    if not steps.size:
        return 1
    return max(1, round(1.0 / (fps * float(np.median(steps)))))


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


def _arrows(drawing: Drawing, trajectory: Trajectory, index: int) -> list[tuple[FloatArray, FloatArray]]:
    """(point, force) of each contact of step ``index`` with a nonzero force."""
    if drawing.contacts is None or index >= len(trajectory.steps):
        return []
    record = trajectory.steps[index]
    if not record.status.usable:
        return []
    forces = drawing.contacts.forces(record.impulses, trajectory.dt)
    if forces is None:
        return []
    return [(point, force) for point, force in zip(drawing.contacts.points, forces, strict=True)
            if float(np.linalg.norm(force)) > 0.0]


def _arrow_scale(arrows: list[list[list[tuple[FloatArray, FloatArray]]]], diagonal: float) -> tuple[float, float]:
    """(metres per newton, longest arrow) of a video (module docstring)."""
    peaks = [max(float(np.linalg.norm(force)) for _, force in frame) for row in arrows for frame in row if frame]
    if not peaks:
        return 0.0, 0.0
    typical = float(np.median(peaks))
    return (ARROW_FRACTION * diagonal / typical if typical > 0 else 0.0), 2.0 * ARROW_FRACTION * diagonal


def _clip(vector: FloatArray, longest: float) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    return vector * (longest / norm) if norm > longest else vector


def _decimals(times: FloatArray) -> int:
    gaps = np.diff(times)
    gaps = gaps[gaps > 0]
    return 2 if not gaps.size else int(min(6, max(2, math.ceil(-math.log10(float(gaps.min())) + 1e-9))))


def render(panels: Trajectory | Sequence[Panel], system: System, path: str | Path, *, fps: float = 30.0,
           size: tuple[int, int] = (480, 360), stride: int | None = None, renderer: str = "auto",
           forces: bool = True, title: str = "", progress: bool = False) -> RenderResult:
    """Write the video of one trajectory (or of ``panels`` side by side) of ``system`` to
    ``path`` (``.mp4`` or ``.gif``); ``size`` is the pixel size of each panel, ``title`` the
    heading next to the time. See the module docstring for the frames and the pictures.
    Raises :class:`OptionError` for bad options."""
    _check(fps, size, stride, renderer)
    path = check_video_path(path)
    items = [Panel(panels)] if isinstance(panels, Trajectory) else list(panels)
    if not items:
        raise OptionError("nothing to render: no trajectories given")
    for item in items:
        q = item.trajectory.q
        if q.ndim != 2 or q.shape[1] != system.nq or q.shape[0] == 0:
            raise ContactoptError(f"trajectory {item.title or ''!s} has states of shape {q.shape}; the "
                                  f"{system.type_name} system has nq = {system.nq}")
    if renderer == "mujoco" and system.type_name != "mjcf":
        raise OptionError(f"renderer 'mujoco' draws MJCF models; this is a {system.type_name} system "
                          "(use 'auto' or 'matplotlib')")
    t_ref = items[0].trajectory.t
    shown = frame_indices(len(t_ref), stride or default_stride(t_ref, fps))
    times = t_ref[shown]
    samples = [np.clip(np.searchsorted(p.trajectory.t, times + 1e-12, side="right") - 1, 0,
                       len(p.trajectory.t) - 1) for p in items]
    drawings: list[list[Drawing]] | None = None
    if drawing_of(system, items[0].trajectory.q[0]) is not None:
        drawings = [[_drawing(system, p.trajectory.q[i]) for i in idx] for p, idx in zip(items, samples, strict=True)]
    note = ""
    painter = None
    kind = "plot" if drawings is None else ("image" if system.type_name == "mjcf" and renderer != "matplotlib"
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
            warnings.warn(note, ContactoptWarning, stacklevel=2)
            layout = _Layout(len(items), size, "3d", layout.titled)
    used = "mujoco" if painter is not None else "matplotlib"
    try:
        count = _write(items, samples, times, drawings, path, fps, layout, painter, forces, progress,
                       title or (items[0].title if len(items) == 1 else ""))
    finally:
        if painter is not None:
            painter.close()
    return RenderResult(path, count, used, note)


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


def _write(items: list[Panel], samples: list[NDArray[np.int64]], times: FloatArray,
           drawings: list[list[Drawing]] | None, path: Path, fps: float, layout: _Layout,
           painter: Any, forces: bool, progress: bool, heading: str) -> int:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # no pyplot: a notebook's backend is left alone
    from matplotlib.figure import Figure
    from tqdm import tqdm

    from contactopt.analysis.render_mpl import paint_coordinates, paint_drawing, paint_image, setup_axes

    fig = Figure(figsize=(layout.width / DPI, layout.height / DPI), dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    dim = drawings[0][0].dim if drawings is not None else 0
    axes = [fig.add_axes(layout.rect(k), projection="3d" if layout.kind == "3d" else None)
            for k in range(len(items))]
    bounds = _bounds([d for row in drawings for d in row], dim) if drawings is not None else None
    arrows = [[_arrows(d, p.trajectory, i) if forces else [] for d, i in zip(row, idx, strict=True)]
              for p, row, idx in zip(items, drawings, samples, strict=True)] if drawings is not None else None
    scale, longest = 0.0, 0.0
    if arrows is not None and bounds is not None:
        scale, longest = _arrow_scale(arrows, float(np.linalg.norm(bounds[1] - bounds[0])))
    for ax in axes:
        setup_axes(ax, layout.kind, bounds, drawings[0][0].axes if drawings is not None else ())
    shown: list[list[Any]] = [[] for _ in axes]  # the artists of the previous frame, per panel
    decimals = _decimals(times)
    bar = tqdm(total=len(times), desc=f"render {path.name}", unit="frame", disable=not progress, leave=False)
    try:
        with VideoWriter(path, fps) as writer:
            for f, now in enumerate(times):
                for k, (item, ax) in enumerate(zip(items, axes, strict=True)):
                    traj, index = item.trajectory, int(samples[k][f])
                    for artist in shown[k]:
                        artist.remove()
                    before = set(ax.get_children())
                    if drawings is None:
                        paint_coordinates(ax, traj.t, traj.q, list(traj.info.get("q_names") or []), float(now))
                    else:
                        assert arrows is not None and bounds is not None
                        pairs = [(p, p + _clip(scale * F, longest)) for p, F in arrows[k][f]]
                        if painter is not None:
                            paint_image(ax, painter.render(traj.q[index], pairs, 0.008 * float(
                                np.linalg.norm(bounds[1] - bounds[0]))))
                        else:
                            paint_drawing(ax, drawings[k][f], bounds, pairs)
                    shown[k] = [artist for artist in ax.get_children() if artist not in before]
                    if layout.titled:
                        stopped = " (stopped)" if not traj.completed and now > traj.t[-1] + 1e-12 else ""
                        ax.set_title(f"{item.title}{stopped}", fontsize="small", pad=3)
                fig.suptitle(f"t = {now:.{decimals}f} s   {heading}".strip(), fontsize=8, x=4.0 / layout.width,
                             y=1.0 - 5.0 / layout.height, ha="left", va="top")
                canvas.draw()
                writer.append(np.asarray(canvas.buffer_rgba())[..., :3])
                bar.update()
    finally:
        bar.close()
    return len(times)
