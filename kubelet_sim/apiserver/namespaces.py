"""Namespace rules of kube-apiserver's namespace registry:

* the system namespaces exist from the start (``default``, ``kube-system``,
  ``kube-public``, ``kube-node-lease``);
* a Namespace's ``spec.finalizers`` are names: qualified names, or one of the standard
  ``kubernetes``, ``orphan``, ``foregroundDeletion``;
* the first DELETE only marks it (deletionTimestamp, phase Terminating); while
  ``spec.finalizers`` are left a later DELETE answers the namespace unchanged; a write
  that leaves a terminating namespace with neither ``spec.finalizers`` nor
  ``metadata.finalizers`` removes it;
* the ``finalize`` subresource (PUT) replaces ``spec.finalizers`` and nothing else that
  the main resource would keep (status stays the stored one).

Deleting the contents and then the ``kubernetes`` finalizer is the namespace
controller's work (:mod:`kubelet_sim.controllers.namespace`).
"""

from __future__ import annotations

import json
from typing import Any

from kubelet_sim.api.errors import BadRequest, FieldError, InvalidObject
from kubelet_sim.api.label_rules import qualified_name_errors
from kubelet_sim.api.model import Resource

__all__ = ["SYSTEM_NAMESPACES", "finalized", "goes_now", "validate_namespace"]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# the legacy finalizer names that need no domain
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def _finalizer_errors(finalizers: Any) -> list[FieldError]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [FieldError("FieldValueInvalid", "spec.finalizers",
                           f"Invalid value: {json.dumps(finalizers)}: must be a list")]
    errors = []
    for i, name in enumerate(finalizers):
        path = f"spec.finalizers[{i}]"
        text = str(name)
        for why in qualified_name_errors(text):
            errors.append(FieldError("FieldValueInvalid", path,
                                     f"Invalid value: {json.dumps(text)}: {why}"))
        if "/" not in text and text not in STANDARD_FINALIZERS:
            errors.append(FieldError("FieldValueInvalid", path,
                                     f"Invalid value: {json.dumps(text)}: name is neither a "
                                     "standard finalizer name nor is it fully qualified"))
    return errors


def validate_namespace(ns: Resource) -> None:
    errors = _finalizer_errors(ns.spec.get("finalizers"))
    if errors:
        raise InvalidObject("Namespace", ns.name, errors)


def finalized(current: Resource, sent: Resource) -> Resource:
    """What ``PUT namespaces/<name>/finalize`` stores: the namespace with the sent
    ``spec.finalizers`` (an absent list empties them)."""
    if sent.kind != "Namespace":
        raise BadRequest(f"the body of namespaces/finalize must be a Namespace, not {sent.kind}")
    updated = current.copy()
    finalizers = sent.spec.get("finalizers")
    errors = _finalizer_errors(finalizers)
    if errors:
        raise InvalidObject("Namespace", current.name, errors)
    if finalizers:
        updated.spec["finalizers"] = [str(f) for f in finalizers]
    else:
        updated.spec.pop("finalizers", None)
    updated.metadata.resource_version = sent.metadata.resource_version
    return updated


def goes_now(ns: Resource) -> bool:
    """A terminating namespace with no finalizer of either kind left is removed."""
    return ns.is_terminating and not ns.spec.get("finalizers") and not ns.metadata.finalizers
