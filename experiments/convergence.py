"""Order of convergence of the box slide's observables with the step size (issue 14).

Runs ``problems/box_slide.toml`` (cut to 0.3 s: the box stops at 0.204 s) under lcp/lemke,
anitescu/clarabel, ccp/clarabel and regularized/clarabel at step sizes from 1e-4 to 1e-2 and
fits the order of each observable's error (``contactopt.analysis.convergence``). Expected:
the stop distance converges at order 1 (semi-implicit Euler: ``d_h = d - h v0 / 2 + O(h^2)``);
the hydroplaning hop and the energy balance of the Anitescu-type relaxations do not shrink
(order ~0); the lcp's balance is round-off at every step size.
Writes ``experiments/out/convergence/{convergence.png, convergence.csv, observables.csv,
summary.json, summary.csv}``.

    python experiments/convergence.py [--dts 1e-4,2e-4,5e-4,1e-3,2e-3,5e-3,1e-2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from common import OUT, load, print_table, write_results

import contactopt as co
from contactopt.analysis.convergence import orders, plot_convergence
from contactopt.analysis.observations import long_table

PAIRS = [("lcp", "lemke"), ("anitescu", "clarabel"), ("ccp", "clarabel"), ("regularized", "clarabel")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dts", default="1e-4,2e-4,5e-4,1e-3,2e-3,5e-3,1e-2", help="comma-separated step sizes")
    args = parser.parse_args()
    dts = [float(x) for x in args.dts.split(",")]
    scene = dataclasses.replace(load("box_slide"), duration=0.3)
    tables = [co.compare(scene, [formulation], [solver], dts, executor="process") for formulation, solver in PAIRS]
    import pandas as pd

    table = pd.concat(tables, ignore_index=True)
    table.attrs = tables[0].attrs
    long = long_table(table)
    fitted = orders(long)
    folder = OUT / "convergence"
    folder.mkdir(parents=True, exist_ok=True)
    long.to_csv(folder / "observables.csv", index=False)
    fitted.to_csv(folder / "convergence.csv", index=False)
    plot_convergence(long, folder / "convergence.png")
    rows = fitted.to_dict("records")
    print_table(rows)
    write_results(folder, rows, {"scene": "box_slide", "duration": 0.3, "dts": dts,
                                 "pairs": [f"{f}/{s}" for f, s in PAIRS]})
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
