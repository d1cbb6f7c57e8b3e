"""An update's validation as kube-apiserver's registry strategies run it: the new object
validated as on create, then what the update may not change.

For most kinds the first error stops the write. A Deployment, ReplicaSet or DaemonSet
update gets every cause at once, in the strategies' order: the spec's errors (a selector
that no longer matches the template's labels, say), then ``spec.selector``'s ``field is
immutable``, which those strategies append after validating the update. A StatefulSet's
immutable fields, its selector among them, are one ``spec: Forbidden`` cause after the
spec's errors."""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.errors import FieldError, Invalid, InvalidObject
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.invalid_objects import object_invalid
from kubelet_sim.apiserver.update_rules import StorageClassLookup, validate_update
from kubelet_sim.apiserver.validation import validate
from kubelet_sim.apiserver.workloads import APPS_KINDS

__all__ = ["validate_written_update"]


def validate_written_update(current: Resource, updated: Resource,
                            storage_class: StorageClassLookup, *, status_only: bool) -> None:
    """Raise :class:`Invalid` when ``updated`` may not replace ``current`` (a status
    write is validated as an object only)."""
    if status_only or updated.kind not in APPS_KINDS:
        validate(updated)
        if not status_only:
            validate_update(current, updated, storage_class)
        return
    errors: list[FieldError] = []
    for check in (lambda: validate(updated),
                  lambda: validate_update(current, updated, storage_class)):
        errors += _causes(updated, check)
    if errors:
        named = object_invalid(updated, Invalid(errors[0].field, errors[0].detail))
        raise InvalidObject(named.qualified_kind, named.name, errors)


def _causes(obj: Resource, check: Callable[[], None]) -> list[FieldError]:
    try:
        check()
    except InvalidObject as err:
        return list(err.errors)
    except Invalid as err:
        return list(object_invalid(obj, err).errors)
    return []
