"""The ClusterRoles and ClusterRoleBindings a fresh kube-apiserver makes (its
``rbac/bootstrap-roles`` post-start hook), those a plain client meets: ``cluster-admin``
bound to ``system:masters``; ``system:discovery``, ``system:basic-user`` (the
self-subject reviews) and ``system:public-info-viewer`` (health and version) for every
authenticated user, the last also for unauthenticated ones;
``system:service-account-issuer-discovery`` (the OIDC issuer documents) for every
ServiceAccount; and the user-facing ``view``,
``edit`` and ``admin``, aggregated from ``system:aggregate-to-*`` as upstream.

They are created when absent at every start and never overwritten (kube-apiserver
reconciles them back to its own rules; a changed one stays changed here).
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from kubelet_sim.api.errors import AlreadyExists
from kubelet_sim.apiserver.rbac import GROUP

if TYPE_CHECKING:
    from kubelet_sim.apiserver.server import APIServer

API_VERSION = f"{GROUP}/v1"
LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
              "watch")
HEALTH = ("/healthz", "/livez", "/readyz", "/version", "/version/")


def _rule(verbs: tuple[str, ...], groups: tuple[str, ...], *resources: str) -> dict[str, Any]:
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


def _urls(*urls: str) -> dict[str, Any]:
    return {"nonResourceURLs": list(urls), "verbs": ["get"]}


AGGREGATE_TO_VIEW = [
    _rule(READ, ("",), "configmaps", "endpoints", "persistentvolumeclaims",
          "persistentvolumeclaims/status", "pods", "replicationcontrollers",
          "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
    _rule(READ, ("",), "bindings", "events", "limitranges", "namespaces/status", "pods/log",
          "pods/status", "replicationcontrollers/status", "resourcequotas",
          "resourcequotas/status"),
    _rule(READ, ("",), "namespaces"),
    _rule(READ, ("discovery.k8s.io",), "endpointslices"),
    _rule(READ, ("apps",), "controllerrevisions", "daemonsets", "daemonsets/status",
          "deployments", "deployments/scale", "deployments/status", "replicasets",
          "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale",
          "statefulsets/status"),
    _rule(READ, ("autoscaling",), "horizontalpodautoscalers",
          "horizontalpodautoscalers/status"),
    _rule(READ, ("batch",), "cronjobs", "cronjobs/status", "jobs", "jobs/status"),
    _rule(READ, ("extensions",), "daemonsets", "daemonsets/status", "deployments",
          "deployments/scale", "deployments/status", "ingresses", "ingresses/status",
          "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
          "replicationcontrollers/scale"),
    _rule(READ, ("policy",), "poddisruptionbudgets", "poddisruptionbudgets/status"),
    _rule(READ, ("networking.k8s.io",), "ingresses", "ingresses/status", "networkpolicies"),
]

AGGREGATE_TO_EDIT = [
    _rule(READ, ("",), "pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
          "secrets", "services/proxy"),
    _rule(("impersonate",), ("",), "serviceaccounts"),
    _rule(WRITE, ("",), "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
    _rule(("create",), ("",), "pods/eviction"),
    _rule(WRITE, ("",), "configmaps", "events", "persistentvolumeclaims",
          "replicationcontrollers", "replicationcontrollers/scale", "secrets",
          "serviceaccounts", "services", "services/proxy"),
    _rule(("create",), ("",), "serviceaccounts/token"),
    _rule(WRITE, ("apps",), "daemonsets", "deployments", "deployments/rollback",
          "deployments/scale", "replicasets", "replicasets/scale", "statefulsets",
          "statefulsets/scale"),
    _rule(WRITE, ("autoscaling",), "horizontalpodautoscalers"),
    _rule(WRITE, ("batch",), "cronjobs", "jobs"),
    _rule(WRITE, ("extensions",), "daemonsets", "deployments", "deployments/rollback",
          "deployments/scale", "ingresses", "networkpolicies", "replicasets",
          "replicasets/scale", "replicationcontrollers/scale"),
    _rule(WRITE, ("policy",), "poddisruptionbudgets"),
    _rule(WRITE, ("networking.k8s.io",), "ingresses", "networkpolicies"),
    _rule(READ_WRITE, ("coordination.k8s.io",), "leases"),
]

AGGREGATE_TO_ADMIN = [
    _rule(("create",), ("authorization.k8s.io",), "localsubjectaccessreviews"),
    _rule(READ_WRITE, (GROUP,), "rolebindings", "roles"),
]


def _role(name: str, rules: list[dict[str, Any]] | None, labels: dict[str, str] | None = None,
          aggregate_from: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {**LABELS, **(labels or {})},
                     "annotations": dict(ANNOTATIONS)}}
    if aggregate_from:
        body["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"{AGGREGATE_TO}{aggregate_from}": "true"}}]}
    else:
        body["rules"] = rules
    return body


def _binding(name: str, *groups: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(LABELS),
                         "annotations": dict(ANNOTATIONS)},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups]}


def _to(role: str) -> dict[str, str]:
    return {f"{AGGREGATE_TO}{role}": "true"}


CLUSTER_ROLES = (
    _role("cluster-admin", [_rule(("*",), ("*",), "*"),
                            {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
    _role("system:discovery", [_urls("/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                     "/livez", "/openapi", "/openapi/*", "/readyz",
                                     "/version", "/version/")]),
    _role("system:basic-user", [
        _rule(("create",), ("authorization.k8s.io",), "selfsubjectaccessreviews",
              "selfsubjectrulesreviews"),
        _rule(("create",), ("authentication.k8s.io",), "selfsubjectreviews")]),
    _role("system:public-info-viewer", [_urls(*HEALTH)]),
    _role("system:service-account-issuer-discovery",
          [_urls("/.well-known/openid-configuration", "/openid/v1/jwks")]),
    _role("admin", None, aggregate_from="admin"),
    _role("edit", None, _to("admin"), aggregate_from="edit"),
    _role("view", None, _to("edit"), aggregate_from="view"),
    _role("system:aggregate-to-admin", AGGREGATE_TO_ADMIN, _to("admin")),
    _role("system:aggregate-to-edit", AGGREGATE_TO_EDIT, _to("edit")),
    _role("system:aggregate-to-view", AGGREGATE_TO_VIEW, _to("view")),
)

CLUSTER_ROLE_BINDINGS = (
    _binding("cluster-admin", "system:masters"),
    _binding("system:discovery", "system:authenticated"),
    _binding("system:basic-user", "system:authenticated"),
    _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
    _binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
)


def ensure_bootstrap_policy(api: APIServer) -> None:
    """Create each bootstrap ClusterRole and ClusterRoleBinding that is absent."""
    for body in (*CLUSTER_ROLES, *CLUSTER_ROLE_BINDINGS):
        name = body["metadata"]["name"]
        if api.read_list(body["kind"], field_selector=f"metadata.name={name}").items:
            continue
        with contextlib.suppress(AlreadyExists):  # made meanwhile
            api.create(copy.deepcopy(body))
