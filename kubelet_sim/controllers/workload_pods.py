"""What the workload controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job) share,
as k8s.io/kubernetes/pkg/controller does: controller references, pods made from a template,
the pod states they count (active, ready, available), adoption and release of the objects
a selector covers (the ControllerRefManager), and template hashes."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubelet_sim.api.errors import Conflict, NotFound
from kubelet_sim.api.model import JSON, Resource, parse_time
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import write_object

# apimachinery's rand.SafeEncodeString alphabet: no vowels, no 0/1/3 (no words, no l/1)
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def controller_ref(owner: Resource) -> JSON:
    """The ownerReference a controller puts on what it makes."""
    return {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
            "uid": owner.metadata.uid, "controller": True, "blockOwnerDeletion": True}


def controller_of(obj: Resource) -> JSON | None:
    return next((r for r in obj.metadata.owner_references or [] if r.get("controller")), None)


def owned_by(obj: Resource, owner: Resource) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner.metadata.uid


def selector_of(owner: Resource) -> LabelSelector:
    return LabelSelector.from_dict(owner.spec.get("selector"))


def safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def template_hash(template: Any, collision_count: int = 0) -> str:
    """A template's hash as the controllers name things with it (``pod-template-hash``,
    ``controller-revision-hash``): a 32-bit FNV-1a of the template's canonical JSON and
    the collision count, its decimal digits in the safe alphabet."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += collision_count.to_bytes(4, "little")
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return safe_encode(str(value))


def pod_from_template(owner: Resource, template: JSON, *, name: str = "",
                      generate_name: str = "") -> JSON:
    """A pod as the controllers create it from ``template`` (GetPodFromTemplate): the
    template's labels, annotations and finalizers, its spec, the owner's controller
    reference."""
    meta = template.get("metadata") or {}
    metadata: JSON = {"namespace": owner.namespace,
                      "labels": dict(meta.get("labels") or {}),
                      "ownerReferences": [controller_ref(owner)]}
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = generate_name or f"{owner.name}-"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(template.get("spec") or {})}


def is_terminal(pod: Resource) -> bool:
    return pod.status.get("phase") in ("Succeeded", "Failed")


def is_active(pod: Resource) -> bool:
    """FilterActivePods: not finished and not being deleted."""
    return not is_terminal(pod) and not pod.metadata.deletion_timestamp


def ready_since(pod: Resource) -> datetime | None:
    """When the pod became Ready (its Ready condition's transition), None when not Ready."""
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            stamp = cond.get("lastTransitionTime")
            return parse_time(stamp) if stamp else datetime.fromtimestamp(0, UTC)
    return None


def is_ready(pod: Resource) -> bool:
    return ready_since(pod) is not None


def is_available(pod: Resource, min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least ``min_ready_seconds``."""
    since = ready_since(pod)
    if since is None:
        return False
    if min_ready_seconds <= 0:
        return True
    return since + timedelta(seconds=min_ready_seconds) <= now


async def claim(client: KubeClient, owner: Resource, candidates: Iterable[Resource],
          selector: LabelSelector, kind: str = "Pod") -> list[Resource]:
    """The ControllerRefManager: the candidates ``owner`` controls once orphans its selector
    covers are adopted and its own that the selector no longer covers are released.
    Nothing is adopted while the owner is being deleted."""
    owned: list[Resource] = []
    for obj in candidates:
        ref = controller_of(obj)
        matches = selector.matches(obj.metadata.labels)
        if ref is not None:
            if ref.get("uid") != owner.metadata.uid:
                continue
            if matches:
                owned.append(obj)
            elif not obj.metadata.deletion_timestamp:
                await _set_controller(client, kind, obj, owner, adopt=False)
            continue
        if matches and not owner.metadata.deletion_timestamp \
                and not obj.metadata.deletion_timestamp:
            adopted = await _set_controller(client, kind, obj, owner, adopt=True)
            if adopted is not None:
                owned.append(adopted)
    return owned


async def _set_controller(client: KubeClient, kind: str, obj: Resource, owner: Resource, *,
                    adopt: bool) -> Resource | None:
    def mutate(current: Resource) -> bool:
        refs = [r for r in current.metadata.owner_references or []
                if r.get("uid") != owner.metadata.uid]
        if adopt:
            if controller_of(current) is not None:
                return False
            refs.append(controller_ref(owner))
        current.metadata.owner_references = refs
        return True

    try:
        return await write_object(client, kind, obj.name, obj.namespace, mutate)
    except (NotFound, Conflict):
        return None


def condition(obj: Resource, kind: str) -> JSON | None:
    return next((c for c in obj.status.get("conditions") or [] if c.get("type") == kind), None)


def set_condition(status: JSON, cond: JSON) -> None:
    """SetCondition as the apps controllers do: the same status and reason is left alone;
    otherwise the condition goes to the end, keeping its transition time when only the
    reason changed."""
    conditions = list(status.get("conditions") or [])
    old = next((c for c in conditions if c.get("type") == cond["type"]), None)
    if old is not None and old.get("status") == cond["status"] \
            and old.get("reason") == cond.get("reason"):
        return
    if old is not None and old.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": old.get("lastTransitionTime",
                                                      cond.get("lastTransitionTime"))}
    status["conditions"] = [c for c in conditions if c.get("type") != cond["type"]] + [cond]
