"""Who may do what: kube-apiserver's RBAC authorizer over the stored Roles, ClusterRoles,
RoleBindings and ClusterRoleBindings.

A request's attributes (user, verb, API group, namespace, resource, subresource, name, or
the path of a non-resource request) are allowed when one rule of one role bound to the
user allows them: ClusterRoleBindings first, then the RoleBindings of the request's
namespace (a RoleBinding may name a Role of its namespace or a ClusterRole). A
ClusterRole with an ``aggregationRule`` holds the rules of the ClusterRoles its
selectors match (what kube-controller-manager's aggregation controller writes into it;
computed here when asked). A binding whose role is missing allows nothing and its
NotFound becomes the denial's reason (``RBAC: clusterrole.rbac.authorization.k8s.io
"x" not found``), as upstream. Members of ``system:masters`` are allowed everything
before any of this runs (kube-apiserver's privileged-group authorizer). The objects are
read from an in-memory index the API server feeds at each commit, never listed per
request.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubelet_sim.api.errors import ApiError
from kubelet_sim.api.model import Resource
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.apiserver.rbac import GROUP
from kubelet_sim.apiserver.watch import DELETED

if TYPE_CHECKING:
    from kubelet_sim.apiserver.server import APIServer

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"

Rule = Mapping[str, Any]


@dataclass(frozen=True)
class UserInfo:
    """An authenticated user, as ``user.Info``: name, uid, groups, extra."""

    name: str
    groups: tuple[str, ...]
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    @property
    def privileged(self) -> bool:
        return MASTERS in self.groups


def service_account_user(namespace: str, name: str, uid: str = "",
                         extra: Mapping[str, tuple[str, ...]] | None = None) -> UserInfo:
    """The user a ServiceAccount authenticates as, with its three groups."""
    return UserInfo(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                    (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED),
                    uid, extra or {})


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (``authorizer.Attributes``)."""

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""  # a non-resource request's URL path
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


ALLOWED = Decision(True)


def forbidden_message(attrs: Attributes) -> str:
    """How kube-apiserver words a denial (before ``<resource> "<name>" is forbidden: ``)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = (f'in the namespace "{attrs.namespace}"' if attrs.namespace
             else "at the cluster scope")
    return (f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" {where}')


# -- one rule against one request (rbac.RuleAllows and its helpers) ---------------------

def _has(values: Any, wanted: str) -> bool:
    listed = values or ()
    return "*" in listed or wanted in listed


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for listed in rule.get("resources") or ():
        if listed in ("*", combined):
            return True
        # "*/status": that subresource of every resource
        if subresource and listed == f"*/{subresource}":
            return True
    return False


def _url_matches(rule: Rule, path: str) -> bool:
    for listed in rule.get("nonResourceURLs") or ():
        if listed in ("*", path):
            return True
        if listed.endswith("*") and path.startswith(listed[:-1]):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    names = rule.get("resourceNames") or ()
    return (_has(rule.get("apiGroups"), attrs.api_group)
            and _resource_matches(rule, combined, attrs.subresource)
            and (not names or attrs.name in names))


# -- which rules apply to a user ----------------------------------------------------------

def _subject_applies(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


class RoleNotFound(Exception):
    """A binding's role is missing (its message is the NotFound's)."""


class RbacIndex:
    """The four RBAC kinds, kept by the API server's feed (an informer's cache, as
    kube-apiserver's authorizer reads listers): every commit of one replaces the map it
    is in (copy on write), so requests read without a lock while a writer's thread
    commits."""

    def __init__(self, api: APIServer) -> None:
        self.cluster_roles: dict[str, Resource] = {}
        self.cluster_role_bindings: dict[str, Resource] = {}
        self.roles: dict[tuple[str, str], Resource] = {}
        self.role_bindings: dict[str, dict[str, Resource]] = {}
        api.feed("ClusterRole", self._on_cluster_role)
        api.feed("ClusterRoleBinding", self._on_cluster_role_binding)
        api.feed("Role", self._on_role)
        api.feed("RoleBinding", self._on_role_binding)

    @staticmethod
    def _changed(current: dict[Any, Resource], key: Any, event: str, obj: Resource
                 ) -> dict[Any, Resource]:
        changed = dict(current)
        if event == DELETED:
            changed.pop(key, None)
        else:
            changed[key] = obj.copy()
        return changed

    def _on_cluster_role(self, event: str, obj: Resource) -> None:
        self.cluster_roles = self._changed(self.cluster_roles, obj.name, event, obj)

    def _on_cluster_role_binding(self, event: str, obj: Resource) -> None:
        self.cluster_role_bindings = self._changed(self.cluster_role_bindings, obj.name,
                                                   event, obj)

    def _on_role(self, event: str, obj: Resource) -> None:
        self.roles = self._changed(self.roles, (obj.namespace, obj.name), event, obj)

    def _on_role_binding(self, event: str, obj: Resource) -> None:
        namespaces = dict(self.role_bindings)
        namespaces[obj.namespace] = self._changed(namespaces.get(obj.namespace, {}),
                                                  obj.name, event, obj)
        self.role_bindings = namespaces

    def rules_of(self, ref: Mapping[str, Any], namespace: str) -> list[Rule]:
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "Role" and namespace:
            role = self.roles.get((namespace, name))
            if role is None:
                raise RoleNotFound(f'role.{GROUP} "{name}" not found')
            return list(role.body.get("rules") or [])
        cluster_role = self.cluster_roles.get(name)
        if kind != "ClusterRole" or cluster_role is None:
            raise RoleNotFound(f'clusterrole.{GROUP} "{name}" not found')
        return self._cluster_role_rules(cluster_role)

    def _cluster_role_rules(self, role: Resource, seen: frozenset[str] = frozenset()
                            ) -> list[Rule]:
        """Its rules; an aggregated one's are those of the roles it selects, resolved in
        turn (``edit`` is aggregated into ``admin``), as the aggregation controller's
        writes would have made them."""
        aggregation = role.body.get("aggregationRule")
        if not isinstance(aggregation, dict):
            return list(role.body.get("rules") or [])
        seen = seen | {role.name}
        rules: list[Rule] = []
        for raw in aggregation.get("clusterRoleSelectors") or []:
            try:
                selector = LabelSelector.from_dict(raw)
            except ApiError:
                continue
            for other in self.cluster_roles.values():
                if other.name not in seen and selector.matches(other.metadata.labels):
                    rules.extend(r for r in self._cluster_role_rules(other, seen)
                                 if r not in rules)
        return rules


Visit = tuple[str, Rule | None, str]  # (what granted it, the rule, a resolution error)


def _binding_rules(index: RbacIndex, binding: Resource, kind: str, shown: str,
                   namespace: str, user: UserInfo) -> Iterator[Visit]:
    subject = next((s for s in binding.body.get("subjects") or []
                    if isinstance(s, dict) and _subject_applies(s, user, namespace)), None)
    if subject is None:
        return
    ref = binding.body.get("roleRef") or {}
    try:
        rules = index.rules_of(ref, namespace)
    except RoleNotFound as e:
        yield "", None, str(e)
        return
    granted = (f'{kind} "{shown}" of {ref.get("kind")} "{ref.get("name")}" to '
               f"{_describe_subject(subject, namespace)}")
    for rule in rules:
        yield granted, rule, ""


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's wording: one error alone, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


@dataclass(frozen=True)
class UserRules:
    """What a SelfSubjectRulesReview lists: the user's rules in one namespace."""

    resource_rules: list[dict[str, Any]]
    non_resource_rules: list[dict[str, Any]]
    evaluation_error: str


class RbacAuthorizer:
    """Decides from the RBAC objects of one API server (fed to its :class:`RbacIndex`)."""

    def __init__(self, api: APIServer) -> None:
        self.index = RbacIndex(api)

    def _visit_rules(self, user: UserInfo, namespace: str) -> Iterator[Visit]:
        """Every rule bound to ``user`` (cluster-wide, then in ``namespace``), with where
        it comes from; a missing role yields its error instead."""
        index = self.index
        for name, binding in index.cluster_role_bindings.items():
            yield from _binding_rules(index, binding, "ClusterRoleBinding", name, "", user)
        if namespace:
            bindings = index.role_bindings.get(namespace, {})
            for name, binding in bindings.items():
                yield from _binding_rules(index, binding, "RoleBinding",
                                          f"{name}/{namespace}", namespace, user)

    def authorize(self, attrs: Attributes) -> Decision:
        """Allowed, or not with the reason kube-apiserver gives (usually none)."""
        if attrs.user.privileged:
            return ALLOWED
        errors: list[str] = []
        for granted, rule, error in self._visit_rules(attrs.user, attrs.namespace):
            if rule is not None and rule_allows(attrs, rule):
                return Decision(True, f"RBAC: allowed by {granted}")
            if error:
                errors.append(error)
        return Decision(False, f"RBAC: {_aggregate(errors)}" if errors else "")

    def rules_for(self, user: UserInfo, namespace: str) -> UserRules:
        resource: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        errors: list[str] = []
        for _, rule, error in self._visit_rules(user, namespace):
            if error:
                errors.append(error)
            if rule is None:
                continue
            verbs = list(rule.get("verbs") or [])
            if rule.get("resources"):
                shown = {"verbs": verbs, "apiGroups": list(rule.get("apiGroups") or []),
                         "resources": list(rule["resources"])}
                if rule.get("resourceNames"):
                    shown["resourceNames"] = list(rule["resourceNames"])
                resource.append(shown)
            if rule.get("nonResourceURLs"):
                non_resource.append({"verbs": verbs,
                                     "nonResourceURLs": list(rule["nonResourceURLs"])})
        return UserRules(resource, non_resource, _aggregate(errors) if errors else "")
