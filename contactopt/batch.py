"""``simulate_batch``: B copies of one scene, each world from its own initial state (and, where
given, its own parameters and controller), every world judged and recorded as a single run is.

World ``i`` is exactly ``simulate(scene_i, ...)`` with ``scene_i`` the scene at ``q0[i], v0[i]``
(its system given ``parameters[name][i]`` through :meth:`System.with_parameters`): the same
programs, the same solver, the same verdict per step, so a batch equals its B single runs (bit
for bit; ``tests/test_batch.py``). A world whose step fails is recorded as failed (its record
carries the status, ``completed[i]`` is False) and the other worlds go on; one
:class:`~contactopt.core.errors.PartialTrajectoryWarning` lists the worlds that stopped.

Each world runs on a private copy of the scene (a system holds mutable evaluation state:
MuJoCo's data, its caches), so nothing one world computes reaches another. With ``workers = 1``
the worlds run one after the other in this process; with ``workers = k > 1`` they are shared out
to ``k`` worker processes (forked on Linux, else spawned), each world still one
``simulate`` of its own, so the results are the same numbers whichever way they ran: a batch of
worlds on the step as arrays (``docs/architecture.md``, "The step as arrays") then costs about
``B / k`` single runs. The worlds' warnings are raised again here, in world order.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.arguments import ArgumentTypeError, check_mapping, given
from contactopt.core.budgets import plan_steps
from contactopt.core.errors import OptionError, PartialTrajectoryWarning, ShapeError
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.control import Controller, ControlSpec
from contactopt.scenes.loading import Scene, as_scene
from contactopt.simulation import simulate

__all__ = ["BatchTrajectory", "simulate_batch"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class BatchTrajectory:
    """The worlds of a batch and their states as arrays.

    ``t`` (N+1,): the time grid of the run asked for; ``q`` (B, N+1, nq), ``v`` (B, N+1, nv): each
    world's states, NaN after the state where it stopped; ``status`` (B, N): each step's
    :class:`~contactopt.programs.Status` value (a string; ``""`` for a step a stopped world did
    not take); ``completed`` (B,); ``parameters``: the per-world values given (name -> (B,)).
    ``batch[i]`` is world i's :class:`~contactopt.records.trajectory.Trajectory`."""

    worlds: tuple[Trajectory, ...]
    t: FloatArray
    q: FloatArray
    v: FloatArray
    status: NDArray[np.str_]
    completed: NDArray[np.bool_]
    parameters: Mapping[str, FloatArray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.worlds)

    def __getitem__(self, index: int) -> Trajectory:
        return self.worlds[index]

    def __iter__(self) -> Any:
        return iter(self.worlds)

    @property
    def size(self) -> int:
        """B, the number of worlds."""
        return len(self.worlds)

    @staticmethod
    def from_worlds(worlds: Sequence[Trajectory], steps: int,
                    parameters: Mapping[str, FloatArray] | None = None) -> BatchTrajectory:
        """The arrays of ``worlds`` on a grid of ``steps`` steps (a stopped world padded)."""
        if not worlds:
            raise OptionError("a batch needs at least one world")
        nq, nv = worlds[0].q.shape[1], worlds[0].v.shape[1]
        B = len(worlds)
        q = np.full((B, steps + 1, nq), np.nan)
        v = np.full((B, steps + 1, nv), np.nan)
        status = np.full((B, steps), "", dtype="<U16")
        longest = max(worlds, key=lambda world: world.t.shape[0])  # its own time grid, extended if it stopped
        dt = float(longest.info["dt"])
        missing = steps + 1 - longest.t.shape[0]
        t = np.concatenate([longest.t, longest.t[-1] + dt * np.arange(1, missing + 1)])
        for i, world in enumerate(worlds):
            states = world.q.shape[0]
            q[i, :states], v[i, :states] = world.q, world.v
            taken = [str(record.status) for record in world.steps]
            status[i, :len(taken)] = taken
        completed = np.array([world.completed for world in worlds], dtype=bool)
        given_values = {name: np.asarray(values, dtype=np.float64) for name, values in (parameters or {}).items()}
        return BatchTrajectory(tuple(worlds), t, q, v, status, completed, given_values)


def simulate_batch(
    scene: Scene | str | Path,
    q0: ArrayLike | None = None,
    v0: ArrayLike | None = None,
    formulation: str | None = None,
    solver: str | None = None,
    dt: float | None = None,
    duration: float | None = None,
    options: Mapping[str, Any] | None = None,
    solver_options: Mapping[str, Any] | None = None,
    *,
    parameters: Mapping[str, ArrayLike] | None = None,
    controllers: Controller | ControlSpec | Mapping[str, Any] | Sequence[Any] | None = None,
    size: int | None = None,
    fallback: str | None = None,
    progress: bool = False,
    max_steps: int | None = None,
    workers: int = 1,
) -> BatchTrajectory:
    """Simulate B worlds of ``scene``: ``q0`` (B, nq) and ``v0`` (B, nv) their initial states
    (None: the scene's, repeated), ``parameters`` per-world system parameters (name -> (B,)
    values, e.g. ``{"mu": [0.2, 0.5]}``: :meth:`System.differentiable_parameters` names them),
    ``controllers`` one controller for every world or a sequence of B (None: the scene's).
    B comes from whichever of these is given (they must agree), else ``size``. ``workers``: how many
    processes run the worlds (1: this one; the controllers must then be picklable). The other
    arguments are :func:`~contactopt.simulation.simulate`'s, the same for every world.

    Returns a :class:`BatchTrajectory`; a world that stops early is recorded as stopped while the
    others go on (module docstring). Arguments of the wrong type or shape are refused by name
    before any world runs."""
    scene = as_scene(scene, "simulate_batch")
    options = check_mapping(options, "options", "simulate_batch")
    solver_options = check_mapping(solver_options, "solver_options", "simulate_batch")
    parameters = check_mapping(parameters, "parameters", "simulate_batch")
    sizes: dict[str, int] = {}
    Q0 = _states(q0, "q0", scene.system.nq, sizes)
    V0 = _states(v0, "v0", scene.system.nv, sizes)
    values: dict[str, FloatArray] = {}
    for name, given_values in parameters.items():
        try:
            column = np.asarray(given_values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"simulate_batch: parameters[{name!r}] must be numbers, one per world, "
                                    f"got {given(given_values)}") from None
        if column.ndim != 1:
            raise ShapeError(f"simulate_batch: parameters[{name!r}] must be one value per world (B,), "
                             f"got shape {column.shape}")
        values[name] = column
        sizes[f"parameters[{name!r}]"] = column.shape[0]
    per_world_controllers = isinstance(controllers, Sequence) and not isinstance(controllers, str | bytes)
    if per_world_controllers:
        sizes["controllers"] = len(controllers)  # type: ignore[arg-type]
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ArgumentTypeError(f"simulate_batch: size must be an integer >= 1, got {given(size)}")
        sizes["size"] = size
    if not sizes:
        raise OptionError("simulate_batch: give q0 (B, nq), v0 (B, nv), per-world parameters, controllers "
                          "or size to say how many worlds")
    if len(set(sizes.values())) > 1:
        raise ShapeError("simulate_batch: the batch's arguments disagree on the number of worlds: "
                         + ", ".join(f"{name} {count}" for name, count in sizes.items()))
    B = next(iter(sizes.values()))
    if B < 1:
        raise ShapeError("simulate_batch: a batch needs at least one world")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ArgumentTypeError(f"simulate_batch: workers must be an integer >= 1, got {given(workers)}")
    for name in values:  # refused by name before any world runs (unknown name, out-of-bounds value)
        for i in range(B):
            scene.system.with_parameters({name: float(values[name][i])})
    chosen: list[Any] = list(controllers) if per_world_controllers else [controllers] * B  # type: ignore[arg-type]
    batch = _Batch(scene, Q0, V0, values, chosen)
    run = dict(formulation=formulation, solver=solver, dt=dt, duration=duration, options=options,
               solver_options=solver_options, fallback=fallback, max_steps=max_steps)
    bar: Any = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=B, desc=f"{scene.name}: {B} worlds", unit="world")
    try:
        results = _run_worlds(batch, run, min(workers, B), bar)
    finally:
        if bar is not None:
            bar.close()
    worlds: list[Trajectory] = []
    steps = 0
    for i, (traj, caught) in enumerate(results):
        for category, message, filename, lineno in caught:  # what is not the stop of a world, as it was
            if not issubclass(category, PartialTrajectoryWarning):
                warnings.warn_explicit(message, category, filename, lineno)
        traj.info["world"] = i
        worlds.append(traj)
        steps = max(steps, _planned_steps(traj, scene.max_steps if max_steps is None else max_steps))
    stopped = [(i, world) for i, world in enumerate(worlds) if not world.completed]
    if stopped:
        listed = "; ".join(f"world {i}: {world.message}" for i, world in stopped[:3])
        more = f"; and {len(stopped) - 3} more" if len(stopped) > 3 else ""
        warnings.warn(f"{scene.name}: {len(stopped)} of {B} worlds stopped early ({listed}{more})",
                      PartialTrajectoryWarning, stacklevel=2)
    return BatchTrajectory.from_worlds(worlds, steps, values)


Caught = list[tuple[type[Warning], str, str, int]]


@dataclass(frozen=True)
class _Batch:
    """What makes world ``i``: the scene, the initial states, the parameters and the controllers."""

    scene: Scene
    Q0: FloatArray | None
    V0: FloatArray | None
    values: Mapping[str, FloatArray]
    controllers: Sequence[Any]

    def world(self, i: int) -> Scene:
        return _world(self.scene, i, self.Q0, self.V0, self.values)


def _one_world(batch: _Batch, i: int, run: Mapping[str, Any]) -> tuple[Trajectory, Caught]:
    """World ``i``'s ``simulate`` and the warnings it showed under the caller's filters (a world's
    stop always), each ``(category, message, filename, lineno)`` to be raised again as it was."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PartialTrajectoryWarning)
        traj = simulate(batch.world(i), controller=batch.controllers[i], **run)
    return traj, [(warning.category, str(warning.message), warning.filename, warning.lineno) for warning in caught]


_POOL_BATCH: tuple[_Batch, Mapping[str, Any]] | None = None  # a worker process's batch (_start_worker)


def _start_worker(batch: _Batch, run: Mapping[str, Any]) -> None:
    """A worker's batch, given once (inherited as it is under ``fork``, pickled once under ``spawn``)."""
    global _POOL_BATCH
    _POOL_BATCH = (batch, run)


def _pool_world(i: int) -> tuple[Trajectory, Caught]:
    assert _POOL_BATCH is not None
    return _one_world(_POOL_BATCH[0], i, _POOL_BATCH[1])


def _run_worlds(batch: _Batch, run: Mapping[str, Any], workers: int, bar: Any) -> list[tuple[Trajectory, Caught]]:
    """Every world's :func:`_one_world`, in order: here (``workers = 1``) or in a pool of processes,
    each of which makes the worlds it runs from the batch it was started with."""
    B = len(batch.controllers)
    if workers == 1:
        done = []
        for i in range(B):
            done.append(_one_world(batch, i, run))
            if bar is not None:
                bar.update(1)
        return done
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    for i, controller in enumerate(batch.controllers):
        try:
            pickle.dumps(controller)
        except Exception as error:  # a lambda or a closure: it cannot reach a worker process
            raise OptionError(f"simulate_batch: workers={workers} needs controllers that can be pickled; world {i}'s "
                              f"cannot ({type(error).__name__}: {error}); give a ControlSpec or a module-level "
                              "function, or workers=1") from None
    batch.world(0)  # what the worlds' copies share is loaded once, here, before the workers fork
    method = "fork" if sys.platform.startswith("linux") else "spawn"  # fork is unsafe on macOS
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method),
                             initializer=_start_worker, initargs=(batch, run)) as pool:
        results = []
        for result in pool.map(_pool_world, range(B)):
            results.append(result)
            if bar is not None:
                bar.update(1)
    return results


def _states(value: ArrayLike | None, name: str, width: int, sizes: dict[str, int]) -> FloatArray | None:
    """``value`` as a (B, width) array of finite numbers (a (width,) vector is one world)."""
    if value is None:
        return None
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"simulate_batch: {name} must be an array of numbers (B, {width}), "
                                f"got {given(value)}") from None
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != width:
        raise ShapeError(f"simulate_batch: {name} must have shape (B, {width}), got {array.shape}")
    if not np.isfinite(array).all():
        row = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise ShapeError(f"simulate_batch: {name}[{row}] has a NaN or infinite entry")
    sizes[name] = array.shape[0]
    return array


def _world(scene: Scene, i: int, Q0: FloatArray | None, V0: FloatArray | None,
           values: Mapping[str, FloatArray]) -> Scene:
    """World ``i``'s scene: a private copy (its system's evaluation state is its own)."""
    system = scene.system.evaluation_copy()
    if values:
        system = system.with_parameters({name: float(column[i]) for name, column in values.items()})
    return dataclasses.replace(scene, system=system, q0=scene.q0 if Q0 is None else Q0[i],
                               v0=scene.v0 if V0 is None else V0[i])


def _planned_steps(traj: Trajectory, budget: int | None) -> int:
    """The steps a world was asked for (its duration over its step), taken or not."""
    return max(len(traj.steps), plan_steps(float(traj.info["dt"]), float(traj.info["duration"]), budget))
