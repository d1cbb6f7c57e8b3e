"""What a request asks to do, read from its method, path and query alone, as
kube-apiserver's RequestInfoFactory reads it before routing (so a path the server does
not serve is still authorized first, and a denied client never learns whether it
exists).

Under ``/api/v1`` and ``/apis/<group>/<version>`` a request is a resource request: POST
create, GET/HEAD get (list, or watch with ``?watch``, when no name; a
``fieldSelector=metadata.name=N`` names one), PUT update, PATCH patch, DELETE delete
(deletecollection when no name); ``/namespaces/<ns>/...`` sets the namespace, the parts
after it are resource, name, subresource. A ``/watch/`` prefix makes the verb watch.
Anything else is a non-resource request whose verb is the lowercased method.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubelet_sim.apiserver.rbac import path_segment_errors
from kubelet_sim.apiserver.rbac_authorizer import Attributes, UserInfo

API_PREFIXES = ("api", "apis")
SPECIAL_VERBS = ("proxy", "watch")  # /api/v1/watch/..., given in the path
NAMESPACE_SUBRESOURCES = ("status", "finalize")
METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                "PATCH": "patch", "DELETE": "delete"}
TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _watching(query: Mapping[str, str]) -> bool:
    value = query.get("watch")
    if value is None or value in FALSE:
        return False
    # a value that does not parse: kube-apiserver falls back to "anything but false/0"
    return value in TRUE or value.lower() not in ("false", "0")


def _named_by_field_selector(query: Mapping[str, str]) -> str:
    for term in (query.get("fieldSelector") or "").split(","):
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and not key.endswith("!") and key.strip() == "metadata.name":
            name = value.strip()
            return name if not path_segment_errors(name) else ""
    return ""


def request_attributes(user: UserInfo, method: str, path: str,
                       query: Mapping[str, str]) -> Attributes:
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    plain = Attributes(user, method.lower(), False, path=path)
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return plain
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return plain
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in SPECIAL_VERBS and len(parts) >= 2:
        verb, parts = parts[0], parts[1:]
    else:
        verb = METHOD_VERBS.get(method, "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if _watching(query) else "list"
        name = _named_by_field_selector(query)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, True, path=path, api_group=group, api_version=version,
                      namespace=namespace, resource=resource, subresource=subresource,
                      name=name)
