"""What a restarted kubelet finds of the pods it ran: their sandboxes (the runtime keeps
them on disk) and their volumes (reconstructed from the pod and plugin dirs), so that
deleting such a pod later still stops its sandbox (CNI DEL) and unpublishes, unstages
and lets detach its volumes, and its volumes stay reported in use meanwhile."""

from __future__ import annotations

from dataclasses import dataclass

from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.csi.volume_spec import CsiVolume
from kubelet_sim.kubelet.pod_volumes import resolve
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.runtime.containerd import SANDBOX_READY, ContainerRuntime


@dataclass(frozen=True)
class RecoveredPod:
    uid: str
    sandbox_id: str
    ips: tuple[str, ...]
    volumes: tuple[CsiVolume, ...]


@dataclass(frozen=True)
class Recovery:
    pods: tuple[RecoveredPod, ...]  # bound here, with a ready sandbox
    orphaned_sandboxes: tuple[str, ...]  # ready sandboxes of pods no longer in the API


async def recover(client: KubeClient, runtime: ContainerRuntime, volumes: VolumeManager,
                  node_name: str) -> Recovery:
    volumes.reconstruct()
    ready = {s.uid: s for s in runtime.list_pod_sandboxes() if s.state == SANDBOX_READY}
    pods = {p.metadata.uid: p for p in
            (await client.list("Pod", field_selector=f"spec.nodeName={node_name}")).items}
    found = []
    for uid, sandbox in ready.items():
        pod = pods.get(uid)
        if pod is not None:
            found.append(RecoveredPod(uid, sandbox.id, tuple(sandbox.ips),
                                      tuple((await resolve(client, pod, node_name)).volumes)))
    orphans = tuple(s.id for uid, s in ready.items() if uid not in pods)
    return Recovery(tuple(found), orphans)
