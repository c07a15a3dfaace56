"""Registries that other packages can extend: by calling ``register`` or through entry points.

Each of :mod:`contactopt.formulations`, :mod:`contactopt.solvers` and
:mod:`contactopt.systems` keeps its entries in a :class:`Registry`: a mapping from name to
entry that, the first time it is read, adds the objects that installed packages declare in
the entry-point group ``contactopt.formulations``, ``contactopt.solvers`` or
``contactopt.systems`` (:func:`importlib.metadata.entry_points`). Loading is lazy so that
``import contactopt`` stays cheap and a plugin is imported only when a registry is used.

A plugin that cannot be imported, declares the wrong kind of object or reuses a name is
skipped with a :class:`PluginWarning` naming its entry point; it never stops a command that
does not need it. Registering a name twice through ``register`` raises
:class:`~contactopt.core.errors.RegistrationError`. See ``docs/extending.md``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from contactopt.core.errors import RegistrationError

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

__all__ = ["PluginWarning", "Registry", "check_name"]

T = TypeVar("T")

# Names are typed on command lines and in comma- and colon-separated lists
# ("lcp:k=8", "cvxpy:SCS", "--solvers a,b"), so they are restricted to one plain word.
_NAME = re.compile(r"[a-z][a-z0-9_\-]*")


class PluginWarning(UserWarning):
    """An installed plugin could not be registered; the message names its entry point."""


def check_name(name: Any, kind: str) -> str:
    """``name`` if it is a usable registry name (lower-case word), else RegistrationError."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RegistrationError(f"{kind} name {name!r} is not usable: expected a lower-case word "
                                "of letters, digits, '_' or '-' starting with a letter")
    return name


class Registry(dict[str, T], Generic[T]):
    """A name -> entry mapping that adds the entry points of ``group`` when first read.

    ``adapt`` turns what an entry point loads into ``(name, entry)`` and raises
    RegistrationError when the object is not of the registry's kind. Reads (``[]``, ``in``,
    iteration, ``len``, ``get``, ``keys``, ``values``, ``items``) load the plugins first;
    :meth:`add` is the only way in after construction.
    """

    def __init__(self, kind: str, group: str, builtin: Mapping[str, T],
                 adapt: Callable[[Any], tuple[str, T]]) -> None:
        super().__init__(builtin)
        self.kind = kind
        self.group = group
        self._adapt = adapt
        self._origin = dict.fromkeys(builtin, "built in")
        self._loaded = False

    def add(self, name: str, entry: T, origin: str = "register()") -> None:
        """Register ``entry`` under ``name``; a name already taken is a RegistrationError."""
        self.load_plugins()
        if dict.__contains__(self, name):
            raise RegistrationError(f"{self.kind} {name!r} is already registered "
                                    f"({self._origin[name]}); choose another name")
        dict.__setitem__(self, name, entry)
        self._origin[name] = origin

    def origin(self, name: str) -> str:
        """Where an entry came from: ``built in``, ``register()`` or ``entry point ...``."""
        self.load_plugins()
        return self._origin[name]

    def load_plugins(self) -> None:
        """Add every entry point of the group once; a failing one becomes a PluginWarning."""
        if self._loaded:
            return
        self._loaded = True  # first, so that a plugin calling register() does not recurse
        for point in entry_points(group=self.group):
            self._load_one(point)

    def _load_one(self, point: EntryPoint) -> None:
        where = f"entry point {point.name!r} = {point.value!r} (group {self.group})"
        try:
            name, entry = self._adapt(point.load())
            self.add(name, entry, origin=where)
        except Exception as exc:  # a broken plugin must not stop unrelated commands
            warnings.warn(f"contactopt: skipped the {self.kind} plugin {where}: "
                          f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=2)

    # Every read goes through load_plugins.
    def __getitem__(self, name: str) -> T:
        self.load_plugins()
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        self.load_plugins()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.load_plugins()
        return dict.__len__(self)

    def get(self, name: str, default: Any = None) -> Any:
        self.load_plugins()
        return dict.get(self, name, default)

    def keys(self) -> dict_keys[str, T]:
        self.load_plugins()
        return dict.keys(self)

    def values(self) -> dict_values[str, T]:
        self.load_plugins()
        return dict.values(self)

    def items(self) -> dict_items[str, T]:
        self.load_plugins()
        return dict.items(self)

    def __setitem__(self, name: str, entry: T) -> None:
        raise RegistrationError(f"use register() to add a {self.kind} (got {name!r})")
