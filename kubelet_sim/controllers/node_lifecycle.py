"""kube-controller-manager's node lifecycle controller: a node whose kubelet stops
heartbeating is marked Unknown and tainted, and its pods not ready.

Every ``monitor_period`` (5 s) it looks at each Node's last heartbeat: the newer of its
Lease's ``renewTime`` (``kube-node-lease``, renewed every 10 s) and the Ready condition's
``lastHeartbeatTime``. When that is older than ``grace_period`` (50 s,
``--node-monitor-grace-period``; ``startup_grace_period``, 60 s, for a node whose
kubelet never posted Ready):

- every condition (Ready, MemoryPressure, DiskPressure, PIDPressure) becomes
  ``Unknown``, reason ``NodeStatusUnknown``, "Kubelet stopped posting node status."
  (``NodeStatusNeverUpdated``, "Kubelet never posted node status." for one never posted);
- the pods on the node get ``Ready=False`` and a ``NodeNotReady`` event, the node a
  ``NodeNotReady`` event.

And from the Ready condition it keeps the node's taints as TaintNodesByCondition and
the NoExecute taint manager do: ``node.kubernetes.io/unreachable`` (Unknown) or
``node.kubernetes.io/not-ready`` (False), each with effect NoSchedule and NoExecute
(``timeAdded`` when added); neither while Ready is True. The kubelet posting Ready again
clears them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kubelet_sim.api.model import JSON, Resource, condition, format_time, parse_time
from kubelet_sim.api.node_conditions import CONDITION_TYPES, NODE_LEASE_NAMESPACE
from kubelet_sim.api.taints import NO_EXECUTE, NO_SCHEDULE, NOT_READY, UNREACHABLE
from kubelet_sim.client.events import WARNING
from kubelet_sim.client.writes import write_object, write_status
from kubelet_sim.controllers.base import Controller

COMPONENT = "node-controller"
MANAGED_TAINTS = (NOT_READY, UNREACHABLE)
TAINT_FOR_READY = {"False": NOT_READY, "Unknown": UNREACHABLE}


class NodeLifecycleController(Controller):
    name = COMPONENT
    kinds = ("Node", "Lease")

    def __init__(self, *args: Any, grace_period: float = 50.0,
                 startup_grace_period: float = 60.0, monitor_period: float = 5.0,
                 **kwargs: Any) -> None:
        kwargs.setdefault("resync_seconds", monitor_period)
        super().__init__(*args, **kwargs)
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.known: dict[str, str] = {}  # uid -> name: the controller's known node set

    async def reconcile(self) -> bool:
        changed = False
        nodes = self.cache.list("Node")  # the node and lease listers, as upstream
        for node in nodes:
            self._note_registered(node)
            changed = await self.step(f"node/{node.name}", self._sync_node, node) or changed
        listed = {node.metadata.uid for node in nodes}
        for uid, name in list(self.known.items()):
            if uid not in listed:
                del self.known[uid]
                self.event("Node", "", name, "Normal", "RemovingNode",
                           f"Node {name} event: Removing Node {name} from Controller")
        return changed

    def _note_registered(self, node: Resource) -> None:
        """A node the controller has not seen yet (also each node when it starts)."""
        if node.metadata.uid in self.known:
            return
        self.known[node.metadata.uid] = node.name
        self.event("Node", "", node.name, "Normal", "RegisteredNode",
                   f"Node {node.name} event: Registered Node {node.name} in Controller")

    async def _sync_node(self, node: Resource) -> bool:
        now = self.clock.now()
        changed = False
        ready = condition(node, "Ready")
        heartbeat, grace = await self._last_heartbeat(node, ready)
        left = (heartbeat + timedelta(seconds=grace) - now).total_seconds()
        if left <= 0 and (ready or {}).get("status") != "Unknown":
            changed |= await self._mark_unknown(node, now)
            ready = condition(await self.client.get("Node", node.name), "Ready")
        elif left > 0:
            self._note_retry(f"grace/{node.name}", left)  # wake when it would expire
        changed |= await self._sync_taints(node.name, (ready or {}).get("status", "Unknown"), now)
        if (ready or {}).get("status") != "True" and ready is not None:
            changed |= await self._mark_pods_not_ready(node.name, now)
        return changed

    async def _last_heartbeat(self, node: Resource, ready: JSON | None) -> tuple[datetime, float]:
        """The node's newest sign of life, and the grace period that applies to it."""
        if ready is None or not ready.get("lastHeartbeatTime"):
            return parse_time(node.metadata.creation_timestamp or format_time(
                self.clock.now())), self.startup_grace_period
        times = [parse_time(ready["lastHeartbeatTime"])]
        lease = self.cache.get("Lease", node.name, NODE_LEASE_NAMESPACE)
        if lease is not None and lease.spec.get("renewTime"):
            times.append(parse_time(str(lease.spec["renewTime"])))
        return max(times), self.grace_period

    async def _mark_unknown(self, node: Resource, now: datetime) -> bool:
        stamp = format_time(now)

        def mutate(obj: Resource) -> bool:
            conditions: list[JSON] = obj.status.setdefault("conditions", [])
            by_type = {c.get("type"): c for c in conditions}
            for cond_type in CONDITION_TYPES:
                cond = by_type.get(cond_type)
                if cond is None:
                    conditions.append({
                        "type": cond_type, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                        "message": "Kubelet never posted node status.",
                        "lastHeartbeatTime": obj.metadata.creation_timestamp,
                        "lastTransitionTime": stamp})
                elif cond.get("status") != "Unknown":
                    cond.update(status="Unknown", reason="NodeStatusUnknown",
                                message="Kubelet stopped posting node status.",
                                lastTransitionTime=stamp)
            return True

        if await write_status(self.client, "Node", node.name, "", mutate) is None:
            return False
        self.event("Node", "", node.name, "Normal", "NodeNotReady",
                   f"Node {node.name} status is now: NodeNotReady")
        return True

    async def _sync_taints(self, node_name: str, ready_status: str, now: datetime) -> bool:
        wanted = TAINT_FOR_READY.get(ready_status)

        def mutate(obj: Resource) -> bool:
            taints: list[JSON] = list(obj.spec.get("taints") or [])
            kept = [t for t in taints if t.get("key") not in MANAGED_TAINTS
                    or (t.get("key") == wanted and t.get("effect") in (NO_SCHEDULE, NO_EXECUTE))]
            have = {(t.get("key"), t.get("effect")) for t in kept}
            if wanted is not None:
                for effect in (NO_SCHEDULE, NO_EXECUTE):
                    if (wanted, effect) not in have:
                        taint: JSON = {"key": wanted, "effect": effect}
                        if effect == NO_EXECUTE:
                            taint["timeAdded"] = format_time(now)
                        kept.append(taint)
            if kept == taints:
                return False
            if kept:
                obj.spec["taints"] = kept
            else:
                obj.spec.pop("taints", None)
            return True

        return await write_object(self.client, "Node", node_name, "", mutate,
                                  cached=self.cache.get("Node", node_name)) is not None

    async def _mark_pods_not_ready(self, node_name: str, now: datetime) -> bool:
        changed = False
        pods = await self.client.list("Pod", field_selector=f"spec.nodeName={node_name}")
        for pod in pods.items:
            ready = condition(pod, "Ready")
            if ready is None or ready.get("status") == "False" or pod.is_terminating:
                continue

            def mutate(obj: Resource) -> bool:
                for cond in obj.status.get("conditions") or []:
                    if cond.get("type") == "Ready" and cond.get("status") != "False":
                        cond.update(status="False", lastTransitionTime=format_time(now))
                        return True
                return False

            if await write_status(self.client, "Pod", pod.name, pod.namespace, mutate) is not None:
                self.event("Pod", pod.namespace, pod.name, WARNING, "NodeNotReady",
                           "Node is not ready")
                changed = True
        return changed
