"""Typed API errors, one per Kubernetes ``StatusReason``, carrying the HTTP code it maps to.

Callers branch on the type (``except Conflict``), never on message text.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """Base of every error the simulated API server raises."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    """Malformed request, e.g. a selector that does not parse (400)."""

    code, reason = 400, "BadRequest"


class Forbidden(ApiError):
    """The request is well formed but not allowed, e.g. creating in a terminating namespace."""

    code, reason = 403, "Forbidden"


class ObjectForbidden(Forbidden):
    """A 403 an admission plugin gives about one object. On the wire it reads
    ``<resource> "<name>" is forbidden: <why>`` (``<resource> is forbidden: <why>`` when
    the object has no name yet), the resource being the request's unless ``resource``
    names it."""

    def __init__(self, why: str, kind: str, name: str = "", resource: str = "") -> None:
        self.why, self.kind, self.name, self.resource = why, kind, name, resource
        super().__init__(self.worded(resource or kind))

    def worded(self, resource: str) -> str:
        named = f' "{self.name}"' if self.name else ""
        return f"{resource}{named} is forbidden: {self.why}"


class ObjectError(ApiError):
    """An error about one named object; the message is ``<kind> '<name>' <what>``."""

    what = ""

    def __init__(self, kind: str, name: str, namespace: str = "") -> None:
        where = f" in namespace {namespace!r}" if namespace else ""
        super().__init__(f"{kind} {name!r} {self.what}{where}")
        self.kind, self.name, self.namespace = kind, name, namespace


class NotFound(ObjectError):
    """The object does not exist (404)."""

    code, reason, what = 404, "NotFound", "not found"


class AlreadyExists(ObjectError):
    """Create of a name that is taken (409, reason AlreadyExists)."""

    code, reason, what = 409, "AlreadyExists", "already exists"


class Conflict(ApiError):
    """Optimistic-concurrency failure: the write carried a stale resourceVersion (409).
    With ``kind`` and ``name`` the Status names them (``details``)."""

    code, reason = 409, "Conflict"

    def __init__(self, message: str, kind: str = "", name: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.kind, self.name = kind, name
        self.detail = detail  # after "Operation cannot be fulfilled on <resource> <name>: "


class InjectedConflict(Conflict):
    """A Conflict a test asked the API server to answer (fault injection): the writer
    sees it, it is not retried inside the server."""


class Gone(ApiError):
    """A watch asked for a resourceVersion older than the retained history (410)."""

    code, reason = 410, "Expired"


class ExpiredContinue(Gone):
    """A list's ``continue`` token older than the kept history (410): the Status carries
    ``continue_token``, a token that goes on from the same key at the newest
    resourceVersion (the rest of the list is then not consistent with its start)."""

    def __init__(self, message: str, continue_token: str) -> None:
        super().__init__(message)
        self.continue_token = continue_token


class TooLargeResourceVersion(ApiError):
    """A read at a resourceVersion the server has not reached (504 Timeout, with
    kube-apiserver's ``ResourceVersionTooLarge`` cause and a retry after 1 s)."""

    code, reason = 504, "Timeout"

    def __init__(self, wanted: int, current: int) -> None:
        super().__init__(f"Timeout: Too large resource version: {wanted}, current: {current}")


class TooManyRequests(ApiError):
    """The request is refused for now, e.g. an eviction a disruption budget forbids (429);
    ``causes`` are the Status's ``details.causes``."""

    code, reason = 429, "TooManyRequests"

    def __init__(self, message: str, causes: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.causes = causes or []


class Invalid(ApiError):
    """The object fails validation; ``field`` is the JSON path of the offending field (422)."""

    code, reason = 422, "Invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message


class FieldError:
    """One field's problem as kube-apiserver's ``field.Error`` words it: a cause reason
    (FieldValueInvalid, FieldValueRequired, ...), the field path and the text after it."""

    __slots__ = ("detail", "field", "reason")

    def __init__(self, reason: str, field: str, detail: str) -> None:
        self.reason, self.field, self.detail = reason, field, detail

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"

    def __repr__(self) -> str:
        return f"FieldError({self.reason!r}, {self.field!r}, {self.detail!r})"


class InvalidObject(Invalid):
    """An object failing validation on several fields at once (422): the message is
    ``<Kind>.<group> "<name>" is invalid: <errors>`` as kube-apiserver aggregates them
    (one error as is, several in brackets), each error one of ``details.causes``."""

    def __init__(self, qualified_kind: str, name: str, errors: list[FieldError]) -> None:
        joined = str(errors[0]) if len(errors) == 1 else \
            "[" + ", ".join(str(e) for e in errors) + "]"
        super().__init__(errors[0].field, errors[0].detail)
        self.message = f'{qualified_kind} "{name}" is invalid: {joined}'
        self.args = (self.message,)
        self.errors = list(errors)
        self.qualified_kind, self.name = qualified_kind, name


class RequestEntityTooLarge(ApiError):
    """The request is over one of the API server's limits, e.g. JSON patch operations (413)."""

    code, reason = 413, "RequestEntityTooLarge"

    def __init__(self, message: str) -> None:
        super().__init__(f"Request entity too large: {message}")


class UnsupportedMediaType(ApiError):
    """A body in a format the endpoint does not take (415)."""

    code, reason = 415, "UnsupportedMediaType"


class Unprocessable(ApiError):
    """422 without field causes: the form kube-apiserver gives a JSON patch that does not
    apply (its library's own message is not passed on)."""

    code, reason = 422, "Invalid"


class ApplyConflict(ApiError):
    """Server-side apply would change fields another manager owns (409). ``causes`` are
    the Status causes: one ``FieldManagerConflict`` per field."""

    code, reason = 409, "Conflict"

    def __init__(self, message: str, causes: list[dict[str, str]],
                 conflicts: list[Any] | None = None) -> None:
        super().__init__(message)
        self.causes = causes
        self.conflicts = conflicts or []  # (manager, field path) pairs, for the server


class InvalidOptions(ApiError):
    """The query options of a write are invalid (422), e.g. apply without
    ``fieldManager``; ``problems`` are the Status causes (reason, field, message)."""

    code, reason = 422, "Invalid"

    def __init__(self, options_kind: str, problems: list[dict[str, str]]) -> None:
        said = [f"{p['field']}: {p['message']}" for p in problems]
        listed = said[0] if len(said) == 1 else "[" + ", ".join(said) + "]"
        super().__init__(f'{options_kind}.meta.k8s.io "" is invalid: {listed}')
        self.options_kind = options_kind
        self.causes = problems


class ServiceUnavailable(ApiError):
    """The server cannot answer this request now (503)."""

    code, reason = 503, "ServiceUnavailable"
