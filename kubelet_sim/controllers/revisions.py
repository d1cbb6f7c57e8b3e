"""ControllerRevisions (apps/v1), the template history of StatefulSets and DaemonSets: one
per distinct pod template, named ``<owner>-<hash>``, holding the template as the patch
upstream stores (``{"spec": {"template": {..., "$patch": "replace"}}}``) and a revision
number; the newest template's revision is one above the highest (a template seen before
takes its old revision object back with the next number, as a rollback does). Revisions
beyond ``revisionHistoryLimit`` that no pod uses are deleted."""

from __future__ import annotations

import copy
from collections.abc import Iterable

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.client.writes import write_object
from kubelet_sim.controllers.workload_pods import (
    claim,
    controller_ref,
    selector_of,
    template_hash,
)

REVISION_HASH_LABEL = "controller-revision-hash"


def revision_data(owner: Resource) -> JSON:
    template = copy.deepcopy(owner.spec.get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


async def owned_revisions(client: KubeClient, cache: SharedCache,
                          owner: Resource) -> list[Resource]:
    owned = await claim(client, owner, cache.list("ControllerRevision", owner.namespace),
                        selector_of(owner), "ControllerRevision")
    return sorted(owned, key=lambda r: int(r.body.get("revision") or 0))


async def update_revision(client: KubeClient, owner: Resource,
                          revisions: list[Resource]) -> Resource:
    """The revision of the owner's current template: found (renumbered when older than
    the newest) or created."""
    data = revision_data(owner)
    highest = max((int(r.body.get("revision") or 0) for r in revisions), default=0)
    for rev in revisions:
        if rev.body.get("data") == data:
            if int(rev.body.get("revision") or 0) == highest:
                return rev
            renumbered = await write_object(client, "ControllerRevision", rev.name,
                                            rev.namespace,
                                            lambda obj: _renumber(obj, highest + 1))
            return renumbered or rev
    collisions = int(owner.status.get("collisionCount") or 0)
    while True:
        name = f"{owner.name}-{template_hash(data, collisions)}"
        labels = dict(((owner.spec.get("template") or {}).get("metadata") or {})
                      .get("labels") or {})
        try:
            return await client.create(Resource.from_dict({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": name, "namespace": owner.namespace, "labels": labels,
                             "ownerReferences": [controller_ref(owner)]},
                "data": data, "revision": highest + 1}))
        except AlreadyExists:
            existing = await client.get("ControllerRevision", name, owner.namespace)
            if existing.body.get("data") == data:
                return existing
            collisions += 1


def _renumber(obj: Resource, revision: int) -> bool:
    obj.body["revision"] = revision
    return True


async def prune(client: KubeClient, owner: Resource, revisions: Iterable[Resource],
                in_use: set[str]) -> bool:
    """Delete the oldest revisions beyond ``revisionHistoryLimit`` that nothing uses."""
    limit = int(owner.spec.get("revisionHistoryLimit", 10))
    idle = [r for r in revisions if r.name not in in_use]
    changed = False
    for rev in idle[:max(0, len(idle) - limit)]:
        try:
            await client.delete("ControllerRevision", rev.name, rev.namespace,
                                uid=rev.metadata.uid)
            changed = True
        except NotFound:
            continue
    return changed
