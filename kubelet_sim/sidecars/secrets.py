"""StorageClass secret parameters, as external-provisioner reads them.

The Secrets themselves are read from the API server (:mod:`kubelet_sim.client.secrets`);
this module names them as external-provisioner does: each secret family (provisioner,
controller-publish, node-stage, node-publish, controller-expand, node-expand,
controller-modify) is named by a
``csi.storage.k8s.io/<family>-secret-name`` / ``-namespace`` pair (or the deprecated
``csi<Family>SecretName`` keys, which are not stripped), falling back to the default
``csi.storage.k8s.io/secret-name`` / ``-namespace``; both halves must be given and
non-empty; values are templates with ``${pv.name}``, ``${pvc.namespace}``, ``${pvc.name}``
and (for names) ``${pvc.annotations['KEY']}``; the resolved namespace must be a DNS label and
the name a DNS subdomain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import JSON
from kubelet_sim.apiserver.validation import dns_label, dns_subdomain

PREFIX = "csi.storage.k8s.io/"
FSTYPE_KEY = PREFIX + "fstype"


@dataclass(frozen=True)
class SecretFamily:
    """One kind of secret a CSI call carries: the StorageClass parameter keys that name
    it, and where the PV records the reference."""

    name: str  # for messages, as upstream names them
    key: str  # "provisioner" -> csi.storage.k8s.io/provisioner-secret-name
    pv_field: str  # the PV's spec.csi field that records the reference ("" = none)
    deprecated: str = ""  # "Provisioner" -> csiProvisionerSecretName

    def parameter_keys(self, what: str) -> list[str]:
        """The StorageClass keys that may give the secret's ``what`` ("name" or
        "namespace"): the deprecated ``csi<Family>Secret<What>`` first, when the family has
        one, then ``csi.storage.k8s.io/[<key>-]secret-<what>``."""
        prefixed = f"{PREFIX}{self.key}-secret-{what}" if self.key else f"{PREFIX}secret-{what}"
        deprecated = [f"csi{self.deprecated}Secret{what.capitalize()}"] if self.deprecated else []
        return [*deprecated, prefixed]


PROVISIONER = SecretFamily("provisioner", "provisioner", "", "Provisioner")
CONTROLLER_PUBLISH = SecretFamily("controller publish", "controller-publish",
                                  "controllerPublishSecretRef", "ControllerPublish")
NODE_STAGE = SecretFamily("node stage", "node-stage", "nodeStageSecretRef", "NodeStage")
NODE_PUBLISH = SecretFamily("node publish", "node-publish", "nodePublishSecretRef", "NodePublish")
CONTROLLER_EXPAND = SecretFamily("controller expand", "controller-expand",
                                 "controllerExpandSecretRef")
NODE_EXPAND = SecretFamily("node expand", "node-expand", "nodeExpandSecretRef")
CONTROLLER_MODIFY = SecretFamily("controller modify", "controller-modify", "")
DEFAULT = SecretFamily("default", "", "")
FAMILIES = (PROVISIONER, CONTROLLER_PUBLISH, NODE_STAGE, NODE_PUBLISH, CONTROLLER_EXPAND,
            NODE_EXPAND, CONTROLLER_MODIFY)

KNOWN_PREFIXED_KEYS = frozenset(
    {FSTYPE_KEY} | {key for family in (*FAMILIES, DEFAULT) for what in ("name", "namespace")
                    for key in family.parameter_keys(what) if key.startswith(PREFIX)})


class ParameterError(ValueError):
    """A StorageClass parameter external-provisioner refuses (no CreateVolume is sent)."""


def strip_prefixed_parameters(parameters: Mapping[str, str],
                              known: frozenset[str] = KNOWN_PREFIXED_KEYS) -> dict[str, str]:
    """The parameters the CSI call gets (CreateVolume by default): the ``known``
    ``csi.storage.k8s.io/`` keys removed, any other key with that prefix rejected."""
    out: dict[str, str] = {}
    for key, value in parameters.items():
        if key.startswith(PREFIX):
            if key not in known:
                raise ParameterError(
                    f'found unknown parameter key "{key}" with reserved namespace {PREFIX}')
            continue
        out[key] = value
    return out


def _templates(family: SecretFamily, params: Mapping[str, str]) -> tuple[str, str] | None:
    name_keys, ns_keys = family.parameter_keys("name"), family.parameter_keys("namespace")
    names = [params[k] for k in name_keys if k in params]
    namespaces = [params[k] for k in ns_keys if k in params]
    if len(names) > 1 or len(namespaces) > 1:
        raise ParameterError(f'{family.name} secrets specified in parameters with both "csi" '
                             f'and "{PREFIX}" keys')
    if len(names) != len(namespaces):
        raise ParameterError(f"either name and namespace for {family.name} secrets specified, "
                             "Both must be specified")
    if not names:
        return None
    if not names[0] or not namespaces[0]:
        raise ParameterError(f"{family.name} secrets specified in parameters but value of "
                             "either namespace or name is empty")
    return names[0], namespaces[0]


_TOKEN = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z0-9_]+)")


def resolve_template(template: str, params: Mapping[str, str]) -> str:
    """``os.Expand`` over ``params``; unknown tokens are an error listing them."""
    missing: set[str] = set()

    def expand(match: re.Match[str]) -> str:
        token = match.group(1) if match.group(1) is not None else match.group(2)
        if token not in params:
            missing.add(token)
            return ""
        return params[token]

    resolved = _TOKEN.sub(expand, template)
    if missing:
        raise ParameterError(f"error resolving value {template!r}: invalid tokens: "
                             f"{sorted(missing)}")
    return resolved


def secret_reference(family: SecretFamily, parameters: Mapping[str, str], pv_name: str,
                     pvc_name: str, pvc_namespace: str,
                     pvc_annotations: Mapping[str, str] | None = None) -> JSON | None:
    """The SecretReference ({name, namespace}) of ``family`` for one PVC, or None."""
    templates = _templates(family, parameters) or _templates(DEFAULT, parameters)
    if templates is None:
        return None
    name_template, ns_template = templates
    namespace = resolve_template(ns_template, {"pv.name": pv_name,
                                               "pvc.namespace": pvc_namespace})
    try:
        dns_label(namespace, "namespace")
    except Invalid:
        raise ParameterError(f"{ns_template!r} resolved to {namespace!r} which is not a valid "
                             "namespace name") from None
    name_params = {"pv.name": pv_name, "pvc.name": pvc_name, "pvc.namespace": pvc_namespace}
    for key, value in (pvc_annotations or {}).items():
        name_params[f"pvc.annotations['{key}']"] = value
    name = resolve_template(name_template, name_params)
    try:
        dns_subdomain(name, "name")
    except Invalid:
        raise ParameterError(f"{name_template!r} resolved to {name!r} which is not a valid "
                             "secret name") from None
    return {"name": name, "namespace": namespace}
