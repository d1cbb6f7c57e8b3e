"""At most one operation per volume id or name at a time; a second one → ABORTED.

The spec asks plugins to answer ABORTED when an operation is pending for the
same volume, so the CO backs off and retries instead of racing itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from csi_driver.errors import Aborted


class InFlight:
    def __init__(self) -> None:
        self._busy: set[str] = set()

    @contextmanager
    def hold(self, *keys: str) -> Iterator[None]:
        wanted = [k for k in keys if k]
        for key in wanted:
            if key in self._busy:
                raise Aborted(f"an operation on {key.split(':', 1)[1]!r} is already in progress")
        self._busy.update(wanted)
        try:
            yield
        finally:
            self._busy.difference_update(wanted)
