"""How scenes, programs and solutions show themselves: a short one-line ``repr`` (a terminal, a
log) and an HTML table for Jupyter (``_repr_html_``), with the numbers a person looks at first.

The classes call these functions from their ``__repr__`` / ``_repr_html_``; this module imports
only numpy and the standard library, so that every layer may use it. A small program (up to
:data:`MATRIX_ENTRIES` entries per matrix) shows its matrices too.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["MATRIX_ENTRIES", "cone_summary", "html_table", "lcp_html", "lcp_text", "program_html",
           "program_text", "scene_html", "scene_text", "solution_html", "solution_text"]

#: A matrix with at most this many entries is shown in full in a program's HTML table.
MATRIX_ENTRIES = 400
#: Metadata keys shown first (what a formulation records about the step).
_METADATA_FIRST = ("formulation", "form", "dt", "t")


def html_table(caption: str, rows: Mapping[str, Any], extra: str = "") -> str:
    """A two-column table ``key | value`` (values escaped, except ``extra``: HTML appended)."""
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(key))}</th>"
                   f"<td style='text-align:left'>{html.escape(str(value))}</td></tr>" for key, value in rows.items())
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>{extra}"


def _matrix_html(name: str, matrix: np.ndarray) -> str:
    """A dense matrix or vector as an HTML table of numbers (4 significant digits)."""
    dense = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    if dense.shape[0] == 1 and np.asarray(matrix).ndim == 1:
        dense = dense.T  # a vector reads as a column
    rows = "".join("<tr>" + "".join(f"<td style='text-align:right'>{value:.4g}</td>" for value in row) + "</tr>"
                   for row in dense)
    return (f"<details><summary>{html.escape(name)} {dense.shape[0]}&times;{dense.shape[1]}</summary>"
            f"<table>{rows}</table></details>")


def cone_summary(cones: Sequence[Any]) -> str:
    """``zero(6), soc(3) x 4``: consecutive equal cones counted, not listed; cones without rows
    (a formulation's empty block) left out."""
    parts: list[str] = []
    previous: tuple[str, int] | None = None
    count = 0
    for cone in [*(c for c in cones if c.dim), None]:
        key = None if cone is None else (cone.kind, cone.dim)
        if key == previous:
            count += 1
            continue
        if previous is not None:
            parts.append(f"{previous[0]}({previous[1]})" + (f" x {count}" if count > 1 else ""))
        previous, count = key, 1
    return ", ".join(parts) or "none"


def _blocks(blocks: Iterable[Any]) -> str:
    return ", ".join(f"{b.name}[{b.start}:{b.stop}]" + (f" ({b.size // b.per} x {b.per})" if b.per > 1 else "")
                     for b in blocks) or "unnamed"


def _metadata(metadata: Mapping[str, Any], limit: int = 6) -> str:
    keys = [k for k in _METADATA_FIRST if k in metadata] + [k for k in metadata if k not in _METADATA_FIRST]
    shown = [f"{k}={metadata[k]:g}" if isinstance(metadata[k], float) else f"{k}={metadata[k]}"
             for k in keys[:limit] if isinstance(metadata[k], str | int | float | bool)]
    return ", ".join(shown)


# --- programs ---------------------------------------------------------------------------------

def program_text(program: Any) -> str:
    """``ConicProgram(QP: n=6, m=8, cones nonneg(8), nnz P=6 A=14; formulation=gauss, ...)``."""
    about = _metadata(program.metadata, limit=3)
    return (f"ConicProgram({program.kind.upper()}: n={program.n}, m={program.m}, cones {cone_summary(program.cones)}, "
            f"nnz P={program.P.nnz} A={program.A.nnz}" + (f"; {about}" if about else "") + ")")


def program_html(program: Any) -> str:
    """The form, sizes, cones, named blocks and metadata; the matrices when small."""
    rows = {"form": "minimize 1/2 x'Px + c'x  subject to  A x + s = b,  s in K",
            "kind": program.kind.upper(), "variables n": program.n, "rows m": program.m,
            "cones K": cone_summary(program.cones), "nonzeros": f"P: {program.P.nnz}, A: {program.A.nnz}",
            "variable blocks": _blocks(program.variables), "row blocks": _blocks(program.constraints),
            "metadata": _metadata(program.metadata, limit=12)}
    extra = ""
    if max(program.n * program.n, program.m * program.n) <= MATRIX_ENTRIES:
        extra = "".join(_matrix_html(name, value) for name, value in (
            ("P", program.P.toarray()), ("c", program.c), ("A", program.A.toarray()), ("b", program.b)))
    return html_table("ConicProgram", rows, extra)


def lcp_text(lcp: Any) -> str:
    """``LCP(n=4, M symmetric; formulation=lcp)``."""
    about = _metadata(lcp.metadata, limit=3)
    symmetric = "symmetric" if lcp.is_symmetric() else "nonsymmetric"
    return f"LCP(n={lcp.n}, M {symmetric}" + (f"; {about}" if about else "") + ")"


def lcp_html(lcp: Any) -> str:
    rows = {"form": "find z >= 0 with w = M z + q >= 0 and z'w = 0", "n": lcp.n,
            "M": "symmetric" if lcp.is_symmetric() else "nonsymmetric",
            "variable blocks": _blocks(lcp.variables), "metadata": _metadata(lcp.metadata, limit=12)}
    extra = ("".join(_matrix_html(name, value) for name, value in (("M", lcp.M), ("q", lcp.q)))
             if lcp.n * lcp.n <= MATRIX_ENTRIES else "")
    return html_table("LCP", rows, extra)


# --- solutions --------------------------------------------------------------------------------

def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def solution_text(solution: Any) -> str:
    """``Solution(optimal, clarabel, 9 iterations, solve 0.2 ms, worst residual 1e-12, n=6)``."""
    claimed = f" (claimed {solution.claimed})" if solution.claimed is not None else ""
    via = f" via {solution.conversion}" if solution.conversion else ""
    return (f"Solution({solution.status}{claimed}, {solution.solver}{via}, {solution.iterations} iterations, "
            f"solve {_time(solution.solve_time)}, worst residual {solution.residuals.worst:.3g}, "
            f"n={solution.x.shape[0]})")


def solution_html(solution: Any) -> str:
    r = solution.residuals
    rows = {"status": str(solution.status) + (f" (claimed {solution.claimed})" if solution.claimed else ""),
            "solver": solution.solver, "conversion": solution.conversion or "none",
            "iterations": solution.iterations,
            "setup / solve time": f"{_time(solution.setup_time)} / {_time(solution.solve_time)}",
            "residuals (contactopt's)": f"primal {r.primal:.3g}, dual {r.dual:.3g}, gap {r.gap:.3g}, "
                                        f"complementarity {r.complementarity:.3g}, relative {r.relative:.3g}",
            "refined": solution.refined, "message": solution.message or ""}
    extra = ("".join(_matrix_html(name, value) for name, value in (("x", solution.x), ("y", solution.y),
                                                                   ("s", solution.s)) if value.size)
             if solution.x.shape[0] + solution.y.shape[0] <= MATRIX_ENTRIES else "")
    return html_table("Solution", rows, extra)


# --- scenes -----------------------------------------------------------------------------------

def scene_text(scene: Any) -> str:
    """``Scene('box_slide', rigid3d nq=7 nv=6, dt=0.001 s, duration=1 s, anitescu / clarabel)``."""
    observables = f", {len(scene.observables)} observables" if scene.observables else ""
    return (f"Scene({scene.name!r}, {scene.system.type_name} nq={scene.system.nq} nv={scene.system.nv}, "
            f"dt={scene.dt:g} s, duration={scene.duration:g} s, {scene.formulation} / {scene.solver}{observables})")


def scene_html(scene: Any) -> str:
    system = scene.system
    rows = {"name": scene.name, "description": scene.description, "file": scene.source or "",
            "system": system.describe(), "coordinates q": ", ".join(system.q_names),
            "velocities v": ", ".join(system.v_names),
            "dt / duration": f"{scene.dt:g} s / {scene.duration:g} s ({round(scene.duration / scene.dt)} steps)",
            "formulation / solver": f"{scene.formulation} / {scene.solver}",
            "options": ", ".join(f"{k}={v}" for k, v in scene.options.items()) or "none",
            "control": scene.control.describe() if scene.control is not None else "none",
            "observables": ", ".join(f"{o.name} ({o.kind})" for o in scene.observables) or "none"}
    return html_table("Scene", rows)
