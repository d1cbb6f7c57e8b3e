"""The REST names of the simulator's kinds: group, version, plural, short names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kubelet_sim.api.model import KINDS
from kubelet_sim.api.rest_names import REST_NAMES as _NAMES

# built-in kinds kube-apiserver answers every request of with a deprecation Warning
DEPRECATED: dict[tuple[str, str], str] = {
    ("v1", "Endpoints"): "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 "
                         "EndpointSlice",
    ("v1", "ComponentStatus"): "v1 ComponentStatus is deprecated in v1.19+",
}

# the kinds with the scale subresource (autoscaling/v1 Scale; http.workload_scale)
_SCALED = frozenset({"Deployment", "ReplicaSet", "StatefulSet"})

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True)
class ApiResource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    has_status: bool
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    verbs: tuple[str, ...] = VERBS
    has_scale: bool = False  # the scale subresource (autoscaling/v1 Scale)
    stored: bool = True  # False: a create-only request kind (Binding, the reviews)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def stored_kind(self) -> str:
        """The key the API server core keeps its objects under (a custom kind's differs
        from its ``kind``)."""
        return self.kind


def _resource(kind: str) -> ApiResource:
    info = KINDS[kind]
    group, _, version = info.api_version.rpartition("/")
    plural, short, categories = _NAMES[kind]
    # a Namespace goes one by one (its contents go with it): no deletecollection
    verbs = tuple(v for v in VERBS if v != "deletecollection") if kind == "Namespace" else VERBS
    return ApiResource(kind, group, version, plural, info.namespaced, info.status_subresource,
                       short, categories, verbs, has_scale=kind in _SCALED)


# The stored core/v1 Events served again in the events.k8s.io/v1 shape (see events.py).
EVENTS_V1 = ApiResource("Event", "events.k8s.io", "v1", "events", True, False, (), ())
# Kinds that are requests, never stored: POST answers them (bindings, reviews).
BINDINGS = ApiResource("Binding", "", "v1", "bindings", True, False, (), (), CREATE_ONLY,
                       stored=False)
SELF_SUBJECT_REVIEWS = ApiResource("SelfSubjectReview", "authentication.k8s.io", "v1",
                                   "selfsubjectreviews", False, False, (), (), CREATE_ONLY,
                                   stored=False)
SELF_SUBJECT_ACCESS_REVIEWS = ApiResource(
    "SelfSubjectAccessReview", "authorization.k8s.io", "v1", "selfsubjectaccessreviews", False,
    False, (), (), CREATE_ONLY, stored=False)
SELF_SUBJECT_RULES_REVIEWS = ApiResource(
    "SelfSubjectRulesReview", "authorization.k8s.io", "v1", "selfsubjectrulesreviews", False,
    False, (), (), CREATE_ONLY, stored=False)
# another user's access, asked cluster-wide or in one namespace (the RBAC answer)
SUBJECT_ACCESS_REVIEWS = ApiResource(
    "SubjectAccessReview", "authorization.k8s.io", "v1", "subjectaccessreviews", False,
    False, (), (), CREATE_ONLY, stored=False)
LOCAL_SUBJECT_ACCESS_REVIEWS = ApiResource(
    "LocalSubjectAccessReview", "authorization.k8s.io", "v1", "localsubjectaccessreviews",
    True, False, (), (), CREATE_ONLY, stored=False)
REQUESTS = (BINDINGS, SELF_SUBJECT_REVIEWS, SELF_SUBJECT_ACCESS_REVIEWS,
            SELF_SUBJECT_RULES_REVIEWS, SUBJECT_ACCESS_REVIEWS, LOCAL_SUBJECT_ACCESS_REVIEWS)
# Computed per request, read only, never stored (http.component_statuses).
COMPONENT_STATUSES = ApiResource("ComponentStatus", "", "v1", "componentstatuses", False,
                                 False, ("cs",), (), ("get", "list"), stored=False)
RESOURCES: tuple[ApiResource, ...] = (*(_resource(kind) for kind in KINDS), EVENTS_V1,
                                      *REQUESTS, COMPONENT_STATUSES)
_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BUILT_IN_GROUPS = frozenset(r.group for r in RESOURCES)


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str  # the kind its requests take or answer with
    verbs: tuple[str, ...]
    group: str = ""  # with version: the kind's group version when not the resource's
    version: str = ""


SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")


# The Pod subresources that would reach a running container; served, always refused
# (kubelet_sim.apiserver.http.pod_connect).
POD_CONNECT = (Subresource("log", "Pod", ("get",)),
               Subresource("exec", "PodExecOptions", ("create", "get")),
               Subresource("attach", "PodAttachOptions", ("create", "get")),
               Subresource("portforward", "PodPortForwardOptions", ("create", "get")))


# The Pod subresources that are requests: POST a Binding (spec.nodeName) or an Eviction.
POD_BINDING = Subresource("binding", "Binding", CREATE_ONLY)
POD_EVICTION = Subresource("eviction", "Eviction", CREATE_ONLY, "policy", "v1")
# A ServiceAccount's token: POST a TokenRequest, answered with a signed token.
SERVICE_ACCOUNT_TOKEN = Subresource("token", "TokenRequest", CREATE_ONLY,
                                    "authentication.k8s.io", "v1")


# A Namespace's spec.finalizers: PUT the namespace (the namespace controller's last step).
NAMESPACE_FINALIZE = Subresource("finalize", "Namespace", ("update",))


def subresources(r: ApiResource) -> list[Subresource]:
    """The subresources discovery lists for ``r``."""
    out = [Subresource("status", r.kind, ("get", "patch", "update"))] if r.has_status else []
    if r.has_scale:
        out.append(SCALE)
    if r.kind == "Pod" and r.stored:
        out.extend((POD_BINDING, POD_EVICTION, *POD_CONNECT))
    if r.kind == "ServiceAccount" and r.stored:
        out.append(SERVICE_ACCOUNT_TOKEN)
    if r.kind == "Namespace":
        out.insert(0, NAMESPACE_FINALIZE)
    return sorted(out, key=lambda sub: sub.name) if _built_in(r) else out


def _built_in(r: ApiResource) -> bool:
    return r.group == "" or r.group in _BUILT_IN_GROUPS


def lookup(group: str, version: str, plural: str) -> ApiResource | None:
    return _BY_PATH.get((group, version, plural))


def group_versions(extra: Iterable[ApiResource] = ()) -> dict[str, list[ApiResource]]:
    """group/version -> its resources, core ("v1") first, then the built-in groups, then
    the groups only CustomResourceDefinitions serve (kube-apiserver ranks those below every
    built-in group, by name among themselves: the order kubectl resolves a name served in
    several groups by); ``extra`` (the resources of CustomResourceDefinitions) are added,
    replacing a built-in one of the same path."""
    by_path = {(r.group, r.version, r.plural): r for r in RESOURCES}
    by_path.update({(r.group, r.version, r.plural): r for r in extra})
    out: dict[str, list[ApiResource]] = {}
    # within a built-in group/version, by name: kube-apiserver's installer lists its paths
    # sorted (so `kubectl get all` prints daemonsets before deployments); a group only
    # definitions serve keeps their order
    for r in sorted(by_path.values(),
                    key=lambda r: (r.group != "", r.group not in _BUILT_IN_GROUPS, r.group,
                                   _version_order(r.version),
                                   r.plural if _built_in(r) else "")):
        out.setdefault(r.group_version, []).append(r)
    return out


def _version_order(version: str) -> tuple[int, int, int]:
    """Kubernetes' version priority (v2 > v1 > v1beta2 > v1beta1 > v1alpha1), smallest
    first: the first version of a group is its preferred one."""
    found = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not found:
        return (3, 0, 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[found[2]]
    return (rank, -int(found[1]), -int(found[3] or 0))
