"""How every verb of the API server runs: serialised by its lock (the store is used from
the event loop and from worker threads at once), after the expiry of what outlived its
TTL, and — writes only, outside the lock — after the injected write delay (a slow etcd
delays writers, not readers)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
WRITES = frozenset({"create", "update", "update_status", "patch", "delete"})


class _Store(Protocol):
    def expire(self) -> int: ...


class _Server(Protocol):
    write_delay: float
    _lock: threading.RLock
    _store: _Store


def locked(method: F) -> F:
    slow = method.__name__ in WRITES

    @functools.wraps(method)
    def wrapper(self: _Server, *args: Any, **kwargs: Any) -> Any:
        if slow and self.write_delay:
            time.sleep(self.write_delay)
        with self._lock:
            self._store.expire()  # what outlived its TTL goes first, as etcd's leases do
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
