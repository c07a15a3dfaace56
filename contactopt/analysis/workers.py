"""Where the cells of a comparison run: in this process, on a local process pool, or on Dask;
and what keeps a worker from outliving the comparison that started it.

A process-pool worker blocks on its task queue: when its parent is killed (``kill -9``, an
out-of-memory kill) nothing wakes it, and it stays forever. :func:`exit_with_parent`, run in
every worker we start, makes the kernel kill the worker when its parent dies (Linux
``prctl(PR_SET_PDEATHSIG)``) and, everywhere, starts a daemon thread that exits the process
as soon as it is re-parented (``os.getppid()`` changes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

import pandas as pd

from contactopt.core.errors import ContactoptError

if TYPE_CHECKING:
    from contactopt.analysis.cell import Cell
    from contactopt.scenes.loading import Scene

__all__ = ["execute", "exit_with_parent"]

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.2
_watching = threading.Lock()
_watched: list[int] = []

Result = tuple[dict[str, Any], pd.DataFrame]


def _poll_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:  # re-parented: the process that started us is gone
            os._exit(1)
        time.sleep(POLL_SECONDS)


def exit_with_parent(use_pdeathsig: bool = True) -> None:
    """End this worker process when its parent dies (module docstring); idempotent.

    ``use_pdeathsig``: also ask Linux for SIGKILL at the parent's death. The kernel ties that
    signal to the parent *thread* that forked us, so it is only for workers forked from a
    thread that lives as long as the pool (the process pool's); Dask forks from its event
    loop thread and gets the polling thread alone."""
    with _watching:
        if _watched:
            return
        parent = os.getppid()
        _watched.append(parent)
    if use_pdeathsig and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl here: the polling thread alone
            pass
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_poll_parent, args=(parent,), name="contactopt-parent-watch", daemon=True).start()


def _pool_task(args: tuple[Scene, Cell, Mapping[str, Any], float | None]) -> Result:
    from contactopt.analysis.cell import run_cell

    return run_cell(*args)


def _dask_task(scene: Scene, cell: Cell, extra: Mapping[str, Any], time_limit: float | None,
               local: bool) -> Result:
    from contactopt.analysis.cell import run_cell

    if local:  # a worker of our LocalCluster (not of a scheduler someone else runs)
        exit_with_parent(use_pdeathsig=False)
    return run_cell(scene, cell, extra, time_limit)


#: Steps of each distinct (method, solver, options) that :func:`warm_up` runs.
WARM_UP_STEPS = 2


def warm_up(scene: Scene, todo: list[tuple[str, Cell]], extra: Mapping[str, Any]) -> None:
    """Run each distinct (method, solver, options) of ``todo`` for :data:`WARM_UP_STEPS` steps in
    this process, untimed, errors ignored (the cells report them): numba compiles a kernel on
    its first call (tens of seconds for SAP's Newton kernels), and a cell timed with that call
    would report the compilation as step time. Forked pool workers inherit the compiled
    kernels; spawned ones (Dask) load them from numba's on-disk cache (``cache=True``), which
    this pass fills."""
    from contactopt.analysis.cell import NO_SOLVER
    from contactopt.simulation import simulate

    seen: set[tuple[str, str, str]] = set()
    for _, cell in todo:
        key = (cell.method, cell.solver, repr(sorted(dict(cell.options).items())))
        if key in seen:
            continue
        seen.add(key)
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            simulate(scene, formulation=cell.method, solver=cell.solver if cell.solver != NO_SOLVER else None,
                     dt=cell.dt, duration=min(cell.duration, WARM_UP_STEPS * cell.dt), options=dict(cell.options),
                     solver_options={**scene.solver_options, **extra}, progress=False)


def execute(executor: str, address: str | None, workers: int | None, scene: Scene,
            todo: list[tuple[str, Cell]], extra: Mapping[str, Any], time_limit: float | None,
            finished: Callable[[str, Result], None], advance: Callable[[int], Any]) -> None:
    """Run every cell of ``todo`` on ``executor``, handing each result to ``finished`` as it
    completes (so that it is stored at once, whatever happens to the others)."""
    from contactopt.analysis.cell import run_cell

    if not todo:
        return
    warm_up(scene, todo, extra)
    if executor == "serial":
        for ident, cell in todo:
            finished(ident, run_cell(scene, cell, extra, time_limit))
            advance(1)
        return
    if executor == "process":
        with ProcessPoolExecutor(max_workers=workers, initializer=exit_with_parent) as pool:
            futures = {pool.submit(_pool_task, (scene, cell, extra, time_limit)): ident for ident, cell in todo}
            for future in as_completed(futures):
                finished(futures[future], future.result())
                advance(1)
        return
    _execute_dask(address, workers, scene, todo, extra, time_limit, finished, advance)


def _execute_dask(address: str | None, workers: int | None, scene: Scene, todo: list[tuple[str, Cell]],
                  extra: Mapping[str, Any], time_limit: float | None, finished: Callable[[str, Result], None],
                  advance: Callable[[int], Any]) -> None:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        raise ContactoptError("executor 'dask' needs dask.distributed: pip install 'contactopt[dask]'") from exc
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except OSError as exc:
            raise ContactoptError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        scene_future = client.scatter(scene, broadcast=True)
        pending = {client.submit(_dask_task, scene_future, cell, dict(extra), time_limit, cluster is not None,
                                 pure=False): ident for ident, cell in todo}
        for done in dask_completed(list(pending)):
            finished(pending[done], done.result())
            advance(1)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
