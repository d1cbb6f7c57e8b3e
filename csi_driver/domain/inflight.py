"""At most one operation per volume id or name at a time; a second one → ABORTED.

The spec asks plugins to answer ABORTED when an operation is pending for the
same volume, so the CO backs off and retries instead of racing itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from csi_driver.errors import Aborted


class InFlight:
    def __init__(self) -> None:
        self._busy: set[str] = set()

    @contextmanager
    def hold(self, *keys: str) -> Iterator[None]:
        wanted = [k for k in keys if k.partition(":")[2]]
        for key in wanted:
            if key in self._busy:
                raise Aborted(f"an operation on {key.split(':', 1)[1]!r} is already in progress")
        self._busy.update(wanted)
        try:
            yield
        finally:
            self._busy.difference_update(wanted)


class Activity:
    """How busy the server is, so a commit can pick the cheaper way to wait for its fsync.

    Requests still in the socket cannot be counted, and an inline commit (which
    blocks the loop) hides them; so the server mostly commits inline while it
    looks alone, samples a threaded commit now and then, and switches to
    threaded commits (the loop serves others during the fsync) as soon as other
    RPCs are seen arriving during one."""

    SAMPLE_EVERY = 0.1  # seconds between sampled threaded commits while inline
    QUIET_TO_INLINE = 8  # threaded commits without overlap before going back inline

    def __init__(self) -> None:
        self.rpcs = 0
        self.starts = 0
        self._inline = True
        self._quiet = 0
        self._last_sample = 0.0

    def started(self) -> None:
        self.rpcs += 1
        self.starts += 1

    def finished(self) -> None:
        self.rpcs -= 1

    def commit_inline(self) -> bool:
        if self.rpcs > 1 or not self._inline:
            return False
        now = time.monotonic()
        if now - self._last_sample > self.SAMPLE_EVERY:
            self._last_sample = now
            return False
        return True

    def observed(self, overlapped: bool) -> None:
        """Record whether other RPCs started while a threaded commit was running."""
        if overlapped:
            self._inline = False
            self._quiet = 0
        else:
            self._quiet += 1
            if self._quiet >= self.QUIET_TO_INLINE:
                self._inline = True
