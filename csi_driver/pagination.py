"""Opaque page tokens for ListVolumes and ListSnapshots (keyset on a row sequence)."""

from __future__ import annotations

from csi_driver.errors import Aborted

_PREFIX = "p"


def encode_token(last_seq: int) -> str:
    return f"{_PREFIX}{last_seq}"


def decode_token(token: str) -> int:
    """"" → start; anything we did not hand out → ABORTED (as the spec requires)."""
    if not token:
        return 0
    digits = token[len(_PREFIX):]
    if not token.startswith(_PREFIX) or not digits.isdigit():
        raise Aborted(f"invalid starting_token {token!r}")
    return int(digits)
