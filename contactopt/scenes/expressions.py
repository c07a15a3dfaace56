"""A small, safe arithmetic language for the reference values written in scene files.

A reference such as ``"v0[0]^2 / (2 * mu * g)"`` is parsed with Python's :mod:`ast` and then
*walked* node by node: only the nodes listed here are accepted, so nothing but arithmetic
on the scene's own numbers can run (no attribute of a Python object, no call of anything
but the functions in :data:`FUNCTIONS`, no comprehension, lambda or string).

Grammar (Python's precedence; ``^`` is the power, as in the textbooks, the same as ``**``):

* numbers (``2``, ``9.81``, ``1e-3``) and the constants ``pi`` and ``inf``;
* names from the namespace (``mu``, ``g``, ``q0``, ...), tables with ``.key`` or ``["key"]``
  (``system.parameters.m``), array items with ``[i]`` (``v0[0]``, ``system.gravity[2]``); a list
  of named tables (``system.bodies``) also takes a body's name: ``system.bodies.box.mass``;
* ``+ - * / ^ **`` and unary ``-``/``+``, parentheses;
* the functions of :data:`FUNCTIONS` with positional arguments (``sqrt``, ``exp``, ``log``,
  ``sin``, ``cos``, ``tan``, ``asin``, ``acos``, ``atan``, ``atan2``, ``hypot``, ``abs``,
  ``min``, ``max``, ``norm``, and ``ellipk(m)``: the complete elliptic integral of the first
  kind in the *parameter* convention ``K(m) = int_0^{pi/2} (1 - m sin^2 t)^{-1/2} dt``,
  as in Abramowitz & Stegun 17.3.1 and :func:`scipy.special.ellipk`).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["FUNCTIONS", "ExpressionError", "check", "evaluate", "names_used"]


def _ellipk(m: float) -> float:
    from scipy.special import ellipk

    return float(ellipk(m))


def _norm(x: Any) -> float:
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64)))


#: The functions an expression may call.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan, "atan2": math.atan2,
    "hypot": math.hypot, "abs": abs, "min": min, "max": max, "norm": _norm, "ellipk": _ellipk,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "inf": math.inf}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}


class ExpressionError(ValueError):
    """An expression is malformed, uses something not allowed, or names an unknown quantity."""


def _parse(text: str) -> ast.expr:
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"expected a number or an expression string, got {text!r}")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text!r}: {exc.msg}") from exc
    for node in ast.walk(tree):
        _check_node(node, text)
    return tree.body


def _check_node(node: ast.AST, text: str) -> None:
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Attribute,
               ast.Subscript, ast.Call, *_BINARY, *_UNARY)
    if not isinstance(node, allowed):
        raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed (arithmetic, names, "
                              f"[index], .key and the functions {', '.join(FUNCTIONS)} only)")
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                           or not isinstance(node.value, int | float | str)):
        raise ExpressionError(f"{text!r}: the constant {node.value!r} is not a number")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            called = ast.unparse(node.func)
            raise ExpressionError(f"{text!r}: cannot call {called!r} (functions: {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise ExpressionError(f"{text!r}: {node.func.id}() takes positional arguments only")
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        raise ExpressionError(f"{text!r}: no key {node.attr!r}")


def names_used(text: str) -> set[str]:
    """The free names an expression reads (not the functions it calls)."""
    called = {id(n.func) for n in ast.walk(_parse(text)) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(_parse(text)) if isinstance(n, ast.Name) and id(n) not in called}


def check(text: str) -> None:
    """Raise :class:`ExpressionError` if ``text`` is not a valid expression (names unchecked)."""
    _parse(text)


def evaluate(value: str | float | int, namespace: Mapping[str, Any]) -> Any:
    """The value of an expression (or a plain number) with ``namespace``'s names."""
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number or an expression string, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    node = _parse(value)
    try:
        with np.errstate(all="ignore"):  # IEEE results (1 / 0 = inf), judged by the caller, no warning
            return _eval(node, namespace, value)
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ExpressionError(f"{value!r}: {type(exc).__name__}: {exc}") from exc


def _lookup(container: Any, key: str | int, text: str) -> Any:
    if isinstance(container, Mapping):
        if key not in container:
            known = ", ".join(map(str, container)) or "none"
            raise ExpressionError(f"{text!r}: no key {key!r} (keys: {known})")
        return container[key]
    if isinstance(container, str):
        raise ExpressionError(f"{text!r}: cannot index the text {container!r}")
    if isinstance(key, str) and isinstance(container, Sequence):  # a list of named tables
        for item in container:
            if isinstance(item, Mapping) and item.get("name") == key:
                return item
        raise ExpressionError(f"{text!r}: no entry named {key!r}")
    if isinstance(container, Sequence | np.ndarray):
        if isinstance(key, float) and float(key).is_integer():
            key = int(key)
        if not isinstance(key, int) or not -len(container) <= key < len(container):
            raise ExpressionError(f"{text!r}: index {key!r} out of range for {len(container)} entries")
        return container[key]
    raise ExpressionError(f"{text!r}: {key!r}: {container!r} has no entries")


def _eval(node: ast.expr, ns: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            raise ExpressionError(f"{text!r}: the text {node.value!r} is only allowed as a [\"key\"]")
        assert isinstance(node.value, int | float)  # _check_node admits numbers and key strings only
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id in ns:
            return ns[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        known = ", ".join(sorted(n for n in ns if not n.startswith("_")))
        raise ExpressionError(f"{text!r}: unknown name {node.id!r} (known: {known})")
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, ns, text), _eval(node.right, ns, text))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, ns, text))
    if isinstance(node, ast.Attribute):
        return _lookup(_eval(node.value, ns, text), node.attr, text)
    if isinstance(node, ast.Subscript):
        index = node.slice
        key = index.value if isinstance(index, ast.Constant) and isinstance(index.value, str) \
            else _eval(index, ns, text)
        return _lookup(_eval(node.value, ns, text), key, text)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_eval(arg, ns, text) for arg in node.args))
    raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed")  # excluded by _check_node
