"""Helpers shared by the experiment scripts: run named cases, print tables, write results."""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from tqdm import tqdm

import contactopt as co
from contactopt.core.tables import format_table

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"


@dataclass(frozen=True)
class Case:
    """One run: a label, a formulation, a solver and formulation options."""

    label: str
    formulation: str
    solver: str
    options: Mapping[str, Any] = field(default_factory=dict)


def load(name: str) -> co.Scene:
    return co.load_scene(ROOT / "problems" / f"{name}.toml")


def run_cases(scene: co.Scene, cases: Sequence[Case], **simulate_args: Any) -> dict[str, co.Trajectory]:
    """Simulate ``scene`` once per case (progress bar over cases)."""
    out: dict[str, co.Trajectory] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
        for case in tqdm(cases, desc=scene.name, unit="run"):
            out[case.label] = co.simulate(scene, formulation=case.formulation, solver=case.solver,
                                          options=dict(case.options), **simulate_args)
    return out


def print_table(rows: Sequence[Mapping[str, Any]]) -> None:
    """Print ``rows`` with contactopt's table printer (:func:`contactopt.core.tables.format_table`)."""
    if rows:
        print(format_table(rows))


def write_results(folder: Path, rows: Sequence[Mapping[str, Any]], extra: Mapping[str, Any]) -> None:
    """``summary.json`` (rows plus ``extra``) and ``summary.csv`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({**extra, "rows": list(rows)}, indent=2, default=str))
    with (folder / "summary.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
