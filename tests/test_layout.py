"""The package's layout: no import cycles between modules, no module over 400 lines (issue 15),
and the one table printer."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from contactopt.core.tables import format_table

PACKAGE = Path(__file__).resolve().parents[1] / "contactopt"


def _module_graph() -> dict[str, set[str]]:
    """Module-level imports between contactopt modules (imports inside functions and
    ``if TYPE_CHECKING`` blocks run later or never, so they cannot form an import cycle)."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # "from pkg import sub" imports the submodule, "from mod import name" the module
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (depth-first search), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_cycle_finder_finds_a_planted_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_and_analysis_never_imports_cli() -> None:
    graph = _module_graph()
    assert len(graph) > 50 and graph["contactopt.cli"]  # the scan saw the package
    assert _cycle(graph) is None
    assert not any(target.startswith("contactopt.cli") for name, targets in graph.items()
                   if name.startswith("contactopt.analysis") for target in targets)


MAX_MODULE_LINES = 400  # issue 15: a module that outgrows this is split by responsibility


def test_no_module_is_over_400_lines() -> None:
    sizes = {str(path.relative_to(PACKAGE.parent)): len(path.read_text().splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50  # the walk found the package
    too_long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not too_long, f"split these modules: {too_long}"


def test_format_table_text_and_markdown() -> None:
    rows = [{"name": "a|b", "x": 1.23456789, "n": 3, "q": np.arange(6.0)},
            {"name": "c", "x": np.float64(2.0), "n": 10, "q": np.zeros(2)}]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["name", "x", "n", "q"] and set(lines[1]) <= {"-", " "}
    assert "1.235" in lines[2] and "[0, 1, 2, 3, ...]" in lines[2] and "[0, 0]" in lines[3]
    markdown = format_table(rows, ["name", "x"], markdown=True, digits=3).splitlines()
    assert markdown[0].replace(" ", "") == "|name|x|" and "a\\|b" in markdown[2] and "1.23" in markdown[2]
    assert format_table([]) == ""
