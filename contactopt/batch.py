"""``simulate_batch``: B copies of one scene, each world from its own initial state (and, where
given, its own parameters and controller), every world judged and recorded as a single run is.

World ``i`` is exactly ``simulate(scene_i, ...)`` with ``scene_i`` the scene at ``q0[i], v0[i]``
(its system given ``parameters[name][i]`` through :meth:`System.with_parameters`): the same
programs, the same solver, the same verdict per step, so a batch equals its B single runs (bit
for bit; ``tests/test_batch.py``). A world whose step fails is recorded as failed (its record
carries the status, ``completed[i]`` is False) and the other worlds go on; one
:class:`~contactopt.core.errors.PartialTrajectoryWarning` lists the worlds that stopped.

The worlds run one after the other on private copies of the scene (a system holds mutable
evaluation state: MuJoCo's data, its caches), so nothing one world computes reaches another.
This is the batch's contract, not yet its speed: the step as compiled arrays shared by the
worlds (docs/architecture.md, "The step as arrays") is what will make a batch step cost less
than B steps.
"""

from __future__ import annotations

import copy
import dataclasses
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
) -> BatchTrajectory:
    """Simulate B worlds of ``scene``: ``q0`` (B, nq) and ``v0`` (B, nv) their initial states
    (None: the scene's, repeated), ``parameters`` per-world system parameters (name -> (B,)
    values, e.g. ``{"mu": [0.2, 0.5]}``: :meth:`System.differentiable_parameters` names them),
    ``controllers`` one controller for every world or a sequence of B (None: the scene's).
    B comes from whichever of these is given (they must agree), else ``size``. The other
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
    for name in values:  # refused by name before any world runs (unknown name, out-of-bounds value)
        for i in range(B):
            scene.system.with_parameters({name: float(values[name][i])})
    worlds: list[Trajectory] = []
    steps = 0
    iterator: Any = range(B)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc=f"{scene.name}: {B} worlds", unit="world")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PartialTrajectoryWarning)
        for i in iterator:
            world = _world(scene, i, Q0, V0, values)
            controller: Any = controllers[i] if per_world_controllers else controllers  # type: ignore[index]
            traj = simulate(world, formulation, solver, dt, duration, options, solver_options, fallback=fallback,
                            controller=controller, max_steps=max_steps)
            traj.info["world"] = i
            worlds.append(traj)
            steps = max(steps, _planned_steps(traj, scene.max_steps if max_steps is None else max_steps))
    for warning in caught:  # what is not the stop of a world is passed on as it was
        if not issubclass(warning.category, PartialTrajectoryWarning):
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    stopped = [(i, world) for i, world in enumerate(worlds) if not world.completed]
    if stopped:
        listed = "; ".join(f"world {i}: {world.message}" for i, world in stopped[:3])
        more = f"; and {len(stopped) - 3} more" if len(stopped) > 3 else ""
        warnings.warn(f"{scene.name}: {len(stopped)} of {B} worlds stopped early ({listed}{more})",
                      PartialTrajectoryWarning, stacklevel=2)
    return BatchTrajectory.from_worlds(worlds, steps, values)


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
    system = copy.deepcopy(scene.system)
    if values:
        system = system.with_parameters({name: float(column[i]) for name, column in values.items()})
    return dataclasses.replace(scene, system=system, q0=scene.q0 if Q0 is None else Q0[i],
                               v0=scene.v0 if V0 is None else V0[i])


def _planned_steps(traj: Trajectory, budget: int | None) -> int:
    """The steps a world was asked for (its duration over its step), taken or not."""
    return max(len(traj.steps), plan_steps(float(traj.info["dt"]), float(traj.info["duration"]), budget))
