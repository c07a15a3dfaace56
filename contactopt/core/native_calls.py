"""Calls into a C library from numba-compiled loops, by address: the few numba intrinsics a
compiled loop needs to read a C struct's pointer fields and call a C function whose address it
is given as an integer (:mod:`contactopt.systems.mjcf.clib` gives MuJoCo's).

The addresses are arguments, never constants of the compiled code, so a kernel that uses these
is cached on disk like any other (a library is loaded at another address in every process).
numba is imported with this module: import it only where :data:`contactopt.core.jit.ENABLED`.
The intrinsics follow numba's documented extension API ("Low-level extension API: intrinsics");
each one is an LLVM ``inttoptr`` and, for the calls, one ``call`` of that pointer.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["as_pointer", "call_int_pointer", "call_pointers2", "call_pointers3", "call_pointers3_double"]


def _pointer(builder: Any, address: Any) -> Any:
    return builder.inttoptr(address, cgutils.voidptr_t)


def _function(builder: Any, address: Any, result: Any, arguments: list[Any]) -> Any:
    return builder.inttoptr(address, ir.FunctionType(result, arguments).as_pointer())


def _as_pointer(typingctx: Any, address: Any) -> Any:
    """``(void *) address`` (``numba.carray(as_pointer(a), shape, dtype)`` views C memory)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return _pointer(builder, args[0])
    return types.voidptr(types.int64), codegen


def _call_pointers2(typingctx: Any, function: Any, a: Any, b: Any) -> Any:
    """``void function(void *a, void *b)`` (MuJoCo's ``mj_fwdPosition(m, d)``)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = _function(builder, args[0], ir.VoidType(), [cgutils.voidptr_t] * 2)
        builder.call(pointer, [_pointer(builder, args[1]), _pointer(builder, args[2])])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


def _call_pointers3(typingctx: Any, function: Any, a: Any, b: Any, c: Any) -> Any:
    """``void function(void *a, void *b, void *c)`` (``mj_fullM(m, d, dst)``)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = _function(builder, args[0], ir.VoidType(), [cgutils.voidptr_t] * 3)
        builder.call(pointer, [_pointer(builder, value) for value in args[1:]])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64), codegen


def _call_pointers3_double(typingctx: Any, function: Any, a: Any, b: Any, c: Any, x: Any) -> Any:
    """``void function(void *a, void *b, void *c, double x)`` (``mj_integratePos(m, qpos, qvel, dt)``)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = _function(builder, args[0], ir.VoidType(), [cgutils.voidptr_t] * 3 + [ir.DoubleType()])
        builder.call(pointer, [*(_pointer(builder, value) for value in args[1:4]), args[4]])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64, types.float64), codegen


def _call_int_pointer(typingctx: Any, function: Any, a: Any, b: Any) -> Any:
    """``int function(int a, void *b)`` (POSIX ``clock_gettime(clock, &timespec)``)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        int32 = ir.IntType(32)
        pointer = _function(builder, args[0], int32, [int32, cgutils.voidptr_t])
        result = builder.call(pointer, [builder.trunc(args[1], int32), _pointer(builder, args[2])])
        return builder.sext(result, ir.IntType(64))
    return types.int64(types.int64, types.int64, types.int64), codegen


as_pointer: Any = intrinsic(_as_pointer)
call_pointers2: Any = intrinsic(_call_pointers2)
call_pointers3: Any = intrinsic(_call_pointers3)
call_pointers3_double: Any = intrinsic(_call_pointers3_double)
call_int_pointer: Any = intrinsic(_call_int_pointer)
