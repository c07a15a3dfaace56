"""The documentation (issue 27): the scene-file reference lists every key the validators accept
and every key the bundled scenes use; the site builds with warnings as errors (the notebook:
tests/test_notebook.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from contactopt import integrators, systems
from contactopt.scenes import expressions
from contactopt.scenes.control import CONTROL_KEYS
from contactopt.scenes.loading import INITIAL_KEYS, SCENE_KEYS, SCENE_TABLES
from contactopt.scenes.observable_kinds import KINDS
from contactopt.scenes.observables import COMMON_KEYS
from contactopt.scenes.reference import scene_reference
from contactopt.systems.base import CONTACT_PARAMETERS
from contactopt.systems.rigid3d_bodies import BODY_KEYS

ROOT = Path(__file__).resolve().parent.parent
#: Seconds the docs build may take to be part of the default suite (issue 27's brief: < 20 s).
FAST_BUILD = 20.0


@pytest.fixture(scope="module")
def reference() -> str:
    return scene_reference()


def _mentioned(reference: str, key: str) -> bool:
    return f"`{key}`" in reference or f"`[{key}]`" in reference


def test_reference_lists_every_key_the_validators_accept(reference: str) -> None:
    accepted = {*SCENE_TABLES, *SCENE_KEYS, *INITIAL_KEYS, *BODY_KEYS, *COMMON_KEYS, *KINDS,
                *(p.name for p in CONTACT_PARAMETERS), *expressions.FUNCTIONS, *expressions.CONSTANTS,
                *CONTROL_KEYS, *(key for keys in CONTROL_KEYS.values() for key in keys),
                *(key for kind in KINDS.values() for key in kind.keys)}
    for name in systems.names():
        cls = systems.get(name)
        assert f'type = "{name}"' in reference, name
        accepted |= set(cls.config_keys) | {p.name for p in cls.parameters}
    for method in integrators.names():
        accepted |= {method, *integrators.describe(method)[1]}
    missing = sorted(key for key in accepted if not _mentioned(reference, key))
    assert not missing, f"keys the validators accept, absent from the reference: {missing}"
    assert "(undocumented)" not in reference


def _keys_used(data: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """(dotted path, key) of every key of a scene file, but the names the user chooses: an
    observable's or a definition's name, a parameter's value tables."""
    for key, value in data.items():
        here = f"{path}.{key}" if path else key
        if path in ("observables", "observables.define"):  # names the scene chooses
            if path == "observables.define":
                continue
        else:
            yield here, key
        if isinstance(value, Mapping):
            yield from _keys_used(value, here)
        elif isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
            for item in value:
                yield from _keys_used(item, here)


def test_reference_names_every_key_the_bundled_scenes_use(reference: str) -> None:
    scenes = sorted((ROOT / "problems").glob("*.toml"))
    assert len(scenes) > 20  # the walk found them
    missing = set()
    for path in scenes:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        for where, key in _keys_used(data):
            if not _mentioned(reference, key):
                missing.add(f"{path.name}: {where}")
    assert not missing, sorted(missing)


def test_reference_states_the_frames_of_the_angular_velocities(reference: str) -> None:
    assert "world** frame" in reference and "wx_body" in reference


def test_documentation_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    if shutil.which("mkdocs") is None and not _module("mkdocs"):
        pytest.skip("mkdocs is not installed (extra 'docs')")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    assert elapsed < FAST_BUILD * 3, f"the docs build took {elapsed:.1f} s: mark this test slow"
    page = (tmp_path / "site" / "scene-reference" / "index.html").read_text()
    for key in ("ground_normal", "angular_velocity", "steady_penetration", "ellipk", "max_steps"):
        assert key in page, key
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "ConicProgram" in api and "load_scene" in api
    formulations = (tmp_path / "site" / "formulations" / "index.html").read_text()
    assert "Stewart" in formulations and "Anitescu" in formulations  # the formulation docstrings
    assert (tmp_path / "site" / "getting_started.ipynb").is_file()


def _module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
