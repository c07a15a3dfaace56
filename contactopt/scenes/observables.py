"""Observables: the numbers a scene is about, with their reference values.

A scene file declares them in an ``[observables]`` table, one sub-table per observable,
plus an optional ``[observables.define]`` table of named quantities::

    [observables.define]
    g = "-system.gravity[2]"

    [observables.stop_distance]
    kind = "stop_distance"                # what is measured (observable_kinds.KINDS)
    coordinate = "box.x"                  # a name of q (or of v for final_velocity)
    reference = "v0[0]^2 / (2 * mu * g)"  # optional: a number or an expression (contactopt.scenes.expressions)
    error = "relative"                    # or "absolute" (the default for a zero reference is an error)
    tolerance = 0.01                      # within tolerance: |error| <= tolerance (default 0.01 relative)
    description = "Coulomb: v0^2 / (2 mu g)"

Keys of every observable: ``kind`` (required), ``coordinate`` (required by the kinds that
measure a coordinate), ``reference``, ``error``, ``tolerance`` (required with ``error =
"absolute"``), ``unit`` (default: the kind's, or the coordinate's from its name),
``description``; and the kind's own keys: ``threshold`` and ``velocity`` (stop_time,
stop_distance; contact_time takes ``threshold``), ``index`` and ``offset`` (apex_height,
apex_ratio), ``window`` (steady_penetration), ``expression`` (drift, over ``q``, ``v``, ``t``).

The names an expression may use (:func:`scene_namespace`): the system's parameters (``m``,
``g``, ``l``, ...), ``mu`` and ``restitution``, ``gravity`` and ``g = |gravity|`` for systems with
a gravity vector, ``q0``, ``v0`` (the initial state), ``dt`` and ``duration`` (the scene's
defaults), ``h`` and ``T`` (the step and duration of the run being measured), the file's tables
``scene``, ``system``, ``contact``, ``initial``, ``options`` (``system.bodies.box.mass``) and the
``define`` names. Everything is checked when the scene loads: an unknown key, kind, coordinate
or name, or a reference that is not a finite number, is one error naming the file and the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contactopt.core.errors import SceneError
from contactopt.records.trajectory import Trajectory
from contactopt.scenes import expressions
from contactopt.scenes.observable_kinds import KINDS, coordinate_unit
from contactopt.systems.base import System

__all__ = ["COMMON_KEYS", "Observable", "parse_observables", "scene_namespace"]

#: The keys every observable takes (its kind adds its own: observable_kinds.KINDS).
COMMON_KEYS = frozenset({"kind", "coordinate", "reference", "error", "tolerance", "unit", "description"})
_RUN_NAMES = ("h", "T")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TOLERANCE = 0.01
DEFAULT_THRESHOLD = {"stop_time": 1e-3, "stop_distance": 1e-3, "contact_time": 1e-12}


@dataclass(frozen=True)
class Observable:
    """One declared observable (see the module docstring). ``settings`` holds its kind's keys
    as written; ``namespace`` the scene's names for its expressions."""

    name: str
    kind: str
    coordinate: str | None
    reference: str | float | None
    error: str
    tolerance: float
    unit: str
    description: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    namespace: Mapping[str, Any] = field(default_factory=dict, repr=False)
    q_names: tuple[str, ...] = field(default=(), repr=False)
    v_names: tuple[str, ...] = field(default=(), repr=False)

    def names(self, h: float, T: float) -> dict[str, Any]:
        return {**self.namespace, "h": float(h), "T": float(T)}

    def reference_value(self, h: float, T: float) -> float:
        """The reference for a run with step ``h`` and duration ``T`` (NaN if none; inf or NaN
        where the expression is undefined for the scene's parameters, e.g. ``v0 / (mu g)`` with
        ``mu = 0``: :meth:`reference_note` says why, and no error is computed against it)."""
        if self.reference is None:
            return math.nan
        try:
            return _number(expressions.evaluate(self.reference, self.names(h, T)), "reference")
        except expressions.ExpressionError as exc:
            if isinstance(exc.__cause__, ZeroDivisionError):  # 1 / mu with mu = 0: undefined here
                return math.nan
            raise

    def reference_note(self, h: float, T: float) -> str | None:
        """Why the reference is not a finite number (None when it is, or there is none):
        ``reference 'v0[0] / (mu * g)' is inf: undefined for mu = 0``."""
        value = self.reference_value(h, T)
        if self.reference is None or math.isfinite(value):
            return None
        text = str(self.reference)
        names = self.names(h, T)
        scalars = {name: float(names[name]) for name in sorted(expressions.names_used(text)) if name in names
                   and isinstance(names[name], int | float | np.number) and not isinstance(names[name], bool)}
        culprits = {k: v for k, v in scalars.items() if v == 0 or not math.isfinite(v)} or scalars
        where = ", ".join(f"{k} = {v:g}" for k, v in culprits.items())
        return f"reference {text!r} is {value}: undefined" + (f" for {where}" if where else "")

    def measure(self, traj: Trajectory, run: Mapping[str, Any], h: float, T: float) -> float:
        """The observable's value on ``traj`` (``run``: the run's metrics, for the kinds that
        read them)."""
        return KINDS[self.kind].measure(traj, self._resolved(h, T), run)

    def compare(self, value: float, reference: float) -> tuple[float, bool]:
        """``(error, within tolerance)``: relative ``(value - reference) / |reference|`` or
        absolute ``value - reference``; NaN and False without a value or a reference."""
        if not (math.isfinite(value) and math.isfinite(reference)):
            return math.nan, False
        error = value - reference if self.error == "absolute" else (value - reference) / abs(reference)
        return error, bool(abs(error) <= self.tolerance)

    def _resolved(self, h: float, T: float) -> dict[str, Any]:
        names = self.names(h, T)
        threshold = self.settings.get("threshold", DEFAULT_THRESHOLD.get(self.kind, 0.0))
        out: dict[str, Any] = {"threshold": float(threshold),
                               "window": float(self.settings.get("window", 0.2)),
                               "index": int(self.settings.get("index", 1 if self.kind == "apex_height" else 2))}
        out["offset"] = _finite(expressions.evaluate(self.settings.get("offset", 0.0), names), "offset")
        if self.coordinate is not None:
            space = "v" if KINDS[self.kind].coordinate == "v" else "q"
            out["space"] = space
            out["index_of_coordinate"] = (self.v_names if space == "v" else self.q_names).index(self.coordinate)
        velocity = self.settings.get("velocity")
        out["velocity_index"] = None if velocity is None else self.v_names.index(velocity)
        if "expression" in self.settings:
            text = self.settings["expression"]
            out["function"] = lambda q, v, t: _finite(expressions.evaluate(
                text, {**names, "q": np.asarray(q), "v": np.asarray(v), "t": t}), "expression")
        return out


def _number(value: Any, what: str) -> float:
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise expressions.ExpressionError(f"{what} is not a number: {value!r}")
    return float(value)


def _finite(value: Any, what: str) -> float:
    value = _number(value, what)
    if not math.isfinite(value):
        raise expressions.ExpressionError(f"{what} is {value}, not a finite number")
    return value


def scene_namespace(data: Mapping[str, Any], system: System, q0: np.ndarray, v0: np.ndarray,
                    dt: float, duration: float) -> dict[str, Any]:
    """The names a scene's expressions see (module docstring), without ``define``, ``h``, ``T``."""
    names: dict[str, Any] = {key: data.get(key, {}) for key in ("scene", "system", "contact", "initial", "options")}
    names.update(q0=np.array(q0, dtype=np.float64), v0=np.array(v0, dtype=np.float64), dt=float(dt),
                 duration=float(duration), mu=float(system.mu), restitution=float(system.restitution))
    gravity = getattr(system, "gravity", None)
    if gravity is not None:
        names["gravity"] = np.array(gravity, dtype=np.float64)
        names["g"] = float(np.linalg.norm(names["gravity"]))
    names.update({key: float(value) for key, value in system.params.items()})
    return names


def parse_observables(table: Any, data: Mapping[str, Any], system: System, q0: np.ndarray, v0: np.ndarray,
                      dt: float, duration: float, path: Path | str) -> tuple[Observable, ...]:
    """The ``[observables]`` table of a scene file, checked (errors name ``path`` and the key)."""
    if table is None:
        return ()
    if not isinstance(table, Mapping):
        raise SceneError(f"{path}: observables: expected a table of observables")
    names = scene_namespace(data, system, q0, v0, dt, duration)
    defines = table.get("define", {})
    if not isinstance(defines, Mapping):
        raise SceneError(f"{path}: observables.define: expected a table of name = expression")
    for key, value in defines.items():
        where = f"{path}: observables.define.{key}"
        if not _NAME.match(key) or key in names or key in _RUN_NAMES or key in expressions.FUNCTIONS:
            raise SceneError(f"{where}: not a new name (it must be an identifier that is not a scene "
                             f"name, h, T or a function)")
        try:
            names[key] = _finite(expressions.evaluate(value, {**names, "h": dt, "T": duration}), "the value")
        except expressions.ExpressionError as exc:
            raise SceneError(f"{where}: {exc}") from exc
    return tuple(_parse_one(name, spec, names, system, dt, duration, path)
                 for name, spec in table.items() if name != "define")


def _parse_one(name: str, spec: Any, names: dict[str, Any], system: System, dt: float, duration: float,
               path: Path | str) -> Observable:
    where = f"{path}: observables.{name}"
    if not _NAME.match(name):
        raise SceneError(f"{where}: an observable's name must be an identifier (letters, digits, _)")
    if not isinstance(spec, Mapping):
        raise SceneError(f"{where}: expected a table with at least kind = \"...\"")
    kind_name = spec.get("kind")
    if kind_name not in KINDS:
        raise SceneError(f"{where}.kind: {'missing' if kind_name is None else f'unknown kind {kind_name!r}'}; "
                         f"kinds: {', '.join(KINDS)}")
    kind = KINDS[kind_name]
    unknown = sorted(set(spec) - COMMON_KEYS - kind.keys)
    if unknown:
        raise SceneError(f"{where}: unknown key {unknown[0]!r} for kind {kind_name!r} (keys: "
                         f"{', '.join(sorted(COMMON_KEYS | kind.keys))})")
    coordinate = spec.get("coordinate")
    choices: Sequence[str] = system.v_names if kind.coordinate == "v" else system.q_names
    if kind.coordinate is None and coordinate is not None:
        raise SceneError(f"{where}.coordinate: kind {kind_name!r} takes no coordinate")
    if kind.coordinate is not None and coordinate not in choices:
        raise SceneError(f"{where}.coordinate: {'missing' if coordinate is None else f'unknown {coordinate!r}'}"
                         f" (one of {', '.join(choices)})")
    if spec.get("velocity") is not None and spec["velocity"] not in system.v_names:
        raise SceneError(f"{where}.velocity: unknown {spec['velocity']!r} (one of {', '.join(system.v_names)})")
    error = spec.get("error", "relative")
    if error not in ("relative", "absolute"):
        raise SceneError(f"{where}.error: must be \"relative\" or \"absolute\", got {error!r}")
    if error == "absolute" and "tolerance" not in spec:
        raise SceneError(f"{where}.tolerance: required with error = \"absolute\" (in the observable's unit)")
    tolerance = spec.get("tolerance", DEFAULT_TOLERANCE)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not tolerance > 0:
        raise SceneError(f"{where}.tolerance: must be a positive number, got {tolerance!r}")
    for key in ("unit", "description"):
        if not isinstance(spec.get(key, ""), str):
            raise SceneError(f"{where}.{key}: must be a string")
    _check_settings(where, kind_name, spec)
    unit = spec.get("unit", kind.unit if kind.unit is not None else coordinate_unit(str(coordinate)))
    observable = Observable(
        name=name, kind=kind_name, coordinate=coordinate, reference=spec.get("reference"), error=error,
        tolerance=float(tolerance), unit=unit, description=spec.get("description", kind.description),
        settings={k: spec[k] for k in kind.keys if k in spec}, namespace=names,
        q_names=tuple(system.q_names), v_names=tuple(system.v_names))
    for key in ("reference", "offset"):  # evaluate now: an unknown name is a load-time error
        try:
            if key == "reference" and observable.reference is not None:
                value = observable.reference_value(dt, duration)
                if error == "relative" and value == 0:
                    raise expressions.ExpressionError(
                        "the reference is 0: a relative error is undefined; use error = \"absolute\" "
                        "with a tolerance")
            elif key == "offset":
                observable._resolved(dt, duration)
        except (expressions.ExpressionError, ValueError) as exc:
            raise SceneError(f"{where}.{key}: {exc}") from exc
    if "expression" in observable.settings:
        try:
            observable._resolved(dt, duration)["function"](names["q0"], names["v0"], 0.0)
        except expressions.ExpressionError as exc:
            raise SceneError(f"{where}.expression: {exc}") from exc
    return observable


def _check_settings(where: str, kind: str, spec: Mapping[str, Any]) -> None:
    for key in ("threshold", "window"):
        if key in spec:
            value = spec[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or (
                    key == "window" and value > 1):
                raise SceneError(f"{where}.{key}: must be a positive number{' <= 1' if key == 'window' else ''}, "
                                 f"got {value!r}")
    if "index" in spec:
        lowest = 2 if kind == "apex_ratio" else 1
        if isinstance(spec["index"], bool) or not isinstance(spec["index"], int) or spec["index"] < lowest:
            raise SceneError(f"{where}.index: must be an integer >= {lowest}, got {spec['index']!r}")
    for key in ("reference", "offset", "expression"):
        if key in spec and (not isinstance(spec[key], str | int | float) or isinstance(spec[key], bool)):
            raise SceneError(f"{where}.{key}: must be a number or an expression string")
    if kind == "drift" and "expression" not in spec:
        raise SceneError(f"{where}.expression: required for kind 'drift' (a function of q, v, t)")
