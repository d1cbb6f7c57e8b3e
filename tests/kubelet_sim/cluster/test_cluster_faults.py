"""The simulator's reaction to a driver that fails the way real ones do, injected with
the driver's own ``--faults`` rules: NodeStageVolume UNAVAILABLE twice, then the pod
runs after the kubelet's third call (backing off 0.5 s, then 1 s, with a FailedMount event
naming the error); ControllerPublishVolume hanging past the attacher's timeout is called
again with the same arguments and the volume attaches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from csi_driver.fault_client import request
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
    # while publish hung, the node status did not list the volume
    assert any("Volume not attached according to node status" in m for m in failed)
    assert any("UNAVAILABLE" in m and "injected by the test" in m for m in failed)

    # Each of our driver processes also answers on its fault control socket.
    node_plugin = cluster.node_plugins["node-1"].socket.parent / "faults.sock"
    listed = request(str(node_plugin), {"op": "list"})["rules"]
    assert [(r["action"], r["matched"], r["fired"]) for r in listed] == [
        ("UNAVAILABLE", 3, 2), ("hang", 0, 0)]
    assert cluster.controller_plugin is not None
    controller = cluster.controller_plugin.socket.parent / "faults.sock"
    assert [r["fired"] for r in request(str(controller), {"op": "list"})["rules"]] == [0, 1]


async def test_a_failing_cni_add_is_torn_down_with_del_and_the_sandbox_retried(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "cni-faults.json"
    rules.write_text('[{"method": "emu-bridge/ADD", "code": 11, "message": "injected: '
                     'bridge busy", "times": 2}]')
    cluster = Cluster(ClusterConfig(nodes=default_nodes(1), cni_faults=rules))
    try:
        await cluster.start()
        cluster.api.create(builders.pod("web"))
        await cluster.settle()
        assert cluster.api.get("Pod", "web", "default").status["phase"] == "Running"
        cni = [(e.call, e.result.split(":")[0]) for e in cluster.trace
               if e.call.startswith("cni ") and "STATUS" not in e.call and "GC" not in e.call]
        failed_add = ("cni ADD emu-bridge", "code 11")
        # each failed attempt: loopback up, bridge ADD fails, then the sandbox's networks
        # are deleted (bridge, then loopback) before the sandbox goes; the third runs
        assert cni[:4] == [("cni ADD emu-loopback", "OK"), failed_add,
                           ("cni DEL emu-bridge", "OK"), ("cni DEL emu-loopback", "OK")]
        assert cni[4:8] == cni[:4]
        assert cni[8:] == [("cni ADD emu-loopback", "OK"), ("cni ADD emu-bridge", "OK")]
        sandboxes = cluster.kubelets["node-1"].runtime.list_pod_sandboxes()
        assert len(sandboxes) == 1  # the failed ones were removed
        events = [e for e in cluster.events.for_object("Pod", "web", "default")
                  if e.reason == "FailedCreatePodSandBox"]
        assert events and "injected: bridge busy" in events[0].message
    finally:
        await cluster.stop()
