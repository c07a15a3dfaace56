"""The getting-started notebook (docs/getting_started.ipynb, issue 27) runs in a Jupyter kernel,
says nothing on its own (no solver messages, warnings or errors), and shows its scene,
trajectory, program and solution as tables and its figure inline, without
``%matplotlib inline``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_getting_started_notebook_runs_and_shows_tables_and_an_inline_figure() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(ROOT / "docs" / "getting_started.ipynb", as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")  # stored clean
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "docs")}}).execute()
    outputs = {cell.source.splitlines()[-1]: cell.outputs for cell in notebook.cells if cell.cell_type == "code"}
    chatter = [o for cell in outputs.values() for o in cell if o.output_type in ("stream", "error")]
    assert not chatter, chatter  # no solver messages, no warnings, no errors

    def data(last_line: str) -> Mapping[str, Any]:
        (result,) = [o for o in outputs[last_line] if o.output_type == "execute_result"]
        return result["data"]

    assert data("scene")["text/plain"].startswith("Scene('box_slide', rigid3d nq=7 nv=6")
    for last_line in ("scene", "traj", "prog", "sol"):
        assert data(last_line)["text/html"].startswith("<table>"), last_line
    assert re.match(r"Trajectory\(box_slide, lcp / lemke, dt = 0.001, 300 steps", data("traj")["text/plain"])
    assert "image/png" in data("co.plot(traj)   # a matplotlib Figure: positions, velocities, normal impulses")
    table = data('table[["formulation", "solver", "status", "stop_distance", "stop_distance_ref", '
                 '"stop_distance_err"]]')["text/plain"]
    assert "lcp" in table and "anitescu" in table and "completed" in table
    assert data("sol")["text/plain"].startswith("Solution(optimal, clarabel")
