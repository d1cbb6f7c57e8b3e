"""The default scheduler, reduced to the filters and the score that matter to the simulator.

A pending pod (no ``spec.nodeName``) goes to a feasible node; the filters run in the default
profile's order and the first that fails names the node's reason:

- NodeUnschedulable, TaintToleration: schedulable (or the unschedulable taint tolerated),
  taints tolerated (a not-ready node carries the ``node.kubernetes.io/not-ready`` taint in
  a real cluster);
- NodeAffinity: its ``nodeSelector`` and required node affinity matched (`api.node_affinity`);
- NodeVolumeLimits: per CSI driver, the volumes of the pods bound or assumed on the node plus
  the pod's new ones stay within CSINode ``allocatable.count`` (see `volume_limits`);
- VolumeBinding: a bound claim's PV node affinity (its topology) admits the node; an unbound
  claim of a ``WaitForFirstConsumer`` class needs a node the class's ``allowedTopologies``
  admit, and once a node was selected for it (another pod using it was assumed there) that
  node only; when the class's CSIDriver has ``storageCapacity: true``, a
  CSIStorageCapacity of the class selecting the node must have room for the request
  ("node(s) did not have enough free storage", see `storage_capacity_check`). An unbound
  claim of an ``Immediate`` class makes the pod wait ("pod has unbound immediate
  PersistentVolumeClaims").

Pending pods are tried in the scheduling queue's order: priority, then first come (see
`_queue_order`), not by name. Among feasible nodes the one with the fewest pods wins
(ties by name), counting the pods bound there and those assumed there (see
`scheduler_cache`). With unbound
WaitForFirstConsumer claims the pod is assumed: its claims are annotated
``volume.kubernetes.io/selected-node`` and it is bound only after they are (PreBind waits
for the provisioner and the binder). Binding writes ``spec.nodeName`` and the
``PodScheduled`` condition; no feasible node gives ``PodScheduled=False`` with reason
``Unschedulable`` and the scheduler's summary ("0/5 nodes are available: 5 node(s) exceed
max volume count. preemption: ...", see `fit_error`), also recorded as a
``FailedScheduling`` warning event.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubelet_sim.api import node_affinity
from kubelet_sim.api.errors import Conflict, NotFound
from kubelet_sim.api.model import JSON, Resource, set_condition
from kubelet_sim.api.selectors import node_selector_matches
from kubelet_sim.api.taints import NO_SCHEDULE, NOT_READY, tolerates
from kubelet_sim.client.indexes import POD_NODE
from kubelet_sim.client.writes import write_object, write_status
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.binder import volume_admits_node
from kubelet_sim.controllers.common import (
    ANN_SELECTED_NODE,
    node_is_ready,
    set_annotation,
)
from kubelet_sim.controllers.fit_error import fit_error
from kubelet_sim.controllers.scheduler_cache import Snapshot
from kubelet_sim.controllers.storage_capacity_check import NOT_ENOUGH_SPACE, has_enough_capacity
from kubelet_sim.controllers.volume_limits import EXCEEDED, exceeds_volume_limits

SCHEDULER_NAME = "default-scheduler"
NOT_READY_TAINT = {"key": NOT_READY, "effect": NO_SCHEDULE}
# a node's spec.unschedulable, as the NodeUnschedulable filter reads it (DaemonSet pods
# tolerate it)
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}


class Unschedulable(Exception):
    """The pod cannot be scheduled on any node for a reason that is not per-node."""


class Scheduler(Controller):
    name = SCHEDULER_NAME
    kinds = ("Pod", "Node", "PersistentVolumeClaim", "PersistentVolume", "StorageClass",
             "CSINode", "VolumeAttachment", "CSIDriver", "CSIStorageCapacity")

    def __init__(self, *args: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.assumed: dict[str, str] = {}  # pod uid -> node waiting for its claims to bind

    async def reconcile(self) -> bool:
        unscheduled = self.cache.by_index("Pod", POD_NODE, "")
        pending = sorted((p for p in unscheduled if self._wants_scheduling(p)),
                         key=_queue_order)
        waiting = {p.metadata.uid for p in pending}
        for uid in [u for u in self.assumed if u not in waiting]:  # bound, gone or finished
            del self.assumed[uid]
        if not pending:
            return False
        snapshot = Snapshot.take(self.cache, pending, self.assumed)
        nodes = self.cache.list("Node")
        changed = False
        for pod in pending:
            key = f"pod/{pod.namespace}/{pod.name}"
            changed = await self.step(key, self._schedule, pod, nodes, snapshot) or changed
        return changed

    @staticmethod
    def _wants_scheduling(pod: Resource) -> bool:
        return not (pod.spec.get("nodeName") or pod.is_terminating
                    or pod.spec.get("schedulerName", SCHEDULER_NAME) != SCHEDULER_NAME
                    or pod.status.get("phase", "Pending") != "Pending")

    async def _schedule(self, pod: Resource, nodes: list[Resource], snapshot: Snapshot) -> bool:
        uid = pod.metadata.uid
        try:
            claims = self._claims(pod, snapshot)
        except Unschedulable as why:
            self.assumed.pop(uid, None)
            return await self._unschedulable(pod, fit_error(pod, len(nodes), Counter(), str(why)))
        assumed = self.assumed.get(uid)
        if assumed is not None:
            if any(c.metadata.annotations.get(ANN_SELECTED_NODE) != assumed
                   for c in claims if not c.spec.get("volumeName")):
                del self.assumed[uid]  # provisioning gave up on the node: schedule again
                snapshot.unplace(pod, assumed)
            else:
                return await self._finish_assumed(pod, assumed, claims)
        reasons: Counter[str] = Counter()
        feasible: list[Resource] = []
        for node in nodes:
            reason = self._filter(pod, node, claims, snapshot)
            if reason:
                reasons[reason] += 1
            else:
                feasible.append(node)
        if not feasible:
            return await self._unschedulable(pod, fit_error(pod, len(nodes), reasons))
        node = min(feasible, key=lambda n: (len(snapshot.pods_on(n.name)), n.name))
        snapshot.place(pod, node.name)
        unbound = [c for c in claims if not c.spec.get("volumeName")]
        if not unbound:
            return await self._bind(pod, node.name)
        chosen = node.name

        def select(obj: Resource) -> bool:
            return set_annotation(obj, ANN_SELECTED_NODE, chosen)

        for claim in unbound:  # the VolumeBinding plugin's PreBind
            written = await write_object(self.client, "PersistentVolumeClaim", claim.name,
                                         claim.namespace, select)
            if written is not None:  # later pods of this pass see the selected node
                snapshot.claims[(written.namespace, written.name)] = written
        self.assumed[uid] = node.name
        return True

    async def _finish_assumed(self, pod: Resource, node_name: str, claims: list[Resource]) -> bool:
        if any(not c.spec.get("volumeName") or c.status.get("phase") != "Bound"
               for c in claims):
            return False  # still waiting for provisioning and binding
        del self.assumed[pod.metadata.uid]
        return await self._bind(pod, node_name)

    @staticmethod
    def _claims(pod: Resource, snapshot: Snapshot) -> list[Resource]:
        claims = []
        for volume in pod.spec.get("volumes") or []:
            ref = volume.get("persistentVolumeClaim")
            if not ref:
                continue
            name = str(ref.get("claimName"))
            claim = snapshot.claim(pod.namespace, name)
            if claim is None:
                raise Unschedulable(f'persistentvolumeclaim "{name}" not found')
            if claim.is_terminating:
                raise Unschedulable(f'persistentvolumeclaim "{name}" is being deleted')
            if not claim.spec.get("volumeName"):
                sc = snapshot.classes.get(str(claim.spec.get("storageClassName") or ""))
                if sc is None or sc.body.get("volumeBindingMode") != "WaitForFirstConsumer":
                    raise Unschedulable("pod has unbound immediate PersistentVolumeClaims")
            claims.append(claim)
        return claims

    def _filter(self, pod: Resource, node: Resource, claims: list[Resource],
                snapshot: Snapshot) -> str:
        """The first reason ``node`` does not fit ``pod`` ('' when it fits)."""
        if node.spec.get("unschedulable") and not tolerates(pod, UNSCHEDULABLE_TAINT):
            return "node(s) were unschedulable"
        taints = list(node.spec.get("taints") or [])
        if not node_is_ready(node):
            taints.insert(0, NOT_READY_TAINT)
        for taint in taints:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, taint):
                return (f"node(s) had untolerated taint {{{taint.get('key')}: "
                        f"{taint.get('value', '')}}}")
        if not node_affinity.admits(pod.spec, node):
            return "node(s) didn't match Pod's node affinity/selector"
        if exceeds_volume_limits(snapshot, pod, node.name):
            return EXCEEDED
        for claim in claims:
            if claim.spec.get("volumeName"):
                pv = snapshot.volumes.get(str(claim.spec["volumeName"]))
                if pv is not None and not volume_admits_node(pv, node):
                    return "node(s) had volume node affinity conflict"
                continue
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            sc = snapshot.classes[str(claim.spec.get("storageClassName"))]
            allowed = sc.body.get("allowedTopologies") or []
            if (selected and selected != node.name) or (
                    allowed and not _topology_allows(allowed, node)):
                return "node(s) didn't find available persistent volumes to bind"
            if not has_enough_capacity(snapshot, claim, sc, node):
                return NOT_ENOUGH_SPACE
        return ""

    async def _bind(self, pod: Resource, node_name: str) -> bool:
        # through pods/binding, as kube-scheduler binds: no generation change
        try:
            await self.client.bind(pod.name, pod.namespace, node_name, uid=pod.metadata.uid)
        except (Conflict, NotFound):  # bound or deleted meanwhile
            return False
        await self._condition(pod, {"type": "PodScheduled", "status": "True"})
        self.event("Pod", pod.namespace, pod.name, "Normal", "Scheduled",
                   f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}")
        return True

    async def _unschedulable(self, pod: Resource, message: str) -> bool:
        changed = await self._condition(pod, {"type": "PodScheduled", "status": "False",
                                              "reason": "Unschedulable", "message": message})
        if changed:
            self.event("Pod", pod.namespace, pod.name, "Warning", "FailedScheduling", message)
        return changed

    async def _condition(self, pod: Resource, cond: JSON) -> bool:
        def mutate(obj: Resource) -> bool:
            old = next((c for c in obj.status.get("conditions") or []
                        if c.get("type") == cond["type"]), None)
            if old and all(old.get(k) == v for k, v in cond.items()):
                return False
            if cond["status"] == "False" and obj.spec.get("nodeName"):
                return False  # bound meanwhile (a cache fed over the wire lags behind)
            set_condition(obj, {**cond, "lastProbeTime": None}, self.clock.now())
            return True

        return await write_status(self.client, "Pod", pod.name, pod.namespace, mutate) is not None


def _queue_order(pod: Resource) -> tuple[int, int]:
    """The scheduling queue's order (the PrioritySort plugin): higher ``spec.priority``
    first, then first come, first served. A pod's resourceVersion says when it last
    changed: its creation for a new pod, its last failed attempt for one that waited (an
    unschedulable pod goes back behind the newer ones, as upstream re-queues it)."""
    version = pod.metadata.resource_version or ""
    return -int(pod.spec.get("priority") or 0), int(version) if version.isdigit() else 0


def _topology_allows(allowed: list[JSON], node: Resource) -> bool:
    terms = [{"matchExpressions": [{"key": e["key"], "operator": "In", "values": e["values"]}
                                   for e in t.get("matchLabelExpressions") or []]}
             for t in allowed]
    return node_selector_matches(terms, node.labels, {"metadata.name": node.name})
