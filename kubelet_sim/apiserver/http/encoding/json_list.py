"""A JSON list answer put together from its items' stored encodings.

A stored object keeps its JSON bytes (made once, :meth:`ObjectStore.encoded_json`), so a
LIST in JSON needs no encoding: the answer is the list's head, the items' bytes with
``", "`` between them, and ``]}``, byte for byte what ``json.dumps`` of the whole list
writes. Nothing is joined into one big buffer either: the items are written a slice of
about :data:`WRITE_SLICE` bytes at a time, each slice one small C-level join on the event
loop's thread. Building a LIST of 20,000 objects then holds the GIL for a few ms in all,
where encoding (or joining megabytes, a single C call) would hold it for tens of ms at a
stretch and make the loop wait for it.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import payload, web
from aiohttp.abc import AbstractStreamWriter

from kubelet_sim.apiserver.http.encoding.negotiation import JSON, WRITE_SLICE
from kubelet_sim.apiserver.http.encoding.turns import write_slice

SEPARATOR = b", "  # json.dumps' item separator
TAIL = b"]}"


def head(kind: str, api_version: str, metadata: dict[str, Any]) -> bytes:
    """A list answer's bytes up to its first item: ``{"kind": …, "apiVersion": …,
    "metadata": {…}, "items": [``, as ``json.dumps`` writes them."""
    whole = json.dumps({"kind": kind, "apiVersion": api_version, "metadata": metadata})
    return (whole[:-1] + ', "items": [').encode()


def joined(start: bytes, items: list[bytes]) -> bytes:
    """The whole answer in one buffer (small answers; tests)."""
    return start + SEPARATOR.join(items) + TAIL


class _Items(payload.Payload):
    """A big list answer, written about :data:`WRITE_SLICE` bytes at a time with the loop
    free in between (TLS encrypts what is written on the loop's thread), in turn with the
    other big answers (:mod:`.turns`)."""

    _autoclose = True

    def __init__(self, start: bytes, items: list[bytes], size: int) -> None:
        super().__init__(items, content_type=JSON)
        self._start = start
        self._size = size
        # items per slice: objects of one kind are of about the same size
        self._step = max(1, WRITE_SLICE * len(items) // max(1, size))

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return joined(self._start, self._value).decode(encoding, errors)

    async def write(self, writer: AbstractStreamWriter) -> None:
        items: list[bytes] = self._value
        step, count = self._step, len(items)
        for first in range(0, count, step):
            group = items[first:first + step]
            data = (self._start if first == 0 else SEPARATOR) + SEPARATOR.join(group)
            if first + step >= count:
                data += TAIL
            await write_slice(writer, data)  # in turn with other big answers


def respond_list(start: bytes, items: list[bytes]) -> web.Response:
    """A 200 JSON answer: ``start`` (:func:`head`), then ``items`` (each an object's
    JSON) as the list's items."""
    size = len(start) + sum(map(len, items)) + len(SEPARATOR) * max(0, len(items) - 1) \
        + len(TAIL)
    if size <= WRITE_SLICE or not items:
        return web.Response(body=joined(start, items), headers={"Content-Type": JSON})
    return web.Response(body=_Items(start, items, size), headers={"Content-Type": JSON})
