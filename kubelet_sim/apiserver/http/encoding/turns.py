"""Big answers take turns on the event loop, a slice each, one slice per pass of the loop.

Writing a slice of an answer (128 KiB) costs the loop's thread its TLS encryption and a
send, ~0.2-0.3 ms. Eight LISTs of 13 MB each answered at once would write eight slices
in every pass of the loop, and a ``/healthz`` waits for a few passes. Taking turns keeps
one big slice per pass whatever the number of big answers: their total time is the same
(the loop's one thread encrypts them all anyway), what waits behind them is not. A slow
client holds up no one: its answer waits for the client to take what was written before
(the transport's buffer to drain) outside its turn.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_writer import StreamWriter

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
        if isinstance(writer, StreamWriter):
            await writer.write(data, drain=False)
        else:
            await writer.write(data)
        await asyncio.sleep(0)  # whatever else is ready runs before the next big slice
