"""The kubelet's pod-volume builder: CsiVolume from the pod, its claim, the PV, the CSIDriver
and the VolumeAttachment, as the kubelet reads them."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.kubelet.pod_volumes import resolve

DRIVER = "csi-mini.example.com"
NODE = "node-1"


@pytest.fixture
def api() -> APIServer:
    server = APIServer()
    server.create(new("Namespace", "team-a"))
    return server


def bound_claim(api: APIServer, *, csi: JSON | None = None, attached: bool = True,
                nfs: JSON | None = None, **pv_spec: Any) -> Resource:
    """A Bound claim ``data`` in team-a, its PV ``pvc-0a1b`` (a CSI one with ``csi`` merged
    into spec.csi, or an NFS one) with ``pv_spec`` merged into its spec, and, when
    ``attached``, its attachment, listed in the node's ``status.volumesAttached`` as the
    attach/detach controller reports it."""
    pv = builders.csi_persistent_volume(
        "pvc-0a1b", driver=DRIVER, volume_handle="vol-77", storage="1Gi", fs_type="xfs",
        access_modes=["ReadWriteOncePod"], volume_attributes={"pool": "default"})
    pv.spec["csi"].update(csi or {})
    if nfs is not None:
        pv.spec["nfs"] = nfs
        del pv.spec["csi"]
    pv.spec.update(pv_spec)
    pv = api.create(pv)
    claim = api.create(builders.persistent_volume_claim("data", "team-a", storage="1Gi"))
    claim.spec["volumeName"] = pv.name
    claim = api.update(claim)
    claim.status["phase"] = "Bound"
    claim = api.update_status(claim)
    if attached:
        va = api.create(builders.volume_attachment(
            attachment_name("vol-77", DRIVER, NODE), DRIVER, NODE, pv.name))
        va.status.update(attached=True, attachmentMetadata={"devicePath": "/dev/x"})
        api.update_status(va)
        report_attached(api)
    return pv


def report_attached(api: APIServer) -> None:
    node = get_node(api)
    node.status["volumesAttached"] = [{"name": f"kubernetes.io/csi/{DRIVER}^vol-77",
                                       "devicePath": ""}]
    api.update_status(node)


def get_node(api: APIServer) -> Resource:
    try:
        return api.get("Node", NODE)
    except NotFound:
        return api.create(builders.node(NODE))


def claim_pod(read_only: bool = False, mounted_read_only: bool = False) -> Resource:
    container = builders.container("main")
    container["volumeMounts"] = [{"name": "data", "mountPath": "/data",
                                  "readOnly": mounted_read_only}]
    return builders.pod("app", "team-a", containers=[container], volumes=[
        builders.pvc_volume("data", "data", read_only=read_only)])


async def test_a_pv_gives_handle_spec_name_fs_type_access_mode_options_and_context(
    api: APIServer,
) -> None:
    bound_claim(api, mountOptions=["noatime"])

    resolved = await resolve(as_client(api), claim_pod(), NODE)

    [volume] = resolved.volumes
    assert resolved.waiting == []
    assert (volume.driver, volume.spec_name, volume.volume_handle) == (DRIVER, "pvc-0a1b", "vol-77")
    assert volume.fs_type == "xfs" and volume.access_mode == "ReadWriteOncePod"
    assert volume.mount_options == ("noatime",) and volume.block is False
    assert dict(volume.volume_attributes) == {"pool": "default"}
    assert dict(volume.publish_context) == {"devicePath": "/dev/x"}


async def test_node_secret_references_are_the_pvs_for_the_volume_manager_to_read(
    api: APIServer,
) -> None:
    stage = {"name": "stage", "namespace": "kube-system"}
    publish = {"name": "publish", "namespace": "team-a"}
    expand = {"name": "expand", "namespace": "team-a"}
    bound_claim(api, csi={"nodeStageSecretRef": stage, "nodePublishSecretRef": publish,
                          "nodeExpandSecretRef": expand})

    [volume] = (await resolve(as_client(api), claim_pod(), NODE)).volumes

    assert volume.node_stage_secret_ref == stage
    assert volume.node_publish_secret_ref == publish
    assert volume.node_expand_secret_ref == expand


async def test_the_publish_context_is_the_attachment_metadata_only_when_attach_is_required(
    api: APIServer,
) -> None:
    bound_claim(api, attached=False)
    report_attached(api)
    assert (await resolve(as_client(api), claim_pod(), NODE)).waiting == [
        f'volume "pvc-0a1b" waits for VolumeAttachment '
        f'{attachment_name("vol-77", DRIVER, NODE)}']

    api.create(builders.csi_driver(DRIVER, attach_required=False))

    [volume] = (await resolve(as_client(api), claim_pod(), NODE)).volumes
    assert dict(volume.publish_context) == {}


async def test_an_attached_volume_is_mounted_only_once_the_node_status_lists_it(
    api: APIServer,
) -> None:
    """VerifyControllerAttachedVolume: the attachment alone is not enough, the attach/detach
    controller must have reported it in ``status.volumesAttached`` (nor is that alone
    enough: the attachment must say attached)."""
    bound_claim(api, attached=False)
    get_node(api)
    va = api.create(builders.volume_attachment(
        attachment_name("vol-77", DRIVER, NODE), DRIVER, NODE, "pvc-0a1b"))
    va.status.update(attached=True)
    api.update_status(va)

    assert (await resolve(as_client(api), claim_pod(), NODE)).waiting == [
        'Volume not attached according to node status for volume "pvc-0a1b"']

    report_attached(api)
    resolved = await resolve(as_client(api), claim_pod(), NODE)
    assert [v.spec_name for v in resolved.volumes] == ["pvc-0a1b"]


async def test_read_only_is_the_pods_claim_read_only_not_the_pv_csi_source_nor_the_mount(
    api: APIServer,
) -> None:
    bound_claim(api, csi={"readOnly": True})

    [writable] = (await resolve(as_client(api), claim_pod(mounted_read_only=True), NODE)).volumes
    [read_only] = (await resolve(as_client(api), claim_pod(read_only=True), NODE)).volumes

    assert writable.read_only is False
    assert read_only.read_only is True


async def test_pod_info_on_mount_comes_from_the_csidriver_object(
    api: APIServer,
) -> None:
    bound_claim(api)
    [without] = (await resolve(as_client(api), claim_pod(), NODE)).volumes
    api.create(builders.csi_driver(DRIVER, pod_info_on_mount=True))
    [with_info] = (await resolve(as_client(api), claim_pod(), NODE)).volumes

    assert (without.pod_info_on_mount, with_info.pod_info_on_mount) == (False, True)


def device_pod() -> Resource:
    container = builders.container("main")
    container["volumeDevices"] = [{"name": "data", "devicePath": "/dev/xvda"}]
    return builders.pod("app", "team-a", containers=[container], volumes=[
        builders.pvc_volume("data", "data")])


async def test_a_block_pv_is_a_block_volume(api: APIServer) -> None:
    bound_claim(api, volumeMode="Block")

    [volume] = (await resolve(as_client(api), device_pod(), NODE)).volumes

    assert volume.block is True


async def test_a_block_pv_in_volume_mounts_makes_the_pod_wait_with_the_kubelets_reason(
    api: APIServer,
) -> None:
    bound_claim(api, volumeMode="Block")

    resolved = await resolve(as_client(api), claim_pod(), NODE)

    assert resolved.volumes == []
    assert resolved.waiting == [
        "volume data has volumeMode Block, but is specified in volumeMounts"]


async def test_a_filesystem_pv_in_volume_devices_makes_the_pod_wait_before_any_attach(
    api: APIServer,
) -> None:
    bound_claim(api, attached=False)  # no volumeMode: Filesystem

    assert (await resolve(as_client(api), device_pod(), NODE)).waiting == [
        "volume data has volumeMode Filesystem, but is specified in volumeDevices"]


async def test_a_pv_without_a_csi_source_makes_the_pod_wait(
    api: APIServer,
) -> None:
    bound_claim(api, attached=False, nfs={"server": "nfs.example.com", "path": "/"})

    assert (await resolve(as_client(api), claim_pod(), NODE)).waiting == [
        'persistentvolume "pvc-0a1b" is not a CSI volume']


async def test_a_missing_or_unbound_claim_makes_the_pod_wait(
    api: APIServer,
) -> None:
    assert (await resolve(as_client(api), claim_pod(), NODE)).waiting == [
        'persistentvolumeclaim "data" not found']

    api.create(builders.persistent_volume_claim("data", "team-a", storage="1Gi"))

    assert (await resolve(as_client(api), claim_pod(), NODE)).waiting == [
        'persistentvolumeclaim "data" is not bound']


def inline_pod(**csi: Any) -> Resource:
    volume = builders.csi_inline_volume("scratch", DRIVER, {"size": "1Mi"}, fs_type="ext4")
    volume["csi"].update(csi)
    return builders.pod("app", "team-a", volumes=[volume])


async def test_an_inline_volume_is_ephemeral_with_its_secret_in_the_pods_namespace(
    api: APIServer,
) -> None:
    api.create(builders.csi_driver(DRIVER, pod_info_on_mount=True))

    pod = inline_pod(readOnly=True, nodePublishSecretRef={"name": "creds"})
    [volume] = (await resolve(as_client(api), pod, NODE)).volumes

    assert volume.ephemeral and volume.spec_name == "scratch" and volume.read_only
    assert volume.handle_for("uid-1").startswith("csi-")
    assert volume.fs_type == "ext4" and dict(volume.volume_attributes) == {"size": "1Mi"}
    assert volume.node_publish_secret_ref == {"name": "creds", "namespace": "team-a"}
    assert volume.pod_info_on_mount is True


async def test_an_inline_volume_is_writable_unless_its_csi_source_says_read_only(
    api: APIServer,
) -> None:
    [volume] = (await resolve(as_client(api), inline_pod(), NODE)).volumes

    assert volume.read_only is False
