"""An in-process Kubernetes API server.

Verbs: :meth:`APIServer.create`, ``get``, ``list``, ``update``, ``update_status``,
``patch`` (JSON merge patch), ``delete`` and ``watch``. The rules it keeps are the
API server's:

* one global ``resourceVersion`` counter, bumped on every write (a no-op update is not a
  write and changes nothing, as in Kubernetes);
* optimistic concurrency: a write carrying a stale ``resourceVersion`` raises
  :class:`Conflict` (409); a write without one is unconditional;
* ``metadata.generation`` only for the kinds kube-apiserver keeps it for, moved by what
  each of them watches (:mod:`kubelet_sim.apiserver.generation`);
* kinds with a status subresource: ``update`` ignores ``status``, ``update_status``
  writes ``status`` and the metadata the kind's status strategy lets through
  (:mod:`kubelet_sim.apiserver.status_strategy`);
* delete is graceful: with finalizers the object gets ``deletionTimestamp`` and stays
  until its finalizers are gone; a scheduled Pod stays for its grace period until
  deleted again with ``grace_period_seconds=0`` (the kubelet's final delete);
  a Namespace's first delete marks it Terminating; it goes once its ``spec.finalizers``
  (the ``finalize`` subresource) and finalizers are empty (:mod:`.namespaces`; the
  namespace controller deletes its contents, then its ``kubernetes`` finalizer);
* an Event goes (DELETED) ``event_ttl_seconds`` after its last write (``--event-ttl``);
* with a ``database`` (:mod:`~kubelet_sim.apiserver.persistence`) every write is on disk
  when answered; reopened, it has every object and the counter, and older watches 410;
* defaulting and validation run on every write (:mod:`kubelet_sim.apiserver.defaulting`,
  :mod:`kubelet_sim.apiserver.validation`), and updates keep Kubernetes' immutability and
  resize-admission rules (:mod:`kubelet_sim.apiserver.update_rules`);
* a dry run (``dry_run=True``, ``dryRun=All``) of a create, update or delete runs all of
  it (admission, defaulting, validation, the update rules, generation) and stops before
  the commit: nothing stored, no watch event, no quota charged, no cluster IP or node
  port taken.

All verbs are synchronous (the store, :mod:`kubelet_sim.apiserver.storage`, is in
memory) and serialised by a lock, so worker threads may call them too; ``watch`` hands
back an async iterator. Returned objects are private copies. A list holds the lock only
to pick its objects (stored objects are never changed in place): copying them, and
encoding them for the wire, happen outside it.

Lists page as kube-apiserver's do (``limit`` and ``continue``,
:mod:`kubelet_sim.apiserver.continue_token`): a page starts after the last key of the
previous one and shows the objects as they were at the first page's resourceVersion,
while the kept history reaches back to it (then 410 with a token to go on at the newest).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import random
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta

from kubelet_sim.api.default_storage_class import set_default_class
from kubelet_sim.api.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    ExpiredContinue,
    Gone,
    Invalid,
    NotFound,
    ServiceUnavailable,
    TooLargeResourceVersion,
)
from kubelet_sim.api.model import (
    JSON,
    Resource,
    clone,
    format_time,
    kind_info,
    new,
    set_condition,
    stored_kind,
)
from kubelet_sim.api.selectors import LabelSelector, query_predicate
from kubelet_sim.apiserver import continue_token, generation, status_strategy
from kubelet_sim.apiserver.admission import (
    InjectedConflicts,
    admit_delete,
    admit_new,
    admit_update,
    deletion_grace_period,
    generated_name,
    refuse_in_terminating_namespace,
)
from kubelet_sim.apiserver.admission_plugins import AdmissionPlugins
from kubelet_sim.apiserver.crd.definition import KIND as CRD_KIND
from kubelet_sim.apiserver.crd.definition import is_served
from kubelet_sim.apiserver.crd.registry import CustomResources
from kubelet_sim.apiserver.create_defaults import keep_namespace_finalizers, prepare_namespace
from kubelet_sim.apiserver.defaulting import apply_defaults
from kubelet_sim.apiserver.deletion_policy import finalizers_after_delete, resolve_policy
from kubelet_sim.apiserver.eviction import evict
from kubelet_sim.apiserver.invalid_objects import names_the_object
from kubelet_sim.apiserver.namespaces import finalized, goes_now
from kubelet_sim.apiserver.patch.merge import apply_merge_patch
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.quota import limit_ranger, quota_admission, usage
from kubelet_sim.apiserver.services.allocation import Allocation, ServiceAllocations
from kubelet_sim.apiserver.services.ranges import DEFAULT_NODE_PORTS, DEFAULT_SERVICE_CIDR
from kubelet_sim.apiserver.storage import ObjectStore, key_prefix
from kubelet_sim.apiserver.token_request import Signer
from kubelet_sim.apiserver.token_request import issue as issue_token
from kubelet_sim.apiserver.update_validation import validate_written_update
from kubelet_sim.apiserver.validation import validate
from kubelet_sim.apiserver.verbs import locked
from kubelet_sim.apiserver.watch import ADDED, DELETED, MODIFIED, Watch, WatchEvent
from kubelet_sim.utils.clock import Clock, RealClock

__all__ = [
    "APIServer",
    "ResourceList",
]

EVENT_TTL_SECONDS = 3600.0  # kube-apiserver --event-ttl: an Event lasts 1 h after its last write
# etcd3's and the watch cache's wording when a continue token's resourceVersion is gone
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You "
    "can start a new list without the continue parameter, or use the continue token in "
    "this response to retrieve the remainder of the results. Continuing with the provided "
    "token results in an inconsistent list - objects that were created, modified, or "
    "deleted between the time the first chunk was returned and now may show up in the list.")


@dataclass
class ResourceList:
    """A list answer: the items, the resourceVersion to start a watch from, and when a
    ``limit`` cut it short the token of the next page and (without selectors) how many
    objects remain after this page."""

    items: list[Resource]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


class APIServer:
    """The store plus the verbs. ``bootstrap_namespaces`` exist from the start, as
    ``default`` and ``kube-system`` do in a real cluster.

    ``storage_object_in_use_protection`` turns on that admission plugin: every new
    PersistentVolumeClaim gets the ``kubernetes.io/pvc-protection`` finalizer and every
    new PersistentVolume ``kubernetes.io/pv-protection``, so a deleted claim or volume
    stays (Terminating) until a protection controller removes the finalizer."""

    def __init__(
        self,
        clock: Clock | None = None,
        history_limit: int = 1000,
        bootstrap_namespaces: tuple[str, ...] = ("default", "kube-system"),
        storage_object_in_use_protection: bool = False,
        database: ObjectDatabase | None = None,
        event_ttl_seconds: float = EVENT_TTL_SECONDS,
        service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR,
        service_node_port_range: str = DEFAULT_NODE_PORTS,
        admission_plugins: Iterable[str] = (),
    ) -> None:
        self.clock: Clock = clock or RealClock()
        self.storage_protection = storage_object_in_use_protection
        self._store = ObjectStore(history_limit, database, ttl={"Event": event_ttl_seconds},
                                  now=lambda: self.clock.now().timestamp())
        self._lock = threading.RLock()
        self._conflicts = InjectedConflicts()
        self._rng = random.Random()
        # the optional admission plugins (ServiceAccount, Priority): ``up`` turns them on
        self.admission = AdmissionPlugins(admission_plugins, self._store.lookup,
                                          self._store.sorted, self._rng)
        self.write_delay = 0.0  # seconds every write waits (fault injection)
        # signs ServiceAccount tokens (TokenRequest); set by whoever keeps the key
        # (kubelet_sim.apiserver.http.token_signer); None: TokenRequest is unavailable
        self.token_signer: Signer | None = None
        # the kinds CustomResourceDefinitions add, kept up to date by every commit of one
        self.custom = CustomResources()
        self._store.feed(CRD_KIND, self.custom.on_definition)
        # the Services' cluster IPs and node ports, taken again from the stored Services
        self.services = ServiceAllocations(service_cluster_ip_range, service_node_port_range)
        self.services.rebuild(self._store.sorted("Service"))
        for name in bootstrap_namespaces:
            if self._store.lookup("Namespace", "", name) is None:
                self.create(new("Namespace", name))
        for obj in self.admission.bootstrap_objects():
            if self._store.lookup(obj.kind, obj.namespace, obj.name) is None:
                self.create(obj)

    # ------------------------------------------------------------------ reads
    @property
    def resource_version(self) -> str:
        """The newest resourceVersion handed out."""
        return str(self._store.version)

    @locked
    def get(self, kind: str, name: str, namespace: str = "") -> Resource:
        """The object, or :class:`NotFound`."""
        return self._current(kind, name, namespace).copy()

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        where: Callable[[Resource], bool] | None = None,
        *,
        limit: int = 0,
        continue_from: str = "",
        resource_version: str = "",
    ) -> ResourceList:
        """Objects of ``kind`` (in ``namespace``; None or "" = all), filtered, in key
        order (namespace, then name). ``where`` is an extra in-process filter (an
        informer index's role): it sees the stored object and must not modify it.
        ``limit``, ``continue_from`` (a token) and ``resource_version`` are the list
        options of :meth:`read_list`."""
        found = self.read_list(kind, namespace, label_selector, field_selector, where,
                               limit=limit, continue_from=continue_from,
                               resource_version=resource_version)
        found.items = [o.copy() for o in found.items]
        return found

    def read_list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        where: Callable[[Resource], bool] | None = None,
        *,
        limit: int = 0,
        continue_from: str = "",
        resource_version: str = "",
    ) -> ResourceList:
        """:meth:`list` handing out the stored objects themselves, to read (encode) and
        never to modify: the lock is held while they are picked, not while they are
        copied or written out.

        ``limit`` > 0 cuts the list after that many objects, with a ``continue`` token
        for the rest; ``continue_from`` is such a token (400 when it does not decode or
        comes with a ``resource_version`` other than "0"; 410 with a token going on at
        the newest resourceVersion when the kept history no longer reaches its own;
        504 when it names one the server has not reached). With ``resource_version``
        "0" (any, as the watch cache serves it) ``limit`` is ignored, as kube-apiserver
        does."""
        info = kind_info(kind)
        selected = query_predicate(kind, namespace, label_selector, field_selector)

        def matches(obj: Resource) -> bool:
            return selected(obj) and (where is None or where(obj))

        # without selectors every object under the key prefix is listed: no call per object
        every = (not label_selector and not field_selector and where is None
                 and (info.namespaced or not namespace))
        prefix = key_prefix(namespace if info.namespaced else None)
        start, at = "", None
        if continue_from:
            continuation = continue_token.decode(continue_from, prefix)
            if resource_version not in ("", "0"):
                raise BadRequest("specifying resource version is not allowed when using "
                                 "continue")
            start = continuation.key
            if continuation.resource_version > 0:
                at = continuation.resource_version
        elif resource_version == "0":
            limit = 0
        with self._lock:
            self._store.expire()  # what outlived its TTL goes first, as etcd's leases do
            if at is not None and at > self._store.version:
                raise TooLargeResourceVersion(at, self._store.version)
            try:
                page = self._store.page(kind, prefix, start, None if every else matches,
                                        max(limit, 0), at)
            except Gone:
                raise ExpiredContinue(INCONSISTENT_CONTINUE, continue_token.encode(
                    start[len(prefix):], continue_token.LATEST)) from None
        found = ResourceList(page.items, str(page.resource_version))
        if limit > 0 and page.remaining:
            found.continue_token = continue_token.after(page.last_key, prefix,
                                                        page.resource_version)
            if not label_selector and not field_selector and where is None:
                found.remaining_item_count = page.remaining
        return found

    def encoded_json(self, objects: builtins.list[Resource]) -> builtins.list[bytes]:
        """The JSON of each object :meth:`read_list` handed out, made once per object
        (a write stores a new one; no lock needed)."""
        return self._store.encoded_json(objects)

    def request_token(self, namespace: str, name: str, request: JSON) -> JSON:
        """``POST serviceaccounts/<name>/token``: the answered TokenRequest
        (:mod:`kubelet_sim.apiserver.token_request`)."""
        if self.token_signer is None:
            raise ServiceUnavailable("the API server has no service account token signer")
        return issue_token(self, self.token_signer, namespace or "default", name, request,
                           self.clock.now())

    # ------------------------------------------------------------------ writes
    @locked
    @names_the_object
    def create(self, obj: Resource | JSON, *, dry_run: bool = False) -> Resource:
        """Store a new object: uid, resourceVersion, generation, creationTimestamp.
        ``dry_run`` (``dryRun=All``): every step but the commit, the quota's charge and
        the Service's allocation (:meth:`ServiceAllocations.dry_run`); the object as it
        would be stored, without a resourceVersion, is returned."""
        obj = Resource.from_dict(obj) if isinstance(obj, dict) else obj.copy()
        info = kind_info(obj.kind)
        meta = obj.metadata
        meta.namespace = (meta.namespace or "default") if info.namespaced else ""
        sent_name = meta.name
        if not meta.name and meta.generate_name:
            meta.name = generated_name(self._rng, meta.generate_name)
        if not meta.name:
            raise Invalid("metadata.name", "Required value: name or generateName is required")
        if meta.resource_version:
            raise BadRequest("resourceVersion should not be set on objects to be created")
        if info.namespaced:
            ns = self._store.lookup("Namespace", "", meta.namespace)
            if ns is None:
                raise NotFound("Namespace", meta.namespace)
            if ns.is_terminating:
                raise refuse_in_terminating_namespace(obj.kind, sent_name, meta.namespace)
        meta.uid = str(uuid.uuid4())
        generation.on_create(obj)
        meta.creation_timestamp = format_time(self.clock.now())
        meta.deletion_timestamp = None
        meta.deletion_grace_period_seconds = None
        if info.create_status is not None:
            obj.status = copy.deepcopy(info.create_status)
        admit_new(obj, self.storage_protection)
        limit_ranger.mutate(obj, self._in_namespace("LimitRange", meta.namespace))
        self.admission.admit_create(obj, sent_name or meta.generate_name)
        set_default_class(obj, self._store.sorted("StorageClass"))
        if obj.kind == "Namespace":
            prepare_namespace(obj)
        apply_defaults(obj)
        obj = self.custom.prepare(obj, self.clock.now())
        validate(obj)
        if self._store.lookup(obj.kind, meta.namespace, meta.name) is not None:
            raise AlreadyExists(obj.kind, meta.name, meta.namespace)
        self._admit_limits_and_quota(obj, None, dry_run=dry_run)
        services = self.services.dry_run() if dry_run else self.services
        allocation = services.allocate_create(obj) if obj.kind == "Service" else None
        if dry_run:
            return obj.copy()
        with _reverted_on_error(allocation):
            self._store.commit(ADDED, obj, None)
        return obj.copy()

    def await_admission(self, obj: Resource) -> None:
        """Before a create from a client takes the lock: the ServiceAccount plugin's
        second looks for a pod's missing ``default`` ServiceAccount (sleeps: call it
        from a worker thread, never the event loop)."""
        self.admission.await_create(obj)

    @locked
    def update(self, obj: Resource | JSON, verb: str = "update", *,
               dry_run: bool = False) -> Resource:
        """Replace spec/metadata. ``status`` is ignored for kinds with a status subresource.
        ``verb`` names the request for fault injection (``patch`` for a patch's write).
        ``dry_run``: every rule of the update, nothing stored; the object as it would be
        stored is returned."""
        return self._update(obj, status_only=False, verb=verb, dry_run=dry_run)

    @locked
    def update_status(self, obj: Resource | JSON, verb: str = "update", *,
                      dry_run: bool = False) -> Resource:
        """Replace ``status`` (the status subresource), and the user metadata the kind's
        status strategy lets a status write change (:mod:`.status_strategy`)."""
        kind = obj.kind if isinstance(obj, Resource) else \
            stored_kind(str(obj.get("kind")), str(obj.get("apiVersion") or ""))
        if not kind_info(kind).status_subresource:
            raise NotFound(f"{kind}/status", "the server could not find the requested resource")
        return self._update(obj, status_only=True, verb=f"{verb}_status", dry_run=dry_run)

    @locked
    def patch(
        self, kind: str, name: str, patch: JSON, namespace: str = "", subresource: str = "",
        *, dry_run: bool = False,
    ) -> Resource:
        """Apply a JSON merge patch. A ``metadata.resourceVersion`` in the patch is a
        precondition; without it the patch applies to the current object."""
        if subresource not in ("", "status"):
            raise NotFound(f"{kind}/{subresource}", name)
        current = self._current(kind, name, namespace)
        merged = apply_merge_patch(current.to_dict(), patch)
        verb = "patch_status" if subresource else "patch"
        return self._update(Resource.from_dict(merged), status_only=bool(subresource), verb=verb,
                            dry_run=dry_run)

    @locked
    def delete(
        self,
        kind: str,
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> Resource:
        """Delete gracefully; returns the object as it stands after the call (its last state
        when it is gone). ``uid``/``resource_version`` are preconditions (Conflict).
        ``propagation_policy`` (Orphan, Background, Foreground) sets the garbage
        collector's finalizers (:mod:`kubelet_sim.apiserver.deletion_policy`).
        ``dry_run``: the object as the delete would leave it (deletionTimestamp,
        finalizers), nothing changed or removed."""
        admit_delete(kind, name)  # admission comes before the store is read
        current = self._current(kind, name, namespace)
        meta = current.metadata
        stale = resource_version and resource_version != meta.resource_version
        if (uid and uid != meta.uid) or stale:
            raise Conflict(f"Precondition failed for {kind} {name!r}: uid/resourceVersion")
        if kind == CRD_KIND and not dry_run:
            self._delete_custom_resources(name)
        policy = resolve_policy(propagation_policy, None)
        grace = deletion_grace_period(current, grace_period_seconds)
        updated = current.copy()
        updated.metadata.finalizers = finalizers_after_delete(meta.finalizers, policy)
        if kind == "Namespace" and current.is_terminating:
            if current.spec.get("finalizers"):
                return current.copy()  # the namespace controller is not done with it
            if not updated.metadata.finalizers:
                return self._remove(current)
        if current.is_terminating:
            if grace < (meta.deletion_grace_period_seconds or 0):
                self._mark_deleting(updated, grace)
            if updated.to_dict() == current.to_dict():
                return current.copy()
        else:
            generation.on_delete(updated)
            self._mark_deleting(updated, grace)
            if kind == "Namespace":
                updated.status["phase"] = "Terminating"
        if (not updated.metadata.deletion_grace_period_seconds
                and not updated.metadata.finalizers and kind != "Namespace"):
            return current.copy() if dry_run else self._remove(current)
        if dry_run:
            return updated
        self._store.commit(MODIFIED, updated, current)
        return self.get(kind, name, namespace) if self._exists(kind, name, namespace) else updated

    @locked
    def finalize(self, obj: Resource | JSON) -> Resource:
        """``PUT namespaces/<name>/finalize``: store the sent ``spec.finalizers`` (a
        ``metadata.resourceVersion`` sent is a precondition); a terminating namespace
        left with no finalizers goes (:mod:`kubelet_sim.apiserver.namespaces`)."""
        sent = Resource.from_dict(obj) if isinstance(obj, dict) else obj.copy()
        current = self._current("Namespace", sent.name, "")
        updated = finalized(current, sent)
        if sent.metadata.resource_version not in ("", current.metadata.resource_version):
            stale = ("the object has been modified; please apply your changes to the latest "
                     "version and try again")
            raise Conflict(f"Operation cannot be fulfilled on namespaces {sent.name!r}: "
                           f"{stale}", kind="Namespace", name=sent.name, detail=stale)
        updated.metadata.resource_version = current.metadata.resource_version
        validate(updated)
        return self._commit_update(current, updated, None)

    @locked
    def namespace_contents(self, namespace: str) -> builtins.list[Resource]:
        """Every object in ``namespace``, of every served kind (the namespace controller's
        discovery and lists in one)."""
        return [self._current(kind, name, namespace).copy()
                for kind, name in self._store.names_in_namespace(namespace)]

    # ------------------------------------------------------------------ pod requests
    @locked
    def bind(self, name: str, namespace: str, node_name: str,
             annotations: dict[str, str] | None = None, uid: str | None = None) -> Resource:
        """The ``pods/binding`` subresource: set ``spec.nodeName`` of an unbound pod (and
        the binding's annotations, and PodScheduled True). A bound or terminating pod is
        409 Conflict, as kube-apiserver answers."""
        current = self._current("Pod", name, namespace)

        def refuse(why: str) -> Conflict:
            return Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": {why}',
                            "pods/binding", name)

        if uid and uid != current.metadata.uid:
            raise refuse(f"Precondition failed: UID in precondition: {uid}, UID in object "
                         f"meta: {current.metadata.uid}")
        if current.is_terminating:
            raise refuse(f"pod {name} is being deleted, cannot be assigned to a host")
        if current.spec.get("nodeName"):
            raise refuse(f'pod {name} is already assigned to node '
                         f'"{current.spec["nodeName"]}"')
        updated = current.copy()
        updated.spec["nodeName"] = node_name
        updated.metadata.annotations.update(annotations or {})
        set_condition(updated, {"type": "PodScheduled", "status": "True"}, self.clock.now())
        validate(updated)
        self._store.commit(MODIFIED, updated, current)
        return updated.copy()

    @locked
    def evict(self, name: str, namespace: str, *, dry_run: bool = False,
              grace_period_seconds: int | None = None, uid: str | None = None,
              resource_version: str | None = None,
              propagation_policy: str | None = None) -> None:
        """The ``pods/eviction`` subresource: delete the pod if its PodDisruptionBudget
        allows (:mod:`kubelet_sim.apiserver.eviction`), else :class:`TooManyRequests`.
        ``uid``/``resource_version`` are preconditions on the pod as the eviction finds it
        (the DisruptionTarget condition written before the delete moves its version)."""
        current = self._current("Pod", name, namespace)
        stale = resource_version and resource_version != current.metadata.resource_version
        if (uid and uid != current.metadata.uid) or stale:
            raise Conflict(f"Precondition failed for Pod {name!r}: uid/resourceVersion")

        def delete(pod: Resource) -> Resource:
            return self.delete("Pod", name, namespace, grace_period_seconds=grace_period_seconds,
                               uid=uid, propagation_policy=propagation_policy)

        evict(self, namespace or "default", name, dry_run, delete)

    # ------------------------------------------------------------------ watch
    @locked
    def feed(self, kind: str, on_change: Callable[[str, Resource], None]) -> None:
        """List and watch ``kind`` with no delivery delay, for an in-process informer
        cache: ``on_change(ADDED, obj)`` for each current object, then
        ``on_change(event_type, obj)`` inside every commit of ``kind``. Objects are the
        stored ones, to copy, never to modify."""
        kind_info(kind)
        self._store.feed(kind, on_change)

    @locked
    def watch(
        self,
        kind: str | None = None,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        resource_version: str | int | None = None,
        buffer_limit: int | None = None,
    ) -> Watch:
        """Subscribe to changes. With ``resource_version`` the watch first replays exactly
        the retained events after it (:class:`Gone` if too old); without, it starts with a
        synthetic ``ADDED`` for every current object, as Kubernetes does. With a
        ``buffer_limit`` a watcher more than that many events behind is closed."""
        matches = query_predicate(kind, namespace, label_selector, field_selector)
        since = None if resource_version in (None, "", "0") else int(str(resource_version))
        return self._store.watch(kind, matches, since, buffer_limit)

    @locked
    def events_since(
        self, resource_version: str | int, kind: str | None = None, namespace: str | None = None
    ) -> builtins.list[WatchEvent]:
        """The retained events after ``resource_version`` (:class:`Gone` if too old)."""
        matches = query_predicate(kind, namespace, None, None)
        return self._store.events_since(int(str(resource_version)), kind, matches)

    # ------------------------------------------------------------------ fault injection
    @locked
    def inject_conflicts(
        self, kind: str, count: int, verbs: tuple[str, ...] = ("update", "update_status")
    ) -> None:
        """Make the next ``count`` writes of ``kind`` through ``verbs`` (any of update,
        update_status, patch, patch_status) fail with :class:`Conflict`, as if another
        writer had raced them. The object is left untouched. A new call replaces the
        pending count for ``kind``; ``count=0`` clears it."""
        self._conflicts.set(kind, count, verbs)

    @locked
    def close_watches(self, expire: bool = False) -> int:
        """End every live watch, as an API server restart or a watch timeout does; clients
        watch again from the last resourceVersion they saw (``expire``: that is then too
        old, 410 Gone, and they relist). Returns how many ended."""
        if expire:
            self._store.expire_history()
        return self._store.close_watches()

    # ------------------------------------------------------------------ internals
    def _stored_storage_class(self, name: str) -> Resource | None:
        return self._store.lookup("StorageClass", "", name)

    def _in_namespace(self, kind: str, namespace: str) -> builtins.list[Resource]:
        return [o for o in self._store.sorted(kind) if o.namespace == namespace]

    def _admit_limits_and_quota(self, obj: Resource, old: Resource | None,
                                status: bool = False, dry_run: bool = False) -> None:
        """The validating admission plugins of a create (``old`` None) or update (of the
        status subresource: only a claim's, for quota): LimitRanger's checks, then
        ResourceQuota, whose charge to the quotas' usage is written before the object is
        (:mod:`kubelet_sim.apiserver.quota`); a dry run is checked, never charged."""
        if not obj.namespace or (status and obj.kind != "PersistentVolumeClaim"):
            return
        if not status:
            limit_ranger.validate(obj, old, self._in_namespace("LimitRange", obj.namespace))
        quotas = self._in_namespace("ResourceQuota", obj.namespace)
        custom = self.custom.by_store_kind(obj.kind)
        counter = usage.object_counter(obj.kind, [f"count/{custom.name}"]) \
            if custom is not None and not custom.adopts_builtin else None
        charged = quota_admission.charge(obj, old, quotas, self.clock.now(), status, counter)
        for quota in [] if dry_run else charged:
            self._update(quota, status_only=True, verb="update")

    def _current(self, kind: str, name: str, namespace: str) -> Resource:
        info = kind_info(kind)
        ns = (namespace or "default") if info.namespaced else ""
        obj = self._store.lookup(kind, ns, name)
        if obj is None:
            raise NotFound(kind, name, ns)
        return obj

    def _exists(self, kind: str, name: str, namespace: str) -> bool:
        try:
            self._current(kind, name, namespace)
        except NotFound:
            return False
        return True

    @names_the_object
    def _update(self, obj: Resource | JSON, *, status_only: bool, verb: str,
                dry_run: bool = False) -> Resource:
        obj = Resource.from_dict(obj) if isinstance(obj, dict) else obj.copy()
        info = kind_info(obj.kind)
        current = self._current(obj.kind, obj.metadata.name, obj.metadata.namespace)
        if not dry_run:
            self._conflicts.take(obj.kind, verb)  # a racing writer fails writes only
        sent = obj.metadata
        if sent.resource_version and not sent.resource_version.isdigit():
            raise BadRequest(f"resourceVersion: Invalid value: {json.dumps(sent.resource_version)}"
                             f": strconv.ParseUint: parsing {json.dumps(sent.resource_version)}: "
                             "invalid syntax")
        if sent.resource_version and sent.resource_version != current.metadata.resource_version:
            stale = ("the object has been modified; please apply your changes to the latest "
                     "version and try again")
            raise Conflict(f"Operation cannot be fulfilled on {obj.kind} {sent.name!r}: {stale}",
                           kind=obj.kind, name=sent.name, detail=stale)
        if sent.uid and sent.uid != current.metadata.uid:
            raise Conflict(f"Precondition failed: UID in object meta: {sent.uid}")
        if status_only:
            updated = status_strategy.status_write(current, obj)
        else:
            updated = obj
            cur = current.metadata
            for attr in ("name", "namespace", "uid", "resource_version", "generation",
                         "creation_timestamp", "deletion_timestamp",
                         "deletion_grace_period_seconds"):
                setattr(updated.metadata, attr, getattr(cur, attr))
            if info.status_subresource:
                updated.status = copy.deepcopy(current.status)
            if not updated.metadata.managed_fields:
                # a write that does not send them keeps them, as kube-apiserver does
                updated.metadata.managed_fields = clone(cur.managed_fields)
            admit_update(updated)
            self.admission.admit_update(current, updated)
            if updated.kind == "Namespace":
                keep_namespace_finalizers(current, updated)
            if updated.kind == "Service":
                self.services.keep_allocated(current, updated)
        if current.is_terminating and \
                set(updated.metadata.finalizers) - set(current.metadata.finalizers):
            raise Invalid("metadata.finalizers", "Forbidden: no new finalizers can be added "
                          "if the object is being deleted")
        apply_defaults(updated)
        updated = self.custom.prepare(updated, self.clock.now())
        validate_written_update(current, updated, self._stored_storage_class,
                                status_only=status_only)
        self._admit_limits_and_quota(updated, current, status_only, dry_run)
        updated.metadata.generation = generation.on_update(current, updated,
                                                           status_only=status_only)
        services = self.services.dry_run() if dry_run else self.services
        allocation = (services.allocate_update(current, updated)
                      if updated.kind == "Service" and not status_only else None)
        if dry_run:
            return updated.copy()
        with _reverted_on_error(allocation):
            return self._commit_update(current, updated, allocation)

    def _commit_update(self, current: Resource, updated: Resource,
                       allocation: Allocation | None) -> Resource:
        if updated.to_dict() == current.to_dict():
            if allocation is not None:
                allocation.revert()
            return current.copy()  # a no-op update writes nothing
        gone = goes_now(updated) if updated.kind == "Namespace" else (
            updated.is_terminating
            and not updated.metadata.finalizers
            and (updated.metadata.deletion_grace_period_seconds or 0) == 0
        )
        if gone:
            # The API server deletes instead of writing the emptied finalizer list.
            if allocation is not None:
                allocation.commit()
            return self._remove(updated)
        self._store.commit(MODIFIED, updated, current)
        if allocation is not None:
            allocation.commit()  # what the Service no longer holds goes back
        return updated.copy()

    def _mark_deleting(self, obj: Resource, grace: int) -> None:
        obj.metadata.deletion_timestamp = format_time(self.clock.now() + timedelta(seconds=grace))
        obj.metadata.deletion_grace_period_seconds = grace

    def _remove(self, current: Resource) -> Resource:
        final = current.copy()
        self._store.commit(DELETED, final, current)
        if current.kind == "Service":
            self.services.release(current)
        if current.kind == CRD_KIND:
            self._reconsider_names(str(current.spec.get("group") or ""))
        return final.copy()

    def _reconsider_names(self, group: str) -> None:
        """As apiextensions' naming controller after a definition goes: the definitions of
        its group still refused a name are looked at again (their status recomputed)."""
        for crd in list(self._store.sorted(CRD_KIND)):
            if crd.spec.get("group") == group and not is_served(crd) \
                    and not crd.is_terminating:
                self._update(crd.to_dict(), status_only=True, verb="update")

    def _delete_custom_resources(self, definition: str) -> None:
        """What apiextensions' cleanup finalizer does before a definition goes: every
        object of its kind goes first (here at once, finalizers not waited for)."""
        served = next((k for k in self.custom.kinds() if k.name == definition), None)
        if served is None:
            return
        for obj in list(self._store.sorted(served.store_kind)):
            self._remove(obj)
        self._store.close_watches(served.store_kind)  # their streams end once the DELETEDs are out


@contextlib.contextmanager
def _reverted_on_error(allocation: Allocation | None) -> Iterator[None]:
    """A Service write that fails after taking cluster IPs or node ports gives them back."""
    try:
        yield
    except BaseException:
        if allocation is not None:
            allocation.revert()
        raise
