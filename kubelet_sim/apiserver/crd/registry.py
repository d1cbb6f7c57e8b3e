"""The custom kinds one API server serves: kept from the CustomResourceDefinitions it
stores (every commit of one updates it), and the admission of custom resources against
their definition's schema (prune, default, validate) before they are stored.

A definition whose kind is built into the simulator with the same group and storage
version (the external-snapshotter kinds) is adopted: the objects stay where the
simulator's own controllers read them, and from then on they follow the definition's
schema, columns and subresources. Any other clash of kind names cannot be served here
(the store keys objects by kind): the definition is kept with NamesAccepted False.
"""

from __future__ import annotations

import threading
from datetime import datetime

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.api.model import (
    KINDS,
    KindInfo,
    Resource,
    forget_custom_kind,
    register_custom_kind,
)
from kubelet_sim.apiserver.crd import schema as structural
from kubelet_sim.apiserver.crd.definition import (
    KIND,
    CustomKind,
    custom_kind,
    definition_errors,
    set_defaults,
    set_status,
    validate_definition,
)
from kubelet_sim.apiserver.watch import DELETED


def kind_facts(served: CustomKind) -> KindInfo:
    """The object model's facts of a custom kind (stored in its storage version)."""
    status = any(v.status for v in served.versions)
    return KindInfo(served.kind, f"{served.group}/{served.storage_version.name}",
                    served.namespaced, status, {} if status else None, has_spec=False,
                    custom=True)


def adopts_builtin(served: CustomKind) -> bool:
    """Whether the definition describes a kind built into the simulator, as stored."""
    builtin = KINDS.get(served.kind)
    return builtin is not None and \
        builtin.api_version == f"{served.group}/{served.storage_version.name}"


def register_stored_definition(crd: Resource) -> None:
    """Make the kind of a stored, established definition known to the object model (its
    objects are read back from disk after it)."""
    if definition_errors(crd) or not any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in crd.status.get("conditions") or []):
        return
    served = custom_kind(crd)
    if not adopts_builtin(served):
        register_custom_kind(kind_facts(served))


class CustomResources:
    """The established custom kinds of one API server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_name: dict[str, CustomKind] = {}  # CRD name -> kind served

    # -- what is served --------------------------------------------------------------------
    def kinds(self) -> list[CustomKind]:
        with self._lock:
            return sorted(self._by_name.values(), key=lambda k: k.name)

    def by_kind(self, kind: str) -> CustomKind | None:
        with self._lock:
            return next((k for k in self._by_name.values() if k.kind == kind), None)

    def conflict(self, crd: Resource) -> str:
        """Why ``crd``'s names cannot be served here ("" when they can)."""
        spec = crd.spec
        kind = (spec.get("names") or {}).get("kind")
        group = spec.get("group")
        for other in self.kinds():
            if other.name == crd.name:
                continue
            if other.kind == kind:
                return f"{kind!r} is already served by {other.name}"
        builtin = KINDS.get(str(kind))
        if builtin is not None and kind != KIND:
            storage = next((v.get("name") for v in spec.get("versions") or []
                            if isinstance(v, dict) and v.get("storage")), "")
            if builtin.api_version != f"{group}/{storage}":
                return (f"{kind!r} is built into this API server as {builtin.api_version}; "
                        "the simulator stores objects by kind name")
        return ""

    # -- admission -------------------------------------------------------------------------
    def prepare(self, obj: Resource, now: datetime) -> Resource:
        """Before ``obj`` is stored: a definition defaulted, validated and given its
        status; a custom resource pruned, defaulted and validated against its schema."""
        if obj.kind == KIND:
            set_defaults(obj)
            validate_definition(obj)
            set_status(obj, now, self.conflict(obj))
            return obj
        served = self.by_kind(obj.kind)
        if served is None:
            return obj
        version = served.storage_version
        doc = obj.to_dict()
        structural.prune(doc, version.schema)
        structural.apply_defaults(doc, version.schema)
        errors = structural.validate(doc, version.schema)
        if errors:
            raise InvalidObject(served.qualified_kind, obj.name, errors)
        return Resource.from_dict(doc)

    # -- following the definitions -----------------------------------------------------------
    def on_definition(self, event_type: str, crd: Resource) -> None:
        """Called inside every commit of a CustomResourceDefinition (the store's feed)."""
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in crd.status.get("conditions") or [])
        with self._lock:
            before = self._by_name.pop(crd.name, None)
        if before is not None and not adopts_builtin(before):
            forget_custom_kind(before.kind)
        if event_type == DELETED or not established or definition_errors(crd):
            return
        served = custom_kind(crd)
        if crd.metadata.deletion_timestamp:
            return  # terminating: its objects are being removed, nothing new is served
        if not adopts_builtin(served):
            register_custom_kind(kind_facts(served))
        with self._lock:
            self._by_name[crd.name] = served
