"""What the pod-volume builder takes from the CSIDriver object and the pod for the driver
fields: the policy, the PV's access modes, fsGroup and its change policy, the SELinux label."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.pod_volumes import resolve
from tests.kubelet_sim.kubelet.test_pod_volumes import (
    DRIVER,
    NODE,
    bound_claim,
    claim_pod,
    inline_pod,
)


@pytest.fixture
def api() -> APIServer:
    server = APIServer()
    server.create(new("Namespace", "team-a"))
    return server


def selinux_driver(api: APIServer, **spec: object) -> None:
    driver = builders.csi_driver(DRIVER, volume_lifecycle_modes=["Persistent", "Ephemeral"])
    driver.spec.update({"seLinuxMount": True, "fsGroupPolicy": "File", **spec})
    api.create(driver)


def secure(pod: object, **context: object) -> None:
    pod.spec["securityContext"] = dict(context)  # type: ignore[attr-defined]


async def test_the_pv_volume_carries_the_driver_policy_access_modes_and_the_pods_fs_group(
    api: APIServer,
) -> None:
    bound_claim(api, accessModes=["ReadWriteOnce", "ReadOnlyMany"])
    selinux_driver(api, nodeAllocatableUpdatePeriodSeconds=60)
    pod = claim_pod()
    secure(pod, fsGroup=3000, fsGroupChangePolicy="OnRootMismatch")

    [volume] = (await resolve(as_client(api), pod, NODE)).volumes

    assert volume.policy.fs_group_policy == "File" and volume.policy.se_linux_mount
    assert volume.access_modes == ("ReadWriteOnce", "ReadOnlyMany")
    assert volume.access_mode == "ReadWriteOnce"
    assert (volume.fs_group, volume.fs_group_change_policy) == (3000, "OnRootMismatch")
    assert volume.selinux_mount_label == ""  # no SELinux options in the pod


async def test_a_rwop_pv_of_a_selinux_mount_driver_gets_the_pods_label(api: APIServer) -> None:
    bound_claim(api)  # ReadWriteOncePod only
    selinux_driver(api)
    pod = claim_pod()
    secure(pod, seLinuxOptions={"level": "s0:c1,c2"})

    [volume] = (await resolve(as_client(api), pod, NODE)).volumes

    assert volume.selinux_mount_label == "system_u:object_r:container_file_t:s0:c1,c2"


async def test_containers_disagreeing_on_the_label_of_a_rwop_volume_make_the_pod_wait(
    api: APIServer,
) -> None:
    bound_claim(api)
    selinux_driver(api)
    pod = claim_pod()
    first = pod.spec["containers"][0]
    first["securityContext"] = {"seLinuxOptions": {"level": "s0:c1,c2"}}
    pod.spec["containers"].append({**first, "name": "other", "securityContext": {
        "seLinuxOptions": {"level": "s0:c3,c4"}}})

    waiting = (await resolve(as_client(api), pod, NODE)).waiting

    assert len(waiting) == 1 and waiting[0].startswith("conflicting SELinux labels of volume")


async def test_an_inline_volume_gets_no_label_but_the_policy_and_fs_group(api: APIServer) -> None:
    selinux_driver(api)
    pod = inline_pod()
    secure(pod, fsGroup=3000, seLinuxOptions={"level": "s0:c1,c2"})
    pod.spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/s"}]

    [volume] = (await resolve(as_client(api), pod, NODE)).volumes

    assert volume.policy.lifecycle_modes == ("Persistent", "Ephemeral")
    assert volume.fs_group == 3000 and volume.selinux_mount_label == ""


async def test_without_a_csidriver_object_the_policy_is_the_default(api: APIServer) -> None:
    [volume] = (await resolve(as_client(api), inline_pod(), NODE)).volumes

    assert not volume.policy.exists and volume.policy.lifecycle_modes == ("Persistent",)
