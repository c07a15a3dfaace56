"""Output paths checked before the work that fills them, and names made safe as path parts.

A run that computes for minutes and then dies on ``PermissionError`` at the first write loses
everything; so every command checks its ``--out`` up front (:func:`writable_folder`,
:func:`writable_file`) and every write that still fails is one :class:`OutputError` line
naming the path and the reason (:func:`output_errors`). Names that become parts of a path (a
scene's name in ``runs/SCENE-...``) are refused or sanitized so that they cannot leave the
output folder (:func:`unsafe_name_reason`, :func:`safe_component`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contactopt.errors import OutputError

__all__ = ["output_errors", "prepared_folder", "safe_component", "unsafe_name_reason", "writable_file",
           "writable_folder"]

_REASONS = {errno.EEXIST: "a file is in the way of the folder", errno.ENOTDIR: "a file is in the way of a folder",
            errno.EISDIR: "it is a folder", errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
            errno.EROFS: "read-only file system", errno.ENOENT: "its parent folder cannot be created",
            errno.ENAMETOOLONG: "the name is too long", errno.ENOSPC: "no space left on the device"}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno in _REASONS:
        culprit = f" ({exc.filename})" if exc.filename else ""
        return _REASONS[exc.errno] + culprit
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


@contextlib.contextmanager
def output_errors(path: str | Path, what: str = "output") -> Iterator[None]:
    """Turn an OS error raised while writing ``path`` into one :class:`OutputError` line."""
    try:
        yield
    except OutputError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, ValueError) and "null" not in str(exc).lower():
            raise
        raise OutputError(f"cannot write the {what} {path}: {_reason(exc)}") from exc


def writable_folder(path: str | Path, what: str = "output folder") -> Path:
    """``path`` as a folder that exists (created, with its parents) and takes new files.

    Called before a long computation so that an unwritable ``--out`` costs nothing."""
    folder = Path(path)
    with output_errors(folder, what):
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"cannot write the {what} {folder}: a file is in the way of the folder")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".contactopt-probe-"):
            pass
    return folder


@contextlib.contextmanager
def prepared_folder(path: str | Path, what: str = "output folder") -> Iterator[Path]:
    """:func:`writable_folder` for a block that may still refuse its input: a folder made
    here and left empty by a block that raises is removed, so a refused command leaves no trace."""
    folder = Path(path)
    with output_errors(folder, what):  # exists() itself fails on a name too long
        made = not folder.exists()
    writable_folder(folder, what)
    try:
        yield folder
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if still empty
        raise


def writable_file(path: str | Path, what: str = "output file") -> Path:
    """``path`` as a file that can be written: its folder exists (created) and takes files, and
    ``path`` itself is not a folder nor a file without write permission."""
    target = Path(path)
    with output_errors(target, what):
        if target.is_dir():
            raise OutputError(f"cannot write the {what} {target}: it is a folder")
        writable_folder(target.parent, f"folder of the {what}")
        if target.exists() and not os.access(target, os.W_OK):
            raise OutputError(f"cannot write the {what} {target}: permission denied")
    return target


def unsafe_name_reason(name: str) -> str | None:
    """Why ``name`` cannot be one component of a path (None when it can)."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"{name!r} names a folder, not a file"
    if "/" in name or "\\" in name or (os.altsep and os.altsep in name):
        return "it contains a path separator"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "it contains a NUL or control character"
    if len(name.encode("utf-8", "surrogatepass")) > 200:
        return "it is longer than 200 bytes"
    return None


def safe_component(name: str) -> str:
    """``name`` made into one safe path component (separators, control characters and a
    leading dot replaced), for names of :class:`~contactopt.scenes.Scene` objects built in
    Python that never went through the scene loader's check."""
    cleaned = re.sub(r"[/\\\x00-\x1f\x7f]+", "_", name).lstrip(".").strip()
    return cleaned[:200] or "scene"
