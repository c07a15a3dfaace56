"""Pieces shared by the subcommands: the parser class and KEY=VALUE option parsing."""

from __future__ import annotations

import argparse
import math
import tomllib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from contactopt.core.errors import OptionError
from contactopt.scenes.loading import load_scene

if TYPE_CHECKING:
    from contactopt.scenes.loading import Scene


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"contactopt: error: {message} (see '{self.prog} --help')\n")


def positive_float(text: str) -> float:
    """argparse type of ``--dt`` and ``--duration``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _parse_option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise OptionError(f"option {text!r}: expected KEY=VALUE")
    try:  # TOML syntax for the value: 4, 1e-3, true, "dual", [1, 2]
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def _options(items: Sequence[str] | None, flag: str = "option") -> dict[str, Any]:
    """The ``KEY=VALUE`` items of a repeatable flag as a dict; a key given twice (``-o form=dual
    -o form=primal``) is one :class:`OptionError` naming the key and both items, never the last
    one taken silently."""
    options: dict[str, Any] = {}
    first: dict[str, str] = {}
    for item in items or []:
        key, value = _parse_option(item)
        if key in options:
            raise OptionError(f"{flag} {key!r} given twice ({first[key]!r}, then {item!r}): give each key once")
        options[key], first[key] = value, item
    return options


def formulation_options(items: Sequence[str] | None, scene: Scene) -> dict[str, Any]:
    """The ``-o KEY=VALUE`` options of a run; a key of the scene's ``[system]`` table (e.g. an
    MJCF model's ``extra_friction``) is refused with the flag that sets it, ``--system-option``."""
    options = _options(items, "-o")
    system_keys = sorted(set(options) & (set(type(scene.system).config_keys) - {"parameters"}))
    if system_keys:
        given = " ".join(f"--system-option {key}=..." for key in system_keys)
        raise OptionError(f"-o {', '.join(system_keys)}: a key of the scene's [system] table, not a formulation "
                          f"option; give it as {given}")
    return options


def add_max_steps_argument(parser: argparse.ArgumentParser) -> None:
    """``--max-steps N``: the step budget of the runs (contactopt.core.budgets; default 10**6)."""
    parser.add_argument("--max-steps", type=int, metavar="N",
                        help="refuse runs of more than N steps (duration / dt) before starting (default: the "
                        "scene's max_steps, else 1000000)")


def add_keyframe_argument(parser: argparse.ArgumentParser) -> None:
    """``--keyframe NAME``: the MJCF keyframe a scene starts from, its ``ctrl`` held
    (contactopt.systems.mjcf.keyframes; default: keyframe 0 when the model has one), and
    ``--system-option KEY=VALUE``: any key of the scene's ``[system]`` table (:func:`load_scene_of`)."""
    parser.add_argument("--keyframe", metavar="NAME",
                        help="MJCF scenes: start from this keyframe, holding its ctrl (default: keyframe 0 "
                        "when the model has one, or the scene's [system] keyframe)")
    parser.add_argument("--system-option", action="append", metavar="KEY=VALUE",
                        help="set a key of the scene's [system] table, repeatable, validated as in the file "
                        "(e.g. detection_margin=0.01, keyframe=\"home\", extra_friction=\"sliding\")")


def load_scene_of(target: str, args: argparse.Namespace) -> Scene:
    """The scene ``target`` with the ``--keyframe`` and ``--system-option`` values of ``args``
    (:func:`contactopt.scenes.loading.load_scene`, which validates them as the file's own keys)."""
    return load_scene(target, keyframe=args.keyframe, system_options=_options(args.system_option, "--system-option"))


def with_max_steps(scene: Scene, max_steps: int | None) -> Scene:
    """``scene`` with the step budget ``--max-steps`` gave (unchanged when not given)."""
    import dataclasses

    return scene if max_steps is None else dataclasses.replace(scene, max_steps=max_steps)
