"""kube-controller-manager's resource quota controller: each ResourceQuota's
``status.hard`` is its ``spec.hard`` and its ``status.used`` what exists in its namespace
now, measured by the quota evaluators (:mod:`kubelet_sim.apiserver.quota.usage`) for the
objects in its scopes. A finished or deleted pod gives back what the admission plugin
charged for it at the next pass (pod, claim, Service, ConfigMap and Secret changes wake
the controller; other kinds' ``count/`` entries follow at the resync). Used entries no
evaluator knows are kept as they were, as the controller keeps them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.quota import usage
from kubelet_sim.apiserver.quota.resource_lists import (
    ResourceList,
    add,
    count,
    equal,
    mask,
    parse_list,
    to_json,
)
from kubelet_sim.client.kube_client import ServedKind
from kubelet_sim.client.writes import write_status
from kubelet_sim.controllers.base import Controller

COMPONENT = "resourcequota-controller"


class ResourceQuotaController(Controller):
    name = COMPONENT
    kinds = ("ResourceQuota", "Pod", "PersistentVolumeClaim", "Service", "ConfigMap",
             "Secret")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the namespaced custom kinds discovery listed at the start of the pass
        self.custom_kinds: list[ServedKind] = []

    async def reconcile(self) -> bool:
        self.custom_kinds = [k for k in await self.client.served_kinds()
                             if k.custom and k.namespaced]
        changed = False
        for quota in self.cache.list("ResourceQuota"):
            key = f"quota/{quota.namespace}/{quota.name}"
            changed = await self.step(key, self._sync, quota) or changed
        return changed

    def computed_status(self, quota: Resource, custom_kinds: Sequence[ServedKind] | None = None
                        ) -> dict[str, dict[str, str]]:
        """``syncResourceQuota``: the hard limits as asked, and what is used of them
        (``count/`` of the custom kinds given, else of those the last pass discovered)."""
        hard = parse_list(quota.spec.get("hard"))
        used = mask(parse_list(quota.status.get("used")), hard)
        kinds = self.custom_kinds if custom_kinds is None else custom_kinds
        used.update(self._usage(quota, list(hard), kinds))
        return {"hard": to_json(hard), "used": to_json(mask(used, hard))}

    def _usage(self, quota: Resource, hard: list[str],
               custom_kinds: Sequence[ServedKind]) -> ResourceList:
        """``quota.CalculateUsage``: every evaluator that tracks something of ``hard``
        sums the objects of its kind in the quota's scopes, from zero."""
        total: ResourceList = {}
        scopes = usage.scope_requirements(quota)
        now = self.clock.now()
        custom = [usage.object_counter(k.kind, [f"count/{k.resource}"]) for k in custom_kinds]
        for ev in [*usage.evaluators(), *custom]:
            tracked = ev.matching(hard)
            if not tracked:
                continue
            found: ResourceList = {name: count(0) for name in tracked}
            for obj in self.cache.list(ev.kind, quota.namespace):
                if all(ev.in_scope(req, obj) for req in scopes):
                    found = add(found, mask(ev.usage(obj, now), tracked))
            total = add(total, found)
        return total

    async def _sync(self, quota: Resource) -> bool:
        wanted = self.computed_status(quota)
        if _same(quota.status, wanted):
            return False

        def mutate(obj: Resource) -> bool:
            fresh = self.computed_status(obj)
            if _same(obj.status, fresh):
                return False
            obj.status = {**obj.status, **fresh}
            return True

        return await write_status(self.client, "ResourceQuota", quota.name, quota.namespace,
                                  mutate) is not None


def _same(status: dict[str, object], wanted: dict[str, dict[str, str]]) -> bool:
    """The same hard limits (as written) and the same amounts used."""
    return (status.get("hard") or {}) == wanted["hard"] and equal(
        parse_list(status.get("used")), parse_list(wanted["used"]))
