"""Every bad input of experiments/bad_inputs.py (scene files, CLI arguments, API calls,
corrupted trajectory / program / compare-cell files, extreme units and sizes, cases in
experiments/badinputs/) is loud: one clear line, a one-line warning or a right answer; no
traceback, no silent acceptance, no wrong answer marked optimal, no hang."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module() -> object:
    spec = importlib.util.spec_from_file_location("bad_inputs", ROOT / "experiments" / "bad_inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bad_inputs"] = module
    spec.loader.exec_module(module)
    return module


BAD = _module()


def test_the_table_has_at_least_sixty_distinct_inputs() -> None:
    labels = [(case.category, case.label) for case in BAD.cases()]  # type: ignore[attr-defined]
    assert len(labels) == len(set(labels)) >= 60
    assert {category for category, _ in labels} >= {"scene file", "CLI", "API", "corrupted file"}


def _params() -> list[object]:
    """Every case; the unit-scaled boxes (each a few seconds, the same runs tests/test_units.py
    makes in the default suite), the kill -9 runs (each 10-30 s of subprocesses; a fast one
    in tests/test_atomic_writes.py) and the full disk at 64 KiB (the 4 KiB one runs by default)
    under ``slow``."""
    slow = [pytest.mark.slow]
    return [pytest.param(case, id=f"{case.category}: {case.label}",
                         marks=slow if case.category in ("units", "kill -9") or "64 KiB" in case.label else [])
            for case in BAD.cases()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", _params())
def test_bad_input_gives_one_clear_line(case: object) -> None:
    outcome = BAD.classify(case)  # type: ignore[attr-defined]
    assert outcome.verdict == "clear", outcome.detail
