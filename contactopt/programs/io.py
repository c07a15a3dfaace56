"""Save and load programs as ``.npz`` (plain arrays and a JSON header; never pickle); load
FCLIB problems (HDF5, :mod:`contactopt.programs.fclib`) as their convex program too."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactopt.core.errors import ContactoptError
from contactopt.core.outputs import atomic_path, existing_npz, npz_path, writable_file
from contactopt.programs.conic import Block, Cone, ConicProgram
from contactopt.programs.coulomb import CoulombProgram
from contactopt.programs.file_checks import checked_csc, checked_dense
from contactopt.programs.lcp import LCP

__all__ = ["load_program", "save_program"]

FORMAT_VERSION = 1


def _blocks_to_json(blocks: tuple[Block, ...]) -> list[dict[str, Any]]:
    return [{"name": b.name, "start": b.start, "stop": b.stop, "per": b.per} for b in blocks]


def _blocks_from_json(items: list[dict[str, Any]]) -> tuple[Block, ...]:
    return tuple(Block(d["name"], int(d["start"]), int(d["stop"]), int(d.get("per", 1))) for d in items)


def _sparse_arrays(prefix: str, matrix: sp.csc_matrix) -> dict[str, np.ndarray]:
    return {f"{prefix}_data": matrix.data, f"{prefix}_indices": matrix.indices,
            f"{prefix}_indptr": matrix.indptr, f"{prefix}_shape": np.array(matrix.shape)}


def save_program(program: ConicProgram | LCP | CoulombProgram, path: str | Path) -> Path:
    """Write ``program`` to ``path`` (``.npz`` appended if missing: ``"step"`` -> ``step.npz``,
    which :func:`load_program` of ``"step"`` finds) and return the path. The file appears under
    its name only complete (:func:`~contactopt.core.outputs.atomic_path`)."""
    path = npz_path(path)
    writable_file(path, "program file")
    header: dict[str, Any] = {"format": "contactopt-program", "version": FORMAT_VERSION,
                              "kind": program.kind, "metadata": dict(program.metadata),
                              "variables": _blocks_to_json(program.variables)}
    arrays: dict[str, np.ndarray] = {}
    if isinstance(program, LCP):
        arrays.update(M=program.M, q=program.q)
    elif isinstance(program, CoulombProgram):
        header["dim"] = program.dim
        arrays.update(_sparse_arrays("W", program.W))
        arrays.update(q=program.q, mu=program.mu)
    else:
        header["constraints"] = _blocks_to_json(program.constraints)
        header["cones"] = [[cone.kind, cone.dim] for cone in program.cones]
        arrays.update(_sparse_arrays("P", program.P))
        arrays.update(_sparse_arrays("A", program.A))
        arrays.update(c=program.c, b=program.b)
    arrays["header"] = np.array(json.dumps(header, default=_json_default))
    with atomic_path(path, "program file") as temporary:
        np.savez(temporary, **arrays)  # type: ignore[arg-type]
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def load_program(path: str | Path, *, form: str | None = None,
                 symmetrize: bool = False) -> ConicProgram | LCP | CoulombProgram:
    """Read a program written by :func:`save_program`, or an FCLIB problem file (HDF5).

    An FCLIB file (``/fclib_local`` or ``/fclib_global`` at its root, written by any tool)
    becomes the convex program of :func:`contactopt.programs.fclib.fclib_program`: the cone
    complementarity relaxation, in impulses for a local problem; ``form`` picks ``"primal"``
    (velocities, default) or ``"dual"`` (condensed to impulses) for a global one; ``"coulomb"``
    gives FCLIB's own (nonconvex) problem as a :class:`~contactopt.programs.coulomb.CoulombProgram`
    (:func:`~contactopt.programs.coulomb.coulomb_from_fclib`), for the Coulomb solvers. A ``W``
    (``M``) not symmetric at the stored precision is refused by the convex forms by name unless
    ``symmetrize`` (its symmetric part is solved instead, said in the program's metadata); a
    Coulomb problem keeps it as stored (its solvers say whether they take it) unless ``symmetrize``.

    A ``path`` without ``.npz`` that does not exist is read as ``path.npz`` when that exists
    (the name :func:`save_program` gives it). A file that is neither (a JSON file, a text
    file) is refused as "not a program file", naming what is expected.
    """
    path = existing_npz(path)
    _check_file(path)  # before any read: a FIFO would block it
    if _is_hdf5(path):
        from contactopt.programs.fclib import fclib_program, read_fclib

        if form == "coulomb":
            from contactopt.programs.coulomb import coulomb_from_fclib

            coulomb = coulomb_from_fclib(read_fclib(path), source=str(path))
            return coulomb.symmetrized() if symmetrize and not coulomb.symmetric else coulomb
        return fclib_program(read_fclib(path), form, source=str(path),  # type: ignore[arg-type]
                             symmetrize=symmetrize)
    if form is not None or symmetrize:
        raise ContactoptError(f"{path}: form= and symmetrize= apply to FCLIB files only")
    _check_npz(path)
    try:
        with np.load(path, allow_pickle=False) as arrays:
            header = json.loads(str(arrays["header"]))
            if not isinstance(header, dict) or header.get("format") != "contactopt-program":
                raise ContactoptError(f"{path}: not a contactopt program file")
            if header.get("kind") not in ("lcp", "qp", "socp", "coulomb"):
                raise ContactoptError(f"{path}: unknown program kind {header.get('kind')!r}")
            variables = _blocks_from_json(header["variables"])
            where = str(path)
            if header["kind"] == "lcp":
                return LCP(checked_dense(_member(arrays, "M", where), where, "M", ndim=2),
                           checked_dense(_member(arrays, "q", where), where, "q"),
                           variables=variables, metadata=header["metadata"])
            if header["kind"] == "coulomb":
                return CoulombProgram(W=checked_csc(arrays, "W", where),
                                      q=checked_dense(_member(arrays, "q", where), where, "q"),
                                      mu=checked_dense(_member(arrays, "mu", where), where, "mu"),
                                      dim=int(header.get("dim", 3)), variables=variables,
                                      metadata=header["metadata"])
            cones = tuple(Cone(kind, int(dim)) for kind, dim in header["cones"])
            return ConicProgram(P=checked_csc(arrays, "P", where),
                                c=checked_dense(_member(arrays, "c", where), where, "c"),
                                A=checked_csc(arrays, "A", where),
                                b=checked_dense(_member(arrays, "b", where), where, "b"),
                                cones=cones, variables=variables,
                                constraints=_blocks_from_json(header["constraints"]),
                                metadata=header["metadata"])
    except ContactoptError as exc:
        if str(path) in str(exc):
            raise
        raise ContactoptError(f"{path}: cannot read program: {exc}") from exc
    except zipfile.BadZipFile as exc:  # the end of the archive is missing
        raise ContactoptError(f"{path}: cannot read program: the .npz archive is truncated or damaged ({exc})") from exc
    except Exception as exc:  # a damaged file in any way: one line naming it
        raise ContactoptError(f"{path}: cannot read program: {type(exc).__name__}: {exc}") from exc


def _member(arrays: Any, name: str, where: str) -> Any:
    if name not in arrays:
        raise ContactoptError(f"{where}: missing array {name!r}")
    return arrays[name]


def _check_file(path: Path) -> None:
    """Refuse, naming it, a ``path`` that does not exist or is not a regular file (a folder, a
    FIFO, a device), before it is opened."""
    if not path.exists():
        raise ContactoptError(f"{path}: no such program file")
    if not path.is_file():
        raise ContactoptError(f"{path}: not a program file (a folder, a FIFO or a device; expected a contactopt "
                              ".npz or an FCLIB .hdf5 file)")


def _check_npz(path: Path) -> None:
    """Refuse, naming it, a ``path`` that is not a zip archive (the ``.npz`` of
    :func:`save_program`): ``np.load`` would call a JSON or text file "pickled data"."""
    try:
        with path.open("rb") as handle:
            start = handle.read(4)
    except OSError as exc:
        raise ContactoptError(f"{path}: cannot read program: {exc.strerror or exc}") from exc
    if start not in (b"PK\x03\x04", b"PK\x05\x06"):
        what = "an empty file" if not start else f"a {path.suffix} file" if path.suffix else "this file"
        raise ContactoptError(f"{path}: not a program file ({what} is neither a contactopt .npz archive nor an "
                              "FCLIB .hdf5 file; expected .npz written by save_program or FCLIB HDF5)")


def _is_hdf5(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(8) == b"\x89HDF\r\n\x1a\n"
    except OSError:
        return False
