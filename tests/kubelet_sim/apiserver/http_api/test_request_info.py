"""The request attributes read from a request's method, path and query, as
kube-apiserver's RequestInfoFactory reads them (what RBAC is asked about)."""

from __future__ import annotations

import pytest

from kubelet_sim.apiserver.http.request_info import request_attributes
from kubelet_sim.apiserver.rbac_authorizer import UserInfo

USER = UserInfo("someone", ("system:authenticated",))


def _asked(method: str, path: str, **query: str) -> tuple[str, str, str, str, str, str]:
    a = request_attributes(USER, method, path, query)
    assert a.resource_request
    return a.verb, a.api_group, a.namespace, a.resource, a.subresource, a.name


@pytest.mark.parametrize(("method", "path", "query", "asked"), [
    ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "ns", "pods", "", "")),
    ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", "", "", "pods", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods", {"watch": "1", "fieldSelector": "metadata.name=web"},
     ("watch", "", "ns", "pods", "", "web")),
    ("GET", "/api/v1/watch/namespaces/ns/pods/web", {}, ("watch", "", "ns", "pods", "", "web")),
    ("GET", "/api/v1/namespaces/ns/pods/web", {}, ("get", "", "ns", "pods", "", "web")),
    ("HEAD", "/api/v1/namespaces/ns/pods/web", {}, ("get", "", "ns", "pods", "", "web")),
    ("PUT", "/api/v1/namespaces/ns/pods/web/status", {},
     ("update", "", "ns", "pods", "status", "web")),
    ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", {},
     ("patch", "apps", "ns", "deployments", "scale", "d")),
    ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", {},
     ("create", "", "ns", "serviceaccounts", "token", "sa")),
    ("DELETE", "/api/v1/namespaces/ns/secrets", {}, ("deletecollection", "", "ns", "secrets",
                                                    "", "")),
    ("DELETE", "/api/v1/nodes/n1", {}, ("delete", "", "", "nodes", "", "n1")),
    # a namespace is its own namespace; status and finalize are its subresources
    ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "ns", "namespaces", "", "ns")),
    ("PUT", "/api/v1/namespaces/ns/finalize", {},
     ("update", "", "ns", "namespaces", "finalize", "ns")),
    ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", {},
     ("get", "coordination.k8s.io", "kube-node-lease", "leases", "", "n1")),
])
def test_a_resource_requests_attributes_come_from_its_path(
        method: str, path: str, query: dict[str, str],
        asked: tuple[str, str, str, str, str, str]) -> None:
    assert _asked(method, path, **query) == asked


@pytest.mark.parametrize("path", ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/healthz",
                                  "/openapi/v3/apis/apps/v1", "/version"])
def test_discovery_and_other_paths_are_non_resource_requests_with_the_method_as_verb(
        path: str) -> None:
    a = request_attributes(USER, "GET", path, {})
    assert (a.resource_request, a.verb, a.path) == (False, "get", path)


def test_a_field_selector_name_that_is_no_path_segment_names_nothing() -> None:
    assert _asked("GET", "/api/v1/pods", fieldSelector="metadata.name=a/b")[-1] == ""
    assert _asked("GET", "/api/v1/pods", fieldSelector="metadata.name!=a")[-1] == ""
