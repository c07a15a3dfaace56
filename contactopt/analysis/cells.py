"""The cell files of a resumable comparison, and the index that vouches for them.

``compare(..., out=OUT)`` stores every finished cell as ``OUT/cells/ID.json`` (its row) and
``OUT/cells/ID.parquet`` (its per-step trace), and records the SHA-256 of both in
``OUT/cells-index.json``. A re-run loads a cell only when its files are exactly the ones
recorded: a deleted trace, an edited row, a half-written file or an index that cannot be read
all make the cell run again, with one :class:`~contactopt.core.errors.StoredCellWarning` line
naming the file, so that the tables of a resumed sweep always hold every cell, computed.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from contactopt.core.errors import OutputError, StoredCellWarning
from contactopt.core.outputs import atomic_path, output_errors, write_bytes

if TYPE_CHECKING:
    from contactopt.analysis.cell import Cell

__all__ = ["INDEX_NAME", "CellStore"]

INDEX_NAME = "cells-index.json"
INDEX_FORMAT = "contactopt-compare-cells"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a sibling and rename it over ``path``: a reader (or a run killed
    mid-write) sees the old file or the new one, never half of one."""
    write_bytes(path, data, "cell file")


class CellStore:
    """The ``cells/`` folder of one comparison and its index (module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.cells = folder / "cells"
        self.index_path = folder / INDEX_NAME
        with output_errors(self.cells, "cell folder"):
            self.cells.mkdir(parents=True, exist_ok=True)
        self.index, self.index_trusted = self._read_index()

    def _read_index(self) -> tuple[dict[str, dict[str, str]], bool]:
        """The recorded hashes; an unreadable index is said once and trusts no cell."""
        if not self.index_path.exists():
            return {}, True
        try:
            data = json.loads(self.index_path.read_text())
            if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT or not isinstance(
                    data.get("cells"), dict):
                raise ValueError("not a contactopt cell index")
            cells = {str(k): dict(v) for k, v in data["cells"].items() if isinstance(v, dict)}
        except Exception as exc:  # truncated, edited, not JSON: recompute rather than trust
            warnings.warn(f"compare: cannot read the cell index {self.index_path} ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''}); every stored cell is recomputed",
                          StoredCellWarning, stacklevel=3)
            return {}, False
        return cells, True

    def _write_index(self) -> None:
        payload = json.dumps({"format": INDEX_FORMAT, "version": 1, "cells": self.index}, indent=1, sort_keys=True)
        with output_errors(self.index_path, "cell index"):
            _write_atomically(self.index_path, payload.encode())

    def store(self, ident: str, row: Mapping[str, Any], trace: pd.DataFrame) -> None:
        """Write the cell's files, then record their hashes in the index. A cell that cannot be
        written is said in one warning and not recorded (a re-run computes it again); the
        sweep goes on and its tables still hold the cell, so nothing computed is lost."""
        try:
            self._store(ident, row, trace)
        except OutputError as exc:
            self.index.pop(ident, None)
            warnings.warn(f"compare: cannot store the cell {ident}: {exc}; it stays in this run's tables and is "
                          "recomputed by the next one", StoredCellWarning, stacklevel=3)

    def _store(self, ident: str, row: Mapping[str, Any], trace: pd.DataFrame) -> None:
        row_path, trace_path = self.cells / f"{ident}.json", self.cells / f"{ident}.parquet"
        with output_errors(row_path, "cell file"):
            _write_atomically(row_path, json.dumps(row, default=_json_default).encode())
            files = {row_path.name: _digest(row_path)}
            if len(trace):
                with atomic_path(trace_path, "cell file") as partial:
                    trace.to_parquet(partial)
                files[trace_path.name] = _digest(trace_path)
            elif trace_path.exists():
                trace_path.unlink()
        self.index[ident] = files
        self._write_index()

    def load(self, ident: str, cell: Cell) -> tuple[dict[str, Any], pd.DataFrame] | None:
        """The stored cell, or None (run it): never stored, or its files are not the recorded
        ones (missing, altered, unreadable), which one warning naming the file says."""
        row_path = self.cells / f"{ident}.json"
        recorded = self.index.get(ident)
        if recorded is None:
            if row_path.exists() and self.index_trusted:
                self._recompute(row_path, f"not recorded in {self.index_path.name}")
            return None
        for name, digest in recorded.items():
            path = self.cells / name
            if not path.exists():
                self._recompute(path, "the file is missing")
                return None
            try:
                found = _digest(path)
            except OSError as exc:  # a folder in its place, no permission
                self._recompute(path, f"cannot read it: {exc.strerror or exc}")
                return None
            if found != digest:
                self._recompute(path, f"its content differs from the hash recorded in {self.index_path.name}")
                return None
        if row_path.name not in recorded:
            self._recompute(row_path, f"not recorded in {self.index_path.name}")
            return None
        try:
            row = json.loads(row_path.read_text())
            trace_path = self.cells / f"{ident}.parquet"
            trace = pd.read_parquet(trace_path) if trace_path.name in recorded else pd.DataFrame()
            expected = {"formulation": cell.formulation, "solver": cell.solver, "dt": cell.dt}
            if not isinstance(row, dict) or row.get("status") not in ("completed", "stopped") or any(
                    row.get(key) != value for key, value in expected.items()):
                raise ValueError(f"not the row of {cell.formulation} x {cell.solver}, dt={cell.dt:g}")
        except Exception as exc:  # whatever is wrong with the file, recompute the cell
            self._recompute(row_path, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            return None
        row["cell"] = ident
        return row, trace

    def _recompute(self, path: Path, reason: str) -> None:
        self.index.pop(path.stem, None)
        warnings.warn(f"compare: ignoring the stored cell {path.name} ({reason}); recomputing it",
                      StoredCellWarning, stacklevel=4)
