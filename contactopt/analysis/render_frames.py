"""The frames of a video (:func:`contactopt.analysis.render.video_frames`), one
:class:`Frame` at a time: the picture, its time, its heading and the force arrows drawn.

**Speed.** A run shorter than :data:`SLOW_BELOW` seconds is played in slow motion so that the
video lasts at least :data:`MIN_VIDEO` seconds (the largest factor of :data:`SPEEDS` that
does), a longer one in real time; every frame states the factor (``x0.25``). The frame rate
is adjusted so the stated factor is exact: ``fps = speed / (stride h)``.

**Arrows.** A step's contact forces (its impulses over ``h``) are drawn on the frame of the
step's starting state, and the last frame (the final state, which starts no step) shows the
last step's forces where they acted (at the contacts of that step's starting state): every
frame has its forces. One length scale per video (the median of
the frames' largest forces spans 30 % of the view's diagonal; longer arrows are cut at twice
that), stated in the heading as a round length and its force (``arrow 5 cm = 12.3 N``) and
drawn as a grey reference arrow in the top left corner of each matplotlib panel.

**Contact surfaces.** A drawing's patches (hydroelastic contact surfaces,
:class:`~contactopt.systems.drawing.Patch`) are drawn over the bodies, each polygon coloured by
its pressure on matplotlib's ``viridis`` map from 0 to the largest pressure of the video
(:func:`contactopt.analysis.render_mpl.pressure_colours`), stated in the heading
(``pressure 0-9.8 kPa``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.records.trajectory import Trajectory
from contactopt.systems.drawing import Drawing

FloatArray = NDArray[np.float64]
Arrow = tuple[FloatArray, FloatArray]

__all__ = ["ARROW_FRACTION", "MIN_VIDEO", "SLOW_BELOW", "SPEEDS", "Frame", "arrow_legend", "contact_arrows",
           "playback_speed"]

#: Longest force arrow as a fraction of the view's diagonal.
ARROW_FRACTION = 0.3
#: Runs shorter than this [s of simulated time] are played slower than real time ...
SLOW_BELOW = 2.0
#: ... so that the video lasts at least this long [s].
MIN_VIDEO = 3.0
#: Playback speeds offered (fractions of real time), fastest first.
SPEEDS = (1.0, 0.5, 0.25, 0.1, 0.05, 0.025, 0.01, 0.005, 0.0025, 0.001, 0.0005, 0.00025, 0.0001)


def playback_speed(duration: float) -> float:
    """The speed of a run lasting ``duration`` seconds (module docstring): 1 from SLOW_BELOW
    on, else the fastest of SPEEDS that makes the video last MIN_VIDEO seconds."""
    if not duration > 0 or duration >= SLOW_BELOW:
        return 1.0
    return next((speed for speed in SPEEDS if duration / speed >= MIN_VIDEO), SPEEDS[-1])


def speed_text(speed: float) -> str:
    """``"speed x0.25"``: the playback speed as a frame states it."""
    return f"speed x{speed:.3g}"


@dataclass(frozen=True)
class Frame:
    """One frame: ``time`` [s], the (height, width, 3) ``image``, the ``heading`` it carries,
    the force ``arrows`` (start, end; world coordinates, after scaling) of each panel, and the
    ``figure`` it was drawn in (shared between frames: inspect it before the next one)."""

    index: int
    time: float
    image: NDArray[np.uint8]
    heading: str
    arrows: list[list[Arrow]]
    figure: Any


def contact_arrows(drawing: Drawing, trajectory: Trajectory, index: int) -> list[Arrow]:
    """(point, force) of each contact of the step that starts at state ``index`` (``drawing``
    is that state's) with a nonzero force; none for a failed step or past the last step. A
    contact surface's quadrature points (its patch's ``rows``, the last marks) give one arrow:
    their total force at its centre of pressure, ``sum (f_i . n_i) c_i / sum (f_i . n_i)``
    (:mod:`contactopt.systems.hydroelastic.records`)."""
    if drawing.contacts is None or index >= len(trajectory.steps):
        return []
    record = trajectory.steps[index]
    if not record.status.usable:
        return []
    forces = drawing.contacts.forces(record.impulses, trajectory.dt)
    if forces is None:
        return []
    points, frames = drawing.contacts.points, drawing.contacts.frames
    start = points.shape[0] - sum(patch.rows for patch in drawing.patches)
    arrows = list(zip(points[:start], forces[:start], strict=True))
    for patch in drawing.patches:
        rows = slice(start, start + patch.rows)
        start += patch.rows
        normal = np.einsum("ij,ij->i", forces[rows], frames[rows, 0])
        if patch.rows and float(normal.sum()) != 0.0:
            arrows.append((normal @ points[rows] / float(normal.sum()), forces[rows].sum(axis=0)))
    return [(point, force) for point, force in arrows if float(np.linalg.norm(force)) > 0.0]


def arrow_scale(arrows: list[list[list[Arrow]]], diagonal: float) -> tuple[float, float]:
    """(metres per newton, longest arrow) of a video (module docstring)."""
    peaks = [max(float(np.linalg.norm(force)) for _, force in frame) for row in arrows for frame in row if frame]
    if not peaks:
        return 0.0, 0.0
    typical = float(np.median(peaks))
    return (ARROW_FRACTION * diagonal / typical if typical > 0 else 0.0), 2.0 * ARROW_FRACTION * diagonal


def _round_length(length: float) -> float:
    """The 1-2-5 value nearest ``length`` (in log scale)."""
    base = 10.0 ** math.floor(math.log10(length))
    return min((m * base for m in (1.0, 2.0, 5.0, 10.0)), key=lambda value: abs(math.log(value / length)))


def _length_text(metres: float) -> str:
    if metres >= 1.0:
        return f"{metres:g} m"
    return f"{metres * 100:g} cm" if metres >= 0.01 else f"{metres * 1000:g} mm"


def arrow_legend(scale: float, diagonal: float) -> tuple[float, str]:
    """(length [m], text) of the reference arrow: a round length near 10 % of the view's
    diagonal and the force it stands for, ``"arrow 5 cm = 12.3 N"``; (0, "") without arrows."""
    if not (scale > 0 and diagonal > 0):
        return 0.0, ""
    length = _round_length(0.1 * diagonal)
    return length, f"arrow {_length_text(length)} = {length / scale:.3g} N"


def clip(vector: FloatArray, longest: float) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    return vector * (longest / norm) if norm > longest else vector


def decimals(times: FloatArray) -> int:
    """Decimals of the frame times that tell consecutive frames apart (2 to 6)."""
    gaps = np.diff(times)
    gaps = gaps[gaps > 0]
    return 2 if not gaps.size else int(min(6, max(2, math.ceil(-math.log10(float(gaps.min())) + 1e-9))))


def reference_arrow(ax: Any, kind: str, bounds: FloatArray, length: float, text: str) -> list[Any]:
    """Draw the grey reference arrow of ``length`` [m] and its force in the top left corner of
    a matplotlib panel (``kind`` "2d" or "3d"); returns the artists (drawn once per video)."""
    from contactopt.analysis.render_mpl import paint_reference_arrow

    if length <= 0 or kind not in ("2d", "3d"):
        return []
    low, high = bounds
    if kind == "2d":
        start = low + np.array([0.06, 0.9]) * (high - low)
    else:  # on the far side of the view box, near its top: in front of nothing
        start = np.array([low[0] + 0.06 * (high[0] - low[0]), high[1], low[2] + 0.92 * (high[2] - low[2])])
    direction = np.zeros_like(start)
    direction[0] = length
    return paint_reference_arrow(ax, start, start + direction, text.split(" = ")[-1])


def paint_frames(frames: Any, progress: bool) -> Iterator[Frame]:
    """Draw each frame of ``frames`` (a :class:`contactopt.analysis.render.VideoFrames`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # no pyplot: a notebook's backend is left alone
    from matplotlib.figure import Figure
    from tqdm import tqdm

    from contactopt.analysis.render_mpl import (
        paint_coordinates,
        paint_drawing,
        paint_image,
        pressure_legend,
        pressure_top,
        setup_axes,
    )

    layout, items, drawings, bounds = frames.layout, frames.items, frames.drawings, frames.bounds
    top = pressure_top([d for row in drawings for d in row]) if drawings is not None else 0.0
    fig = Figure(figsize=(layout.width / frames.dpi, layout.height / frames.dpi), dpi=frames.dpi)
    canvas = FigureCanvasAgg(fig)
    axes = [fig.add_axes(layout.rect(k), projection="3d" if layout.kind == "3d" else None)
            for k in range(len(items))]
    for ax in axes:
        setup_axes(ax, layout.kind, bounds, drawings[0][0].axes if drawings is not None else ())
        if bounds is not None:
            reference_arrow(ax, layout.kind, bounds, frames.legend_length, frames.legend)
    shown: list[list[Any]] = [[] for _ in axes]  # the artists of the previous frame, per panel
    places = decimals(frames.times)
    bar = tqdm(total=len(frames.times), desc="render", unit="frame", disable=not progress, leave=False)
    try:
        for f, now in enumerate(frames.times):
            drawn: list[list[Arrow]] = []
            for k, (item, ax) in enumerate(zip(items, axes, strict=True)):
                traj, index = item.trajectory, int(frames.samples[k][f])
                for artist in shown[k]:
                    artist.remove()
                before = set(ax.get_children())
                pairs: list[Arrow] = []
                if drawings is None:
                    paint_coordinates(ax, traj.t, traj.q, list(traj.info.get("q_names") or []), float(now))
                else:
                    pairs = [(p, p + clip(frames.scale * F, frames.longest)) for p, F in frames.arrows[k][f]]
                    if frames.painter is not None:
                        paint_image(ax, frames.painter.render(traj.q[index], pairs, 0.008 * frames.diagonal))
                    else:
                        paint_drawing(ax, drawings[k][f], bounds, pairs, pressure_scale=top)
                drawn.append(pairs)
                shown[k] = [artist for artist in ax.get_children() if artist not in before]
                if layout.titled:
                    stopped = " (stopped)" if not traj.completed and now > traj.t[-1] + 1e-12 else ""
                    ax.set_title(f"{item.title}{stopped}", fontsize="small", pad=3)
            heading = "   ".join(part for part in (f"t = {now:.{places}f} s", speed_text(frames.speed),
                                                   frames.legend, pressure_legend(top), frames.heading) if part)
            fig.suptitle(heading, fontsize=8, x=4.0 / layout.width, y=1.0 - 5.0 / layout.height, ha="left",
                         va="top")
            canvas.draw()
            yield Frame(f, float(now), np.asarray(canvas.buffer_rgba())[..., :3].copy(), heading, drawn, fig)
            bar.update()
    finally:
        bar.close()
