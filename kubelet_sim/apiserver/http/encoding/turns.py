"""Big answers take turns on the event loop, a slice each, and leave it idle half the time.

Writing a slice of an answer (128 KiB) costs the loop's thread its TLS encryption and a
send, ~0.2-0.3 ms. Eight LISTs of 13 MB each answered at once would write eight slices
in every pass of the loop, and a ``/healthz`` waits for a few passes. Taking turns keeps
one big slice at a time whatever the number of big answers, and after each the loop
idles as long as the slice took: big answers get half the loop's thread at most (13 MB
in ~0.1 s). A loop kept busy by big answers is, for the OS, a thread that uses all its
CPU time, which waits behind the machine's other work when a request comes in; one that
sleeps half the time runs at once (``bench lists``, 2 cores shared with other sessions,
load 4-24: ``/healthz`` p99 with eight listers 19-63 ms, median 34, 36-123 ms without). A
slow client holds up no one: its answer waits for the client to take what was written
before (the transport's buffer to drain) outside its turn.
"""

from __future__ import annotations

import asyncio
import time
from weakref import WeakKeyDictionary

from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_writer import StreamWriter

PACE = 1.0  # the loop's idle time after a big slice, per second of CPU the slice took
_turns: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = WeakKeyDictionary()


def _turn() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    turn = _turns.get(loop)
    if turn is None:
        turn = _turns[loop] = asyncio.Lock()
    return turn


async def write_slice(writer: AbstractStreamWriter, data: bytes | memoryview) -> None:
    """``data`` (one slice of a big answer) written in its turn, after what was written
    before has gone to the client; the loop runs a pass before the next turn."""
    await writer.drain()
    async with _turn():
        began = time.thread_time()
        if isinstance(writer, StreamWriter):
            await writer.write(data, drain=False)
        else:
            await writer.write(data)
        # the loop idles as long as the slice took it: big answers get half of its thread
        # at most, and the loop stays a thread that sleeps, one the OS runs at once when a
        # request comes in, where a busy one waits its turn behind the machine's other work
        await asyncio.sleep((time.thread_time() - began) * PACE)
