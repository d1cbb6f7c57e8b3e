"""The simulator's reaction to a driver that fails the way real ones do, injected with
the driver's own ``--faults`` rules: NodeStageVolume UNAVAILABLE twice, then the pod
runs after the kubelet's third call (backing off 0.5 s, then 1 s, with a FailedMount event
naming the error); ControllerPublishVolume hanging past the attacher's timeout is called
again with the same arguments and the volume attaches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig, default_nodes
from kubelet_sim.sidecars.attacher import ExternalAttacher

RULES = """\
- method: NodeStageVolume
  code: UNAVAILABLE
  message: injected by the test
  times: 2
- method: ControllerPublishVolume
  hang: true
  times: 1
"""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    rules = tmp_path / "faults.yaml"
    rules.write_text(RULES)
    c = Cluster(ClusterConfig(nodes=default_nodes(1), driver_args=["--faults", str(rules)]))
    try:
        await c.start()
        c.api.create(builders.storage_class("mini", DRIVER_NAME))
        yield c
    finally:
        await c.stop()


async def test_the_cluster_retries_a_failing_stage_and_a_hung_publish_until_the_pod_runs(
    cluster: Cluster,
) -> None:
    assert cluster.manager is not None
    [attacher] = [c for c in cluster.manager.controllers if isinstance(c, ExternalAttacher)]
    attacher.csi = attacher.csi.with_component(attacher.name, timeout=1.0)  # --timeout=1s
    cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                        storage_class="mini"))
    cluster.api.create(builders.pod("app", volumes=[builders.pvc_volume("data", "data")]))
    await cluster.settle()

    assert cluster.api.get("Pod", "app", "default").status["phase"] == "Running"
    publishes = [e for e in cluster.trace if e.call == "csi.Controller/ControllerPublishVolume"]
    assert [e.result.split(":")[0] for e in publishes] == ["DEADLINE_EXCEEDED", "OK"]
    assert publishes[0].request == publishes[1].request  # retried with the same arguments
    stages = [e for e in cluster.trace if e.call == "csi.Node/NodeStageVolume"]
    assert [e.result for e in stages] == ["UNAVAILABLE: injected by the test"] * 2 + ["OK"]
    assert stages[0].request == stages[2].request
    failed = [e.message for e in cluster.events.for_object("Pod", "app", "default")
              if e.reason == "FailedMount"]
    assert any("not attached to node-1 yet" in m for m in failed)  # while publish hung
    assert any("UNAVAILABLE" in m and "injected by the test" in m for m in failed)
