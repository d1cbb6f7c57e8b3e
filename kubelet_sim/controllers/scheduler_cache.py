"""What one scheduling pass sees: the scheduler cache's snapshot.

The scheduler reads claims, volumes, classes, CSINodes, VolumeAttachments, CSIDrivers and
CSIStorageCapacities from the shared cache once per pass (a pass with no pod to schedule
reads nothing), and knows which pods sit on each node (read from the cache's node index
when a node is first looked at): those bound there (``spec.nodeName``, not finished)
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
from kubelet_sim.client.indexes import POD_NODE
from kubelet_sim.client.shared_cache import SharedCache

FINISHED = ("Succeeded", "Failed")


@dataclass
class Snapshot:
    claims: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (ns, name)
    volumes: dict[str, Resource] = field(default_factory=dict)  # PersistentVolumes
    classes: dict[str, Resource] = field(default_factory=dict)  # StorageClasses
    csinodes: dict[str, Resource] = field(default_factory=dict)
    attachments: list[Resource] = field(default_factory=list)  # VolumeAttachments
    drivers: dict[str, Resource] = field(default_factory=dict)  # CSIDrivers
    capacities: list[Resource] = field(default_factory=list)  # CSIStorageCapacities
    placed: dict[str, list[Resource]] = field(default_factory=dict)  # node -> its pods
    cache: SharedCache | None = None  # where a node's bound pods are read, on first use
    loaded: set[str] = field(default_factory=set)  # nodes whose bound pods were read

    @classmethod
    def take(cls, cache: SharedCache, unscheduled: Iterable[Resource],
             assumed: Mapping[str, str]) -> Snapshot:
        """The cluster now, from the shared cache; ``assumed`` maps the UIDs of
        ``unscheduled`` pods to the node each is assumed on."""
        snapshot = cls(
            claims={(c.namespace, c.name): c for c in cache.list("PersistentVolumeClaim")},
            volumes={v.name: v for v in cache.list("PersistentVolume")},
            classes={s.name: s for s in cache.list("StorageClass")},
            csinodes={n.name: n for n in cache.list("CSINode")},
            attachments=cache.list("VolumeAttachment"),
            drivers={d.name: d for d in cache.list("CSIDriver")},
            capacities=cache.list("CSIStorageCapacity"),
            cache=cache,
        )
        for pod in unscheduled:
            node = assumed.get(pod.metadata.uid)
            if node:
                snapshot.place(pod, node)
        return snapshot

    def place(self, pod: Resource, node: str) -> None:
        """Count ``pod`` on ``node`` from now on (bound or assumed in this pass)."""
        self.pods_on(node).append(pod)

    def unplace(self, pod: Resource, node: str) -> None:
        """``pod`` no longer counts on ``node`` (its assumption was dropped)."""
        self.placed[node] = [p for p in self.pods_on(node) if p.metadata.uid != pod.metadata.uid]

    def pods_on(self, node: str) -> list[Resource]:
        """The pods bound to ``node`` that have not finished, and those placed there."""
        pods = self.placed.setdefault(node, [])
        if self.cache is not None and node not in self.loaded:
            self.loaded.add(node)
            pods[:0] = [p for p in self.cache.by_index("Pod", POD_NODE, node)
                        if p.status.get("phase") not in FINISHED]
        return pods

    def claim(self, namespace: str, name: str) -> Resource | None:
        return self.claims.get((namespace, name))
