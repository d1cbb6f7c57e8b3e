"""The cluster's default StorageClass, as kube-apiserver's DefaultStorageClass admission
plugin and the PV controller pick it: the classes annotated
``storageclass.kubernetes.io/is-default-class: "true"`` (or the beta annotation), the
newest one when there are several (equal creation times: the first by name)."""

from __future__ import annotations

from collections.abc import Iterable

from kubelet_sim.api.model import Resource

DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")


def is_default_class(storage_class: Resource) -> bool:
    annotations = storage_class.metadata.annotations
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)


def default_class(classes: Iterable[Resource]) -> Resource | None:
    defaults = [c for c in classes if is_default_class(c)]
    if not defaults:
        return None
    # RFC 3339 in UTC ("...Z") sorts as time does; newest first, then by name
    newest = max(c.metadata.creation_timestamp or "" for c in defaults)
    return min((c for c in defaults if (c.metadata.creation_timestamp or "") == newest),
               key=lambda c: c.name)


def set_default_class(claim: Resource, classes: Iterable[Resource]) -> bool:
    """DefaultStorageClass admission on a new claim: a claim that names no class
    (``storageClassName`` absent; ``""`` is a choice and stays) gets the default one's
    name. True when it did."""
    if claim.kind != "PersistentVolumeClaim" or claim.spec.get("storageClassName") is not None:
        return False
    chosen = default_class(classes)
    if chosen is None:
        return False
    claim.spec["storageClassName"] = chosen.name
    return True
