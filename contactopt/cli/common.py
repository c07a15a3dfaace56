"""Pieces shared by the subcommands: the parser class and KEY=VALUE option parsing."""

from __future__ import annotations

import argparse
import math
import tomllib
from collections.abc import Sequence
from typing import Any, NoReturn

from contactopt.errors import OptionError


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


def _options(items: Sequence[str] | None) -> dict[str, Any]:
    return dict(_parse_option(item) for item in items or [])
