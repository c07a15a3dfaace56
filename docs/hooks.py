"""MkDocs hooks (mkdocs.yml ``hooks:``): the pages written at build time, so that they cannot
drift from the code: the scene-file reference (:mod:`contactopt.scenes.reference`, from the
validators) and the gallery of the figures the experiments wrote (``experiments/out/``)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
OUT = EXPERIMENTS / "out"
sys.path.insert(0, str(ROOT))  # the checkout's contactopt, not an installed copy


def _summary(script: Path) -> str:
    """The first paragraph of a script's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _figures_named(script: Path) -> list[str]:
    """The PNG file names written in a script's source (``"box_slide.png"``)."""
    return sorted(set(re.findall(r"[\"']([\w\-]+\.png)[\"']", script.read_text())))


def gallery(config: Any, files: Files) -> str:
    """The gallery page; the figures found under experiments/out/ are added to the site."""
    lines = ["# Gallery", "",
             "The figures the experiments write (`python experiments/NAME.py`, output in "
             "`experiments/out/NAME/`), included when this site was built after running them; "
             "each script's docstring says what it reproduces.", ""]
    for script in sorted(EXPERIMENTS.glob("*.py")):
        named = _figures_named(script)
        if not named:
            continue
        lines += [f"## {script.stem}", "", _summary(script) or "(no description)", ""]
        found = sorted((OUT / script.stem).rglob("*.png")) if (OUT / script.stem).is_dir() else []
        for png in found:
            target = f"gallery/{script.stem}/{png.relative_to(OUT / script.stem).as_posix()}"
            files.append(File.generated(config, target, abs_src_path=str(png)))
            lines += [f"![{script.stem}: {png.name}]({target})", ""]
        if not found:
            lines += [f"Not run for this build: `python experiments/{script.name}` writes "
                      + ", ".join(f"`{name}`" for name in named) + ".", ""]
    return "\n".join(lines)


def on_files(files: Files, config: Any) -> Files:
    from contactopt.scenes.reference import scene_reference

    files.append(File.generated(config, "scene-reference.md", content=scene_reference()))
    files.append(File.generated(config, "gallery.md", content=gallery(config, files)))
    return files
