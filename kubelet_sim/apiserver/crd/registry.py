"""The custom kinds one API server serves: kept from the CustomResourceDefinitions it
stores (every commit of one updates it), and the admission of custom resources against
their definition's schema (prune, default, validate) before they are stored.

Each custom kind is stored under ``<Kind>.<group>``, so definitions of the same kind in
different groups are all served; names conflict only within a group, as apiextensions'
naming controller decides (:mod:`kubelet_sim.apiserver.crd.naming`). A definition whose
kind is built into the simulator with the same group and storage version (the
external-snapshotter kinds) is adopted: the objects stay where the simulator's own
controllers read them, and from then on they follow the definition's schema, columns and
subresources. A definition of a built-in kind in the built-in kind's group but another
storage version cannot be served here and is kept with NamesAccepted False.
"""

from __future__ import annotations

import threading
from datetime import datetime

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.api.model import (
    JSON,
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
    is_served,
    set_defaults,
    set_status,
    validate_definition,
)
from kubelet_sim.apiserver.crd.naming import NamesDecision, NamesInUse, accept_names
from kubelet_sim.apiserver.watch import DELETED


def kind_facts(served: CustomKind) -> KindInfo:
    """The object model's facts of a custom kind (stored in its storage version)."""
    status = any(v.status for v in served.versions)
    return KindInfo(served.store_kind, f"{served.group}/{served.storage_version.name}",
                    served.namespaced, status, {} if status else None, has_spec=False,
                    custom=True)


def register_stored_definition(crd: Resource) -> None:
    """Make the kind of a stored, established definition known to the object model (its
    objects are read back from disk after it)."""
    if definition_errors(crd) or not is_served(crd):
        return
    served = custom_kind(crd)
    if not served.adopts_builtin:
        register_custom_kind(kind_facts(served))


class CustomResources:
    """The established custom kinds of one API server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_name: dict[str, CustomKind] = {}  # CRD name -> kind served
        # CRD name -> (group, acceptedNames) of every stored definition, served or not
        self._accepted: dict[str, tuple[str, JSON]] = {}

    # -- what is served --------------------------------------------------------------------
    def kinds(self) -> list[CustomKind]:
        with self._lock:
            return sorted(self._by_name.values(), key=lambda k: k.name)

    def by_store_kind(self, store_kind: str) -> CustomKind | None:
        """The served kind whose objects the store keeps under ``store_kind``."""
        with self._lock:
            return next((k for k in self._by_name.values() if k.store_kind == store_kind),
                        None)

    def names_decision(self, crd: Resource) -> NamesDecision:
        """Which of ``crd``'s names can be accepted (the naming controller's decision),
        and the one clash this simulator cannot serve: a built-in kind redefined in its own
        group with another storage version."""
        group = crd.spec.get("group")
        with self._lock:
            others = [names for name, (g, names) in self._accepted.items()
                      if g == group and name != crd.name]
        decision = accept_names(crd, NamesInUse.of(others))
        kind = (crd.spec.get("names") or {}).get("kind")
        builtin = KINDS.get(str(kind))
        if builtin is not None and kind != KIND and \
                builtin.api_version.rpartition("/")[0] == group:
            storage = next((v.get("name") for v in crd.spec.get("versions") or []
                            if isinstance(v, dict) and v.get("storage")), "")
            if builtin.api_version != f"{group}/{storage}":
                decision.accepted["kind"] = ""
                decision.reason = "KindConflict"
                decision.message = (f"{kind!r} is built into this API server as "
                                    f"{builtin.api_version}; the simulator serves it only in "
                                    "that storage version")
        return decision

    # -- admission -------------------------------------------------------------------------
    def prepare(self, obj: Resource, now: datetime) -> Resource:
        """Before ``obj`` is stored: a definition defaulted, validated and given its
        status; a custom resource pruned, defaulted and validated against its schema."""
        if obj.kind == KIND:
            set_defaults(obj)
            validate_definition(obj)
            set_status(obj, now, self.names_decision(obj))
            return obj
        served = self.by_store_kind(obj.kind)
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
        with self._lock:
            before = self._by_name.pop(crd.name, None)
            if event_type == DELETED:
                self._accepted.pop(crd.name, None)
            else:
                self._accepted[crd.name] = (str(crd.spec.get("group") or ""),
                                            dict(crd.status.get("acceptedNames") or {}))
        if before is not None and not before.adopts_builtin:
            forget_custom_kind(before.store_kind)
        if event_type == DELETED or not is_served(crd) or definition_errors(crd):
            return
        served = custom_kind(crd)
        if crd.metadata.deletion_timestamp:
            return  # terminating: its objects are being removed, nothing new is served
        if not served.adopts_builtin:
            register_custom_kind(kind_facts(served))
        with self._lock:
            self._by_name[crd.name] = served
