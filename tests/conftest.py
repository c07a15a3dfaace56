"""Shared fixtures: the repository's problems folder and a headless matplotlib."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problems"


@pytest.fixture(autouse=True)
def _problems_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTOPT_PROBLEMS", os.fspath(PROBLEMS))
