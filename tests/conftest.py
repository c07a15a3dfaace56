"""Shared fixtures: the repository's problems folder and a headless matplotlib."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# Property-based tests (tests/test_fuzz.py): a bounded budget by default (the fuzz file in a
# few seconds on 2 cores); HYPOTHESIS_PROFILE=slow runs 10^4 cases per property.
settings.register_profile("default", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("slow", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problems"


@pytest.fixture(autouse=True)
def _problems_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTOPT_PROBLEMS", os.fspath(PROBLEMS))
