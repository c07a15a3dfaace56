"""Figure conventions shared by the plots: a colour-blind-safe palette (Okabe & Ito, "Color
Universal Design", 2008, without its black, which the plots keep for references) combined with
line styles so that every series of a panel has its own (colour, line style) pair; in a
comparison colour by formulation, line style by solver, line width and opacity by time step.
Figures are built without pyplot (so no backend is ever selected or switched: a notebook keeps
its own, a script writes files through the Agg canvas of :meth:`Figure.savefig`)."""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

__all__ = ["LINESTYLES", "PALETTE", "InlineFigure", "Styles", "dt_text", "linestyle", "new_figure", "save",
           "series_style"]

#: Okabe-Ito colours (black left out: references are drawn in black).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442"]
#: The first line styles; further ones are generated dash patterns (:func:`linestyle`).
LINESTYLES: list[Any] = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 3))]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def linestyle(index: int) -> Any:
    """The ``index``-th line style: :data:`LINESTYLES`, then dash patterns ``(k, 2)`` of growing
    dash length ``k``, all different."""
    return LINESTYLES[index] if index < len(LINESTYLES) else (0, (index - len(LINESTYLES) + 2, 2))


def series_style(index: int) -> dict[str, Any]:
    """``Axes.plot`` keywords of the ``index``-th series of a panel: colour ``i mod C`` and line
    style ``i mod 4 + 4 floor(i / C)`` (``C`` colours), so consecutive series differ in both
    (legible in grey print) and no two series share the pair: from (colour, style) one gets
    ``floor(i / C)`` = style // 4 and ``i mod C`` = colour back, hence ``i``."""
    colours = len(PALETTE)
    return {"color": PALETTE[index % colours], "linestyle": linestyle(index % 4 + 4 * (index // colours))}


def dt_text(dt: float) -> str:
    """``"dt = 1e-3 s"``, ``"dt = 2.5e-4 s"``: the step in the compact form of a paper's legend."""
    if not (math.isfinite(dt) and dt > 0):
        return f"dt = {dt:g} s"
    exponent = math.floor(math.log10(dt))
    mantissa = round(dt / 10.0 ** exponent, 3)
    if mantissa >= 10.0:
        mantissa, exponent = mantissa / 10.0, exponent + 1
    return f"dt = {mantissa:g}e{exponent} s" if mantissa != 1.0 else f"dt = 1e{exponent} s"


class Styles:
    """A colour per formulation, a line style (and marker) per solver, and a line width and
    opacity per time step, fixed by the order in which they first appear, so every figure of
    one comparison uses the same ones. Beyond :data:`PALETTE`'s colours a formulation repeats a
    colour with the solvers' line styles shifted by the number of solvers, so two runs never
    share both (the pair gives the formulation's and the solver's index back)."""

    def __init__(self, formulations: Iterable[str], solvers: Iterable[str], dts: Iterable[float] = ()) -> None:
        self.formulations = list(dict.fromkeys(str(f) for f in formulations))
        self.solvers = list(dict.fromkeys(str(s) for s in solvers))
        self.dts = sorted({float(dt) for dt in dts})

    def colour(self, formulation: str) -> Any:
        if str(formulation) not in self.formulations:
            return "black"
        return PALETTE[self.formulations.index(str(formulation)) % len(PALETTE)]

    def _solver_index(self, solver: str) -> int:
        return self.solvers.index(str(solver)) if str(solver) in self.solvers else 0

    def linestyle(self, solver: str, formulation: str | None = None) -> Any:
        shift = 0
        if formulation is not None and str(formulation) in self.formulations:
            shift = len(self.solvers) * (self.formulations.index(str(formulation)) // len(PALETTE))
        return linestyle(self._solver_index(solver) + shift)

    def marker(self, solver: str) -> str:
        return _MARKERS[self._solver_index(solver) % len(_MARKERS)]

    def width(self, dt: float | None) -> tuple[float, float]:
        """(line width, opacity) of a run at ``dt``: the finest step thin and opaque, each
        coarser one wider and fainter (drawn underneath), so that overlaid runs of several
        steps stay apart; one step: (1.3, 1)."""
        if dt is None or len(self.dts) < 2 or float(dt) not in self.dts:
            return 1.3, 1.0
        rank = self.dts.index(float(dt))
        return 1.0 + 1.1 * rank, max(0.35, 1.0 - 0.22 * rank)

    def line(self, formulation: str, solver: str, dt: float | None = None) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` for a run."""
        width, alpha = self.width(dt)
        return {"color": self.colour(formulation), "linestyle": self.linestyle(solver, formulation),
                "linewidth": width, "alpha": alpha, "zorder": 3.0 - 0.1 * width}  # wider lines underneath


class InlineFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that Jupyter shows inline by itself, without
    ``%matplotlib inline``: IPython asks an object for ``_repr_png_`` when no formatter is
    registered for its type (the inline backend registers one for ``Figure`` only once it is
    activated, and then that one is used: the figure is still shown once)."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=INLINE_DPI)
        return buffer.getvalue()


#: Resolution of the inline images (IPython's inline backend uses 100 too).
INLINE_DPI = 100


def new_figure(width: float, height: float) -> Figure:
    """A figure not registered with pyplot (closing it is not needed; a window never opens by
    itself), shown inline when it is a notebook cell's value (:class:`InlineFigure`)."""
    return InlineFigure(figsize=(width, height), layout="constrained")


def save(fig: Figure, path: str | Path | None, dpi: int = 110) -> Path | None:
    """Write ``fig`` to ``path`` (parents created) if a path is given, atomically
    (:func:`~contactopt.core.outputs.atomic_path`: a killed run or a full disk leaves no half image
    under ``path``); the format is ``path``'s suffix (png without one)."""
    if path is None:
        return None
    from contactopt.core.outputs import atomic_path, output_errors

    path = Path(path)
    with output_errors(path, "figure"):
        path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, "figure") as temporary:  # constrained layout already fits legends: no second draw
        fig.savefig(temporary, dpi=dpi, format=path.suffix.lstrip(".").lower() or "png")
    return path


def figure_legend(fig: Figure, axes: Iterable[Any], rows_per_column: int | None = None) -> None:
    """One legend for the whole figure, outside the axes on the right, with each label once
    (the same run drawn in several panels is listed once); a second column beyond
    ``rows_per_column`` labels."""
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        columns = 1 if rows_per_column is None or len(labels) <= rows_per_column else 2
        fig.legend(handles, labels, loc="outside right upper", fontsize="x-small", ncol=columns)
