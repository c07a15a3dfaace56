"""The package's layout: the layers of docs/architecture.md with no import circle, counting every
import (module level, inside functions, under ``TYPE_CHECKING``), few loose modules at the root,
no module over 400 lines (issue 15), and the one table printer."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from contactopt.core.tables import format_table

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "contactopt"


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(node: ast.AST, name: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The contactopt modules one import statement names ("from pkg import sub" the submodule,
    "from mod import name" the module; relative imports resolved)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    else:
        return []
    found = []
    for target in targets:
        while target and target not in modules:  # "import a.b.c" names a.b.c; an attribute import its module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append(target)
    return found


def _module_graph() -> dict[str, set[str]]:
    """Every import between contactopt modules: module level, inside functions and under
    ``if TYPE_CHECKING`` (an import that runs late still ties the two modules together)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            graph[name] |= set(_imported(node, name, is_package, modules))
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


def _packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between the root's packages and modules (``contactopt.solvers`` for every module
    under it); the facade ``contactopt`` itself, above every layer, is left out."""
    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name == "contactopt":
            continue
        out.setdefault(top(name), set()).update(top(t) for t in targets if top(t) not in (top(name), "contactopt"))
    return out


def test_cycle_finder_finds_a_planted_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_scan_sees_imports_inside_functions_and_under_type_checking() -> None:
    graph = _module_graph()
    assert "contactopt.analysis.compare" in graph["contactopt.cli.compare"]  # module level
    # a function-level and a TYPE_CHECKING import somewhere in the package are counted
    inner = [name for name, path in _modules().items()
             if any(isinstance(node, ast.FunctionDef) and any(isinstance(n, ast.ImportFrom) and n.module
                                                              and n.module.startswith("contactopt")
                                                              for n in ast.walk(node))
                    for node in ast.walk(ast.parse(path.read_text())))]
    assert inner, "no function-level import found: the scan would not be tested"


def test_no_import_circle_between_modules_counting_every_import() -> None:
    assert _cycle(_module_graph()) is None


def test_no_import_circle_between_the_root_packages() -> None:
    packages = _packages(_module_graph())
    assert {"contactopt.core", "contactopt.cli", "contactopt.solvers"} <= set(packages)
    assert _cycle(packages) is None


def test_few_loose_modules_at_the_root() -> None:
    loose = sorted(path.name for path in PACKAGE.glob("*.py")
                   if path.name not in ("__init__.py", "__main__.py", "_version.py"))
    assert len(loose) <= 5, loose


def test_the_layers_contract_names_every_root_package() -> None:
    """The import-linter contract (pyproject.toml) covers every package and module of the root, so
    a new one cannot sit outside the layers."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = config["contracts"]
    named = {part.strip() for layer in contract["layers"] for part in layer.split("|")}
    present = {path.stem if path.suffix else path.name for path in PACKAGE.iterdir()
               if (path.suffix == ".py" and path.stem not in ("__init__", "__main__", "_version"))
               or (path.is_dir() and (path / "__init__.py").exists())}
    assert named == present


LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.mark.slow  # .ci/run runs lint-imports itself; the circle tests above check the graph by default
@pytest.mark.skipif(importlib.util.find_spec("importlinter") is None or not LINT_IMPORTS.exists(),
                    reason="import-linter is not installed (pip install -e '.[dev]')")
def test_lint_imports_keeps_the_layers() -> None:
    done = subprocess.run([str(LINT_IMPORTS)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_importing_a_lower_layer_loads_no_layer_above_it() -> None:
    code = ("import sys, contactopt.programs, contactopt.model.step; "
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('contactopt.')}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stderr
    assert set(eval(done.stdout)) <= {"_version", "core", "model", "programs"}


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


def test_bundled_problems_are_found_from_any_folder(tmp_path: Path) -> None:
    """A scene named without a path is the repository's bundled file, from any working folder
    (the scene loader moved one folder down, into contactopt/scenes/, and must still find it)."""
    code = "import contactopt as co; s = co.load_scene('cart_wall'); print(s.source)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip()) == ROOT / "problems" / "cart_wall.toml"
