"""MuJoCo's C library as a compiled loop calls it: the addresses of the few functions a step
needs and where ``mjData`` keeps its constraint rows and contacts, for
:mod:`contactopt.integrators.native_run` (the step as arrays, many steps in one compiled call).

The mujoco wheel ships its shared library beside the Python bindings, and with
``mujoco.introspect`` the declarations of its structs (MuJoCo's own machine-readable copy of
``mjdata.h``). The layout of ``mjData`` and ``mjContact`` is made from those declarations by
``ctypes`` (C's alignment rules), and **checked** on a probe model before it is used: every
pointer field read through it must be the address the bindings give for that array, and every
contact field read through it the bindings' value. A library whose layout or version does not
check out, or a platform without one of the pieces, gives ``None`` with the reason
(:func:`library`), and the step runs as before, one Python call per step.

Only the arena arrays (the constraint rows, the contacts: they move with every ``mj_forward``)
are read through the layout; the fixed arrays (``qpos``, ``qvel``, ``qfrc_smooth``, ...) are the
bindings' own NumPy views, passed to the loop as arrays.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["CONTACT_FIELDS", "DATA_INTS", "DATA_POINTERS", "FUNCTIONS", "MujocoLibrary", "library"]

#: The functions the compiled step calls, in the order of :attr:`MujocoLibrary.functions`
#: (each one's parameters as ``mujoco.introspect`` must declare them).
FUNCTIONS = {"mj_fwdPosition": ("m", "d"), "mj_fwdVelocity": ("m", "d"), "mj_fwdActuation": ("m", "d"),
             "mj_fwdAcceleration": ("m", "d"), "mj_fullM": ("m", "d", "dst"),
             "mj_integratePos": ("m", "qpos", "qvel", "dt")}
#: ``mjData``'s arena pointers read each step, in the order of :attr:`MujocoLibrary.pointers`.
DATA_POINTERS = ("efc_type", "efc_id", "efc_frictionloss", "efc_J", "efc_J_rownnz", "efc_J_rowadr", "efc_J_colind",
                 "efc_R", "efc_aref", "efc_pos", "contact")
#: ``mjData``'s int fields read each step (:attr:`MujocoLibrary.ints`).
DATA_INTS = ("nefc", "ncon")
#: ``mjContact``'s fields read each step: doubles (``dist``, ``friction[5]``), then ints.
CONTACT_FIELDS = ("dist", "friction", "dim", "efc_address")

_SCALARS = {"int": ctypes.c_int, "mjtBool": ctypes.c_ubyte, "mjtByte": ctypes.c_ubyte, "mjtSize": ctypes.c_int64,
            "size_t": ctypes.c_size_t, "uintptr_t": ctypes.c_size_t, "uint64_t": ctypes.c_uint64,
            "mjtNum": ctypes.c_double, "float": ctypes.c_float, "char": ctypes.c_char}

#: A sphere on a plane (a contact), a hinge past its limit, an equality and a frictionloss, with
#: the sparse Jacobian: every array of :data:`DATA_POINTERS` has rows after ``mj_forward``.
_PROBE = """<mujoco><option jacobian="sparse"/><worldbody><geom type="plane" size="1 1 .1"/>
<body pos="0 0 .09"><freejoint/><geom type="sphere" size=".1"/></body>
<body name="a" pos="1 0 1"><joint name="h" type="hinge" range="-1 1" limited="true" frictionloss="1"/>
<geom type="capsule" size=".05" fromto="0 0 0 0 0 -.3"/></body>
<body name="b" pos="1.5 0 1"><joint name="k" type="hinge"/><geom type="capsule" size=".05" fromto="0 0 0 0 0 -.3"/>
</body></worldbody><equality><joint joint1="h" joint2="k"/></equality></mujoco>"""


@dataclass(frozen=True)
class MujocoLibrary:
    """Addresses and offsets of MuJoCo's library for compiled loops (module docstring).

    ``functions`` (6,): the addresses of :data:`FUNCTIONS`; ``pointers`` (11,): the 8-byte word
    of each :data:`DATA_POINTERS` field in ``mjData``; ``ints`` (2,): the 4-byte word of each
    :data:`DATA_INTS` field; ``contact`` (5,): ``mjContact``'s size in bytes and the word of each
    :data:`CONTACT_FIELDS` field (8-byte words for the doubles, 4-byte words for the ints);
    ``clock``: ``(clock_gettime's address, CLOCK_MONOTONIC)``."""

    functions: NDArray[np.int64]
    pointers: NDArray[np.int64]
    ints: NDArray[np.int64]
    contact: NDArray[np.int64]
    clock: NDArray[np.int64]


def _ctype(node: Any, structs: Any, ast: Any, made: dict[str, Any]) -> Any:
    if isinstance(node, ast.PointerType):
        return ctypes.c_void_p
    if isinstance(node, ast.ArrayType):
        inner = _ctype(node.inner_type, structs, ast, made)
        for extent in reversed(node.extents):
            inner = inner * int(extent)
        return inner
    if node.name in _SCALARS:
        return _SCALARS[node.name]
    if node.name not in structs.STRUCTS:  # an enum member type
        return ctypes.c_int
    return _struct(node.name, structs, ast, made)


def _struct(name: str, structs: Any, ast: Any, made: dict[str, Any]) -> Any:
    if name not in made:
        fields = [(field.name, _ctype(field.type, structs, ast, made)) for field in structs.STRUCTS[name].fields]
        made[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
    return made[name]


def _library_file(mujoco: Any) -> Path | None:
    folder = Path(next(iter(mujoco.__path__)))
    patterns = {"linux": "libmujoco.so*", "darwin": "libmujoco*.dylib", "win32": "mujoco.dll"}
    pattern = patterns.get(sys.platform, "libmujoco.so*")
    found = sorted(folder.glob(pattern)) or sorted(folder.glob(f"**/{pattern}"))
    return found[0] if found else None


@cache
def library(mujoco: Any) -> tuple[MujocoLibrary | None, str]:
    """``(the library, "")``, or ``(None, why not)`` (module docstring); once a process."""
    try:
        from mujoco.introspect import ast_nodes, functions, structs
    except ImportError:
        return None, "this mujoco has no mujoco.introspect (the declarations of its structs)"
    for name, parameters in FUNCTIONS.items():
        declared = functions.FUNCTIONS.get(name)
        if declared is None or tuple(p.name for p in declared.parameters) != parameters:
            return None, f"this mujoco's {name} is not {name}({', '.join(parameters)})"
    path = _library_file(mujoco)
    clock_id = getattr(time, "CLOCK_MONOTONIC", None)
    libc_name = ctypes.util.find_library("c")
    if path is None or clock_id is None or os.name != "posix":
        return None, "MuJoCo's shared library or a POSIX clock_gettime was not found"
    try:
        lib = ctypes.CDLL(str(path))
        libc = ctypes.CDLL(libc_name) if libc_name else ctypes.CDLL(None)
        lib.mj_version.restype = ctypes.c_int
        if int(lib.mj_version()) != int(mujoco.mj_version()):
            return None, f"{path.name} is not the library of the mujoco bindings"
        addresses = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in FUNCTIONS]
        clock = ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value
    except (OSError, AttributeError) as exc:
        return None, f"MuJoCo's shared library: {exc}"
    made: dict[str, Any] = {}
    data_type, contact_type = (_struct(name, structs, ast_nodes, made) for name in ("mjData", "mjContact"))
    words = {name: getattr(contact_type, name).offset for name in CONTACT_FIELDS}
    if any(words[name] % 8 for name in ("dist", "friction")) or any(words[name] % 4 for name in ("dim",
                                                                                                   "efc_address")):
        return None, "mjContact's fields are not aligned as the compiled loop reads them"
    found = MujocoLibrary(
        functions=np.array(addresses, dtype=np.int64),
        pointers=np.array([getattr(data_type, name).offset // 8 for name in DATA_POINTERS], dtype=np.int64),
        ints=np.array([getattr(data_type, name).offset // 4 for name in DATA_INTS], dtype=np.int64),
        contact=np.array([ctypes.sizeof(contact_type), words["dist"] // 8, words["friction"] // 8, words["dim"] // 4,
                          words["efc_address"] // 4], dtype=np.int64),
        clock=np.array([clock, clock_id], dtype=np.int64))
    problem = _check(mujoco, found, data_type)
    return (None, problem) if problem else (found, "")


def _check(mujoco: Any, found: MujocoLibrary, data_type: Any) -> str:
    """The first field the layout reads wrong on the probe model, else ""."""
    model = mujoco.MjModel.from_xml_string(_PROBE)
    data = mujoco.MjData(model)
    data.qpos[model.jnt_qposadr[1]] = 1.5  # the hinge past its limit
    mujoco.mj_forward(model, data)
    if int(data.ncon) == 0 or int(data.nefc) == 0:
        return "the probe model has no constraint rows"
    size = ctypes.sizeof(data_type)
    words = np.ctypeslib.as_array((ctypes.c_int64 * (size // 8)).from_address(data._address))
    ints = np.ctypeslib.as_array((ctypes.c_int32 * (size // 4)).from_address(data._address))
    for name, word in zip(DATA_POINTERS, found.pointers, strict=True):
        expected = np.asarray(data.contact.dist).ctypes.data if name == "contact" else \
            np.asarray(getattr(data, name)).ctypes.data
        if int(words[word]) != int(expected) - (8 * int(found.contact[1]) if name == "contact" else 0):
            return f"mjData.{name} is not where the layout puts it"
    for name, word in zip(DATA_INTS, found.ints, strict=True):
        if int(ints[word]) != int(getattr(data, name)):
            return f"mjData.{name} is not where the layout puts it"
    ncon, stride = int(data.ncon), int(found.contact[0])
    base = int(words[found.pointers[-1]])
    doubles = np.ctypeslib.as_array((ctypes.c_double * (ncon * stride // 8)).from_address(base))
    integers = np.ctypeslib.as_array((ctypes.c_int32 * (ncon * stride // 4)).from_address(base))
    rows = np.arange(ncon)
    checks = {"dist": doubles[rows * stride // 8 + found.contact[1]],
              "friction": doubles[(rows * stride // 8 + found.contact[2])[:, None] + np.arange(5)],
              "dim": integers[rows * stride // 4 + found.contact[3]],
              "efc_address": integers[rows * stride // 4 + found.contact[4]]}
    for name, value in checks.items():
        if not np.array_equal(value, np.asarray(getattr(data.contact, name))[:ncon]):
            return f"mjContact.{name} is not where the layout puts it"
    return ""
