"""Bad inputs, tried the way a user would: scene files, CLI arguments, API calls, corrupted
trajectory / program / compare-cell files, extreme units and sizes. Each case is run under a
time limit and classified (see :mod:`badinputs.base`): ``clear`` (the loud, expected outcome:
one line naming the culprit, a one-line warning, or a right answer), ``traceback``, ``silent``,
``wrong`` (an answer marked optimal that the physics contradicts) or ``hang``.

The cases live in ``experiments/badinputs/``, one module per theme.
``python experiments/bad_inputs.py`` writes ``experiments/out/bad_inputs/table.{md,csv}``;
``tests/test_bad_inputs.py`` runs every case and asserts that each one is ``clear``.
"""

from __future__ import annotations

import csv
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "bad_inputs"
if str(HERE) not in sys.path:  # the badinputs package beside this file
    sys.path.insert(0, str(HERE))

from badinputs.base import VERDICTS, Case, Outcome, classify  # noqa: E402

#: The theme modules of ``badinputs``, in table order.
THEMES = ("original", "files", "contact", "budgets", "mjcf", "cones", "units", "arguments", "writes")


def cases() -> list[Case]:
    return [case for theme in THEMES for case in importlib.import_module(f"badinputs.{theme}").cases()]


def run_all(selected: list[Case] | None = None) -> list[Outcome]:
    return [classify(case) for case in (selected if selected is not None else cases())]


def write_table(outcomes: list[Outcome], folder: Path = OUT) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = folder / "table.csv", folder / "table.md"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["category", "input", "verdict", "message"])
        writer.writerows([o.category, o.label, o.verdict, o.detail] for o in outcomes)
    counts = {v: sum(o.verdict == v for o in outcomes) for v in VERDICTS}
    lines = [f"{len(outcomes)} bad inputs: {counts['clear']} clear (one-line error, one-line warning or a right "
             f"answer), {counts['traceback']} tracebacks, {counts['silent']} silently accepted, "
             f"{counts['wrong']} wrong answers, {counts['hang']} hangs", "",
             "| category | input | verdict | message |", "|---|---|---|---|"]
    lines += [f"| {o.category} | {o.label} | {o.verdict} | {o.detail.replace('|', '/')[:160]} |" for o in outcomes]
    md_path.write_text("\n".join(lines) + "\n")
    return md_path, csv_path


if __name__ == "__main__":
    results = run_all()
    md, csv_file = write_table(results)
    for outcome in results:
        if outcome.verdict != "clear":
            print(f"{outcome.verdict:9s} {outcome.category} / {outcome.label}: {outcome.detail}")
    print(md.read_text().splitlines()[0])
    print(f"wrote {md} and {csv_file}")
