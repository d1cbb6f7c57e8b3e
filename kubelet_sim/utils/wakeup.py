"""Waking a loop: when it is told something changed, on a deadline, or to stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable


async def wait_any(stop: asyncio.Event, dirty: asyncio.Event, sleep: Awaitable[None]) -> None:
    """Return when ``stop`` or ``dirty`` is set or ``sleep`` is over."""
    tasks = [asyncio.create_task(stop.wait()), asyncio.create_task(dirty.wait()),
             asyncio.ensure_future(sleep)]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
