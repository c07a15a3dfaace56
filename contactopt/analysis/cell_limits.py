"""The time limit of one comparison cell (``compare(..., cell_time_limit=S)``).

A cell cannot be stopped from outside without losing what it computed, so the limit is
raised *inside* the thread that runs it: a timer thread throws :class:`CellTimeLimitReached`
into it (``PyThreadState_SetAsyncExc``, which works in any thread: the main one of a pool
worker, a Dask worker's task thread). It is a :class:`KeyboardInterrupt`, so ``simulate``
stops as on Ctrl-C and returns its finished steps, which the cell keeps. The exception lands
between Python bytecodes: a single long call into a native solver finishes first.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["CellTimeLimitReached", "Deadline", "cell_deadline"]


class CellTimeLimitReached(KeyboardInterrupt):
    """Thrown into a cell's thread when its time limit is reached (module docstring)."""


@dataclass
class Deadline:
    """The limit of one cell and whether it was reached."""

    seconds: float | None
    reached: bool = False
    armed: bool = True

    @property
    def reason(self) -> str:
        return f"time limit {self.seconds:g} s reached"


def _throw(thread_id: int, exception: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exception) if exception else None)


@contextlib.contextmanager
def cell_deadline(seconds: float | None) -> Iterator[Deadline]:
    """Within the block, :class:`CellTimeLimitReached` is raised in this thread after
    ``seconds`` (never after the block: a throw still pending at its end is withdrawn)."""
    deadline = Deadline(seconds)
    if seconds is None:
        yield deadline
        return
    target = threading.get_ident()
    lock = threading.Lock()

    def expire() -> None:
        with lock:
            if deadline.armed:
                deadline.reached = True
                _throw(target, CellTimeLimitReached)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield deadline
    finally:
        with lock:
            deadline.armed = False
            if deadline.reached:
                _throw(target, None)  # withdraw it if it has not been raised yet
        timer.cancel()
