"""The scene-file reference, written from the validators themselves (so it cannot drift from
what :func:`contactopt.load_scene` accepts): every table and key, every system type with its
``[system]`` keys and parameters, the body keys of ``rigid3d``, the ``[control]`` laws, every
observable kind with its keys, the formulation options and the names and functions an
expression may use.

``python -m contactopt.scenes.reference`` prints it; the documentation build writes it to the
page ``scene-reference.md`` (``docs/hooks.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from contactopt import integrators, systems
from contactopt.scenes import expressions
from contactopt.scenes.control import CONTROL_KEYS
from contactopt.scenes.loading import INITIAL_KEYS, SCENE_KEYS, SCENE_TABLES
from contactopt.scenes.observable_kinds import KINDS
from contactopt.scenes.observables import COMMON_KEYS
from contactopt.systems.base import CONTACT_PARAMETERS, Parameter
from contactopt.systems.rigid3d_bodies import BODY_KEYS, SHAPES

__all__ = ["scene_reference"]

#: What each table is for (a table missing here is still listed, marked undocumented).
TABLE_DOCS: dict[str, str] = {
    "scene": "name, step, duration and the run defaults",
    "system": "the system type and its own keys",
    "initial": "the initial state (optional where the system's description implies one, as rigid3d bodies)",
    "contact": "contact parameters every system takes (not MJCF: its friction comes from the geoms)",
    "options": "options of the formulation (or other method) that `formulation` names: see below",
    "solver_options": "passed to the solver backend, which checks them (an unknown key names the known ones)",
    "control": "the input u(t, q, v) held over each step (contactopt.scenes.control)",
    "observables": "what the scene is about, one sub-table per observable, plus [observables.define]",
}
SCENE_KEY_DOCS: dict[str, str] = {
    "name": "the scene's name (default: the file name); one safe file-name component",
    "dt": "time step [s], > 0 (required)",
    "duration": "simulated time [s], > 0 (required)",
    "formulation": "default formulation or method (default `gauss`)",
    "solver": "default solver (default `clarabel`; `name:VARIANT` for cvxpy and qpsolvers)",
    "description": "one line for tables and reports",
    "max_steps": "step budget of a run (default 10^6: contactopt.core.budgets)",
}
INITIAL_KEY_DOCS: dict[str, str] = {
    "q": "the configuration, nq numbers (the system's q names, in order)",
    "v": "the generalized velocity, nv numbers (default zeros)",
}
#: The ``[system]`` keys besides ``type`` and ``parameters`` (a system's own).
CONFIG_KEY_DOCS: dict[str, str] = {
    "parameters": "table of the type's parameters (below)",
    "bodies": "list of [[system.bodies]] tables (below), at least one",
    "gravity": "3 numbers [m/s^2], default [0, 0, -9.81]",
    "ground": "true or false: the ground plane (rigid3d: default true; urdf: default false, a plane at z = 0)",
    "floating_base": "urdf: true or false (default false): a free joint on the root link, not a weld to the world",
    "ground_friction": "urdf: the ground plane's friction coefficient (default 1)",
    "package_dirs": "urdf: folders holding the packages of `package://PKG/...` mesh names (relative to the URDF)",
    "backend": "urdf: `pinocchio` (the default where Pinocchio is installed: its CRBA/RNEA, collision primitives and "
                "convex meshes by coal; the urdf extra) or `mujoco` (MuJoCo's URDF compiler: the default, with a "
                "warning, without Pinocchio; needed by the `mujoco` method and `regularized -o params=model`, which "
                "the pinocchio backend refuses naming `--system-option backend=mujoco`); the same coordinates",
    "self_collisions": "urdf: true or false (default true): contacts between the robot's links, not only with the "
                       "ground",
    "srdf": "urdf, pinocchio backend: an SRDF file whose <disable_collisions> pairs are not tested",
    "ground_normal": "3 numbers: the ground plane's normal (normalized; default [0, 0, 1])",
    "ground_point": "3 numbers [m]: a point of the ground plane (default the origin)",
    "box_pairs": "true or false (default true): contacts of the body pairs with a box, from MuJoCo",
    "collision_margin": "m, >= 0: the pairs' collision margin (default half the smaller body's smallest size)",
    "floor": "a number [m]: the height of a floor line (default none: no contacts)",
    "shape": "the body's shape (planar_body: `disk` or `box`)",
    "inertia": "a disk's inertia kind (`hollow`, `solid`, ...)",
    "file": "the MJCF file (mjcf; or `dm_control:NAME`, a suite model) or the URDF file (urdf), relative to the "
            "scene file",
    "detection_margin": "m (default 0: the geoms' own margins, as mj_step): detect MuJoCo's contacts this much farther",
    "extra_friction": "`model` (default) or `sliding`: drop condim 4/6 torsional and rolling rows",
    "keyframe": "the model's keyframe to start from (default keyframe 0, its ctrl held)",
}
BODY_KEY_DOCS: dict[str, str] = {
    "name": "label of the body's coordinates (`box.x`); default `body<i>`",
    "shape": f"one of {', '.join(SHAPES)} (required)",
    "size": "box: half extents [a, b, c] m; sphere: its radius, as r or [r]; cylinder, capsule (soft only, along "
            "the body's z axis): [radius, half length]",
    "radius": "sphere only: the radius [m] (instead of size)",
    "mass": "kg, > 0 (required)",
    "position": "[x, y, z] of the centre of mass, world frame [m] (required)",
    "orientation": "unit quaternion [w, x, y, z], body to world (default [1, 0, 0, 0])",
    "velocity": "[vx, vy, vz] of the centre of mass, world frame [m/s] (default zeros)",
    "angular_velocity": "[wx, wy, wz], world frame [rad/s] (default zeros)",
    "compliance": "`rigid` (default) or `soft` (a pressure field; needs `[contact] model = \"hydroelastic\"`, "
                  "docs/hydroelastic.md)",
    "hydroelastic_modulus": "soft bodies: the pressure field's modulus E [Pa], > 0 (required for them)",
    "hunt_crossley_dissipation": "soft bodies: Hunt-Crossley dissipation of their contact surfaces [s/m], >= 0 "
                                 "(default 0)",
}
COMMON_KEY_DOCS: dict[str, str] = {
    "kind": "what is measured: one of the kinds below (required)",
    "coordinate": "a name of q (of v for final_velocity), for the kinds that measure a coordinate",
    "reference": "a number or an expression (below)",
    "error": "`relative` or `absolute` (the default for a zero reference)",
    "tolerance": "within tolerance: |error| <= tolerance (default 0.01 relative; required with absolute)",
    "unit": "default: the kind's, or the coordinate's from its name",
    "description": "one line for tables and reports",
}
#: The names every expression of a scene may use, besides the system's parameters.
EXPRESSION_NAMES: dict[str, str] = {
    "mu": "the scene's friction coefficient", "restitution": "the scene's coefficient of restitution",
    "gravity": "the gravity vector (systems with one)", "g": "|gravity| (systems with a gravity vector)",
    "q0": "the initial configuration (q0[i])", "v0": "the initial velocity (v0[i])",
    "dt": "the scene's step", "duration": "the scene's duration",
    "h": "the step of the run being measured", "T": "the duration of the run being measured",
    "scene": "the file's [scene] table (scene.dt)", "system": "the file's [system] table "
    "(system.parameters.m, system.gravity[2], system.bodies.box.mass)",
    "contact": "the file's [contact] table", "initial": "the file's [initial] table",
    "options": "the file's [options] table",
    "define": "[observables.define]: NAME = expression, usable by the observables after it",
    "q": "(drift's `expression` only) the configuration at each state", "v": "(drift only) the velocity",
    "t": "(drift only) the time",
}


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _keys(known: Iterable[str], docs: Mapping[str, str]) -> list[str]:
    return _table(["key", "meaning"], [(f"`{key}`", docs.get(key, "(undocumented)")) for key in sorted(known)])


def _bounds(parameter: Parameter) -> str:
    parts = []
    if parameter.minimum is not None:
        parts.append(f"{'>' if parameter.exclusive else '>='} {parameter.minimum:g}")
    if parameter.maximum is not None:
        parts.append(f"<= {parameter.maximum:g}")
    return ", ".join(parts)


def _parameters(parameters: Iterable[Parameter]) -> list[str]:
    rows = [(f"`{p.name}`", p.doc, "required" if p.default is None else f"{p.default:g}", _bounds(p))
            for p in parameters]
    return _table(["parameter", "meaning", "default", "bounds"], rows) if rows else ["No parameters.", ""]


def _option(value: Any) -> str:
    """An option's default as written in a scene file (``inf``, ``none`` for None)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, bool):
        return str(value).lower()
    return "none" if value is None else str(list(value) if isinstance(value, tuple) else value)


def _systems() -> list[str]:
    lines = ["## [system]", "", "`type` (required) names a registered system type; each type takes the keys "
             "listed under it (any other key is an error naming the known ones).", ""]
    for name in systems.names():
        cls = systems.get(name)
        lines += [f"### type = \"{name}\"", "", _cell(cls.description), ""]
        lines += _keys(cls.config_keys, CONFIG_KEY_DOCS)
        if "parameters" in cls.config_keys or cls.parameters:
            lines += [f"`[system.parameters]` of {name}:", "", *_parameters(cls.parameters)]
    lines += ["### [[system.bodies]] (rigid3d)", "",
              "Coordinates per body: `q = [x, y, z, qw, qx, qy, qz]`, `v = [vx, vy, vz, wx, wy, wz]`, velocities "
              "and angular velocity in the **world** frame (an MJCF free joint's angular velocity is MuJoCo's, in "
              "the body frame, named `wx_body, wy_body, wz_body`).", ""]
    return lines + _keys(BODY_KEYS, BODY_KEY_DOCS)


def _control() -> list[str]:
    rows = [(f"`{kind}`", ", ".join(f"`{key}`" + (" (required)" if default is None else f" = {default:g}")
                                    for key, default in keys.items()))
            for kind, keys in CONTROL_KEYS.items()]
    return ["## [control]", "", "`type` picks the law; vectors have one entry per input (a number is used for "
            "every input). See `contactopt.scenes.control` for the laws.", "",
            *_table(["type", "keys (default)"], rows)]


def _observables() -> list[str]:
    lines = ["## [observables]", "", "One sub-table `[observables.NAME]` per observable. Keys of every "
             "observable:", ""]
    lines += _keys(COMMON_KEYS, COMMON_KEY_DOCS)
    lines += ["Kinds, with the keys each adds:", ""]
    rows = [(f"`{name}`", kind.description, {"q": "q name", "v": "v name", None: "none"}[kind.coordinate],
             ", ".join(f"`{key}`" for key in sorted(kind.keys)) or "none",
             kind.unit if kind.unit is not None else "the coordinate's") for name, kind in KINDS.items()]
    return lines + _table(["kind", "measures", "coordinate", "own keys", "unit"], rows)


def _expressions() -> list[str]:
    lines = ["## Expressions", "", "A reference (and a `define`, and drift's `expression`) is a number or a "
             "string parsed by a restricted walker (`contactopt.scenes.expressions`): numbers, `+ - * / ^ **`, "
             "parentheses, `[i]` and `.key` look-ups, and the names and functions below. Nothing else runs.", ""]
    lines += ["Names:", "", *_table(["name", "value"], [(f"`{k}`", v) for k, v in EXPRESSION_NAMES.items()])]
    lines += ["and the system's parameters by name (`m`, `l`, ...).", "", "Constants: "
              + ", ".join(f"`{name}`" for name in expressions.CONSTANTS) + ".", "",
              "Functions: " + ", ".join(f"`{name}`" for name in expressions.FUNCTIONS) + ".", ""]
    return lines


def _options() -> list[str]:
    lines = ["## [options]", "", "The options of the scene's formulation or method, with their defaults (the "
             "CLI's `-o KEY=VALUE`, `simulate(..., options={...})`):", ""]
    rows = []
    for name in integrators.names():
        try:
            description, defaults = integrators.describe(name)
        except Exception as exc:  # a plugin whose description fails: said, not hidden
            description, defaults = f"(cannot describe: {exc})", {}
        rows.append((f"`{name}`", description,
                     ", ".join(f"`{k}` = {_option(v)}" for k, v in defaults.items()) or "none"))
    return lines + _table(["formulation / method", "what it is", "options = default"], rows)


def scene_reference() -> str:
    """The reference as Markdown."""
    lines = ["# Scene-file reference", "",
             "Generated from the validators of `contactopt.load_scene` when the documentation is built "
             "(`python -m contactopt.scenes.reference` prints it). A scene file is TOML; every table rejects "
             "unknown keys with an error naming the file and the key.", "", "## Tables", ""]
    lines += _table(["table", "for"], [(f"`[{t}]`", TABLE_DOCS.get(t, "(undocumented)")) for t in sorted(SCENE_TABLES)])
    lines += ["## [scene]", "", *_keys(SCENE_KEYS, SCENE_KEY_DOCS)]
    lines += _systems()
    lines += ["## [initial]", "", *_keys(INITIAL_KEYS, INITIAL_KEY_DOCS)]
    lines += ["## [contact]", "", *_parameters(CONTACT_PARAMETERS)]
    lines += ["rigid3d scenes also take `model` (`point`, the default, or `hydroelastic`: the soft bodies' contact "
              "surfaces against the ground and the other bodies, docs/hydroelastic.md) and, with it, "
              "`patch_resolution` = [rays, rings] (default [44, 8]) of the surfaces' polygon meshes.", ""]
    lines += _options() + _control() + _observables() + _expressions()
    return "\n".join(lines)


if __name__ == "__main__":
    print(scene_reference())
