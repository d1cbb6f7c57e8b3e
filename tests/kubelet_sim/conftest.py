"""Fixtures shared by the simulator tests that touch the kernel (root only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.netns_support import delete_link, unique_name


@pytest.fixture
def bridge() -> Iterator[str]:
    """A unique host bridge name; the link is deleted after the test if a plugin made it."""
    name = unique_name()
    yield name
    delete_link(name)
