"""external-provisioner's capacity controller: CSIStorageCapacity objects from GetCapacity.

It runs while the driver's CSIDriver object says ``storageCapacity: true`` (the real
sidecar's ``--enable-capacity``; the scheduler reads the objects only for such drivers) and
the plugin offers GET_CAPACITY. Its work items are every pair of

- a topology segment: for each CSINode listing this driver, the node's labels for the
  driver's ``topologyKeys`` (sorted by key; a node lacking one of the labels is skipped, a
  driver without topology keys gives the empty segment, which every node is in); equal
  segments of several nodes are one item;
- a StorageClass of this provisioner that is not ``Immediate`` (the scheduler only asks for
  WaitForFirstConsumer claims; ``immediate_binding=True`` is the sidecar's
  ``--capacity-for-immediate-binding``).

For each item it calls GetCapacity with the class's parameters as they are (no secret keys
stripped, as upstream) and the segment as ``accessible_topology`` (no volume capabilities:
upstream assumes capacity does not depend on them), and keeps one object in its namespace:
generated name ``csisc-…``, labels ``csi.storage.k8s.io/drivername`` and
``csi.storage.k8s.io/managed-by: external-provisioner``, ``storageClassName``,
``nodeTopology`` (``matchLabels`` of the segment), ``capacity`` (``available_capacity``)
and ``maximumVolumeSize`` (when the plugin set it), both written as BinarySI byte counts,
and the owner reference it was given (upstream: the provisioner's pod or its Deployment;
the simulator has no such pod, so none by default).

An item is asked again when the poll period (the sidecar's ``--capacity-poll-interval``,
one minute) has passed, and at once when this driver's volumes change (one was provisioned,
resized or deleted). Objects whose class or segment went, duplicates, and every object when
the driver stops asking for capacity are deleted; an object someone else deleted is made
again. Objects of other managers are never touched.
"""

from __future__ import annotations

import contextlib
from typing import Any

from csi_protos import csi_pb2
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.api.quantity import Quantity, format_storage
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import write_object
from kubelet_sim.csi.client import CsiClient
from kubelet_sim.sidecars.base import CsiSidecar

DRIVER_NAME_LABEL = "csi.storage.k8s.io/drivername"
MANAGED_BY_LABEL = "csi.storage.k8s.io/managed-by"
MANAGED_BY = "external-provisioner"
GENERATE_NAME = "csisc-"
POLL_SECONDS = 60.0
GET_CAPACITY = csi_pb2.ControllerServiceCapability.RPC.GET_CAPACITY

Segment = tuple[tuple[str, str], ...]  # (key, value) pairs sorted by key
Item = tuple[str, Segment]  # (storage class name, segment)


class StorageCapacityController(CsiSidecar):
    name = MANAGED_BY
    kinds = ("CSIDriver", "StorageClass", "CSINode", "Node", "CSIStorageCapacity",
             "PersistentVolume")
    timeout = 10.0

    def __init__(self, api: APIServer | KubeClient, csi: CsiClient, driver: str, *,
                 namespace: str = "kube-system", owner: JSON | None = None,
                 poll_seconds: float = POLL_SECONDS, immediate_binding: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(api, csi, driver, **kwargs)
        self.namespace = namespace
        self.owner = owner
        self.poll_seconds = poll_seconds
        self.immediate_binding = immediate_binding
        self._asked_at: dict[Item, float] = {}  # monotonic time of each item's last call
        self._volumes: frozenset[tuple[str, str]] | None = None
        # objects created here that the cache (fed over the wire, later) may not show yet
        self._created: dict[Item, Resource] = {}

    # -- what should exist --------------------------------------------------------------

    async def enabled(self) -> bool:
        csidriver = self.cache.get("CSIDriver", self.driver)
        if csidriver is None or csidriver.spec.get("storageCapacity") is not True:
            return False
        return GET_CAPACITY in await self.controller_rpcs()

    def segments(self) -> set[Segment]:
        found: set[Segment] = set()
        for csinode in self.cache.list("CSINode"):
            entry = next((d for d in csinode.spec.get("drivers") or []
                          if d.get("name") == self.driver), None)
            node = self.cache.get("Node", csinode.name)
            if entry is None or node is None:
                continue
            keys = sorted(entry.get("topologyKeys") or [])
            if all(k in node.labels for k in keys):
                found.add(tuple((k, node.labels[k]) for k in keys))
        return found

    def classes(self) -> list[str]:
        return [sc.name for sc in self.cache.list("StorageClass")
                if sc.body.get("provisioner") == self.driver and not sc.is_terminating
                and (self.immediate_binding
                     or sc.body.get("volumeBindingMode", "Immediate") != "Immediate")]

    def managed(self) -> list[Resource]:
        return [c for c in self.cache.list("CSIStorageCapacity", self.namespace)
                if c.labels.get(DRIVER_NAME_LABEL) == self.driver
                and c.labels.get(MANAGED_BY_LABEL) == MANAGED_BY]

    # -- one pass -----------------------------------------------------------------------

    async def reconcile(self) -> bool:
        wanted: set[Item] = set()
        if await self.enabled():
            wanted = {(sc, seg) for sc in self.classes() for seg in self.segments()}
        elif not self.managed():
            return False  # off, and nothing of ours to remove: the usual case, kept cheap
        volumes = frozenset((pv.name, str((pv.spec.get("capacity") or {}).get("storage")))
                            for pv in self.cache.list("PersistentVolume")
                            if (pv.spec.get("csi") or {}).get("driver") == self.driver)
        if volumes != self._volumes:
            self._volumes = volumes
            self._asked_at.clear()  # space was taken or given back: ask every item again
        objects: dict[Item, Resource] = {}
        changed = False
        for obj in sorted(self.managed(), key=lambda o: (o.metadata.creation_timestamp or "",
                                                         o.name)):
            item = _item_of(obj)
            if item in wanted and item not in objects and not obj.is_terminating:
                objects[item] = obj
            else:  # obsolete, foreign-shaped or a duplicate
                changed = await self.step(f"CSIStorageCapacity/{obj.name}", self._delete,
                                          obj) or changed
        shown = {obj.name for obj in self.managed()}
        for item, created in list(self._created.items()):
            if created.name in shown or item not in wanted:
                del self._created[item]  # the cache has it now (an obsolete one goes then)
            else:
                objects.setdefault(item, created)  # never a second object for the item
        now = self.clock.monotonic()
        for item in sorted(wanted):
            asked = self._asked_at.get(item)
            due = asked is None or now - asked >= self.poll_seconds or item not in objects
            if due:
                changed = await self.step(f"capacity/{item[0]}/{_segment_text(item[1])}",
                                          self._refresh, item, objects.get(item)) or changed
                asked = self._asked_at.get(item)
            if asked is not None:  # wake for the next poll
                self._note_retry("poll", max(0.0, asked + self.poll_seconds - now))
        for item in [i for i in self._asked_at if i not in wanted]:
            del self._asked_at[item]
        return changed

    async def _refresh(self, item: Item, existing: Resource | None) -> bool:
        class_name, segment = item
        sc = self.cache.get("StorageClass", class_name)
        if sc is None:
            return False
        request = csi_pb2.GetCapacityRequest(parameters=dict(sc.body.get("parameters") or {}))
        request.accessible_topology.segments.update(dict(segment))
        answer = await self.csi.call(request, csi_pb2.GetCapacityResponse)
        self._asked_at[item] = self.clock.monotonic()
        capacity = format_storage(max(0, answer.available_capacity))
        maximum = (format_storage(max(0, answer.maximum_volume_size.value))
                   if answer.HasField("maximum_volume_size") else None)
        if existing is None:
            self._created[item] = await self.client.create(
                self._new_object(class_name, segment, capacity, maximum))
            return True

        def update(obj: Resource) -> bool:
            body = obj.body
            if (_bytes(body.get("capacity")), _bytes(body.get("maximumVolumeSize"))) == \
                    (_bytes(capacity), _bytes(maximum)) and self._owned(obj):
                return False
            body["capacity"] = capacity
            if maximum is None:
                body.pop("maximumVolumeSize", None)
            else:
                body["maximumVolumeSize"] = maximum
            if self.owner is not None and not self._owned(obj):
                obj.metadata.owner_references = [*obj.metadata.owner_references,
                                                 dict(self.owner)]
            return True

        try:
            return await write_object(self.client, "CSIStorageCapacity", existing.name,
                                      self.namespace, update) is not None
        except NotFound:  # deleted meanwhile: the next pass creates it again
            self._created.pop(item, None)
            self._asked_at.pop(item, None)
            return True

    async def _delete(self, obj: Resource) -> bool:
        with contextlib.suppress(NotFound):
            await self.client.delete("CSIStorageCapacity", obj.name, obj.namespace)
        return True

    def _owned(self, obj: Resource) -> bool:
        if self.owner is None:
            return True
        return any(ref.get("controller") and ref.get("uid") == self.owner.get("uid")
                   for ref in obj.metadata.owner_references)

    def _new_object(self, class_name: str, segment: Segment, capacity: str,
                    maximum: str | None) -> Resource:
        body: JSON = {"storageClassName": class_name,
                      "nodeTopology": {"matchLabels": dict(segment)} if segment else {},
                      "capacity": capacity}
        if maximum is not None:
            body["maximumVolumeSize"] = maximum
        obj = new("CSIStorageCapacity", "", self.namespace,
                  labels={DRIVER_NAME_LABEL: self.driver, MANAGED_BY_LABEL: MANAGED_BY},
                  **body)
        obj.metadata.generate_name = GENERATE_NAME
        if self.owner is not None:
            obj.metadata.owner_references = [dict(self.owner)]
        return obj


def _item_of(obj: Resource) -> Item | None:
    """The work item an object stands for; None when its topology is not a plain segment."""
    topology = obj.body.get("nodeTopology")
    if not isinstance(topology, dict) or topology.get("matchExpressions"):
        return None
    labels = topology.get("matchLabels") or {}
    return str(obj.body.get("storageClassName")), tuple(sorted(labels.items()))


def _segment_text(segment: Segment) -> str:
    return ",".join(f"{k}={v}" for k, v in segment) or "<all nodes>"


def _bytes(quantity: Any) -> int | None:
    return None if quantity is None else Quantity.parse(quantity).value()
