"""The project's docs stand alone (issue 35, item 9): a user's clone has no ``../shared``, so the
README, the documentation site and the docstrings point at the project's own pages
(docs/architecture.md, docs/references.md) and cite the source texts by author and title, never
by a path or a file number of a folder beside the clone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Pointers into a folder that exists only beside the development checkout.
OUTSIDE = ("../shared", "shared/references", "shared/DESIGN", "DESIGN.md")
#: The texts' old citation by file number ("reference 000", "references 001 and 003").
NUMBERED = re.compile(r"\breferences? 00[0-9]\b", re.IGNORECASE)
#: The citation keys the docstrings use for the course texts, each a section of docs/references.md.
TEXTS = ("Tedrake 2022", "Tedrake 2021", "Tedrake 2020", "Savin 2020", '"Lagrangian Mechanics"')


def _docs_files() -> list[Path]:
    pages = [p for p in (ROOT / "docs").rglob("*") if p.is_file() and p.suffix in (".md", ".py", ".ipynb", ".yml")]
    return [ROOT / "README.md", ROOT / "mkdocs.yml", *pages]


def _source_files() -> list[Path]:
    """The package's, the experiments' and the tests' modules (this one names the patterns)."""
    found = [p for folder in ("contactopt", "experiments", "tests") for p in (ROOT / folder).rglob("*.py")]
    return [p for p in found if p.resolve() != Path(__file__).resolve()]


def _hits(paths: list[Path], needles: tuple[str, ...], pattern: re.Pattern[str] | None = None) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(needle in line for needle in needles) or (pattern is not None and pattern.search(line)):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_readme_and_docs_do_not_point_outside_the_clone() -> None:
    files = _docs_files()
    assert len(files) > 10  # the README, mkdocs.yml and the pages were found
    assert _hits(files, OUTSIDE, NUMBERED) == []


def test_docstrings_cite_texts_by_name_not_by_a_file_beside_the_clone() -> None:
    files = _source_files()
    assert len(files) > 100
    assert _hits(files, ("shared/references", "DESIGN.md"), NUMBERED) == []


def test_every_citation_key_of_the_course_texts_is_a_section_of_the_references_page() -> None:
    page = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    headings = [line for line in page.splitlines() if line.startswith("### ")]
    sources = "\n".join(p.read_text(encoding="utf-8") for p in _source_files())
    for key in TEXTS:
        assert key in sources, key  # the key is in use ...
        assert any(key in heading for heading in headings), key  # ... and resolves on the page


def test_the_new_pages_are_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in ("architecture.md", "references.md"):
        assert (ROOT / "docs" / page).is_file() and f": {page}" in nav, page
