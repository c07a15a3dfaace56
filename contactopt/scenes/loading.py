"""Scene files (TOML) -> :class:`Scene`, with errors that name the file and the key.

Shape of a scene file (every table rejects unknown keys)::

    [scene]                     # name, dt (required), duration (required), formulation, solver, description,
                                # max_steps (the step budget; default 10**6, contactopt.core.budgets)
    [system]                    # type (required, a registered system type) and the keys
                                # that type declares (``config_keys``, e.g. bodies, gravity)
    [system.parameters]         # the type's parameters (see ``contactopt list systems``)
    [initial]                   # q (nq numbers), v (nv numbers, default zeros); optional for
                                # types whose description implies a state (rigid3d bodies)
    [contact]                   # mu (default 0; inf allowed), restitution (default 0)
    [options]                   # formulation options, e.g. form = "dual"
    [solver_options]            # passed to the solver backend
    [control]                   # the input u(t, q, v): constant, pd, sinusoid or python
                                # (:mod:`contactopt.scenes.control`)

An MJCF scene may name a dm-control suite model instead of a file: ``file = "dm_control:hopper"``
(:mod:`contactopt.systems.mjcf.suite`; the ``robots`` extra).
    [observables]               # what the scene is about, with references (contactopt.scenes.observables)
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt import integrators, solvers, systems
from contactopt.core import display
from contactopt.core.arguments import refuse
from contactopt.core.budgets import check_max_steps
from contactopt.core.errors import ContactoptError, SceneError
from contactopt.core.outputs import unsafe_name_reason
from contactopt.scenes.control import ControlSpec, parse_control
from contactopt.scenes.observables import Observable, parse_observables
from contactopt.systems import validation as validate
from contactopt.systems.base import ParameterError, System
from contactopt.systems.mjcf.suite import SUITE_PREFIX, suite_path

FloatArray = NDArray[np.float64]

__all__ = ["INITIAL_KEYS", "SCENE_KEYS", "SCENE_TABLES", "Scene", "find_problem", "load_scene", "problems_dir"]

#: The tables a scene file may hold, the keys of its [scene] and [initial] tables.
SCENE_TABLES = {"scene", "system", "initial", "contact", "options", "solver_options", "control", "observables"}
SCENE_KEYS = {"name", "dt", "duration", "formulation", "solver", "description", "max_steps"}
INITIAL_KEYS = {"q", "v"}


@dataclass(frozen=True)
class Scene:
    """A system, its initial state and run defaults.

    ``dataclasses.replace(scene, q0=..., v0=...)`` gives a new scene.

    Attributes:
        system: the system to simulate.
        q0: (nq,) initial configuration; v0: (nv,) initial velocity.
        dt: default step; duration: default simulated time.
        formulation, solver: defaults for :func:`contactopt.simulation.simulate`.
        options: formulation options; solver_options: solver options.
        name, description: for tables and plots; source: the file it came from.
        control: the scene's ``[control]`` table (None: no input), the default controller of
            :func:`contactopt.simulation.simulate`.
        observables: what the scene is about, with reference values (:mod:`contactopt.scenes.observables`).
        max_steps: the step budget of its runs (None: :data:`contactopt.core.budgets.DEFAULT_MAX_STEPS`).
    """

    system: System
    q0: FloatArray
    v0: FloatArray
    dt: float
    duration: float
    formulation: str = "gauss"
    solver: str = "clarabel"
    options: Mapping[str, Any] = field(default_factory=dict)
    solver_options: Mapping[str, Any] = field(default_factory=dict)
    name: str = "scene"
    description: str = ""
    source: Path | None = None
    control: ControlSpec | None = None
    observables: tuple[Observable, ...] = ()
    max_steps: int | None = None

    def __post_init__(self) -> None:
        where = f"scene {self.name!r}"
        for attr, length in (("q0", self.system.nq), ("v0", self.system.nv)):
            arr = np.array(getattr(self, attr), dtype=np.float64).reshape(-1)
            if arr.shape[0] != length:
                raise SceneError(f"{where}: {attr} has length {arr.shape[0]}, the "
                                 f"{self.system.type_name} system needs {length}")
            if not np.all(np.isfinite(arr)):
                raise SceneError(f"{where}: {attr} contains NaN or infinite values: {arr}")
            arr.setflags(write=False)
            object.__setattr__(self, attr, arr)
        if not (math.isfinite(self.dt) and self.dt > 0):
            raise SceneError(f"{where}: dt must be a positive number, got {self.dt}")
        if not (math.isfinite(self.duration) and self.duration > 0):
            raise SceneError(f"{where}: duration must be a positive number, got {self.duration}")
        if self.max_steps is not None:
            object.__setattr__(self, "max_steps", check_max_steps(self.max_steps, f"{where}: max_steps"))


    def __repr__(self) -> str:
        """One line: name, system and sizes, step, duration, defaults (:mod:`contactopt.core.display`)."""
        return display.scene_text(self)

    def _repr_html_(self) -> str:
        """Jupyter: a table of the system, its coordinates, the run defaults and observables."""
        return display.scene_html(self)


def problems_dir() -> Path:
    """Where the bundled scene files live: $CONTACTOPT_PROBLEMS, ./problems, or the repo's."""
    env = os.environ.get("CONTACTOPT_PROBLEMS")
    if env:
        return Path(env)
    local = Path.cwd() / "problems"
    if local.is_dir():
        return local
    return Path(__file__).resolve().parents[2] / "problems"  # contactopt/scenes/loading.py -> the repository


def find_problem(name_or_path: str | Path) -> Path:
    """A path as given if it exists, else ``problems_dir()/NAME.toml``."""
    path = Path(name_or_path)
    if path.exists():
        return path
    candidate = problems_dir() / (path.name if path.suffix else f"{path.name}.toml")
    return candidate if candidate.exists() else path


def load_scene(path: str | Path, keyframe: str | None = None,
               system_options: Mapping[str, Any] | None = None) -> Scene:
    """Load and validate a TOML scene or an MJCF file; errors name the file and the offending
    key. ``keyframe``: the MJCF keyframe to start from (overrides ``[system] keyframe``; an
    error for a scene of another system). ``system_options``: keys of the ``[system]`` table
    that override the file's (the CLI's ``--system-option KEY=VALUE``), validated as the file's
    own keys are (an unknown key is one error naming it and the known ones); ``type`` is the
    file's, and a ``file`` given here is relative to the working directory."""
    path = find_problem(path)
    if not path.exists():
        raise SceneError(f"{path}: no such scene file (bundled scenes are in {problems_dir()})")
    regular_file(path, "scene file")
    overrides = _system_overrides(path, keyframe, system_options)
    if path.suffix.lower() == ".xml":
        return _mjcf_scene(path, overrides)
    if path.suffix.lower() == ".urdf":
        return _mjcf_scene(path, overrides, "urdf")
    if path.suffix.lower() != ".toml":
        raise SceneError(f"{path}: unsupported scene format {path.suffix!r} (expected .toml, an MJCF .xml or a "
                         ".urdf)")
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SceneError(f"{path}: invalid TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib parses nested arrays and inline tables recursively
        raise SceneError(f"{path}: invalid TOML: arrays or inline tables nested too deep (a scene needs a few "
                         "levels)") from exc
    except OSError as exc:  # a folder, no permission
        raise SceneError(f"{path}: cannot read the scene file: {exc}") from exc
    if overrides:
        system_table = data.get("system")
        if keyframe is not None and (not isinstance(system_table, dict) or system_table.get("type") != "mjcf"):
            raise SceneError(f"{path}: --keyframe {keyframe!r}: only an MJCF scene has keyframes")
        if isinstance(system_table, dict):
            data = {**data, "system": {**system_table, **overrides}}
    try:
        return _parse(data, path)
    except ParameterError as exc:
        raise SceneError(f"{path}: {exc}") from exc
    except SceneError:
        raise
    except ContactoptError as exc:
        raise SceneError(f"{path}: {exc}") from exc


def regular_file(path: Path, what: str) -> None:
    """Refuse, naming it, a ``path`` that is not a regular file (a FIFO or a device would block
    the read or never end; a folder cannot be read), before it is opened."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise SceneError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from exc
    if stat.S_ISREG(mode):
        return
    kind = ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    raise SceneError(f"{path}: the {what} is {kind}; expected a regular .toml or MJCF .xml file")


def _system_overrides(path: Path, keyframe: str | None, system_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``[system]`` keys given besides the file (``--system-option``, ``--keyframe``)."""
    overrides = dict(system_options or {})
    if "type" in overrides:
        raise SceneError(f"{path}: --system-option type: the system type is the scene file's")
    if isinstance(overrides.get("file"), str) and not overrides["file"].startswith(SUITE_PREFIX):
        overrides["file"] = str(Path(overrides["file"]).resolve())  # relative to the working directory
    if keyframe is not None:
        overrides["keyframe"] = keyframe
    return overrides


def _scene_name(meta: dict[str, Any], path: Path) -> str:
    """``scene.name``, which becomes part of output paths (``runs/NAME-...``): one safe file-name
    component, so that no scene file can make a run write outside its output folder."""
    name = validate.string(meta.get("name", path.stem), "scene.name")
    reason = unsafe_name_reason(name)
    if reason is not None:
        raise SceneError(f"{path}: scene.name: {name!r} cannot name output files: {reason}")
    return name


#: Defaults of a scene made directly from an MJCF file (``contactopt run model.xml``).
MJCF_DURATION, MJCF_FORMULATION, MJCF_SOLVER = 1.0, "regularized", "clarabel"


#: The step of a URDF robot's scene on a backend without MuJoCo's own timestep (MuJoCo's default).
URDF_DT = 0.002


def _mjcf_scene(path: Path, overrides: Mapping[str, Any] | None = None, kind: str = "mjcf") -> Scene:
    """A scene straight from an MJCF file (``kind = "urdf"``: a URDF file, on its default backend,
    pinocchio where Pinocchio is installed, :func:`contactopt.systems.mjcf.urdf.default_backend`):
    MuJoCo's initial state (or the keyframe, 0 by default, with its ``ctrl`` held), its
    ``opt.timestep`` as dt, 1 s of simulated time, MuJoCo's own formulation by default;
    ``overrides``: ``[system]`` keys (:func:`load_scene`)."""
    config = {"file": str(path), **(overrides or {})}
    system_cls = systems.get(kind)
    try:
        validate.reject_unknown(config, system_cls.config_keys, "system")
        system = system_cls.from_config(config, {})
    except ParameterError as exc:
        raise SceneError(f"{path}: {exc}") from exc
    except ContactoptError as exc:
        raise SceneError(f"{path}: {exc}") from exc
    from contactopt.systems.mjcf.system import MjcfSystem

    # MuJoCo's opt.timestep; a URDF robot on the pinocchio backend takes MuJoCo's default, 2 ms,
    # so that both backends of one URDF step alike
    dt = float(system.model.opt.timestep) if isinstance(system, MjcfSystem) else URDF_DT
    state = system.default_state()
    if state is None:  # every MJCF and URDF system has one (MuJoCo's qpos0, or its keyframe)
        raise SceneError(f"{path}: the {system.type_name} system gives no initial state")
    q0, v0 = state
    return Scene(system=system, q0=q0, v0=v0, dt=dt, duration=MJCF_DURATION,
                 formulation=MJCF_FORMULATION, solver=MJCF_SOLVER, name=path.stem,
                 description=f"{'URDF robot' if kind == 'urdf' else 'MJCF model'} {path.name}", source=path,
                 control=_held_control(system))


def _held_control(system: System) -> ControlSpec | None:
    """The control a scene without ``[control]`` holds: an MJCF keyframe's ``ctrl``
    (:mod:`contactopt.systems.mjcf.keyframes`), else none."""
    default_control = getattr(system, "default_control", None)
    ctrl = default_control() if callable(default_control) else None
    return None if ctrl is None else ControlSpec("constant", {"u": tuple(float(x) for x in ctrl)})


def _initial(initial: Mapping[str, Any], key: str, system: System, default: FloatArray | None) -> FloatArray:
    """``initial.q`` / ``initial.v``: ``nq`` / ``nv`` numbers (``default`` if absent)."""
    names = system.q_names if key == "q" else system.v_names
    if key not in initial:
        if default is None:
            raise ParameterError(f"initial.{key}", f"missing key 'initial.{key}' ({len(names)} numbers: "
                                 f"{', '.join(names)})")
        return default
    return validate.vector(initial[key], f"initial.{key}", len(names), f" for the {system.type_name} system")


def _scene_number(meta: Mapping[str, Any], key: str, *, positive: bool) -> float:
    if key not in meta:
        raise ParameterError(f"scene.{key}", f"missing key 'scene.{key}'")
    return validate.number(meta[key], f"scene.{key}", positive=positive, nonnegative=True)


def _parse(data: Mapping[str, Any], path: Path) -> Scene:
    validate.reject_unknown(data, SCENE_TABLES)
    meta = validate.table(data, "scene", required=True)
    validate.reject_unknown(meta, SCENE_KEYS, "scene")
    system_table = validate.table(data, "system", required=True)
    if "type" not in system_table:
        raise SceneError(f"{path}: missing key 'system.type' (known types: {', '.join(systems.names())})")
    type_name = system_table["type"]
    if not isinstance(type_name, str) or type_name not in systems.names():
        raise SceneError(f"{path}: system.type: unknown system type {type_name!r} "
                         f"(known types: {', '.join(systems.names())})")
    system_cls = systems.get(type_name)
    validate.reject_unknown(system_table, {"type", *system_cls.config_keys}, "system")
    config = {key: value for key, value in system_table.items() if key != "type"}
    if isinstance(config.get("file"), str) and config["file"].startswith(SUITE_PREFIX):
        config["file"] = str(suite_path(config["file"]))
    elif isinstance(config.get("file"), str):  # files named by a scene are relative to it
        config["file"] = str((path.parent / config["file"]).resolve())
    contact = validate.table(data, "contact")
    system = system_cls.from_config(config, contact)

    implied = system.default_state()
    initial = validate.table(data, "initial", required=implied is None)
    validate.reject_unknown(initial, INITIAL_KEYS, "initial")
    q0 = _initial(initial, "q", system, None if implied is None else implied[0])
    v0 = _initial(initial, "v", system, np.zeros(system.nv) if implied is None else implied[1])

    formulation = validate.string(meta.get("formulation", "gauss"), "scene.formulation")
    solver = validate.string(meta.get("solver", "clarabel"), "scene.solver")
    if formulation.strip().lower() not in integrators.names():
        raise SceneError(f"{path}: scene.formulation: unknown formulation {formulation!r}; "
                         f"known formulations: {', '.join(integrators.names())}")
    try:
        solvers.parse_name(solver)
    except ContactoptError as exc:
        raise SceneError(f"{path}: scene.solver: {exc}") from exc
    options = validate.table(data, "options")
    try:  # the method validates its own options (and solver name where it needs one)
        integrators.make_stepper(system, formulation, solver if solver else "clarabel", 1.0, options)
    except ContactoptError as exc:
        raise SceneError(f"{path}: options: {exc}") from exc

    scene = Scene(
        system=system, q0=q0, v0=v0,
        dt=_scene_number(meta, "dt", positive=True),
        duration=_scene_number(meta, "duration", positive=True),
        formulation=formulation, solver=solver, options=options,
        solver_options=validate.table(data, "solver_options"),
        name=_scene_name(meta, path),
        description=validate.string(meta.get("description", ""), "scene.description"), source=path,
        max_steps=check_max_steps(meta["max_steps"], "scene.max_steps") if "max_steps" in meta else None,
        control=(parse_control(validate.table(data, "control"), system, path.parent)
                 if "control" in data else _held_control(system)),
    )
    observables = parse_observables(data.get("observables"), data, system, scene.q0, scene.v0, scene.dt,
                                    scene.duration, path)
    return dataclasses.replace(scene, observables=observables) if observables else scene


def as_scene(value: Any, function: str) -> Scene:
    """A :class:`~contactopt.scenes.loading.Scene`, or a scene file path or bundled problem name, loaded."""
    if isinstance(value, Scene):
        return value
    if isinstance(value, str | Path):
        return load_scene(value)
    raise refuse(function, "scene", value, "a Scene (co.load_scene(...)), a scene file path or a bundled "
                  "problem name such as 'cart_wall'")
