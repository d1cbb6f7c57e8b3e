"""Opaque page tokens for ListVolumes and ListSnapshots (keyset on a row sequence)."""

from __future__ import annotations

import re

from csi_driver.errors import Aborted

_PREFIX = "p"
# Only what encode_token hands out: ASCII digits (str.isdigit() also takes '²' and
# other Unicode digits int() refuses) without leading zeros, at most 19 of them.
_TOKEN = re.compile(re.escape(_PREFIX) + r"([1-9][0-9]{0,18}|0)")
_MAX_SEQ = (1 << 63) - 1  # SQLite's INTEGER: a larger bound overflows the query


def encode_token(last_seq: int) -> str:
    return f"{_PREFIX}{last_seq}"


def decode_token(token: str) -> int:
    """"" → start; anything we did not hand out → ABORTED (as the spec requires)."""
    if not token:
        return 0
    match = _TOKEN.fullmatch(token)
    if match is None or int(match.group(1)) > _MAX_SEQ:
        raise Aborted(f"invalid starting_token {token!r}")
    return int(match.group(1))
