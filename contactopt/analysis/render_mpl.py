"""Drawing :mod:`contactopt.systems.drawing` shapes into matplotlib axes (Agg, no display
and no OpenGL), one frame at a time.

2-D drawings go on equal-aspect axes in the system's vertical plane; 3-D drawings on
``mplot3d`` axes seen from ``-y`` (azimuth -90 deg, elevation 20 deg, the view MuJoCo's camera
takes in :mod:`.render_gl`), with boxes, balls and tubes as shaded polygon meshes. Contact
forces are red arrows from the contact point along the force on the body; their length is
``scale * |F|`` with one scale per video. A drawing's contact patches (hydroelastic contact
surfaces) are drawn over the bodies, each polygon coloured by its pressure (:mod:`.render_frames`).
Systems without a drawing are shown as their coordinates against time with a cursor at the
frame's time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.drawing import Ball, Box, Disk, Dot, Drawing, Line, Plane, Polygon, Segment, Tube

FloatArray = NDArray[np.float64]

__all__ = ["paint_coordinates", "paint_drawing", "paint_image", "paint_reference_arrow", "pressure_colours",
           "pressure_legend", "pressure_top", "setup_axes"]

BODY = "#4C72B0"
LINK = "#2F3E56"
JOINT = "#DD8452"
GROUND = "#B8B8B8"
ARROW = "#D62728"
REFERENCE = "#555555"
#: Faces of a box as corner indices (corners in ``itertools.product((-1, 1), repeat=3)`` order).
BOX_FACES = ((0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5))
ELEVATION, AZIMUTH = 20.0, -90.0


def _sphere_quads(centre: FloatArray, radius: float, rotation: FloatArray, scale: FloatArray,
                  n_lon: int = 12, n_lat: int = 8) -> tuple[list[FloatArray], list[str]]:
    """Quads of a (scaled) sphere in body axes, two colours by meridian sector so that a
    rotation shows."""
    lon = np.linspace(0.0, 2.0 * np.pi, n_lon + 1)
    lat = np.linspace(-0.5 * np.pi, 0.5 * np.pi, n_lat + 1)
    grid = np.stack([np.cos(lat)[None, :] * np.cos(lon)[:, None], np.cos(lat)[None, :] * np.sin(lon)[:, None],
                     np.broadcast_to(np.sin(lat)[None, :], (n_lon + 1, n_lat + 1))], axis=-1)
    world = centre + (radius * grid * scale) @ rotation.T
    quads, colours = [], []
    for i in range(n_lon):
        for j in range(n_lat):
            quads.append(np.array([world[i, j], world[i + 1, j], world[i + 1, j + 1], world[i, j + 1]]))
            colours.append(BODY if (i // 3) % 2 == 0 else "#A9BEDD")
    return quads, colours


def _tube_quads(start: FloatArray, end: FloatArray, radius: float, sides: int = 10) -> list[FloatArray]:
    axis = end - start
    length = float(np.linalg.norm(axis))
    direction = axis / length if length > 0 else np.array([0.0, 0.0, 1.0])
    helper = np.eye(3)[int(np.argmin(np.abs(direction)))]
    u = np.cross(direction, helper)
    u /= np.linalg.norm(u)
    w = np.cross(direction, u)
    angles = np.linspace(0.0, 2.0 * np.pi, sides + 1)
    ring = radius * (np.cos(angles)[:, None] * u + np.sin(angles)[:, None] * w)
    return [np.array([start + ring[i], start + ring[i + 1], end + ring[i + 1], end + ring[i]]) for i in range(sides)]


def pressure_top(drawings: list[Drawing]) -> float:
    """The largest patch pressure [Pa] over ``drawings`` (0 without patches): the top of the
    colour scale."""
    values = [float(np.max(patch.pressures)) for d in drawings for patch in d.patches if patch.pressures.size]
    finite = [v for v in values if math.isfinite(v)]
    return max(finite, default=0.0)


def pressure_colours(pressures: FloatArray, top: float) -> FloatArray:
    """(n, 4) RGBA of ``pressures`` on ``viridis`` from 0 to ``top`` (clipped; all at the map's
    low end when ``top <= 0``)."""
    from matplotlib import colormaps

    values = np.asarray(pressures, dtype=np.float64)
    fraction = np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)
    return np.asarray(colormaps["viridis"](np.nan_to_num(fraction)), dtype=np.float64)


def pressure_legend(top: float) -> str:
    """``"pressure 0-9.8 kPa"``: the colour scale of the patches ("" without any)."""
    if not top > 0:
        return ""
    for factor, unit in ((1e9, "GPa"), (1e6, "MPa"), (1e3, "kPa")):
        if top >= factor:
            return f"pressure 0-{top / factor:.3g} {unit}"
    return f"pressure 0-{top:.3g} Pa"


def _grid_step(span: float) -> float:
    """A 1-2-5 step giving 4 to 10 ground grid lines over ``span`` (so sliding shows)."""
    raw = span / 6.0 if span > 0 else 0.1
    base = 10.0 ** np.floor(np.log10(raw))
    return float(min((m * base for m in (1.0, 2.0, 5.0, 10.0)), key=lambda step: abs(step - raw)))


def setup_axes(ax: Any, kind: str, bounds: FloatArray | None, names: tuple[str, ...] = ()) -> None:
    """Fix the view of ``ax`` once per video (limits, aspect, labels; autoscaling off), so that
    each frame only adds and removes its own artists: ``kind`` "2d", "3d", "image" or "plot"."""
    if kind == "image":
        ax.set_axis_off()
        return
    ax.tick_params(labelsize="xx-small")
    if kind == "plot" or bounds is None:
        ax.set_xlabel("t [s]", fontsize="x-small")
        ax.set_ylabel("q", fontsize="x-small")
        return
    low, high = bounds
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    if kind == "3d":
        ax.set_zlim(low[2], high[2])
        ax.set_box_aspect(tuple(np.maximum(high - low, 1e-9)))
        ax.view_init(elev=ELEVATION, azim=AZIMUTH)
        ax.set_axis_off()
        ax.computed_zorder = False  # drawn in order: ground, bodies (each sorted by depth), then arrows on top
    else:
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(f"{names[0]} [m]", fontsize="x-small")
        ax.set_ylabel(f"{names[1]} [m]", fontsize="x-small")
    ax.set_autoscale_on(False)


def paint_drawing(ax: Any, drawing: Drawing, bounds: FloatArray,
                  arrows: list[tuple[FloatArray, FloatArray]], pressure_scale: float | None = None) -> None:
    """Add ``drawing`` and the force ``arrows`` (start, end) to ``ax`` (set up by
    :func:`setup_axes` with the view ``bounds`` (2, dim)); its contact patches are coloured by
    pressure from 0 to ``pressure_scale`` [Pa] (None: the drawing's own largest pressure)."""
    if drawing.dim == 2:
        _paint_2d(ax, drawing, bounds, arrows)
    else:
        top = pressure_top([drawing]) if pressure_scale is None else float(pressure_scale)
        _paint_3d(ax, drawing, bounds, arrows, top)


def _paint_2d(ax: Any, drawing: Drawing, bounds: FloatArray, arrows: list[tuple[FloatArray, FloatArray]]) -> None:
    from matplotlib import patches

    low, high = bounds
    span = 10.0 * float(np.max(high - low))
    for shape in drawing.shapes:
        if isinstance(shape, Line):
            normal = np.asarray(shape.normal, dtype=np.float64)
            direction = np.array([-normal[1], normal[0]])
            p = np.asarray(shape.point, dtype=np.float64)
            a, b = p - span * direction, p + span * direction
            ax.fill(*np.array([a, b, b - span * normal, a - span * normal]).T, color=GROUND, alpha=0.35, lw=0)
            ax.plot(*np.array([a, b]).T, color="#555555", lw=1.2)
        elif isinstance(shape, Segment):
            ax.plot(*np.array([shape.start, shape.end]).T, color=LINK, lw=shape.width, solid_capstyle="round")
        elif isinstance(shape, Polygon):
            ax.add_patch(patches.Polygon(np.asarray(shape.points), closed=True, fc=BODY, ec=LINK, lw=1.0))
        elif isinstance(shape, Disk):
            centre = np.asarray(shape.centre, dtype=np.float64)
            ax.add_patch(patches.Circle(tuple(centre), shape.radius, fc=BODY, ec=LINK, lw=1.0))
            if shape.angle is not None:
                tip = centre + shape.radius * np.array([np.cos(shape.angle), np.sin(shape.angle)])
                ax.plot(*np.array([centre, tip]).T, color="white", lw=1.5)
        elif isinstance(shape, Dot):
            ax.plot(*np.asarray(shape.point), "o", ms=shape.size, color=JOINT, mec=LINK)
    for start, end in arrows:
        ax.annotate("", xy=tuple(end), xytext=tuple(start),
                    arrowprops={"arrowstyle": "-|>", "color": ARROW, "lw": 1.8, "shrinkA": 0, "shrinkB": 0})


def _paint_3d(ax: Any, drawing: Drawing, bounds: FloatArray, arrows: list[tuple[FloatArray, FloatArray]],
              top: float) -> None:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    low, high = bounds
    for shape in drawing.shapes:
        if isinstance(shape, Plane):
            z = shape.height
            square = np.array([[low[0], low[1], z], [high[0], low[1], z], [high[0], high[1], z],
                               [low[0], high[1], z]])
            ax.add_collection3d(Poly3DCollection([square], facecolor=GROUND, alpha=0.5, edgecolor="none", zorder=0))
            step = _grid_step(float(np.max(high[:2] - low[:2])))
            for axis in (0, 1):
                for value in np.arange(np.ceil(low[axis] / step) * step, high[axis], step):
                    ends = np.array([[low[0], low[1], z], [high[0], high[1], z]])
                    ends[:, axis] = value
                    ax.plot(*ends.T, color="#8C8C8C", lw=0.5, zorder=0.5)
        elif isinstance(shape, Box):
            corners = shape.corners()
            faces = [corners[list(face)] for face in BOX_FACES]
            ax.add_collection3d(Poly3DCollection(faces, facecolor=BODY, edgecolor=LINK, linewidths=0.6,
                                                 alpha=0.9))
        elif isinstance(shape, Ball):
            quads, colours = _sphere_quads(np.asarray(shape.centre, dtype=np.float64), shape.radius,
                                           np.asarray(shape.rotation, dtype=np.float64),
                                           np.asarray(shape.scale, dtype=np.float64))
            ax.add_collection3d(Poly3DCollection(quads, facecolors=colours, edgecolor="none", alpha=0.95))
        elif isinstance(shape, Tube):
            quads = _tube_quads(np.asarray(shape.start, dtype=np.float64), np.asarray(shape.end, dtype=np.float64),
                                shape.radius)
            ax.add_collection3d(Poly3DCollection(quads, facecolor=BODY, edgecolor="none", alpha=0.95))
        elif isinstance(shape, Segment):
            ax.plot(*np.array([shape.start, shape.end]).T, color=LINK, lw=shape.width)
        elif isinstance(shape, Dot):
            ax.plot(*np.asarray(shape.point).reshape(3, 1), "o", ms=shape.size, color=JOINT)
    for patch in drawing.patches:  # over the bodies (drawn in order), under the arrows
        ax.add_collection3d(Poly3DCollection(patch.polygons(), facecolors=pressure_colours(patch.pressures, top),
                                             edgecolor="none", alpha=1.0))
    for start, end in arrows:
        d = end - start
        ax.quiver(start[0], start[1], start[2], d[0], d[1], d[2], color=ARROW, arrow_length_ratio=0.25, lw=1.5,
                  zorder=5)


def paint_image(ax: Any, image: NDArray[np.uint8]) -> None:
    """Show a picture rendered elsewhere (MuJoCo) in ``ax``."""
    ax.imshow(image, interpolation="nearest")


def paint_coordinates(ax: Any, t: FloatArray, q: FloatArray, names: list[str], now: float) -> None:
    """The generic picture of a system without a drawing: every coordinate against time,
    a cursor at ``now`` and a dot at each coordinate's current value."""
    index = int(np.clip(np.searchsorted(t, now, side="right") - 1, 0, len(t) - 1))
    for i in range(q.shape[1]):
        (line,) = ax.plot(t, q[:, i], lw=1.0, alpha=0.6, label=names[i] if i < len(names) else f"q[{i}]")
        ax.plot(t[index], q[index, i], "o", ms=4, color=line.get_color())
    ax.axvline(now, color="k", lw=0.8)
    if q.shape[1] <= 8:
        ax.legend(fontsize="xx-small", loc="upper right")


def paint_reference_arrow(ax: Any, start: FloatArray, end: FloatArray, label: str) -> list[Any]:
    """The grey arrow of the force scale from ``start`` to ``end`` with ``label`` (its force)
    after it; returns the artists added."""
    before = set(ax.get_children())
    if start.shape[0] == 2:
        ax.annotate("", xy=tuple(end), xytext=tuple(start),
                    arrowprops={"arrowstyle": "-|>", "color": REFERENCE, "lw": 1.5, "shrinkA": 0, "shrinkB": 0})
        ax.text(end[0], end[1], f" {label}", color=REFERENCE, fontsize="xx-small", va="center", ha="left")
    else:
        d = end - start
        ax.quiver(*start, *d, color=REFERENCE, arrow_length_ratio=0.25, lw=1.2, zorder=6)
        ax.text(*end, f" {label}", color=REFERENCE, fontsize="xx-small", zorder=6)
    return [artist for artist in ax.get_children() if artist not in before]
