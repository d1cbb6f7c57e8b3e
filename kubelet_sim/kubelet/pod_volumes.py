"""Turn a pod's volumes into the CSI volumes the kubelet mounts, from API objects.

This is the kubelet's desired-state populator and the part of its CSI plugin that reads the
volume spec (``csi_plugin`` NewMounter, ``csi_attacher`` MountDevice, ``csi_mounter``
SetUpAt), done once per pod volume:

- a ``persistentVolumeClaim`` volume needs its claim Bound and its PV (a CSI PV) present.
  When the driver requires attach (its CSIDriver object says so, or there is none, as in
  Kubernetes) the node's ``status.volumesAttached`` must list it (the attach/detach
  controller's report) and the VolumeAttachment must say ``attached``; its
  ``attachmentMetadata`` is the publish context. Handle, fsType and volumeAttributes come
  from ``spec.csi``; access mode, ``mountOptions`` and volume mode from the PV spec.
- an inline ``csi`` volume is ephemeral: no claim, no attach.
- NodePublish ``readonly`` is the pod's word only, as ``getReadOnlyFromSpec`` reads it:
  ``persistentVolumeClaim.readOnly`` for a claim, ``csi.readOnly`` for an inline volume.
  A PV's ``spec.csi.readOnly`` belongs to ControllerPublish (the attacher sends it), and a
  container's ``volumeMounts[].readOnly`` to the container runtime; neither reaches the
  node plugin.
- secrets: NodeStage's is the PV's ``nodeStageSecretRef``, NodePublish's its
  ``nodePublishSecretRef``, NodeExpand's its ``nodeExpandSecretRef`` (external-provisioner
  records them there, resolved from the StorageClass's ``csi.storage.k8s.io/node-*-secret-*``
  templates); an inline volume's ``nodePublishSecretRef`` names a secret in the pod's
  namespace. They go on as references: the volume manager reads each secret when it makes
  the call, so a missing NodePublish secret still lets the volume stage, as in Kubernetes.

- the CSIDriver object (or Kubernetes' defaults without one) travels with each volume as
  its `DriverPolicy`, with the PV's access modes, the pod's ``fsGroup`` and
  ``fsGroupChangePolicy``, and the SELinux label the volume is mounted with (see
  ``csi.driver_policy``; containers asking for different labels of a volume that supports
  SELinux mounts keep the pod waiting, as the kubelet's desired state refuses the pod).

A claim's volume mode must match how the containers use it, as the kubelet's
desired-state populator checks: a Block PV named in a container's ``volumeMounts``, or a
Filesystem one in its ``volumeDevices``, keeps the pod waiting ("volume data has volumeMode
Filesystem, but is specified in volumeDevices") before anything is attached or mounted.

Anything not ready yet — a claim not bound, a volume not attached — comes back as a reason
to wait (the kubelet retries), never as an error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import shared_cache
from kubelet_sim.csi.driver_policy import DriverPolicy, selinux_mount_label
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo

CSI_PLUGIN = "kubernetes.io/csi"
BINDING_REREADS, BINDING_REREAD_SECONDS = 10, 0.1


def unique_volume_name(driver: str, volume_handle: str) -> str:
    """The name the kubelet reports in node.status.volumesInUse/volumesAttached."""
    return f"{CSI_PLUGIN}/{driver}^{volume_handle}"


@dataclass
class ResolvedVolumes:
    volumes: list[CsiVolume] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # why the pod cannot mount yet


class NotReady(Exception):
    """One pod volume cannot be mounted yet; the message says why."""


def pod_info(pod: Resource) -> PodInfo:
    return PodInfo(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.metadata.uid,
        service_account=pod.spec.get("serviceAccountName") or "default",
    )


async def driver_policy(client: KubeClient, driver: str) -> DriverPolicy:
    """The CSIDriver object's fields (Kubernetes' defaults when there is none)."""
    try:
        return DriverPolicy.from_spec((await client.get("CSIDriver", driver)).spec)
    except NotFound:
        return DriverPolicy.from_spec(None)


def _pod_fields(pod: Resource, name: str, policy: DriverPolicy,
                access_modes: tuple[str, ...], *, persistent: bool) -> dict[str, Any]:
    """What the pod adds to one of its CSI volumes: fsGroup, its change policy, and the
    SELinux label to mount with (NotReady when its containers disagree on it)."""
    context = pod.spec.get("securityContext") or {}
    fs_group = context.get("fsGroup")
    try:
        label = selinux_mount_label(pod.spec, name, policy=policy,
                                    access_modes=access_modes, persistent=persistent)
    except ValueError as err:
        raise NotReady(str(err)) from None
    return {
        "policy": policy,
        "fs_group": int(fs_group) if fs_group is not None else None,
        "fs_group_change_policy": str(context.get("fsGroupChangePolicy") or ""),
        "selinux_mount_label": label,
    }


async def resolve(client: KubeClient, pod: Resource, node_name: str) -> ResolvedVolumes:
    """Every CSI volume of ``pod`` as ``node_name``'s kubelet mounts it, or why it waits."""
    out = ResolvedVolumes()
    for vol in pod.spec.get("volumes", []):
        try:
            if "csi" in vol:
                out.volumes.append(await _inline(client, pod, vol))
            elif "persistentVolumeClaim" in vol:
                out.volumes.append(await _claimed(client, pod, vol, node_name))
        except NotReady as why:
            out.waiting.append(str(why))
    return out


async def _inline(client: KubeClient, pod: Resource, vol: JSON) -> CsiVolume:
    src = vol["csi"]
    driver = src.get("driver", "")
    publish_ref = src.get("nodePublishSecretRef")
    if publish_ref:  # a LocalObjectReference: the pod's namespace
        publish_ref = {"name": publish_ref.get("name", ""), "namespace": pod.namespace}
    policy = await driver_policy(client, driver)
    name = str(vol.get("name", ""))
    return CsiVolume(
        driver=driver,
        spec_name=name,
        volume_attributes=dict(src.get("volumeAttributes") or {}),
        fs_type=src.get("fsType", ""),
        read_only=bool(src.get("readOnly")),
        ephemeral=True,
        pod_info_on_mount=policy.pod_info_on_mount,
        node_publish_secret_ref=publish_ref,
        **_pod_fields(pod, name, policy, (), persistent=False),
    )


async def _claimed(client: KubeClient, pod: Resource, vol: JSON, node_name: str) -> CsiVolume:
    claim = vol["persistentVolumeClaim"]
    claim_name = claim.get("claimName", "")
    pv = await _bound_pv(client, pod.namespace, claim_name)
    _check_volume_mode(pod, str(vol.get("name", "")), pv)
    csi = pv.spec.get("csi")
    if not csi:
        raise NotReady(f'persistentvolume "{pv.name}" is not a CSI volume')
    driver, handle = csi.get("driver", ""), csi.get("volumeHandle", "")
    policy = await driver_policy(client, driver)
    access_modes = tuple(str(m) for m in pv.spec.get("accessModes") or ())
    publish_context: dict[str, str] = {}
    if policy.attach_required:  # attachRequired: false: no VolumeAttachment to wait for
        _check_reported_attached(client, pv.name, unique_volume_name(driver, handle),
                                 node_name)
        publish_context = await _attachment_metadata(client, pv.name, handle, driver,
                                                     node_name)
    return CsiVolume(
        driver=driver,
        spec_name=pv.name,
        volume_handle=handle,
        volume_attributes=dict(csi.get("volumeAttributes") or {}),
        publish_context=publish_context,
        fs_type=csi.get("fsType", ""),
        access_mode=access_modes[0] if access_modes else "ReadWriteOnce",
        access_modes=access_modes,
        read_only=bool(claim.get("readOnly")),
        mount_options=tuple(pv.spec.get("mountOptions") or ()),
        block=pv.spec.get("volumeMode") == "Block",
        pod_info_on_mount=policy.pod_info_on_mount,
        node_stage_secret_ref=csi.get("nodeStageSecretRef"),
        node_publish_secret_ref=csi.get("nodePublishSecretRef"),
        node_expand_secret_ref=csi.get("nodeExpandSecretRef"),
        **_pod_fields(pod, str(vol.get("name", "")), policy, access_modes, persistent=True),
    )


def _check_volume_mode(pod: Resource, volume: str, pv: Resource) -> None:
    """A Block PV only as a device, a Filesystem PV only as a mount (any container)."""
    mode = pv.spec.get("volumeMode") or "Filesystem"
    containers = [c for key in ("initContainers", "containers", "ephemeralContainers")
                  for c in pod.spec.get(key) or []]
    for use, wants in (("volumeMounts", "Filesystem"), ("volumeDevices", "Block")):
        named = {str(u.get("name")) for c in containers for u in c.get(use) or []}
        if volume in named and mode != wants:
            raise NotReady(f"volume {volume} has volumeMode {mode}, but is specified in {use}")


async def _bound_pv(client: KubeClient, namespace: str, claim_name: str) -> Resource:
    pvc = await _read_claim(client, namespace, claim_name)
    for _ in range(BINDING_REREADS):
        if pvc.status.get("phase") == "Bound" or not pvc.spec.get("volumeName"):
            break
        # bound by the PV controller, its Bound phase one write behind (a scheduler in
        # another process may place the pod in between): read again shortly, as the
        # kubelet's volume populator retries a non-bound claim every 100 ms, silently
        await asyncio.sleep(BINDING_REREAD_SECONDS)
        pvc = await _read_claim(client, namespace, claim_name)
    pv_name = pvc.spec.get("volumeName")
    if pvc.status.get("phase") != "Bound" or not pv_name:
        raise NotReady(f'persistentvolumeclaim "{claim_name}" is not bound')
    try:
        return await client.get("PersistentVolume", pv_name)
    except NotFound:
        raise NotReady(f'persistentvolume "{pv_name}" not found') from None


async def _read_claim(client: KubeClient, namespace: str, claim_name: str) -> Resource:
    try:
        return await client.get("PersistentVolumeClaim", claim_name, namespace)
    except NotFound:
        raise NotReady(f'persistentvolumeclaim "{claim_name}" not found') from None


def _check_reported_attached(client: KubeClient, pv_name: str, unique: str,
                             node_name: str) -> None:
    """The kubelet's VerifyControllerAttachedVolume: an attachable volume is mounted only
    once the attach/detach controller lists it in the node's ``status.volumesAttached``."""
    # from the informer cache: no copy of a long volume list
    node = shared_cache(feed_source(client)).get("Node", node_name)
    if node is None:
        raise NotReady(f'node "{node_name}" not found')
    if not any(e.get("name") == unique for e in node.status.get("volumesAttached") or []):
        raise NotReady(f'Volume not attached according to node status for volume "{pv_name}"')


async def _attachment_metadata(client: KubeClient, pv_name: str, handle: str, driver: str,
                               node_name: str) -> dict[str, str]:
    va_name = attachment_name(handle, driver, node_name)
    try:
        va = await client.get("VolumeAttachment", va_name)
    except NotFound:
        raise NotReady(f'volume "{pv_name}" waits for VolumeAttachment {va_name}') from None
    if not va.status.get("attached"):
        raise NotReady(f'volume "{pv_name}" is not attached to {node_name} yet')
    return dict(va.status.get("attachmentMetadata") or {})
