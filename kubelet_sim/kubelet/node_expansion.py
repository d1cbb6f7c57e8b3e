"""The kubelet's part of a volume expansion: NodeExpandVolume on the node where the volume
is mounted, then the claim's ``status.capacity`` set and the pending resize state cleared
(what the kubelet's volume manager does for a claim in ``FileSystemResizePending``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.api.pvc_resize import clear_resize_state, file_system_resize_pending
from kubelet_sim.api.quantity import bytes_quantity, parse_storage
from kubelet_sim.client.events import NORMAL, EventRecorder
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.pod_volumes import pod_info
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.utils.clock import RealClock

if TYPE_CHECKING:
    from kubelet_sim.kubelet.kubelet import PodRecord

log = logging.getLogger(__name__)


async def finish_node_expansion(client: KubeClient, pvc: Resource,
                                new_size: int) -> Resource | None:
    """The last step after NodeExpandVolume succeeded: ``status.capacity`` becomes
    ``new_size`` (bytes) and the FileSystemResizePending condition and NodeResizePending
    status go. Retries on Conflict; returns the updated claim (None when nothing changed)."""
    async def attempt() -> Resource | None:
        obj = await client.get("PersistentVolumeClaim", pvc.name, pvc.namespace)
        before = obj.to_dict()
        obj.status.setdefault("capacity", {})["storage"] = bytes_quantity(new_size)
        clear_resize_state(obj.status)
        if obj.to_dict() == before:
            return None
        return await client.update_status(obj)

    return await retry_on_conflict_async(attempt, clock=RealClock())


async def claims_of(client: KubeClient, pod: Resource) -> list[Resource]:
    """Each existing claim a ``persistentVolumeClaim`` volume of ``pod`` names, in the
    pod's volume order; one that does not exist (yet) is passed over."""
    claims: list[Resource] = []
    for volume in pod.spec.get("volumes") or []:
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if not name:
            continue
        try:
            claims.append(await client.get("PersistentVolumeClaim", str(name), pod.namespace))
        except NotFound:
            continue
    return claims


async def finish_expansions(client: KubeClient, volumes: VolumeManager,
                            records: Mapping[str, PodRecord], pods: list[Resource],
                            recorder: EventRecorder, node_name: str) -> bool:
    """NodeExpandVolume for mounted volumes whose claim waits for the file system resize;
    a success is a ``FileSystemResizeSuccessful`` event on the pod and on the claim."""
    changed = False
    for pod in pods:
        record = records.get(pod.metadata.uid)
        if record is None or not record.volumes:
            continue
        for pvc in await claims_of(client, pod):
            if not file_system_resize_pending(pvc.status):
                continue
            volume = next((v for v in record.volumes
                           if v.spec_name == pvc.spec.get("volumeName")), None)
            if volume is None:
                continue
            pv = await client.get("PersistentVolume", volume.spec_name)
            size = parse_storage(pv.spec.get("capacity", {}).get("storage", "0"))
            try:
                await volumes.expand(volume, size, pod_info(pod))
            except Exception as err:
                log.warning("NodeExpandVolume of %s failed: %s", volume.spec_name, err)
                continue
            await finish_node_expansion(client, pvc, size)
            message = (f'MountVolume.NodeExpandVolume succeeded for volume "{volume.spec_name}" '
                       f"{node_name}")
            for kind, name in (("Pod", pod.name), ("PersistentVolumeClaim", pvc.name)):
                recorder.record(kind, pod.namespace, name, NORMAL, "FileSystemResizeSuccessful",
                                message, "kubelet", host=node_name)
            changed = True
    return changed
