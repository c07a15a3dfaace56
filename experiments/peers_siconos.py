"""The Siconos side of ``experiments/coulomb_peers.py``: a client for ``experiments/peers/siconos_fc3d.py``.

Siconos (Acary, Brémond, Huber, "On solving contact problems with Coulomb friction:
formulations and numerical comparisons", 2018; its ``fc3d`` solvers) is a peer beside
contactopt, never a dependency: Debian's ``python3-siconos`` runs under Debian's own interpreter
(``/usr/bin/python3``) in a subprocess that serves one problem per request (the protocol is in
the runner's docstring). The client hands it ``W, q, mu`` through an HDF5 file and reads back the
impulses ``r``; FCLIB's error of ``r`` is computed here, by contactopt's own
:func:`contactopt.programs.coulomb_error.fclib_merit` on ``u = W r + q`` recomputed here, never
taken from Siconos. A crash or a hang of Siconos on one problem is that problem's error, and
the next problem gets a fresh process.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

RUNNER = Path(__file__).resolve().parent / "peers" / "siconos_fc3d.py"
DEFAULT_PYTHON = "/usr/bin/python3"
INSTALL_HINT = ("Siconos is missing: apt-get install python3-siconos python3-h5py python3-scipy "
                "(Debian's packages, run under /usr/bin/python3; never a contactopt dependency)")
# one BLAS/OpenMP thread in the peer, as in contactopt's own timings (set before numpy loads)
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                     "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}


def siconos_tolerance(target: float, q: NDArray[np.float64], scale: str) -> float:
    """The tolerance to give Siconos for FCLIB error ``target``. ``"target"``: the target itself,
    in Siconos's own measure. ``"fclib"``: converted between the two measures of the same natural
    map ``e``: Siconos 4.4's error is ``||e|| / max(||q||, ||r||)`` (measured: to 1e-9 on a random
    problem where ``||r|| > ||q||`` and on the pile's steps, where ``||q||`` is the larger;
    tests/test_coulomb_peers.py), FCLIB's ``||e|| / (1 + sqrt ||q||)``. ``r`` is not known before
    the solve, so the conversion uses ``||q||``: exact where ``||r|| <= ||q||``; where the
    impulses are larger, Siconos stops up to ``||r|| / ||q||`` above the target (the row then
    shows FCLIB's error above it)."""
    if scale == "target":
        return target
    if scale != "fclib":
        raise ValueError(f"unknown Siconos tolerance scale {scale!r}; known: fclib, target")
    norm = float(np.linalg.norm(q))
    return target * (1.0 + np.sqrt(norm)) / norm if norm > np.finfo(float).eps else target


@dataclass(frozen=True)
class PeerRun:
    """One Siconos solve: the answer (None on failure), Siconos's return code, iterations, the
    best wall time of the rounds [s], Siconos's own error measure, and what went wrong."""

    solver: str
    tol: float
    r: NDArray[np.float64] | None
    info: int
    iterations: int
    seconds: float
    rounds: int
    own_error: float
    error: str = ""


def siconos_version(python: str = DEFAULT_PYTHON, timeout: float = 60.0) -> dict[str, Any] | None:
    """The runner's ready line (Siconos's version, Debian's package version), or None when the
    interpreter or Siconos is missing."""
    try:
        done = subprocess.run([python, str(RUNNER), "--version"], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **ONE_THREAD})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        ready: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
    except (json.JSONDecodeError, IndexError):
        return None
    return ready


def write_problem(path: Path, W: sp.spmatrix, q: NDArray[np.float64], mu: NDArray[np.float64]) -> None:
    """``W`` (CSC arrays), ``q``, ``mu`` in the runner's input layout."""
    csc = sp.csc_matrix(W)
    with h5py.File(path, "w") as handle:
        handle["W_data"], handle["W_indices"], handle["W_indptr"] = csc.data, csc.indices, csc.indptr
        handle["W_shape"] = np.asarray(csc.shape, dtype=np.int64)
        handle["q"], handle["mu"] = np.asarray(q, dtype=np.float64), np.asarray(mu, dtype=np.float64)


class SiconosPeer:
    """A running ``siconos_fc3d.py``; use as a context manager. ``timeout`` [s] bounds one
    request (all solvers and tolerances of one problem); past it the process is killed and the
    request's rows say so."""

    def __init__(self, python: str = DEFAULT_PYTHON, timeout: float = 600.0) -> None:
        self.python, self.timeout = python, timeout
        self.folder = Path(tempfile.mkdtemp(prefix="coulomb_peers_"))
        self.process: subprocess.Popen[str] | None = None
        self.log: IO[str] | None = None
        self.ready: dict[str, Any] = {}

    def __enter__(self) -> SiconosPeer:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        self.log = (self.folder / "siconos_stderr.log").open("a")
        self.process = subprocess.Popen([self.python, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log, text=True, bufsize=1, env={**os.environ, **ONE_THREAD})
        line = self._read_line(120.0)
        if line is None:
            raise RuntimeError(f"{INSTALL_HINT}\n(the runner did not start: {self._stderr_tail()})")
        self.ready = json.loads(line)

    def close(self) -> None:
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def _stderr_tail(self) -> str:
        path = self.folder / "siconos_stderr.log"
        return path.read_text()[-500:].strip() if path.exists() else ""

    def _read_line(self, timeout: float) -> str | None:
        assert self.process is not None and self.process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                line = self.process.stdout.readline()
                return line or None  # "" is end of file: the process ended
        finally:
            selector.close()

    def _restart(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        if self.log is not None:
            self.log.close()
        self._start()

    def solve(self, W: sp.spmatrix, q: NDArray[np.float64], mu: NDArray[np.float64], solvers: Sequence[str],
              tols: Sequence[float], rounds: int = 3, budget: float = 2.0,
              max_iterations: int | None = None) -> list[PeerRun]:
        """Every solver at every tolerance on ``FC(W, q, mu)`` (3-D local problem)."""
        problem, answers = self.folder / "problem.h5", self.folder / "answers.h5"
        write_problem(problem, W, q, mu)
        request = {"problem": str(problem), "answers": str(answers), "solvers": list(solvers),
                   "tols": [float(t) for t in tols], "rounds": rounds, "budget": budget,
                   "max_iterations": max_iterations}
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self._read_line(self.timeout)
        except BrokenPipeError:
            line = None
        if line is None:
            code = self.process.poll()
            why = (f"Siconos ended (exit code {code}): {self._stderr_tail()[-200:]}" if code is not None
                   else f"Siconos took over {self.timeout:g} s; killed")
            self._restart()
            return [PeerRun(s, t, None, -1, 0, float("nan"), 0, float("nan"), why) for s in solvers for t in tols]
        reply = json.loads(line)
        if "error" in reply:
            return [PeerRun(s, t, None, -1, 0, float("nan"), 0, float("nan"), reply["error"])
                    for s in solvers for t in tols]
        runs = []
        with h5py.File(answers, "r") as handle:
            for item in reply["results"]:
                r = np.asarray(handle[f"{item['solver']}/{item['tol']!r}/r"][()], dtype=np.float64)
                runs.append(PeerRun(item["solver"], item["tol"], r, item["info"], item["iterations"], item["seconds"],
                                    len(item["seconds_all"]), item["own_error"]))
        return runs
