"""A CustomResourceDefinition (``apiextensions.k8s.io/v1``) read into what serving it
needs, with apiextensions' defaulting, its validation of the essentials and the status
its controllers set (NamesAccepted, Established, acceptedNames, storedVersions).

Validation answers 422 with every problem as a cause, as kube-apiserver words and
orders them: the name must be ``<plural>.<group>``, the group a domain with a dot, scope
Namespaced or Cluster, exactly one storage version, names that are DNS-1035 labels, every
version a schema following :mod:`kubelet_sim.apiserver.crd.schema_rules`, printer columns
and scale paths well formed, the API approval annotation in a protected group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.label_rules import dns1035_label_errors, dns_subdomain_errors
from kubelet_sim.api.model import JSON, KINDS, Resource, custom_store_kind, set_condition
from kubelet_sim.apiserver.crd.internal_form import internal_versions
from kubelet_sim.apiserver.crd.naming import NamesDecision
from kubelet_sim.apiserver.crd.schema import Schema, shown_value
from kubelet_sim.apiserver.crd.schema_rules import schema_errors

KIND = "CustomResourceDefinition"
GROUP = "apiextensions.k8s.io"
APPROVAL = "api-approved.kubernetes.io"
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


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

    @property
    def adopts_builtin(self) -> bool:
        """Whether it describes a kind built into the simulator, as stored (the
        external-snapshotter kinds): its objects then stay under the built-in kind."""
        builtin = KINDS.get(self.kind)
        return builtin is not None and \
            builtin.api_version == f"{self.group}/{self.storage_version.name}"

    @property
    def store_kind(self) -> str:
        """The key the store keeps its objects under."""
        return self.kind if self.adopts_builtin else custom_store_kind(self.kind, self.group)


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
    """Every problem of a definition in the order apiextensions-apiserver reports them:
    the name, the group and scope, the schemas, each version, the names, what the v1 form
    holds once for every version (``spec.validation``, ``spec.subresources``,
    ``spec.additionalPrinterColumns`` when all versions carry the same), the conversion and
    the API approval of a protected group."""
    spec = crd.spec
    errors: list[FieldError] = []
    group = spec.get("group")
    names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
    plural = names.get("plural")
    wanted_name = f"{plural or ''}.{group or ''}"
    if crd.name != wanted_name:
        errors.append(_invalid("metadata.name", crd.name,
                               'must be spec.names.plural+"."+spec.group'))
    if not group:
        errors.append(_required("spec.group"))
    elif not isinstance(group, str) or dns_subdomain_errors(group):
        errors.append(_invalid("spec.group", group,
                               ",".join(dns_subdomain_errors(str(group)))))
    elif "." not in group:
        errors.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errors.append(_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(FieldError("FieldValueNotSupported", "spec.scope",
                                 f"Unsupported value: {shown_value(scope)}: supported values: "
                                 '"Cluster", "Namespaced"'))
    errors += _version_errors(spec.get("versions"))
    errors += _names_errors(names)
    errors += _shared_errors(spec.get("versions"))
    errors += _conversion_errors(spec.get("conversion"))
    if spec.get("preserveUnknownFields") is True:
        errors.append(_invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                               "x-kubernetes-preserve-unknown-fields to true in "
                               "spec.versions[*].schema instead"))
    errors += _approval_errors(crd, str(group or ""))
    return errors


def _invalid(path: str, value: Any, text: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, f"Invalid value: {shown_value(value)}: {text}")


def _required(path: str, text: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, "Required value" + (f": {text}" if text else ""))


def _identical(versions: list[Any], key: str) -> bool:
    """Whether every version carries the same ``key`` (the v1 form then holds it once)."""
    values = [v.get(key) if isinstance(v, dict) else None for v in versions]
    return all(value == values[0] for value in values)


def _status_enabled(version: Any) -> bool:
    return isinstance(version, dict) and \
        "status" in (version.get("subresources") or {})


def _version_errors(versions: Any) -> list[FieldError]:
    if not isinstance(versions, list) or not versions:
        return [FieldError("FieldValueInvalid", "spec.versions", "Invalid value: null: must "
                           "have exactly one version marked as storage version")]
    errors: list[FieldError] = []
    for i, version in enumerate(versions):
        if isinstance(version, dict) and \
                (version.get("schema") or {}).get("openAPIV3Schema") is None:
            errors.append(_required(f"spec.versions[{i}].schema.openAPIV3Schema"))
    shared_schema = _identical(versions, "schema")
    shared_subresources = _identical(versions, "subresources")
    shared_columns = _identical(versions, "additionalPrinterColumns")
    names: list[Any] = []
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            errors.append(_invalid(path, version, "must be an object"))
            continue
        name = version.get("name")
        names.append(name)
        if not isinstance(name, str) or dns1035_label_errors(name):
            errors.append(_invalid(f"{path}.name", name or "",
                                   ",".join(dns1035_label_errors(str(name or "")))))
        warning = version.get("deprecationWarning")
        if warning is not None and not version.get("deprecated"):
            errors.append(_invalid(f"{path}.deprecationWarning", warning,
                                   "can only be set for deprecated versions"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not shared_schema and schema is not None:
            errors += schema_errors(schema, f"{path}.schema.openAPIV3Schema",
                                    _status_enabled(version))
        if not shared_subresources:
            errors += _subresource_errors(version.get("subresources"), f"{path}.subresources")
        if not shared_columns:
            for j, column in enumerate(version.get("additionalPrinterColumns") or []):
                errors += _column_errors(column, f"{path}.additionalPrinterColumns[{j}]")
    shown = internal_versions(versions)
    if len(set(map(str, names))) != len(names):
        errors.append(FieldError("FieldValueInvalid", "spec.versions", f"Invalid value: {shown}"
                                 ": must contain unique version names"))
    if sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        errors.append(FieldError("FieldValueInvalid", "spec.versions", f"Invalid value: {shown}"
                                 ": must have exactly one version marked as storage version"))
    return errors


def _names_errors(names: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errors.append(_required(f"spec.names.{key}"))
    for key in ("plural", "singular", "kind", "listKind"):
        value = names.get(key)
        if not value:
            continue
        problems = dns1035_label_errors(str(value).lower() if key in ("kind", "listKind")
                                        else str(value))
        if problems:
            prefix = "may have mixed case, but should otherwise match: " \
                if key in ("kind", "listKind") else ""
            errors.append(_invalid(f"spec.names.{key}", value, prefix + ",".join(problems)))
    for i, short in enumerate(names.get("shortNames") or []):
        if dns1035_label_errors(str(short)):
            errors.append(_invalid(f"spec.names.shortNames[{i}]", short,
                                   ",".join(dns1035_label_errors(str(short)))))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errors.append(_invalid("spec.names.listKind", names["listKind"],
                               "kind and listKind may not be the same"))
    for i, category in enumerate(names.get("categories") or []):
        if dns1035_label_errors(str(category)):
            errors.append(_invalid(f"spec.names.categories[{i}]", category,
                                   ",".join(dns1035_label_errors(str(category)))))
    return errors


def _shared_errors(versions: Any) -> list[FieldError]:
    """The problems of what every version carries alike, at the v1 form's top-level paths."""
    if not isinstance(versions, list) or not versions or \
            not all(isinstance(v, dict) for v in versions):
        return []
    errors: list[FieldError] = []
    first = versions[0]
    schema = (first.get("schema") or {}).get("openAPIV3Schema")
    if _identical(versions, "schema") and schema is not None:
        errors += schema_errors(schema, "spec.validation.openAPIV3Schema",
                                any(_status_enabled(v) for v in versions))
    if _identical(versions, "subresources"):
        errors += _subresource_errors(first.get("subresources"), "spec.subresources")
    if _identical(versions, "additionalPrinterColumns"):
        for j, column in enumerate(first.get("additionalPrinterColumns") or []):
            errors += _column_errors(column, f"spec.additionalPrinterColumns[{j}]")
    return errors


def _simple_path_errors(value: str, path: str) -> list[FieldError]:
    if not value:
        return [_invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [_invalid(path, value, "must be a simple json path starting with .")]
    return []


def _subresource_errors(subresources: Any, path: str) -> list[FieldError]:
    scale = (subresources or {}).get("scale") if isinstance(subresources, dict) else None
    if not isinstance(scale, dict):
        return []
    errors: list[FieldError] = []
    for key, under in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = scale.get(key)
        at = f"{path}.scale.{key}"
        if not value:
            errors.append(_required(at))
        elif problems := _simple_path_errors(str(value), at):
            errors += problems
        elif not str(value).startswith(under):
            errors.append(_invalid(at, value, f"should be a json path under {under[:-1]}"))
    selector = scale.get("labelSelectorPath")
    if selector:
        at = f"{path}.scale.labelSelectorPath"
        if problems := _simple_path_errors(str(selector), at):
            errors += problems
        elif not str(selector).startswith((".spec.", ".status.")):
            errors.append(_invalid(at, selector,
                                   "should be a json path under either .spec or .status"))
    return errors


def _column_errors(column: Any, path: str) -> list[FieldError]:
    if not isinstance(column, dict):
        return [_invalid(path, column, "must be an object")]
    errors: list[FieldError] = []
    if not column.get("name"):
        errors.append(_required(f"{path}.name"))
    typ = column.get("type")
    if not typ:
        errors.append(_required(f"{path}.type", f"must be one of {','.join(_COLUMN_TYPES)}"))
    elif typ not in _COLUMN_TYPES:
        errors.append(_invalid(f"{path}.type", typ, f"must be one of {','.join(_COLUMN_TYPES)}"))
    fmt = column.get("format")
    if fmt and fmt not in _COLUMN_FORMATS:
        errors.append(_invalid(f"{path}.format", fmt,
                               f"must be one of {','.join(_COLUMN_FORMATS)}"))
    json_path = column.get("jsonPath")
    if not json_path:
        errors.append(_required(f"{path}.JSONPath"))
    else:
        errors += _simple_path_errors(str(json_path), f"{path}.JSONPath")
    return errors


def _conversion_errors(conversion: Any) -> list[FieldError]:
    """The conversion as apiextensions checks it, at the paths of its internal form (the
    webhook's clientConfig and review versions one level up)."""
    if not isinstance(conversion, dict):
        return []
    errors: list[FieldError] = []
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    found = conversion.get("webhook")
    webhook: dict[str, Any] = found if isinstance(found, dict) else {}
    config = webhook.get("clientConfig")
    reviews = webhook.get("conversionReviewVersions") or []
    if not strategy:
        errors.append(_required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errors.append(FieldError("FieldValueNotSupported", f"{path}.strategy",
                                 f"Unsupported value: {shown_value(strategy)}: supported "
                                 'values: "None", "Webhook"'))
    if strategy == "Webhook":
        if not isinstance(config, dict):
            errors.append(_required(f"{path}.webhookClientConfig",
                                    "required when strategy is set to Webhook"))
        elif ("url" in config) == ("service" in config):
            errors.append(_required(f"{path}.webhookClientConfig",
                                    "exactly one of url or service is required"))
        if not reviews:
            errors.append(_required(f"{path}.conversionReviewVersions"))
        else:
            seen: set[str] = set()
            for i, version in enumerate(reviews):
                if version in seen:
                    errors.append(_invalid(f"{path}.conversionReviewVersions[{i}]", version,
                                           "duplicate version"))
                    continue
                seen.add(str(version))
                errors += [_invalid(f"{path}.conversionReviewVersions[{i}]", version, text)
                           for text in dns1035_label_errors(str(version))]
            if not seen & {"v1", "v1beta1"}:
                errors.append(_invalid(f"{path}.conversionReviewVersions", reviews,
                                       "must include at least one of v1, v1beta1"))
    else:
        if config is not None:
            errors.append(_forbidden(f"{path}.webhookClientConfig",
                                     "should not be set when strategy is not set to Webhook"))
        if reviews:
            errors.append(_forbidden(f"{path}.conversionReviewVersions",
                                     "should not be set when strategy is not set to Webhook"))
    return errors


def _forbidden(path: str, text: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, f"Forbidden: {text}")


def _approval_errors(crd: Resource, group: str) -> list[FieldError]:
    """A group under k8s.io or kubernetes.io needs the API approval annotation."""
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io",
                                                                    ".kubernetes.io"))):
        return []
    value = crd.metadata.annotations.get(APPROVAL, "")
    path = f"metadata.annotations[{APPROVAL}]"
    if not value:
        return [_required(path, f'protected groups must have approval annotation "{APPROVAL}", '
                          "see https://github.com/kubernetes/enhancements/pull/1111")]
    if value.startswith("unapproved"):
        return []
    url = urlsplit(value) if value.startswith("/") or "://" in value else None
    if url is not None and url.scheme and url.netloc:
        return []
    return [_invalid(path, value, f'protected groups must have approval annotation "{APPROVAL}" '
                     'with either a URL or a reason starting with "unapproved", see '
                     "https://github.com/kubernetes/enhancements/pull/1111")]


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


def set_status(crd: Resource, now: datetime, names: NamesDecision) -> None:
    """The status apiextensions' naming and establishing controllers converge to:
    acceptedNames and NamesAccepted as ``names`` decided; Established True once every name
    is accepted (False, NotAccepted, while a name conflicts and it never was);
    storedVersions (every storage version ever used)."""
    stored = list(crd.status.get("storedVersions") or [])
    for version in crd.spec.get("versions") or []:
        if isinstance(version, dict) and version.get("storage") and \
                version.get("name") not in stored:
            stored.append(version["name"])
    crd.status["acceptedNames"] = names.accepted
    if names.reason:
        set_condition(crd, {"type": "NamesAccepted", "status": "False",
                            "reason": names.reason, "message": names.message}, now)
        if not is_established(crd):
            set_condition(crd, {"type": "Established", "status": "False",
                                "reason": "NotAccepted",
                                "message": "not all names are accepted"}, now)
    else:
        set_condition(crd, {"type": "NamesAccepted", "status": "True",
                            "reason": "NoConflicts", "message": "no conflicts found"}, now)
        if not is_established(crd):
            set_condition(crd, {"type": "Established", "status": "True",
                                "reason": "InitialNamesAccepted",
                                "message": "the initial names have been accepted"}, now)
    crd.status["storedVersions"] = stored


def is_established(crd: Resource) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in crd.status.get("conditions") or [])


def is_served(crd: Resource) -> bool:
    """Established with every name accepted: what the simulator serves (a definition
    whose names were changed into a conflict is no longer served here, where
    kube-apiserver keeps serving the names accepted before)."""
    return is_established(crd) and any(
        c.get("type") == "NamesAccepted" and c.get("status") == "True"
        for c in crd.status.get("conditions") or [])
