"""What one scheduling pass sees: the scheduler cache's snapshot.

The scheduler reads claims, volumes, classes, CSINodes and VolumeAttachments once per pass,
and knows which pods sit on each node: those bound there (``spec.nodeName``, not finished)
and those it *assumed* there — placed, with their WaitForFirstConsumer claims annotated
``selected-node``, but not bound until the claims are (the VolumeBinding plugin's PreBind
wait). An assumed pod takes room on its node exactly like a bound one, so pods scheduled
later in the same pass, or while provisioning runs, spread around it and respect the volume
limits it uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer

FINISHED = ("Succeeded", "Failed")


@dataclass
class Snapshot:
    claims: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (ns, name)
    volumes: dict[str, Resource] = field(default_factory=dict)  # PersistentVolumes
    classes: dict[str, Resource] = field(default_factory=dict)  # StorageClasses
    csinodes: dict[str, Resource] = field(default_factory=dict)
    attachments: list[Resource] = field(default_factory=list)  # VolumeAttachments
    placed: dict[str, list[Resource]] = field(default_factory=dict)  # node -> its pods

    @classmethod
    def take(cls, api: APIServer, pods: Iterable[Resource],
             assumed: Mapping[str, str]) -> Snapshot:
        """The cluster now; ``assumed`` maps pod UIDs to the node each is assumed on."""
        snapshot = cls(
            claims={(c.namespace, c.name): c for c in api.list("PersistentVolumeClaim").items},
            volumes={v.name: v for v in api.list("PersistentVolume").items},
            classes={s.name: s for s in api.list("StorageClass").items},
            csinodes={n.name: n for n in api.list("CSINode").items},
            attachments=api.list("VolumeAttachment").items,
        )
        for pod in pods:
            node = pod.spec.get("nodeName") or assumed.get(pod.metadata.uid)
            if node and pod.status.get("phase") not in FINISHED:
                snapshot.place(pod, str(node))
        return snapshot

    def place(self, pod: Resource, node: str) -> None:
        """Count ``pod`` on ``node`` from now on (bound or assumed in this pass)."""
        self.placed.setdefault(node, []).append(pod)

    def unplace(self, pod: Resource, node: str) -> None:
        """``pod`` no longer counts on ``node`` (its assumption was dropped)."""
        self.placed[node] = [p for p in self.pods_on(node) if p.metadata.uid != pod.metadata.uid]

    def pods_on(self, node: str) -> list[Resource]:
        return self.placed.get(node, [])

    def claim(self, namespace: str, name: str) -> Resource | None:
        return self.claims.get((namespace, name))
