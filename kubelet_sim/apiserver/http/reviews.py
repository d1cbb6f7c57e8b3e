"""Who the request's user is and what it may do: ``authentication.k8s.io/v1``
SelfSubjectReview (``kubectl auth whoami``) and ``authorization.k8s.io/v1``
SelfSubjectAccessReview / SelfSubjectRulesReview (``kubectl auth can-i [--list]``),
answered by the same authorizer the requests pass (:mod:`..rbac_authorizer`) for the
user the access filters authenticated (impersonated, with ``--as``); and what another
user may do: SubjectAccessReview (cluster-wide) and LocalSubjectAccessReview (in the
namespace of its path), for the user, groups, uid and extra the spec gives.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import BadRequest, FieldError, Invalid, InvalidObject
from kubelet_sim.apiserver.http.authn import ADMIN
from kubelet_sim.apiserver.http.resources import (
    LOCAL_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    SUBJECT_ACCESS_REVIEWS,
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


def _subject(spec: dict[str, Any]) -> UserInfo:
    """The user a SubjectAccessReview asks about, as given (no group is added)."""
    extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
    return UserInfo(str(spec.get("user") or ""), tuple(spec.get("groups") or ()),
                    str(spec.get("uid") or ""),
                    {str(k): tuple(v or ()) for k, v in (extra or {}).items()})


def _go_value(attributes: dict[str, Any]) -> str:
    return (f'&authorization.NonResourceAttributes{{Path:"{attributes.get("path", "")}", '
            f'Verb:"{attributes.get("verb", "")}"}}')


def _subject_access(r: ApiResource, out: dict[str, Any], authorizer: RbacAuthorizer,
                    namespace: str) -> None:
    """A SubjectAccessReview or LocalSubjectAccessReview, validated and answered."""
    meta, spec = out["metadata"], out.get("spec") or {}
    if r == LOCAL_SUBJECT_ACCESS_REVIEWS:
        if meta.get("namespace", namespace) != namespace:
            raise BadRequest("the namespace of the provided object does not match the "
                             "namespace sent on the request")
        meta["namespace"] = namespace
    resource, other = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errors: list[FieldError] = []
    if resource and other:
        errors.append(FieldError("FieldValueInvalid", "spec.nonResourceAttributes",
                                 f"Invalid value: {_go_value(other)}: cannot be specified "
                                 "in combination with resourceAttributes"))
    if not resource and not other:
        errors.append(FieldError("FieldValueInvalid", "spec.resourceAttributes",
                                 "Invalid value: null: exactly one of nonResourceAttributes "
                                 "or resourceAttributes must be specified"))
    if not spec.get("user") and not spec.get("groups"):
        errors.append(FieldError("FieldValueInvalid", "spec.user", 'Invalid value: "": at '
                                 "least one of user or group must be specified"))
    if r == LOCAL_SUBJECT_ACCESS_REVIEWS and other:
        errors.append(FieldError("FieldValueInvalid", "spec.nonResourceAttributes",
                                 f"Invalid value: {_go_value(other)}: disallowed on this "
                                 "kind of request"))
    if errors:
        raise InvalidObject(f"{r.kind}.{r.group}", "", errors)
    if r == LOCAL_SUBJECT_ACCESS_REVIEWS and (resource or {}).get("namespace") != namespace:
        raise BadRequest(f"spec.resourceAttributes.namespace must match namespace: "
                         f"{namespace}")
    decision = authorizer.authorize(_asked(_subject(spec), spec))
    out["status"] = {"allowed": decision.allowed,
                     **({"reason": decision.reason} if decision.reason else {})}


def review(r: ApiResource, body: Any, authorizer: RbacAuthorizer,
           user: UserInfo | None = None, namespace: str = "") -> dict[str, Any]:
    """The answered review (what POST returns, 201) for ``user`` (the admin when None);
    ``namespace`` is a LocalSubjectAccessReview's, from its path."""
    user = user or ADMIN
    out = _echo(r, body)
    if r in (SUBJECT_ACCESS_REVIEWS, LOCAL_SUBJECT_ACCESS_REVIEWS):
        _subject_access(r, out, authorizer, namespace)
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
