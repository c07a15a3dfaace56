"""The one table printer: ``contactopt run``/``compare``/``bench``, the experiments and the
Markdown reports all lay out their tables with :func:`format_table` (via ``tabulate``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["format_table"]

#: Entries of an array cell shown before "..." (the full arrays are in the saved files).
ARRAY_ENTRIES = 4


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
                 markdown: bool = False, digits: int = 4) -> str:
    """``rows`` (mappings, or a pandas DataFrame) as an aligned text table, or a GitHub
    Markdown table with ``markdown=True``; ``columns`` picks and orders the columns (default:
    the first row's keys). Floats get ``digits`` significant digits; arrays show their first
    entries. No rows give an empty string."""
    from tabulate import tabulate

    records = rows.to_dict("records") if hasattr(rows, "to_dict") else list(rows)
    if not records:
        return ""
    keys = list(columns) if columns is not None else list(records[0])
    body = [[_cell(record.get(key), digits, markdown) for key in keys] for record in records]
    return str(tabulate(body, headers=keys, tablefmt="github" if markdown else "simple",
                        floatfmt=f".{digits}g", missingval=""))
