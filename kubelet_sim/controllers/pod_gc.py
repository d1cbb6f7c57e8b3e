"""kube-controller-manager's pod garbage collector (podgc).

It removes the pods no kubelet will ever finish:

* **orphaned**: bound to a node that no longer exists. A node missing from the cache is
  quarantined for 40 s (a node may be re-created, or the cache be late); if the API
  still has no such Node then, each of its pods is marked ``Failed`` with the
  ``DisruptionTarget`` condition (reason ``DeletionByPodGC``) and deleted at once
  (grace period 0). The kubelet of a deleted node, still running, then tears the pods
  down as it does for any pod that left the API.
* **unscheduled and terminating**: deleted before any node took them: nothing will
  confirm the deletion, so it is forced.
* **terminated beyond the threshold**: when more pods than ``--terminated-pod-gc-
  threshold`` (12500) are Succeeded or Failed, the oldest go.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.controllers.base import Controller

COMPONENT = "pod-garbage-collector"
QUARANTINE_SECONDS = 40.0  # podgc's quarantineTime
TERMINATED_POD_GC_THRESHOLD = 12500  # --terminated-pod-gc-threshold
TERMINAL_PHASES = ("Succeeded", "Failed")


class PodGarbageCollector(Controller):
    name = COMPONENT
    kinds = ("Node", "Pod")

    def __init__(self, api: APIServer | KubeClient, *,
                 terminated_threshold: int = TERMINATED_POD_GC_THRESHOLD, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.terminated_threshold = terminated_threshold
        self._missing_since: dict[str, float] = {}  # node name -> when first seen missing

    async def reconcile(self) -> bool:
        pods = self.cache.list("Pod")
        changed = await self._gc_orphaned(pods)
        for pod in pods:
            if pod.is_terminating and not pod.spec.get("nodeName"):
                changed |= await self.step(f"pod/{pod.namespace}/{pod.name}",
                                           self._force_delete, pod)
        changed |= await self._gc_terminated(pods)
        return changed

    async def _gc_orphaned(self, pods: list[Resource]) -> bool:
        nodes = {n.name for n in self.cache.list("Node")}
        bound = {pod.spec["nodeName"] for pod in pods if pod.spec.get("nodeName")}
        now = self.clock.monotonic()
        for name in list(self._missing_since):
            if name in nodes or name not in bound:
                del self._missing_since[name]
        changed = False
        for name in sorted(bound - nodes):
            since = self._missing_since.setdefault(name, now)
            left = since + QUARANTINE_SECONDS - now
            if left > 0:
                self._note_retry(f"node/{name}", left)
                continue
            try:  # the cache may be late: only a Node the API does not have is gone
                await self.client.get("Node", name)
                continue
            except NotFound:
                pass
            for pod in pods:
                if pod.spec.get("nodeName") == name:
                    changed |= await self.step(f"pod/{pod.namespace}/{pod.name}",
                                               self._delete_orphan, pod)
        return changed

    async def _delete_orphan(self, pod: Resource) -> bool:
        if pod.status.get("phase") not in TERMINAL_PHASES:
            try:
                current = await self.client.get("Pod", pod.name, pod.namespace)
            except NotFound:
                return False
            current.status["phase"] = "Failed"
            others = [c for c in current.status.get("conditions") or []
                      if c.get("type") != "DisruptionTarget"]
            current.status["conditions"] = [*others, {
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "lastTransitionTime": format_time(self.clock.now())}]
            try:  # a Conflict is retried under the pod's backoff
                await self.client.update_status(current)
            except NotFound:
                return False
        return await self._force_delete(pod)

    async def _force_delete(self, pod: Resource) -> bool:
        try:
            await self.client.delete("Pod", pod.name, pod.namespace, grace_period_seconds=0,
                                     uid=pod.metadata.uid)
        except NotFound:
            return False
        return True

    async def _gc_terminated(self, pods: list[Resource]) -> bool:
        terminated = [p for p in pods if p.status.get("phase") in TERMINAL_PHASES
                      and not p.is_terminating]
        excess = len(terminated) - self.terminated_threshold
        if excess <= 0:
            return False
        terminated.sort(key=lambda p: p.metadata.creation_timestamp or "")
        changed = False
        for pod in terminated[:excess]:
            changed |= await self.step(f"pod/{pod.namespace}/{pod.name}",
                                       self._force_delete, pod)
        return changed
