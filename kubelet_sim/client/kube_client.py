"""The one interface the simulator's components use to reach the Kubernetes API.

:class:`KubeClient` is what a controller, a sidecar role or a kubelet needs from the API
server, as awaitable verbs. Two implementations keep it:

* :class:`~kubelet_sim.client.in_process.InProcessClient`, over the
  :class:`~kubelet_sim.apiserver.server.APIServer` object in the same process (what
  ``up`` runs today);
* :class:`~kubelet_sim.client.http.HttpKubeClient`, over HTTPS from a kubeconfig, to our
  ``kubelet-sim apiserver`` or to any kube-apiserver.

Both hand back :class:`~kubelet_sim.api.model.Resource` objects (private copies) and raise
the errors of :mod:`kubelet_sim.api.errors` (``NotFound``, ``AlreadyExists``, ``Conflict``,
``Invalid``, ``Gone``, ...), so code written against one runs over the other. A client that
cannot reach its server raises :class:`ApiUnreachable`.

A watch is an async iterator of :class:`~kubelet_sim.apiserver.watch.WatchEvent`; with
``allow_bookmarks`` the server may send ``BOOKMARK`` events, whose object carries only
``metadata.resourceVersion`` (the version the watch has reached). A resourceVersion older
than the server keeps raises :class:`~kubelet_sim.api.errors.Gone`, from :meth:`watch` or
from the iteration (over HTTP the 410 arrives as the stream's ERROR event). The iteration
simply ends when the server closes the stream; watching again from the last version seen
(or relisting after ``Gone``) is the informer's job.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kubelet_sim.api.errors import ServiceUnavailable
from kubelet_sim.api.model import JSON, ObjectMeta, Resource
from kubelet_sim.apiserver.server import ResourceList
from kubelet_sim.apiserver.watch import ADDED, DELETED, MODIFIED, WatchEvent

__all__ = [
    "ADDED",
    "APPLY_PATCH",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "INITIAL_EVENTS_END",
    "JSON_PATCH",
    "MERGE_PATCH",
    "MODIFIED",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "ApiUnreachable",
    "KubeClient",
    "KubeWatch",
    "ResourceList",
    "ServedKind",
    "WatchEvent",
    "bookmark",
]

BOOKMARK, ERROR = "BOOKMARK", "ERROR"
# the annotation of the BOOKMARK that ends a streaming list's initial events
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

# patch types, named by the content type each is sent with
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)


class ApiUnreachable(ServiceUnavailable):
    """The API server could not be reached (connection refused, reset, or closed before
    an answer). A 503 to whoever treats it as one; nothing is known about the request."""


@dataclass(frozen=True)
class ServedKind:
    """One resource discovery lists (its preferred version): ``kind`` as the object
    model keys it (``Pod``, ``Widget.example.com``), with its REST names and verbs."""

    kind: str
    group_version: str
    plural: str
    namespaced: bool
    verbs: frozenset[str]
    # every group version the kind is served in (the preferred one among them)
    versions: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.group_version.rpartition("/")[0]

    @property
    def resource(self) -> str:
        """``<plural>.<group>`` as kube-controller-manager names a resource (``pods.``,
        ``deployments.apps``, ``widgets.example.com``)."""
        return f"{self.plural}.{self.group}"

    @property
    def custom(self) -> bool:
        """Served from a CustomResourceDefinition (or a kind the model does not know)."""
        return "." in self.kind

    def served_in(self, api_version: str) -> bool:
        """Is the kind served in ``api_version`` (an ownerReference's)?"""
        return api_version == self.group_version or api_version in self.versions

    def allows(self, *verbs: str) -> bool:
        return all(v in self.verbs for v in verbs)


def bookmark(kind: str, resource_version: str,
             annotations: dict[str, str] | None = None) -> WatchEvent:
    """A BOOKMARK event of ``kind`` at ``resource_version``."""
    meta = ObjectMeta(resource_version=resource_version, annotations=dict(annotations or {}))
    return WatchEvent(BOOKMARK, Resource(kind, meta))


@runtime_checkable
class KubeWatch(Protocol):
    """A running watch: ``async for event in watch`` until the server ends it or
    :meth:`stop` is called."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def __anext__(self) -> WatchEvent: ...

    def stop(self) -> None:
        """End the watch; the iteration stops after what was already received."""
        ...


@runtime_checkable
class KubeClient(Protocol):
    """The Kubernetes API as the components use it. ``kind`` is the kind's name as the
    object model keys it (``Pod``, ``StorageClass``, ``Lease``); ``namespace`` "" is the
    default namespace for a namespaced kind (``None``/"" in :meth:`list` and
    :meth:`watch`: every namespace)."""

    async def get(self, kind: str, name: str, namespace: str = "") -> Resource:
        """The object, or NotFound."""
        ...

    async def list(self, kind: str, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   *, limit: int = 0, continue_from: str = "",
                   resource_version: str = "") -> ResourceList:
        """The objects with the list's resourceVersion (to watch from); ``limit`` pages
        (``continue_token`` of the answer goes to ``continue_from``)."""
        ...

    async def create(self, obj: Resource) -> Resource:
        """Store a new object (AlreadyExists, Invalid, ...); the stored object."""
        ...

    async def update(self, obj: Resource) -> Resource:
        """Replace the object (Conflict on a stale ``metadata.resourceVersion``)."""
        ...

    async def update_status(self, obj: Resource) -> Resource:
        """Replace the object's status through the status subresource."""
        ...

    async def patch(self, kind: str, name: str, patch: Any, namespace: str = "",
                    subresource: str = "", *, patch_type: str = MERGE_PATCH,
                    field_manager: str = "", force: bool = False) -> Resource:
        """Patch the object (or its ``status`` subresource); ``patch_type`` is one of
        :data:`PATCH_TYPES` (apply takes the object as a dict, and ``field_manager``)."""
        ...

    async def delete(self, kind: str, name: str, namespace: str = "", *,
                     grace_period_seconds: int | None = None, uid: str | None = None,
                     resource_version: str | None = None,
                     propagation_policy: str | None = None) -> Resource | None:
        """Delete (gracefully): the object as the delete left it (None when the server
        answers with a success Status instead, as kube-apiserver may). ``uid`` and
        ``resource_version`` are preconditions (Conflict)."""
        ...

    async def bind(self, name: str, namespace: str, node_name: str,
                   annotations: dict[str, str] | None = None, uid: str | None = None) -> None:
        """``pods/binding``: assign the pod to ``node_name``."""
        ...

    async def evict(self, name: str, namespace: str, *, dry_run: bool = False,
                    grace_period_seconds: int | None = None, uid: str | None = None,
                    resource_version: str | None = None,
                    propagation_policy: str | None = None) -> None:
        """``pods/eviction``: TooManyRequests when a disruption budget forbids it."""
        ...

    async def request_token(self, namespace: str, name: str, request: JSON) -> JSON:
        """``serviceaccounts/<name>/token``: the answered TokenRequest."""
        ...

    async def watch(self, kind: str, namespace: str | None = None,
                    label_selector: str | None = None, field_selector: str | None = None,
                    resource_version: str | None = None, *, allow_bookmarks: bool = False,
                    timeout_seconds: int | None = None,
                    send_initial_events: bool = False) -> KubeWatch:
        """Changes of ``kind`` after ``resource_version`` (without one: an ADDED for each
        current object first); Gone when that version is too old. With
        ``send_initial_events`` (a streaming list; bookmarks allowed) the current
        objects come first as ADDEDs, then a BOOKMARK annotated
        :data:`INITIAL_EVENTS_END` at the version they were listed at."""
        ...

    async def finalize(self, namespace: Resource) -> Resource:
        """``PUT namespaces/<name>/finalize``: store the sent ``spec.finalizers`` (its
        ``metadata.resourceVersion``, when set, a precondition); a terminating namespace
        left with none goes (NotFound after that)."""
        ...

    async def served_kinds(self) -> builtins.list[ServedKind]:
        """Discovery: every stored kind the server serves now (built-in and custom), in
        its group's preferred version; the request-only ones (bindings, reviews) and the
        same objects served again in another group (``events.k8s.io`` Events) left out."""
        ...

    async def close(self) -> None:
        """Release what the client holds (connections)."""
        ...
