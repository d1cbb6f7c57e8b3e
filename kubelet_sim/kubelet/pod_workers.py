"""The kubelet's pod workers: each pod is synced by at most one worker at a time, and
several pods of a node are synced at once (up to a bound), so one pod's CNI execs and CSI
calls never wait for another pod's. A volume several pods use is still handled one
operation at a time: the volume manager serialises operations per volume (the kubelet's
nestedpendingoperations rule), and no lock is held across a whole pod's sync.

A finished worker tells the kubelet's loop (``on_done(uid, changed, again)``): whether its
sync changed something (what one pod did, a volume now staged, say, may let another go
on), and why the pod must be synced again when news for it came while the worker was at
it (:meth:`PodWorkers.sync_again`, as the kubelet's pod workers keep a pending update for
a busy pod): that news is never lost to the busy worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

DEFAULT_PARALLEL_PODS = 4

# told (pod uid, whether its sync changed something, why to sync it again or None)
OnDone = Callable[[str, bool, str | None], None]


class PodWorkers:
    def __init__(self, limit: int = DEFAULT_PARALLEL_PODS,
                 on_done: OnDone | None = None) -> None:
        if limit < 1:
            raise ValueError("at least one pod worker")
        self._slots = asyncio.Semaphore(limit)
        self._on_done = on_done
        self._tasks: dict[str, asyncio.Task[bool]] = {}
        self._again: dict[str, str] = {}  # uid -> why its news came while busy

    def busy(self, uid: str) -> bool:
        """A worker is syncing (or waits to sync) the pod ``uid``."""
        return uid in self._tasks

    def dispatch(self, uid: str, sync: Callable[[], Awaitable[bool]]) -> None:
        """Sync the pod ``uid`` in a worker of its own (the caller checked :meth:`busy`)."""
        self._tasks[uid] = asyncio.create_task(self._work(uid, sync), name=f"pod-{uid}")

    def sync_again(self, uid: str, why: str) -> None:
        """News (``why``) for the pod ``uid`` while its worker is busy: ``on_done`` hands
        it back once the worker finishes (the first reason given is kept)."""
        self._again.setdefault(uid, why)

    async def _work(self, uid: str, sync: Callable[[], Awaitable[bool]]) -> bool:
        changed = False
        try:
            async with self._slots:
                changed = await sync()
            return changed
        except Exception:  # a pod's failed sync is retried by a later pass (the resync)
            log.exception("pod worker %s failed", uid)
            return True
        finally:
            self._tasks.pop(uid, None)
            again = self._again.pop(uid, None)
            if self._on_done is not None:
                self._on_done(uid, changed, again)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def wait(self) -> bool:
        """Wait for every worker now running; True when any changed something."""
        results = await asyncio.gather(*self._tasks.values())
        return any(results)
