"""A CustomResourceDefinition (``apiextensions.k8s.io/v1``) read into what serving it
needs, with apiextensions' defaulting, its validation of the essentials and the status
its controllers set (NamesAccepted, Established, acceptedNames, storedVersions).

Validation answers 422 with every problem as a cause, as kube-apiserver words them:
the name must be ``<plural>.<group>``, the group a domain with a dot, scope Namespaced or
Cluster, at least one version, exactly one storage version, every version a schema
(structural: :func:`kubelet_sim.apiserver.crd.schema.structural_errors`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.model import JSON, Resource, set_condition
from kubelet_sim.apiserver.crd.schema import Schema, shown_value, structural_errors

KIND = "CustomResourceDefinition"
GROUP = "apiextensions.k8s.io"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KIND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")  # a Go identifier, as kinds are


@dataclass(frozen=True)
class CustomVersion:
    """One version of a custom kind."""

    name: str
    served: bool
    storage: bool
    schema: Schema
    columns: tuple[JSON, ...]  # additionalPrinterColumns
    status: bool  # the status subresource
    scale: JSON | None  # the scale subresource's paths
    deprecated: bool = False
    deprecation_warning: str | None = None


@dataclass(frozen=True)
class CustomKind:
    """A custom kind as one CustomResourceDefinition defines it."""

    name: str  # the CRD's name, <plural>.<group>
    group: str
    kind: str
    list_kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    versions: tuple[CustomVersion, ...] = field(default_factory=tuple)

    @property
    def storage_version(self) -> CustomVersion:
        return next(v for v in self.versions if v.storage)

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}"


def set_defaults(crd: Resource) -> None:
    """apiextensions' defaults: singular and listKind from the kind, conversion None."""
    names = crd.spec.setdefault("names", {})
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
    conversion = crd.spec.setdefault("conversion", {})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")


def validate_definition(crd: Resource) -> None:
    """Raise :class:`InvalidObject` with every problem of the definition."""
    errors = definition_errors(crd)
    if errors:
        raise InvalidObject(f"{KIND}.{GROUP}", crd.name, errors)


def definition_errors(crd: Resource) -> list[FieldError]:
    spec = crd.spec
    errors: list[FieldError] = []

    def invalid(path: str, value: Any, text: str) -> None:
        errors.append(FieldError("FieldValueInvalid", path,
                                 f"Invalid value: {shown_value(value)}: {text}"))

    def required(path: str, text: str = "") -> None:
        errors.append(FieldError("FieldValueRequired", path,
                                 "Required value" + (f": {text}" if text else "")))

    group = spec.get("group")
    names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
    plural = names.get("plural")
    if not group:
        required("spec.group")
    elif not isinstance(group, str) or not _DNS_SUBDOMAIN.fullmatch(group):
        invalid("spec.group", group, "a lowercase RFC 1123 subdomain must consist of lower "
                "case alphanumeric characters, '-' or '.'")
    elif "." not in group:
        invalid("spec.group", group, "should be a domain with at least one dot")
    if plural and group and crd.name != f"{plural}.{group}":
        invalid("metadata.name", crd.name, 'must be spec.names.plural+"."+spec.group')
    for key in ("plural", "singular", "kind", "listKind"):
        value = names.get(key)
        path = f"spec.names.{key}"
        if not value:
            required(path)
        elif not isinstance(value, str):
            invalid(path, value, "must be a string")
        elif key in ("kind", "listKind"):
            if not _KIND_NAME.fullmatch(value):
                invalid(path, value, "may have mixed case, but should otherwise match: "
                        "[a-z0-9]([-a-z0-9]*[a-z0-9])?")
        elif not _DNS_LABEL.fullmatch(value):
            invalid(path, value, "a lowercase RFC 1123 label must consist of lower case "
                    "alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character")
    for i, short in enumerate(names.get("shortNames") or []):
        if not isinstance(short, str) or not _DNS_LABEL.fullmatch(short):
            invalid(f"spec.names.shortNames[{i}]", short, "a lowercase RFC 1123 label "
                    "must consist of lower case alphanumeric characters or '-'")
    scope = spec.get("scope")
    if not scope:
        required("spec.scope")
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(FieldError("FieldValueNotSupported", "spec.scope",
                                 f"Unsupported value: {shown_value(scope)}: supported values: "
                                 '"Cluster", "Namespaced"'))
    errors += _version_errors(spec.get("versions"))
    strategy = (spec.get("conversion") or {}).get("strategy")
    if strategy not in (None, "None", "Webhook"):
        errors.append(FieldError("FieldValueNotSupported", "spec.conversion.strategy",
                                 f"Unsupported value: {shown_value(strategy)}: supported "
                                 'values: "None", "Webhook"'))
    return errors


def _version_errors(versions: Any) -> list[FieldError]:
    if not isinstance(versions, list) or not versions:
        return [FieldError("FieldValueRequired", "spec.versions",
                           "Required value: must have exactly one version marked as storage "
                           "version")]
    errors: list[FieldError] = []
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errors.append(FieldError("FieldValueInvalid", "spec.versions",
                                 f"Invalid value: {shown_value(versions)[:60]}: must have "
                                 "exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") for v in versions):
        errors.append(FieldError("FieldValueInvalid", "spec.versions",
                                 "Invalid value: must have at least one version marked as "
                                 "served"))
    seen: set[str] = set()
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            errors.append(FieldError("FieldValueInvalid", path, "Invalid value: must be an "
                                     "object"))
            continue
        name = version.get("name")
        if not name:
            errors.append(FieldError("FieldValueRequired", f"{path}.name", "Required value"))
        elif not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
            errors.append(FieldError("FieldValueInvalid", f"{path}.name",
                                     f"Invalid value: {shown_value(name)}: a DNS-1035 label "
                                     "must consist of lower case alphanumeric characters or "
                                     "'-'"))
        elif name in seen:
            errors.append(FieldError("FieldValueInvalid", f"{path}.name",
                                     f"Invalid value: {shown_value(name)}: must be unique"))
        else:
            seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        schema_path = f"{path}.schema.openAPIV3Schema"
        if schema is None:
            errors.append(FieldError("FieldValueRequired", schema_path,
                                     "Required value: schemas are required"))
        else:
            errors += structural_errors(schema, schema_path)
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            cpath = f"{path}.additionalPrinterColumns[{j}]"
            if not isinstance(column, dict):
                continue
            for key in ("name", "type", "jsonPath"):
                if not column.get(key):
                    errors.append(FieldError("FieldValueRequired", f"{cpath}.{key}",
                                             "Required value"))
            typ = column.get("type")
            if typ and typ not in ("integer", "number", "string", "boolean", "date"):
                errors.append(FieldError("FieldValueNotSupported", f"{cpath}.type",
                                         f"Unsupported value: {shown_value(typ)}: supported "
                                         'values: "boolean", "date", "integer", "number", '
                                         '"string"'))
        scale = (version.get("subresources") or {}).get("scale")
        if isinstance(scale, dict):
            for key in ("specReplicasPath", "statusReplicasPath"):
                if not scale.get(key):
                    errors.append(FieldError("FieldValueRequired",
                                             f"{path}.subresources.scale.{key}",
                                             "Required value"))
    return errors


def custom_kind(crd: Resource) -> CustomKind:
    """What a valid definition serves."""
    spec, names = crd.spec, crd.spec["names"]
    versions = []
    for v in spec["versions"]:
        subresources = v.get("subresources") or {}
        versions.append(CustomVersion(
            name=v["name"], served=bool(v.get("served")), storage=bool(v.get("storage")),
            schema=(v.get("schema") or {}).get("openAPIV3Schema") or {},
            columns=tuple(v.get("additionalPrinterColumns") or ()),
            status="status" in subresources, scale=subresources.get("scale"),
            deprecated=bool(v.get("deprecated")),
            deprecation_warning=v.get("deprecationWarning")))
    return CustomKind(
        name=crd.name, group=spec["group"], kind=names["kind"],
        list_kind=names.get("listKind") or f"{names['kind']}List", plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        namespaced=spec["scope"] == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()), versions=tuple(versions))


def set_status(crd: Resource, now: datetime, conflict: str = "") -> None:
    """The status apiextensions' naming and establishing controllers converge to:
    acceptedNames, NamesAccepted and Established (False with ``conflict``'s reason when
    the names cannot be served), storedVersions (every storage version ever used)."""
    names = crd.spec.get("names") or {}
    stored = list(crd.status.get("storedVersions") or [])
    for version in crd.spec.get("versions") or []:
        if isinstance(version, dict) and version.get("storage") and \
                version.get("name") not in stored:
            stored.append(version["name"])
    if conflict:
        set_condition(crd, {"type": "NamesAccepted", "status": "False",
                            "reason": "KindConflict", "message": conflict}, now)
        set_condition(crd, {"type": "Established", "status": "False",
                            "reason": "NotAccepted", "message": "not all names are accepted"},
                      now)
        crd.status.setdefault("acceptedNames", {"plural": "", "kind": ""})
    else:
        set_condition(crd, {"type": "NamesAccepted", "status": "True",
                            "reason": "NoConflicts", "message": "no conflicts found"}, now)
        set_condition(crd, {"type": "Established", "status": "True",
                            "reason": "InitialNamesAccepted",
                            "message": "the initial names have been accepted"}, now)
        crd.status["acceptedNames"] = {k: v for k, v in names.items()
                                       if k in ("plural", "singular", "shortNames", "kind",
                                                "listKind", "categories")}
    crd.status["storedVersions"] = stored
