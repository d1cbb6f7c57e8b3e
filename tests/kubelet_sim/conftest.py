"""Fixtures shared by the simulator tests: a running cluster, and host bridge names for the
tests that touch the kernel (root only)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from tests.kubelet_sim.failing_plugins import bin_dir_with_failing_loopback
from tests.netns_support import delete_link, unique_name


@asynccontextmanager
async def running_cluster(nodes: int, driver_args: Sequence[str] = ()) -> AsyncIterator[Cluster]:
    """A started cluster of ``nodes`` nodes (``driver_args`` for every driver process),
    stopped on leaving, also when its start fails."""
    cluster = Cluster(ClusterConfig(nodes=default_nodes(nodes), driver_args=driver_args))
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.stop()


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
