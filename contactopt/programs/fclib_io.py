"""FCLIB files (HDF5): the problem types, reading and writing.

FCLIB (Acary, Brémond, Huber, Pérignon et al., "FCLIB: a collection of discrete 3D frictional
contact problems", JOTA 2014; the ``fclib.h`` / ``fclib.c`` of the FCLIB library) stores ONE
problem per HDF5 file, at the root:

``/fclib_local`` (the *local* problem ``FC(W, q, mu)``, optionally mixed with ``V, R, s``)::

    spacedim                int (1,)   2 or 3: rows per contact, normal first
    W, V, R                 matrices   W (m x m) symmetric PSD; V (m x p), R (p x p) optional
    vectors/q, mu, s        float      q (m,), mu (m / spacedim,), s (p,) with R
    info/title, description, math_info   strings (optional)

    V^T r + R lambda + s = 0,   u = W r + V lambda + q,   û = u + [mu_c ||u_cT||, 0(, 0)]_c,
    C*_mu ∋ û ⟂ r ∈ C_mu        (C_mu = prod_c {||r_cT|| <= mu_c r_cN}, C*_mu its dual cone)

``/fclib_global`` (the *global* problem)::

    spacedim; M (n x n, SPD), H (n x m), G (n x p, optional); vectors/f (n,), w (m,), mu, b (p,)

    M v = H r + G lambda + f,   G^T v + b = 0,   u = H^T v + w,   C*_mu ∋ û ⟂ r ∈ C_mu

A matrix is a group ``nzmax, m, n, nz`` (int, shape (1,)), ``p, i`` (int), ``x`` (float):
``nz = -1`` compressed columns (``p`` column pointers, n+1; ``i`` row indices), ``nz = -2``
compressed rows (``p`` row pointers, m+1; ``i`` column indices), ``nz >= 0`` triplets of
``nz`` entries, with ``p`` the rows and ``i`` the columns as ``fclib.h`` documents them, or the
other way round as CSparse and Siconos write them: decided per file from the stored sizes and
index ranges (:mod:`contactopt.programs.fclib_matrix`; ``metadata["triplets"]`` says which).
An optional ``/solution`` group holds ``r, u, v, l``; it is read but not trusted (FCLIB's own
test file stores ``r = 0`` there).

**Matrices as stored.** FCLIB asks for a symmetric ``W``, ``R`` and ``M``; files from other tools
do not always have one (Siconos's Capsules, OneObject, RockPile and Rover problems: ``W``
asymmetric by ``8e-6`` to ``2.5e-3`` of ``max |W|``; CubeH8's ``M`` by ``1.5e-7``). The problem
types keep the matrices as stored, the equations above hold with them as they are (Siconos
condenses a global problem with ``M`` as stored: :func:`contactopt.programs.fclib.condense`
does too, and agrees with Siconos's condensed files), and ``asymmetry`` / ``symmetric`` say
how far each one is from symmetric, relative to its own scale and judged at the precision of
a file (:data:`~contactopt.programs.fclib_matrix.SYMMETRY_TOLERANCE`). What needs symmetry
(the convex program of :mod:`contactopt.programs.fclib`) decides what to do with it.

The convex program contactopt solves for a problem: :mod:`contactopt.programs.fclib`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs.fclib_matrix import (
    SYMMETRY_TOLERANCE,
    read_stored_matrix,
    relative_asymmetry,
    resolve_triplets,
)

__all__ = ["HDF5_SIGNATURE", "FclibGlobal", "FclibLocal", "FclibProblem", "is_fclib_file", "read_fclib",
           "write_fclib_matrix", "write_fclib_problem"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FclibLocal:
    """FCLIB's local problem (module docstring); ``V, R, s`` only for the mixed problem;
    ``metadata``: how the file was read (``source``, ``triplets``)."""

    W: sp.csc_matrix
    q: FloatArray
    mu: FloatArray
    spacedim: int
    V: sp.csc_matrix | None = None
    R: sp.csc_matrix | None = None
    s: FloatArray | None = None
    info: dict[str, str] = field(default_factory=dict)
    solution: dict[str, FloatArray] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def contacts(self) -> int:
        return int(self.mu.shape[0])

    @property
    def equalities(self) -> int:
        return 0 if self.R is None else int(self.R.shape[0])

    @cached_property
    def asymmetry(self) -> dict[str, float]:
        """``max|A - A^T| / max|A|`` of ``W`` (and ``R``) as stored (module docstring)."""
        return {name: relative_asymmetry(matrix) for name, matrix in (("W", self.W), ("R", self.R))
                if matrix is not None}

    @property
    def symmetric(self) -> bool:
        """Whether ``W`` (and ``R``) are symmetric at the stored precision (module docstring)."""
        return max(self.asymmetry.values()) <= SYMMETRY_TOLERANCE


@dataclass(frozen=True)
class FclibGlobal:
    """FCLIB's global problem (module docstring); ``G, b`` optional; ``metadata`` as for
    :class:`FclibLocal`."""

    M: sp.csc_matrix
    H: sp.csc_matrix
    f: FloatArray
    w: FloatArray
    mu: FloatArray
    spacedim: int
    G: sp.csc_matrix | None = None
    b: FloatArray | None = None
    info: dict[str, str] = field(default_factory=dict)
    solution: dict[str, FloatArray] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def contacts(self) -> int:
        return int(self.mu.shape[0])

    @property
    def equalities(self) -> int:
        return 0 if self.G is None else int(self.G.shape[1])

    @cached_property
    def asymmetry(self) -> dict[str, float]:
        """``max|M - M^T| / max|M|`` as stored (module docstring)."""
        return {"M": relative_asymmetry(self.M)}

    @property
    def symmetric(self) -> bool:
        """Whether ``M`` is symmetric at the stored precision (module docstring)."""
        return self.asymmetry["M"] <= SYMMETRY_TOLERANCE


FclibProblem = FclibLocal | FclibGlobal
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


# --- reading ------------------------------------------------------------------------------


def is_fclib_file(path: str | Path) -> bool:
    """True if ``path`` is an HDF5 file with ``/fclib_local`` or ``/fclib_global`` at its root."""
    path = Path(path)
    if not path.is_file():  # a folder, or a FIFO whose read would block
        return False
    try:
        with path.open("rb") as handle:
            if handle.read(8) != HDF5_SIGNATURE:
                return False
        import h5py

        with h5py.File(path, "r") as handle:
            return "fclib_local" in handle or "fclib_global" in handle
    except OSError:
        return False


def _int(group: Any, name: str, where: str) -> int:
    if name not in group:
        raise ContactoptError(f"{where}: missing {name!r}")
    return int(np.asarray(group[name][()]).reshape(-1)[0])


def _vector(group: Any, name: str, size: int, where: str) -> FloatArray:
    if name not in group:
        raise ContactoptError(f"{where}: missing vector {name!r}")
    value = np.asarray(group[name][()], dtype=np.float64).reshape(-1)
    if value.shape[0] != size:
        raise ContactoptError(f"{where}: vector {name!r} has {value.shape[0]} entries, expected {size}")
    if not np.all(np.isfinite(value)):
        raise ContactoptError(f"{where}: vector {name!r} has NaN or infinite entries")
    return value


def _strings(group: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in ("title", "description", "math_info"):
        if key in group:
            value = group[key][()]
            out[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return out


def _check_mu(mu: FloatArray, where: str) -> None:
    if np.any(mu < 0):
        raise ContactoptError(f"{where}: negative friction coefficient in mu")


def read_fclib(path: str | Path) -> FclibProblem:
    """Read the FCLIB problem of ``path`` (module docstring); one clear error if malformed."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ContactoptError(f"{path}: no such FCLIB file" if not path.exists() else
                              f"{path}: not an FCLIB file (a folder, a FIFO or a device)")
    try:
        with h5py.File(path, "r") as handle:
            if "fclib_local" in handle:
                return _read_local(handle["fclib_local"], handle, f"{path}: /fclib_local", str(path))
            if "fclib_global" in handle:
                return _read_global(handle["fclib_global"], handle, f"{path}: /fclib_global", str(path))
            steps = [name for name in handle if name.startswith("step_")]
            hint = (" (a contactopt run file of an older version: its problems are under step_NNNNNN/)"
                    if steps else "")
            raise ContactoptError(f"{path}: not an FCLIB problem: no /fclib_local or /fclib_global group "
                                  f"at the root{hint}")
    except OSError as exc:
        raise ContactoptError(f"{path}: cannot read as HDF5: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # any other misshapen layout
        raise ContactoptError(f"{path}: malformed FCLIB file: {type(exc).__name__}: {exc}") from None


def _spacedim(root: Any, where: str) -> int:
    dim = _int(root, "spacedim", where)
    if dim not in (2, 3):
        raise ContactoptError(f"{where}: spacedim must be 2 or 3, got {dim}")
    return dim


def _solution(handle: Any) -> dict[str, FloatArray]:
    if "solution" not in handle:
        return {}
    group = handle["solution"]
    return {key: np.asarray(group[key][()], dtype=np.float64).reshape(-1) for key in ("r", "u", "v", "l")
            if key in group}


def _matrices(root: Any, names: tuple[str, ...], where: str, path: str) -> tuple[dict[str, sp.csc_matrix],
                                                                                  dict[str, Any]]:
    """The named matrices of a problem group (those present), triplets read in the file's
    convention (:func:`~contactopt.programs.fclib_matrix.resolve_triplets`), and the metadata
    that says how: ``triplets`` (name -> convention) where any matrix is stored as triplets."""
    stored = {name: read_stored_matrix(root[name], f"{where}/{name}") for name in names if name in root}
    matrices, conventions = resolve_triplets(stored, path)
    return matrices, ({"triplets": conventions} if conventions else {})


def _read_local(root: Any, handle: Any, where: str, path: str) -> FclibLocal:
    dim = _spacedim(root, where)
    if "W" not in root:
        raise ContactoptError(f"{where}: missing matrix 'W'")
    if ("V" in root) != ("R" in root):
        raise ContactoptError(f"{where}: V and R must be given together")
    matrices, metadata = _matrices(root, ("W", "V", "R"), where, path)
    W = matrices["W"]
    m = W.shape[0]
    if W.shape != (m, m) or m % dim:
        raise ContactoptError(f"{where}/W: shape {W.shape} is not square with a multiple of spacedim {dim} rows")
    if "vectors" not in root:
        raise ContactoptError(f"{where}: missing group 'vectors'")
    vectors = root["vectors"]
    q = _vector(vectors, "q", m, f"{where}/vectors")
    mu = _vector(vectors, "mu", m // dim, f"{where}/vectors")
    _check_mu(mu, f"{where}/vectors")
    V = R = s = None
    if "R" in matrices:
        R, V = matrices["R"], matrices["V"]
        p = R.shape[0]
        if R.shape != (p, p):
            raise ContactoptError(f"{where}/R: shape {R.shape} is not square")
        if V.shape != (m, p):
            raise ContactoptError(f"{where}/V: shape {V.shape}, expected {(m, p)}")
        s = _vector(vectors, "s", p, f"{where}/vectors")
    info = _strings(root["info"]) if "info" in root else {}
    return FclibLocal(W=W, q=q, mu=mu, spacedim=dim, V=V, R=R, s=s, info=info, solution=_solution(handle),
                      metadata={**metadata, "source": path})


def _read_global(root: Any, handle: Any, where: str, path: str) -> FclibGlobal:
    dim = _spacedim(root, where)
    for name in ("M", "H", "vectors"):
        if name not in root:
            raise ContactoptError(f"{where}: missing {name!r}")
    matrices, metadata = _matrices(root, ("M", "H", "G"), where, path)
    M, H = matrices["M"], matrices["H"]
    n = M.shape[0]
    if M.shape != (n, n):
        raise ContactoptError(f"{where}/M: shape {M.shape} is not square")
    m = H.shape[1]
    if H.shape[0] != n or m % dim:
        raise ContactoptError(f"{where}/H: shape {H.shape}, expected {n} rows and a multiple of {dim} columns")
    vectors = root["vectors"]
    f = _vector(vectors, "f", n, f"{where}/vectors")
    w = _vector(vectors, "w", m, f"{where}/vectors")
    mu = _vector(vectors, "mu", m // dim, f"{where}/vectors")
    _check_mu(mu, f"{where}/vectors")
    G = matrices.get("G")
    b = None
    if G is not None:
        if G.shape[0] != n:
            raise ContactoptError(f"{where}/G: shape {G.shape}, expected {n} rows")
        b = _vector(vectors, "b", G.shape[1], f"{where}/vectors")
    info = _strings(root["info"]) if "info" in root else {}
    return FclibGlobal(M=M, H=H, f=f, w=w, mu=mu, spacedim=dim, G=G, b=b, info=info, solution=_solution(handle),
                       metadata={**metadata, "source": path})


# --- writing ------------------------------------------------------------------------------


def write_fclib_matrix(group: Any, matrix: Any) -> None:
    """FCLIB's matrix layout, compressed columns (``nz = -1``), int32 as ``fclib.c`` writes."""
    csc = sp.csc_matrix(matrix)
    csc.sort_indices()
    m, n = csc.shape
    for name, value in (("nzmax", csc.nnz), ("m", m), ("n", n), ("nz", -1)):
        group.create_dataset(name, data=np.array([value], dtype=np.int32))
    group.create_dataset("p", data=csc.indptr.astype(np.int32))
    group.create_dataset("i", data=csc.indices.astype(np.int32))
    group.create_dataset("x", data=csc.data.astype(np.float64))


def write_fclib_problem(handle: Any, problem: FclibLocal) -> None:
    """Write ``problem`` as ``/fclib_local`` of the open h5py file ``handle`` (module docstring)."""
    root = handle.create_group("fclib_local")
    root.create_dataset("spacedim", data=np.array([problem.spacedim], dtype=np.int32))
    write_fclib_matrix(root.create_group("W"), problem.W)
    vectors = root.create_group("vectors")
    vectors.create_dataset("q", data=np.asarray(problem.q, dtype=np.float64))
    vectors.create_dataset("mu", data=np.asarray(problem.mu, dtype=np.float64))
    if problem.V is not None and problem.R is not None and problem.s is not None:
        write_fclib_matrix(root.create_group("V"), problem.V)
        write_fclib_matrix(root.create_group("R"), problem.R)
        vectors.create_dataset("s", data=np.asarray(problem.s, dtype=np.float64))
    if problem.info:
        info = root.create_group("info")
        for key, text in problem.info.items():
            info.create_dataset(key, data=np.bytes_(text.encode("ascii", "replace")))
