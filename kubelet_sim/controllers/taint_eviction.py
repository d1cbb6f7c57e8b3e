"""kube-controller-manager's taint eviction controller (the NoExecute taint manager): a
pod on a node with ``NoExecute`` taints it does not tolerate is deleted at once; one
that tolerates them for ``tolerationSeconds`` (300 s by default, from the
DefaultTolerationSeconds admission plugin) is deleted that long after the taint was
added; one that tolerates them without a limit stays. Each deletion is recorded as a
``TaintManagerEviction`` event on the pod: "Marking for deletion Pod <ns>/<name>".
"""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, parse_time
from kubelet_sim.api.taints import NO_EXECUTE, seconds_tolerated
from kubelet_sim.client.indexes import POD_NODE
from kubelet_sim.controllers.base import Controller

COMPONENT = "taint-eviction-controller"


class TaintEvictionController(Controller):
    """Deletes the pods whose ``NoExecute`` tolerations ran out (see the module)."""

    name = COMPONENT
    kinds = ("Node", "Pod")

    async def _exposed_pods(self) -> list[tuple[Resource, list[JSON]]]:
        """Each running pod on a node with NoExecute taints, with those taints."""
        exposed: list[tuple[Resource, list[JSON]]] = []
        for node in self.cache.list("Node"):  # the node and pod listers, as upstream
            taints = [t for t in node.spec.get("taints") or [] if t.get("effect") == NO_EXECUTE]
            if taints:
                pods = self.cache.by_index("Pod", POD_NODE, node.name)
                exposed += [(pod, taints) for pod in pods if not pod.is_terminating]
        return exposed

    async def reconcile(self) -> bool:
        changed = False
        for pod, taints in await self._exposed_pods():
            key = f"pod/{pod.namespace}/{pod.name}"
            changed = await self.step(key, self._maybe_evict, pod, taints) or changed
        return changed

    async def _maybe_evict(self, pod: Resource, taints: list[JSON]) -> bool:
        allowed = seconds_tolerated(pod, taints)
        if allowed is None:
            return False  # tolerated forever
        added = max((parse_time(t["timeAdded"]) for t in taints if t.get("timeAdded")),
                    default=self.clock.now())
        left = (added + timedelta(seconds=allowed) - self.clock.now()).total_seconds()
        if left > 0:
            self._note_retry(f"evict/{pod.namespace}/{pod.name}", left)
            return False
        self.event("Pod", pod.namespace, pod.name, "Normal", "TaintManagerEviction",
                   f"Marking for deletion Pod {pod.namespace}/{pod.name}")
        try:
            await self.client.delete("Pod", pod.name, pod.namespace, uid=pod.metadata.uid)
        except NotFound:
            return False
        return True
