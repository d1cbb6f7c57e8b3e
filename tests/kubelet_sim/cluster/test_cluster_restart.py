"""A node plugin killed with SIGKILL while a pod uses one of its volumes, then started again:
the kubelet sees the re-created registration socket, registers the driver again, and both the
old pod's teardown and a new pod's mount go through the new process."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig

STORAGE_CLASS = "mini"
NODE = "node-1"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig())
    try:
        await c.start()
        c.api.create(builders.storage_class(STORAGE_CLASS, DRIVER_NAME))
        yield c
    finally:
        await c.stop()


async def run_pod_with_claim(cluster: Cluster, pod: str, claim: str) -> None:
    cluster.api.create(builders.persistent_volume_claim(claim, storage="1Gi",
                                                        storage_class=STORAGE_CLASS))
    cluster.api.create(builders.pod(pod, volumes=[builders.pvc_volume("data", claim)]))
    await cluster.settle()


def identity(path: Path) -> tuple[int, int]:
    """What tells one socket file from another made at the same path (inodes are reused)."""
    info = path.stat()
    return info.st_ino, info.st_ctime_ns


async def wait_for_new_socket(path: Path, old: tuple[int, int], timeout: float = 20.0) -> None:
    """Until `path` is a socket other than the one the killed process left behind."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if identity(path) != old:
                return
        except FileNotFoundError:
            pass
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was not re-created within {timeout}s")


def calls_since(cluster: Cluster, start: int) -> list[tuple[str, str]]:
    return [(e.call.rpartition("/")[2] if e.call.startswith(("csi.", "plugin")) else e.call,
             e.result) for e in cluster.trace.events[start:] if e.node == NODE]


async def kill_and_restart_node_plugin(cluster: Cluster) -> None:
    proc = cluster.node_plugins[NODE]
    registration = cluster.kubelets[NODE].paths.registration_socket(DRIVER_NAME)
    old = identity(registration)
    proc.kill()
    assert proc.process is not None and proc.process.returncode == -9
    await proc.restart()
    await wait_for_new_socket(registration, old)
    await cluster.settle()


async def test_restarted_node_plugin_is_registered_again_through_its_new_socket(
    cluster: Cluster,
) -> None:
    await run_pod_with_claim(cluster, "web", "data")
    start = len(cluster.trace.events)
    await kill_and_restart_node_plugin(cluster)
    assert calls_since(cluster, start) == [
        ("DeRegisterPlugin", "OK"),
        ("GetInfo", "OK"),
        ("NodeGetInfo", "OK"),
        ("NotifyRegistrationStatus", "OK"),
    ]
    csinode = cluster.api.get("CSINode", NODE)
    assert [(d["name"], d["nodeID"]) for d in csinode.spec["drivers"]] == [(DRIVER_NAME, NODE)]
    assert cluster.api.get("Pod", "web", "default").status["phase"] == "Running"


async def test_pod_deleted_after_the_restart_is_unpublished_and_unstaged_cleanly(
    cluster: Cluster,
) -> None:
    await run_pod_with_claim(cluster, "web", "data")
    pod = cluster.api.get("Pod", "web", "default")
    pv_name = cluster.api.get("PersistentVolumeClaim", "data", "default").spec["volumeName"]
    paths = cluster.kubelets[NODE].paths
    target = paths.pod_mount_path(pod.metadata.uid, pv_name)
    assert target.is_dir()
    await kill_and_restart_node_plugin(cluster)
    start = len(cluster.trace.events)
    cluster.api.delete("Pod", "web", "default")
    await cluster.settle()
    assert [c for c in calls_since(cluster, start) if not c[0].startswith("cni")] == [
        ("NodeUnpublishVolume", "OK"),
        ("NodeGetCapabilities", "OK"),
        ("NodeUnstageVolume", "OK"),
    ]
    assert not target.exists()
    assert not cluster.api.list("VolumeAttachment").items
    assert not cluster.api.list("Pod").items


async def test_pod_created_after_the_restart_mounts_through_the_new_process(
    cluster: Cluster,
) -> None:
    await run_pod_with_claim(cluster, "web", "data")
    await kill_and_restart_node_plugin(cluster)
    start = len(cluster.trace.events)
    await run_pod_with_claim(cluster, "late", "late-data")
    late = cluster.api.get("Pod", "late", "default")
    assert late.status["phase"] == "Running"
    node_calls = [c for c in calls_since(cluster, start) if c[0].startswith("Node")]
    assert node_calls == [("NodeGetCapabilities", "OK"), ("NodeStageVolume", "OK"),
                          ("NodeGetCapabilities", "OK"), ("NodePublishVolume", "OK")]
    pv_name = cluster.api.get("PersistentVolumeClaim", "late-data", "default").spec["volumeName"]
    assert cluster.kubelets[NODE].paths.pod_mount_path(late.metadata.uid, pv_name).is_dir()


def accepts_connections(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
    return True


async def test_restart_after_kill_returns_only_once_the_new_process_serves(
    cluster: Cluster,
) -> None:
    proc = cluster.node_plugins[NODE]
    proc.kill()
    assert not accepts_connections(proc.socket)
    await proc.restart()
    assert accepts_connections(proc.socket)


async def restart_with_node_conflicts(cluster: Cluster, conflicts: int) -> None:
    """Kill and restart the node plugin; the kubelet's next Node writes meet `conflicts`."""
    proc = cluster.node_plugins[NODE]
    registration = cluster.kubelets[NODE].paths.registration_socket(DRIVER_NAME)
    old = identity(registration)
    proc.kill()
    proc.start()
    await wait_for_new_socket(registration, old)
    cluster.api.inject_conflicts("Node", conflicts)
    await cluster.settle()


async def test_deregistration_cleanup_meeting_conflicts_does_not_stop_the_new_registration(
    cluster: Cluster,
) -> None:
    # 5 conflicts exhaust the deregistration's retries, the registration meets the rest.
    await restart_with_node_conflicts(cluster, 7)
    assert list(cluster.kubelets[NODE].watcher.drivers) == [DRIVER_NAME]
    await run_pod_with_claim(cluster, "web", "data")
    assert cluster.api.get("Pod", "web", "default").status["phase"] == "Running"


async def test_registration_that_failed_is_retried_on_a_later_scan(cluster: Cluster) -> None:
    # 5 for the deregistration cleanup, 5 fail the registration, 2 meet the retry.
    await restart_with_node_conflicts(cluster, 12)
    notified = [e.request["plugin_registered"] for e in cluster.trace
                if e.call.endswith("NotifyRegistrationStatus")]
    assert notified[-2:] == [False, True]
    assert list(cluster.kubelets[NODE].watcher.drivers) == [DRIVER_NAME]
