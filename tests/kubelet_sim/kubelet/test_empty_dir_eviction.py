"""The kubelet's eviction of a running pod whose emptyDir outgrew its ``sizeLimit``: the
Evicted event with the kubelet's message, the Failed status with reason Evicted and the
DisruptionTarget condition, checked once per monitoring interval (fake clock)."""

from __future__ import annotations

from pathlib import Path

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, condition
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.empty_dir_eviction import EmptyDirEviction
from kubelet_sim.kubelet.local_volumes import LocalVolumes
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.pod_status import write_running
from kubelet_sim.kubelet.service_account_tokens import TokenManager
from kubelet_sim.testing.fake_clock import FakeClock

MESSAGE = 'Usage of EmptyDir volume "scratch" exceeds the limit "1Ki". '


def running_pod(api: APIServer) -> Resource:
    pod = builders.pod("web", node_name="node-1")
    pod.spec["volumes"] = [{"name": "scratch", "emptyDir": {"sizeLimit": "1Ki"}}]
    pod = api.create(pod)
    write_running(pod, sandbox_id="sb-1", host_ip="10.0.0.1", ips=["10.244.1.5"],
                  now="2025-01-01T00:00:00Z")
    return api.update_status(pod)


async def test_a_pod_over_its_empty_dir_limit_is_evicted_once_the_check_is_due(
        tmp_path: Path) -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    recorder = EventRecorder(api)
    client = as_client(api)
    volumes = LocalVolumes(client, KubeletPaths(tmp_path / "kubelet"), "node-1",
                           tmp_path / "rootfs", clock, TokenManager(client, clock))
    eviction = EmptyDirEviction(client, recorder, "node-1", volumes, clock)
    pod = running_pod(api)
    await volumes.set_up(pod)
    assert not await eviction.check([pod])  # under the limit

    scratch = volumes.volume_dir(pod.metadata.uid, "emptyDir", "scratch")
    (scratch / "data").write_bytes(b"x" * 1025)
    clock.advance(9)
    assert not await eviction.check([pod])  # not due yet: every 10 s
    clock.advance(1)
    assert await eviction.check([pod])

    [event] = recorder.warnings("Pod", "web", "default")
    assert (event.reason, event.message) == ("Evicted", MESSAGE)
    evicted = api.get("Pod", "web", "default")
    assert (evicted.status["phase"], evicted.status["reason"], evicted.status["message"]) == \
        ("Failed", "Evicted", MESSAGE)
    target = condition(evicted, "DisruptionTarget") or {}
    assert (target.get("status"), target.get("reason")) == ("True", "TerminationByKubelet")
    assert (condition(evicted, "Ready") or {}).get("status") == "False"
    [container] = evicted.status["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 137

    clock.advance(10)
    assert not await eviction.check([evicted])  # a Failed pod is not evicted again
