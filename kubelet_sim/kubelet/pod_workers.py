"""The kubelet's pod workers: each pod is synced by at most one worker at a time, and
several pods of a node are synced at once (up to a bound), so one pod's CNI execs and CSI
calls never wait for another pod's. A volume several pods use is still handled one
operation at a time: the volume manager serialises operations per volume (the kubelet's
nestedpendingoperations rule), and no lock is held across a whole pod's sync.

A finished worker tells the kubelet's loop (``on_done(uid)``), which then syncs again:
what one pod did (a volume now staged, say) may let another go on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

DEFAULT_PARALLEL_PODS = 4


class PodWorkers:
    def __init__(self, limit: int = DEFAULT_PARALLEL_PODS,
                 on_done: Callable[[str], None] | None = None) -> None:
        if limit < 1:
            raise ValueError("at least one pod worker")
        self._slots = asyncio.Semaphore(limit)
        self._on_done = on_done
        self._tasks: dict[str, asyncio.Task[bool]] = {}

    def busy(self, uid: str) -> bool:
        """A worker is syncing (or waits to sync) the pod ``uid``."""
        return uid in self._tasks

    def dispatch(self, uid: str, sync: Callable[[], Awaitable[bool]]) -> None:
        """Sync the pod ``uid`` in a worker of its own (the caller checked :meth:`busy`)."""
        self._tasks[uid] = asyncio.create_task(self._work(uid, sync), name=f"pod-{uid}")

    async def _work(self, uid: str, sync: Callable[[], Awaitable[bool]]) -> bool:
        try:
            async with self._slots:
                return await sync()
        except Exception:  # a pod's failed sync is retried by a later pass
            log.exception("pod worker %s failed", uid)
            return True
        finally:
            self._tasks.pop(uid, None)
            if self._on_done is not None:
                self._on_done(uid)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def wait(self) -> bool:
        """Wait for every worker now running; True when any changed something."""
        results = await asyncio.gather(*self._tasks.values())
        return any(results)
