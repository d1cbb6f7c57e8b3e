"""Kubernetes-style YAML manifests: load, validate, apply.

:func:`load_manifests` reads a multi-document YAML stream (``---`` separated, ``kind:
List`` expanded) into :class:`~kubelet_sim.api.model.Resource` objects. Every document is
checked the way the API server would check it (defaulting, then validation, on a copy);
a problem raises :class:`ManifestError` naming the source, the document number, the
object and the field path, e.g.::

    pod.yaml: document 2 (Pod default/web): spec.containers[0].image: Required value

Like Kubernetes' strict decoding, a mapping with a duplicate key is an error.
Storage quantities (``10Gi``, ``500M``, ``1.5Gi``) are parsed exactly, as
``resource.Quantity`` parses them (:mod:`kubelet_sim.api.quantity`).

:func:`apply_manifests` creates each object or, when it exists, replaces its labels,
annotations and desired state (a simplified ``kubectl apply``: no three-way merge).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kubelet_sim.api.errors import AlreadyExists, Invalid
from kubelet_sim.api.model import Resource, kind_info
from kubelet_sim.apiserver.defaulting import apply_defaults
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.validation import validate
from kubelet_sim.client.retry import retry_on_conflict


class ManifestError(ValueError):
    """A manifest that cannot become an API object. ``document`` counts from 1."""

    def __init__(
        self, source: str, document: int | None, what: str, field: str, message: str
    ) -> None:
        where = f"{source}: document {document}" if document else source
        label = f" ({what})" if what else ""
        prefix = f"{field}: " if field else ""
        super().__init__(f"{where}{label}: {prefix}{message}")
        self.source, self.document, self.what = source, document, what
        self.field, self.detail = field, message


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark,
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def load_manifests(text: str, source: str = "<string>") -> list[Resource]:
    """Parse and validate every document of ``text``; empty documents are skipped."""
    try:
        documents = list(yaml.load_all(text, Loader=_StrictLoader))  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(source, None, "", "", f"invalid YAML: {at}{problem}") from None
    objects: list[Resource] = []
    for index, doc in enumerate(documents, start=1):
        if doc is None:
            continue
        for item_path, raw in _expand_lists(doc):
            objects.append(_to_resource(raw, source, index, item_path))
    return objects


def load_file(path: str | Path) -> list[Resource]:
    """:func:`load_manifests` on a file's contents; the file name is the source."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(str(p), None, "", "", f"cannot read: {exc.strerror}") from None
    return load_manifests(text, source=str(p))


def apply_manifests(api: APIServer, objects: Iterable[Resource]) -> list[Resource]:
    """Create each object, or replace the existing one's labels, annotations and desired
    state (spec, or the top-level fields of StorageClass-like kinds). Status in a
    manifest is ignored, as the API server ignores it; server-set metadata (uid,
    resourceVersion, creationTimestamp) is dropped. Returns the stored objects."""
    stored: list[Resource] = []
    for obj in objects:
        fresh = obj.copy()
        # Output of ``kubectl get -o yaml`` carries server-set fields a create refuses.
        fresh.metadata.resource_version = ""
        fresh.metadata.uid = ""
        fresh.metadata.creation_timestamp = None
        try:
            stored.append(api.create(fresh))
        except AlreadyExists:
            stored.append(retry_on_conflict(lambda o=obj: _replace(api, o)))  # type: ignore[misc]
    return stored


def _replace(api: APIServer, obj: Resource) -> Resource:
    current = api.get(obj.kind, obj.name, obj.namespace)
    current.metadata.labels = dict(obj.metadata.labels)
    current.metadata.annotations = dict(obj.metadata.annotations)
    current.spec = obj.copy().spec
    current.body = obj.copy().body
    if not kind_info(obj.kind).status_subresource and obj.status:
        current.status = obj.copy().status
    return api.update(current)


def _expand_lists(doc: Any) -> list[tuple[str, Any]]:
    """A ``kind: List`` document becomes its items; anything else stays as is."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            return [("items", items)]
        return [(f"items[{i}]", item) for i, item in enumerate(items)]
    return [("", doc)]


def _to_resource(raw: Any, source: str, index: int, item_path: str) -> Resource:
    what = _describe(raw)
    prefix = f"{item_path}." if item_path else ""
    if not isinstance(raw, dict):
        raise ManifestError(source, index, what, item_path, "a document must be a mapping")
    try:
        obj = Resource.from_dict(raw)
        if kind_info(obj.kind).namespaced and not obj.metadata.namespace:
            obj.metadata.namespace = "default"  # as kubectl fills in the current namespace
        checked = obj.copy()
        apply_defaults(checked)
        if not checked.metadata.name and checked.metadata.generate_name:
            checked.metadata.name = checked.metadata.generate_name + "x"
        validate(checked)
    except Invalid as exc:
        raise ManifestError(source, index, what, prefix + exc.field, exc.detail) from None
    return obj


def _describe(raw: Any) -> str:
    if not isinstance(raw, dict):
        return ""
    kind = raw.get("kind") or "<no kind>"
    meta_raw = raw.get("metadata")
    meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
    name = meta.get("name") or meta.get("generateName") or "<no name>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
