"""Typed API errors, one per Kubernetes ``StatusReason``, carrying the HTTP code it maps to.

Callers branch on the type (``except Conflict``), never on message text.
"""

from __future__ import annotations


class ApiError(Exception):
    """Base of every error the simulated API server raises."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    """Malformed request, e.g. a selector that does not parse (400)."""

    code = 400
    reason = "BadRequest"


class Forbidden(ApiError):
    """The request is well formed but not allowed, e.g. creating in a terminating namespace."""

    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    """The object does not exist (404)."""

    code = 404
    reason = "NotFound"

    def __init__(self, kind: str, name: str, namespace: str = "") -> None:
        where = f" in namespace {namespace!r}" if namespace else ""
        super().__init__(f"{kind} {name!r} not found{where}")
        self.kind, self.name, self.namespace = kind, name, namespace


class AlreadyExists(ApiError):
    """Create of a name that is taken (409, reason AlreadyExists)."""

    code = 409
    reason = "AlreadyExists"

    def __init__(self, kind: str, name: str, namespace: str = "") -> None:
        where = f" in namespace {namespace!r}" if namespace else ""
        super().__init__(f"{kind} {name!r} already exists{where}")
        self.kind, self.name, self.namespace = kind, name, namespace


class Conflict(ApiError):
    """Optimistic-concurrency failure: the write carried a stale resourceVersion (409)."""

    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """A watch asked for a resourceVersion older than the retained history (410)."""

    code = 410
    reason = "Expired"


class Invalid(ApiError):
    """The object fails validation; ``field`` is the JSON path of the offending field (422)."""

    code = 422
    reason = "Invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message
