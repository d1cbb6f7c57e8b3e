"""A running pod deleted in a cluster: the kubelet kills its containers and writes the
terminal status (terminated states, phase, Ready False) before its final delete, so a
watch sees MODIFIED with phase Succeeded, then DELETED (the kubelet on a fake clock)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from kubelet_sim.api import builders
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.testing.fake_clock import FakeClock

NODE = "node-1"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig(nodes=default_nodes(1)))
    try:
        await c.start()
        c.kubelets[NODE].clock = FakeClock(datetime.now(UTC))
        yield c
    finally:
        await c.stop()


async def test_a_deleted_running_pod_is_written_terminal_before_it_goes(
        cluster: Cluster) -> None:
    c = cluster
    c.api.create(builders.pod("web", node_name=NODE))
    await c.settle()
    assert c.api.get("Pod", "web", "default").status["phase"] == "Running"
    mark = c.api.resource_version
    c.api.delete("Pod", "web", "default", grace_period_seconds=30)
    await c.settle()
    events = [e for e in c.api.events_since(mark, "Pod", "default") if e.object.name == "web"]
    kinds = [e.type for e in events]
    assert kinds[-1] == "DELETED"
    terminal = [e for e in events if e.type == "MODIFIED"
                and e.object.status.get("phase") == "Succeeded"]
    assert terminal, kinds
    assert kinds.index("DELETED") > events.index(terminal[0])
    pod = terminal[0].object
    assert pod.metadata.deletion_timestamp
    state = pod.status["containerStatuses"][0]
    assert state["state"]["terminated"]["reason"] == "Completed"
    assert (state["ready"], state["started"]) == (False, False)
    ready = next(cond for cond in pod.status["conditions"] if cond["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    assert events[-1].object.status["phase"] == "Succeeded"  # the last state it had
