"""The read-patch-write loop kube-apiserver runs for a PATCH, in one place for every caller
(the HTTP front and the in-process client): read the live object, build the object to
write from it, write it; when another write got in between (Conflict) and the patch named
no resourceVersion of its own, read again and patch the new object, a few times.

A resourceVersion the patched object carries that differs from the live one is a
precondition the patch set: its Conflict is the answer. An apply that finds no object
creates it (AlreadyExists when someone else created it first: applied again).
"""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.errors import AlreadyExists, Conflict, InjectedConflict, NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.patch.managed import Applied
from kubelet_sim.apiserver.server import APIServer

PATCH_RETRIES = 5


def write_patched(api: APIServer, kind: str, name: str, namespace: str, subresource: str,
                  patched: Callable[[Resource], Resource], *,
                  dry_run: bool = False) -> Resource:
    """``patched(live)`` is the object to write (its own resourceVersion, if it sets one,
    a precondition); written with the ``patch`` verb to the object or its status."""
    write = api.update_status if subresource else api.update
    for attempt in range(PATCH_RETRIES):
        current = api.get(kind, name, namespace)
        obj = patched(current)
        sent = obj.metadata.resource_version
        precondition = sent not in ("", current.metadata.resource_version)
        obj.metadata.resource_version = sent or current.metadata.resource_version
        try:
            return write(obj, "patch", dry_run=dry_run)
        except InjectedConflict:
            raise
        except Conflict:
            if precondition or attempt == PATCH_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def write_applied(api: APIServer, kind: str, name: str, namespace: str, subresource: str,
                  applied: Callable[[Resource | None], Resource], wanted_version: str, *,
                  dry_run: bool = False,
                  before_create: Callable[[Resource], None] | None = None,
                  ) -> tuple[Resource, bool]:
    """Server-side apply's loop: ``applied(live or None)`` is the object to write; created
    when there is none (not for a subresource or with ``wanted_version``, a precondition),
    else updated. Returns the stored object and whether it was created."""
    write = api.update_status if subresource else api.update
    for attempt in range(PATCH_RETRIES):
        try:
            current: Resource | None = api.get(kind, name, namespace)
        except NotFound:
            if subresource or wanted_version:
                raise
            current = None
        obj = applied(current)
        try:
            if current is None:
                obj.metadata.resource_version = ""
                if before_create is not None:
                    before_create(obj)
                return api.create(obj, dry_run=dry_run), True
            obj.metadata.resource_version = (wanted_version
                                             or current.metadata.resource_version)
            return write(obj, "patch", dry_run=dry_run), False
        except InjectedConflict:
            raise
        except (Conflict, AlreadyExists):
            if wanted_version or attempt == PATCH_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def applied_document(result: Applied, live: JSON | None, name: str,
                     namespace: str | None) -> JSON:
    """The object an apply writes: its merged fields (the live object's when it changed
    nothing) with the managedFields it computed; ``namespace`` None for a cluster-scoped
    kind."""
    doc = dict(result.obj if result.obj is not None else live or {})
    meta = dict(doc.get("metadata") or {})
    meta["managedFields"] = result.managed_fields
    meta.setdefault("name", name)
    if namespace is not None:
        meta.setdefault("namespace", namespace)
    doc["metadata"] = meta
    return doc
