"""The one table printer: ``contactopt run``/``compare``/``bench``, the experiments and the
Markdown reports all lay out their tables with :func:`format_table` (via ``tabulate``).

Text tables fit the terminal: :func:`terminal_width` is ``COLUMNS`` when set, else the width
of the terminal ``stdout`` is, else :data:`DEFAULT_WIDTH` (100); never below
:data:`MIN_WIDTH`. A table wider than that is printed as successive panels of columns, each
repeating the first ``index`` columns (the row labels), so no column is lost and every line
fits; a cell too long even for a panel of its own is cut with ``…`` (the saved files keep it
whole)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TextIO

import numpy as np

__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "format_table", "terminal_width"]

#: Entries of an array cell shown before "..." (the full arrays are in the saved files).
ARRAY_ENTRIES = 4
#: Width of a text table when stdout is not a terminal and ``COLUMNS`` is not set.
DEFAULT_WIDTH = 100
#: The narrowest table laid out, whatever the terminal says (narrower is not readable).
MIN_WIDTH = 60
#: Spaces between two columns of tabulate's "simple" format.
GAP = 2


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns available to a text table: ``COLUMNS`` if set to a number, else the width of
    the terminal ``stream`` (default ``sys.stdout``) is attached to, else :data:`DEFAULT_WIDTH`;
    at least :data:`MIN_WIDTH`."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit():
        return max(MIN_WIDTH, int(columns))
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):  # a captured or closed stream: no terminal
        pass
    return DEFAULT_WIDTH


def _cell(value: Any, digits: int, markdown: bool) -> Any:
    if isinstance(value, np.ndarray):
        shown = ", ".join(f"{x:.{digits}g}" for x in value.reshape(-1)[:ARRAY_ENTRIES])
        return f"[{shown}{', ...' if value.size > ARRAY_ENTRIES else ''}]"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) and markdown:
        return value.replace("|", "\\|").replace("\n", " ")
    return value


def format_table(rows: Sequence[Mapping[str, Any]] | Any, columns: Sequence[str] | None = None, *,
                 markdown: bool = False, digits: int = 4, width: int | None = None, index: int = 1) -> str:
    """``rows`` (mappings, or a pandas DataFrame) as an aligned text table, or a GitHub
    Markdown table with ``markdown=True``; ``columns`` picks and orders the columns (default:
    the first row's keys). Floats get ``digits`` significant digits; arrays show their first
    entries. No rows give an empty string.

    A text table is laid out within ``width`` columns (default :func:`terminal_width`; 0: no
    limit) as panels that each repeat the first ``index`` columns (module docstring). A
    header may hold a newline (a two-line header)."""
    from tabulate import tabulate

    records = rows.to_dict("records") if hasattr(rows, "to_dict") else list(rows)
    if not records:
        return ""
    keys = list(columns) if columns is not None else list(records[0])
    body = [[_cell(record.get(key), digits, markdown) for key in keys] for record in records]
    if markdown:
        return str(tabulate(body, headers=keys, tablefmt="github", floatfmt=f".{digits}g", missingval=""))
    limit = terminal_width() if width is None else int(width)

    def render(picked: Sequence[int]) -> str:
        return str(tabulate([[row[i] for i in picked] for row in body], headers=[keys[i] for i in picked],
                            tablefmt="simple", floatfmt=f".{digits}g", missingval=""))

    with _unpadded_headers():
        whole = render(range(len(keys)))
        if limit <= 0 or _widest(whole) <= limit:
            return whole
        return "\n\n".join(render(panel) for panel in _panels(render, keys, body, limit, min(index, len(keys) - 1)))


@contextlib.contextmanager
def _unpadded_headers() -> Iterator[None]:
    """tabulate widens every header by ``MIN_PADDING`` (2) spaces, which the "simple" format
    does not need (columns are already 2 apart): 2 of 100 columns lost per column. Set to 0
    for the call, then restored (it is a module global other tabulate users read)."""
    import tabulate

    saved = tabulate.MIN_PADDING
    tabulate.MIN_PADDING = 0
    try:
        yield
    finally:
        tabulate.MIN_PADDING = saved


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _panels(render: Any, keys: list[str], body: list[list[Any]], limit: int, index: int) -> list[list[int]]:
    """Column groups, each the ``index`` label columns plus as many others as fit ``limit``;
    string cells that cannot fit even alone are cut (in ``body``, in place)."""
    labels = list(range(max(0, index)))
    width = {i: _widest(render([i])) for i in range(len(keys))}
    label_width = sum(width[i] + GAP for i in labels)
    room = limit - label_width
    if room < MIN_WIDTH // 3:  # labels take most of the line: cut them too, keep a third for values
        labels_room = max(8, (limit - MIN_WIDTH // 3) // max(1, len(labels)) - GAP)
        for i in labels:
            _cut_column(body, i, labels_room)
            width[i] = _widest(render([i]))
        label_width = sum(width[i] + GAP for i in labels)
        room = limit - label_width
    for i in range(len(keys)):
        if i not in labels and width[i] > room:
            _cut_column(body, i, room)
            width[i] = _widest(render([i]))
    panels: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in range(len(keys)):
        if i in labels:
            continue
        if current and used + width[i] > room:
            panels.append(labels + current)
            current, used = [], 0
        current.append(i)
        used += width[i] + GAP
    if current or not panels:
        panels.append(labels + current)
    return panels


def _cut_column(body: list[list[Any]], column: int, room: int) -> None:
    """Cut the string cells of ``column`` longer than ``room`` characters, ending them with ``…``."""
    for row in body:
        value = row[column]
        if isinstance(value, str) and any(len(line) > room for line in value.splitlines()):
            row[column] = "\n".join(line if len(line) <= room else line[: max(1, room - 1)] + "…"
                                    for line in value.splitlines())
