"""CSIDriver fields end to end: the cluster's kubelet against the real driver processes, what
the node plugin received read from its own request log."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig
from kubelet_sim.testing.fake_clock import FakeClock

STORAGE_CLASS = "mini"
NODE = "node-1"
GROUP = 4321
LEVEL = "s0:c1,c2"


pytestmark = pytest.mark.asyncio(loop_scope="module")


@asynccontextmanager
async def started(*, driver_args: Sequence[str] = (),
                  attach_required: bool = True) -> AsyncIterator[Cluster]:
    cluster = Cluster(ClusterConfig(driver_args=driver_args, attach_required=attach_required))
    try:
        await cluster.start()
        cluster.api.create(builders.storage_class(STORAGE_CLASS, DRIVER_NAME, parameters={
            "csi.storage.k8s.io/fstype": "ext4"}))
        yield cluster
    finally:
        await cluster.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def plain() -> AsyncIterator[Cluster]:
    """The driver with its default flags; each test installs its own CSIDriver object."""
    async with started() as cluster:
        yield cluster


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mount_group() -> AsyncIterator[Cluster]:
    """Node plugins advertising VOLUME_MOUNT_GROUP and a limit of 7 volumes, no
    ControllerPublish (``--no-attach-required``) and a CSIDriver saying attachRequired: false."""
    async with started(driver_args=["--volume-mount-group", "--max-volumes-per-node", "7"],
                       attach_required=False) as cluster:
        yield cluster


def use_csidriver(cluster: Cluster, spec: JSON) -> None:
    """Replace the CSIDriver object by one with ``spec`` merged into the defaults."""
    cluster.api.delete("CSIDriver", DRIVER_NAME)
    driver = builders.csi_driver(DRIVER_NAME, attach_required=cluster.config.attach_required,
                                 pod_info_on_mount=True)
    driver.spec.update(spec)
    cluster.api.create(driver)


def log_lines(cluster: Cluster, node: str | None = NODE) -> list[str]:
    """The request log of ``node``'s plugin (None: the controller plugin)."""
    proc = cluster.node_plugins[node] if node else cluster.controller_plugin
    assert proc is not None
    return proc.log_path.read_text().splitlines()


def received(cluster: Cluster, method: str, since: dict[str | None, int],
             node: str | None = NODE, about: str = "") -> list[dict[str, Any]]:
    """The requests of ``method`` the plugin logged after the ``since`` mark, oldest first
    (only those whose text holds ``about``, e.g. a pod uid or a volume id, when given)."""
    lines = log_lines(cluster, node)[since.get(node, 0):]
    calls = [json.loads(line) for line in lines if line.startswith("{") and about in line]
    return [c["request"] for c in calls if str(c.get("method", "")).endswith(f"/{method}")]


async def logged(cluster: Cluster, method: str, since: dict[str | None, int], count: int = 1,
                 node: str | None = NODE, about: str = "") -> list[dict[str, Any]]:
    """`received`, once at least ``count`` such requests are in the log: the plugin writes
    each line just after it answered, so the line may trail the answer by a moment."""
    deadline = time.monotonic() + 10.0
    while True:
        found = received(cluster, method, since, node=node, about=about)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.05)


async def remove(cluster: Cluster, pod: Resource) -> None:
    """Delete a pod that never ran, so later tests do not see it retried."""
    cluster.api.delete("Pod", pod.name, "default")
    await cluster.settle()


def mark(cluster: Cluster) -> dict[str | None, int]:
    return {NODE: len(log_lines(cluster)), None: len(log_lines(cluster, None))}


async def run_claim_pod(cluster: Cluster, name: str, *, access_mode: str = "ReadWriteOnce",
                        **security: Any) -> Resource:
    """A claim ``name`` of the storage class and a pod ``name`` on node-1 that mounts it,
    settled; the pod as it is then."""
    cluster.api.create(builders.persistent_volume_claim(
        name, storage="1Gi", storage_class=STORAGE_CLASS, access_modes=[access_mode]))
    pod = builders.pod(name, node_name=NODE, volumes=[builders.pvc_volume("data", name)],
                       containers=[builders.container(
                           "app", volume_mounts=[{"name": "data", "mountPath": "/data"}])])
    if security:
        pod.spec["securityContext"] = security
    cluster.api.create(pod)
    await cluster.settle()
    return cluster.api.get("Pod", name, "default")


async def run_inline_pod(cluster: Cluster, name: str) -> Resource:
    cluster.api.create(builders.pod(name, node_name=NODE, service_account="builder", volumes=[
        builders.csi_inline_volume("scratch", DRIVER_NAME)]))
    await cluster.settle()
    return cluster.api.get("Pod", name, "default")


def target_of(cluster: Cluster, pod: Resource) -> Path:
    pv = cluster.api.get("PersistentVolumeClaim", pod.name, "default").spec["volumeName"]
    return (cluster.kubelets[NODE].paths.root / "pods" / pod.metadata.uid / "volumes"
            / "kubernetes.io~csi" / pv / "mount")


def failed_mounts(cluster: Cluster, pod: str) -> list[str]:
    return [e.body["message"] for e in cluster.api.list("Event", "default").items
            if e.body.get("reason") == "FailedMount"
            and e.body.get("involvedObject", {}).get("name") == pod]


# -- fsGroupPolicy and VOLUME_MOUNT_GROUP ------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")
async def test_with_file_policy_the_kubelet_chowns_the_volume_the_driver_published(
    plain: Cluster,
) -> None:
    use_csidriver(plain, {"fsGroupPolicy": "File"})
    since = mark(plain)

    pod = await run_claim_pod(plain, "owned", fsGroup=GROUP)

    assert pod.status["phase"] == "Running"
    [publish] = await logged(plain, "NodePublishVolume", since, about=pod.metadata.uid)
    assert "volume_mount_group" not in publish["volume_capability"]["mount"]
    target = target_of(plain, pod)
    assert target.stat().st_gid == GROUP
    assert target.stat().st_mode & 0o2070 == 0o2070


async def test_a_volume_mount_group_driver_gets_the_fs_group_in_stage_and_publish(
    mount_group: Cluster,
) -> None:
    use_csidriver(mount_group, {"fsGroupPolicy": "File"})
    since = mark(mount_group)

    pod = await run_claim_pod(mount_group, "delegated", fsGroup=GROUP)

    assert pod.status["phase"] == "Running"
    [stage] = await logged(mount_group, "NodeStageVolume", since)
    [publish] = await logged(mount_group, "NodePublishVolume", since, about=pod.metadata.uid)
    assert stage["volume_capability"]["mount"]["volume_mount_group"] == str(GROUP)
    assert publish["volume_capability"]["mount"]["volume_mount_group"] == str(GROUP)
    assert target_of(mount_group, pod).stat().st_gid != GROUP  # left to the driver


# -- seLinuxMount ------------------------------------------------------------------------------


async def test_a_selinux_mount_driver_mounts_rwop_volumes_with_context_and_rwo_without(
    plain: Cluster,
) -> None:
    use_csidriver(plain, {"seLinuxMount": True})
    since = mark(plain)

    rwop = await run_claim_pod(plain, "labelled", access_mode="ReadWriteOncePod",
                               seLinuxOptions={"level": LEVEL})
    between = mark(plain)
    rwo = await run_claim_pod(plain, "unlabelled", seLinuxOptions={"level": LEVEL})

    assert rwop.status["phase"] == rwo.status["phase"] == "Running"
    option = f'context="system_u:object_r:container_file_t:{LEVEL}"'
    [stage, _] = await logged(plain, "NodeStageVolume", since, count=2)
    [publish] = await logged(plain, "NodePublishVolume", since, about=rwop.metadata.uid)
    assert stage["volume_capability"]["mount"]["mount_flags"] == [option]
    assert publish["volume_capability"]["mount"]["mount_flags"] == [option]
    [rwo_publish] = await logged(plain, "NodePublishVolume", between, about=rwo.metadata.uid)
    assert "mount_flags" not in rwo_publish["volume_capability"]["mount"]


# -- attachRequired: false ---------------------------------------------------------------------


async def test_without_attach_required_there_is_no_attachment_and_no_publish_context(
    mount_group: Cluster,
) -> None:
    since = mark(mount_group)

    pod = await run_claim_pod(mount_group, "unattached")

    assert pod.status["phase"] == "Running"
    assert not mount_group.api.list("VolumeAttachment").items
    assert not received(mount_group, "ControllerPublishVolume", since, node=None)
    [stage] = await logged(mount_group, "NodeStageVolume", since)
    [publish] = await logged(mount_group, "NodePublishVolume", since, about=pod.metadata.uid)
    assert "publish_context" not in stage and "publish_context" not in publish
    assert not mount_group.api.get("Node", NODE).status.get("volumesAttached")


# -- volumeLifecycleModes ----------------------------------------------------------------------


async def test_an_inline_volume_of_a_persistent_only_driver_is_refused_with_failed_mount(
    plain: Cluster,
) -> None:
    use_csidriver(plain, {"volumeLifecycleModes": ["Persistent"]})
    since = mark(plain)

    pod = await run_inline_pod(plain, "refused")

    assert pod.status["phase"] == "Pending"
    assert not received(plain, "NodePublishVolume", since, about=pod.metadata.uid)
    message = ('MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: '
               "mounter.SetupAt failed to check volume lifecycle mode: volume mode "
               f'"Ephemeral" not supported by driver {DRIVER_NAME} '
               '(only supports ["Persistent"])')
    assert message in failed_mounts(plain, "refused")
    await remove(plain, pod)


async def test_a_pv_of_an_ephemeral_only_driver_is_never_published(plain: Cluster) -> None:
    use_csidriver(plain, {"volumeLifecycleModes": ["Ephemeral"]})
    since = mark(plain)

    pod = await run_claim_pod(plain, "persistent")

    assert pod.status["phase"] == "Pending"
    assert not received(plain, "NodePublishVolume", since, about=pod.metadata.uid)
    assert any('volume mode "Persistent" not supported by driver '
               f'{DRIVER_NAME} (only supports ["Ephemeral"])' in m
               for m in failed_mounts(plain, "persistent"))
    await remove(plain, pod)


async def test_an_inline_volume_of_an_ephemeral_driver_gets_pod_info_and_no_stage(
    plain: Cluster,
) -> None:
    use_csidriver(plain, {"volumeLifecycleModes": ["Ephemeral"]})
    since = mark(plain)

    pod = await run_inline_pod(plain, "ephemeral")

    assert pod.status["phase"] == "Running"
    assert not received(plain, "NodeStageVolume", since)
    [publish] = await logged(plain, "NodePublishVolume", since, about=pod.metadata.uid)
    assert publish["volume_context"] == {
        "csi.storage.k8s.io/pod.name": "ephemeral",
        "csi.storage.k8s.io/pod.namespace": "default",
        "csi.storage.k8s.io/pod.uid": pod.metadata.uid,
        "csi.storage.k8s.io/serviceAccount.name": "builder",
        "csi.storage.k8s.io/ephemeral": "true",
    }


# -- nodeAllocatableUpdatePeriodSeconds --------------------------------------------------------


async def test_the_kubelet_asks_node_get_info_again_once_the_period_ran_out(
    mount_group: Cluster,
) -> None:
    updater = mount_group.kubelets[NODE].csi_node_updater
    updater.clock = clock = FakeClock()  # the period in fake seconds; the driver is real
    use_csidriver(mount_group, {"nodeAllocatableUpdatePeriodSeconds": 10})
    await mount_group.settle()  # the timer starts
    since = mark(mount_group)

    clock.advance(9)
    await mount_group.settle()
    assert not received(mount_group, "NodeGetInfo", since)
    clock.advance(1)
    await mount_group.settle()

    assert len(await logged(mount_group, "NodeGetInfo", since)) == 1
    [entry] = mount_group.api.get("CSINode", NODE).spec["drivers"]
    assert entry["allocatable"] == {"count": 7}
