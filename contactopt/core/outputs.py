"""Output paths checked before the work that fills them, and names made safe as path parts.

A run that computes for minutes and then dies on ``PermissionError`` at the first write loses
everything; so every command checks its ``--out`` up front (:func:`writable_folder`,
:func:`writable_file`) and every write that still fails is one :class:`OutputError` line
naming the path and the reason (:func:`output_errors`). Names that become parts of a path (a
scene's name in ``runs/SCENE-...``) are refused or sanitized so that they cannot leave the
output folder (:func:`unsafe_name_reason`, :func:`safe_component`).

Every file contactopt writes (programs, trajectories, FCLIB files, compare cells, tables,
figures, JSON summaries, reports) goes through :func:`atomic_path`: it is written under a
temporary name in its own folder (``.contactopt-partial-XXXXXXXX-NAME``, :func:`is_partial`)
and renamed over ``NAME`` (``os.replace``) only once complete, so that a command killed
mid-write (``kill -9``, a full disk) leaves the earlier file or the new one under ``NAME``,
never half of one; a temporary file of a write that failed is removed, and one left by a
killed command is ignored by the readers and removed by ``--force``/``--resume``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contactopt.core.errors import OutputError

__all__ = ["PARTIAL_PREFIX", "atomic_path", "existing_npz", "is_partial", "npz_path", "output_errors",
           "prepared_folder", "safe_component", "unsafe_name_reason", "writable_file", "writable_folder", "write_bytes",
           "write_text"]

_REASONS = {errno.EEXIST: "a file is in the way of the folder", errno.ENOTDIR: "a file is in the way of a folder",
            errno.EISDIR: "it is a folder", errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
            errno.EROFS: "read-only file system", errno.ENOENT: "its parent folder cannot be created",
            errno.ENAMETOOLONG: "the name is too long", errno.ENOSPC: "no space left on the device",
            errno.EFBIG: "the file would exceed the limit on file sizes (ulimit -f)",
            errno.EDQUOT: "the disk quota is exceeded"}


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


#: The start of the temporary name of a file being written (:func:`atomic_path`).
PARTIAL_PREFIX = ".contactopt-partial-"


def is_partial(name: str | Path) -> bool:
    """Whether ``name`` is the temporary name of a write not (yet) complete: one of
    :func:`atomic_path`'s, or the ``.NAME.partial`` of earlier versions' compare cells."""
    base = Path(name).name
    return base.startswith(PARTIAL_PREFIX) or (base.startswith(".") and base.endswith(".partial"))


@contextlib.contextmanager
def atomic_path(path: str | Path, what: str = "output file") -> Iterator[Path]:
    """A temporary path beside ``path`` to write, renamed over ``path`` when the block ends
    without an error (module docstring); the temporary file is removed when it raises.

    The temporary name ends with ``path``'s own name, so its suffix is the same: ``np.savez``
    appends no second ``.npz`` and a figure's format is the one ``path`` asks for. An OS error
    (a full disk, a permission) becomes one :class:`OutputError` line naming ``path``."""
    target = Path(path)
    with output_errors(target, what):
        folder = target.parent
        temporary = folder / f"{PARTIAL_PREFIX}{os.urandom(4).hex()}-{target.name}"
        if len(temporary.name.encode("utf-8", "surrogatepass")) > 255:  # NAME itself near the limit
            temporary = folder / f"{PARTIAL_PREFIX}{os.urandom(4).hex()}{target.suffix[:16]}"
        try:
            yield temporary
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise


def npz_path(path: str | Path) -> Path:
    """The file an ``.npz`` save of ``path`` writes: ``path`` itself when it ends in ``.npz``,
    else ``path`` with ``.npz`` appended (``"run"`` -> ``run.npz``, ``"a.b"`` -> ``a.b.npz``),
    as ``np.savez`` names it; :func:`existing_npz` is the reading side."""
    path = Path(path)
    if not path.name or path.name in (".", ".."):
        raise OutputError(f"cannot write the file {str(path)!r}: it names a folder, not a file")
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def existing_npz(path: str | Path) -> Path:
    """The file a load of ``path`` reads: ``path`` when it exists, else the :func:`npz_path` a
    save of ``path`` wrote when that one exists (so ``load("run")`` finds ``save("run")``'s
    ``run.npz``), else ``path`` (for the reader's own "no such file" message)."""
    path = Path(path)
    if path.name and not path.exists() and path.suffix != ".npz" and npz_path(path).exists():
        return npz_path(path)
    return path


def write_bytes(path: str | Path, data: bytes, what: str = "output file") -> Path:
    """``data`` written to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path, what) as temporary, temporary.open("wb") as handle:
        handle.write(data)
    return Path(path)


def write_text(path: str | Path, text: str, what: str = "output file") -> Path:
    """``text`` (UTF-8) written to ``path`` atomically (:func:`atomic_path`)."""
    return write_bytes(path, text.encode("utf-8"), what)


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
    leading dot replaced), for names of :class:`~contactopt.scenes.loading.Scene` objects built in
    Python that never went through the scene loader's check."""
    cleaned = re.sub(r"[/\\\x00-\x1f\x7f]+", "_", name).lstrip(".").strip()
    return cleaned[:200] or "scene"
