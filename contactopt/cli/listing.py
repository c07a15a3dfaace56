"""``contactopt list``: bundled problems, formulations, solvers and system types, each entry
wrapped to the terminal's width (:func:`contactopt.core.tables.terminal_width`) under aligned
names, with a line saying what the columns are."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence

from contactopt import solvers, systems
from contactopt.core.errors import ContactoptError
from contactopt.core.tables import terminal_width
from contactopt.scenes.loading import load_scene, problems_dir

__all__ = ["run_list"]

#: Text narrower than this beside the names wraps under them instead (indented 6).
MIN_TEXT_COLUMN = 40


def _entries(rows: Sequence[tuple[str, ...]], width: int) -> str:
    """Rows of (name, [kind, state,] text): the leading columns aligned, the text wrapped."""
    if not rows:
        return ""
    columns = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(columns)]
    indent = 2 + sum(w + 1 for w in widths)
    if width - indent < MIN_TEXT_COLUMN:
        indent = 6
    lines = []
    for row in rows:
        head = "  " + " ".join(f"{row[i]:{widths[i]}s}" for i in range(columns)) + " "
        lines.append(textwrap.fill(row[-1], width=width, initial_indent=head, subsequent_indent=" " * indent,
                                   break_on_hyphens=False, break_long_words=False))
    return "\n".join(lines)


def _columns(text: str, width: int) -> str:
    return textwrap.fill(f"columns: {text}", width=width, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False)


def _problems(width: int) -> str:
    root = problems_dir()
    rows = []
    for path in sorted(root.glob("*.toml")):
        try:
            scene = load_scene(path)
            rows.append((path.stem, scene.system.type_name, scene.description))
        except ContactoptError as exc:
            from contactopt.systems.mjcf.suite import INSTALL_HINT

            if INSTALL_HINT in str(exc):  # a dm-control suite scene without the package
                rows.append((path.stem, "mjcf", f"(needs dm-control: {INSTALL_HINT})"))
            else:
                rows.append((path.stem, "?", f"(invalid: {exc})"))
    return f"problems ({root}):\n{_entries(rows, width)}\n" + _columns(
        "name (contactopt run NAME), system type, description", width)


def _formulations(width: int) -> str:
    from contactopt import integrators

    rows = []
    for name in integrators.names():
        description, defaults = integrators.describe(name)
        options = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "no options"
        rows.append((name, f"{description} [{options}]"))
    return "formulations and methods:\n" + _entries(rows, width) + "\n" + _columns(
        "name (-f NAME), description [options with their defaults; -o KEY=VALUE sets one]", width)


def _solvers(width: int, variants: bool) -> str:
    import importlib

    installed = set(solvers.available())
    rows = []
    for name in solvers.names():
        spec = solvers.spec(name)
        state = "installed" if name in installed else "missing"
        text = spec.description if name in installed else f"{spec.description} ({spec.install_hint})"
        if spec.variants and name in installed and variants:
            found = importlib.import_module(spec.module).installed_variants()
            text += f"; variants: {', '.join(f'{name}:{v}' for v in found)}"
        rows.append((name, ",".join(sorted(spec.kinds)), state, text))
    return "solvers:\n" + _entries(rows, width) + "\n" + _columns(
        "name (-s NAME), programs it takes (qp: quadratic program, socp: second-order cone program, lcp: linear "
        "complementarity problem), installed or missing, description", width)


def _systems(width: int) -> str:
    rows = []
    for name in systems.names():
        cls = systems.get(name)
        params = ", ".join(p.name if p.default is None else f"{p.name}={p.default:g}" for p in cls.parameters)
        rows.append((name, f"{cls.description} [{params}]"))
    return "systems:\n" + _entries(rows, width) + "\n" + _columns(
        "type ([system] type = ...), description [parameters, with their defaults]", width)


def run_list(args: argparse.Namespace) -> int:
    """Handler of ``contactopt list``."""
    width = terminal_width()
    what = args.what
    parts = []
    if what in ("problems", "all"):
        parts.append(_problems(width))
    if what in ("formulations", "all"):
        parts.append(_formulations(width))
    if what in ("solvers", "all"):
        parts.append(_solvers(width, what == "solvers"))
    if what in ("systems", "all"):
        parts.append(_systems(width))
    print("\n".join(parts))
    return 0
