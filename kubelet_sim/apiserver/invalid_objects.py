"""A validation error named after its object, as kube-apiserver reports every rejected
write: ``<Kind>.<group> "<name>" is invalid: <field>: <detail>``, the cause's reason taken
from how the detail starts (``field.ErrorType``'s wording)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from kubelet_sim.api.errors import FieldError, Invalid, InvalidObject
from kubelet_sim.api.model import KINDS, Resource

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")

# field.ErrorType: the text a detail starts with -> the cause's reason
_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
    ("Internal error", "InternalError"),
)


def cause_reason(detail: str) -> str:
    """The ``details.causes[].reason`` of a field error worded ``detail``."""
    for prefix, reason in _REASONS:
        if detail.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def qualified_kind(api_version: str, kind: str) -> str:
    """``Deployment.apps``, ``StorageClass.storage.k8s.io``; the core group's kinds bare."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group else kind


def object_invalid(obj: Resource | dict[str, Any], err: Invalid) -> InvalidObject:
    if isinstance(obj, Resource):
        api_version, kind, name = obj.api_version, obj.kind, obj.metadata.name
    else:
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        name = str(meta.get("name") or "")
        if not api_version and kind in KINDS:
            api_version = KINDS[kind].api_version
    return InvalidObject(qualified_kind(api_version, kind), name,
                         [FieldError(cause_reason(err.detail), err.field, err.detail)])


def names_the_object(
    method: Callable[Concatenate[S, Any, P], T],
) -> Callable[Concatenate[S, Any, P], T]:
    """Wrap a write taking the object first: a bare :class:`Invalid` it raises becomes the
    object's :class:`InvalidObject` (one naming several fields already is one)."""

    @functools.wraps(method)
    def wrapper(self: S, obj: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, obj, *args, **kwargs)
        except InvalidObject:
            raise
        except Invalid as err:
            raise object_invalid(obj, err) from err

    return wrapper
