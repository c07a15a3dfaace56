"""dm-control's control-suite models, loaded straight from the installed package.

A scene names one as ``file = "dm_control:NAME"`` (``[system] type = "mjcf"``); it resolves to
``dm_control/suite/NAME.xml`` of the installed ``dm-control`` (its ``common/`` assets are
included relative to that file), so no copy of the suite's XML lives in this repository.
``pip install "contactopt[robots]"`` brings the package. The package is located without
importing it (``importlib.util.find_spec``), so listing scenes stays fast.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from contactopt.systems.base import ParameterError

__all__ = ["INSTALL_HINT", "SUITE_PREFIX", "available", "suite_dir", "suite_models", "suite_path"]

SUITE_PREFIX = "dm_control:"
INSTALL_HINT = "pip install 'contactopt[robots]' (brings dm-control)"


def suite_dir() -> Path | None:
    """``dm_control/suite`` of the installed package, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("dm_control")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "suite"
    return folder if folder.is_dir() else None


def available() -> bool:
    return suite_dir() is not None


def suite_models() -> list[str]:
    """The suite's model names (``NAME`` of ``NAME.xml``); empty without the package."""
    folder = suite_dir()
    return sorted(path.stem for path in folder.glob("*.xml")) if folder else []


def suite_path(name: str) -> Path:
    """``dm_control:NAME`` (or ``NAME``) -> the installed XML; a :class:`ParameterError` on
    ``system.file`` when the package or the model is missing."""
    model = name.removeprefix(SUITE_PREFIX)
    folder = suite_dir()
    if folder is None:
        raise ParameterError("system.file", f"system.file: {name!r} needs the dm-control package: {INSTALL_HINT}")
    path = folder / f"{model}.xml"
    if not model or "/" in model or not path.is_file():
        raise ParameterError("system.file", f"system.file: no dm-control suite model {model!r} "
                             f"(known: {', '.join(suite_models())})")
    return path
