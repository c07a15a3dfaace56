"""Every experiment script imports (its helpers and the names it takes from the package exist),
so a refactoring that breaks an experiment fails here rather than when someone reruns it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def test_every_experiment_imports() -> None:
    # sap_drake*.py run in a separate Drake environment (pydrake is not a dependency)
    scripts = sorted(p.stem for p in EXPERIMENTS.glob("*.py") if not p.stem.startswith(("sap_drake", "drake_")))
    assert {"bench_step", "sap", "cart_wall_lcp", "sysid", "gradients"} <= set(scripts)
    # one interpreter for all of them (imports are cached): a few seconds in total
    code = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); import matplotlib; matplotlib.use('Agg')\n"
            "for name in sys.argv[2:]:\n    importlib.import_module(name)\n")
    done = subprocess.run([sys.executable, "-c", code, str(EXPERIMENTS), *scripts], capture_output=True,
                          text=True, timeout=120, cwd=EXPERIMENTS.parent)
    assert done.returncode == 0, done.stderr[-2000:]
