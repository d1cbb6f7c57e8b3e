"""The default scheduler, reduced to the filters that matter to the simulator.

A pending pod (no ``spec.nodeName``) goes to a feasible node: Ready (a not-ready node carries
the ``node.kubernetes.io/not-ready`` taint in a real cluster), schedulable, its taints
tolerated, its ``nodeSelector`` matched, and the volume binding rules of the
VolumeBinding plugin held:

- a bound claim's PV node affinity (its topology) must admit the node;
- an unbound claim of an ``Immediate`` class makes the pod wait ("pod has unbound immediate
  PersistentVolumeClaims");
- the node's CSI volume count stays within CSINode ``allocatable.count`` (NodeVolumeLimits);
- an unbound claim of a ``WaitForFirstConsumer`` class needs a node the class's
  ``allowedTopologies`` admit; once a node is chosen the claim is annotated
  ``volume.kubernetes.io/selected-node`` and the pod is bound only after the claim is
  (PreBind waits for the provisioner and the binder).

Among feasible nodes the one running fewest pods wins (ties by name). Binding writes
``spec.nodeName`` and the ``PodScheduled`` condition; no feasible node gives
``PodScheduled=False`` with reason ``Unschedulable`` and the scheduler's summary message.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.binder import volume_admits_node
from kubelet_sim.controllers.common import (
    ANN_SELECTED_NODE,
    get_or_none,
    node_is_ready,
    set_annotation,
    write_object,
    write_status,
)
from kubelet_sim.model import JSON, Resource, set_condition
from kubelet_sim.selectors import node_selector_matches

SCHEDULER_NAME = "default-scheduler"
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


class Unschedulable(Exception):
    """The pod cannot be scheduled on any node for a reason that is not per-node."""


class Scheduler(Controller):
    name = SCHEDULER_NAME
    kinds = ("Pod", "Node", "PersistentVolumeClaim", "PersistentVolume", "StorageClass",
             "CSINode")

    def __init__(self, *args: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.assumed: dict[str, str] = {}  # pod uid -> node waiting for its claims to bind

    async def reconcile(self) -> bool:
        changed = False
        for pod in self.api.list("Pod").items:
            if (pod.spec.get("nodeName") or pod.is_terminating
                    or pod.spec.get("schedulerName", SCHEDULER_NAME) != SCHEDULER_NAME
                    or pod.status.get("phase", "Pending") != "Pending"):
                self.assumed.pop(pod.metadata.uid, None)
                continue
            key = f"pod/{pod.namespace}/{pod.name}"
            changed = await self.step(key, self._schedule, pod) or changed
        return changed

    async def _schedule(self, pod: Resource) -> bool:
        uid = pod.metadata.uid
        try:
            claims = self._claims(pod)
        except Unschedulable as why:
            self.assumed.pop(uid, None)
            return self._unschedulable(pod, str(why))
        assumed = self.assumed.get(uid)
        if assumed is not None:
            if any(c.metadata.annotations.get(ANN_SELECTED_NODE) != assumed
                   for c in claims if not c.spec.get("volumeName")):
                del self.assumed[uid]  # provisioning gave up on the node: schedule again
            else:
                return self._finish_assumed(pod, assumed, claims)
        nodes = self.api.list("Node").items
        reasons: Counter[str] = Counter()
        feasible: list[Resource] = []
        for node in nodes:
            reason = self._filter(pod, node, claims)
            if reason:
                reasons[reason] += 1
            else:
                feasible.append(node)
        if not feasible:
            summary = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            return self._unschedulable(pod, f"0/{len(nodes)} nodes are available"
                                       + (f": {summary}." if summary else "."))
        load = Counter(str(p.spec.get("nodeName")) for p in self.api.list("Pod").items
                       if p.spec.get("nodeName"))
        node = min(feasible, key=lambda n: (load[n.name], n.name))
        unbound = [c for c in claims if not c.spec.get("volumeName")]
        if not unbound:
            return self._bind(pod, node.name)
        chosen = node.name

        def select(obj: Resource) -> bool:
            return set_annotation(obj, ANN_SELECTED_NODE, chosen)

        for claim in unbound:  # the VolumeBinding plugin's PreBind
            write_object(self.api, "PersistentVolumeClaim", claim.name, claim.namespace, select)
        self.assumed[uid] = node.name
        return True

    def _finish_assumed(self, pod: Resource, node_name: str, claims: list[Resource]) -> bool:
        if any(not c.spec.get("volumeName") or c.status.get("phase") != "Bound"
               for c in claims):
            return False  # still waiting for provisioning and binding
        del self.assumed[pod.metadata.uid]
        return self._bind(pod, node_name)

    def _claims(self, pod: Resource) -> list[Resource]:
        claims = []
        for volume in pod.spec.get("volumes") or []:
            ref = volume.get("persistentVolumeClaim")
            if not ref:
                continue
            name = str(ref.get("claimName"))
            claim = get_or_none(self.api, "PersistentVolumeClaim", name, pod.namespace)
            if claim is None:
                raise Unschedulable(f'persistentvolumeclaim "{name}" not found')
            if claim.is_terminating:
                raise Unschedulable(f'persistentvolumeclaim "{name}" is being deleted')
            if not claim.spec.get("volumeName"):
                sc_name = str(claim.spec.get("storageClassName") or "")
                sc = get_or_none(self.api, "StorageClass", sc_name) if sc_name else None
                if sc is None or sc.body.get("volumeBindingMode") != "WaitForFirstConsumer":
                    raise Unschedulable("pod has unbound immediate PersistentVolumeClaims")
            claims.append(claim)
        return claims

    def _filter(self, pod: Resource, node: Resource, claims: list[Resource]) -> str:
        """The first reason ``node`` does not fit ``pod`` ('' when it fits)."""
        if node.spec.get("unschedulable"):
            return "node(s) were unschedulable"
        taints = list(node.spec.get("taints") or [])
        if not node_is_ready(node):
            taints.insert(0, NOT_READY_TAINT)
        for taint in taints:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(pod, taint):
                return (f"node(s) had untolerated taint {{{taint.get('key')}: "
                        f"{taint.get('value', '')}}}")
        selector = pod.spec.get("nodeSelector") or {}
        if any(node.labels.get(k) != v for k, v in selector.items()):
            return "node(s) didn't match Pod's node affinity/selector"
        for claim in claims:
            if claim.spec.get("volumeName"):
                pv = get_or_none(self.api, "PersistentVolume", str(claim.spec["volumeName"]))
                if pv is not None and not volume_admits_node(pv, node):
                    return "node(s) had volume node affinity conflict"
                continue
            sc = self.api.get("StorageClass", str(claim.spec.get("storageClassName")))
            allowed = sc.body.get("allowedTopologies") or []
            if allowed and not _topology_allows(allowed, node):
                return "node(s) didn't find available persistent volumes to bind"
        if self._exceeds_volume_limits(node, claims):
            return "node(s) exceed max volume count"
        return ""

    def _exceeds_volume_limits(self, node: Resource, claims: list[Resource]) -> bool:
        """NodeVolumeLimits: per driver, the distinct volumes of the node's pods plus this
        pod's new ones must fit CSINode ``allocatable.count``."""
        csinode = get_or_none(self.api, "CSINode", node.name)
        limits = {str(d.get("name")): int((d.get("allocatable") or {}).get("count") or 0)
                  for d in (csinode.spec.get("drivers") or [] if csinode else [])}
        if not any(limits.values()):
            return False
        in_use: dict[str, set[str]] = {}
        for other in self.api.list("Pod").items:
            if other.spec.get("nodeName") != node.name or other.status.get("phase") in (
                    "Succeeded", "Failed"):
                continue
            for driver, handle in self._pod_csi_volumes(other):
                in_use.setdefault(driver, set()).add(handle)
        wanted = {driver: set(handles) for driver, handles in in_use.items()}
        for claim in claims:
            driver, handle = self._claim_volume(claim)
            wanted.setdefault(driver, set()).add(handle)
        return any(limits.get(driver, 0) and len(handles) > limits[driver]
                   and len(handles) > len(in_use.get(driver, set()))
                   for driver, handles in wanted.items())

    def _pod_csi_volumes(self, pod: Resource) -> list[tuple[str, str]]:
        out = []
        for volume in pod.spec.get("volumes") or []:
            name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            claim = get_or_none(self.api, "PersistentVolumeClaim", str(name), pod.namespace) \
                if name else None
            if claim is not None:
                out.append(self._claim_volume(claim))
        return out

    def _claim_volume(self, claim: Resource) -> tuple[str, str]:
        """(driver, volume) a claim stands for; an unbound claim is a new volume of its
        class's provisioner."""
        pv_name = claim.spec.get("volumeName")
        pv = get_or_none(self.api, "PersistentVolume", str(pv_name)) if pv_name else None
        if pv is not None and pv.spec.get("csi"):
            return str(pv.spec["csi"]["driver"]), str(pv.spec["csi"]["volumeHandle"])
        sc_name = str(claim.spec.get("storageClassName") or "")
        sc = get_or_none(self.api, "StorageClass", sc_name) if sc_name else None
        driver = str(sc.body.get("provisioner")) if sc is not None else ""
        return driver, f"claim:{claim.metadata.uid}"

    def _bind(self, pod: Resource, node_name: str) -> bool:
        def set_node(obj: Resource) -> bool:
            if obj.spec.get("nodeName"):
                return False
            obj.spec["nodeName"] = node_name
            return True

        write_object(self.api, "Pod", pod.name, pod.namespace, set_node)
        self._condition(pod, {"type": "PodScheduled", "status": "True"})
        return True

    def _unschedulable(self, pod: Resource, message: str) -> bool:
        return self._condition(pod, {"type": "PodScheduled", "status": "False",
                                     "reason": "Unschedulable", "message": message})

    def _condition(self, pod: Resource, cond: JSON) -> bool:
        def mutate(obj: Resource) -> bool:
            old = next((c for c in obj.status.get("conditions") or []
                        if c.get("type") == cond["type"]), None)
            if old and all(old.get(k) == v for k, v in cond.items()):
                return False
            set_condition(obj, {**cond, "lastProbeTime": None}, self.clock.now())
            return True

        return write_status(self.api, "Pod", pod.name, pod.namespace, mutate) is not None


def _tolerated(pod: Resource, taint: JSON) -> bool:
    for tol in pod.spec.get("tolerations") or []:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value",
                                                                                     ""):
            return True
    return False


def _topology_allows(allowed: list[JSON], node: Resource) -> bool:
    terms = [{"matchExpressions": [{"key": e["key"], "operator": "In", "values": e["values"]}
                                   for e in t.get("matchLabelExpressions") or []]}
             for t in allowed]
    return node_selector_matches(terms, node.labels, {"metadata.name": node.name})
