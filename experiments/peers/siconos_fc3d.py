"""Siconos's fc3d solvers as a peer of contactopt's Coulomb solvers, for ``experiments/coulomb_peers.py``.

Runs under Debian's own interpreter with Debian's ``python3-siconos`` (``apt-get install
python3-siconos python3-h5py python3-scipy``; Siconos is never a dependency of contactopt, and this
script never imports it): it imports only numpy, scipy, h5py and ``siconos.numerics``.

Protocol (one process serves many problems, so Siconos is imported once): it prints one JSON line
``{"ready": true, "siconos": VERSION, ...}``, then answers each JSON request line read from stdin,
``{"problem": IN.h5, "answers": OUT.h5, "solvers": ["NSGS", ...], "tols": [1e-8, ...],
"rounds": 3, "budget": 2.0, "max_iterations": null}``, with one JSON line ``{"results": [...]}``. ``IN.h5``
holds the local problem ``FC(W, q, mu)`` (FCLIB's local form: ``u = W r + q``, De Saxcé's
complementarity on the cones ``||r_T|| <= mu r_N``, normal first per contact) as ``W`` in CSC
arrays (``W_data``, ``W_indices``, ``W_indptr``, ``W_shape``), ``q``, ``mu``. Each solver runs
``rounds`` times from ``r = u = 0`` through ``fc3d_driver`` (Siconos's generic entry point: its
trivial-case check, then the solver of the options) with ``SICONOS_DPARAM_TOL`` set to the
target (a further round only while the rounds so far took under ``budget`` seconds: a slow
solve is timed fewer times); the best wall time of the rounds is reported, with the iterations, Siconos's return code
and its own error measure (not FCLIB's: the caller computes FCLIB's error of ``r`` itself). The
answers ``r`` and ``u`` go to ``OUT.h5`` as ``SOLVER/TOL/r`` and ``SOLVER/TOL/u``.

``W`` reaches Siconos as a scipy CSC matrix, which its Python binding stores as ``NM_SPARSE``
(64-bit indices given, so it need not convert them): on a 1344-row pile step NSGS takes 3 ms
this way and 88 ms with a dense ``W``.

    /usr/bin/python3 experiments/peers/siconos_fc3d.py [--version]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp
import siconos
import siconos.numerics as sn

# name -> Siconos solver id (Acary, Brémond, Huber 2018, "On solving contact problems with
# Coulomb friction: formulations and numerical comparisons", the families compared there)
SOLVERS: dict[str, int] = {
    "NSGS": sn.SICONOS_FRICTION_3D_NSGS,
    "NSN-AC": sn.SICONOS_FRICTION_3D_NSN_AC,
    "NSN-FB": sn.SICONOS_FRICTION_3D_NSN_FB,
    "NSN-NM": sn.SICONOS_FRICTION_3D_NSN_NM,
    "ADMM": sn.SICONOS_FRICTION_3D_ADMM,
    "ACLMFP": sn.SICONOS_FRICTION_3D_ACLMFP,
    "DSFP": sn.SICONOS_FRICTION_3D_DSFP,
    "PROX": sn.SICONOS_FRICTION_3D_PROX,
    "VI-EG": sn.SICONOS_FRICTION_3D_VI_EG,
}


def load_problem(path: str) -> tuple[Any, int]:
    with h5py.File(path, "r") as handle:
        rows, columns = (int(v) for v in handle["W_shape"][()])
        W = sp.csc_matrix((handle["W_data"][()], handle["W_indices"][()].astype(np.int64),
                           handle["W_indptr"][()].astype(np.int64)), shape=(rows, columns))
        q = np.ascontiguousarray(handle["q"][()], dtype=np.float64)
        mu = np.ascontiguousarray(handle["mu"][()], dtype=np.float64)
    W.indices = W.indices.astype(np.int64)  # Siconos's own index width: no conversion warning
    W.indptr = W.indptr.astype(np.int64)
    return sn.FrictionContactProblem(3, W, q, mu), q.shape[0]


def run_one(problem: Any, m: int, name: str, tol: float, rounds: int, budget: float, max_iterations: int | None,
            answers: h5py.File) -> dict[str, Any]:
    options = sn.SolverOptions(SOLVERS[name])
    options.dparam[sn.SICONOS_DPARAM_TOL] = tol
    if max_iterations is not None:
        options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = max_iterations
    times: list[float] = []
    info = -1
    r = u = np.zeros(m)
    while len(times) < rounds and (not times or sum(times) < budget):
        r, u = np.zeros(m), np.zeros(m)  # every round from zero: no warm start between rounds
        start = time.perf_counter()
        info = int(sn.fc3d_driver(problem, r, u, options))
        times.append(time.perf_counter() - start)
    group = answers.require_group(f"{name}/{tol!r}")
    group["r"], group["u"] = r, u
    return {"solver": name, "tol": tol, "info": info, "iterations": int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE]),
            "seconds": min(times), "seconds_all": times,
            "own_error": float(options.dparam[sn.SICONOS_DPARAM_RESIDU])}


def serve(request: dict[str, Any]) -> dict[str, Any]:
    unknown = [name for name in request["solvers"] if name not in SOLVERS]
    if unknown:
        return {"error": f"unknown Siconos solver(s) {unknown}; known: {sorted(SOLVERS)}"}
    problem, m = load_problem(request["problem"])
    results = []
    with h5py.File(request["answers"], "w") as answers:
        for name in request["solvers"]:
            for tol in request["tols"]:
                results.append(run_one(problem, m, name, float(tol), int(request.get("rounds", 3)),
                                       float(request.get("budget", float("inf"))), request.get("max_iterations"),
                                       answers))
    return {"results": results}


def package_version() -> str:
    """Debian's version of the package (its module says the version of the sources it was cut from)."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-siconos"], capture_output=True,
                              text=True, timeout=10)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def hello() -> dict[str, Any]:
    return {"ready": True, "siconos": str(getattr(siconos, "version", "unknown")), "package": package_version(),
            "numpy": np.__version__,
            "python": sys.version.split()[0], "solvers": sorted(SOLVERS)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="store_true", help="print the ready line and exit")
    args = parser.parse_args()
    print(json.dumps(hello()), flush=True)
    if args.version:
        return 0
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = serve(json.loads(line))
        except Exception as exc:  # one bad problem is a row, not the end of the run
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
