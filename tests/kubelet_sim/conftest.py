"""Fixtures shared by the simulator tests: host bridge names for the tests that touch the
kernel (root only), and our CNI plugins with a failing loopback. A running cluster is
:func:`tests.fixtures.cluster.running_cluster`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.netns import delete_link, unique_name
from tests.kubelet_sim.failing_plugins import bin_dir_with_failing_loopback


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
