"""Drake's numbers for the hydroelastic scenes where its model and contactopt's coincide, recorded
for the tests (tests/data/drake_hydroelastic.json; tests/test_hydroelastic_drake.py compares
contactopt's to them, to 2 %).

Runs the named runs of ``experiments/hydroelastic.py`` (``DRAKE_RUNS``) with
``experiments/drake_hydroelastic.py`` in a Python that has pydrake, by subprocess (contactopt never
imports Drake), and keeps per run the rest penetrations, surface areas and normal forces, the
slide's stop distance and time, the stack's overlap:

    python experiments/hydroelastic_drake_record.py --drake /work/drake-venv/bin/python \
        [--out tests/data/drake_hydroelastic.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from common import ROOT
from hydroelastic import DRAKE_RUNS, R_BALL, A, drake, stop

from contactopt.core.outputs import write_text


def quantities(name: str, result: dict[str, Any]) -> dict[str, float]:
    """The numbers a run is compared on (SI units; the last recorded step unless said)."""
    z = np.asarray(result["z"], dtype=float)
    if name.startswith("box_rest"):
        return {"penetration": A - z[-1], "area": float(result["area"][-1]), "force": float(result["fz"][-1])}
    if name.startswith("ball_rest"):
        return {"penetration": R_BALL - z[-1], "area": float(result["area"][-1]), "force": float(result["fz"][-1])}
    if name.startswith("slide"):
        return {"stop_distance": float(result["x"][-1]),
                "stop_time": stop(np.asarray(result["t"]), np.asarray(result["vx"]), 1e-3)}
    if name.startswith("stack"):
        return {"lower_penetration": A - z[-1], "overlap": z[-1] + 2 * A - float(result["z_upper"][-1]),
                "area_between": float(result["area_between"][-1]), "force_between": float(result["fz_between"][-1])}
    raise ValueError(f"no quantities for Drake run {name!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drake", required=True, help="a Python interpreter that has pydrake")
    parser.add_argument("--out", default=str(ROOT / "tests" / "data" / "drake_hydroelastic.json"))
    args = parser.parse_args()
    version = subprocess.run([args.drake, "-c", "from importlib.metadata import version; print(version('drake'))"],
                             capture_output=True, text=True, check=False).stdout.strip()
    runs: dict[str, Any] = {}
    for name, arguments in DRAKE_RUNS.items():
        result = drake(args.drake, *arguments)
        if result is None:
            print(f"Drake run {name} failed; nothing written", file=sys.stderr)
            return 1
        runs[name] = {"arguments": list(arguments), **{k: float(v) for k, v in quantities(name, result).items()}}
        print(name, {k: f"{v:.6g}" for k, v in runs[name].items() if k != "arguments"})
    record = {"drake": version or "unknown",
              "command": "python experiments/hydroelastic_drake_record.py --drake PYTHON", "runs": runs}
    path = write_text(Path(args.out), json.dumps(record, indent=1) + "\n", "Drake's numbers")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
