"""A ``Status`` an API server answered, as the exception the in-process API server raises
for the same failure: the one place the HTTP client maps reason and code to
:mod:`kubelet_sim.api.errors`.

The exception keeps the server's own message (``pods "web" not found``); typed fields
(``kind``, ``name``, ``causes``, ``errors``) are filled from ``details`` and from the
request (the client's kind, name and namespace), so ``except NotFound`` and
``err.errors`` work the same over both clients.
"""

from __future__ import annotations

import re
from typing import Any

from kubelet_sim.api.errors import (
    AlreadyExists,
    ApiError,
    ApplyConflict,
    BadRequest,
    Conflict,
    ExpiredContinue,
    FieldError,
    Forbidden,
    Gone,
    Invalid,
    InvalidObject,
    InvalidOptions,
    NotFound,
    ObjectForbidden,
    RequestEntityTooLarge,
    ServiceUnavailable,
    TooLargeResourceVersion,
    TooManyRequests,
    Unprocessable,
    UnsupportedMediaType,
)


class StatusError(ApiError):
    """A failure no typed error stands for (401, 405, 406, 500, a 504 other than a too
    large resourceVersion, ...): its code and reason as the server said them."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason = code, reason


def _said(err: ApiError, message: str) -> ApiError:
    """``err`` carrying the server's message."""
    err.message = message
    err.args = (message,)
    return err


def error_from_status(status: Any, code: int, kind: str = "", name: str = "",
                      namespace: str = "") -> ApiError:
    """The exception for ``status`` (a decoded Status, or anything else a failed request
    answered with) and the HTTP ``code``; ``kind``/``name``/``namespace`` are the
    request's."""
    if not isinstance(status, dict) or status.get("kind") != "Status":
        return StatusError(code, _reason_of_code(code), f"the server answered {code}: "
                                                        f"{str(status)[:200]}")
    code = int(status.get("code") or code)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    found = status.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict)]
    name = str(details.get("name") or name)
    if reason == "NotFound" or (code == 404 and not reason):
        return _said(NotFound(kind or str(details.get("kind") or ""), name, namespace),
                     message)
    if reason == "AlreadyExists":
        return _said(AlreadyExists(kind or str(details.get("kind") or ""), name, namespace),
                     message)
    if reason == "Conflict":
        if any(c.get("reason") == "FieldManagerConflict" for c in causes):
            return ApplyConflict(message, [_strings(c) for c in causes])
        detail = message.partition(f'"{name}": ')[2] if name else ""
        return Conflict(message, kind, name, detail)
    if reason in ("Expired", "Gone") or code == 410:
        token = (status.get("metadata") or {}).get("continue")
        return ExpiredContinue(message, str(token)) if token else Gone(message)
    if reason == "Invalid" or code == 422:
        return _invalid(message, details, causes)
    if reason == "TooManyRequests" or code == 429:
        return TooManyRequests(message, [_strings(c) for c in causes])
    if reason == "Timeout" and any(c.get("reason") == "ResourceVersionTooLarge"
                                   for c in causes):
        return _said(TooLargeResourceVersion(0, 0), message)
    if reason == "Forbidden" and code == 403:
        refused = _FORBIDDEN.match(message)
        if refused is not None:  # about one object: `pods "web-1" is forbidden: <why>`
            resource = refused["resource"]
            return ObjectForbidden(refused["why"], str(details.get("kind") or resource),
                                   refused["name"] or "", resource)
    plain: dict[str, type[ApiError]] = {
        "BadRequest": BadRequest, "Forbidden": Forbidden,
        "RequestEntityTooLarge": RequestEntityTooLarge,
        "UnsupportedMediaType": UnsupportedMediaType,
        "ServiceUnavailable": ServiceUnavailable,
    }
    typed = plain.get(reason)
    if typed is not None and typed.code == code:
        return _said(typed(message), message)
    return StatusError(code, reason or _reason_of_code(code), message)


# kube-apiserver's wording of a 403 about a resource (and a named object of it)
_FORBIDDEN = re.compile(r'(?P<resource>[^\s"]+)(?: "(?P<name>[^"]*)")? is forbidden: (?P<why>.*)',
                        re.S)


def _invalid(message: str, details: dict[str, Any], causes: list[dict[str, Any]]) -> ApiError:
    errors = [FieldError(str(c.get("reason") or ""), str(c.get("field") or ""),
                         str(c.get("message") or "")) for c in causes]
    kind, group = str(details.get("kind") or ""), str(details.get("group") or "")
    if group == "meta.k8s.io" and kind.endswith("Options"):
        return _said(InvalidOptions(kind, [_strings(c) for c in causes]), message)
    if not errors:
        return Unprocessable(message)
    if kind:
        qualified = f"{kind}.{group}" if group else kind
        return _said(InvalidObject(qualified, str(details.get("name") or ""), errors), message)
    return _said(Invalid(errors[0].field, errors[0].detail), message)


def _strings(cause: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in cause.items()}


def _reason_of_code(code: int) -> str:
    """metav1's reason for a code a Status did not name (the client-go fallback)."""
    return {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
            405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
            413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
            429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
            504: "Timeout"}.get(code, "Unknown")
