"""Kubernetes objects as the simulator stores them.

A :class:`Resource` is a thin typed wrapper around the Kubernetes wire shape: typed
``metadata`` (:class:`ObjectMeta`), and ``spec``/``status`` kept as plain dicts with the real
field names (``podCIDR``, ``volumeHandle``, ...), so any manifest or JSON from a real
cluster round-trips through :meth:`Resource.from_dict` / :meth:`Resource.to_dict`.
Kinds whose fields sit at the top level rather than under ``spec`` (StorageClass,
VolumeAttributesClass, CSIStorageCapacity, VolumeSnapshotClass) keep them in :attr:`Resource.body`.

:data:`KINDS` describes every supported kind (apiVersion, scope, status subresource).
Small typed accessors for fields the simulator reads often live at the bottom.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kubelet_sim.api.errors import Invalid

JSON = dict[str, Any]


@dataclass(frozen=True)
class KindInfo:
    """Static facts about one kind."""

    kind: str
    api_version: str
    namespaced: bool
    status_subresource: bool
    # Status the API server stores on create (Kubernetes' PrepareForCreate); None keeps
    # whatever the client sent (Node: the kubelet registers with a status).
    create_status: JSON | None = None
    has_spec: bool = True
    # For kinds without spec: the top-level fields the kind defines (others are unknown).
    top_level: frozenset[str] = frozenset()
    # A custom resource (served from a CustomResourceDefinition): any top-level field, its
    # schema (kubelet_sim.apiserver.crd) decides which are kept.
    custom: bool = False


KINDS: dict[str, KindInfo] = {
    k.kind: k
    for k in (
        KindInfo("Namespace", "v1", False, True, {"phase": "Active"}),
        KindInfo("Node", "v1", False, True, None),
        KindInfo("Pod", "v1", True, True, {"phase": "Pending"}),
        KindInfo("PersistentVolumeClaim", "v1", True, True, {}),
        KindInfo("PersistentVolume", "v1", False, True, {"phase": "Pending"}),
        KindInfo(
            "StorageClass", "storage.k8s.io/v1", False, False, has_spec=False,
            top_level=frozenset({"provisioner", "parameters", "reclaimPolicy", "mountOptions",
                                 "allowVolumeExpansion", "volumeBindingMode",
                                 "allowedTopologies"}),
        ),
        KindInfo(
            "VolumeAttributesClass", "storage.k8s.io/v1", False, False, has_spec=False,
            top_level=frozenset({"driverName", "parameters"}),
        ),
        KindInfo("CSIDriver", "storage.k8s.io/v1", False, False),
        KindInfo("CSINode", "storage.k8s.io/v1", False, False),
        KindInfo(
            "CSIStorageCapacity", "storage.k8s.io/v1", True, False, has_spec=False,
            top_level=frozenset({"nodeTopology", "storageClassName", "capacity",
                                 "maximumVolumeSize"}),
        ),
        KindInfo("VolumeAttachment", "storage.k8s.io/v1", False, True, {}),
        KindInfo("VolumeSnapshot", "snapshot.storage.k8s.io/v1", True, True, {}),
        KindInfo("VolumeSnapshotContent", "snapshot.storage.k8s.io/v1", False, True, {}),
        KindInfo(
            "VolumeSnapshotClass", "snapshot.storage.k8s.io/v1", False, False, has_spec=False,
            top_level=frozenset({"driver", "parameters", "deletionPolicy"}),
        ),
        KindInfo("NetworkPolicy", "networking.k8s.io/v1", True, False),
        KindInfo("CustomResourceDefinition", "apiextensions.k8s.io/v1", False, True, {}),
        KindInfo("Lease", "coordination.k8s.io/v1", True, False),
        KindInfo("PodDisruptionBudget", "policy/v1", True, True, {
            "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
            "expectedPods": 0}),
        KindInfo("Secret", "v1", True, False, has_spec=False,
                 top_level=frozenset({"data", "stringData", "type", "immutable"})),
        KindInfo("ServiceAccount", "v1", True, False, has_spec=False,
                 top_level=frozenset({"secrets", "imagePullSecrets",
                                      "automountServiceAccountToken"})),
        # apps/v1 and batch/v1 workloads (kubelet_sim.apiserver.workloads); a
        # ControllerRevision has no spec: its data and revision sit at the top level
        KindInfo("Deployment", "apps/v1", True, True, {}),
        KindInfo("ReplicaSet", "apps/v1", True, True, {"replicas": 0}),
        KindInfo("StatefulSet", "apps/v1", True, True, {}),
        KindInfo("DaemonSet", "apps/v1", True, True, {}),
        KindInfo("ControllerRevision", "apps/v1", True, False, has_spec=False,
                 top_level=frozenset({"data", "revision"})),
        KindInfo("Job", "batch/v1", True, True, {}),
        KindInfo(
            "Event", "v1", True, False, has_spec=False,
            top_level=frozenset({"involvedObject", "reason", "message", "source",
                                 "firstTimestamp", "lastTimestamp", "count", "type",
                                 "eventTime", "series", "action", "related",
                                 "reportingComponent", "reportingInstance"}),
        ),
        # configuration, services and RBAC (issue 24)
        KindInfo("ConfigMap", "v1", True, False, has_spec=False,
                 top_level=frozenset({"data", "binaryData", "immutable"})),
        KindInfo("Service", "v1", True, True, {"loadBalancer": {}}),
        KindInfo("Endpoints", "v1", True, False, has_spec=False,
                 top_level=frozenset({"subsets"})),
        KindInfo("EndpointSlice", "discovery.k8s.io/v1", True, False, has_spec=False,
                 top_level=frozenset({"addressType", "endpoints", "ports"})),
        KindInfo("Role", "rbac.authorization.k8s.io/v1", True, False, has_spec=False,
                 top_level=frozenset({"rules"})),
        KindInfo("ClusterRole", "rbac.authorization.k8s.io/v1", False, False, has_spec=False,
                 top_level=frozenset({"rules", "aggregationRule"})),
        KindInfo("RoleBinding", "rbac.authorization.k8s.io/v1", True, False, has_spec=False,
                 top_level=frozenset({"subjects", "roleRef"})),
        KindInfo("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", False, False,
                 has_spec=False, top_level=frozenset({"subjects", "roleRef"})),
        # quota and limits (kubelet_sim.apiserver.quota); a new quota's status starts empty
        KindInfo("ResourceQuota", "v1", True, True, {}),
        KindInfo("LimitRange", "v1", True, False),
        KindInfo("PriorityClass", "scheduling.k8s.io/v1", False, False, has_spec=False,
                 top_level=frozenset({"value", "globalDefault", "description",
                                      "preemptionPolicy"})),
    )
}

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_META_FIELDS = {
    "name": "name",
    "generateName": "generate_name",
    "namespace": "namespace",
    "uid": "uid",
    "resourceVersion": "resource_version",
    "generation": "generation",
    "labels": "labels",
    "annotations": "annotations",
    "creationTimestamp": "creation_timestamp",
    "deletionTimestamp": "deletion_timestamp",
    "deletionGracePeriodSeconds": "deletion_grace_period_seconds",
    "finalizers": "finalizers",
    "ownerReferences": "owner_references",
    "managedFields": "managed_fields",
}


# The kinds CustomResourceDefinitions add while a cluster runs (store key -> its facts); kept
# by kubelet_sim.apiserver.crd.registry through register_custom_kind / forget_custom_kind.
# A custom kind is stored as ``<Kind>.<group>`` (see custom_store_kind): two definitions may
# name the same kind in different groups, as kube-apiserver allows. One process serving two
# clusters shares it.
_CUSTOM_KINDS: dict[str, KindInfo] = {}


def custom_store_kind(kind: str, group: str) -> str:
    """The key the store keeps a custom kind's objects under (``Widget.example.com``); a
    kind name never holds a dot, so the key never meets a built-in kind's."""
    return f"{kind}.{group}"


def wire_kind(kind: str) -> str:
    """The ``kind`` an object of a store key is shown with (``Widget``)."""
    return kind.partition(".")[0]


def stored_kind(kind: str, api_version: str) -> str:
    """The store key of objects sent as ``kind`` in ``api_version``: the built-in kind of
    that group, else a custom kind of that group, else ``kind`` as it is."""
    if "." in kind:
        return kind
    group = api_version.rpartition("/")[0]
    builtin = KINDS.get(kind)
    if builtin is not None and builtin.api_version.rpartition("/")[0] == group:
        return kind
    key = custom_store_kind(kind, group)
    return key if key in _CUSTOM_KINDS else kind


_GONE = KindInfo("", "", False, False, has_spec=False, custom=True)


def register_custom_kind(info: KindInfo) -> None:
    """Make a CustomResourceDefinition's kind known to the object model."""
    _CUSTOM_KINDS[info.kind] = info


def forget_custom_kind(kind: str) -> None:
    _CUSTOM_KINDS.pop(kind, None)


def served_kinds() -> dict[str, KindInfo]:
    """Every kind known now: the built-in ones and those definitions added."""
    return {**KINDS, **_CUSTOM_KINDS}


def kind_info(kind: str) -> KindInfo:
    """The :class:`KindInfo` for ``kind``; unknown kinds are :class:`Invalid`."""
    found = KINDS.get(kind) or _CUSTOM_KINDS.get(kind)
    if found is None:
        raise Invalid("kind", f"unsupported kind {kind!r}; known: {sorted(KINDS)}")
    return found


_IMMUTABLE = (str, int, float, bool, type(None))


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data: what ``copy.deepcopy`` gives for it, several times
    faster (it runs for every object every read of the API server returns)."""
    kind = type(value)
    if kind is dict:
        return {key: clone(item) for key, item in value.items()}
    if kind is list:
        return [clone(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    if isinstance(value, dict):  # a decoder's dict subclass: copied as a plain dict
        return {key: clone(item) for key, item in value.items()}
    return copy.deepcopy(value)


def _shared(value: Any) -> Any:
    return value


@dataclass
class ObjectMeta:
    """``metadata`` with the fields the simulator maintains. Timestamps are RFC 3339 strings
    (second precision, ``Z``), exactly as they appear on the wire."""

    name: str = ""
    namespace: str = ""
    generate_name: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    finalizers: list[str] = field(default_factory=list)
    owner_references: list[JSON] = field(default_factory=list)
    managed_fields: list[JSON] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: Any, path: str = "metadata") -> ObjectMeta:
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise Invalid(path, "must be an object")
        unknown = set(raw) - set(_META_FIELDS) - {"selfLink"}
        if unknown:
            raise Invalid(f"{path}.{sorted(unknown)[0]}", "unknown field")
        kwargs: dict[str, Any] = {}
        for wire, attr in _META_FIELDS.items():
            value = raw.get(wire)
            if value is None:
                continue
            if attr in ("labels", "annotations"):
                if not isinstance(value, dict):
                    raise Invalid(f"{path}.{wire}", "must be a map of strings")
                for k, v in value.items():
                    if not isinstance(v, str):
                        raise Invalid(f"{path}.{wire}.{k}", "must be a string")
                value = dict(value)
            elif attr == "finalizers":
                if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                    raise Invalid(f"{path}.finalizers", "must be a list of strings")
                value = list(value)
            elif attr in ("generation", "deletion_grace_period_seconds"):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise Invalid(f"{path}.{wire}", "must be an integer")
            elif attr in ("owner_references", "managed_fields"):
                if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
                    raise Invalid(f"{path}.{wire}", "must be a list of objects")
                value = copy.deepcopy(value)
            elif attr.endswith("_timestamp") and isinstance(value, datetime):
                # YAML turns an unquoted timestamp into a datetime
                value = format_time(value if value.tzinfo else value.replace(tzinfo=UTC))
            elif not isinstance(value, str):
                raise Invalid(f"{path}.{wire}", "must be a string")
            kwargs[attr] = value
        return cls(**kwargs)

    def to_dict(self, copier: Callable[[Any], Any] = clone) -> JSON:
        """Wire form; empty/zero fields are omitted, as Kubernetes serialises them.
        ``copier`` copies each value (``_shared``: none, to encode and never modify)."""
        out: JSON = {}
        for wire, attr in _META_FIELDS.items():
            value = getattr(self, attr)
            if value in (None, "", 0, {}, []):
                continue
            out[wire] = copier(value)
        return out


@dataclass
class Resource:
    """One API object. ``spec``/``status``/``body`` hold wire-format dicts."""

    kind: str
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: JSON = field(default_factory=dict)
    status: JSON = field(default_factory=dict)
    body: JSON = field(default_factory=dict)
    api_version: str = ""
    # the JSON of a stored object, made the first time a LIST writes it out (a stored
    # object never changes: a write stores a new one); copies start without it
    encoded: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.api_version:
            self.api_version = kind_info(self.kind).api_version

    # -- identity ------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> tuple[str, str, str]:
        """(kind, namespace, name): unique within a cluster."""
        return (self.kind, self.metadata.namespace, self.metadata.name)

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    @property
    def is_terminating(self) -> bool:
        """True once a delete was accepted but finalizers (or a grace period) keep it."""
        return self.metadata.deletion_timestamp is not None

    def copy(self) -> Resource:
        """A deep copy (the API server hands out one per object it returns)."""
        meta = self.metadata
        return Resource(self.kind, replace(
            meta, labels=dict(meta.labels), annotations=dict(meta.annotations),
            finalizers=list(meta.finalizers), owner_references=clone(meta.owner_references),
            managed_fields=clone(meta.managed_fields)),
            clone(self.spec), clone(self.status), clone(self.body), self.api_version)

    # -- wire form -----------------------------------------------------------------------
    def to_dict(self) -> JSON:
        return self._wire(clone)

    def shared_dict(self) -> JSON:
        """:meth:`to_dict` sharing the object's own values instead of copies: to encode
        (several times cheaper), never to modify or keep."""
        return self._wire(_shared)

    def _wire(self, copier: Callable[[Any], Any]) -> JSON:
        # an object of a custom kind whose definition just went (a watch still delivering
        # its DELETED events) keeps the custom shape: every field but status in body
        has_spec = (KINDS.get(self.kind) or _CUSTOM_KINDS.get(self.kind) or _GONE).has_spec
        out: JSON = {"apiVersion": self.api_version, "kind": wire_kind(self.kind)}
        out["metadata"] = self.metadata.to_dict(copier)
        out.update(copier(self.body))
        if has_spec:
            out["spec"] = copier(self.spec)
        if self.status:
            out["status"] = copier(self.status)
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> Resource:
        """Build from a Kubernetes-style dict; raises :class:`Invalid` naming the field."""
        if not isinstance(raw, dict):
            raise Invalid("<root>", "must be an object")
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise Invalid("kind", "Required value")
        kind = stored_kind(kind, str(raw.get("apiVersion") or ""))
        info = kind_info(kind)
        api_version = raw.get("apiVersion") or info.api_version
        if api_version != info.api_version:
            raise Invalid(
                "apiVersion", f"{kind} is served as {info.api_version!r}, not {api_version!r}"
            )
        metadata = ObjectMeta.from_dict(raw.get("metadata"))
        body = {
            k: copy.deepcopy(v)
            for k, v in raw.items()
            if k not in ("apiVersion", "kind", "metadata", "spec", "status")
        }
        if info.custom:
            unknown = []
        elif info.has_spec:
            unknown = sorted(body)
        else:
            unknown = sorted(set(body) - info.top_level)
        if unknown:
            raise Invalid(unknown[0], "unknown field")
        spec, status = raw.get("spec") or {}, raw.get("status") or {}
        if not isinstance(status, dict):
            raise Invalid("status", "must be an object")
        if info.custom:  # a custom resource keeps every top-level field as sent
            body = {k: copy.deepcopy(v) for k, v in raw.items()
                    if k not in ("apiVersion", "kind", "metadata", "status")}
            return cls(kind, metadata, {}, copy.deepcopy(status), body, api_version)
        if not isinstance(spec, dict):
            raise Invalid("spec", "must be an object")
        if not info.has_spec and "spec" in raw:
            raise Invalid("spec", f"unknown field: {kind} has no spec")
        return cls(kind, metadata, copy.deepcopy(spec), copy.deepcopy(status), body, api_version)


def new(
    kind: str,
    name: str,
    namespace: str = "",
    *,
    spec: JSON | None = None,
    status: JSON | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    **body: Any,
) -> Resource:
    """Convenience constructor: ``new("Pod", "web", "default", spec={...}, labels={...})``.
    Keyword arguments beyond these become top-level fields (``provisioner=...`` for a
    StorageClass)."""
    meta = ObjectMeta(
        name=name,
        namespace=namespace,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        finalizers=list(finalizers or []),
    )
    return Resource(kind, meta, copy.deepcopy(spec or {}), copy.deepcopy(status or {}), body)


def format_time(moment: datetime) -> str:
    """RFC 3339 at second precision in UTC, as ``metav1.Time`` serialises."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """``metav1.Time`` (seconds) or ``metav1.MicroTime`` (a Lease's renewTime, an Event's
    eventTime)."""
    layout = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.strptime(text, layout).replace(tzinfo=UTC)


# ------------------------------------------------------------------------ typed accessors


def pod_ips(pod: Resource) -> list[str]:
    """The pod's IPs: ``status.podIPs[*].ip``, falling back to ``status.podIP``."""
    ips = [str(p["ip"]) for p in pod.status.get("podIPs") or [] if p.get("ip")]
    if not ips and pod.status.get("podIP"):
        ips = [str(pod.status["podIP"])]
    return ips


def pod_node_name(pod: Resource) -> str:
    return str(pod.spec.get("nodeName") or "")


def pod_container_ports(pod: Resource) -> list[JSON]:
    """Every ``containers[*].ports[*]`` entry (init containers excluded, as for Services)."""
    return [
        port for c in pod.spec.get("containers") or [] for port in c.get("ports") or []
    ]


def resolve_named_port(pod: Resource, name: str, protocol: str) -> int | None:
    """The containerPort named ``name`` with ``protocol`` on ``pod``, or None."""
    for port in pod_container_ports(pod):
        if port.get("name") == name and port.get("protocol", "TCP") == protocol:
            return int(port["containerPort"])
    return None


def node_internal_ip(node: Resource) -> str | None:
    """The node's first ``InternalIP`` address."""
    for addr in node.status.get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return str(addr["address"])
    return None


def node_addresses(node: Resource) -> list[str]:
    return [str(a["address"]) for a in node.status.get("addresses") or [] if a.get("address")]


def node_pod_cidrs(node: Resource) -> list[str]:
    """``spec.podCIDRs``, falling back to ``spec.podCIDR``."""
    cidrs = [str(c) for c in node.spec.get("podCIDRs") or []]
    if not cidrs and node.spec.get("podCIDR"):
        cidrs = [str(node.spec["podCIDR"])]
    return cidrs


def condition(obj: Resource, cond_type: str) -> JSON | None:
    """``status.conditions[type == cond_type]`` or None."""
    for cond in obj.status.get("conditions") or []:
        if cond.get("type") == cond_type:
            return dict(cond)
    return None


def set_condition(obj: Resource, cond: JSON, now: datetime) -> None:
    """Insert or replace a condition by type; ``lastTransitionTime`` moves only when the
    status value changes, as Kubernetes components do."""
    conds: list[JSON] = obj.status.setdefault("conditions", [])
    stamped = {**cond}
    for i, old in enumerate(conds):
        if old.get("type") == cond.get("type"):
            same = old.get("status") == cond.get("status")
            kept = old.get("lastTransitionTime") if same else None
            stamped.setdefault("lastTransitionTime", kept or format_time(now))
            conds[i] = stamped
            return
    stamped.setdefault("lastTransitionTime", format_time(now))
    conds.append(stamped)
