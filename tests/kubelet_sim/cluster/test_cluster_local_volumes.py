"""The kubelet's own volumes in a simulated cluster, across a kubelet restart: a pod with
a configMap and an emptyDir runs; a new kubelet on the same root (as after a restart)
takes the pod back, writes its configMap files again when the ConfigMap changes, and
tears everything down with the pod."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import new
from kubelet_sim.cluster import Cluster, ClusterConfig

NODE = "node-1"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig())
    try:
        await c.start()
        yield c
    finally:
        await c.stop()


async def test_a_restarted_kubelet_keeps_a_pods_config_map_current_and_tears_it_down(
        cluster: Cluster) -> None:
    cluster.api.create(new("ConfigMap", "settings", "default", data={"level": "info"}))
    cluster.api.create(builders.pod("web", volumes=[
        {"name": "config", "configMap": {"name": "settings"}},
        {"name": "scratch", "emptyDir": {}}]))
    await cluster.settle()
    pod = cluster.api.get("Pod", "web", "default")
    assert pod.status["phase"] == "Running"
    old = cluster.kubelets[NODE]
    config = old.local_volumes.volume_dir(pod.metadata.uid, "configMap", "config")
    scratch = old.local_volumes.volume_dir(pod.metadata.uid, "emptyDir", "scratch")
    assert (config / "level").read_text() == "info"
    (scratch / "work").write_text("kept")

    spec = next(s for s in cluster.config.nodes if s.name == NODE)
    restarted = cluster.kubelets[NODE] = cluster._kubelet(spec, old.paths.root)
    await restarted.start()
    await cluster.settle()
    first = os.readlink(config / "..data")
    assert (scratch / "work").read_text() == "kept"

    current = cluster.api.get("ConfigMap", "settings", "default")
    current.body["data"] = {"level": "debug"}
    cluster.api.update(current)
    await cluster.settle()
    assert (config / "level").read_text() == "debug"
    assert os.readlink(config / "..data") != first

    cluster.api.delete("Pod", "web", "default")
    await cluster.settle()
    assert not (restarted.paths.pods_dir / pod.metadata.uid).exists()


async def test_a_pod_deleted_while_the_kubelet_was_down_loses_its_files_at_start(
        cluster: Cluster) -> None:
    cluster.api.create(builders.pod("web", volumes=[{"name": "scratch", "emptyDir": {}}]))
    await cluster.settle()
    pod = cluster.api.get("Pod", "web", "default")
    old = cluster.kubelets[NODE]
    pod_dir = old.paths.pods_dir / pod.metadata.uid
    assert pod_dir.is_dir()
    del cluster.kubelets[NODE]  # the kubelet is down: nobody tears the pod down
    cluster.api.delete("Pod", "web", "default", grace_period_seconds=0)
    await cluster.settle()
    assert pod_dir.is_dir()

    spec = next(s for s in cluster.config.nodes if s.name == NODE)
    restarted = cluster.kubelets[NODE] = cluster._kubelet(spec, old.paths.root)
    await restarted.start()

    assert not pod_dir.exists()
