"""The RBAC kinds (rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding,
ClusterRoleBinding): stored, defaulted and validated as kube-apiserver does; the HTTP
front enforces them (:mod:`kubelet_sim.apiserver.rbac_authorizer`)."""

from __future__ import annotations

import json
from typing import Any

from kubelet_sim.api.errors import FieldError, Invalid, InvalidObject
from kubelet_sim.api.model import Resource

GROUP = "rbac.authorization.k8s.io"
KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")


def path_segment_errors(name: str) -> list[str]:
    """apimachinery's IsValidPathSegmentName: anything that is one URL path segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_name(name: Any) -> None:
    """An RBAC object's name: required, and one path segment (colons allowed)."""
    if not isinstance(name, str) or not name:
        raise Invalid("metadata.name", "Required value")
    for message in path_segment_errors(name):
        raise Invalid("metadata.name", f"Invalid value: {json.dumps(name)}: {message}")


def default_binding(binding: Resource) -> None:
    """``SetDefaults_RoleBinding``/``_Subject``: roleRef's and each user's or group's
    apiGroup is rbac.authorization.k8s.io, a ServiceAccount's the core group."""
    ref = binding.body.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in binding.body.get("subjects") or []:
        if isinstance(subject, dict) and "apiGroup" not in subject:
            if subject.get("kind") == "ServiceAccount":
                subject["apiGroup"] = ""
            elif subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = GROUP


def _quoted(value: Any) -> str:
    return json.dumps(value)


def _rules(obj: Resource, errors: list[FieldError]) -> None:
    for i, rule in enumerate(obj.body.get("rules") or []):
        path = f"rules[{i}]"
        if not isinstance(rule, dict):
            errors.append(FieldError("FieldValueInvalid", path, "Invalid value: must be an "
                                     "object"))
            continue
        if not rule.get("verbs"):
            errors.append(FieldError("FieldValueRequired", f"{path}.verbs",
                                     "Required value: verbs must contain at least one value"))
        if rule.get("nonResourceURLs"):
            if obj.kind == "Role":
                errors.append(FieldError(
                    "FieldValueInvalid", f"{path}.nonResourceURLs",
                    f"Invalid value: {_quoted(rule['nonResourceURLs'])}: namespaced rules "
                    "cannot apply to non-resource URLs"))
        elif not rule.get("apiGroups") and rule.get("resources"):
            errors.append(FieldError("FieldValueRequired", f"{path}.apiGroups",
                                     "Required value: resource rules must supply at least "
                                     "one api group"))


def _binding(obj: Resource, errors: list[FieldError]) -> None:
    ref = obj.body.get("roleRef")
    if not isinstance(ref, dict):
        ref = {}
    kinds = ("ClusterRole", "Role") if obj.kind == "RoleBinding" else ("ClusterRole",)
    if ref.get("apiGroup") != GROUP:
        errors.append(FieldError("FieldValueNotSupported", "roleRef.apiGroup",
                                 f"Unsupported value: {_quoted(ref.get('apiGroup', ''))}: "
                                 f"supported values: \"{GROUP}\""))
    if ref.get("kind") not in kinds:
        listed = ", ".join(json.dumps(k) for k in kinds)
        errors.append(FieldError("FieldValueNotSupported", "roleRef.kind",
                                 f"Unsupported value: {_quoted(ref.get('kind', ''))}: "
                                 f"supported values: {listed}"))
    if not ref.get("name"):
        errors.append(FieldError("FieldValueRequired", "roleRef.name", "Required value"))
    for i, subject in enumerate(obj.body.get("subjects") or []):
        path = f"subjects[{i}]"
        if not isinstance(subject, dict):
            continue
        if not subject.get("name"):
            errors.append(FieldError("FieldValueRequired", f"{path}.name", "Required value"))
        if subject.get("kind") not in SUBJECT_KINDS:
            errors.append(FieldError(
                "FieldValueNotSupported", f"{path}.kind",
                f"Unsupported value: {_quoted(subject.get('kind', ''))}: supported values: "
                + ", ".join(json.dumps(k) for k in SUBJECT_KINDS)))
        elif subject["kind"] == "ServiceAccount" and obj.kind == "ClusterRoleBinding" \
                and not subject.get("namespace"):
            errors.append(FieldError("FieldValueRequired", f"{path}.namespace",
                                     "Required value"))


def validate_rbac(obj: Resource) -> None:
    errors: list[FieldError] = []
    if obj.kind in ("Role", "ClusterRole"):
        _rules(obj, errors)
    else:
        _binding(obj, errors)
    if errors:
        raise InvalidObject(f"{obj.kind}.{GROUP}", obj.name, errors)


def validate_binding_update(old: Resource, new: Resource) -> None:
    """A binding's roleRef never changes (delete and create it again)."""
    if old.body.get("roleRef") != new.body.get("roleRef"):
        ref = new.body.get("roleRef") or {}
        shown = (f"rbac.RoleRef{{APIGroup:{_quoted(ref.get('apiGroup', ''))}, "
                 f"Kind:{_quoted(ref.get('kind', ''))}, Name:{_quoted(ref.get('name', ''))}}}")
        raise InvalidObject(f"{new.kind}.{GROUP}", new.name, [FieldError(
            "FieldValueInvalid", "roleRef", f"Invalid value: {shown}: cannot change roleRef")])
