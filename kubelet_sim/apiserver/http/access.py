"""The filters every request passes before it is routed, in kube-apiserver's order:
authentication (401 Unauthorized), impersonation (``Impersonate-User``,
``Impersonate-Group``, ``Impersonate-Uid``, ``Impersonate-Extra-<key>``: each allowed
to the requester by the ``impersonate`` verb, else 403), then authorization (RBAC, 403
Forbidden worded as kube-apiserver words it). The user the request runs as is
``request["user"]`` (the self-subject reviews answer with it).

The admin token's user is in ``system:masters`` and passes without an RBAC walk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import unquote

from aiohttp import web
from aiohttp.typedefs import Middleware

from kubelet_sim.apiserver.http import encoding
from kubelet_sim.apiserver.http.authn import Authenticator
from kubelet_sim.apiserver.http.request_info import request_attributes
from kubelet_sim.apiserver.http.status import forbidden_body, status_body
from kubelet_sim.apiserver.rbac_authorizer import (
    ALL_SERVICE_ACCOUNTS,
    AUTHENTICATED,
    SERVICE_ACCOUNT_PREFIX,
    UNAUTHENTICATED,
    Attributes,
    RbacAuthorizer,
    UserInfo,
    forbidden_message,
)
from kubelet_sim.apiserver.server import APIServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_KEY = web.RequestKey("user", UserInfo)
AUTHORIZER = web.AppKey("authorizer", RbacAuthorizer)
IMPERSONATE_USER, IMPERSONATE_GROUP = "Impersonate-User", "Impersonate-Group"
IMPERSONATE_UID, IMPERSONATE_EXTRA = "Impersonate-Uid", "Impersonate-Extra-"
ANONYMOUS = "system:anonymous"
AUTHENTICATION_GROUP = "authentication.k8s.io"


def _sanitized(text: str) -> str:
    """kube-apiserver escapes these in a denial's message."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden(request: web.Request, attrs: Attributes, reason: str) -> web.Response:
    why = _sanitized(forbidden_message(attrs))
    if reason:
        why = f"{why}: {reason}"
    return encoding.status_response(request, forbidden_body(
        attrs.api_group, attrs.resource, attrs.name, why))


def _service_account(username: str) -> tuple[str, str] | None:
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def _impersonation_checks(requester: UserInfo, request: web.Request
                          ) -> tuple[UserInfo, list[Attributes]] | str:
    """The user the headers ask to act as and what the requester must be allowed for
    it; or why the request is malformed."""
    headers = request.headers
    username = headers.get(IMPERSONATE_USER, "")
    groups = list(headers.getall(IMPERSONATE_GROUP, []))
    uid = headers.get(IMPERSONATE_UID, "")
    extra: dict[str, tuple[str, ...]] = {}
    checks: list[Attributes] = []
    asked: list[str] = []  # the ObjectReferences as Go's %v prints them, for a 400

    def may(resource: str, name: str, group: str = "", namespace: str = "",
            subresource: str = "") -> None:
        checks.append(Attributes(requester, "impersonate", True, api_group=group,
                                 namespace=namespace, resource=resource,
                                 subresource=subresource, name=name))
        kind = {"serviceaccounts": "ServiceAccount", "users": "User", "groups": "Group",
                "userextras": "UserExtra", "uids": "UID"}[resource]
        version = f"{group}/v1" if group else ""
        asked.append("{" + " ".join((kind, namespace, name, "", version, "", subresource))
                     + "}")

    account = _service_account(username)
    if account is not None:
        may("serviceaccounts", account[1], namespace=account[0])
        if not groups:
            groups = [ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{account[0]}"]
    elif username:
        may("users", username)
    for group in headers.getall(IMPERSONATE_GROUP, []):
        may("groups", group)
    for header in dict.fromkeys(h for h in headers
                                if h.lower().startswith(IMPERSONATE_EXTRA.lower())):
        key = unquote(header[len(IMPERSONATE_EXTRA):].lower())
        values = tuple(headers.getall(header))
        extra[key] = extra.get(key, ()) + values
        for value in values:
            may("userextras", value, AUTHENTICATION_GROUP, subresource=key)
    if uid:
        may("uids", uid, AUTHENTICATION_GROUP)
    if not username:
        return f"requested [{' '.join(asked)}] without impersonating a user"
    if username != ANONYMOUS:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    return UserInfo(username, tuple(groups), uid, extra), checks


def _impersonating(request: web.Request) -> bool:
    return any(h.lower().startswith("impersonate-") for h in request.headers)


def access_filters(api: APIServer, authorizer: RbacAuthorizer, admin_token: str
                   ) -> Middleware:
    authenticator = Authenticator(api, admin_token)
    authorize = authorizer.authorize

    @web.middleware
    async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
        user = authenticator.authenticate(request.headers.get("Authorization", ""))
        if user is None:
            return encoding.status_response(
                request, status_body(401, "Unauthorized", "Unauthorized"))
        if _impersonating(request):
            asked = _impersonation_checks(user, request)
            if isinstance(asked, str):
                return encoding.status_response(request, status_body(400, "BadRequest", asked))
            acting, checks = asked
            for check in checks:
                decision = authorize(check)
                if not decision.allowed:
                    return forbidden(request, check, decision.reason)
            user = acting
        if not user.privileged:
            attrs = request_attributes(user, request.method, request.path, request.query)
            decision = authorize(attrs)
            if not decision.allowed:
                return forbidden(request, attrs, decision.reason)
        request[USER_KEY] = user
        return await handler(request)

    return access
