"""kube-controller-manager's namespace controller (``namespace-controller``): a
namespace marked for deletion (Terminating) has its contents deleted (in the
background, as its delete-collection calls do), its deletion conditions kept
(NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersionParsingFailure,
NamespaceDeletionContentFailure, NamespaceContentRemaining,
NamespaceFinalizersRemaining, with kube-controller-manager's reasons and messages),
and once nothing is left its ``kubernetes`` finalizer removed through the ``finalize``
subresource and the namespace deleted again, so that it goes when no other finalizer
holds it.

Pods leave after their grace period (the kubelet's final delete), objects with
finalizers when those are removed; the controller waits for them, woken by Pod and
claim changes and its resync."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime
from typing import Any

from kubelet_sim.api.errors import ApiError, Conflict, NotFound
from kubelet_sim.api.model import JSON, Resource, parse_time, set_condition
from kubelet_sim.apiserver.create_defaults import NAMESPACE_FINALIZER
from kubelet_sim.client.kube_client import ServedKind
from kubelet_sim.controllers.base import Controller

COMPONENT = "namespace-controller"
# condition type -> (reason, message) when all is well, in kube-controller-manager's order
OK_CONDITIONS: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered",
                                          "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions",
                                                    "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted", "All content successfully deleted, "
                                                          "may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers",
                                     "All content-preserving finalizers finished"),
}


class NamespaceController(Controller):
    name = COMPONENT
    kinds = ("Namespace", "Pod", "PersistentVolumeClaim")

    async def reconcile(self) -> bool:
        changed = False
        for ns in self.cache.list("Namespace"):
            if ns.is_terminating:
                changed |= await self.step(f"namespace/{ns.name}", self._sync, ns.name)
        return changed

    async def _sync(self, name: str) -> bool:
        try:
            ns = await self.client.get("Namespace", name)
        except NotFound:
            return False
        if NAMESPACE_FINALIZER not in (ns.spec.get("finalizers") or []):
            return await self._delete_namespace(ns)
        # discovery, as the controller's: the namespaced kinds it can list and delete
        served = {k.kind: k for k in await self.client.served_kinds()
                  if k.namespaced and k.allows("list", "delete")}
        failures, held = await self._delete_contents(name, served)
        # nothing is created in a terminating namespace: only the kinds that had objects
        # are listed again
        remaining, unlisted = await self._contents(
            name, {kind: served[kind] for kind in held if kind in served})
        failures = list(dict.fromkeys([*failures, *unlisted]))  # a kind failing twice: once
        changed = await self._write_conditions(ns, failures, remaining, served)
        if failures:
            raise RuntimeError(f"failed to delete all resource types, {len(failures)} "
                               f"remaining: {', '.join(failures)}")
        if remaining:  # pods in their grace period, objects held by finalizers
            # looked at again in half the longest grace period left plus a second
            self._note_retry(f"namespace/{name}", _estimate(remaining, self.clock.now()) / 2 + 1)
            return changed
        ns = await self.client.get("Namespace", name)
        finalizers = [f for f in ns.spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER]
        finalizing = ns.copy()
        finalizing.spec["finalizers"] = finalizers
        try:
            await self.client.finalize(finalizing)
        except NotFound:
            return True  # it went with its last finalizer
        if finalizers:
            return True  # another finalizer of spec.finalizers is someone else's
        with contextlib.suppress(NotFound):  # gone with the finalize: nothing else held it
            await self._delete_namespace(await self.client.get("Namespace", name))
        return True

    async def _delete_namespace(self, ns: Resource) -> bool:
        if ns.spec.get("finalizers"):
            return False
        try:
            await self.client.delete("Namespace", ns.name, uid=ns.metadata.uid)
        except (NotFound, Conflict):
            return False
        return True

    async def _contents(self, namespace: str, served: dict[str, ServedKind]
                        ) -> tuple[list[Resource], list[str]]:
        """Every object left in ``namespace``, and the resources that could not be listed."""
        found: list[Resource] = []
        failures: list[str] = []
        for kind in served.values():
            try:
                found += (await self.client.list(kind.kind, namespace)).items
            except NotFound:
                continue  # its kind went meanwhile (a definition deleted)
            except ApiError as err:
                failures.append(f"{kind.resource}: {err}")
        return found, failures

    async def _delete_contents(self, namespace: str, served: dict[str, ServedKind]
                               ) -> tuple[list[str], set[str]]:
        """Delete what is not being deleted yet; the resources whose list or delete
        failed, and the kinds that had objects."""
        contents, failures = await self._contents(namespace, served)
        held = {obj.kind for obj in contents}
        for obj in contents:
            if obj.is_terminating:
                continue
            try:
                await self.client.delete(obj.kind, obj.name, namespace,
                                         propagation_policy="Background")
            except NotFound:
                continue
            except ApiError as err:
                failures.append(f"{_resource(obj.kind, served)}: {err}")
        return failures, held

    async def _write_conditions(self, ns: Resource, failures: list[str],
                                remaining: list[Resource], served: dict[str, ServedKind]
                                ) -> bool:
        found: dict[str, tuple[str, str, str]] = {
            kind: ("False", *ok) for kind, ok in OK_CONDITIONS.items()}
        if failures:
            found["NamespaceDeletionContentFailure"] = (
                "True", "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(failures)} remaining: "
                + ", ".join(failures))
        if remaining:
            per_resource = Counter(_resource(o.kind, served) for o in remaining)
            found["NamespaceContentRemaining"] = (
                "True", "SomeResourcesRemain", "Some resources are remaining: " + ", ".join(
                    f"{r} has {n} resource instances" for r, n in sorted(per_resource.items())))
            held = Counter(f for o in remaining for f in o.metadata.finalizers)
            if held:
                found["NamespaceFinalizersRemaining"] = (
                    "True", "SomeFinalizersRemain",
                    "Some content in the namespace has finalizers remaining: " + ", ".join(
                        f"{f} in {n} resource instances" for f, n in sorted(held.items())))
        updated = ns.copy()
        now = self.clock.now()
        for kind, (status, reason, message) in found.items():
            set_condition(updated, {"type": kind, "status": status, "reason": reason,
                                    "message": message}, now)
        updated.status["phase"] = "Terminating"
        if _same(updated.status, ns.status):
            return False
        await self.client.update_status(updated)
        return True


def _resource(kind: str, served: dict[str, ServedKind]) -> str:
    """``<plural>.<group>`` as the controller names a resource (``pods.``)."""
    found = served.get(kind)
    return found.resource if found is not None else f"{kind.lower()}."


def _estimate(remaining: list[Resource], now: datetime) -> float:
    """Seconds until the last pod left in its grace period should be gone (0: none)."""
    longest = 0.0
    for obj in remaining:
        if obj.kind == "Pod" and obj.metadata.deletion_timestamp:
            left = (parse_time(obj.metadata.deletion_timestamp) - now).total_seconds()
            longest = max(longest, left)
    return longest


def _same(a: JSON, b: JSON) -> bool:
    def plain(status: JSON) -> Any:
        return {**status, "conditions": [{k: v for k, v in c.items()
                                          if k != "lastTransitionTime"}
                                         for c in status.get("conditions") or []]}
    return bool(plain(a) == plain(b))
