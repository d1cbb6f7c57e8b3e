"""The threads that keep slow work off the HTTP server's event loop, so ``/healthz``, a
GET or a watch event is never queued behind a LIST of thousands of objects or a write
the write-delay fault holds up.

- Reads that scale with the store (lists, a watch's start-up) run in a small pool: the
  work is Python holding the GIL, so more threads would not list faster, they would
  only make the loop wait longer for the GIL between their slices. Lists beyond the
  pool's size wait their turn there, not on the loop.
- Writes run in a larger pool: most of their time is the injected delay (a sleep) or
  the API server's lock, neither of which holds the GIL.

The threads carry their names into the OS (``apiserver-list``, ``apiserver-write``, and
``apiserver-http`` for the event loop's): ``top -H`` and ``bench lists`` (which reads
``/proc/PID/task/*/stat``) tell them apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

LIST_THREADS = 1  # two: /healthz p99 96 ms with eight big LISTs, one: 77 ms
WRITE_THREADS = 16
LIST_THREAD_NAME = "apiserver-list"
WRITE_THREAD_NAME = "apiserver-write"
LOOP_THREAD_NAME = "apiserver-http"


def name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` (15 bytes at most) in the OS too, where Linux
    has it (CPython 3.11 leaves every thread the process's name); nothing elsewhere."""
    with contextlib.suppress(OSError):
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(name[:15])


class Workers:
    """The two pools of one HTTP server; :meth:`shutdown` when it stops."""

    def __init__(self, list_threads: int = LIST_THREADS,
                 write_threads: int = WRITE_THREADS) -> None:
        self._reads = ThreadPoolExecutor(list_threads, thread_name_prefix=LIST_THREAD_NAME,
                                         initializer=name_os_thread,
                                         initargs=(LIST_THREAD_NAME,))
        self._writes = ThreadPoolExecutor(write_threads, thread_name_prefix=WRITE_THREAD_NAME,
                                          initializer=name_os_thread,
                                          initargs=(WRITE_THREAD_NAME,))

    async def read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in the read pool."""
        return await _run(self._reads, fn, *args, **kwargs)

    async def write(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in the write pool."""
        return await _run(self._writes, fn, *args, **kwargs)

    def shutdown(self) -> None:
        """No new work; what runs finishes on its own."""
        self._reads.shutdown(wait=False, cancel_futures=True)
        self._writes.shutdown(wait=False, cancel_futures=True)


async def _run(pool: ThreadPoolExecutor, fn: Callable[P, T], *args: P.args,
               **kwargs: P.kwargs) -> T:
    context = contextvars.copy_context()  # as asyncio.to_thread carries it
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(pool, call)
