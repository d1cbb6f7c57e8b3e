"""Who the request's user is and what it may do: ``authentication.k8s.io/v1``
SelfSubjectReview (``kubectl auth whoami``) and ``authorization.k8s.io/v1``
SelfSubjectAccessReview / SelfSubjectRulesReview (``kubectl auth can-i [--list]``),
answered by the same authorizer the requests pass (:mod:`..rbac_authorizer`) for the
user the access filters authenticated (impersonated, with ``--as``).
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import BadRequest, Invalid
from kubelet_sim.apiserver.http.authn import ADMIN
from kubelet_sim.apiserver.http.resources import (
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    ApiResource,
)
from kubelet_sim.apiserver.rbac_authorizer import Attributes, RbacAuthorizer, UserInfo


def _echo(r: ApiResource, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    kind, api_version = body.get("kind", r.kind), body.get("apiVersion", r.group_version)
    if kind != r.kind or api_version != r.group_version:
        raise BadRequest(f"the API version in the data ({api_version}) and kind ({kind}) do "
                         f"not match {r.group_version} {r.kind}")
    meta = dict(body.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    out: dict[str, Any] = {"kind": r.kind, "apiVersion": r.group_version, "metadata": meta}
    if "spec" in body:
        out["spec"] = body["spec"]
    return out


def _user_info(user: UserInfo) -> dict[str, Any]:
    shown: dict[str, Any] = {"username": user.name}
    if user.uid:
        shown["uid"] = user.uid
    shown["groups"] = list(user.groups)
    if user.extra:
        shown["extra"] = {k: list(v) for k, v in user.extra.items()}
    return shown


def _asked(user: UserInfo, spec: dict[str, Any]) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        def field(key: str) -> str:
            return str(resource.get(key) or "")

        return Attributes(user, field("verb"), True, api_group=field("group"),
                          api_version=field("version"), namespace=field("namespace"),
                          resource=field("resource"), subresource=field("subresource"),
                          name=field("name"))
    other = spec.get("nonResourceAttributes") or {}
    return Attributes(user, str(other.get("verb") or ""), False,
                      path=str(other.get("path") or ""))


def review(r: ApiResource, body: Any, authorizer: RbacAuthorizer,
           user: UserInfo | None = None
           ) -> dict[str, Any]:
    """The answered review (what POST returns, 201) for ``user`` (the admin when None)."""
    user = user or ADMIN
    out = _echo(r, body)
    if r == SELF_SUBJECT_REVIEWS:
        out["status"] = {"userInfo": _user_info(user)}
    elif r == SELF_SUBJECT_ACCESS_REVIEWS:
        spec = out.get("spec") or {}
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise Invalid("spec.resourceAttributes",
                          "Invalid value: null: exactly one of nonResourceAttributes or "
                          "resourceAttributes must be specified")
        decision = authorizer.authorize(_asked(user, spec))
        out["status"] = {"allowed": decision.allowed,
                         **({"reason": decision.reason} if decision.reason else {})}
    elif r == SELF_SUBJECT_RULES_REVIEWS:
        namespace = str((out.get("spec") or {}).get("namespace") or "")
        if not namespace:
            raise BadRequest("no namespace on request")
        rules = authorizer.rules_for(user, namespace)
        out["status"] = {"resourceRules": rules.resource_rules,
                         "nonResourceRules": rules.non_resource_rules, "incomplete": False}
        if rules.evaluation_error:
            out["status"]["evaluationError"] = rules.evaluation_error
    return out
