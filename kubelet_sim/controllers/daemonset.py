"""kube-controller-manager's DaemonSet controller: one pod per eligible node.

A node is eligible when the template's ``nodeSelector`` and required node affinity admit
it and its ``NoSchedule``/``NoExecute`` taints are tolerated by the template's tolerations
plus the ones the controller adds to every daemon pod (not-ready and unreachable
``NoExecute``; disk-, memory-, pid-pressure and unschedulable ``NoSchedule``; network-
unavailable for host-network pods). Each pod is pinned to its node by a required node
affinity term (``matchFields`` ``metadata.name``) for the scheduler to honour; new nodes
get one, nodes that stop being eligible lose theirs, failed pods are replaced.
``RollingUpdate`` replaces pods of an old template as :mod:`.daemonset_rollout` plans it
(within ``maxUnavailable``, or surging up to ``maxSurge`` new pods beside old ones that go
once the new one is available); ``OnDelete`` waits for them to be deleted. Templates are
kept as ControllerRevisions; pods carry ``controller-revision-hash`` and
``pod-template-generation``. The status counts, per node that should run a pod, its oldest
daemon pod (scheduled, ready, available after ``minReadySeconds``, updated).
"""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api import node_affinity
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.taints import toleration_matches
from kubelet_sim.client.writes import replace_status
from kubelet_sim.controllers.daemonset_rollout import (
    RolloutInputs,
    allows_surge,
    is_updated,
    plan_with_surge,
    plan_without_surge,
    surge_and_unavailable,
)
from kubelet_sim.controllers.revisions import (
    REVISION_HASH_LABEL,
    owned_revisions,
    prune,
    update_revision,
)
from kubelet_sim.controllers.workload_pods import (
    claim,
    is_available,
    is_ready,
    is_terminal,
    owned_by,
    pod_from_template,
    selector_of,
)
from kubelet_sim.controllers.workload_queue import WorkloadController
from kubelet_sim.utils.clock import ExponentialBackoff

COMPONENT = "daemonset-controller"
TEMPLATE_GENERATION = "pod-template-generation"


def _toleration(key: str, effect: str) -> JSON:
    return {"key": key, "operator": "Exists", "effect": effect}


DAEMON_TOLERATIONS = [
    _toleration("node.kubernetes.io/not-ready", "NoExecute"),
    _toleration("node.kubernetes.io/unreachable", "NoExecute"),
    _toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
    _toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
]
HOST_NETWORK_TOLERATION = _toleration("node.kubernetes.io/network-unavailable", "NoSchedule")


def daemon_pod_spec(template_spec: JSON, node: str) -> JSON:
    """The template's spec with the daemon tolerations and the pin to ``node``."""
    spec = copy.deepcopy(template_spec)
    tolerations = list(spec.get("tolerations") or [])
    extra = [*DAEMON_TOLERATIONS, *([HOST_NETWORK_TOLERATION] if spec.get("hostNetwork")
                                    else [])]
    for toleration in extra:
        if toleration not in tolerations:
            tolerations.append(toleration)
    spec["tolerations"] = tolerations
    pin = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or []
    # the pin replaces any matchFields term and is ANDed into each existing term
    terms = [{**{k: v for k, v in t.items() if k != "matchFields"}, **pin} for t in terms] \
        or [pin]
    required["nodeSelectorTerms"] = terms
    return spec


def eligible(template_spec: JSON, node: Resource, *, running: bool = False) -> bool:
    """The node should run a daemon pod of this template; ``running``: the pod it runs
    may stay (untolerated ``NoSchedule`` taints keep new pods away, only ``NoExecute``
    ones end a running pod)."""
    spec = daemon_pod_spec(template_spec, node.name)
    if not node_affinity.admits(spec, node):
        return False
    effects = ("NoExecute",) if running else ("NoSchedule", "NoExecute")
    for taint in node.spec.get("taints") or []:
        if taint.get("effect") not in effects:
            continue
        if not any(toleration_matches(t, taint) for t in spec["tolerations"]):
            return False
    return True


def node_of(pod: Resource) -> str | None:
    return pod.spec.get("nodeName") or node_affinity.pinned_node(pod.spec)


class DaemonSetController(WorkloadController):
    name = COMPONENT
    kinds = ("DaemonSet", "Pod", "Node", "ControllerRevision")
    workload_kind, prefix = "DaemonSet", "ds"
    # a node change may concern every DaemonSet
    adopts = ("Pod", "ControllerRevision", "Node")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._failed_pods = ExponentialBackoff(self.clock, initial=1.0, cap=900.0)

    async def sync(self, ds: Resource) -> bool:
        if ds.metadata.deletion_timestamp:
            return False
        revisions = await owned_revisions(self.client, self.cache, ds)
        update = await update_revision(self.client, ds, revisions)
        current_hash = update.name.removeprefix(f"{ds.name}-")
        pods = await claim(self.client, ds, self.cache.list("Pod", ds.namespace),
                           selector_of(ds))
        template_spec = (ds.spec.get("template") or {}).get("spec") or {}
        nodes = {n.name: n for n in self.cache.list("Node")}
        wanted = {name for name, node in nodes.items() if eligible(template_spec, node)}
        by_node: dict[str, list[Resource]] = {}
        for pod in pods:
            if is_terminal(pod) and pod.metadata.deletion_timestamp:
                continue  # finished and going: not the node's any more
            by_node.setdefault(node_of(pod) or "", []).append(pod)
        changed = False
        if self.may_manage(ds):
            changed = await self._manage(ds, nodes, wanted, by_node, current_hash)
        pods = [p for p in self.cache.list("Pod", ds.namespace) if owned_by(p, ds)]
        in_use = {update.name} | {f"{ds.name}-{p.metadata.labels.get(REVISION_HASH_LABEL)}"
                                  for p in pods}
        changed = await prune(self.client, ds, revisions, in_use) or changed
        return await self._write_status(ds, pods, nodes, wanted, current_hash) or changed

    async def _manage(self, ds: Resource, nodes: dict[str, Resource], wanted: set[str],
                      by_node: dict[str, list[Resource]], current_hash: str) -> bool:
        """manage(), node by node through the node list (pods of a node that is gone are
        the pod garbage collector's), then the rolling update."""
        template_spec = (ds.spec.get("template") or {}).get("spec") or {}
        changed = False
        for name, node in sorted(nodes.items()):
            should_run = name in wanted
            keep = eligible(template_spec, node, running=True)
            on_node = by_node.get(name, [])
            if should_run and not on_node:
                await self._create(ds, name, current_hash)
                changed = True
            elif keep:
                changed = await self._manage_node(ds, name, on_node, should_run,
                                                  current_hash) or changed
            else:
                for pod in on_node:
                    if not pod.metadata.deletion_timestamp:
                        changed = await self._delete(ds, pod) or changed
        strategy = (ds.spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        if not changed and strategy == "RollingUpdate":
            changed = await self._roll(ds, by_node, set(nodes), wanted, current_hash)
        return changed

    async def _manage_node(self, ds: Resource, node: str, on_node: list[Resource],
                           should_run: bool, current_hash: str) -> bool:
        """podsShouldBeOnNode for a node that may keep its pod: finished pods go; of several
        running ones the oldest stays, or, surging, the new one beside a Ready old one until
        it is available."""
        changed = False
        running: list[Resource] = []
        for pod in on_node:
            if pod.metadata.deletion_timestamp:
                continue
            if pod.status.get("phase") == "Failed":
                # the controller backs off deleting failed pods node by node (1 s doubling
                # to 15 min), not to fight a kubelet that keeps refusing them
                key = f"{ds.namespace}/{ds.name}/{node}"
                if not self._failed_pods.ready(key):
                    self._note_retry(self.key(ds.namespace, ds.name), self._failed_pods.wait(key))
                    continue
                self._failed_pods.failed(key)
                self.event("DaemonSet", ds.namespace, ds.name, "Warning", "FailedDaemonPod",
                           f"Found failed daemon pod {pod.namespace}/{pod.name} on node "
                           f"{node}, will try to kill it")
                changed = await self._delete(ds, pod) or changed
            elif is_terminal(pod):
                changed = await self._delete(ds, pod) or changed
            else:
                running.append(pod)
        running.sort(key=lambda p: (not p.spec.get("nodeName"),
                                    p.metadata.creation_timestamp or "", p.name))
        if not allows_surge(ds):
            for extra in running[1:]:
                changed = await self._delete(ds, extra) or changed
            return changed
        if not running:
            if should_run:
                await self._create(ds, node, current_hash)
                changed = True
            return changed
        oldest_new = next((p for p in running if is_updated(p, current_hash)), None)
        oldest_old = next((p for p in running if not is_updated(p, current_hash)), None)
        now = self.clock.now()
        min_ready = int(ds.spec.get("minReadySeconds") or 0)
        for pod in running:
            if pod is not oldest_new and pod is not oldest_old:
                changed = await self._delete(ds, pod) or changed
        if oldest_new is not None and oldest_old is not None and (
                not is_ready(oldest_old) or is_available(oldest_new, min_ready, now)):
            changed = await self._delete(ds, oldest_old) or changed
        return changed

    async def _roll(self, ds: Resource, by_node: dict[str, list[Resource]], known: set[str],
                    wanted: set[str], current_hash: str) -> bool:
        """rollingUpdate: delete old pods and surge new ones as the plan says."""
        nodes = {name: list(pods) for name, pods in by_node.items() if name in known}
        for name in wanted:
            nodes.setdefault(name, [])
        surge, unavailable = surge_and_unavailable(ds, len(wanted))
        inputs = RolloutInputs(nodes, wanted, current_hash,
                               int(ds.spec.get("minReadySeconds") or 0), self.clock.now())
        plan = plan_without_surge(inputs, unavailable) if surge == 0 \
            else plan_with_surge(inputs, surge, len(wanted))
        changed = False
        for pod in plan.delete:
            changed = await self._delete(ds, pod) or changed
        for node in plan.create_on:
            await self._create(ds, node, current_hash)
            changed = True
        return changed

    async def _create(self, ds: Resource, node: str, current_hash: str) -> None:
        template = ds.spec.get("template") or {}
        pod = pod_from_template(ds, template)
        pod["metadata"]["labels"].update({REVISION_HASH_LABEL: current_hash,
                                          TEMPLATE_GENERATION: str(ds.metadata.generation)})
        pod["spec"] = daemon_pod_spec(template.get("spec") or {}, node)
        await self.create_pod(ds, pod)

    async def _delete(self, ds: Resource, pod: Resource) -> bool:
        return await self.delete_pod(ds, pod)

    async def _write_status(self, ds: Resource, pods: list[Resource], nodes: dict[str, Resource],
                            wanted: set[str], current_hash: str) -> bool:
        """updateDaemonSetStatus: per node that should run a pod, its oldest daemon pod
        (bound ones first) counts as scheduled, ready, available and updated; pods on
        other nodes are misscheduled."""
        now = self.clock.now()
        min_ready = int(ds.spec.get("minReadySeconds") or 0)
        by_node: dict[str, list[Resource]] = {}
        for pod in pods:
            if is_terminal(pod) and pod.metadata.deletion_timestamp:
                continue
            by_node.setdefault(node_of(pod) or "", []).append(pod)
        scheduled = ready = available = updated = misscheduled = 0
        for name in nodes:
            on_node = by_node.get(name, [])
            if name not in wanted:
                misscheduled += 1 if on_node else 0
                continue
            if not on_node:
                continue
            scheduled += 1
            pod = min(on_node, key=lambda p: (not p.spec.get("nodeName"),
                                              p.metadata.creation_timestamp or "", p.name))
            if is_ready(pod):
                ready += 1
                available += 1 if is_available(pod, min_ready, now) else 0
            updated += 1 if is_updated(pod, current_hash) else 0
        if min_ready and ready != available:
            self._note_retry(self.key(ds.namespace, ds.name), float(min_ready))
        status: JSON = {
            "currentNumberScheduled": scheduled,
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": len(wanted),
            "numberReady": ready,
            "observedGeneration": ds.metadata.generation,
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": len(wanted) - available,
        }
        status = {k: v for k, v in status.items()
                  if v or k in ("currentNumberScheduled", "numberMisscheduled",
                                "desiredNumberScheduled", "numberReady")}
        if ds.status.get("collisionCount"):
            status["collisionCount"] = ds.status["collisionCount"]
        if status == ds.status:
            return False

        return await replace_status(self.client, ds, status)
