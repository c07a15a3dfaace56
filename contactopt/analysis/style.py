"""Figure conventions shared by the comparison plots: colour by formulation, line style by
solver, figures built without pyplot (so no backend is ever selected or switched: a notebook
keeps its own, a script writes files through the Agg canvas of :meth:`Figure.savefig`)."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

__all__ = ["LINESTYLES", "InlineFigure", "Styles", "new_figure", "save"]

#: Line styles given to the solvers in order of appearance.
LINESTYLES: list[Any] = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 3))]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


class Styles:
    """A colour per formulation and a line style (and marker) per solver, fixed by the order
    in which they first appear, so every figure of one comparison uses the same ones."""

    def __init__(self, formulations: Iterable[str], solvers: Iterable[str]) -> None:
        from matplotlib import colormaps

        self.formulations = list(dict.fromkeys(str(f) for f in formulations))
        self.solvers = list(dict.fromkeys(str(s) for s in solvers))
        palette = colormaps["tab10" if len(self.formulations) <= 10 else "tab20"]
        self._colours = {f: palette(i % palette.N) for i, f in enumerate(self.formulations)}

    def colour(self, formulation: str) -> Any:
        return self._colours.get(str(formulation), "black")

    def linestyle(self, solver: str) -> Any:
        index = self.solvers.index(str(solver)) if str(solver) in self.solvers else 0
        return LINESTYLES[index % len(LINESTYLES)]

    def marker(self, solver: str) -> str:
        index = self.solvers.index(str(solver)) if str(solver) in self.solvers else 0
        return _MARKERS[index % len(_MARKERS)]

    def line(self, formulation: str, solver: str) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` for a run."""
        return {"color": self.colour(formulation), "linestyle": self.linestyle(solver)}


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
    """Write ``fig`` to ``path`` (parents created) if a path is given."""
    if path is None:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)  # constrained layout already fits legends and titles: no second draw
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
