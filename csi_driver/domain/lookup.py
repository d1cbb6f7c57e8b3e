"""The one NotFound every domain lookup raises for a missing record."""

from __future__ import annotations

from typing import TypeVar

from csi_driver.errors import NotFound

R = TypeVar("R")


def must_exist(record: R | None, what: str, object_id: str) -> R:
    """``record``, or NotFound ``<what> '<id>' does not exist`` when it is None."""
    if record is None:
        raise NotFound(f"{what} {object_id!r} does not exist")
    return record
