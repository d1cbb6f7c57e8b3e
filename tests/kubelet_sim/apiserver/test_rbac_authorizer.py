"""kube-apiserver's RBAC authorizer over the stored roles and bindings: which rule allows
which request, which binding applies to whom, and the reasons it gives."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.apiserver.bootstrap_policy import ensure_bootstrap_policy
from kubelet_sim.apiserver.rbac_authorizer import (
    Attributes,
    Decision,
    RbacAuthorizer,
    UserInfo,
    forbidden_message,
    rule_allows,
    service_account_user,
)
from kubelet_sim.apiserver.server import APIServer

RBAC = "rbac.authorization.k8s.io/v1"
SA = service_account_user("team", "bot")


def _res(verb: str, resource: str, namespace: str = "", name: str = "", sub: str = "",
         group: str = "", user: UserInfo = SA) -> Attributes:
    return Attributes(user, verb, True, api_group=group, namespace=namespace,
                      resource=resource, subresource=sub, name=name)


def _url(verb: str, path: str, user: UserInfo = SA) -> Attributes:
    return Attributes(user, verb, False, path=path)


@pytest.fixture
def api() -> APIServer:
    server = APIServer(history_limit=50, bootstrap_namespaces=("default", "team"))
    ensure_bootstrap_policy(server)
    return server


def _role(api: APIServer, kind: str, name: str, rules: list[dict[str, Any]],
          namespace: str = "", labels: dict[str, str] | None = None) -> None:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    api.create({"apiVersion": RBAC, "kind": kind, "metadata": meta, "rules": rules})


def _bind(api: APIServer, kind: str, name: str, role_kind: str, role: str,
          subjects: list[dict[str, Any]], namespace: str = "") -> None:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    api.create({"apiVersion": RBAC, "kind": kind, "metadata": meta, "subjects": subjects,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                            "name": role}})


@pytest.mark.parametrize(("rule", "asked", "allowed"), [
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, _res("get", "pods"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, _res("list", "pods"), False),
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
     _res("delete", "deployments", group="apps"), True),
    ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, _res("get", "pods"),
     False),
    # a subresource is named with its resource; "*/status" is every resource's status
    ({"verbs": ["update"], "apiGroups": [""], "resources": ["pods"]},
     _res("update", "pods", sub="status"), False),
    ({"verbs": ["update"], "apiGroups": [""], "resources": ["pods/status"]},
     _res("update", "pods", sub="status"), True),
    ({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]},
     _res("update", "nodes", sub="status"), True),
    ({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]},
     _res("update", "nodes"), False),
    # resourceNames: only those names (a list names none)
    ({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["secrets"],
      "resourceNames": ["a"]}, _res("get", "secrets", name="a"), True),
    ({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["secrets"],
      "resourceNames": ["a"]}, _res("list", "secrets"), False),
    # non-resource URLs: exact, or a prefix before a trailing "*"
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, _url("get", "/healthz"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, _url("get", "/healthz/etcd"), False),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, _url("get", "/apis/apps/v1"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, _url("post", "/apis/apps"), False),
    ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}, _url("get", "/metrics"),
     False),
])
def test_a_rule_allows_what_its_verbs_groups_resources_and_names_say(
        rule: dict[str, Any], asked: Attributes, allowed: bool) -> None:
    assert rule_allows(asked, rule) is allowed


def authorize(api: APIServer, attrs: Attributes) -> Decision:
    return RbacAuthorizer(api).authorize(attrs)


def rules_for(api: APIServer, user: UserInfo, namespace: str) -> Any:
    return RbacAuthorizer(api).rules_for(user, namespace)


def test_a_role_binding_grants_its_role_in_its_namespace_only(api: APIServer) -> None:
    _role(api, "Role", "reader", [{"verbs": ["get"], "apiGroups": [""],
                                   "resources": ["pods"]}], "team")
    assert not authorize(api, _res("get", "pods", "team", "p")).allowed
    # a ServiceAccount subject without a namespace is the binding's namespace's
    _bind(api, "RoleBinding", "bot", "Role", "reader",
          [{"kind": "ServiceAccount", "name": "bot"}], "team")
    decision = authorize(api, _res("get", "pods", "team", "p"))
    assert decision.allowed and decision.reason == (
        'RBAC: allowed by RoleBinding "bot/team" of Role "reader" to ServiceAccount '
        '"bot/team"')
    assert not authorize(api, _res("get", "pods", "other", "p")).allowed
    assert not authorize(api, _res("get", "pods", "", "p")).allowed


def test_a_role_binding_to_a_cluster_role_grants_it_in_the_namespace(api: APIServer) -> None:
    _role(api, "ClusterRole", "lister", [{"verbs": ["list"], "apiGroups": [""],
                                          "resources": ["configmaps"]}])
    _bind(api, "RoleBinding", "bot", "ClusterRole", "lister",
          [{"kind": "Group", "name": "system:serviceaccounts:team"}], "team")
    assert authorize(api, _res("list", "configmaps", "team")).allowed
    assert not authorize(api, _res("list", "configmaps")).allowed
    _bind(api, "ClusterRoleBinding", "bot", "ClusterRole", "lister",
          [{"kind": "User", "name": SA.name}])
    assert authorize(api, _res("list", "configmaps")).allowed
    assert authorize(api, _res("list", "configmaps", "elsewhere")).allowed


def test_a_binding_to_a_missing_role_is_the_reason_of_the_denial(api: APIServer) -> None:
    _bind(api, "RoleBinding", "a", "Role", "gone", [{"kind": "User", "name": SA.name}],
          "team")
    _bind(api, "ClusterRoleBinding", "b", "ClusterRole", "gone-too",
          [{"kind": "User", "name": SA.name}])
    decision = authorize(api, _res("get", "pods", "team"))
    assert decision == Decision(False, (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone-too" not found, '
        'role.rbac.authorization.k8s.io "gone" not found]'))


def test_system_masters_is_allowed_everything_without_a_binding() -> None:
    bare = APIServer(history_limit=50)  # not even cluster-admin's binding
    admin = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
    assert authorize(bare, _res("delete", "nodes", user=admin)).allowed
    assert authorize(bare, _url("get", "/anything", user=admin)).allowed


def test_every_authenticated_user_may_discover_and_review_itself(api: APIServer) -> None:
    assert authorize(api, _url("get", "/apis/apps/v1")).allowed
    assert authorize(api, _url("get", "/version")).allowed
    assert authorize(api, _res("create", "selfsubjectaccessreviews",
                               group="authorization.k8s.io")).allowed
    assert authorize(api, _url("get", "/openid/v1/jwks")).allowed  # a ServiceAccount
    assert not authorize(api, _url("get", "/metrics")).allowed
    assert not authorize(api, _res("list", "namespaces")).allowed


def test_an_aggregated_cluster_role_holds_the_rules_of_the_roles_it_selects(
        api: APIServer) -> None:
    _bind(api, "RoleBinding", "bot", "ClusterRole", "admin",
          [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}], "team")
    # admin aggregates edit, which aggregates view
    assert authorize(api, _res("list", "pods", "team")).allowed
    assert authorize(api, _res("create", "rolebindings", "team",
                               group="rbac.authorization.k8s.io")).allowed
    assert not authorize(api, _res("list", "widgets", "team", group="example.com")).allowed
    _role(api, "ClusterRole", "widgets", [{"verbs": ["list"], "apiGroups": ["example.com"],
                                           "resources": ["widgets"]}],
          labels={"rbac.authorization.k8s.io/aggregate-to-admin": "true"})
    assert authorize(api, _res("list", "widgets", "team", group="example.com")).allowed


def test_the_rules_review_lists_every_rule_bound_in_the_namespace(api: APIServer) -> None:
    _role(api, "Role", "named", [{"verbs": ["get"], "apiGroups": [""],
                                  "resources": ["secrets"], "resourceNames": ["s"]}], "team")
    _bind(api, "RoleBinding", "bot", "Role", "named",
          [{"kind": "ServiceAccount", "name": "bot"}], "team")
    rules = rules_for(api, SA, "team")
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
            "resourceNames": ["s"]} in rules.resource_rules
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz",
                                                  "/version", "/version/"]} in \
        rules.non_resource_rules
    assert rules_for(api, SA, "other").resource_rules == [
        r for r in rules.resource_rules if r.get("resources") != ["secrets"]]


@pytest.mark.parametrize(("asked", "message"), [
    (_res("list", "secrets", "team"), 'User "system:serviceaccount:team:bot" cannot list '
     'resource "secrets" in API group "" in the namespace "team"'),
    (_res("patch", "nodes", sub="status", name="n"), 'User "system:serviceaccount:team:bot" '
     'cannot patch resource "nodes/status" in API group "" at the cluster scope'),
    (_url("get", "/metrics"), 'User "system:serviceaccount:team:bot" cannot get path '
     '"/metrics"'),
])
def test_a_denial_is_worded_as_kube_apiserver_words_it(asked: Attributes, message: str) -> None:
    assert forbidden_message(asked) == message


def test_the_authorizer_follows_every_commit_of_the_rbac_objects(api: APIServer) -> None:
    authorizer = RbacAuthorizer(api)  # made before the objects it decides from
    asked = _res("get", "pods", "team", "p")
    assert not authorizer.authorize(asked).allowed
    _role(api, "Role", "reader", [{"verbs": ["get"], "apiGroups": [""],
                                   "resources": ["pods"]}], "team")
    _bind(api, "RoleBinding", "bot", "Role", "reader", [{"kind": "User", "name": SA.name}],
          "team")
    assert authorizer.authorize(asked).allowed
    api.patch("Role", "reader", {"rules": [{"verbs": ["list"], "apiGroups": [""],
                                            "resources": ["pods"]}]}, "team")
    assert not authorizer.authorize(asked).allowed
    api.delete("RoleBinding", "bot", "team")
    assert not authorizer.authorize(_res("list", "pods", "team")).allowed
