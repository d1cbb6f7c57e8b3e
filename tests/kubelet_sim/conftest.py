"""Fixtures shared by the simulator tests: host links (root only) and CNI bin dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubelet_sim.failing_plugins import bin_dir_with_failing_loopback
from tests.netns_support import delete_link, unique_name


@pytest.fixture
def bridge() -> Iterator[str]:
    """A unique host bridge name; the link is deleted after the test if a plugin made it."""
    name = unique_name()
    yield name
    delete_link(name)


@pytest.fixture
def cni_bin_dir_failing_loopback(tmp_path: Path) -> Path:
    """Our CNI plugins in a temp dir, with ``emu-loopback`` failing every ADD."""
    return bin_dir_with_failing_loopback(tmp_path / "cni-bin")
