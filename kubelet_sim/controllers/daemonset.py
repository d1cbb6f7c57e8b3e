"""kube-controller-manager's DaemonSet controller: one pod per eligible node.

A node is eligible when the template's ``nodeSelector`` and required node affinity admit
it and its ``NoSchedule``/``NoExecute`` taints are tolerated by the template's tolerations
plus the ones the controller adds to every daemon pod (not-ready and unreachable
``NoExecute``; disk-, memory-, pid-pressure and unschedulable ``NoSchedule``; network-
unavailable for host-network pods). Each pod is pinned to its node by a required node
affinity term (``matchFields`` ``metadata.name``) for the scheduler to honour; new nodes
get one, nodes that stop being eligible lose theirs, failed pods are replaced.
``RollingUpdate`` replaces pods of an old template while at most ``maxUnavailable`` daemon
pods are unavailable; ``OnDelete`` waits for them to be deleted. Templates are kept as
ControllerRevisions; pods carry ``controller-revision-hash`` and ``pod-template-generation``.
"""

from __future__ import annotations

import copy

from kubelet_sim.api import node_affinity
from kubelet_sim.api.errors import NotFound, ObjectForbidden
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.taints import toleration_matches
from kubelet_sim.controllers.common import replace_status
from kubelet_sim.controllers.deployment import resolve
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

    async def sync(self, ds: Resource) -> bool:
        if ds.metadata.deletion_timestamp:
            return False
        revisions = owned_revisions(self.api, self.cache, ds)
        update = update_revision(self.api, ds, revisions)
        current_hash = update.name.removeprefix(f"{ds.name}-")
        pods = claim(self.api, ds, self.cache.list("Pod", ds.namespace), selector_of(ds))
        template_spec = (ds.spec.get("template") or {}).get("spec") or {}
        nodes = {n.name: n for n in self.cache.list("Node")}
        wanted = {name for name, node in nodes.items() if eligible(template_spec, node)}
        by_node: dict[str, list[Resource]] = {}
        for pod in pods:
            by_node.setdefault(node_of(pod) or "", []).append(pod)
        changed = False
        for name in sorted(wanted):
            live = [p for p in by_node.get(name, []) if not p.metadata.deletion_timestamp]
            failed = [p for p in live if is_terminal(p)]
            for pod in failed:
                changed = self._delete(ds, pod) or changed
            live = [p for p in live if not is_terminal(p)]
            if not live and not failed and not any(
                    p.metadata.deletion_timestamp for p in by_node.get(name, [])):
                self._create(ds, name, current_hash)
                changed = True
            for extra in sorted(live, key=lambda p: p.metadata.creation_timestamp or "")[1:]:
                changed = self._delete(ds, extra) or changed
        for name, on_node in by_node.items():
            node = nodes.get(name)
            if name not in wanted and (node is None or not eligible(template_spec, node,
                                                                     running=True)):
                for pod in on_node:
                    if not pod.metadata.deletion_timestamp:
                        changed = self._delete(ds, pod) or changed
        if not changed:
            changed = self._roll(ds, by_node, wanted, current_hash)
        pods = [p for p in self.cache.list("Pod", ds.namespace) if owned_by(p, ds)]
        in_use = {update.name} | {f"{ds.name}-{p.metadata.labels.get(REVISION_HASH_LABEL)}"
                                  for p in pods}
        changed = prune(self.api, ds, revisions, in_use) or changed
        return self._write_status(ds, pods, wanted, current_hash) or changed

    def _roll(self, ds: Resource, by_node: dict[str, list[Resource]], wanted: set[str],
              current_hash: str) -> bool:
        strategy = ds.spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return False
        max_unavailable = max(1, resolve((strategy.get("rollingUpdate") or {})
                                         .get("maxUnavailable", 1), len(wanted), round_up=True))
        now = self.clock.now()
        min_ready = int(ds.spec.get("minReadySeconds") or 0)
        unavailable = 0
        old: list[Resource] = []
        for name in sorted(wanted):
            live = [p for p in by_node.get(name, []) if not p.metadata.deletion_timestamp]
            if not live or not is_available(live[0], min_ready, now):
                unavailable += 1
            if live and live[0].metadata.labels.get(REVISION_HASH_LABEL) != current_hash:
                old.append(live[0])
        # old pods that are not available anyway go first, then the rest within budget
        old.sort(key=lambda p: is_available(p, min_ready, now))
        changed = False
        for pod in old:
            if is_available(pod, min_ready, now):
                if unavailable >= max_unavailable:
                    break
                unavailable += 1
            changed = self._delete(ds, pod) or changed
        return changed

    def _create(self, ds: Resource, node: str, current_hash: str) -> None:
        template = ds.spec.get("template") or {}
        pod = pod_from_template(ds, template)
        pod["metadata"]["labels"].update({REVISION_HASH_LABEL: current_hash,
                                          TEMPLATE_GENERATION: str(ds.metadata.generation)})
        pod["spec"] = daemon_pod_spec(template.get("spec") or {}, node)
        try:
            created = self.api.create(pod)
        except ObjectForbidden as err:  # an admission plugin's refusal (a quota)
            self.event("DaemonSet", ds.namespace, ds.name, "Warning", "FailedCreate",
                       f"Error creating: {err.worded('pods')}")
            raise
        self.event("DaemonSet", ds.namespace, ds.name, "Normal", "SuccessfulCreate",
                   f"Created pod: {created.name}")

    def _delete(self, ds: Resource, pod: Resource) -> bool:
        try:
            self.api.delete("Pod", pod.name, pod.namespace, uid=pod.metadata.uid)
        except NotFound:
            return False
        self.event("DaemonSet", ds.namespace, ds.name, "Normal", "SuccessfulDelete",
                   f"Deleted pod: {pod.name}")
        return True

    def _write_status(self, ds: Resource, pods: list[Resource], wanted: set[str],
                      current_hash: str) -> bool:
        now = self.clock.now()
        min_ready = int(ds.spec.get("minReadySeconds") or 0)
        scheduled: dict[str, Resource] = {}
        misscheduled = 0
        for pod in pods:
            node = pod.spec.get("nodeName")
            if not node or pod.metadata.deletion_timestamp:
                continue
            if node in wanted:
                scheduled.setdefault(node, pod)
            else:
                misscheduled += 1
        on_nodes = list(scheduled.values())
        available = sum(1 for p in on_nodes if is_available(p, min_ready, now))
        status: JSON = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": len(wanted),
            "numberReady": sum(1 for p in on_nodes if is_ready(p)),
            "observedGeneration": ds.metadata.generation,
            "updatedNumberScheduled": sum(
                1 for p in on_nodes if p.metadata.labels.get(REVISION_HASH_LABEL)
                == current_hash),
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

        return replace_status(self.api, ds, status)
